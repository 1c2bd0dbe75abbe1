"""What a new user of the desk meets around the ticket pages: where the login lands, the page
that says why something is not allowed, the favicon, readable form fields, and the admin's
views of runs and tool calls."""

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.staticfiles import finders
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory
from django.urls import get_resolver

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from tickets.models import Ticket

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent


def logged_in(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=settings.DEMO_PASSWORD)
    return client


def log_in_with_the_form(username: str, next_url: str | None = None):
    client = Client()
    data = {"username": username, "password": settings.DEMO_PASSWORD}
    if next_url is not None:
        data["next"] = next_url
    return client.post("/login/", data, follow=True)


# --- Where the login lands --------------------------------------------------------------------


def test_a_reviewer_lands_on_the_review_queue_after_logging_in(demo):
    response = log_in_with_the_form("reviewer")

    assert response.redirect_chain[-1] == ("/review/", 302)
    assert response.status_code == 200
    assert response.context["user"].username == "reviewer"


@pytest.mark.parametrize("username", ["intern", "agent", "supervisor", "admin"])
def test_everyone_else_lands_on_the_tickets_after_logging_in(demo, username):
    response = log_in_with_the_form(username)

    assert response.redirect_chain[-1] == ("/tickets/", 302)
    assert response.status_code == 200


def test_a_reviewer_who_also_works_tickets_lands_on_the_tickets(demo):
    reviewer = get_user_model().objects.get(username="reviewer")
    reviewer.groups.add(Group.objects.get(name="support_agent"))

    response = log_in_with_the_form("reviewer")

    assert response.redirect_chain[-1] == ("/tickets/", 302)


def test_an_explicit_next_still_wins_over_the_landing_page(demo):
    response = log_in_with_the_form("reviewer", next_url="/tickets/TCK-1001/")

    assert response.redirect_chain == [("/tickets/TCK-1001/", 302)]
    assert response.status_code == 200


def test_the_site_root_sends_each_role_to_its_work(demo):
    assert logged_in("reviewer").get("/")["Location"] == "/review/"
    assert logged_in("agent").get("/")["Location"] == "/tickets/"
    assert Client().get("/")["Location"] == "/login/?next=/"


# --- The 403 page -------------------------------------------------------------------------------


def nav_of(page: str) -> str:
    return page[page.index("<nav") : page.index("</nav>")]


def test_a_reviewer_opening_a_support_only_page_gets_the_reason_and_the_way_back(demo):
    response = logged_in("reviewer").get("/tickets/new/")

    assert response.status_code == 403
    page = response.content.decode()
    nav = nav_of(page)
    assert 'href="/tickets/"' in nav and 'href="/review/"' in nav
    assert "Only interns, agents and supervisors open tickets." in page
    reason = page[page.index('id="forbidden"') :]
    assert 'href="/review/">Go to the review queue' in reason
    assert 'href="/tickets/">Go to the tickets' in reason


def test_a_support_agent_opening_the_review_queue_gets_the_reason_without_a_queue_link(demo):
    response = logged_in("agent").get("/review/")

    assert response.status_code == 403
    page = response.content.decode()
    assert 'href="/tickets/"' in nav_of(page)
    assert "/review/" not in page
    assert "Only refund reviewers can open the review queue and decide refunds." in page
    assert "You are logged in as <strong>agent</strong> (agent)" in page


def test_a_denial_without_a_reason_gets_a_generic_one(demo):
    # Admin refuses a reviewer the order add page with a bare PermissionDenied.
    response = logged_in("reviewer").get("/admin/orders/order/add/")

    assert response.status_code == 403
    page = response.content.decode()
    assert "Your role on the desk does not include this page." in page
    assert 'href="/review/"' in nav_of(page)


def test_a_403_under_the_api_stays_json():
    handler = get_resolver().resolve_error_handler(403)
    request = RequestFactory().get("/api/tickets/TCK-1001/")

    response = handler(request, PermissionDenied("Only supervisors clear an escalation."))

    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {
        "message": "Only supervisors clear an escalation.",
        "code": "permission_denied",
        "extra": {},
    }


# --- Favicon and form fields ------------------------------------------------------------------


def test_every_page_links_the_favicon(demo):
    login_page = Client().get("/login/").content.decode()
    forbidden = logged_in("agent").get("/review/").content.decode()

    for page in (login_page, forbidden):
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page
    favicon = finders.find("favicon.svg")
    assert favicon is not None
    assert Path(favicon).read_text().lstrip().startswith("<svg")


def relative_luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    light, dark = sorted([relative_luminance(a), relative_luminance(b)], reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_form_field_borders_contrast_at_least_3_to_1_with_what_surrounds_them():
    css = (ROOT / "static/css/desk.css").read_text()
    variables = dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})", css))
    [field_rule] = re.findall(r"^input, select, textarea \{([^}]*)\}", css, re.MULTILINE)
    border = re.search(r"border: 1px solid var\(--([\w-]+)\)", field_rule)
    assert border is not None
    colour = variables[border.group(1)]

    # Fields sit on white cards and on the page background.
    for background in ("#ffffff", variables["bg"]):
        assert contrast(colour, background) >= 3, (colour, background)


# --- Admin: runs and tool calls -----------------------------------------------------------------


@pytest.fixture
def run_with_calls(demo):
    agent = get_user_model().objects.get(username="agent")
    ticket = Ticket.objects.get(reference="TCK-1001")
    run = AgentRun.objects.create(ticket=ticket, started_by=agent, actor_role="agent")
    AgentMessage.objects.create(
        run=run,
        seq=1,
        role="assistant",
        tool_calls=[
            {
                "id": "call_abcdefghijklmnopqrstuvwxyz",
                "type": "function",
                "function": {"name": "get_order", "arguments": '{"order_id": "202610110087"}'},
            }
        ],
    )
    AgentMessage.objects.create(
        run=run,
        seq=2,
        role="tool",
        tool_call_id="call_abcdefghijklmnopqrstuvwxyz",
        content='{"ok": true, "order_id": "202610110087"}',
    )
    RunEvent.objects.create(run=run, seq=1, type="run.started", data={"step": 0})
    RunEvent.objects.create(run=run, seq=2, type="approval.required", data={"version": 1})
    call = ToolCallLog.objects.create(
        run=run,
        ticket=ticket,
        tool_call_id="call_abcdefghijklmnopqrstuvwxyz",
        tool_name="get_order",
        arguments={"order_id": "202610110087"},
        arguments_raw='{"order_id": "202610110087"}',
        args_digest="d" * 64,
        ok=True,
        result={"ok": True, "order_id": "202610110087"},
        actor=agent,
        actor_role="agent",
    )
    return run, call


def test_admin_shows_a_runs_ticket_by_its_reference_linking_to_the_ticket_page(run_with_calls):
    run, _ = run_with_calls
    client = logged_in("reviewer")

    listing = client.get("/admin/agent/agentrun/").content.decode()
    detail = client.get(f"/admin/agent/agentrun/{run.pk}/change/").content.decode()

    for page in (listing, detail):
        assert '<a class="desk-nowrap" href="/tickets/TCK-1001/">TCK-1001</a>' in page
        assert "TCK-1001 My mug arrived broken" not in page
    assert f'<span title="{run.pk}">{str(run.pk)[:8]}…</span>' in listing
    assert f"<h2>Run {str(run.pk)[:8]}… on TCK-1001 (Queued)</h2>" in detail


def test_admin_shows_run_events_in_words_and_messages_as_json(run_with_calls):
    run, _ = run_with_calls

    page = logged_in("reviewer").get(f"/admin/agent/agentrun/{run.pk}/change/").content.decode()

    assert '<span title="run.started">Run started</span>' in page
    assert '<span title="approval.required">Refund proposed, waiting for a reviewer</span>' in page
    # The tool call's arguments decoded from the string the model sent, the tool's answer
    # formatted: JSON either way, never an escaped string or a Python repr.
    assert (
        "&quot;arguments&quot;: {\n        &quot;order_id&quot;: &quot;202610110087&quot;" in page
    )
    assert (
        "<pre>{\n  &quot;ok&quot;: true,\n  &quot;order_id&quot;: &quot;202610110087&quot;\n}</pre>"
        in page
    )
    assert "{&#x27;" not in page


def test_admin_shortens_long_ids_and_digests_with_the_full_value_to_copy(run_with_calls):
    run, call = run_with_calls
    client = logged_in("reviewer")

    listing = client.get("/admin/agent/toolcalllog/").content.decode()
    detail = client.get(f"/admin/agent/toolcalllog/{call.pk}/change/").content.decode()

    # The call's id is on its page whole; the list keeps to what fits a laptop.
    assert "call_abcdefghijklmnopqrstuvwxyz" in detail
    assert '<a class="desk-nowrap" href="/tickets/TCK-1001/">TCK-1001</a>' in listing
    assert f'title="{run.pk}">{str(run.pk)[:8]}…</a>' in listing
    assert f'<span class="desk-id" title="{"d" * 64}">{"d" * 12}…</span>' in detail
    assert f'data-copy="{"d" * 64}"' in detail
    for page in (listing, detail):
        assert "/static/js/desk.js" in page and "/static/css/admin.css" in page
