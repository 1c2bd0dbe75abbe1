from django.conf import settings

from config.roles import is_reviewer, is_staff_member, support_role
from tickets.selectors import unread_notification_count


def desk(request) -> dict:
    user = getattr(request, "user", None)
    role = support_role(user)
    reviewer = is_reviewer(user)
    return {
        "llm_provider": settings.LLM_PROVIDER,
        "user_support_role": role,
        "user_is_reviewer": reviewer,
        "user_role_words": _role_words(user, role or ("reviewer" if reviewer else "")),
        # The header's count (static/js/notifications.js keeps it live).
        "unread_notifications": (
            unread_notification_count(user=user) if user and is_staff_member(user) else None
        ),
    }


def _role_words(user, role: str) -> str:
    """The role the header shows after the user's name: none when the name already says it
    (the demo's users are named after their roles: "agent · agent" says one thing twice)."""
    if not role or user is None or user.get_username().casefold() == role.casefold():
        return ""
    return role
