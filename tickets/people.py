"""How desk users appear to customers (DESIGN §19): the name a reply is signed with and the
signature under it, once in every outgoing mail and in macros' {{agent.name}}.

The profile's model lives here with its reads and writes, the way tickets/calendars.py holds
BusinessCalendar: it names no ticket, and tickets/models.py imports it so Django finds it."""

from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models, transaction


class StaffProfile(models.Model):
    """How a desk user appears to customers (DESIGN §19): the name replies are signed with and
    their own signature (Markdown, sent as written in plain-text mail). Blank fields fall back
    (display_name and sign_off below): the name to the user's full name, then their username;
    the signature to the team's, TEAM_SIGNATURE."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="staff_profile"
    )
    display_name = models.CharField(max_length=80, blank=True)
    signature = models.TextField(max_length=1000, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.display_name or str(self.user_id)


def profile_of(user: User) -> StaffProfile:
    """The user's profile; an unsaved blank one when they have none yet."""
    try:
        return StaffProfile.objects.get(user_id=user.pk)
    except StaffProfile.DoesNotExist:
        return StaffProfile(user_id=user.pk)


def display_name(user: User, profile: StaffProfile | None = None) -> str:
    """The name customers see: the display name, else the full name, else the username."""
    name = (profile or profile_of(user)).display_name.strip()
    return name or user.get_full_name().strip() or user.get_username()


def display_names(users: Iterable[User | None]) -> dict[int, str]:
    """Each user's display name by id, from one query for all their profiles."""
    people = {user.pk: user for user in users if user is not None}
    profiles = {p.user_id: p for p in StaffProfile.objects.filter(user_id__in=list(people))}
    return {
        pk: display_name(user, profiles.get(pk) or StaffProfile(user_id=pk))
        for pk, user in people.items()
    }


def team_signature() -> str:
    return settings.TEAM_SIGNATURE.strip()


def sign_off(user: User | None) -> str:
    """The block under a public reply: who wrote it, then their signature (else the team's).
    The author may have been deleted while the reply waited for the mail server: the team's
    alone then."""
    if user is None:
        return team_signature()
    profile = profile_of(user)
    signature = profile.signature.strip() or team_signature()
    return "\n".join(part for part in (display_name(user, profile), signature) if part)


@transaction.atomic
def profile_update(
    *, user: User, display_name: str | None = None, signature: str | None = None
) -> StaffProfile:
    """Set what is given (stripped; blank falls back again), keep the rest."""
    profile, _ = StaffProfile.objects.select_for_update().get_or_create(user_id=user.pk)
    if display_name is not None:
        profile.display_name = display_name.strip()
    if signature is not None:
        profile.signature = signature.strip()
    profile.save()
    return profile
