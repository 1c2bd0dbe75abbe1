from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"

    def ready(self) -> None:
        from agent.providers.breaker import breaker_metrics
        from config.metrics import add_source

        add_source(breaker_metrics)
