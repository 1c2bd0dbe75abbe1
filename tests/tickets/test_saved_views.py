"""DESIGN §19 saved views: GET/POST /api/views/ and DELETE /api/views/<id>/ keep a named filter
and sort of the ticket list, a user's own or shared with the team; the list page shows them."""

from datetime import timedelta

import pytest
from django.db import IntegrityError
from django.utils import timezone
from rest_framework.test import APIClient

from config import times
from tests.factories import TicketFactory
from tickets import saved_views
from tickets.models import SavedView, Ticket

pytestmark = pytest.mark.django_db

TEAM = ["My open, by due", "Unassigned urgent"]


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def save(user, name: str, query: str, shared: bool = False):
    return api_as(user).post(
        "/api/views/", {"name": name, "query": query, "shared": shared}, format="json"
    )


def names(user) -> list[str]:
    return [view["name"] for view in api_as(user).get("/api/views/").json()]


def test_the_desk_starts_with_the_team_views(agent_user):
    views = api_as(agent_user).get("/api/views/").json()

    assert [(v["name"], v["query"], v["shared"], v["owner"]) for v in views] == [
        ("My open, by due", "status=open&assignee=me&sort=due", True, None),
        ("Unassigned urgent", "assignee=none&priority=urgent&sort=due", True, None),
    ]
    assert views[0]["url"] == "/tickets/?status=open&assignee=me&sort=due"
    assert [v["can_delete"] for v in views] == [False, False]


def test_one_sees_ones_own_views_and_the_shared_ones_not_others_own(agent_user, agent2_user):
    assert save(agent_user, "Mine", "status=pending").status_code == 201
    assert save(agent2_user, "Theirs", "status=solved").status_code == 201
    assert save(agent2_user, "Team's", "tag=vip", shared=True).status_code == 201

    assert names(agent_user) == [*TEAM, "Team's", "Mine"]
    assert names(agent2_user) == [*TEAM, "Team's", "Theirs"]


def test_a_query_is_kept_in_the_lists_own_form(agent_user):
    response = save(agent_user, "Urgent ones", "?sort=due&view=all&priority=urgent&q=&tag=vip")

    assert response.status_code == 201
    assert response.json()["query"] == "priority=urgent&tag=vip&sort=due"
    assert response.json()["can_delete"] is True
    assert SavedView.objects.get(name="Urgent ones").owner == agent_user


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("colour=red", "'colour' is not a filter of the ticket list"),
        ("page=2", "'page' is not a filter of the ticket list"),
        ("status=reopened", "status must be one of: open, pending, solved, closed."),
        ("sort=name", "sort must be one of: updated, created, due."),
        ("sla=late", "sla must be one of: breached, due_soon."),
        ("view=everything", "view must be one of"),
        ("assignee=nobody-here", "assignee: there is no user 'nobody-here'"),
        ("status=open&status=pending", "status is given twice."),
        ("just text", "Not a query string"),
    ],
)
def test_a_query_the_list_cannot_open_is_refused(agent_user, query, says):
    response = save(agent_user, "Bad", query)

    assert response.status_code == 400
    assert says in response.json()["extra"]["fields"]["query"][0]
    assert not SavedView.objects.filter(name="Bad").exists()


def test_a_name_is_needed_and_one_may_not_have_two_of_a_name(agent_user):
    assert save(agent_user, "Pending", "status=pending").status_code == 201

    again = save(agent_user, "pending", "status=open")
    blank = save(agent_user, "   ", "status=open")

    assert (again.status_code, again.json()["code"]) == (400, "duplicate_name")
    assert blank.status_code == 400
    assert "name" in blank.json()["extra"]["fields"]
    assert SavedView.objects.filter(owner=agent_user).count() == 1


def test_an_intern_saves_views_but_does_not_share_them(intern):
    assert save(intern, "Mine", "status=open").status_code == 201

    shared = save(intern, "For all", "status=open", shared=True)

    assert shared.status_code == 403
    assert not SavedView.objects.filter(name="For all").exists()


def test_the_owner_deletes_their_view(agent_user):
    view_id = save(agent_user, "Mine", "status=open").json()["id"]

    response = api_as(agent_user).delete(f"/api/views/{view_id}/")

    assert response.status_code == 204
    assert not SavedView.objects.filter(pk=view_id).exists()


def test_only_the_owner_or_a_supervisor_deletes_a_shared_view(agent_user, agent2_user, supervisor):
    view_id = save(agent_user, "Shared", "status=open", shared=True).json()["id"]

    refused = api_as(agent2_user).delete(f"/api/views/{view_id}/")
    assert refused.status_code == 403
    assert SavedView.objects.filter(pk=view_id).exists()

    assert api_as(supervisor).delete(f"/api/views/{view_id}/").status_code == 204
    assert not SavedView.objects.filter(pk=view_id).exists()


def test_someone_elses_own_view_is_not_there_for_others(agent_user, supervisor):
    view_id = save(agent_user, "Mine", "status=open").json()["id"]

    assert api_as(supervisor).delete(f"/api/views/{view_id}/").status_code == 404
    assert SavedView.objects.filter(pk=view_id).exists()


def test_a_team_view_is_a_supervisors_to_delete(agent_user, supervisor):
    team_view = SavedView.objects.get(name="Unassigned urgent")

    assert api_as(agent_user).delete(f"/api/views/{team_view.pk}/").status_code == 403
    assert api_as(supervisor).delete(f"/api/views/{team_view.pk}/").status_code == 204
    assert names(agent_user) == ["My open, by due"]


def test_views_need_desk_staff(outsider):
    assert api_as(outsider).get("/api/views/").status_code == 403
    assert save(outsider, "Mine", "status=open").status_code == 403
    assert not SavedView.objects.filter(owner=outsider).exists()


def test_an_ownerless_view_must_be_shared(db):
    with pytest.raises(IntegrityError):
        SavedView.objects.create(owner=None, name="Hidden", query="", shared=False)


def test_team_view_names_are_unique_ignoring_case(db):
    with pytest.raises(IntegrityError):
        SavedView.objects.create(owner=None, name="MY OPEN, BY DUE", query="", shared=True)


def test_they_are_in_the_schema(agent_user):
    paths = api_as(agent_user).get("/api/schema/?format=json").json()["paths"]

    assert set(paths["/api/views/"]) == {"get", "post"}
    assert set(paths["/api/views/{id}/"]) == {"patch", "delete"}


# --- on the list page ----------------------------------------------------------------------


def test_the_list_links_the_views_and_marks_the_one_it_shows(client, agent_user):
    save(agent_user, "Pending ones", "status=pending")
    client.force_login(agent_user)

    page = client.get("/tickets/?sort=due&status=open&assignee=me").content.decode()

    assert 'href="?status=open&amp;assignee=me&amp;sort=due" aria-current="true"' in page
    assert 'href="?status=pending"' in page
    assert "Save this view" not in page  # it is saved: "My open, by due"


def test_save_this_view_keeps_the_lists_filters(client, agent_user):
    client.force_login(agent_user)
    assert "Save this view" in client.get("/tickets/?tag=vip&sort=due").content.decode()

    response = client.post(
        "/tickets/views/", {"name": "VIP by due", "query": "tag=vip&sort=due", "shared": "yes"}
    )

    assert response.status_code == 302
    assert response["Location"] == "/tickets/?tag=vip&sort=due"
    view = SavedView.objects.get(name="VIP by due")
    assert (view.owner, view.shared, view.query) == (agent_user, True, "tag=vip&sort=due")


def test_a_refused_save_comes_back_as_a_message(client, agent_user):
    client.force_login(agent_user)

    response = client.post("/tickets/views/", {"name": "", "query": "tag=vip"}, follow=True)

    assert "The view was not saved: Give the view a name." in response.content.decode()
    assert not SavedView.objects.filter(owner=agent_user).exists()


def test_the_page_deletes_a_view(client, agent_user):
    view = saved_views.saved_view_create(owner=agent_user, name="Mine", query="status=open")
    client.force_login(agent_user)

    response = client.post(f"/tickets/views/{view.pk}/delete/")

    assert response.status_code == 302
    assert not SavedView.objects.filter(pk=view.pk).exists()


# --- the list's columns and bulk bar ---------------------------------------------------------


def test_the_list_shows_priority_due_time_assignee_name_and_tags(client, agent_user):
    agent_user.first_name, agent_user.last_name = "Ada", "Lovelace"
    agent_user.save()
    ticket = TicketFactory(
        assignee=agent_user,
        priority=Ticket.Priority.URGENT,
        first_response_due_at=timezone.now() + timedelta(days=400),
    )
    ticket.tags.create(name="damaged")
    client.force_login(agent_user)

    page = client.get("/tickets/").content.decode()
    row = page.split(f'data-ticket="{ticket.reference}"', 1)[1].split("</tr>", 1)[0]

    assert 'class="badge badge-priority-urgent">Urgent<' in row
    assert "Ada Lovelace" in row
    assert ">damaged</a>" in row
    due = timezone.localtime(ticket.first_response_due_at)
    assert f'class="due-time nowrap" datetime="{due.isoformat()}"' in row
    assert f">{times.when(due)}</time>" in row


@pytest.mark.parametrize(
    ("who", "checkboxes", "assign"),
    [("agent_user", True, True), ("intern", True, False), ("reviewer", False, False)],
)
def test_the_bulk_bar_offers_only_what_the_role_may_do(request, client, who, checkboxes, assign):
    TicketFactory()
    client.force_login(request.getfixturevalue(who))

    page = client.get("/tickets/").content.decode()

    assert ('class="row-select"' in page) is checkboxes
    assert ('id="bulk-assign"' in page) is assign
    assert ('id="bulk-merge"' in page) is assign
    assert ('id="bulk-tag"' in page) is checkboxes


# --- changing a view -------------------------------------------------------------------------


def patch(user, view_id: int, body: dict):
    return api_as(user).patch(f"/api/views/{view_id}/", body, format="json")


def test_the_owner_renames_refilters_and_shares_their_view(agent_user):
    view_id = save(agent_user, "Mine", "status=open").json()["id"]

    response = patch(
        agent_user, view_id, {"name": "Pending", "query": "status=pending", "shared": True}
    )

    assert response.status_code == 200
    assert (response.json()["name"], response.json()["query"]) == ("Pending", "status=pending")
    view = SavedView.objects.get(pk=view_id)
    assert (view.name, view.query, view.shared) == ("Pending", "status=pending", True)


def test_a_change_is_checked_as_a_new_view_is(agent_user):
    view_id = save(agent_user, "Mine", "status=open").json()["id"]
    save(agent_user, "Other", "status=pending")

    bad_query = patch(agent_user, view_id, {"query": "colour=red"})
    taken = patch(agent_user, view_id, {"name": "OTHER"})

    assert bad_query.status_code == 400
    assert (taken.status_code, taken.json()["code"]) == (400, "duplicate_name")
    assert SavedView.objects.get(pk=view_id).query == "status=open"
    assert SavedView.objects.get(pk=view_id).name == "Mine"


def test_only_the_owner_or_a_supervisor_changes_a_shared_view(agent_user, agent2_user, supervisor):
    view_id = save(agent_user, "Shared", "status=open", shared=True).json()["id"]

    assert patch(agent2_user, view_id, {"name": "Taken over"}).status_code == 403
    assert SavedView.objects.get(pk=view_id).name == "Shared"
    assert patch(supervisor, view_id, {"name": "Open ones"}).status_code == 200
    assert SavedView.objects.get(pk=view_id).name == "Open ones"


def test_a_team_view_stays_shared(supervisor):
    team_view = SavedView.objects.get(name="Unassigned urgent")

    response = patch(supervisor, team_view.pk, {"shared": False})

    assert response.status_code == 400
    assert SavedView.objects.get(pk=team_view.pk).shared is True
