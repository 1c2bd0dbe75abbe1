"""A user's API tokens last no longer than the password and the account they were issued for.

Connected to the user model's post_save in DeskConfig.ready() (the desk serves the token
endpoint).
"""

from ops.models import ApiToken


def revoke_api_tokens(sender, instance, **kwargs) -> None:
    """A user was saved: their API tokens go when the password was set, or when the account is
    inactive (a reactivated account does not get its old tokens back).

    `_password` holds the new password from set_password() until the save after it: every
    password form, the admin's and `manage.py changepassword` go through it. Django's own
    rehash of a password on sign-in (a stronger hasher) clears it first, so it keeps tokens.
    """
    if getattr(instance, "_password", None) is not None or not instance.is_active:
        ApiToken.objects.filter(user_id=instance.pk).delete()
