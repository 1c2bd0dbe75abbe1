"""EMAIL_URL picks Django's mail backend (DESIGN §3): files in var/mail/ under `make run`, the
console otherwise, SMTP when pointed at a server."""

import json

from django.conf import settings

from ops import devserver
from tests.api.test_debug_setting import BASE_DIR, clean_environment, printed_by

SHOW_EMAIL_SETTINGS = (
    "import json; from django.conf import settings as s; print(json.dumps({name: "
    "getattr(s, name, None) for name in ('EMAIL_BACKEND', 'EMAIL_FILE_PATH', 'EMAIL_HOST', "
    "'EMAIL_PORT', 'EMAIL_USE_TLS', 'EMAIL_HOST_USER')}))"
)


def email_settings(env: dict[str, str]) -> dict:
    return json.loads(printed_by(SHOW_EMAIL_SETTINGS, env))


def test_replies_go_to_the_console_when_email_url_is_unset(tmp_path):
    found = email_settings(clean_environment(tmp_path))
    assert found["EMAIL_BACKEND"] == "django.core.mail.backends.console.EmailBackend"


def test_make_run_writes_replies_to_files_in_var_mail(tmp_path):
    found = email_settings(devserver.child_environment(clean_environment(tmp_path)))
    assert found["EMAIL_BACKEND"] == "django.core.mail.backends.filebased.EmailBackend"
    assert found["EMAIL_FILE_PATH"] == str(BASE_DIR / "var" / "mail")


def test_an_absolute_filemail_path_stays_absolute(tmp_path):
    found = email_settings(clean_environment(tmp_path, EMAIL_URL=f"filemail:///{tmp_path}/mail"))
    assert found["EMAIL_FILE_PATH"].replace("//", "/") == f"{tmp_path}/mail"


def test_an_smtp_url_configures_the_smtp_backend_with_starttls(tmp_path):
    url = "smtp+tls://desk%40example.com:secret@smtp.example.com:587"
    found = email_settings(clean_environment(tmp_path, EMAIL_URL=url))
    assert found == {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_FILE_PATH": "",
        "EMAIL_HOST": "smtp.example.com",
        "EMAIL_PORT": 587,
        "EMAIL_USE_TLS": True,
        "EMAIL_HOST_USER": "desk@example.com",
    }


def test_the_tests_never_send_real_mail():
    assert settings.EMAIL_BACKEND == "django.core.mail.backends.locmem.EmailBackend"
