"""The work queue: dedup, one worker per item, backoff, fixed requeues, the overall rate limit."""

from __future__ import annotations

import threading
import time

import pytest

from common.runtime.queue import ItemBackoff, ShutDown, TokenBucket, WorkQueue


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_adds_of_a_waiting_item_collapse() -> None:
    q = WorkQueue()
    for _ in range(5):
        q.add("a")
    q.add("b")
    assert len(q) == 2
    assert q.get(0) == "a" and q.get(0) == "b"
    with pytest.raises(TimeoutError):
        q.get(0.01)


def test_item_added_while_processing_waits_for_done() -> None:
    q = WorkQueue()
    q.add("a")
    assert q.get(0) == "a"
    q.add("a")
    with pytest.raises(TimeoutError):
        q.get(0.01)  # not handed to a second worker
    q.done("a")
    assert q.get(0) == "a"


def test_never_two_workers_on_one_item() -> None:
    q = WorkQueue()
    active: dict[str, int] = {}
    overlap = []
    lock = threading.Lock()
    processed = []

    def worker() -> None:
        while True:
            try:
                item = q.get(0.3)
            except (TimeoutError, ShutDown):
                return
            with lock:
                active[item] = active.get(item, 0) + 1
                if active[item] > 1:
                    overlap.append(item)
            time.sleep(0.002)
            with lock:
                active[item] -= 1
                processed.append(item)
            q.done(item)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(200):
        q.add(f"cos-{i % 3}")
        time.sleep(0.0005)
    for t in threads:
        t.join()
    assert overlap == []
    assert set(processed) == {"cos-0", "cos-1", "cos-2"}


def test_backoff_doubles_from_5ms_to_1000s_and_forget_resets() -> None:
    b = ItemBackoff()
    delays = [b.when("a") for _ in range(22)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[17] == pytest.approx(655.36)
    assert delays[18:] == [1000.0] * 4
    assert b.when("other") == 0.005
    b.forget("a")
    assert b.when("a") == 0.005


def test_rate_limited_requeue_uses_the_item_backoff() -> None:
    clock = Clock()
    q = WorkQueue(clock=clock, bucket=TokenBucket(clock=clock))
    assert q.add_rate_limited("a") == 0.005
    assert q.add_rate_limited("a") == 0.01
    with pytest.raises(TimeoutError):
        q.get(0)
    clock.t += 0.006
    assert q.get(0) == "a"
    q.done("a")
    q.forget("a")
    assert q.add_rate_limited("a") == 0.005


def test_overall_bucket_limits_a_storm_of_failures() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=100, clock=clock)
    waits = [bucket.reserve() for _ in range(120)]
    assert waits[:100] == [0.0] * 100
    assert waits[100] == pytest.approx(0.1)
    assert waits[119] == pytest.approx(2.0)
    q = WorkQueue(clock=clock, bucket=bucket)
    assert q.add_rate_limited("x") == pytest.approx(2.1)  # the bucket wins over the 5 ms item backoff


def test_add_after_keeps_the_earliest_wakeup() -> None:
    clock = Clock()
    q = WorkQueue(clock=clock)
    q.add_after("a", 10)
    q.add_after("a", 5)
    q.add_after("a", 30)
    assert q.delayed() == 1
    clock.t += 5
    assert q.get(0) == "a"
    q.done("a")
    clock.t += 30
    with pytest.raises(TimeoutError):
        q.get(0)  # the superseded 10 s / 30 s schedules do not fire again


def test_delayed_item_wakes_a_blocked_worker() -> None:
    q = WorkQueue()
    q.add_after("a", 0.05)
    start = time.monotonic()
    assert q.get(2) == "a"
    assert 0.04 <= time.monotonic() - start < 1.0


def test_shutdown_releases_blocked_workers() -> None:
    q = WorkQueue()
    errors = []

    def worker() -> None:
        try:
            q.get()
        except ShutDown:
            errors.append("shutdown")

    t = threading.Thread(target=worker)
    t.start()
    time.sleep(0.05)
    q.shutdown()
    t.join(2)
    assert errors == ["shutdown"]
