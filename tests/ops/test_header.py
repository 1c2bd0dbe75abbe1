"""The header names the logged-in user once: their name, then their role only when the name
does not already say it (the demo's users are named after their roles)."""

import re

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db


def header_user(client, username: str) -> str:
    client.force_login(get_user_model().objects.get(username=username))
    page = client.get("/tickets/").content.decode()
    match = re.search(r'<span class="user">(.*?)</span>', page, re.S)
    assert match, "no user in the header"
    return match.group(1)


@pytest.mark.parametrize(
    ("username", "shown"),
    [
        ("agent", "agent"),
        ("supervisor", "supervisor"),
        ("intern", "intern"),
        ("reviewer", "reviewer"),
        ("agent2", "agent2 · agent"),
        ("reviewer2", "reviewer2 · reviewer"),
    ],
)
def test_it_shows_the_user_once_and_the_role_only_when_it_adds_something(
    client, demo, username, shown
):
    assert header_user(client, username) == shown
