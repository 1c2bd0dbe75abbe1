from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A desk REST API token, issued by POST /api/auth/token/ and sent as `Authorization:
    Token <key>`. Only the SHA-256 of its key is kept (ops/authentication.py): the key is
    shown once, to whoever signed in, and whoever reads the database cannot use a token. It is
    good for API_TOKEN_TTL_DAYS from `created_at`, and goes when its user's password is set or
    the account is deactivated (ops/credentials.py)."""

    key_digest = models.CharField(max_length=64, unique=True, editable=False)
    # The key's first characters, to tell tokens apart in the admin: too few to use it.
    key_hint = models.CharField(max_length=8, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.key_hint}… ({self.user})"
