"""DESIGN §19 merge: POST /api/tickets/<ref>/merge/ {"into": "<ref>"} moves a duplicate's
messages, attachments, CC, tags and refund requests onto the target, closes the source with a
pointer, threads the source's mail onto the target; refusals (409) move nothing."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from refunds.identity import fingerprint, fingerprint_params
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from tests.factories import (
    AgentRunFactory,
    CustomerFactory,
    OrderFactory,
    RefundProposalFactory,
    TicketFactory,
    TicketMessageFactory,
)
from tests.services import run_in_threads
from tickets import services
from tickets.models import Attachment, Tag, Ticket, TicketChange, TicketEvent, TicketMessage


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def merge(user, source: Ticket, into: str):
    return api_as(user).post(
        f"/api/tickets/{source.reference}/merge/", {"into": into}, format="json"
    )


def snapshot() -> dict:
    """Everything a merge could move or write, to assert a refusal left it all as it was."""
    return {
        "messages": sorted(TicketMessage.objects.values_list("pk", "ticket_id")),
        "attachments": sorted(Attachment.objects.values_list("pk", "message__ticket_id")),
        "refunds": sorted(RefundRequest.objects.values_list("pk", "ticket_id", "updated_at")),
        "tickets": sorted(
            Ticket.objects.values_list("pk", "status", "merged_into", "cc", "updated_at")
        ),
        "tags": sorted(Ticket.tags.through.objects.values_list("ticket_id", "tag_id")),
        "events": TicketEvent.objects.count(),
        "changes": TicketChange.objects.count(),
    }


@pytest.fixture
def pair(db):
    """Two tickets of one customer about one order: the duplicate written later."""
    customer = CustomerFactory(email="li.wei@example.com")
    order = OrderFactory(customer=customer)
    target = TicketFactory(customer=customer, order=order, subject="Broken mug")
    source = TicketFactory(customer=customer, order=order, subject="Broken mug again")
    return source, target


def test_it_moves_messages_attachments_cc_tags_and_refunds_onto_the_target(pair, agent_user):
    source, target = pair
    now = timezone.now()
    first = TicketMessageFactory(ticket=target, body="It broke.")
    photo = TicketMessageFactory(ticket=source, body="Photo attached.")
    later = TicketMessageFactory(ticket=target, body="Any news?")
    # Written in this order: the target's conversation stays in time order after the merge.
    for minutes, message in ((30, first), (20, photo), (10, later)):
        TicketMessage.objects.filter(pk=message.pk).update(
            created_at=now - timedelta(minutes=minutes)
        )
    attachment = Attachment.objects.create(
        message=photo,
        file="attachments/x/abc",
        filename="box.jpg",
        content_type="image/jpeg",
        size=3,
        sha256="0" * 64,
    )
    Ticket.objects.filter(pk=source.pk).update(cc=["partner@example.com", "a@example.com"])
    Ticket.objects.filter(pk=target.pk).update(cc=["a@example.com"])
    source.tags.add(Tag.objects.create(name="damaged"))
    target.tags.add(Tag.objects.create(name="vip"))
    refund = RefundProposalFactory(ticket=source, requested_by=agent_user)

    response = merge(agent_user, source, target.reference)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["reference"], body["status"], body["merged_into"]) == (
        source.reference,
        "closed",
        target.reference,
    )
    assert body["messages"] == []
    conversation = target.messages.filter(author_kind="customer")
    assert list(conversation.values_list("body", flat=True)) == [
        "It broke.",
        "Photo attached.",
        "Any news?",
    ]
    assert Attachment.objects.get(pk=attachment.pk).message.ticket_id == target.pk
    target.refresh_from_db()
    assert target.cc == ["a@example.com", "partner@example.com"]
    assert sorted(target.tags.values_list("name", flat=True)) == ["damaged", "vip"]
    assert RefundRequest.objects.get(pk=refund.pk).ticket_id == target.pk
    assert target.status == "open" and target.merged_into is None
    detail = api_as(agent_user).get(f"/api/tickets/{target.reference}/").json()
    assert detail["merged_into"] is None


def test_the_source_answers_merged_into_and_the_target_null(pair, agent_user):
    source, target = pair
    merge(agent_user, source, target.reference)

    source_body = api_as(agent_user).get(f"/api/tickets/{source.reference}/").json()
    listed = api_as(agent_user).get("/api/tickets/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed

    assert source_body["merged_into"] == target.reference
    assert {row["reference"]: row["merged_into"] for row in rows} == {
        source.reference: target.reference,
        target.reference: None,
    }


def test_refund_requests_keep_their_ids_confirmations_history_and_fingerprint(
    pair, agent_user, reviewer
):
    source, target = pair
    refund = RefundProposalFactory(ticket=source, requested_by=agent_user)
    before = (
        refund.request_id,
        list(RefundConfirmation.objects.filter(refund_request=refund).values()),
        list(RefundEvent.objects.filter(refund_request=refund).values()),
        RefundRequest.objects.filter(pk=refund.pk).values("updated_at", "status").get(),
    )

    assert merge(agent_user, source, target.reference).status_code == 200

    moved = RefundRequest.objects.get(pk=refund.pk)
    after = (
        moved.request_id,
        list(RefundConfirmation.objects.filter(refund_request=moved).values()),
        list(RefundEvent.objects.filter(refund_request=moved).values()),
        RefundRequest.objects.filter(pk=moved.pk).values("updated_at", "status").get(),
    )
    assert after == before
    # The approval a reviewer gives now is bound to the same parameters as before the merge.
    assert fingerprint(fingerprint_params(moved)) == moved.confirmations.get().fingerprint


def test_an_event_on_both_names_the_other_reference(pair, agent_user):
    source, target = pair

    merge(agent_user, source, target.reference)

    def merge_events(ticket):
        return list(
            TicketEvent.objects.filter(ticket=ticket, type__startswith="merged_").values_list(
                "type", "actor__username", "data"
            )
        )

    assert merge_events(source) == [("merged_into", "t_agent", {"reference": target.reference})]
    assert merge_events(target) == [("merged_from", "t_agent", {"reference": source.reference})]
    assert TicketEvent.objects.get(ticket=source, type="status_changed").data == {
        "from": "open",
        "to": "closed",
        "reason": f"merged into {target.reference}",
    }
    for ticket in (source, target):
        assert TicketChange.objects.filter(ticket=ticket, type="ticket.merged").count() == 1


def test_it_refuses_across_customers_and_moves_nothing(pair, agent_user):
    source, _ = pair
    stranger = TicketFactory(customer=CustomerFactory())
    TicketMessageFactory(ticket=source)
    before = snapshot()

    response = merge(agent_user, source, stranger.reference)

    assert response.status_code == 409
    assert response.json()["code"] == "merge_customers_differ"
    assert snapshot() == before


@pytest.mark.parametrize("case", ["itself", "already_merged", "into_merged", "into_closed"])
def test_it_refuses_an_invalid_merge_with_merge_invalid_and_moves_nothing(pair, agent_user, case):
    source, target = pair
    third = TicketFactory(customer=source.customer, order=source.order)
    TicketMessageFactory(ticket=source)
    if case == "already_merged":
        merge(agent_user, source, third.reference)
    elif case == "into_merged":
        merge(agent_user, target, third.reference)
    elif case == "into_closed":
        Ticket.objects.filter(pk=target.pk).update(status="closed")
    into = source.reference if case == "itself" else target.reference
    before = snapshot()

    response = merge(agent_user, source, into)

    assert response.status_code == 409
    assert response.json()["code"] == "merge_invalid"
    assert snapshot() == before


def test_it_refuses_while_both_tickets_hold_an_open_refund_on_one_order(pair, agent_user):
    source, target = pair
    RefundProposalFactory(ticket=source, requested_by=agent_user, amount=Decimal("20.00"))
    RefundProposalFactory(ticket=target, requested_by=agent_user, amount=Decimal("30.00"))
    before = snapshot()

    response = merge(agent_user, source, target.reference)

    assert response.status_code == 409
    assert response.json()["code"] == "merge_invalid"
    assert response.json()["extra"] == {"orders": [source.order.order_id]}
    assert snapshot() == before


def test_it_refuses_while_the_assistant_works_on_the_source(pair, agent_user):
    source, target = pair
    AgentRunFactory(ticket=source, started_by=agent_user, status="running")

    response = merge(agent_user, source, target.reference)

    assert (response.status_code, response.json()["code"]) == (409, "merge_invalid")
    assert Ticket.objects.get(pk=source.pk).merged_into is None


def test_an_unknown_target_is_not_found(pair, agent_user):
    source, _ = pair

    response = merge(agent_user, source, "TCK-999999")

    assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert response.json()["extra"]["fields"] == {"into": ["No ticket TCK-999999."]}


@pytest.mark.parametrize("role", ["intern", "reviewer", "outsider"])
def test_interns_and_reviewers_may_not_merge(request, pair, role):
    source, target = pair
    before = snapshot()

    response = merge(request.getfixturevalue(role), source, target.reference)

    assert response.status_code == 403
    assert snapshot() == before


def test_a_supervisor_merges(pair, supervisor):
    source, target = pair

    assert merge(supervisor, source, target.reference).status_code == 200


def test_inbound_mail_quoting_the_source_lands_on_the_target(pair, agent_user):
    source, target = pair
    merge(agent_user, source, target.reference)
    tickets_before = Ticket.objects.count()

    inbound = services.ticket_receive_email(
        sender="li.wei@example.com",
        name="Li Wei",
        subject=f"Re: [{source.reference}] Broken mug again",
        body="Any update?",
        message_id="<later.li@mail.example.com>",
    )

    assert (inbound.ticket.pk, inbound.created) == (target.pk, False)
    assert Ticket.objects.count() == tickets_before
    assert TicketMessage.objects.get(message_id="<later.li@mail.example.com>").ticket == target


def test_inbound_mail_follows_a_chain_of_merges(pair, agent_user):
    source, target = pair
    last = TicketFactory(customer=source.customer, order=source.order)
    merge(agent_user, source, target.reference)
    merge(agent_user, target, last.reference)

    inbound = services.ticket_receive_email(
        sender="li.wei@example.com",
        name="Li Wei",
        subject=f"Re: [{source.reference}]",
        body="Still broken.",
        message_id="<chain.li@mail.example.com>",
    )

    assert inbound.ticket.pk == last.pk


def test_another_customers_mail_quoting_a_merged_reference_gets_its_own_ticket(pair, agent_user):
    source, target = pair
    merge(agent_user, source, target.reference)

    inbound = services.ticket_receive_email(
        sender="someone.else@example.com",
        name="Someone",
        subject=f"Re: [{source.reference}]",
        body="Hi",
        message_id="<else@mail.example.com>",
    )

    assert inbound.created is True
    assert inbound.ticket.pk not in (source.pk, target.pk)


def test_the_ticket_page_merges_after_confirmation_and_keeps_a_refused_reference(
    client, pair, agent_user
):
    source, target = pair
    client.force_login(agent_user)
    url = f"/tickets/{source.reference}/merge/"

    stranger = TicketFactory(customer=CustomerFactory())

    unconfirmed = client.post(url, {"into": target.reference})
    refused = client.post(url, {"into": stranger.reference, "confirm": "yes"})
    nothing_yet = Ticket.objects.get(pk=source.pk).merged_into
    done = client.post(url, {"into": target.reference.lower(), "confirm": "yes"})

    assert unconfirmed.status_code == 400
    assert "Tick the box to confirm" in unconfirmed.content.decode()
    assert nothing_yet is None
    assert refused.status_code == 409
    assert f'value="{stranger.reference}"' in refused.content.decode()
    assert "different customers" in refused.content.decode()
    assert (done.status_code, done["Location"]) == (302, f"/tickets/{target.reference}/")
    assert Ticket.objects.get(pk=source.pk).merged_into_id == target.pk
    page = client.get(f"/tickets/{source.reference}/").content.decode()
    assert 'id="merged-notice"' in page and 'id="merge-form"' not in page


def test_an_intern_sees_no_merge_form(client, pair, intern):
    source, _ = pair
    client.force_login(intern)

    page = client.get(f"/tickets/{source.reference}/").content.decode()

    assert 'id="merge-form"' not in page


def test_the_merge_endpoint_is_in_the_openapi_schema(agent_user):
    schema = api_as(agent_user).get("/api/schema/?format=json").json()

    operation = schema["paths"]["/api/tickets/{reference}/merge/"]["post"]
    assert set(operation["responses"]) >= {"200", "400", "403", "404", "409"}


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_merging_a_into_b_and_b_into_a_at_once_lets_exactly_one_win(postgres, agent_user):
    customer = CustomerFactory()
    order = OrderFactory(customer=customer)
    a = TicketFactory(customer=customer, order=order)
    b = TicketFactory(customer=customer, order=order)
    TicketMessageFactory(ticket=a, body="from a")
    TicketMessageFactory(ticket=b, body="from b")
    directions = [(a, b), (b, a)] * 5

    responses = run_in_threads(
        len(directions),
        lambda i: merge(agent_user, directions[i][0], directions[i][1].reference),
    )

    assert [r for r in responses if not hasattr(r, "status_code")] == []
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * 9
    assert {r.json()["code"] for r in responses if r.status_code == 409} == {"merge_invalid"}
    merged = list(Ticket.objects.filter(merged_into__isnull=False))
    assert len(merged) == 1
    kept = merged[0].merged_into
    assert kept is not None
    assert (kept.status, kept.merged_into) == ("open", None)
    assert sorted(kept.messages.values_list("body", flat=True)) == ["from a", "from b"]
    assert TicketEvent.objects.filter(type__startswith="merged_").count() == 2


def test_the_assistant_is_not_started_on_a_merged_ticket(pair, agent_user):
    source, target = pair
    merge(agent_user, source, target.reference)

    response = api_as(agent_user).post(
        f"/api/tickets/{source.reference}/runs/", {"message": "Refund it"}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["code"] == "ticket_merged"
    assert not source.runs.exists()


def test_the_ticket_list_marks_a_merged_ticket_with_its_target(client, pair, agent_user):
    source, target = pair
    merge(agent_user, source, target.reference)
    client.force_login(agent_user)

    page = client.get("/tickets/").content.decode()

    assert f'data-merged-into="{target.reference}"' in page
    assert page.count("data-merged-into=") == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_merge_and_a_refund_decision_at_once_both_end_cleanly(postgres, agent_user, reviewer):
    from refunds.services import refund_approve

    outcomes, moved = [], []
    for _ in range(6):
        customer = CustomerFactory()
        order = OrderFactory(customer=customer)
        target = TicketFactory(customer=customer, order=order)
        source = TicketFactory(customer=customer, order=order)
        refund = RefundProposalFactory(ticket=source, requested_by=agent_user)
        confirmation = refund.confirmations.get()

        def work(index, source=source, target=target, refund=refund, confirmation=confirmation):
            if index == 0:
                return merge(agent_user, source, target.reference).status_code
            return refund_approve(
                refund=refund,
                reviewer=reviewer,
                version=confirmation.version,
                fingerprint=confirmation.fingerprint,
            ).status

        outcomes.append(run_in_threads(2, work))
        moved.append(RefundRequest.objects.get(pk=refund.pk).ticket_id == target.pk)

    assert outcomes == [[200, "approved"]] * 6
    assert moved == [True] * 6
