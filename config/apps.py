from django.apps import AppConfig


class DeskConfig(AppConfig):
    """The project's shared pieces, an app only so that its system checks are registered."""

    name = "config"

    def ready(self) -> None:
        from config import checks  # noqa: F401  (registers them)
