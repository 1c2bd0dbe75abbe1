"""How desk users appear to customers (DESIGN §19): the name a reply is signed with and the
signature under it, once in every outgoing mail and in macros' {{agent.name}}."""

from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from tickets.models import StaffProfile


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
