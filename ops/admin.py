from django.contrib import admin

from ops.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """REST API tokens: who holds one and since when, never a usable key (only its digest is
    stored; the hint is its first characters). Deleting one revokes it; tokens are made by
    signing in at POST /api/auth/token/, not here."""

    list_display = ("key_hint", "user", "created_at")
    search_fields = ("key_hint", "user__username")
    fields = ("key_hint", "user", "created_at")
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
