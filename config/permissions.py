from rest_framework.permissions import BasePermission

from config.roles import is_reviewer, is_staff_member, support_role


class IsStaffMember(BasePermission):
    message = "Only desk staff may use this endpoint."

    def has_permission(self, request, view) -> bool:
        return is_staff_member(request.user)


class CanRunAssistant(BasePermission):
    message = "Only interns, agents and supervisors may run the assistant."

    def has_permission(self, request, view) -> bool:
        return support_role(request.user) is not None


class IsReviewer(BasePermission):
    message = "Only refund reviewers may do this."

    def has_permission(self, request, view) -> bool:
        return is_reviewer(request.user)
