"""The `when`, `when_short` and `day` filters: the desk's one time format (config/times.py)
in templates. Built into every template (TEMPLATES["OPTIONS"]["builtins"]), so no page loads it."""

from django import template

from config import times

register = template.Library()

register.filter("when", times.when, expects_localtime=False)
register.filter("day", times.day, expects_localtime=False)
register.filter("when_short", times.when_short, expects_localtime=False)
