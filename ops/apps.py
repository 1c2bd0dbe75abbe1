from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Running the desk: health and metrics, throttling, the broker's transports, logging, the
    HTTP plumbing every API shares, the dev server. Above the domain apps (it reads their
    tables for /metrics), below the desk that serves them."""

    name = "ops"

    def ready(self) -> None:
        from ops import (
            checks,  # noqa: F401  (registers them)
            worker,  # noqa: F401  (connects the Celery app's signal handlers)
        )
