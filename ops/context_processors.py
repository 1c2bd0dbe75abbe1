from django.conf import settings

from config.roles import is_reviewer, is_staff_member, support_role
from tickets.selectors import unread_notification_count


def desk(request) -> dict:
    user = getattr(request, "user", None)
    return {
        "llm_provider": settings.LLM_PROVIDER,
        "user_support_role": support_role(user),
        "user_is_reviewer": is_reviewer(user),
        # The header's count (static/js/notifications.js keeps it live).
        "unread_notifications": (
            unread_notification_count(user=user) if user and is_staff_member(user) else None
        ),
    }
