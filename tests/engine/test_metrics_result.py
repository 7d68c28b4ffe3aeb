"""What a reconcile reports for the metrics: the Progressing reason it wrote (or read), the owner, and the
rollout duration exactly once, on the transition to Succeeded the engine itself makes."""

from __future__ import annotations

from common.cluster.interface import Conflict
from common.contract.api import API_VERSION, KIND, LIFECYCLE_ARCHIVED
from tests.engine.helpers import (
    as_json,
    at,
    cluster,
    cm,
    cos,
    deployment,
    get_cos,
    phase,
    ready_deployment,
    run,
    secret,
)


def test_rolling_out_then_succeeded_reports_the_duration_once() -> None:
    mc = cluster()  # the cluster's clock stamps creationTimestamp at T0
    mc.put(cos("ext-1", 1, phase("p", deployment("d"))))
    first = run(mc, "ext-1", now=None)
    assert (first.state, first.owner, first.rollout_seconds) == ("RollingOut", "ext", None)
    ready_deployment(mc, "d")
    done = run(mc, "ext-1", now=at(5))
    assert (done.state, done.owner, done.rollout_seconds) == ("Succeeded", "ext", 300.0)
    again = run(mc, "ext-1", now=at(6))   # Succeeded latches: no second observation
    assert (again.state, again.rollout_seconds) == ("Succeeded", None)


def test_a_failed_status_write_reports_what_was_read_and_no_duration_until_it_is_written() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a")), owner=""))
    mc.fail("patch_status", Conflict("the object has been modified"), kind=KIND)
    failed = run(mc, "ext-1", now=at(2))
    assert failed.error is not None
    assert (failed.state, failed.owner, failed.rollout_seconds) == (None, "", None)   # no status yet
    written = run(mc, "ext-1", now=at(3))
    assert (written.error, written.state, written.rollout_seconds) == (None, "Succeeded", 180.0)


def test_blocked_retrying_deadline_and_archived_states() -> None:
    mc = cluster()
    mc.put(secret("other", {"k": as_json(cm("b"))}, immutable=False))
    mc.put(cos("blocked", 1, phase("p", {"ref": {"name": "other", "key": "k"}})))
    assert run(mc, "blocked").state == "Blocked"
    mc.put(cos("retrying", 1, phase("p", {"ref": {"name": "missing", "key": "k"}})))
    assert run(mc, "retrying").state == "Retrying"
    mc.put(cos("late", 1, phase("p", deployment("d")), progressDeadlineMinutes=1))
    assert run(mc, "late", now=at(2)).state == "ProgressDeadlineExceeded"
    mc.put(cos("old", 1, phase("p", cm("a"))))
    assert run(mc, "old").state == "Succeeded"
    obj = get_cos(mc, "old")
    obj["spec"]["lifecycleState"] = LIFECYCLE_ARCHIVED
    mc.put(obj)
    results = [run(mc, "old", now=at(2 + i)) for i in range(3)]
    assert results[-1].state == "Archived" and all(r.rollout_seconds is None for r in results)
    assert mc.peek(API_VERSION, KIND, "old") is not None
