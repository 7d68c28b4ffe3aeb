"""Structured logging: the project's one JSON line format (:mod:`common.runtime.logs`), as the webhook says it.

Log records carry their data in ``extra={"fields": {...}}``. The webhook's own records print the message as
written and those fields and nothing else: no request bodies, no interpolated arguments, no exception messages
(which could quote a value), so Secret data cannot reach the log through this path. Exceptions are reduced to
their type and where they were raised.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

from common.runtime.logs import JsonFormatter, exception_site

LOGGER = "cos_webhook"


def json_formatter() -> JsonFormatter:
    """The formatter of every webhook log line (gunicorn's too): our own records never interpolate arguments
    (they could carry values; gunicorn's carry pids, addresses and signal names only), exceptions only say
    where they were raised."""
    return JsonFormatter(literal=(LOGGER,), tracebacks=False)


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
        "formatters": {"json": {"()": "webhook.logs.json_formatter"}},
        "handlers": {"json": {"()": "webhook.logs.StderrHandler", "formatter": "json"}},
        "root": {"level": "WARNING", "handlers": ["json"]},
        "loggers": {
            "gunicorn.error": {"level": level.upper(), "handlers": ["json"], "propagate": False},
            "gunicorn.access": {"level": "WARNING", "handlers": [], "propagate": False},
        },
    }


def setup(level: int = logging.INFO) -> None:
    """Send the ``cos_webhook`` loggers to stderr as JSON lines (once per process)."""
    root = logging.getLogger(LOGGER)
    if any(getattr(h, "_cos_webhook", False) for h in root.handlers):
        return
    handler = StderrHandler()
    handler.setFormatter(json_formatter())
    handler._cos_webhook = True
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False


__all__ = ["LOGGER", "StderrHandler", "exception_site", "gunicorn_config", "json_formatter", "setup"]
