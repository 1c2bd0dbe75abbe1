"""What the ticket list shows besides its rows (DESIGN §19): the saved views, the bulk actions
the user's role may take, and the assignees' display names."""

from collections.abc import Iterable

from django.contrib.auth.models import User

from config.roles import support_role, support_users
from desk.bulk.services import ACTION_ROLES, BULK_MAX_TICKETS
from tickets import saved_views
from tickets.models import Ticket
from tickets.people import display_names


def by_name(users: Iterable[User]) -> list[tuple[str, str]]:
    """(username, display name) of each user, in the order given."""
    users = list(users)
    names = display_names(users)
    return [(user.username, names[user.pk]) for user in users]


def bulk_actions(user: User) -> dict:
    """The bulk actions `user` may take (none: no checkboxes at all)."""
    role = support_role(user)
    actions = {name: role in roles for name, (roles, _) in ACTION_ROLES.items()}
    return {
        **actions,
        "any": any(actions.values()),
        "max": BULK_MAX_TICKETS,
        "assignees": by_name(support_users()) if actions["assign"] else [],
        "statuses": Ticket.Status.choices,
        "priorities": Ticket.Priority.choices,
    }


def saved_view_links(user: User, current_query: str) -> dict:
    """The views the user may open, the one the list shows now marked; whether "Save this
    view" may share with the team."""
    current = saved_views.clean_query_or_none(current_query)
    views = [
        {
            "id": view.pk,
            "name": view.name,
            "query": view.query,
            "shared": view.shared,
            "team": view.owner_id is None,
            # Stored queries are in the list's own form (saved_views.clean_query), so they
            # compare as they are, without checking each again.
            "current": current is not None and view.query == current,
            "can_delete": saved_views.may_change(view, user),
        }
        for view in saved_views.views_for(user)
    ]
    return {
        "views": views,
        "query": current or "",
        "can_share": support_role(user) in saved_views.SHARES,
        "is_saved": any(view["current"] for view in views),
    }
