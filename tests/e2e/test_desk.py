import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_it_lets_an_agent_filter_the_list_and_open_the_mug_ticket(page, login, demo):
    login("agent")
    assert page.url.endswith("/tickets/")
    assert page.locator("#ticket-list tbody tr").count() == 4

    page.fill("input[name=q]", "mug")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/tickets/?*q=mug*")
    rows = page.locator("#ticket-list tbody tr")
    assert rows.count() == 1
    assert "TCK-1001" in rows.first.inner_text()

    page.click("text=My mug arrived broken")
    page.wait_for_url("**/tickets/TCK-1001/")
    order = page.locator("#order-panel")
    assert "202610110087" in order.inner_text()
    assert "Ceramic mug" in order.inner_text()
    assert "129.00 CNY" in order.inner_text()
    assert "arrived in pieces" in page.locator(".conversation").inner_text()


def test_it_filters_by_status(page, login, demo):
    login("agent")
    page.select_option("select[name=status]", "closed")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**status=closed**")
    assert "No tickets match these filters." in page.locator("#ticket-list").inner_text()


def test_a_wrong_password_stays_on_the_login_page_with_a_message(page, login, demo):
    login("agent", "not-the-password")
    assert "/login/" in page.url
    assert "didn't match" in page.locator("[role=alert]").inner_text()
