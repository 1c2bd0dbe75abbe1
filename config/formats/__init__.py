"""Django's own date formats set to the desk's (config/times.py), so that what Django renders
itself — the admin's read-only fields, list columns, filters — reads like every page."""
