"""Pieces shared by the apps' admin modules."""


class ReadOnlyMixin:
    """Evidence (audit rows, decided data) is never added, edited or deleted from admin."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
