"""Structured logging: one JSON object per line, built only from the fields a call names explicitly.

Log records carry their data in ``extra={"fields": {...}}``. The formatter prints the message and those
fields and nothing else: no request bodies, no exception messages (which could quote a value), so Secret
data cannot reach the log through this path. Exceptions are reduced to their type and where they were raised.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from typing import Any, TextIO


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            # Our own records never interpolate args (they could carry values); gunicorn's carry pids,
            # addresses and signal names only.
            "msg": str(record.msg) if record.name.startswith("cos_webhook") else record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info and record.exc_info[0] is not None:
            out["exception"] = exception_site(record.exc_info[1])
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


class StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is at the time of each record (it may be replaced after set-up)."""

    _cos_webhook = False  # True on the handler setup() installs, so a second call adds none

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def gunicorn_config(level: str) -> dict[str, Any]:
    """``logconfig_dict`` for gunicorn: its own messages as JSON lines on stderr too, exceptions reduced to
    their site like ours (a traceback could quote a value), no access log (the admission line says more)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "webhook.logs.JSONFormatter"}},
        "handlers": {"json": {"()": "webhook.logs.StderrHandler", "formatter": "json"}},
        "root": {"level": "WARNING", "handlers": ["json"]},
        "loggers": {
            "gunicorn.error": {"level": level.upper(), "handlers": ["json"], "propagate": False},
            "gunicorn.access": {"level": "WARNING", "handlers": [], "propagate": False},
        },
    }


def setup(level: int = logging.INFO) -> None:
    """Send the ``cos_webhook`` loggers to stderr as JSON lines (once per process)."""
    root = logging.getLogger("cos_webhook")
    if any(getattr(h, "_cos_webhook", False) for h in root.handlers):
        return
    handler = StderrHandler()
    handler.setFormatter(JSONFormatter())
    handler._cos_webhook = True
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
