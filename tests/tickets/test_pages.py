"""The support desk's HTML pages through the Django test client: what each role sees on a
ticket, what the forms do (and refuse, keeping what was typed), the list's views and pages,
the new ticket form, the customer page and the notifications."""

import html
import re
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from config import times
from config.roles import support_users
from orders.models import Customer
from refunds.models import RefundRequest
from refunds.services import refund_propose
from tests.factories import TicketFactory
from tickets import services
from tickets.models import Notification, Ticket, TicketEvent, TicketMessage

pytestmark = pytest.mark.django_db


def user(username: str):
    return get_user_model().objects.get(username=username)


def ticket(reference: str = "TCK-1001") -> Ticket:
    return Ticket.objects.get(reference=reference)


@pytest.fixture
def log_in(client, demo):
    def as_user(username: str):
        client.force_login(user(username))
        return client

    return as_user


def page_of(response) -> str:
    return response.content.decode()


def message_block(page: str, message: TicketMessage) -> str:
    """The conversation entry of one message, as rendered."""
    match = re.search(rf'<li [^>]*id="message-{message.pk}"[^>]*>.*?</li>', page, re.S)
    assert match, f"message {message.pk} is not on the page"
    return match.group(0)


def list_references(page: str) -> list[str]:
    table = page.split('id="ticket-list"', 1)[1].split("</table>", 1)[0]
    return list(dict.fromkeys(re.findall(r'href="/tickets/(TCK-[0-9]+)/"', table)))


def pager_link(page: str, rel: str) -> str:
    match = re.search(rf'<a rel="{rel}" href="([^"]+)"', page)
    assert match, f"no {rel} link"
    return html.unescape(match.group(1))


def public_reply(reference: str, body: str, delivery: str, **fields) -> TicketMessage:
    message = services.ticket_write(
        ticket=ticket(reference), author=user("agent"), body=body, visibility="public"
    )
    TicketMessage.objects.filter(pk=message.pk).update(delivery=delivery, **fields)
    message.refresh_from_db()
    return message


# --- the conversation ----------------------------------------------------------------------


def test_it_labels_internal_notes_and_shows_each_public_replys_delivery(log_in):
    note = services.ticket_write(
        ticket=ticket(), author=user("intern"), body="Handle snapped off.", visibility="internal"
    )
    queued = public_reply("TCK-1001", "We are on it.", "queued")
    sent = public_reply("TCK-1001", "Refund on its way.", "sent", sent_at=queued.created_at)
    failed = public_reply(
        "TCK-1001", "Photo please?", "failed", delivery_error="550 mailbox unavailable"
    )
    client = log_in("agent")

    page = page_of(client.get("/tickets/TCK-1001/"))

    note_html = message_block(page, note)
    assert "message-internal" in note_html and "Internal note" in note_html
    assert "Handle snapped off." in note_html
    assert "Internal note" not in message_block(page, queued)
    assert "Public reply" in message_block(page, queued) and "Queued" in message_block(page, queued)
    sent_html = message_block(page, sent)
    assert "Sent" in sent_html and times.when(sent.sent_at) in sent_html
    failed_html = message_block(page, failed)
    assert "Failed" in failed_html and "550 mailbox unavailable" in failed_html
    assert f'action="/tickets/TCK-1001/messages/{failed.pk}/retry/"' in failed_html
    assert "/retry/" not in message_block(page, sent)
    customer_message = ticket().messages.get(author_kind="customer")
    assert "From the customer" in message_block(page, customer_message)


def test_an_agent_retries_a_failed_reply_and_it_is_queued_again(
    log_in, django_capture_on_commit_callbacks
):
    failed = public_reply("TCK-1001", "Photo please?", "failed", delivery_error="550")
    client = log_in("agent")

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(f"/tickets/TCK-1001/messages/{failed.pk}/retry/")

    assert response.status_code == 302
    failed.refresh_from_db()
    assert failed.delivery == "queued"
    assert len(callbacks) == 1


def test_an_intern_is_offered_internal_notes_only(log_in):
    client = log_in("intern")

    page = page_of(client.get("/tickets/TCK-1001/"))

    assert 'id="reply-form"' in page
    assert 'value="public"' not in page
    assert "Internal note only. Interns write internal notes" in page
    assert ">Add internal note</button>" in page


def test_an_interns_public_reply_is_refused_with_the_text_kept(log_in):
    client = log_in("intern")
    before = TicketMessage.objects.count()

    response = client.post(
        "/tickets/TCK-1001/messages/",
        {"body": "Dear Li Wei, here is your refund.", "visibility": "public"},
    )

    assert response.status_code == 403
    page = page_of(response)
    assert "Interns write internal notes; an agent sends the reply." in page
    assert ">Dear Li Wei, here is your refund.</textarea>" in page
    assert TicketMessage.objects.count() == before


def test_an_agents_public_reply_is_queued_for_the_customer(
    log_in, django_capture_on_commit_callbacks
):
    client = log_in("agent")
    page = page_of(client.get("/tickets/TCK-1001/"))
    assert 'id="reply-public"' in page and "Send reply to li.wei@example.com" in page

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            "/tickets/TCK-1001/messages/",
            {"body": "Sorry about the mug; we are looking into it.", "visibility": "public"},
        )

    assert response.status_code == 302 and response["Location"] == "/tickets/TCK-1001/"
    reply = ticket().messages.last()
    assert (reply.body, reply.visibility, reply.delivery, reply.author) == (
        "Sorry about the mug; we are looking into it.",
        "public",
        "queued",
        user("agent"),
    )
    assert len(callbacks) == 1
    page = page_of(client.get("/tickets/TCK-1001/"))
    assert "Reply queued for sending to the customer." in page
    assert "Queued" in message_block(page, reply)


def test_an_empty_reply_is_refused_on_the_page(log_in):
    client = log_in("agent")

    response = client.post("/tickets/TCK-1001/messages/", {"body": "  ", "visibility": "internal"})

    assert response.status_code == 400
    assert 'id="reply-error"' in page_of(response)
    assert "Write something first." in page_of(response)


# --- ticket actions ------------------------------------------------------------------------


def test_an_agent_sees_only_the_allowed_next_statuses(log_in):
    client = log_in("agent")

    page = page_of(client.get("/tickets/TCK-1001/"))

    form = page.split('id="status-form"', 1)[1].split("</form>", 1)[0]
    assert re.findall(r'name="status" value="(\w+)">([^<]+)<', form) == [
        ("pending", "Mark pending"),
        ("solved", "Mark solved"),
    ]


def test_a_status_change_moves_the_ticket_and_is_in_the_history(log_in):
    client = log_in("agent")

    response = client.post("/tickets/TCK-1001/status/", {"status": "pending"})

    assert response.status_code == 302
    assert ticket().status == "pending"
    page = page_of(client.get("/tickets/TCK-1001/"))
    history = page.split('id="history"', 1)[1]
    assert "Status changed" in history and "Open → Pending" in history and "agent" in history
    assert ">Mark open</button>" in page


def test_a_refused_status_change_shows_the_error_and_changes_nothing(log_in):
    client = log_in("agent")

    response = client.post("/tickets/TCK-1001/status/", {"status": "closed"})

    assert response.status_code == 409
    assert "TCK-1001 cannot go from open to closed." in page_of(response)
    assert ticket().status == "open"
    assert not TicketEvent.objects.filter(type="status_changed").exists()


def test_an_agent_assigns_a_ticket_to_themselves_and_unassigns_it(log_in):
    client = log_in("agent")
    assert 'id="assign-me-form"' in page_of(client.get("/tickets/TCK-1003/"))

    assert client.post("/tickets/TCK-1003/assign/", {"assignee": "me"}).status_code == 302
    assert ticket("TCK-1003").assignee == user("agent")
    page = page_of(client.get("/tickets/TCK-1003/"))
    assert 'id="assign-me-form"' not in page and 'id="unassign-form"' in page

    assert client.post("/tickets/TCK-1003/assign/", {"assignee": ""}).status_code == 302
    assert ticket("TCK-1003").assignee is None
    assignments = TicketEvent.objects.filter(type="assigned").order_by("id")
    assert [event.data for event in assignments] == [
        {"from": None, "to": "agent"},
        {"from": "agent", "to": None},
    ]


def test_assigning_to_someone_outside_support_is_refused(log_in):
    client = log_in("agent")

    response = client.post("/tickets/TCK-1003/assign/", {"assignee": "reviewer"})

    assert response.status_code == 400
    assert "is not an active intern, agent or supervisor" in page_of(response)
    assert ticket("TCK-1003").assignee is None


def test_an_escalation_without_a_note_keeps_the_page_with_the_error(log_in):
    client = log_in("intern")

    response = client.post("/tickets/TCK-1001/escalate/", {"note": "   "})

    assert response.status_code == 400
    page = page_of(response)
    assert 'id="escalate-error"' in page and "Say why it needs a supervisor." in page
    assert 'id="escalate-form"' in page
    assert ticket().escalated is False
    assert not TicketEvent.objects.filter(type="escalated").exists()


def test_an_escalated_ticket_shows_the_badge_and_the_note_in_its_history(log_in):
    client = log_in("agent")

    response = client.post("/tickets/TCK-1001/escalate/", {"note": "Customer wants 200 more."})

    assert response.status_code == 302
    assert ticket().escalated is True
    page = page_of(client.get("/tickets/TCK-1001/"))
    assert 'id="escalated-badge"' in page
    history = page.split('id="history"', 1)[1]
    assert "Escalated to supervisors" in history and "Customer wants 200 more." in history


def test_a_supervisor_marks_an_escalation_handled(log_in):
    services.ticket_escalate(ticket=ticket(), note="Over my limit.", actor=user("agent"))
    client = log_in("supervisor")
    assert "Mark escalation handled" not in page_of(client.get("/tickets/TCK-1002/"))
    page = page_of(client.get("/tickets/TCK-1001/"))
    assert "Mark escalation handled" in page
    assert 'id="escalate-form"' not in page  # supervisors handle escalations, they don't make them

    response = client.post("/tickets/TCK-1001/deescalate/", {"note": "Approved the goodwill."})

    assert response.status_code == 302
    assert ticket().escalated is False
    page = page_of(client.get("/tickets/TCK-1001/"))
    assert 'id="escalated-badge"' not in page and "Mark escalation handled" not in page
    assert "Escalation handled" in page and "Approved the goodwill." in page


def test_a_reviewer_sees_the_ticket_but_no_action_forms(log_in):
    client = log_in("reviewer")

    page = page_of(client.get("/tickets/TCK-1001/"))

    assert "My mug arrived broken" in page and 'id="history"' in page
    for form in ("reply-form", "status-form", "assign-form", "escalate-form", "deescalate-form"):
        assert f'id="{form}"' not in page
    assert 'id="ticket-actions"' not in page


def test_a_reviewers_post_to_the_ticket_is_refused_and_writes_nothing(log_in):
    client = log_in("reviewer")
    before = TicketMessage.objects.count()

    response = client.post("/tickets/TCK-1001/messages/", {"body": "Hi", "visibility": "internal"})

    assert response.status_code == 403
    assert TicketMessage.objects.count() == before


def test_the_customer_card_links_to_the_customer_page(log_in):
    client = log_in("agent")

    page = page_of(client.get("/tickets/TCK-1001/"))

    assert f'href="/customers/{ticket().customer_id}/"' in page


# --- the list ------------------------------------------------------------------------------


def test_the_list_views_show_mine_unassigned_and_escalated_tickets(log_in):
    services.ticket_escalate(ticket=ticket("TCK-1004"), note="Over my limit.", actor=user("agent"))
    client = log_in("agent2")

    def listed(view: str) -> list[str]:
        return sorted(list_references(page_of(client.get("/tickets/", {"view": view}))))

    assert listed("all") == ["TCK-1001", "TCK-1002", "TCK-1003", "TCK-1004"]
    assert listed("mine") == ["TCK-1002"]
    assert listed("unassigned") == ["TCK-1003"]
    assert listed("escalated") == ["TCK-1004"]
    page = page_of(client.get("/tickets/"))
    assert re.search(r'data-view="escalated"[^>]*>Escalated <span class="count count-alert"', page)


def test_the_list_shows_each_tickets_refund_in_words(log_in):
    refund_propose(
        ticket=ticket(),
        order=ticket().order,
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="Broken.",
        requested_by=user("agent"),
        role="agent",
    )
    client = log_in("agent")

    page = page_of(client.get("/tickets/"))

    assert 'data-status="pending_approval">Waiting for a reviewer</span>' in page
    RefundRequest.objects.filter(ticket=ticket()).update(status="succeeded")
    assert 'data-status="succeeded">Refunded</span>' in page_of(client.get("/tickets/"))


def test_the_list_sorts_by_creation(log_in):
    services.ticket_write(
        ticket=ticket("TCK-1001"), author=user("agent"), body="bump", visibility="internal"
    )
    client = log_in("agent")

    by_update = list_references(page_of(client.get("/tickets/")))
    by_creation = list_references(page_of(client.get("/tickets/", {"sort": "created"})))

    assert by_update[0] == "TCK-1001"
    assert by_creation[0] == "TCK-1004"


def test_pagination_links_keep_every_filter(log_in):
    li_wei = Customer.objects.get(email="li.wei@example.com")
    for n in range(30):
        TicketFactory(reference=f"TCK-{2000 + n}", customer=li_wei, subject=f"Widget {n}")
    client = log_in("agent")
    filters = {"view": "unassigned", "status": "open", "q": "widget", "sort": "created"}

    first = page_of(client.get("/tickets/", filters))

    assert len(list_references(first)) == 25
    next_link = pager_link(first, "next")
    assert next_link == "?view=unassigned&status=open&q=widget&sort=created&page=2"
    second = page_of(client.get("/tickets/" + next_link))
    assert len(list_references(second)) == 5
    assert set(list_references(second)).isdisjoint(list_references(first))
    assert pager_link(second, "prev") == "?view=unassigned&status=open&q=widget&sort=created&page=1"


def test_the_search_finds_words_in_a_message(log_in):
    services.ticket_write(
        ticket=ticket("TCK-1003"),
        author=user("agent"),
        body="Courier lost it",
        visibility="internal",
    )
    client = log_in("agent")

    assert list_references(page_of(client.get("/tickets/", {"q": "courier"}))) == ["TCK-1003"]


# --- a new ticket --------------------------------------------------------------------------


def test_a_new_ticket_form_names_each_missing_field_and_keeps_the_values(log_in):
    client = log_in("agent")

    response = client.post("/tickets/new/", {"email": "not-an-email", "name": "Ada", "body": ""})

    assert response.status_code == 400
    page = page_of(response)
    assert 'id="error-email">Enter the customer&#x27;s email address.' in page
    assert 'id="error-subject">Give the ticket a subject.' in page
    assert 'id="error-body">Write down what the customer asked.' in page
    assert 'value="not-an-email"' in page and 'value="Ada"' in page
    assert Ticket.objects.count() == 4


def test_a_new_ticket_for_a_new_customer_creates_the_customer(log_in):
    client = log_in("agent")

    response = client.post(
        "/tickets/new/",
        {
            "email": "ada@example.org",
            "name": "Ada Lovelace",
            "subject": "Wrong size",
            "body": "The jacket is too small.",
        },
    )

    created = Ticket.objects.get(subject="Wrong size")
    assert response.status_code == 302 and response["Location"] == f"/tickets/{created.reference}/"
    assert (created.customer.name, created.customer.email) == ("Ada Lovelace", "ada@example.org")
    first = created.messages.get()
    assert (first.author_kind, first.visibility, first.body, first.author) == (
        "customer",
        "public",
        "The jacket is too small.",
        user("agent"),
    )


def test_a_new_ticket_finds_the_customer_by_email_whatever_its_case(log_in):
    client = log_in("agent")
    customers = Customer.objects.count()

    response = client.post(
        "/tickets/new/",
        {
            "email": "LI.Wei@Example.COM",
            "name": "Someone Else",
            "subject": "Mug handle",
            "body": "Called about the mug.",
            "order_id": "202610110087",
        },
    )

    assert response.status_code == 302
    created = Ticket.objects.get(subject="Mug handle")
    assert created.customer.name == "Li Wei"
    assert created.order.order_id == "202610110087"
    assert Customer.objects.count() == customers


def test_a_new_ticket_with_another_customers_order_is_refused_with_the_text_kept(log_in):
    client = log_in("agent")
    customers = Customer.objects.count()

    response = client.post(
        "/tickets/new/",
        {
            "email": "newcomer@example.org",
            "subject": "Lamp",
            "body": "Where is my lamp?",
            "order_id": "202610250777",  # Maria Garcia's
        },
    )

    assert response.status_code == 400
    page = page_of(response)
    assert 'id="error-order_id">newcomer@example.org has no order 202610250777.' in page
    assert ">Where is my lamp?</textarea>" in page and 'value="202610250777"' in page
    assert Ticket.objects.count() == 4
    assert Customer.objects.count() == customers


def test_a_reviewer_cannot_open_tickets(log_in):
    client = log_in("reviewer")

    assert client.get("/tickets/new/").status_code == 403
    assert "New ticket" not in page_of(client.get("/tickets/"))


# --- a customer ----------------------------------------------------------------------------


def test_the_customer_page_shows_orders_tickets_and_refunds(log_in):
    maria = Customer.objects.get(email="maria.garcia@example.com")
    services.ticket_escalate(ticket=ticket("TCK-1002"), note="Lost parcel.", actor=user("agent"))
    client = log_in("agent")

    page = page_of(client.get(f"/customers/{maria.pk}/"))

    assert "Maria Garcia" in page and "maria.garcia@example.com" in page
    orders = page.split('id="customer-orders"', 1)[1].split("</section>", 1)[0]
    blender = re.search(r"<tr>\s*<td class=\"mono\">202610180099</td>.*?</tr>", orders, re.S)
    assert blender is not None
    assert re.findall(r"[0-9]+\.[0-9]{2} CNY", blender.group(0)) == [
        "599.00 CNY",
        "200.00 CNY",
        "399.00 CNY",
    ]
    assert "202610250777" in orders and "not delivered" in orders
    tickets = page.split('id="customer-tickets"', 1)[1].split("</section>", 1)[0]
    assert 'href="/tickets/TCK-1002/"' in tickets and "Escalated" in tickets
    assert "TCK-1001" not in tickets
    refunds = page.split('id="customer-refunds"', 1)[1].split("</section>", 1)[0]
    assert "200.00 CNY" in refunds and 'data-status="succeeded">Refunded</span>' in refunds
    assert "/review/" not in refunds


def test_a_reviewer_gets_links_to_the_refund_requests(log_in):
    maria = Customer.objects.get(email="maria.garcia@example.com")
    refund = RefundRequest.objects.get(order__customer=maria)
    client = log_in("reviewer")

    page = page_of(client.get(f"/customers/{maria.pk}/"))

    assert f'href="/review/{refund.request_id}/"' in page


def test_an_unknown_customer_is_404(log_in):
    client = log_in("agent")

    assert client.get("/customers/999999/").status_code == 404


@pytest.mark.parametrize(
    "path", ["/tickets/", "/tickets/TCK-1001/", "/tickets/new/", "/customers/1/"]
)
def test_someone_without_a_desk_role_gets_403(client, demo, outsider, path):
    client.force_login(outsider)

    assert client.get(path).status_code == 403


def test_someone_without_a_desk_role_cannot_post_to_a_ticket(client, demo, outsider):
    client.force_login(outsider)
    before = TicketMessage.objects.count()

    for path, data in [
        ("/tickets/TCK-1001/messages/", {"body": "hi", "visibility": "internal"}),
        ("/tickets/TCK-1001/messages/1/retry/", {}),
        ("/tickets/TCK-1001/status/", {"status": "pending"}),
    ]:
        assert client.post(path, data).status_code == 403
    assert TicketMessage.objects.count() == before
    assert ticket().status == "open"


def test_a_note_typed_in_a_browser_is_stored_with_plain_line_breaks(log_in):
    client = log_in("agent")

    client.post(
        "/tickets/TCK-1001/messages/",
        {"body": "First line\r\nSecond line", "visibility": "internal"},
    )

    assert ticket().messages.last().body == "First line\nSecond line"


def test_the_assignee_choice_lists_the_active_support_staff_in_one_query(
    demo, django_assert_num_queries
):
    get_user_model().objects.filter(username="agent2").update(is_active=False)

    with django_assert_num_queries(1):
        names = [user.username for user in support_users()]

    # reviewers and the superuser work no tickets; an inactive agent is not offered
    assert names == ["agent", "intern", "supervisor"]


def proposed_by(username: str) -> RefundRequest:
    return refund_propose(
        ticket=ticket(),
        order=ticket().order,
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="Broken.",
        requested_by=user(username),
        role="agent",
    ).refund


@pytest.mark.parametrize(
    ("username", "offered"),
    [("agent", True), ("supervisor", True), ("agent2", False), ("intern", False)],
)
def test_the_ticket_offers_withdraw_to_the_requester_and_supervisors_only(
    log_in, username, offered
):
    refund = proposed_by("agent")

    page = page_of(log_in(username).get("/tickets/TCK-1001/"))

    assert (f'id="withdraw-{refund.request_id}"' in page) is offered


def test_withdrawing_from_the_ticket_page_withdraws_and_notes_it(log_in):
    refund = proposed_by("agent")
    client = log_in("agent")

    response = client.post(
        f"/tickets/TCK-1001/refunds/{refund.request_id}/withdraw/", {"note": "She keeps it."}
    )

    assert response.status_code == 302
    refund.refresh_from_db()
    assert (refund.status, refund.confirmations.get().status) == ("withdrawn", "withdrawn")
    page = page_of(client.get("/tickets/TCK-1001/"))
    assert f"Refund {refund.request_id} withdrawn." in page
    assert f'id="withdraw-{refund.request_id}"' not in page
    assert "withdrawn by agent: She keeps it." in html.unescape(page)


def test_a_refused_withdrawal_from_the_ticket_page_says_why_and_changes_nothing(log_in):
    refund = proposed_by("agent")
    messages_before = TicketMessage.objects.count()

    response = log_in("agent2").post(f"/tickets/TCK-1001/refunds/{refund.request_id}/withdraw/")

    assert response.status_code == 403
    assert "Only whoever proposed this refund, or a supervisor, may withdraw it." in page_of(
        response
    )
    refund.refresh_from_db()
    assert (refund.status, refund.confirmations.get().status) == ("pending_approval", "pending")
    assert TicketMessage.objects.count() == messages_before


def test_withdrawing_another_tickets_refund_from_this_ticket_is_a_404(log_in):
    refund = proposed_by("agent")

    response = log_in("agent").post(f"/tickets/TCK-1002/refunds/{refund.request_id}/withdraw/")

    assert response.status_code == 404
    refund.refresh_from_db()
    assert refund.status == "pending_approval"


def test_a_closed_ticket_offers_no_escalation(log_in):
    client = log_in("agent")
    assert 'id="escalate-form"' in page_of(client.get("/tickets/TCK-1001/"))
    for status in ("solved", "closed"):
        services.ticket_set_status(ticket=ticket(), to_status=status, actor=user("agent"))

    page = page_of(client.get("/tickets/TCK-1001/"))

    assert 'id="escalate-form"' not in page


def test_the_history_says_the_customers_email_reopened_the_ticket(log_in):
    services.ticket_set_status(ticket=ticket(), to_status="solved", actor=user("agent"))
    customer = ticket().customer
    services.ticket_receive_email(
        sender=customer.email,
        name=customer.name,
        subject="Re: [TCK-1001] still broken",
        body="It is still broken.",
        message_id="<reopen-1@example.com>",
    )

    page = html.unescape(page_of(log_in("agent").get("/tickets/TCK-1001/")))

    reopened = re.search(
        r'<li class="history-status_changed">(?:(?!</li>).)*Solved → Open.*?</li>', page, re.S
    )
    assert reopened, "no reopening in the history"
    assert "Solved → Open (customer replied)" in reopened.group(0)
    assert f"{customer.name} ·" in reopened.group(0)


def test_the_notifications_page_lists_them_and_opening_one_marks_only_it_read(log_in):
    for reference in ("TCK-1001", "TCK-1002"):
        services.ticket_assign(ticket=ticket(reference), assignee=None, actor=user("supervisor"))
        services.ticket_assign(
            ticket=ticket(reference), assignee=user("agent"), actor=user("supervisor")
        )
    first, second = Notification.objects.filter(recipient__username="agent").order_by("id")
    client = log_in("agent")

    page = page_of(client.get("/notifications/"))
    response = client.post("/notifications/read/", {"id": first.pk})

    assert page.count("notification-unread") == 2
    assert (response.status_code, response["Location"]) == (302, "/tickets/TCK-1001/")
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.read_at is not None, second.read_at is None) == (True, True)

    response = client.post("/notifications/read/")

    assert (response.status_code, response["Location"]) == (302, "/notifications/")
    assert not Notification.objects.filter(recipient__username="agent", read_at=None).exists()


@pytest.mark.parametrize(
    "method, path", [("get", "/notifications/"), ("post", "/notifications/read/")]
)
def test_someone_without_a_desk_role_gets_403_from_the_notifications(
    client, demo, outsider, method, path
):
    client.force_login(outsider)

    assert getattr(client, method)(path).status_code == 403
