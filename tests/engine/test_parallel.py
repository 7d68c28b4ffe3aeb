"""Bounded concurrency within a phase: the same outcomes, events, conditions and writes as one by one.

Completion order is forced with events (an object's create waits until the next object's create is done), so
every test here is deterministic: no sleeps, no timing.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from common.cluster.interface import Forbidden
from common.contract.api import KIND
from common.contract.objects import Obj
from common.runtime.parallel import SEQUENTIAL, Fanout
from common.testing.memcluster import MemCluster
from reconciler.engine import EngineConfig
from tests.engine.helpers import brief, cluster, cm, cos, deployment, get_cos, phase, run, writes

GUARD = 10.0  # a bound against hanging forever if a test's premise breaks, never reached when it holds


class Reversed:
    """A cluster whose creates of ``names`` complete in reverse order: each waits until the next one is done."""

    def __init__(self, mc: MemCluster, names: list[str]) -> None:
        self.mc = mc
        self.names = names
        self.done = {n: threading.Event() for n in names}
        self.finished: list[str] = []
        self._lock = threading.Lock()

    def create(self, obj: Obj, **kw: Any) -> Obj:
        name = obj["metadata"]["name"]
        if name not in self.done:
            return self.mc.create(obj, **kw)
        try:
            i = self.names.index(name)
            if i + 1 < len(self.names):
                assert self.done[self.names[i + 1]].wait(GUARD), f"{self.names[i + 1]} never completed"
            return self.mc.create(obj, **kw)
        finally:
            with self._lock:
                self.finished.append(name)
            self.done[name].set()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.mc, attr)


def config(limit: int) -> EngineConfig:
    return EngineConfig(fanout=Fanout(limit))


# ---- Fanout itself -----------------------------------------------------------------------------------------


def test_results_come_back_in_item_order_whatever_the_completion_order() -> None:
    items = list(range(6))
    done = [threading.Event() for _ in items]
    finished: list[int] = []

    def work(i: int) -> str:
        if i + 1 < len(items):
            assert done[i + 1].wait(GUARD)
        finished.append(i)
        done[i].set()
        return f"r{i}"

    assert Fanout(6).map(work, items) == ["r0", "r1", "r2", "r3", "r4", "r5"]
    assert finished == [5, 4, 3, 2, 1, 0]


def test_at_most_limit_calls_run_at_once_across_all_callers() -> None:
    fanout = Fanout(3)
    barrier = threading.Barrier(3, timeout=GUARD)   # passes only when 3 calls are in flight together
    lock = threading.Lock()
    running, peak = 0, 0

    def work(i: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        barrier.wait()
        with lock:
            running -= 1
        return i

    results: dict[str, list[int]] = {}
    callers = [threading.Thread(target=lambda n=n: results.__setitem__(n, fanout.map(work, list(range(6)))))
               for n in ("worker-a", "worker-b")]   # two reconcile workers sharing the process's budget
    for t in callers:
        t.start()
    for t in callers:
        t.join(GUARD)
    assert results == {"worker-a": [0, 1, 2, 3, 4, 5], "worker-b": [0, 1, 2, 3, 4, 5]}
    assert peak == 3
    fanout.close()


def test_the_error_raised_is_the_first_failing_item_in_order_not_the_first_to_fail() -> None:
    items = list(range(6))
    done = [threading.Event() for _ in items]
    started: list[int] = []

    def work(i: int) -> int:
        started.append(i)
        try:
            if i + 1 < len(items):
                assert done[i + 1].wait(GUARD)
            if i in (1, 4):
                raise ValueError(f"item {i} failed")
            return i
        finally:
            done[i].set()

    with pytest.raises(ValueError, match="^item 1 failed$"):
        Fanout(6).map(work, items)
    assert sorted(started) == items   # every started call ran to its end before map returned


def test_after_a_failure_only_a_prefix_of_the_items_ever_started() -> None:
    fanout = Fanout(2)
    started: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> int:
        with lock:
            started.append(i)
        if i == 0:
            raise ValueError("item 0 failed")
        return i

    with pytest.raises(ValueError, match="^item 0 failed$"):
        fanout.map(work, list(range(40)))
    assert sorted(started) == list(range(len(started)))   # first in, first out: no gaps
    fanout.close()


def test_limit_one_is_the_plain_loop_in_the_callers_thread() -> None:
    threads: list[str] = []
    assert SEQUENTIAL.map(lambda i: threads.append(threading.current_thread().name) or i, [1, 2]) == [1, 2]
    assert threads == [threading.current_thread().name] * 2
    with pytest.raises(ValueError, match="^rollout concurrency must be at least 1, got 0$"):
        Fanout(0)


# ---- the engine with a fan-out -------------------------------------------------------------------------------


def _big(mc: MemCluster, phases: int = 3, per_phase: int = 10) -> None:
    mc.put(cos("ext-1", 1, *[phase(f"p{p}", *[cm(f"c{p}-{o}") for o in range(per_phase)])
                             for p in range(phases)]))


def test_a_concurrent_rollout_writes_what_the_sequential_one_does_phase_after_phase() -> None:
    seq, par = cluster(), cluster()
    _big(seq)
    _big(par)
    r_seq = run(seq, "ext-1")
    r_par = run(par, "ext-1", config=config(8))
    assert r_par.error is None and r_par.requeue_after is None
    assert [(e.type, e.reason, e.message) for e in r_par.events] == \
        [(e.type, e.reason, e.message) for e in r_seq.events]
    assert [e.message for e in r_par.events] == [
        'Phase 0 "p0" is complete', 'Phase 1 "p1" is complete', 'Phase 2 "p2" is complete',
        "Revision 1 has rolled out."]
    assert get_cos(par, "ext-1")["status"]["conditions"] == get_cos(seq, "ext-1")["status"]["conditions"]
    assert Counter(writes(par)) == Counter(writes(seq))
    assert par.writes == seq.writes == 1 + 30 + 1            # finalizer, 30 creates, status
    creates = [name for verb, kind, name in writes(par) if verb == "create"]
    phase_of = [int(n[1]) for n in creates]
    assert phase_of == sorted(phase_of)                       # no object of phase k+1 before phase k is done
    # the steady state stays free
    par.reset_requests()
    assert run(par, "ext-1", config=config(8)).events == []
    assert par.writes == 0


def test_the_first_incomplete_object_reported_is_the_first_in_manifest_order() -> None:
    mc = cluster()
    names = [f"d{i}" for i in range(5)]
    mc.put(cos("ext-1", 1, phase("apps", *[deployment(n) for n in names]), phase("later", cm("x"))))
    rev = Reversed(mc, names)
    result = run(rev, "ext-1", config=config(5))              # type: ignore[arg-type]
    assert rev.finished == ["d4", "d3", "d2", "d1", "d0"]
    assert result.error is None
    assert brief(mc, "ext-1", "Available") == (
        "False", "ProbeFailure", "Object Deployment.apps/v1 ns/d0: .status outdated")
    assert brief(mc, "ext-1", "Progressing") == ("True", "RollingOut", "Revision 1 is rolling out.")
    assert mc.peek("v1", "ConfigMap", "x", "ns") is None     # the next phase waits


def test_the_retrying_message_names_the_first_failing_object_in_manifest_order() -> None:
    mc = cluster()
    names = [f"c{i}" for i in range(6)]
    mc.put(cos("ext-1", 1, phase("cms", *[cm(n) for n in names]), phase("later", cm("x"))))
    mc.fail("create", Forbidden('configmaps "c1" is forbidden: no'), kind="ConfigMap", name="c1")
    mc.fail("create", Forbidden('configmaps "c4" is forbidden: no'), kind="ConfigMap", name="c4")
    rev = Reversed(mc, names)
    result = run(rev, "ext-1", config=config(6))              # type: ignore[arg-type]
    assert rev.finished == ["c5", "c4", "c3", "c2", "c1", "c0"]   # c4 failed first
    assert str(result.error) == 'creating Object ConfigMap.v1 ns/c1: configmaps "c1" is forbidden: no'
    assert brief(mc, "ext-1", "Progressing") == (
        "True", "Retrying", 'creating Object ConfigMap.v1 ns/c1: configmaps "c1" is forbidden: no')
    assert mc.peek("v1", "ConfigMap", "x", "ns") is None
    assert result.events == []


def test_collisions_are_reported_in_manifest_order() -> None:
    mc = cluster()
    names = [f"c{i}" for i in range(4)]
    for n in ("c1", "c3"):
        mc.put(cm(n))                                         # not ours: Prevent collides
    mc.put(cos("ext-1", 1, phase("cms", *[cm(n) for n in names])))
    seq = cluster()
    for n in ("c1", "c3"):
        seq.put(cm(n))
    seq.put(cos("ext-1", 1, phase("cms", *[cm(n) for n in names])))
    r_par = run(mc, "ext-1", config=config(4))
    r_seq = run(seq, "ext-1")
    assert [e.message for e in r_par.events] == [e.message for e in r_seq.events]
    assert r_par.events[0].reason == "Collision"
    assert brief(mc, "ext-1", "Progressing") == brief(seq, "ext-1", "Progressing")
    assert Counter(writes(mc)) == Counter(writes(seq))
    assert [w for w in writes(mc) if w[1] == KIND] == [("patch", KIND, "ext-1"), ("patch_status", KIND, "ext-1")]
