from django.conf import settings

from config.roles import is_reviewer, support_role


def desk(request) -> dict:
    user = getattr(request, "user", None)
    return {
        "llm_provider": settings.LLM_PROVIDER,
        "user_support_role": support_role(user),
        "user_is_reviewer": is_reviewer(user),
    }
