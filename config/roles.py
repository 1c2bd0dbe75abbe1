"""The desk's roles are Django groups (DESIGN §5). Every permission check goes through here."""

from django.db import models


class Role(models.TextChoices):
    INTERN = "intern", "Support intern"
    AGENT = "agent", "Support agent"
    SUPERVISOR = "supervisor", "Support supervisor"
    REVIEWER = "reviewer", "Refund reviewer"


GROUP_FOR_ROLE = {
    Role.INTERN: "support_intern",
    Role.AGENT: "support_agent",
    Role.SUPERVISOR: "support_supervisor",
    Role.REVIEWER: "refund_reviewer",
}
ROLE_FOR_GROUP = {group: role for role, group in GROUP_FOR_ROLE.items()}

# Highest first: a user in several support groups works with the strongest one.
SUPPORT_ROLES = (Role.SUPERVISOR, Role.AGENT, Role.INTERN)


def roles_of(user) -> set[str]:
    if not user or not user.is_authenticated or not user.is_active:
        return set()
    cached = getattr(user, "_desk_roles", None)
    if cached is None:
        names = user.groups.values_list("name", flat=True)
        cached = {ROLE_FOR_GROUP[name] for name in names if name in ROLE_FOR_GROUP}
        user._desk_roles = cached
    return cached


def support_role(user) -> str | None:
    """The role a user runs the assistant with, or None if they may not run it."""
    roles = roles_of(user)
    return next((role.value for role in SUPPORT_ROLES if role in roles), None)


def is_reviewer(user) -> bool:
    return Role.REVIEWER in roles_of(user)


def is_supervisor(user) -> bool:
    return Role.SUPERVISOR in roles_of(user)


def support_users():
    """Active users in a support group, by username: whom tickets can be assigned to. One query
    (support_role per user would ask for each user's groups)."""
    from django.contrib.auth import get_user_model

    groups = [GROUP_FOR_ROLE[role] for role in SUPPORT_ROLES]
    users = get_user_model().objects.filter(is_active=True, groups__name__in=groups)
    return users.distinct().order_by("username")


def is_staff_member(user) -> bool:
    """Anyone who works the desk: a support role, a reviewer, or a superuser."""
    return bool(roles_of(user)) or bool(getattr(user, "is_superuser", False))
