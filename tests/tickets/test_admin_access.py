import pytest

from tickets.models import Ticket, TicketEvent, TicketMessage

pytestmark = pytest.mark.django_db

REVIEWER_PAGES = [
    "/admin/refunds/refundrequest/",
    "/admin/agent/toolcalllog/",
    "/admin/orders/order/",
    "/admin/tickets/ticket/",
]


@pytest.mark.parametrize("url", REVIEWER_PAGES)
def test_it_lets_a_reviewer_inspect_refunds_in_admin(client, demo, url):
    client.login(username="reviewer", password="demo-pass-123")
    assert client.get(url).status_code == 200


def test_it_keeps_support_agents_out_of_admin(client, demo):
    client.login(username="agent", password="demo-pass-123")
    response = client.get("/admin/refunds/refundrequest/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_a_reviewer_cannot_edit_orders_in_admin(client, demo):
    client.login(username="reviewer", password="demo-pass-123")
    response = client.get("/admin/orders/order/add/")
    assert response.status_code == 403


# --- The ticket in admin: messages with their delivery, the append-only history ----------------


def test_the_ticket_admin_lists_and_filters_escalated_tickets(admin_client, demo):
    Ticket.objects.filter(reference="TCK-1001").update(escalated=True)

    listing = admin_client.get("/admin/tickets/ticket/")
    escalated = admin_client.get("/admin/tickets/ticket/?escalated__exact=1")

    assert "escalated" in listing.context["cl"].list_display
    assert [t.reference for t in escalated.context["cl"].result_list] == ["TCK-1001"]


def test_the_ticket_admin_shows_each_messages_visibility_and_delivery(admin_client, demo):
    ticket = Ticket.objects.get(reference="TCK-1001")
    TicketMessage.objects.create(
        ticket=ticket,
        author_kind="agent",
        body="We are sending a new mug.",
        visibility="public",
        delivery="failed",
        delivery_error="550 mailbox unavailable",
    )

    page = admin_client.get(f"/admin/tickets/ticket/{ticket.pk}/change/").content.decode()

    messages = page[page.index('id="messages-group"') : page.index('id="events-group"')]
    for text in ("Visibility", "Delivery", "Public reply", "Failed", "550 mailbox unavailable"):
        assert text in messages, text
    assert 'name="messages-0-body"' not in messages  # shown, not editable


def test_the_ticket_history_is_append_only_in_admin(admin_client, demo):
    ticket = Ticket.objects.get(reference="TCK-1001")
    TicketEvent.objects.create(ticket=ticket, type="escalated", data={"note": "Customer upset"})

    response = admin_client.get(f"/admin/tickets/ticket/{ticket.pk}/change/")

    page = response.content.decode()
    history = page[page.index('id="events-group"') :]
    assert "Escalated to supervisors" in history
    assert "<pre>{\n  &quot;note&quot;: &quot;Customer upset&quot;\n}</pre>" in history
    [events] = [
        inline
        for inline in response.context["inline_admin_formsets"]
        if inline.opts.model is TicketEvent
    ]
    # Even a superuser may not add, change or delete a ticket's history here.
    assert (events.has_add_permission, events.has_change_permission) == (False, False)
    assert events.has_delete_permission is False
    assert 'name="events-0-type"' not in history
