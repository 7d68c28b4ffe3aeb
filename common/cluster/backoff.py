"""The one backoff: exponential, capped, optionally jittered, from a random generator of its own.

Every retry in the project waits by it: the client's retries of failed requests, the watch loop's reconnects
(informers and ``cosctl status --watch``), the work queue's per-item requeues and ``cos-webhook certs``'s wait
for webhook configurations to appear. Each caller keeps its own numbers (base, cap, jitter); only the rule is
shared.

Jitter shortens a delay by up to ``jitter`` of it (``d * (1 - jitter + jitter * r)`` for ``r`` in [0, 1)), never
lengthens it, so the cap stays a cap. It is drawn from a generator of this module's own, never the process-wide one that
callers seed for reproducibility (Hypothesis does around every draw, and warns when a background retry moves it
meanwhile).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_JITTER = random.Random()

_MAX_DOUBLINGS = 62   # beyond this every cap has long been reached; 2.0 ** 1024 would overflow


@dataclass(frozen=True)
class Backoff:
    """``base * 2 ** (attempt - 1)`` capped at ``cap``, jittered down by up to ``jitter`` (0: exact)."""

    base: float
    cap: float
    jitter: float = 0.0

    def __post_init__(self) -> None:
        if not (0 < self.base <= self.cap):
            raise ValueError(f"backoff needs 0 < base <= cap, got base {self.base} and cap {self.cap}")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"backoff jitter must be between 0 and 1, got {self.jitter}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1 for the first retry)."""
        d = min(self.cap, self.base * 2.0 ** min(max(attempt - 1, 0), _MAX_DOUBLINGS))
        return d * (1.0 - self.jitter + self.jitter * _JITTER.random()) if self.jitter else d


def extra_jitter(delay: float, fraction: float) -> float:
    """``delay`` lengthened by up to ``fraction`` of it at random: for a wait the server named (Retry-After), which
    must never be shortened, so that many clients throttled together do not all retry in the same instant."""
    return delay * (1.0 + fraction * _JITTER.random()) if fraction else delay


__all__ = ["Backoff", "extra_jitter"]
