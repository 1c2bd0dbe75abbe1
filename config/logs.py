"""Logging pieces the settings' LOGGING names."""

import logging


class NoTracebackForClientErrors(logging.Filter):
    """A 4xx answer is the client's mistake, not the code's: Django logs a PermissionDenied
    (403) or a SuspiciousOperation (400) with its traceback, which says nothing the one line
    does not. Only 5xx keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if 400 <= getattr(record, "status_code", 0) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
