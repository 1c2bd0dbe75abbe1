"""Saved views of the ticket list (DESIGN §19): a name for a filter and sort, one user's own or
shared with the team. A view's `query` is the list's own query string, checked here against the
filters the list has (tickets/selectors.py ticket_list), so a saved view always opens."""

from urllib.parse import parse_qsl, urlencode

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Case, Q, QuerySet, When

from config.errors import ApplicationError, Forbidden
from config.roles import Role, is_staff_member, is_supervisor, support_role
from tickets import selectors, sla
from tickets.models import SavedView, Ticket

# The list's filters, in the order a query string is written in.
FILTERS = ("view", "status", "assignee", "priority", "sla", "tag", "q", "sort")
# Left out of a saved query: a view with only these is the plain list.
DEFAULTS = {"view": "all", "sort": "updated"}
CHOICES: dict[str, tuple[str, ...]] = {
    "view": selectors.VIEWS,
    "status": tuple(Ticket.Status.values),
    "sort": tuple(selectors.SORTS),
    "priority": tuple(Ticket.Priority.values),
    "sla": sla.SLA_STATES,
}
TEXT_MAX = {"q": 200, "tag": 50, "assignee": 150}
# The views every desk starts with (tickets/migrations/0020 and seed_demo): "me" is whoever
# opens the view.
TEAM_VIEWS = (
    ("My open, by due", "status=open&assignee=me&sort=due"),
    ("Unassigned urgent", "assignee=none&priority=urgent&sort=due"),
)
SHARES = (Role.AGENT, Role.SUPERVISOR)


def _invalid(message: str) -> ApplicationError:
    return ApplicationError(message, code="invalid_query", extra={"fields": {"query": [message]}})


def _check_value(name: str, value: str) -> None:
    if name in CHOICES and value not in CHOICES[name]:
        raise _invalid(f"{name} must be one of: {', '.join(CHOICES[name])}.")
    if name in TEXT_MAX and len(value) > TEXT_MAX[name]:
        raise _invalid(f"{name} is longer than {TEXT_MAX[name]} characters.")
    if (
        name == "assignee"
        and value not in ("me", "none")
        and not get_user_model().objects.filter(username=value).exists()
    ):
        raise _invalid(f'assignee: there is no user {value!r} (or use "me" or "none").')


def clean_query(query: str) -> str:
    """`query` (a list query string, with or without its "?") in the list's own form: known
    filters only, each once and with a value the list takes, blanks and defaults left out.
    ApplicationError (code invalid_query) naming the first thing wrong."""
    text = query.strip().removeprefix("?")
    try:
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=True) if text else []
    except ValueError:
        raise _invalid("Not a query string: name=value pairs joined by &.") from None
    values: dict[str, str] = {}
    for name, value in pairs:
        if name not in FILTERS:
            raise _invalid(
                f"{name!r} is not a filter of the ticket list: use {', '.join(FILTERS)}."
            )
        if name in values:
            raise _invalid(f"{name} is given twice.")
        values[name] = value.strip()
    for name, value in values.items():
        if value:
            _check_value(name, value)
    return urlencode(
        {
            name: values[name]
            for name in FILTERS
            if values.get(name) and values[name] != DEFAULTS.get(name)
        }
    )


def clean_query_or_none(query: str) -> str | None:
    """clean_query's answer, or None for a query it refuses."""
    try:
        return clean_query(query)
    except ApplicationError:
        return None


def views_for(user: User) -> QuerySet[SavedView]:
    """The views `user` may open: the desk's team views, the shared ones, then their own."""
    team_first = Case(When(owner__isnull=True, then=0), When(shared=True, then=1), default=2)
    return SavedView.objects.filter(Q(shared=True) | Q(owner=user)).order_by(
        team_first, "name", "id"
    )


def may_change(view: SavedView, user: User) -> bool:
    """The owner changes their view; a supervisor any shared one (the team's included)."""
    return (view.owner_id is not None and view.owner_id == user.pk) or (
        view.shared and is_supervisor(user)
    )


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise ApplicationError(
            "Give the view a name.",
            code="invalid",
            extra={"fields": {"name": ["This field may not be blank."]}},
        )
    return name


def _saved(view: SavedView) -> SavedView:
    try:
        with transaction.atomic():
            view.save()
    except IntegrityError:
        # saved_view_name_unique_per_owner or saved_view_team_name_unique: the name is taken
        # (in another case, perhaps).
        raise ApplicationError(
            f"There is already a view called {view.name!r}.",
            code="duplicate_name",
            extra={"fields": {"name": ["There is already a view of this name."]}},
        ) from None
    return view


@transaction.atomic
def saved_view_create(*, owner: User, name: str, query: str, shared: bool = False) -> SavedView:
    """A view of `owner`'s; `shared` lists it for the whole team (agents and supervisors)."""
    if not is_staff_member(owner):
        raise Forbidden("Only desk staff save views of the ticket list.")
    if shared and support_role(owner) not in SHARES:
        raise Forbidden("Only agents and supervisors share views with the team.")
    return _saved(
        SavedView(owner=owner, name=_clean_name(name), query=clean_query(query), shared=shared)
    )


@transaction.atomic
def saved_view_update(
    *,
    view: SavedView,
    actor: User,
    name: str | None = None,
    query: str | None = None,
    shared: bool | None = None,
) -> SavedView:
    """Change what is given: by the owner, or a supervisor for a shared view. A team view
    nobody owns stays shared."""
    if not may_change(view, actor):
        raise Forbidden("Only its owner or a supervisor changes a shared view.")
    if shared is not None and shared != view.shared:
        if support_role(actor) not in SHARES:
            raise Forbidden("Only agents and supervisors share views with the team.")
        if view.owner_id is None:
            raise ApplicationError(
                "A team view stays shared: delete it instead.",
                code="invalid",
                extra={"fields": {"shared": ["A team view stays shared."]}},
            )
        view.shared = shared
    if name is not None:
        view.name = _clean_name(name)
    if query is not None:
        view.query = clean_query(query)
    return _saved(view)


@transaction.atomic
def saved_view_delete(*, view: SavedView, actor: User) -> None:
    if not may_change(view, actor):
        raise Forbidden("Only its owner or a supervisor deletes a shared view.")
    view.delete()


def ensure_team_views() -> None:
    """The team views of TEAM_VIEWS, made if missing (by name, in any case)."""
    for name, query in TEAM_VIEWS:
        if not SavedView.objects.filter(owner=None, name__iexact=name).exists():
            SavedView.objects.create(owner=None, name=name, query=query, shared=True)
