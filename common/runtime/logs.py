"""The one JSON log format: one object per line, the same keys from every program of the project.

``ts`` (UTC, milliseconds), ``level``, ``logger``, ``pid``, ``msg``, then the fields a call names explicitly
(``extra={"fields": {...}}``), then ``exception`` when the record carries one. Log pipelines parse it without
regexes, and the webhook's lines and the reconciler's lines read alike.

What each program chooses is how much a line may say, never its shape:

- ``literal``: loggers (by name prefix) whose messages are printed as written, never interpolated with their
  arguments, because those could carry a value (the webhook's own records: Secret data must never reach a log);
- ``tracebacks``: ``exception`` is the whole traceback (the reconciler: its messages name objects, not values),
  or only where it was raised, ``TypeName at file:line in function`` (the webhook, whose exception messages
  could quote a value).
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from typing import Any


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object (see the module docstring for the keys and the two choices)."""

    def __init__(self, *, literal: tuple[str, ...] = (), tracebacks: bool = True) -> None:
        super().__init__()
        self.literal = literal
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        literal = bool(self.literal) and record.name.startswith(self.literal)
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "msg": str(record.msg) if literal else record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info and record.exc_info[0] is not None:
            out["exception"] = (self.formatException(record.exc_info) if self.tracebacks
                                else exception_site(record.exc_info[1]))
        return json.dumps(out, separators=(",", ":"), default=str)


def exception_site(exc: BaseException | None) -> str:
    """``TypeName at file:line in function`` of the innermost frame: enough to find the bug, no values."""
    if exc is None:
        return ""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__name__
    last = frames[-1]
    return f"{type(exc).__name__} at {last.filename}:{last.lineno} in {last.name}"


__all__ = ["JsonFormatter", "exception_site"]
