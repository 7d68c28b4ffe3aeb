"""Prometheus metrics of the reconciler process (served on ``--metrics-bind`` at ``/metrics``).

Each process gets its own ``CollectorRegistry`` so tests can run several processes' worth of metrics in
one interpreter without the global registry's duplicate-name errors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.exposition import generate_latest

# cos_rollout_duration_seconds: from a COS's creation to Succeeded, 10 s to 2 h.
ROLLOUT_BUCKETS = (10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.reconciles = Counter("cos_reconciles", "Reconciles of ClusterObjectSets, by result "
                                  "(success, requeue, error)", ["result"], registry=r)
        self.reconcile_duration = Histogram("cos_reconcile_duration_seconds", "Duration of one reconcile",
                                            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
                                            registry=r)
        self.queue_depth = Gauge("cos_workqueue_depth", "ClusterObjectSets waiting to be reconciled", registry=r)
        self.objects_managed = Gauge("cos_objects_managed", "Objects carrying the managed-by label in the caches",
                                     registry=r)
        self.api_requests = Counter("cos_api_requests", "Requests to the Kubernetes API server, by verb and "
                                    "HTTP code (0: no answer)", ["verb", "code"], registry=r)
        self.watches = Gauge("cos_watches", "Running watches (informers)", registry=r)
        self.leader = Gauge("cos_leader", "1 while this replica holds the leader lease", registry=r)
        self.events = Counter("cos_events", "Kubernetes Events recorded on ClusterObjectSets, by type and reason",
                              ["type", "reason"], registry=r)
        self.revision_state = Gauge("cos_revision_state", "1 on each ClusterObjectSet's current state (its "
                                    "Progressing reason); exported by the leader only",
                                    ["name", "owner", "state"], registry=r)
        self.rollout_duration = Histogram("cos_rollout_duration_seconds", "Seconds from a ClusterObjectSet's "
                                          "creation to its Succeeded condition first becoming True",
                                          buckets=ROLLOUT_BUCKETS, registry=r)
        self._states: dict[str, tuple[str, str]] = {}   # COS name -> (owner, state) of its one series
        self._states_lock = threading.Lock()

    def observe_request(self, verb: str, code: int) -> None:
        self.api_requests.labels(verb=verb, code=str(code)).inc()

    def count_event(self, etype: str, reason: str) -> None:
        self.events.labels(type=etype, reason=reason).inc()

    def bind_gauges(self, queue_depth: Callable[[], float], objects_managed: Callable[[], float],
                    watches: Callable[[], float]) -> None:
        """Gauges read at scrape time, so they cost nothing between scrapes."""
        self.queue_depth.set_function(queue_depth)
        self.objects_managed.set_function(objects_managed)
        self.watches.set_function(watches)

    def set_revision_state(self, name: str, owner: str, state: str) -> None:
        """Make (owner, state) the one ``cos_revision_state`` series of COS ``name``: the previous one goes."""
        with self._states_lock:
            previous = self._states.get(name)
            if previous == (owner, state):
                return
            if previous is not None:
                self.revision_state.remove(name, *previous)
            self.revision_state.labels(name=name, owner=owner, state=state).set(1)
            self._states[name] = (owner, state)

    def forget_revision(self, name: str) -> None:
        """COS ``name`` is gone: remove its series."""
        with self._states_lock:
            previous = self._states.pop(name, None)
            if previous is not None:
                self.revision_state.remove(name, *previous)

    def clear_revision_states(self) -> None:
        """No longer the leader (or stopping): export no ``cos_revision_state`` series at all."""
        with self._states_lock:
            self._states.clear()
            self.revision_state.clear()

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def serve(self, host: str, port: int) -> tuple[object, object]:
        """Serve ``/metrics`` on host:port in a daemon thread; returns (server, thread)."""
        return start_http_server(port, addr=host, registry=self.registry)
