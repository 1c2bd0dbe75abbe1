"""`GET`/`PUT`/`DELETE /api/sla/calendar/`: the business calendar the SLA clocks count in
(DESIGN §19). Everyone on the desk reads it; supervisors set it. tickets/calendars.py decides,
tickets/business_hours.py reads the hours."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.permissions import IsStaffMember
from config.roles import Role, support_role
from config.serializers import StrictCharField
from ops.parsers import JSONParser
from tickets import calendars
from tickets.business_hours import WEEKDAYS
from tickets.calendars import BusinessCalendar

NAME_MAX = BusinessCalendar._meta.get_field("name").max_length
ZONE_MAX = BusinessCalendar._meta.get_field("time_zone").max_length
WEEK_HELP = (
    f"Per day ({', '.join(WEEKDAYS)}) its open intervals on the calendar's clock, such as "
    '{"mon": ["09:00-12:30", "13:30-17:00"]}. A day left out or empty is closed; "24:00" '
    "closes at midnight; no interval crosses midnight. Some day must be open."
)


class HolidaySerializer(serializers.Serializer):
    date = serializers.DateField(help_text="Closed all day, on the calendar's clock")
    name = StrictCharField(max_length=80, allow_blank=True, required=False, default="")


class CalendarWriteSerializer(serializers.Serializer):
    name = StrictCharField(max_length=NAME_MAX)
    time_zone = StrictCharField(
        max_length=ZONE_MAX, help_text="An IANA time zone, such as Europe/Berlin or UTC"
    )
    weekly_hours = serializers.DictField(
        child=serializers.ListField(child=StrictCharField()), help_text=WEEK_HELP
    )
    holidays = HolidaySerializer(many=True, required=False, default=list)


class CalendarSerializer(serializers.Serializer):
    active = serializers.BooleanField(
        help_text="false: no calendar is in force and the SLA clocks count every hour (the "
        "other fields are then null or empty)"
    )
    name = serializers.CharField(allow_null=True)
    time_zone = serializers.CharField(allow_null=True)
    weekly_hours = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        allow_null=True,
        help_text="Every day named, intervals sorted: " + WEEK_HELP,
    )
    holidays = HolidaySerializer(many=True)
    updated_at = serializers.DateTimeField(allow_null=True)


def _calendar_body(calendar: BusinessCalendar | None) -> dict:
    if calendar is None:
        empty = {"name": None, "time_zone": None, "weekly_hours": None, "updated_at": None}
        return CalendarSerializer({"active": False, "holidays": [], **empty}).data
    return CalendarSerializer(
        {
            "active": True,
            "name": calendar.name,
            "time_zone": calendar.time_zone,
            "weekly_hours": calendar.weekly_hours,
            "holidays": calendar.holidays,
            "updated_at": calendar.updated_at,
        }
    ).data


class SetsBusinessHours(BasePermission):
    message = "Only supervisors set the business hours."

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS or support_role(request.user) == Role.SUPERVISOR


class SlaCalendarApi(APIView):
    """The business calendar the SLA clocks count in: with one in force, first-response and
    resolution targets count its open hours (holidays closed, in its time zone) and pending
    and solved still stop the resolution clock. A change applies to due times set after it
    (new tickets, priority changes, resumes); due times already set do not move."""

    permission_classes = [IsStaffMember, SetsBusinessHours]
    parser_classes = [JSONParser]

    @extend_schema(responses={200: CalendarSerializer, **error_responses(401, 403)})
    def get(self, request):
        return Response(_calendar_body(calendars.calendar_in_force()))

    @extend_schema(
        request=CalendarWriteSerializer,
        responses={
            200: CalendarSerializer,
            **error_responses(
                400,
                401,
                403,
                409,
                e400="extra.fields names the field: time_zone, weekly_hours or holidays.",
                e409="calendar_changed: another calendar was put in force at the same moment.",
            ),
        },
    )
    def put(self, request):
        """Put the calendar called `name` in force with these hours and holidays (it is made
        if there is none of that name; the one in force before is taken out)."""
        body = CalendarWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        calendar = calendars.calendar_set(
            actor=request.user,
            name=data["name"],
            time_zone=data["time_zone"],
            weekly_hours=data["weekly_hours"],
            holidays=[
                {"date": row["date"].isoformat(), "name": row["name"]} for row in data["holidays"]
            ],
        )
        return Response(_calendar_body(calendar))

    @extend_schema(responses={200: CalendarSerializer, **error_responses(401, 403)})
    def delete(self, request):
        """No calendar in force: due times set from now on count every hour."""
        calendars.calendar_clear(actor=request.user)
        return Response(_calendar_body(None))
