"""/sla/hours/ (DESIGN §19): the business hours as a desk page. Everyone on the desk reads what
the SLA clocks count; supervisors change it, a wrong line is said on that line with what was
typed kept and nothing stored, and "Count every hour" takes the calendar out of force."""

import pytest
from django.test import Client

from tickets.calendars import BusinessCalendar, calendar_in_force

URL = "/sla/hours/"
WEEK = {"mon": "09:00-12:30, 13:30-17:00", "tue": "09:00-17:00", "wed": "", "thu": "", "fri": ""}


def client_as(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def form(**changes) -> dict:
    return {
        "action": "save",
        "time_zone": "Europe/Berlin",
        "holidays_text": "2026-12-25 Christmas Day\n2026-12-26",
        **{day: "" for day in ("sat", "sun")},
        **WEEK,
        **changes,
    }


@pytest.mark.django_db
def test_without_a_calendar_the_page_says_every_hour_counts(agent_user):
    page = client_as(agent_user).get(URL).content.decode()

    assert "Every hour counts" in page
    assert 'id="hours-form"' not in page  # agents read, supervisors change


@pytest.mark.django_db
def test_a_supervisor_puts_the_typed_hours_in_force(supervisor, agent_user):
    response = client_as(supervisor).post(URL, form())

    assert response.status_code == 302
    calendar = calendar_in_force()
    assert calendar is not None and calendar.time_zone == "Europe/Berlin"
    assert calendar.weekly_hours["mon"] == ["09:00-12:30", "13:30-17:00"]
    assert calendar.weekly_hours["wed"] == []
    assert calendar.holidays == [
        {"date": "2026-12-25", "name": "Christmas Day"},
        {"date": "2026-12-26", "name": ""},
    ]
    page = client_as(agent_user).get(URL).content.decode()
    assert "09:00-12:30, 13:30-17:00" in page and "Europe/Berlin" in page
    assert "Christmas Day" in page


@pytest.mark.django_db
def test_a_wrong_line_is_said_on_that_line_and_nothing_is_stored(supervisor):
    response = client_as(supervisor).post(URL, form(tue="9 to 5"))

    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="id_tue-error"' in page
    assert 'value="9 to 5"' in page and 'value="09:00-12:30, 13:30-17:00"' in page
    assert not BusinessCalendar.objects.exists()


@pytest.mark.django_db
def test_a_week_with_no_open_hour_is_refused(supervisor):
    closed = dict.fromkeys(("mon", "tue", "wed", "thu", "fri", "sat", "sun"), "")
    response = client_as(supervisor).post(URL, form(**closed))

    assert 'id="hours-error"' in response.content.decode()
    assert not BusinessCalendar.objects.exists()


@pytest.mark.django_db
def test_count_every_hour_takes_the_calendar_out_of_force(supervisor):
    client = client_as(supervisor)
    client.post(URL, form())

    client.post(URL, {"action": "clear"})

    assert calendar_in_force() is None
    assert "Every hour counts" in client.get(URL).content.decode()


@pytest.mark.django_db
def test_only_supervisors_change_the_hours(agent_user, intern, reviewer):
    for user in (agent_user, intern, reviewer):
        assert client_as(user).post(URL, form()).status_code == 403
    assert not BusinessCalendar.objects.exists()


@pytest.mark.django_db
def test_the_page_needs_a_login():
    response = Client().get(URL)

    assert response.status_code == 302 and "/login/" in response["Location"]
