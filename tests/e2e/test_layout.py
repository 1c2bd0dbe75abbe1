"""No page a reviewer uses is wider than the screen: the review pages and the login on a phone
(390 px), the admin's refund and tool-call pages on a laptop (1280 px). Long ids,
fingerprints and JSON wrap or scroll inside their own box."""

import os
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from agent.models import AgentRun, ToolCallLog
from orders.models import Order
from refunds.models import RefundRequest
from refunds.services import refund_propose
from tests.e2e.overflow import LAPTOP, PHONE, page_width
from tickets.models import Ticket

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.django_db(transaction=True)]

LONG_TEXT = "The customer wrote a very long explanation " * 12


@pytest.fixture
def proposal_with_a_long_trail(demo) -> RefundRequest:
    """The agent's proposal on TCK-1001, made by a run whose tool calls carry long ids and
    long JSON arguments and results."""
    agent = get_user_model().objects.get(username="agent")
    ticket = Ticket.objects.get(reference="TCK-1001")
    run = AgentRun.objects.create(ticket=ticket, started_by=agent, actor_role="agent")
    for n in range(3):
        ToolCallLog.objects.create(
            run=run,
            ticket=ticket,
            tool_call_id=f"call_{n}_" + "x" * 60,
            tool_name="create_refund",
            arguments={"order_id": "202610110087", "explanation": LONG_TEXT, "n": n},
            arguments_raw='{"order_id": "202610110087", "explanation": "' + LONG_TEXT + '"}',
            args_digest="f" * 64,
            ok=True,
            result={"ok": True, "message": LONG_TEXT, "unbroken": "y" * 200},
            actor=agent,
            actor_role="agent",
        )
    return refund_propose(
        ticket=ticket,
        order=Order.objects.get(order_id="202610110087"),
        amount=Decimal("129.00"),
        reason="damaged",
        explanation=LONG_TEXT,
        requested_by=agent,
        role="agent",
        run=run,
    ).refund


def test_the_review_pages_fit_a_phone(page, login, proposal_with_a_long_trail):
    page.set_viewport_size(PHONE)
    login("reviewer")

    for path in ("/review/?status=all", f"/review/{proposal_with_a_long_trail.request_id}/"):
        response = page.goto(path)
        assert response.status == 200
        assert page_width(page) <= PHONE["width"], path
    # The queue's rows are stacked cards on a phone, each cell named, rather than columns.
    page.goto("/review/?status=all")
    first_row = page.locator("#review-queue tbody tr").first
    assert first_row.evaluate("el => getComputedStyle(el).display") == "block"
    assert first_row.locator("td").first.get_attribute("data-label") == "Requested"


def test_the_header_wraps_onto_its_own_lines_on_a_phone(page, login, demo):
    page.set_viewport_size(PHONE)
    login("reviewer")

    brand = page.locator(".topbar .brand").bounding_box()
    nav = page.locator(".topbar nav").bounding_box()
    user = page.locator(".topbar .who").bounding_box()
    assert nav["y"] >= brand["y"] + brand["height"] - 1  # the navigation gets a line of its own
    assert user["x"] + user["width"] <= PHONE["width"]
    assert page_width(page) <= PHONE["width"]


def test_the_login_page_fits_a_phone(page, demo):
    page.set_viewport_size(PHONE)

    page.goto("/login/")

    assert page_width(page) <= PHONE["width"]


def test_the_admin_refund_and_tool_call_pages_fit_a_laptop(page, login, proposal_with_a_long_trail):
    page.set_viewport_size(LAPTOP)
    login("reviewer")

    for path in (
        f"/admin/refunds/refundrequest/{proposal_with_a_long_trail.pk}/change/",
        "/admin/agent/toolcalllog/",
        f"/admin/agent/toolcalllog/{ToolCallLog.objects.first().pk}/change/",
        f"/admin/agent/agentrun/{proposal_with_a_long_trail.run_id}/change/",
    ):
        response = page.goto(path)
        assert response.status == 200
        assert page_width(page) <= LAPTOP["width"], path


def test_the_copy_button_copies_the_whole_fingerprint(page, login, proposal_with_a_long_trail):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.set_viewport_size(LAPTOP)
    login("reviewer")
    fingerprint = proposal_with_a_long_trail.confirmations.get().fingerprint
    page.goto(f"/admin/refunds/refundrequest/{proposal_with_a_long_trail.pk}/change/")

    button = page.locator(f'button.desk-copy[data-copy="{fingerprint}"]')
    button.click()

    assert page.evaluate("navigator.clipboard.readText()") == fingerprint
    assert button.inner_text() == "Copied"


# --- Every page with tables, at phone and laptop width (issue 33) ----------------------------

# Boxes that would scroll sideways inside the page, hiding columns, if a table were too wide.
SIDEWAYS_SCROLLERS = """() => Array.from(document.querySelectorAll(
    '.table-scroll, .table-wrap, .card, table.grid, main.page'))
  .filter(el => el.scrollWidth > el.clientWidth + 1)
  .map(el => (el.id || el.className || el.tagName) + ' ' + el.scrollWidth + '>' + el.clientWidth)"""

# A table whose rows are not stacked at phone width, or a cell that reaches past the window.
UNSTACKED = """(width) => Array.from(document.querySelectorAll('table.grid')).filter(t =>
    t.getClientRects().length && (
      Array.from(t.querySelectorAll('tbody tr'))
        .some(tr => getComputedStyle(tr).display !== 'block')
      || Array.from(t.querySelectorAll('td'))
        .some(td => td.getBoundingClientRect().right > width + 1)))
  .map(t => t.id || t.closest('[id]')?.id || 'a table')"""


def _shots_dir(tmp_path) -> Path:
    directory = Path(os.environ.get("LAYOUT_SHOTS_DIR") or tmp_path / "shots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _desk_pages(refund: RefundRequest) -> dict[str, tuple[str, str]]:
    """name -> (who looks, path): every desk page with a table."""
    customer = refund.order.customer_id
    return {
        "ticket-list": ("agent", "/tickets/"),
        "ticket": ("agent", "/tickets/TCK-1001/"),
        "customer": ("agent", f"/customers/{customer}/"),
        "review-queue": ("reviewer", "/review/?status=all"),
        "review": ("reviewer", f"/review/{refund.request_id}/"),
    }


def test_every_page_with_tables_fits_a_phone_and_a_laptop(
    page, login, proposal_with_a_long_trail, tmp_path
):
    shots = _shots_dir(tmp_path)
    logged_in_as = None
    for name, (username, path) in _desk_pages(proposal_with_a_long_trail).items():
        if username != logged_in_as:
            page.context.clear_cookies()
            login(username)
            logged_in_as = username
        for viewport in (PHONE, LAPTOP):
            page.set_viewport_size(viewport)
            assert page.goto(path).status == 200, path
            page.wait_for_load_state("networkidle")
            width = viewport["width"]
            page.screenshot(path=shots / f"{name}-{width}.png", full_page=True)

            assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate(
                "window.innerWidth"
            ), f"{path} overflows at {width}px"
            assert page.evaluate(SIDEWAYS_SCROLLERS) == [], f"{path} at {width}px"
            if viewport is PHONE:
                assert page.evaluate(UNSTACKED, width) == [], f"{path} at {width}px"


def test_the_review_page_shows_the_customers_words_and_balance_before_approve_on_a_phone(
    page, login, proposal_with_a_long_trail
):
    page.set_viewport_size(PHONE)
    login("reviewer")
    page.goto(f"/review/{proposal_with_a_long_trail.request_id}/")

    words = page.locator("#review-context .customer-words").first.bounding_box()
    balance = page.locator("#review-balance").bounding_box()
    approve = page.locator("#approve-form button[type=submit]").bounding_box()

    assert "arrived in pieces" in page.locator("#review-context").inner_text()
    assert "129.00 CNY" in page.locator("#review-balance").inner_text()
    assert words["y"] + words["height"] <= balance["y"] < approve["y"]
    assert balance["x"] + balance["width"] <= PHONE["width"]


# Where the admin puts its lists: a list scrolling inside this box hides its last columns.
ADMIN_LIST_OVERFLOW = """() => { const box = document.querySelector('#changelist .results');
  return box ? box.scrollWidth - box.clientWidth : null; }"""


def test_the_admin_refund_and_tool_call_lists_fit_a_laptop_newest_first(
    page, login, proposal_with_a_long_trail, tmp_path
):
    shots = _shots_dir(tmp_path)
    page.set_viewport_size(LAPTOP)
    login("admin")

    for name, path in (
        ("admin-refunds", "/admin/refunds/refundrequest/"),
        ("admin-tool-calls", "/admin/agent/toolcalllog/"),
    ):
        page.goto(path)
        # With the admin's side navigation open, as it is by default on a laptop.
        assert page.locator("#nav-sidebar").is_visible()
        page.screenshot(path=shots / f"{name}-1280.png", full_page=True)
        assert page_width(page) <= LAPTOP["width"], path
        assert page.evaluate(ADMIN_LIST_OVERFLOW) == 0, f"{path} scrolls sideways"

    # Newest first: the demo's old blender refund comes after the new proposal.
    page.goto("/admin/refunds/refundrequest/")
    first = page.locator("#result_list tbody tr").first.locator("th [title]")
    assert first.get_attribute("title") == proposal_with_a_long_trail.request_id
    page.goto("/admin/agent/toolcalllog/")
    links = page.locator("#result_list tbody tr th a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))"
    )
    created = [
        ToolCallLog.objects.get(pk=int(href.rstrip("/").split("/")[-2])).created_at
        for href in links
    ]
    assert len(created) == 3 and created == sorted(created, reverse=True)


@pytest.mark.parametrize("window", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_an_agent_sets_the_name_and_signature_replies_carry(page, login, demo, window):
    page.set_viewport_size(window)
    login("agent")

    page.locator(".topbar a.user-link").click()
    page.fill("#display_name", "Alex from Refunds")
    page.fill("#signature", "Refunds team\nMon-Fri 9-18 CET")
    page.click("#me-save")

    preview = page.locator("#me-sign-off").inner_text()
    assert preview == "-- \nAlex from Refunds\nRefunds team\nMon-Fri 9-18 CET"
    assert page_width(page) <= window["width"]
    if os.environ.get("SCREENSHOTS_DIR"):
        name = f"me-{window['width']}.png"
        page.screenshot(path=str(Path(os.environ["SCREENSHOTS_DIR"]) / name), full_page=True)


def _png(width: int, height: int) -> bytes:
    """A real, decodable PNG of one colour."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xc8\x50\x3c" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("window", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_the_reviewer_sees_the_customers_photo_beside_their_words(
    page, login, proposal_with_a_long_trail, window, settings, tmp_path
):
    import hashlib

    from django.core.files.base import ContentFile

    from tickets.models import Attachment, TicketMessage

    settings.MEDIA_ROOT = tmp_path
    photo = _png(320, 240)
    message = TicketMessage.objects.create(
        ticket=proposal_with_a_long_trail.ticket,
        author_kind=TicketMessage.AuthorKind.CUSTOMER,
        body="Here is the photo of the broken mug.",
    )
    Attachment.objects.create(
        message=message,
        file=ContentFile(photo, name="broken-mug-photo-taken-on-arrival.png"),
        filename="broken-mug-photo-taken-on-arrival.png",
        content_type="image/png",
        size=len(photo),
        sha256=hashlib.sha256(photo).hexdigest(),
    )
    page.set_viewport_size(window)
    login("reviewer")

    page.goto(f"/review/{proposal_with_a_long_trail.request_id}/")

    thumb = page.locator("#customer-files img")
    thumb.wait_for()
    assert thumb.evaluate("img => img.complete && img.naturalWidth") == 320
    assert page_width(page) <= window["width"]
    if os.environ.get("SCREENSHOTS_DIR"):
        name = f"review-evidence-{window['width']}.png"
        page.screenshot(path=str(Path(os.environ["SCREENSHOTS_DIR"]) / name), full_page=True)


@pytest.mark.parametrize("window", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_a_supervisor_writes_a_macro_in_two_languages_and_previews_it(page, login, demo, window):
    page.set_viewport_size(window)
    login("supervisor")

    page.goto("/macros/")
    page.click("#macro-new")
    page.fill("#id_name", "Broken on arrival")
    page.fill("#id_body", "Sorry, ")
    page.locator("#id_body").press("End")
    page.click("[data-placeholder='customer.first_name']")
    page.fill("#id_text_zh", "很抱歉。")
    page.select_option("#id_priority", "high")
    page.click("#macro-save")
    page.fill("#preview", "TCK-1001")
    page.locator("#macro-preview-form button").click()

    assert page.locator("#macro-preview").inner_text() == "Sorry, Li"
    assert page_width(page) <= window["width"]
    if os.environ.get("SCREENSHOTS_DIR"):
        name = f"macro-edit-{window['width']}.png"
        page.screenshot(path=str(Path(os.environ["SCREENSHOTS_DIR"]) / name), full_page=True)
