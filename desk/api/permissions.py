"""The API's gates by support role (DESIGN §9's "who" column), checked before a body is read.
Apart because every part of the desk's API gates on them, and so do the bulk and merge APIs
(desk.bulk.api, desk.merge.api)."""

from rest_framework.permissions import SAFE_METHODS, BasePermission

from config.roles import Role, support_role


class SupportRoleIn(BasePermission):
    """A first gate with DESIGN §9's "who" column, so a caller whose role may not act hears
    403 whatever the body says (assign's 400 would otherwise tell them which usernames are
    support staff). The service checks again: it is the authority the HTML views share."""

    roles: tuple[str, ...] = ()

    def has_permission(self, request, view) -> bool:
        return support_role(request.user) in self.roles


class WritesOnTickets(SupportRoleIn):
    message = "Only interns, agents and supervisors write on tickets."
    roles = (Role.INTERN, Role.AGENT, Role.SUPERVISOR)


class EditsMacrosToWrite(BasePermission):
    """Everyone who writes on tickets reads the macros; only supervisors add or change the
    shared ones (DESIGN §19)."""

    message = "Only supervisors add or change shared macros."

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS or support_role(request.user) == Role.SUPERVISOR

    def has_object_permission(self, request, view, macro) -> bool:
        return request.method in SAFE_METHODS or macro.owner_id is None


class WorksTickets(SupportRoleIn):
    message = "Only agents and supervisors change a ticket's status, assign it or resend replies."
    roles = (Role.AGENT, Role.SUPERVISOR)


class Escalates(SupportRoleIn):
    message = "Interns and agents escalate to supervisors."
    roles = (Role.INTERN, Role.AGENT)


class HandlesEscalations(SupportRoleIn):
    message = "Only supervisors handle escalations."
    roles = (Role.SUPERVISOR,)
