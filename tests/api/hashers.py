"""A password hasher that counts the passwords it checks: how many guesses reached a password
check is what a sign-in limit is about."""

import threading

from django.contrib.auth.hashers import MD5PasswordHasher


class CountingMD5PasswordHasher(MD5PasswordHasher):
    """The suite's MD5 hasher (tests/conftest.py), under the same algorithm name so it checks
    the demo users' passwords, counting each check."""

    checked = 0
    _lock = threading.Lock()

    def verify(self, password: str, encoded: str) -> bool:
        with CountingMD5PasswordHasher._lock:
            CountingMD5PasswordHasher.checked += 1
        return super().verify(password, encoded)
