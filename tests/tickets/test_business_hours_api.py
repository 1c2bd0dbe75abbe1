"""DESIGN §19 business hours over the API (`/api/sla/calendar/`) and in Django admin: everyone on
the desk reads the calendar, supervisors set it, a calendar that cannot count is refused naming
the field, and nothing is stored on a refusal."""

import pytest
from rest_framework.test import APIClient

from tickets.business_hours import WEEKDAYS
from tickets.calendars import BusinessCalendar

URL = "/api/sla/calendar/"
OFFICE = {
    "name": "Berlin office",
    "time_zone": "Europe/Berlin",
    "weekly_hours": {day: ["09:00-17:00"] for day in WEEKDAYS[:5]},
    "holidays": [
        {"date": "2026-12-25", "name": "Christmas Day"},
        {"date": "2026-01-01", "name": "New Year"},
    ],
}
NONE_IN_FORCE = {
    "active": False,
    "name": None,
    "time_zone": None,
    "weekly_hours": None,
    "holidays": [],
    "updated_at": None,
}


def api_as(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def stored() -> list[tuple]:
    return list(
        BusinessCalendar.objects.order_by("pk").values_list(
            "name", "time_zone", "weekly_hours", "holidays", "active"
        )
    )


@pytest.mark.parametrize("role", ["intern", "agent_user", "reviewer", "supervisor"])
def test_everyone_on_the_desk_reads_that_no_calendar_is_in_force(db, request, role):
    response = api_as(request.getfixturevalue(role)).get(URL)

    assert response.status_code == 200
    assert response.json() == NONE_IN_FORCE


def test_outsiders_and_anonymous_callers_read_nothing(db, outsider):
    assert api_as(outsider).get(URL).status_code == 403
    response = api_as(None).get(URL)
    assert response.status_code == 401
    assert set(response.json()) == {"message", "code", "extra"}


def test_a_supervisor_puts_a_calendar_in_force_and_everyone_reads_it(db, supervisor, intern):
    response = api_as(supervisor).put(URL, OFFICE, format="json")

    assert response.status_code == 200, response.content
    body = api_as(intern).get(URL).json()
    assert body == response.json()
    assert {key: body[key] for key in ("active", "name", "time_zone")} == {
        "active": True,
        "name": "Berlin office",
        "time_zone": "Europe/Berlin",
    }
    assert body["weekly_hours"] == {
        **{day: ["09:00-17:00"] for day in WEEKDAYS[:5]},
        "sat": [],
        "sun": [],
    }
    assert body["holidays"] == [
        {"date": "2026-01-01", "name": "New Year"},
        {"date": "2026-12-25", "name": "Christmas Day"},
    ]


def test_putting_another_calendar_in_force_takes_the_first_out(db, supervisor):
    api_as(supervisor).put(URL, OFFICE, format="json")
    weekend = {"name": "Weekend desk", "time_zone": "UTC", "weekly_hours": {"sat": ["10:00-14:00"]}}

    response = api_as(supervisor).put(URL, weekend, format="json")

    assert response.status_code == 200, response.content
    assert [(row[0], row[4]) for row in stored()] == [
        ("Berlin office", False),
        ("Weekend desk", True),
    ]
    assert response.json()["holidays"] == []


def test_putting_the_same_name_again_edits_that_calendar(db, supervisor):
    api_as(supervisor).put(URL, OFFICE, format="json")

    api_as(supervisor).put(URL, {**OFFICE, "weekly_hours": {"mon": ["10:00-12:00"]}}, format="json")

    assert len(stored()) == 1
    assert stored()[0][2]["mon"] == ["10:00-12:00"]


@pytest.mark.parametrize("role", ["intern", "agent_user", "reviewer"])
def test_only_supervisors_set_or_clear_the_business_hours(db, request, supervisor, role):
    api_as(supervisor).put(URL, OFFICE, format="json")
    before = stored()
    client = api_as(request.getfixturevalue(role))

    put = client.put(URL, {**OFFICE, "time_zone": "UTC"}, format="json")
    delete = client.delete(URL)

    assert (put.status_code, delete.status_code) == (403, 403)
    assert put.json()["code"] == "permission_denied"
    assert stored() == before


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"time_zone": "Mars/Olympus"}, "time_zone"),
        ({"time_zone": 1}, "time_zone"),
        ({"weekly_hours": {"mon": ["17:00-09:00"]}}, "weekly_hours"),
        ({"weekly_hours": {"mon": ["09:00-13:00", "12:00-17:00"]}}, "weekly_hours"),
        ({"weekly_hours": {"someday": ["09:00-17:00"]}}, "weekly_hours"),
        ({"weekly_hours": {}}, "weekly_hours"),
        ({"weekly_hours": {"mon": "09:00-17:00"}}, "weekly_hours"),
        ({"weekly_hours": ["09:00-17:00"]}, "weekly_hours"),
        ({"holidays": [{"date": "2026-02-30"}]}, "holidays"),
        ({"holidays": [{"date": "2026-12-25"}, {"date": "2026-12-25"}]}, "holidays"),
        ({"name": ""}, "name"),
    ],
)
def test_a_calendar_that_cannot_count_is_a_400_naming_the_field(db, supervisor, change, field):
    response = api_as(supervisor).put(URL, {**OFFICE, **change}, format="json")

    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body) == {"message", "code", "extra"}
    assert list(body["extra"]["fields"]) == [field]
    assert stored() == []


def test_a_supervisor_takes_the_calendar_out_of_force(db, supervisor):
    api_as(supervisor).put(URL, OFFICE, format="json")

    response = api_as(supervisor).delete(URL)

    assert response.status_code == 200
    assert response.json() == NONE_IN_FORCE
    assert [row[4] for row in stored()] == [False]


def test_the_calendar_is_in_the_openapi_schema(db, agent_user):
    schema = api_as(agent_user).get("/api/schema/?format=json").json()

    assert set(schema["paths"][URL]) >= {"get", "put", "delete"}


# --- Django admin: a line per weekday, a box of holidays ----------------------------------------


def admin_form(**changes) -> dict:
    form = {
        "name": "Berlin office",
        "time_zone": "Europe/Berlin",
        "active": "on",
        "mon": "09:00-12:30, 13:30-17:00",
        "tue": "09:00-17:00",
        "wed": "",
        "thu": "",
        "fri": "9:00-15:00",
        "sat": "",
        "sun": "",
        "holidays_text": "2026-12-25 Christmas Day\n\n2026-12-26\n",
    }
    return {**form, **changes}


def test_admin_stores_the_hours_as_the_clocks_read_them(admin_client):
    response = admin_client.post("/admin/tickets/businesscalendar/add/", admin_form())

    assert response.status_code == 302, response.context["adminform"].form.errors
    calendar = BusinessCalendar.objects.get()
    assert calendar.active
    assert calendar.weekly_hours["mon"] == ["09:00-12:30", "13:30-17:00"]
    assert calendar.weekly_hours["fri"] == ["09:00-15:00"]
    assert calendar.holidays == [
        {"date": "2026-12-25", "name": "Christmas Day"},
        {"date": "2026-12-26", "name": ""},
    ]
    page = admin_client.get(f"/admin/tickets/businesscalendar/{calendar.pk}/change/")
    assert 'value="09:00-12:30, 13:30-17:00"' in page.content.decode()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"mon": "17:00-09:00"}, "mon"),
        ({"tue": "nine to five"}, "tue"),
        ({"holidays_text": "25.12.2026 Christmas"}, "holidays_text"),
        ({"time_zone": "Mars/Olympus"}, "time_zone"),
        ({"mon": "", "tue": "", "fri": ""}, "__all__"),
    ],
)
def test_admin_refuses_a_calendar_that_cannot_count_on_its_line(admin_client, changes, field):
    response = admin_client.post("/admin/tickets/businesscalendar/add/", admin_form(**changes))

    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert stored() == []


def test_admin_refuses_a_second_calendar_in_force_and_its_action_switches_them(admin_client):
    admin_client.post("/admin/tickets/businesscalendar/add/", admin_form())

    second = admin_client.post(
        "/admin/tickets/businesscalendar/add/", admin_form(name="Night shift")
    )
    assert "Another calendar is in force" in second.content.decode()
    admin_client.post(
        "/admin/tickets/businesscalendar/add/", admin_form(name="Night shift", active="")
    )
    night = BusinessCalendar.objects.get(name="Night shift")
    admin_client.post(
        "/admin/tickets/businesscalendar/",
        {"action": "put_in_force", "_selected_action": [night.pk]},
    )

    assert [(row[0], row[4]) for row in stored()] == [
        ("Berlin office", False),
        ("Night shift", True),
    ]
