"""Recording Kubernetes Events (``core/v1``) on the objects a controller reconciles.

An Event goes to its object's namespace; a cluster-scoped object's Events go to ``default``, as client-go's
recorder does. An identical event (same object, type, reason, message) within five minutes is not written again:
a controller requeueing an object every 10 s for the same reason must not write an Event every 10 s. A failed
write is logged and dropped: Events are a courtesy to whoever looks, never a reason to fail a reconcile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from common.cluster.interface import ApiError, Cluster
from common.contract.objects import Obj

log = logging.getLogger(__name__)

DEDUP_SECONDS = 300.0


class EventRecorder:
    """Writes Events through ``cluster`` as ``component`` (``instance``: this replica); ``on_recorded(type,
    reason)`` is told of each Event written (a metric)."""

    def __init__(self, cluster: Cluster, component: str, instance: str, *,
                 on_recorded: Callable[[str, str], None] | None = None, namespace: str = "default") -> None:
        self.cluster, self.component, self.instance = cluster, component, instance
        self.on_recorded = on_recorded
        self.namespace = namespace   # of the Events of cluster-scoped objects
        self._recent: dict[tuple[str, str, str, str], float] = {}
        self._lock = threading.Lock()

    def record(self, obj: Obj, etype: str, reason: str, message: str) -> bool:
        """Record an Event on ``obj`` (its apiVersion, kind and metadata); False when it was a repeat or the
        write failed."""
        meta = obj.get("metadata") or {}
        key = (str(meta.get("uid") or meta.get("name")), etype, reason, message)
        now = time.monotonic()
        with self._lock:
            if now - self._recent.get(key, -DEDUP_SECONDS) < DEDUP_SECONDS:
                return False
            # kept in the order they were recorded (a key recorded again moves to the end), so the expired ones
            # are at the front: dropping them costs what expired, not a scan of every recent Event per Event
            self._recent.pop(key, None)
            self._recent[key] = now
            while self._recent:
                oldest = next(iter(self._recent))
                if now - self._recent[oldest] < DEDUP_SECONDS:
                    break
                del self._recent[oldest]
        ts = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        micro = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.",
                         "namespace": meta.get("namespace") or self.namespace},
            "involvedObject": {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""),
                               "name": meta.get("name", ""), "uid": meta.get("uid", ""),
                               "resourceVersion": meta.get("resourceVersion", ""),
                               **({"namespace": meta["namespace"]} if meta.get("namespace") else {})},
            "type": etype, "reason": reason[:128],
            # the API server refuses Event messages over 1 KiB (bytes, not characters)
            "message": message.encode()[:1024].decode("utf-8", "ignore"),
            "firstTimestamp": ts, "lastTimestamp": ts, "eventTime": micro, "count": 1,
            "source": {"component": self.component},
            "reportingComponent": self.component, "reportingInstance": self.instance,
            "action": reason,
        }
        try:
            self.cluster.create(event)
        except ApiError as e:
            log.warning("could not record event %s on %s: %s", reason, meta.get("name"), e.message)
            return False
        if self.on_recorded is not None:
            self.on_recorded(etype, reason)
        return True


__all__ = ["DEDUP_SECONDS", "EventRecorder"]
