"""The engine's boundary: what one reconcile is given, and what it gives back to the process, typed.

In: :class:`EngineConfig` (fixed for a process) and :class:`Memory` (what the engine remembers between
reconciles). Out: :class:`Result`, read field by field by the process: when to come back, the error to back off
on, the Events to record, what to watch for this COS, and the COS's state for the metrics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from common.cluster.interface import Cluster
from common.contract.api import DEFAULT_SYSTEM_NAMESPACE
from common.contract.serviceaccount import ServiceAccountRef
from common.runtime.parallel import SEQUENTIAL, Fanout
from reconciler import drift
from reconciler.teardown import SentDeletes

# writer(cluster, account) -> the Cluster whose writes carry ``account``'s token (reads stay ``cluster``'s)
Writer = Callable[[Cluster, ServiceAccountRef], Cluster]


@dataclass(frozen=True)
class EngineConfig:
    system_namespace: str = DEFAULT_SYSTEM_NAMESPACE
    # how the objects of one phase are walked: one by one (the default) or a process-wide bounded pool
    fanout: Fanout = SEQUENTIAL
    # refuse a COS naming no ServiceAccount (OLM v1's behaviour) instead of writing it as the process
    require_service_account: bool = False
    # how to write as a ServiceAccount; None: a COS naming one is refused (never written with our own rights)
    writer: Writer | None = None


@dataclass
class Event:
    """A Kubernetes Event to record on the COS."""

    type: str       # "Normal" | "Warning"
    reason: str
    message: str


@dataclass
class Result:
    """What one reconcile of one COS gives back to the process."""

    requeue_after: float | None = None
    error: Exception | None = None
    events: list[Event] = field(default_factory=list)
    watched_kinds: set[tuple[str, str]] = field(default_factory=set)
    referenced_secrets: set[tuple[str, str]] = field(default_factory=set)
    # other COSs this reconcile changed (the siblings it archived): the process queues them, since the watch
    # event of a write the process made itself wakes nobody
    changed: set[str] = field(default_factory=set)
    # For the metrics: the COS's Progressing reason as this reconcile wrote it (or, when it wrote no status or
    # the write failed, as it read it; None without one), its owner-name label, and, when this reconcile set
    # Succeeded True for the first time and the write went through, seconds from its creationTimestamp.
    state: str | None = None
    owner: str = ""
    rollout_seconds: float | None = None


@dataclass
class Memory:
    """What the engine remembers between reconciles, as data: one per cluster object it writes through (a
    process's), never read back from what it wrote into a COS's status. A restart starts with a new one."""

    # what our writes returned (reconciler.drift): reconciling again unchanged sends no request
    applied: drift.AppliedMemory = field(default_factory=drift.AppliedMemory)
    # the DELETEs sent whose going no read has confirmed yet: a teardown never deletes an object twice
    sent: SentDeletes = field(default_factory=SentDeletes)
    # COS uid -> the object whose probes held its rollout back, as its Available condition says (ProbeFailure):
    # when that object passes, its phase completing is reported even if nothing was written
    failing: dict[str, str] = field(default_factory=dict)


__all__ = ["EngineConfig", "Event", "Memory", "Result", "Writer"]
