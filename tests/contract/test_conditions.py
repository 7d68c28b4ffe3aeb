"""Every row of the conditions table (reconciler.md section 4), as a pure function of the situation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from common.contract.conditions import Situation, apply, set_condition

T1 = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
T2 = datetime(2026, 1, 1, 11, 0, tzinfo=UTC)


def rows(conds):
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in conds}


def run(situation, conds=None, generation=4, now=T1):
    conds = conds if conds is not None else []
    apply(conds, situation, generation=generation, now=now)
    return conds


def test_blocked_leaves_available_unchanged() -> None:
    before = run(Situation("rolling_out", version="1.2.0", probe_failure="Object X: y"))
    conds = run(Situation("blocked", message="why"), before)
    assert rows(conds) == {"Progressing": ("False", "Blocked", "why"),
                           "Available": ("False", "ProbeFailure", "Object X: y")}


def test_retrying_sets_available_unknown_only_if_present() -> None:
    assert rows(run(Situation("retrying", message="boom"))) == {"Progressing": ("True", "Retrying", "boom")}
    before = run(Situation("complete", version="1"))
    assert rows(run(Situation("retrying", message="boom"), before)) == {
        "Progressing": ("True", "Retrying", "boom"), "Available": ("Unknown", "Reconciling", "boom"),
        "Succeeded": ("True", "Succeeded", "Revision succeeded rolling out.")}


def test_rolling_out_with_and_without_probe_failures() -> None:
    assert rows(run(Situation("rolling_out", version="1.2.0", probe_failure="Object Deployment.apps/v1 ns/d: x"))) == {
        "Progressing": ("True", "RollingOut", "Revision 1.2.0 is rolling out."),
        "Available": ("False", "ProbeFailure", "Object Deployment.apps/v1 ns/d: x")}
    assert rows(run(Situation("rolling_out", version="3"))) == {
        "Progressing": ("True", "RollingOut", "Revision 3 is rolling out."),
        "Available": ("False", "RollingOut", "Revision 3 is rolling out.")}


def test_complete() -> None:
    assert rows(run(Situation("complete", version="1.2.0"))) == {
        "Progressing": ("True", "Succeeded", "Revision 1.2.0 has rolled out."),
        "Available": ("True", "ProbesSucceeded", "Objects are available and pass all probes."),
        "Succeeded": ("True", "Succeeded", "Revision succeeded rolling out.")}


def test_archived_rows_leave_succeeded_unchanged() -> None:
    before = run(Situation("complete", version="1"))
    tearing = run(Situation("tearing_down"), before)
    msg = "removing revision resources that are not owned by another revision"
    assert rows(tearing) == {"Progressing": ("True", "Retrying", msg), "Available": ("Unknown", "Reconciling", msg),
                             "Succeeded": ("True", "Succeeded", "Revision succeeded rolling out.")}
    done = run(Situation("archived"), tearing)
    assert rows(done)["Progressing"] == ("False", "Archived", "revision is archived")
    assert rows(done)["Available"] == ("Unknown", "Archived", "revision is archived")
    assert rows(done)["Succeeded"][0] == "True"
    assert rows(run(Situation("archived")))  == {
        "Progressing": ("False", "Archived", "revision is archived"),
        "Available": ("Unknown", "Archived", "revision is archived")}


@pytest.mark.parametrize("situation,last", [
    (Situation("rolling_out", version="2", deadline_minutes=15), "Revision 2 is rolling out."),
    (Situation("retrying", message="revision object collisions in phase 0\nObject a", deadline_minutes=15),
     "revision object collisions in phase 0\nObject a"),
])
def test_deadline_exceeded(situation, last) -> None:
    assert rows(run(situation))["Progressing"] == (
        "False", "ProgressDeadlineExceeded", f"Revision has not rolled out for 15 minute(s). Last status: {last}")


def test_every_condition_carries_observed_generation_and_transition_time_moves_only_on_status_change() -> None:
    conds = run(Situation("rolling_out", version="1", probe_failure="a"), generation=4, now=T1)
    assert {c["observedGeneration"] for c in conds} == {4}
    assert {c["lastTransitionTime"] for c in conds} == {"2026-01-01T10:00:00Z"}
    conds = run(Situation("rolling_out", version="1", probe_failure="b"), conds, generation=5, now=T2)
    assert {c["observedGeneration"] for c in conds} == {5}
    assert {c["lastTransitionTime"] for c in conds} == {"2026-01-01T10:00:00Z"}   # status unchanged
    conds = run(Situation("complete", version="1"), conds, generation=5, now=T2)
    assert {c["type"]: c["lastTransitionTime"] for c in conds} == {
        "Progressing": "2026-01-01T10:00:00Z",          # True -> True
        "Available": "2026-01-01T11:00:00Z",            # False -> True
        "Succeeded": "2026-01-01T11:00:00Z"}            # new


def test_set_condition_keeps_order_and_replaces_in_place() -> None:
    conds = [{"type": "A", "status": "True", "reason": "r", "message": "m", "observedGeneration": 1,
              "lastTransitionTime": "x"}]
    set_condition(conds, "B", "False", "r", "m", generation=1, now=T1)
    set_condition(conds, "A", "False", "r2", "m2", generation=2, now=T2)
    assert [c["type"] for c in conds] == ["A", "B"]
    assert conds[0] == {"type": "A", "status": "False", "reason": "r2", "message": "m2", "observedGeneration": 2,
                        "lastTransitionTime": "2026-01-01T11:00:00Z"}
