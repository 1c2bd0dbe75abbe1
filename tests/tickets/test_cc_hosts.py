"""CC takes addresses at a domain name only: an IP literal (`x@[127.0.0.1]`,
`x@[IPv6:::1]`) or a bare host name (`x@localhost`) would have the desk's mail server deliver
public replies to whatever machine it names, inside the network too. Django's validator
accepts all three. Set by hand (API, page) they are refused with a 400 that says why; copied on
an inbound email they are left out and the email is taken (issue 43, finding 5)."""

import pytest
from django.core import mail as django_mail
from rest_framework.test import APIClient

from config.errors import ApplicationError
from tests.factories import TicketFactory, UserFactory
from tickets import services
from tickets.models import Ticket

HOSTS = ["x@[127.0.0.1]", "x@[IPv6:::1]", "x@[10.0.0.5]", "root@localhost"]
SECRET = "cc-hosts-inbound-secret-0123456789abcdef"


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize("address", HOSTS)
def test_the_cc_api_refuses_an_address_at_an_ip_or_a_bare_host_with_a_400(db, agent_user, address):
    ticket = TicketFactory(cc=["kept@example.com"])

    response = api_as(agent_user).post(
        f"/api/tickets/{ticket.reference}/cc/",
        {"cc": ["ok@example.com", address]},
        format="json",
    )

    assert response.status_code == 400
    assert "domain name" in str(response.json()["extra"]["fields"]["cc"])
    assert Ticket.objects.get(pk=ticket.pk).cc == ["kept@example.com"]


@pytest.mark.parametrize("address", HOSTS)
def test_the_service_and_the_page_refuse_an_address_at_an_ip(db, client, agent_user, address):
    ticket = TicketFactory()
    with pytest.raises(ApplicationError) as refused:
        services.ticket_set_cc(ticket=ticket, actor=agent_user, cc=[address])
    client.force_login(UserFactory(username="page_agent", role="agent"))
    page = client.post(f"/tickets/{ticket.reference}/cc/", {"cc": address})

    assert "domain name" in refused.value.message
    assert page.status_code == 400
    assert Ticket.objects.get(pk=ticket.pk).cc == []


def test_inbound_mail_leaves_out_such_a_cc_and_keeps_the_rest(db, settings):
    settings.INBOUND_SECRET = SECRET
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

    response = APIClient().post(
        "/api/inbound/email/",
        {
            "from": "li.wei@example.com",
            "subject": "Cracked mug",
            "body": "Copying my sister.",
            "message_id": "<cc-hosts-1@example.com>",
            "cc": [*HOSTS, "sister@example.com"],
        },
        format="json",
        HTTP_X_INBOUND_SECRET=SECRET,
    )

    assert response.status_code == 201, response.content
    assert Ticket.objects.get(reference=response.json()["ticket"]).cc == ["sister@example.com"]


def test_a_reply_is_not_copied_to_such_an_address_kept_from_before(db, agent_user, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    ticket = TicketFactory(cc=["x@[127.0.0.1]", "partner@example.com"])

    message = services.ticket_write(
        ticket=ticket, author=agent_user, body="On it", visibility="public"
    )
    services.reply_send(message_pk=message.pk)

    (sent,) = django_mail.outbox
    assert sent.cc == ["partner@example.com"]


def test_the_cc_api_refuses_a_domain_only_idna_2003_folds_into_ascii(db, agent_user):
    ticket = TicketFactory(cc=["kept@example.com"])

    response = api_as(agent_user).post(
        f"/api/tickets/{ticket.reference}/cc/",
        {"cc": ["ok@example.com", "li.wei@\uff45xample.com"]},
        format="json",
    )

    assert response.status_code == 400
    assert "its domain is not a valid" in str(response.json()["extra"]["fields"]["cc"])
    assert Ticket.objects.get(pk=ticket.pk).cc == ["kept@example.com"]
