"""The work queue of COS names, with client-go's guarantees.

- An item is never handed to two workers at once: while it is being processed, a new ``add`` only marks it
  dirty, and it is queued again when ``done`` is called. Adding an item that is already waiting is a no-op,
  so a burst of watch events costs one reconcile.
- ``add_rate_limited`` requeues after a per-item exponential backoff (5 ms doubling up to 1000 s) combined
  with an overall token bucket (default 10/s, burst 100) so a broken API server is not stormed;
  ``forget`` resets the item's backoff after a success.
- ``add_after`` is the fixed requeue (10 s collisions, 5 s teardown, the progress deadline).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable

from common.cluster.backoff import Backoff


class ShutDown(Exception):
    """The queue was shut down: the worker should exit."""


class ItemBackoff:
    """Per-item exponential backoff: ``base * 2**failures`` capped at ``cap`` (no jitter: one item, one timer)."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.backoff = Backoff(base, cap)
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            n = self._failures.get(item, 0)
            self._failures[item] = n + 1
        return self.backoff.delay(n + 1)

    def failures(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)


class TokenBucket:
    """Overall rate limit: each rate-limited requeue reserves a token; returns how long to wait for it."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps, self.burst, self._clock = qps, burst, clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps


class WorkQueue:
    def __init__(self, *, backoff: ItemBackoff | None = None, bucket: TokenBucket | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.backoff = backoff or ItemBackoff()
        self.bucket = bucket or TokenBucket()
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: deque[Hashable] = deque()     # FIFO of ready items
        self._dirty: set[Hashable] = set()        # queued or to be re-queued after processing
        self._processing: set[Hashable] = set()
        self._waiting: list[tuple[float, int, Hashable]] = []  # heap of (ready_at, seq, item)
        self._waiting_at: dict[Hashable, float] = {}
        self._seq = itertools.count()
        self._shutdown = False

    # -------------------------------------------------------------------------------------------- adds
    def add(self, item: Hashable) -> None:
        with self._cond:
            if self._shutdown or item in self._dirty:
                return
            self._dirty.add(item)
            if item not in self._processing:
                self._queue.append(item)
                self._cond.notify()

    def add_after(self, item: Hashable, delay: float) -> None:
        if delay <= 0:
            self.add(item)
            return
        with self._cond:
            if self._shutdown:
                return
            at = self._clock() + delay
            prev = self._waiting_at.get(item)
            if prev is not None and prev <= at:
                return  # an earlier wake-up is already scheduled
            self._waiting_at[item] = at
            heapq.heappush(self._waiting, (at, next(self._seq), item))
            self._cond.notify_all()

    def add_rate_limited(self, item: Hashable) -> float:
        """Requeue after the item's backoff (and the overall bucket); returns the delay used."""
        delay = max(self.backoff.when(item), self.bucket.reserve())
        self.add_after(item, delay)
        return delay

    def forget(self, item: Hashable) -> None:
        self.backoff.forget(item)

    # ----------------------------------------------------------------------------------------- workers
    def _promote(self) -> float | None:
        """Move due delayed items to the queue; returns seconds until the next one is due."""
        now = self._clock()
        while self._waiting:
            at, _, item = self._waiting[0]
            if self._waiting_at.get(item) != at:
                heapq.heappop(self._waiting)  # superseded by an earlier schedule
                continue
            if at > now:
                return at - now
            heapq.heappop(self._waiting)
            del self._waiting_at[item]
            if item not in self._dirty:
                self._dirty.add(item)
                if item not in self._processing:
                    self._queue.append(item)
        return None

    def get(self, timeout: float | None = None) -> Hashable:
        """Block until an item is ready; it is then being processed until ``done``. Raises ``ShutDown``
        (queue closed) or ``TimeoutError``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._shutdown:
                    raise ShutDown()
                wait = self._promote()
                if self._queue:
                    item = self._queue.popleft()
                    self._processing.add(item)
                    self._dirty.discard(item)
                    return item
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError()
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, item: Hashable) -> None:
        with self._cond:
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()
            elif not self._processing:
                self._cond.notify_all()

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    # ------------------------------------------------------------------------------------------ status
    def __len__(self) -> int:
        """Items ready to be processed (the queue-depth metric)."""
        with self._cond:
            return len(self._queue)

    def delayed(self) -> int:
        with self._cond:
            return len(self._waiting_at)

    def idle(self) -> bool:
        """Nothing ready and nothing being processed (delayed requeues may still be pending)."""
        with self._cond:
            self._promote()
            return not self._queue and not self._processing
