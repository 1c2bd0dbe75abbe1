"""What the end-to-end stories share: the inbound mail gateway's POST, a second browser's
log-in, a camera that checks each page at laptop and phone width, and the waits a real
worker needs. Their fixtures are in tests/e2e/conftest.py."""

import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from playwright.sync_api import Page, expect

from tests.e2e.overflow import LAPTOP, PHONE, assert_fits

INBOUND_SECRET = "story-inbound-secret-0123456789-abcdef"
# The worker is a real process: a run, a refund and an email each take it a few seconds.
RUN_TIMEOUT_MS = 45_000
# The proposal box asks every 5 s; the worker executes the refund in about as long.
REFUND_TIMEOUT_MS = 60_000
DELIVERY_TIMEOUT_S = 45
# The held mail server lets a client wait at most this long (less than the worker's timeout).
HOLD_LIMIT_S = 20


class Camera:
    """Photographs a page at laptop and phone width (numbered in story order) and checks that
    it fits both; the page is left at laptop width, its scripts still running."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.taken = 0

    def shoot(self, page: Page, name: str) -> None:
        self.taken += 1
        for viewport in (LAPTOP, PHONE):
            page.set_viewport_size(viewport)
            width = viewport["width"]
            page.screenshot(
                path=self.directory / f"{self.taken:02d}-{name}-{width}.png", full_page=True
            )
            assert_fits(page, f"{name} ({page.url})")
        page.set_viewport_size(LAPTOP)


def email_in(live_server, *, sender: str, name: str, message_id: str, **email) -> dict:
    """POST an email as the mail gateway does (JSON and the shared secret, no browser): the
    desk's answer, {"ticket", "created", "duplicate"}. `email`: subject, body, cc, attachments."""
    url = urlsplit(live_server.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    payload = {"cc": [], "attachments": [], **email}
    try:
        connection.request(
            "POST",
            "/api/inbound/email/",
            body=json.dumps({"from": sender, "name": name, "message_id": message_id, **payload}),
            headers={"Content-Type": "application/json", "X-Inbound-Secret": INBOUND_SECRET},
        )
        response = connection.getresponse()
        assert response.status == 201, response.read()
        return json.loads(response.read())
    finally:
        connection.close()


def log_in(page: Page, username: str) -> None:
    """As the `login` fixture does, for any page: the reviewer has a browser of their own."""
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", settings.DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def wait_for_the_refunded_proposal(page: Page) -> None:
    """After a reload the panel replays the run from the database: wait until the proposal box
    is back (and says refunded), so the photo and the width check see the whole page."""
    status = page.locator("#assistant-proposal-status")
    expect(status).to_have_attribute("data-status", "succeeded", timeout=RUN_TIMEOUT_MS)


def history_row(page: Page, event_type: str, text: str):
    return page.locator(f"#history li.history-{event_type}", has_text=text)
