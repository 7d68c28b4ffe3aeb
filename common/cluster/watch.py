"""The one watch loop: follow a kind on the watch API, resume where a stream ended, re-list after 410.

A watch stream ends for many reasons that lose nothing: the server's ``timeoutSeconds``, a dropped connection, a
restarted API server. The loop then watches again from the last resourceVersion seen (bookmarks included), so
nothing is missed and nothing is read twice. Only a 410 Gone (the server compacted the history the stream would
resume from) makes it read the state afresh (``relist``) and watch from there. Failures back off
(:class:`~common.cluster.backoff.Backoff`): a broken API server never causes a busy loop, and neither does one that
closes every watch at once without an event.

Two programs follow watches through it: the reconciler's informers (:mod:`common.runtime.cache`: forever, every
API error retried) and ``cosctl status --watch`` (until the rollout ends; only 429 and 5xx answers retried, and
it gives up after a number of failures in a row). What differs between them is the policy they pass, not the
loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import urllib3

from common.cluster.backoff import Backoff
from common.cluster.interface import ApiError, Gone, UnknownKind, error_from_status
from common.contract.objects import Obj

QUIET_SECONDS = 1.0
"""A stream that ends sooner than this without a single event counts as a failure: wait before the next one."""


@dataclass
class WatchEvent:
    """One event of a watch stream: ADDED, MODIFIED, DELETED, BOOKMARK (``obj`` is the object) or ERROR
    (``obj`` is the Status)."""

    type: str
    obj: Obj


@runtime_checkable
class Watchable(Protocol):
    """A cluster that streams watch events (``KubeCluster``); the ``Cluster`` protocol itself has no watch."""

    def watch(self, api_version: str, kind: str, namespace: str | None = None, *,
              label_selector: str | None = None, resource_version: str = "", timeout_seconds: int = 300,
              on_open: Callable[[Any], None] | None = None) -> Iterator[WatchEvent]:
        """Stream events from ``resource_version`` until the server ends the stream."""


class GaveUp(Exception):
    """The watch failed ``attempts`` times in a row; ``cause`` is the last failure."""

    def __init__(self, attempts: int, cause: Exception) -> None:
        super().__init__(f"gave up after {attempts} attempts: {cause}")
        self.attempts = attempts
        self.cause = cause


def _always(_: ApiError) -> bool:
    return True


def _never() -> bool:
    return False


def follow(source: Watchable, api_version: str, kind: str, *, namespace: str | None = None,
           label_selector: str | None = None,
           position: Callable[[], str],
           relist: Callable[[], bool | None],
           on_event: Callable[[WatchEvent], bool | None],
           timeout_seconds: Callable[[], int | None],
           backoff: Backoff,
           wait: Callable[[float], object],
           listed: bool = False,
           stopped: Callable[[], bool] = _never,
           retryable: Callable[[ApiError], bool] = _always,
           give_up_after: int | None = None,
           on_open: Callable[[Any], None] | None = None,
           log: logging.Logger | None = None, name: str = "") -> None:
    """Follow ``kind`` until ``on_event`` or ``relist`` returns True, ``timeout_seconds`` returns None, or
    ``stopped`` says so.

    - ``position()``: the resourceVersion to watch from (the caller records what it has seen);
    - ``relist()``: read the state afresh and record its resourceVersion; called first unless ``listed``, and
      after every 410;
    - ``timeout_seconds()``: what the next stream asks the server for, or None to end (a deadline passed);
    - ``retryable``: which API errors are waited out (with ``Retry-After`` as a floor, capped at the backoff's
      cap); any other is raised. A dropped connection is resumed at once the first time, then with backoff;
    - ``give_up_after``: failures in a row after which :class:`GaveUp` is raised (None: never);
    - ``wait(seconds)``: how to wait (``time.sleep``, or a stop event's ``wait`` so a stop cuts it short);
    - ``on_open``: receives each live response as its stream opens (so another thread can cut it with
      ``shutdown()``) and None once it has ended.
    """
    def quiet(fmt: str, *args: object) -> None:
        if log is not None:
            log.info("%s: " + fmt, name, *args)

    need_list = not listed
    failures = 0

    def failed(exc: Exception) -> int:
        nonlocal failures
        failures += 1
        if give_up_after is not None and failures > give_up_after:
            raise GaveUp(give_up_after, exc) from exc
        return failures

    while not stopped():
        started = time.monotonic()
        got_event = False
        try:
            if need_list:
                if relist():
                    return
                need_list = False
            seconds = timeout_seconds()
            if seconds is None:
                return
            for event in source.watch(api_version, kind, namespace, label_selector=label_selector,
                                      resource_version=position(), timeout_seconds=seconds, on_open=on_open):
                if stopped():
                    break
                got_event = True
                failures = 0
                if event.type == "ERROR":
                    raise error_from_status(int(event.obj.get("code") or 500), event.obj)
                if on_event(event):
                    return
            failures = 0
            if not got_event and time.monotonic() - started < QUIET_SECONDS and not stopped():
                wait(backoff.delay(failed(ApiError("the watch ended at once without an event"))))
        except Gone:
            quiet("resourceVersion %s expired (410); re-listing", position())
            need_list = True
        except ApiError as e:
            if not retryable(e):
                raise
            delay = backoff.delay(failed(e))
            if isinstance(e, UnknownKind):
                quiet("kind not served (%s); retrying", e)
            else:
                if e.retry_after is not None:  # 429/503 with Retry-After: the server says when
                    delay = max(delay, min(e.retry_after, backoff.cap))
                if log is not None:
                    log.warning("%s: watch failed: %s (%d); retrying in %.2fs", name, e.message, e.code, delay)
            wait(delay)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            if stopped():
                break
            attempt = failed(e)
            quiet("watch connection ended (%s); resuming from %s", type(e).__name__, position())
            if attempt > 1:
                wait(backoff.delay(attempt - 1))
        finally:
            if on_open is not None:
                on_open(None)


__all__ = ["QUIET_SECONDS", "GaveUp", "WatchEvent", "Watchable", "follow"]
