"""`make run` says whether customer email reaches the desk, and how to turn it on."""

from ops import devserver


def test_the_banner_says_inbound_email_is_off_and_how_to_turn_it_on(monkeypatch):
    monkeypatch.delenv("INBOUND_SECRET", raising=False)

    banner = devserver.banner("http://127.0.0.1:8000/")

    assert "Inbound email: off" in banner
    assert "set\n    INBOUND_SECRET in .env to 32+ random characters" in banner
    assert "/api/inbound/email/" in banner
    assert "Inbound email: on" not in banner


def test_the_banner_says_inbound_email_is_on_when_a_secret_is_set(monkeypatch):
    monkeypatch.setenv("INBOUND_SECRET", "s" * 40)

    banner = devserver.banner("http://127.0.0.1:8000/")

    assert "Inbound email: on (POST /api/inbound/email/ with header X-Inbound-Secret" in banner
    assert "Inbound email: off" not in banner
    assert "s" * 40 not in banner  # the secret itself is never printed
