"""An MCP token is made only for a user who could use it: one whose role has tools (an intern,
an agent, a supervisor). A reviewer or an admin without a support role could never open a
session with it, so the service, the command and the admin refuse, saying why (issue 43,
finding 5)."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from agent.mcp_tokens import McpTokenRefused, mcp_token_issue
from agent.models import McpToken
from tickets.models import Ticket

NO_TOOLS = "has no role with tools"


def user(username: str):
    return get_user_model().objects.get(username=username)


@pytest.mark.django_db
@pytest.mark.parametrize("username", ["reviewer", "admin"])
def test_the_service_refuses_a_token_for_a_user_without_tools(demo, username):
    with pytest.raises(McpTokenRefused) as refused:
        mcp_token_issue(
            user=user(username), ticket=Ticket.objects.get(reference="TCK-1001"), days=1
        )

    assert NO_TOOLS in str(refused.value)
    assert not McpToken.objects.exists()


@pytest.mark.django_db
def test_the_command_refuses_a_token_for_a_reviewer_and_makes_one_for_an_intern(demo):
    with pytest.raises(CommandError) as refused:
        call_command("mcp_token", "--user", "reviewer", "--ticket", "TCK-1001", stdout=StringIO())
    assert NO_TOOLS in str(refused.value)
    assert not McpToken.objects.exists()

    out = StringIO()
    call_command(
        "mcp_token", "--user", "intern", "--ticket", "TCK-1001", stdout=out, stderr=StringIO()
    )
    assert out.getvalue().startswith("mcp_")
    assert McpToken.objects.get().user.username == "intern"


@pytest.mark.django_db
def test_the_admin_shows_a_form_error_for_a_user_without_tools(demo):
    admin = Client()
    admin.force_login(user("admin"))
    ticket = Ticket.objects.get(reference="TCK-1001")

    response = admin.post(
        "/admin/agent/mcptoken/add/",
        {"user": user("reviewer").pk, "ticket": ticket.pk, "customer": "", "days": 3},
    )

    assert response.status_code == 200
    assert NO_TOOLS in response.content.decode()
    assert not McpToken.objects.exists()
