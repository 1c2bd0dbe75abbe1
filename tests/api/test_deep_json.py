"""JSON nested deeper than Python's parser can follow is a malformed body: 400, never a 500,
on every endpoint that reads JSON (they all parse with ops.parsers.JSONParser)."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework import parsers
from rest_framework.test import APIClient

from ops.models import ApiToken
from ops.parsers import JSONParser
from tests.api.conftest import token_header
from tickets.models import Ticket, TicketEvent, TicketMessage

pytestmark = pytest.mark.django_db

SECRET = "gateway-secret-0123456789-abcdefghij"
DEPTH = 50_000


def nested(shape: str) -> str:
    if shape == "arrays":
        return "[" * DEPTH + "]" * DEPTH
    return '{"a": ' * DEPTH + "1" + "}" * DEPTH


def writes() -> tuple[int, int, int, int]:
    return (
        Ticket.objects.count(),
        TicketMessage.objects.count(),
        TicketEvent.objects.count(),
        ApiToken.objects.count(),
    )


@pytest.mark.parametrize("shape", ["arrays", "objects"])
@pytest.mark.parametrize(
    ("path", "caller"),
    [
        ("/api/auth/token/", None),
        ("/api/inbound/email/", "gateway"),
        ("/api/tickets/TCK-1001/messages/", "agent"),
        ("/api/tickets/TCK-1001/assign/", "agent"),
        ("/api/tickets/TCK-1001/status/", "agent"),
        ("/api/tickets/TCK-1001/runs/", "agent"),
    ],
)
def test_it_refuses_json_nested_too_deep_with_400_and_writes_nothing(
    demo, settings, path, caller, shape
):
    settings.INBOUND_SECRET = SECRET
    headers = {}
    if caller == "gateway":
        headers["X-Inbound-Secret"] = SECRET
    elif caller:
        headers["Authorization"] = token_header(caller)
    before = writes()

    response = APIClient().generic(
        "POST", path, nested(shape), content_type="application/json", headers=headers
    )

    assert response.status_code == 400, response.content[:300]
    assert response.json() == {
        "message": "JSON parse error - nested too deeply.",
        "code": "parse_error",
        "extra": {},
    }
    assert writes() == before


def drf_views(patterns=None):
    """(route, view class, parser classes) of every DRF view the URLconf serves."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from drf_views(pattern.url_patterns)
        elif isinstance(pattern, URLPattern) and hasattr(pattern.callback, "cls"):
            view = pattern.callback
            parsers_used = view.initkwargs.get("parser_classes", view.cls.parser_classes)
            yield str(pattern.pattern), view.cls, parsers_used


def test_it_parses_json_with_the_desks_parser_on_every_endpoint():
    views = list(drf_views())

    others = [
        (route, cls.__name__, parser.__name__)
        for route, cls, used in views
        for parser in used
        if issubclass(parser, parsers.JSONParser) and not issubclass(parser, JSONParser)
    ]

    assert len(views) > 20
    assert others == []
