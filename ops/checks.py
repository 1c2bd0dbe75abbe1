"""System checks of `manage.py check --deploy`."""

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.security, deploy=True)
def check_secret_key_is_not_the_dev_key(app_configs, **kwargs) -> list[Error]:
    """The settings' default key is public: sessions, password reset links and signed values
    made with it can be forged by anyone."""
    if settings.SECRET_KEY != settings.DEV_SECRET_KEY:
        return []
    return [
        Error(
            "DJANGO_SECRET_KEY is unset: the development key is public.",
            hint="Set DJANGO_SECRET_KEY to a long random string, e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`.",
            id="config.E001",
        )
    ]
