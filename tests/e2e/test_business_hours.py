"""The business calendar (DESIGN §19) in Django admin at 1280 px and on the desk's page at 390 and
1280 px: a line per weekday, a box of holidays, an error on the line at fault, and nothing wider
than the window."""

import pytest

from tests.e2e.overflow import LAPTOP, PHONE, assert_fits
from tickets.calendars import BusinessCalendar, calendar_in_force

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_an_admin_sets_the_business_hours_in_admin(page, login, demo, tmp_path):
    page.set_viewport_size(LAPTOP)
    login("admin")
    page.goto("/admin/tickets/businesscalendar/add/")

    page.fill("#id_name", "Berlin office")
    page.select_option("#id_time_zone", "Europe/Berlin")
    page.check("#id_active")
    for day in ("mon", "tue", "wed", "thu"):
        page.fill(f"#id_{day}", "09:00-12:30, 13:30-17:00")
    page.fill("#id_fri", "17:00-09:00")
    page.fill("#id_holidays_text", "2026-12-25 Christmas Day\n2026-12-26 Boxing Day")
    page.click("input[name=_save]")

    error = page.locator(".field-fri .errorlist")
    assert "closes before it opens" in error.inner_text()
    assert BusinessCalendar.objects.count() == 0
    assert_fits(page, "the calendar form with an error")
    page.screenshot(path=str(tmp_path / "calendar-error.png"), full_page=True)

    page.fill("#id_fri", "09:00-15:00")
    page.click("input[name=_save]")
    page.wait_for_url("**/admin/tickets/businesscalendar/")

    calendar = BusinessCalendar.objects.get()
    assert (calendar.active, calendar.weekly_hours["fri"]) == (True, ["09:00-15:00"])
    assert "Mon 09:00-12:30, 13:30-17:00" in page.inner_text("#result_list")
    assert_fits(page, "the calendar list")


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["390", "1280"])
def test_a_supervisor_sets_the_business_hours_on_the_desk(page, login, demo, viewport):
    page.set_viewport_size(viewport)
    login("supervisor")
    page.click("nav >> text=Hours")
    page.wait_for_url("**/sla/hours/")
    assert "Every hour counts" in page.inner_text("#hours-summary")

    page.select_option("#id_time_zone", "Asia/Shanghai")
    page.fill("#id_sat", "10:00-14:00")
    page.fill("#id_fri", "9-5")
    page.click("#hours-save")
    assert "09:00-17:00" in page.input_value("#id_mon")  # the rest as typed
    assert page.locator("#id_fri-error").is_visible()
    assert calendar_in_force() is None
    assert_fits(page, "the hours with an error")

    page.fill("#id_fri", "09:00-15:00")
    page.click("#hours-save")
    page.wait_for_url("**/sla/hours/")
    assert "Asia/Shanghai" in page.inner_text("#hours-summary")
    assert "10:00-14:00" in page.inner_text("#hours-week")
    assert calendar_in_force().weekly_hours["fri"] == ["09:00-15:00"]
    assert_fits(page, "the hours in force")
