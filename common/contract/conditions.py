"""The COS status conditions: their vocabulary, the table that sets them, and what they say about a COS.

The reconciler writes them (``shared/spec/reconciler.md`` section 4); ``cosctl status``, ``history`` and
``rollback``, the reconciler's ``--once`` and the demos read them. Every condition type and reason is spelled
here once, and so is every judgement read from them (:func:`settled`, :func:`succeeded`, :func:`outcome`).

Conditions are a pure function of "what situation is this COS in" (:class:`Situation`) plus the previous
conditions (for ``lastTransitionTime``, the latching ``Succeeded`` and "Available only if already present").
Keeping them here, away from the API calls, makes every row of the table one small test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from common.contract.api import LIFECYCLE_ARCHIVED
from common.contract.objects import Obj

PROGRESSING, AVAILABLE, SUCCEEDED = "Progressing", "Available", "Succeeded"
TYPES = (PROGRESSING, AVAILABLE, SUCCEEDED)   # the order status lists them in

# reasons
BLOCKED = "Blocked"
RETRYING = "Retrying"
RECONCILING = "Reconciling"
ROLLING_OUT = "RollingOut"
PROBE_FAILURE = "ProbeFailure"
REASON_SUCCEEDED = "Succeeded"
PROBES_SUCCEEDED = "ProbesSucceeded"
ARCHIVED = "Archived"
DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"

MSG_TEARING_DOWN = "removing revision resources that are not owned by another revision"
MSG_ARCHIVED = "revision is archived"
MSG_AVAILABLE = "Objects are available and pass all probes."
MSG_SUCCEEDED = "Revision succeeded rolling out."


def timestamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find(conditions: Sequence[Obj], ctype: str) -> Obj | None:
    for c in conditions:
        if c.get("type") == ctype:
            return c
    return None


def is_true(conditions: Sequence[Obj], ctype: str) -> bool:
    c = find(conditions, ctype)
    return c is not None and c.get("status") == "True"


def set_condition(conditions: list[Obj], ctype: str, status: str, reason: str, message: str, *,
                  generation: int, now: datetime) -> None:
    """Set one condition in place; ``lastTransitionTime`` moves only when ``status`` changes."""
    new = {"type": ctype, "status": status, "reason": reason, "message": message,
           "observedGeneration": generation}
    old = find(conditions, ctype)
    if old is None:
        new["lastTransitionTime"] = timestamp(now)
        conditions.append(new)
        return
    new["lastTransitionTime"] = (old.get("lastTransitionTime") or timestamp(now)) \
        if old.get("status") == status else timestamp(now)
    old.clear()
    old.update(new)


@dataclass(frozen=True)
class Situation:
    """What one reconcile found. ``kind`` is one of the table rows:
    ``blocked``, ``retrying``, ``rolling_out``, ``complete``, ``tearing_down``, ``archived``."""

    kind: str
    message: str = ""             # blocked / retrying (error text or collision report); tearing_down: what the
                                  # teardown waits for (Available's message; empty: the row's own text)
    version: str = ""             # <v> for rolling_out / complete
    probe_failure: str = ""       # Available message when rolling out with failing probes
    deadline_minutes: int = 0     # > 0 when the progress deadline has passed (rolling out / retrying only)


def progressing_message(s: Situation) -> str:
    """The Progressing message the row would set without a deadline (the deadline's "Last status")."""
    if s.kind == "rolling_out":
        return f"Revision {s.version} is rolling out."
    return s.message


def apply(conditions: list[Obj], s: Situation, *, generation: int, now: datetime) -> None:
    """Update ``conditions`` in place for situation ``s``."""
    def put(ctype: str, status: str, reason: str, message: str) -> None:
        set_condition(conditions, ctype, status, reason, message, generation=generation, now=now)

    def progressing(reason: str, message: str) -> None:
        if s.deadline_minutes > 0:
            put(PROGRESSING, "False", DEADLINE_EXCEEDED,
                f"Revision has not rolled out for {s.deadline_minutes} minute(s). Last status: {message}")
        else:
            put(PROGRESSING, "True", reason, message)

    if s.kind == "blocked":
        put(PROGRESSING, "False", BLOCKED, s.message)
    elif s.kind == "retrying":
        progressing(RETRYING, s.message)
        if find(conditions, AVAILABLE) is not None:
            put(AVAILABLE, "Unknown", RECONCILING, s.message)
    elif s.kind == "rolling_out":
        progressing(ROLLING_OUT, progressing_message(s))
        if s.probe_failure:
            put(AVAILABLE, "False", PROBE_FAILURE, s.probe_failure)
        else:
            put(AVAILABLE, "False", ROLLING_OUT, f"Revision {s.version} is rolling out.")
    elif s.kind == "complete":
        put(PROGRESSING, "True", REASON_SUCCEEDED, f"Revision {s.version} has rolled out.")
        put(AVAILABLE, "True", PROBES_SUCCEEDED, MSG_AVAILABLE)
        put(SUCCEEDED, "True", REASON_SUCCEEDED, MSG_SUCCEEDED)
    elif s.kind == "tearing_down":
        put(PROGRESSING, "True", RETRYING, MSG_TEARING_DOWN)
        put(AVAILABLE, "Unknown", RECONCILING, s.message or MSG_TEARING_DOWN)
    elif s.kind == "archived":
        put(PROGRESSING, "False", ARCHIVED, MSG_ARCHIVED)
        put(AVAILABLE, "Unknown", ARCHIVED, MSG_ARCHIVED)
    else:
        raise ValueError(f"unknown situation {s.kind!r}")


# ------------------------------------------------------------------------------------- reading a COS

def of(cos: Obj) -> list[Obj]:
    """The conditions of a COS as stored (``[]`` without a status)."""
    return list((cos.get("status") or {}).get("conditions") or [])


def condition(cos: Obj, ctype: str) -> Obj:
    """The condition ``ctype`` of a COS, or ``{}`` when it has none (so ``.get`` reads on)."""
    return find(of(cos), ctype) or {}


def succeeded(cos: Obj) -> bool:
    """Whether the revision ever rolled out completely: ``Succeeded`` latches True, even once archived."""
    return is_true(of(cos), SUCCEEDED)


def settled(cos: Obj) -> bool:
    """Whether a COS needs nothing more from the reconciler: rolled out (Available True at the current
    generation), archived and torn down, or blocked waiting for a human."""
    meta = cos.get("metadata") or {}
    progressing = condition(cos, PROGRESSING)
    if progressing.get("observedGeneration") not in (None, meta.get("generation")):
        return False
    if progressing.get("reason") in (ARCHIVED, BLOCKED):
        return True
    return condition(cos, AVAILABLE).get("status") == "True" and progressing.get("reason") == REASON_SUCCEEDED


def outcome(cos: Obj) -> str | None:
    """How a rollout ended (``archived``, ``succeeded``, ``blocked`` or ``deadline``), or None while it goes on."""
    progressing = condition(cos, PROGRESSING)
    if (cos.get("spec") or {}).get("lifecycleState") == LIFECYCLE_ARCHIVED:
        return "archived"
    if progressing.get("reason") == REASON_SUCCEEDED and progressing.get("status") == "True":
        return "succeeded"
    if progressing.get("status") == "False" and progressing.get("reason") == BLOCKED:
        return "blocked"
    if progressing.get("status") == "False" and progressing.get("reason") == DEADLINE_EXCEEDED:
        return "deadline"
    return None
