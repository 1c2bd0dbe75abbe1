"""Logging pieces the settings' LOGGING names: the filter that writes the log context
(config/log_context.py) on every line, and the one that spares client errors a traceback."""

import logging
from collections.abc import Mapping

from config.log_context import FIELDS, current_log_context


def context_suffix(context: Mapping[str, str]) -> str:
    shown = [f"{short}={context[name]}" for name, short in FIELDS.items() if context.get(name)]
    return f" [{' '.join(shown)}]" if shown else ""


class LogContextFilter(logging.Filter):
    """Puts the context's fields on every record it sees, as attributes (for a structured
    formatter) and as `log_context`, the ` [req=… run=…]` the text formats end with. Attach it
    to handlers, not loggers: a logger's filters miss records its children propagate."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = current_log_context()
        for name in FIELDS:
            if not getattr(record, name, None) and context.get(name):
                setattr(record, name, context[name])
        present = {name: getattr(record, name, None) or "" for name in FIELDS}
        record.log_context = context_suffix(present)
        return True


class NoTracebackForClientErrors(logging.Filter):
    """A 4xx answer is the client's mistake, not the code's: Django logs a PermissionDenied
    (403) or a SuspiciousOperation (400) with its traceback, which says nothing the one line
    does not. Only 5xx keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if 400 <= getattr(record, "status_code", 0) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
