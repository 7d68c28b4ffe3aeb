"""The long-running reconciler: the COS controller on the generic controller machinery of ``common.runtime``.

The engine (:func:`reconciler.engine.reconcile`) is a plain function over ``Cluster`` that returns a typed
:class:`~reconciler.engine.Result`; this module runs it from a work queue of COS names with reconcile workers,
under leader election, and gives it a :class:`~common.runtime.client.CachedCluster` whose reads come from
watch-fed caches and whose writes go to the API server. What each result says goes where it belongs: the
watches the COS needs and what it waits for to the :class:`~reconciler.watches.WatchSet`, its Events to the
recorder, its state to the metrics, and its next turn to the queue (an error backs off, a requeue waits).

A COS that names a ServiceAccount has its objects written with that ServiceAccount's token (one
``KubeCluster.with_bearer`` view per ServiceAccount, tokens from :class:`~common.cluster.tokens.ServiceAccountTokens`,
renewed before they expire); reads still come from the caches.

A read that misses a label-filtered cache answers NotFound; the engine then creates, and an ``AlreadyExists``
marks the object as "exists outside the cache" so the engine's next read of it goes to the API server (spec
section 2.4).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common.cluster.interface import Cluster
from common.cluster.kube import KubeCluster
from common.cluster.tokens import DEFAULT_EXPIRATION_SECONDS, ServiceAccountTokens
from common.contract import api
from common.contract.conditions import settled
from common.contract.objects import Obj
from common.contract.serviceaccount import ServiceAccountRef
from common.runtime import collector
from common.runtime.cache import Caches, InformerKey
from common.runtime.client import CachedCluster
from common.runtime.leader import LeaderConfig, LeaderElector
from common.runtime.parallel import DEFAULT_CONCURRENCY, RETRY_JITTER, SEQUENTIAL, WATCH_CONNECTIONS, Fanout
from common.runtime.queue import ShutDown, WorkQueue
from common.runtime.recorder import EventRecorder
from reconciler.collisions import controller_ref
from reconciler.engine import memory_for, reconcile
from reconciler.metrics import Metrics
from reconciler.result import EngineConfig, Result, Writer
from reconciler.watches import COS_KEY, CRD_API_VERSION, MANAGED_SELECTOR, Wake, WatchSet

log = logging.getLogger(__name__)

# reconcile(cluster, name): one pass of the engine over one COS
ReconcileFn = Callable[[Cluster, str], Result]


def engine_reconcile(system_namespace: str, fanout: Fanout | None = None, *, require_service_account: bool = False,
                     writer: Writer | None = None) -> ReconcileFn:
    """The real engine, bound to its configuration. What it remembers between reconciles is kept for the cluster
    object it is called with (:func:`reconciler.engine.memory_for`): the process's CachedCluster, for as long as
    the process lives."""
    config = EngineConfig(system_namespace=system_namespace, fanout=fanout or SEQUENTIAL,
                          require_service_account=require_service_account, writer=writer)

    def run(cluster: Cluster, name: str) -> Result:
        return reconcile(cluster, name, config=config)

    return run


@dataclass
class ProcessConfig:
    system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE
    workers: int = 4
    leader_elect: bool = False
    leader: LeaderConfig = field(default_factory=LeaderConfig)
    sync_timeout: float = 60.0
    shutdown_grace: float = 20.0
    identity: str = "cos-reconciler"
    rollout_concurrency: int = DEFAULT_CONCURRENCY  # object writes in flight, process-wide (common.runtime.parallel)
    require_service_account: bool = False  # refuse COSs naming no ServiceAccount (OLM v1's rule)
    token_expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS  # asked of the TokenRequest API


def client_options(config: ProcessConfig) -> dict[str, Any]:
    """The client settings a process of ``config`` needs: a connection kept for every request it may have in
    flight (each worker's own writes, the fan-out's object writes) plus the watches', and jittered 429 retries
    (its workers are throttled together). The CLI makes its client with them; ``ReconcilerProcess`` makes one
    of its own from a client made otherwise."""
    requests = max(1, config.workers) + config.rollout_concurrency
    return {"pool_size": requests + WATCH_CONNECTIONS, "retry_jitter": RETRY_JITTER}


YOUNG_COLLECTION_EVERY = 10_000
"""Net container allocations between two young collections in ``cos-reconciler`` (Python's default: 700). A
rollout decodes its ClusterObjectSet several times, and at 700 the young collections scanned survivors about 160
times per 1,000-object rollout for nothing (measured: 27 ms of its 700 ms of CPU, against 7 ms at 10,000)."""


def tune_collector() -> None:
    """The collector set up for ``cos-reconciler`` (``common.runtime.collector``), called once everything it
    keeps for its lifetime is made, just before it starts."""
    collector.tune_collector(YOUNG_COLLECTION_EVERY)


def own_change(prev: Obj | None, obj: Obj) -> bool:
    """Whether a COS changed from ``prev`` to ``obj`` only as the reconciler itself changes it, so the change
    needs no reconcile: its status (only the reconciler writes it) and the addition of its teardown finalizer.
    Nothing else may differ: the generation (a spec change raises it), labels, annotations, deletionTimestamp,
    other finalizers; what every write changes (resourceVersion, managedFields) does not count. The finalizer's
    removal is not ours to ignore: someone stripping it from a live COS must see it put back, or a later archive
    would find "torn down already" and leave every object behind (our own removal, at the end of a teardown, is
    an echo of our write or a reconcile that finds nothing to do)."""
    if prev is None:
        return False
    if prev is obj:
        return True
    before, after = prev.get("metadata") or {}, obj.get("metadata") or {}
    if api.FINALIZER_TEARDOWN in (before.get("finalizers") or []) and \
            api.FINALIZER_TEARDOWN not in (after.get("finalizers") or []):
        return False
    return before.get("generation") == after.get("generation") and _meta_key(before) == _meta_key(after)


def _meta_key(meta: Obj) -> Obj:
    out = {k: v for k, v in meta.items() if k not in ("resourceVersion", "managedFields", "finalizers")}
    out["finalizers"] = [f for f in meta.get("finalizers") or [] if f != api.FINALIZER_TEARDOWN]
    return out


class ReconcilerProcess:
    """Everything but the CLI; ``start()`` then ``wait()``, ``stop()`` from a signal handler."""

    def __init__(self, kube: KubeCluster, config: ProcessConfig, *, reconcile: ReconcileFn | None = None,
                 metrics: Metrics | None = None, watch_timeout: int = 300) -> None:
        self.config = config
        self.metrics = metrics or Metrics()
        # The process's client as its budget needs it (``kube`` itself when it was made so, as the CLI does);
        # otherwise one of its own over the same configuration, closed on stop.
        wanted = client_options(config)
        self.kube = kube.with_options(pool_size=max(kube.pool_size, wanted["pool_size"]),
                                      retry_jitter=max(kube.options.retry_jitter, wanted["retry_jitter"]),
                                      observer=kube.options.observer or self.metrics.observe_request)
        self._own_client = self.kube is not kube
        kube = self.kube
        self.fanout = Fanout(config.rollout_concurrency)
        self.tokens = ServiceAccountTokens(
            lambda ns, name, seconds: kube.request_token(ns, name, expiration_seconds=seconds),
            expiration_seconds=config.token_expiration_seconds)
        self._writers: dict[ServiceAccountRef, KubeCluster] = {}
        self.reconcile_fn = reconcile or engine_reconcile(
            config.system_namespace, self.fanout, require_service_account=config.require_service_account,
            writer=self.writer_for)
        self.queue = WorkQueue()
        # managedFields are stripped from cached objects but our own: drift is judged by them (reconciler.drift)
        self.caches = Caches(kube, self._on_event, watch_timeout=watch_timeout,
                             keep_managers=frozenset({api.FIELD_MANAGER}))
        self.watches = WatchSet(self.caches, kube, config.system_namespace)
        self.cluster = CachedCluster(kube, self.caches, lazy=self.watches.informer_for_read)
        # What the engine remembers of its writes through this cluster. The watches settle it (_on_event): the
        # answer of a write is fingerprinted only once another version replaces it (reconciler.drift).
        self.memory = memory_for(self.cluster, settled_by_watch=True)
        self.recorder = EventRecorder(kube, "cos-reconciler", config.identity, on_recorded=self.metrics.count_event)
        self.metrics.bind_gauges(lambda: len(self.queue), lambda: float(self.watches.managed_objects()),
                                 lambda: len(self.caches.informers()))
        self._lock = threading.Lock()   # the writers
        # Orders "is the COS still in the cache? then set its state" against its DELETED event removing the
        # series, and both against losing the lease: no stale cos_revision_state series survives either.
        self._state_lock = threading.Lock()
        # COS name -> the managed objects' events that came while it was being reconciled, judged when it ends
        # (see _on_event); a name is a key exactly while its reconcile runs
        self._running: dict[str, list[Obj]] = {}
        self._running_lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._done = threading.Event()
        self.exit_code = 0
        self._exporting_states = False   # cos_revision_state: the leader's only (set while the workers run)
        self.elector: LeaderElector | None = None
        self._elector_thread: threading.Thread | None = None
        self.reconcile_count = 0
        if config.leader_elect:
            lc = config.leader
            if not lc.identity:
                lc = LeaderConfig(lc.name, lc.namespace, config.identity, lc.lease_duration, lc.renew_deadline,
                                  lc.retry_period)
            # Lease calls get their own client settings: no retries and a short timeout, so a hung API server
            # cannot keep one renewal attempt going past the renew deadline (the lease would expire while
            # this replica still believed it led).
            lease_kube = kube.with_options(max_retries=0, request_timeout=max(1.0, lc.renew_deadline / 4))
            self.elector = LeaderElector(lease_kube, lc, on_started_leading=self._start_workers,
                                         on_stopped_leading=self._lost_lease)

    def writer_for(self, cluster: Cluster, account: ServiceAccountRef) -> Cluster:
        """The engine's ``writer``: ``cluster`` (the CachedCluster) writing with ``account``'s tokens."""
        with self._lock:
            kube = self._writers.get(account)
            if kube is None:
                kube = self._writers[account] = self.kube.with_bearer(self.tokens.source(account))
        if isinstance(cluster, CachedCluster):
            return cluster.writing_as(kube)
        return kube

    # ------------------------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        self.caches.ensure(COS_KEY)
        if self.elector is not None:
            self._elector_thread = threading.Thread(target=self.elector.run, name="leader-election", daemon=True)
            self._elector_thread.start()
        else:
            self._start_workers()

    def _start_workers(self) -> None:
        """Called when leading: start the workers from their own thread, so waiting for the cache never
        delays the lease renewals of the election thread."""
        threading.Thread(target=self._spawn_workers, name="start-workers", daemon=True).start()

    def _spawn_workers(self) -> None:
        if self._stopping.is_set():
            return
        self.metrics.leader.set(1)
        with self._state_lock:
            self._exporting_states = True
        cos = self.caches.get(COS_KEY)
        if cos is not None and not cos.synced.wait(self.config.sync_timeout):
            log.warning("ClusterObjectSet cache not synced after %.0fs; starting workers anyway",
                        self.config.sync_timeout)
        for i in range(max(1, self.config.workers)):
            t = threading.Thread(target=self._worker, name=f"worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)  # only started threads: stop() may join them at any moment
        log.info("started %d workers", len(self._workers))

    def _lost_lease(self) -> None:
        """Another replica may already be writing: stop at once, exit non-zero so the pod restarts."""
        log.error("lost the leader lease: stopping")
        self.metrics.leader.set(0)
        self._stop_exporting_states()
        self.exit_code = 1
        self.queue.shutdown()
        self._stopping.set()
        self._done.set()

    def stop(self) -> None:
        """Graceful stop: finish the reconciles in flight, release the lease, stop the watches."""
        if self._stopping.is_set():
            self._done.set()
            return
        self._stopping.set()
        self.queue.shutdown()
        deadline = time.monotonic() + self.config.shutdown_grace
        for t in list(self._workers):
            t.join(max(0.0, deadline - time.monotonic()))
        if self.elector is not None:
            self.elector.stop()
            if self._elector_thread is not None:
                self._elector_thread.join(max(0.0, deadline - time.monotonic()))
            if self.elector.leading.is_set():
                self.elector.release()
        self.metrics.leader.set(0)
        self._stop_exporting_states()
        self.caches.stop_all()
        self.fanout.close()
        if self._own_client:
            self.kube.close()
        self._done.set()

    def _stop_exporting_states(self) -> None:
        with self._state_lock:
            self._exporting_states = False
            self.metrics.clear_revision_states()

    def _report_state(self, name: str, result: Result) -> None:
        """cos_revision_state and cos_rollout_duration_seconds from what the reconcile wrote or read."""
        with self._state_lock:
            if not self._exporting_states:
                return
            if result.rollout_seconds is not None:
                self.metrics.rollout_duration.observe(result.rollout_seconds)
            if self._gone(name):
                self.metrics.forget_revision(name)   # deleted meanwhile
            elif result.state:
                self.metrics.set_revision_state(name, result.owner, result.state)

    def _gone(self, name: str) -> bool:
        """Whether the (synced) COS cache no longer holds ``name``."""
        cos_inf = self.caches.get(COS_KEY)
        return cos_inf is not None and cos_inf.synced.is_set() and not cos_inf.contains(None, name)

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    # -------------------------------------------------------------------------------------- health
    def live_checks(self) -> dict[str, Callable[[], str | None]]:
        def leader() -> str | None:
            if self.elector is not None and not self.elector.healthy:
                return "cannot reach the API server to renew or acquire the lease"
            return None

        return {"leader-election": leader}

    def ready_checks(self) -> dict[str, Callable[[], str | None]]:
        def synced() -> str | None:
            cos = self.caches.get(COS_KEY)
            return None if cos is not None and cos.synced.is_set() else "ClusterObjectSet cache not synced"

        def role() -> str | None:
            if self._stopping.is_set():
                return "shutting down"
            if self.elector is None or self.elector.leading.is_set() or self.elector.healthy:
                return None
            return "standby cannot reach the API server"

        return {"informer-sync": synced, "leader-election": role}

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.leading.is_set()

    # --------------------------------------------------------------------------------------- events
    def engine_saw(self, obj: Obj) -> bool:
        """Whether the engine already has this version of a managed object (its memory of its own writes, kept
        for the cluster object the process reconciles through; an engine passed in that keeps none has none)."""
        return self.memory.applied.seen(obj)

    def _on_event(self, key: InformerKey, etype: str, obj: Obj, prev: Obj | None) -> None:
        # The echo of the reconciler's own write does not queue a COS again: the reconcile that wrote it knew what
        # it wrote. Otherwise a rollout's own creates, finalizer and status writes each queue their COS once more,
        # a second full pass over every object for nothing (measured at scale: 2.0 reconciles per COS, not 1).
        if key == COS_KEY:
            name = str((obj.get("metadata") or {}).get("name") or "")
            if etype == "DELETED":
                with self._state_lock:
                    self.metrics.forget_revision(name)
                self.watches.forget(name)
                self.memory.failing.pop(str((obj.get("metadata") or {}).get("uid") or ""), None)
            elif own_change(prev, obj):
                return
            self.queue.add(name)
            return
        if key.kind == "CustomResourceDefinition" and key.api_version == CRD_API_VERSION:
            # a CR in a later phase is applied as soon as its CRD is served
            self.kube.invalidate_discovery(str((obj.get("spec") or {}).get("group") or "") or None)
        if etype == "DELETED" and key.label_selector == MANAGED_SELECTOR:
            self.memory.applied.forget(obj)   # gone: its record would only take memory
        elif etype == "MODIFIED" and prev is not None and prev is not obj:
            self.memory.applied.settle(prev)  # the version our write returned, if it is that one: fingerprinted now
        wake = self.watches.woken(key, etype, obj, prev)
        controller = controller_ref(obj) if key.label_selector == MANAGED_SELECTOR and etype != "DELETED" else None
        if controller is not None and controller.get("kind") == api.KIND and str(controller.get("name")) in wake.names:
            # The COS that controls it: not for the very version its own write returned (or one a reconcile found
            # unchanged), which it knows. While it is being reconciled, the answer to a write in flight may not be
            # recorded yet (the event can come first): judged when that reconcile ends. Other owners (an older
            # revision) still hear of every event.
            name = str(controller.get("name"))
            with self._running_lock:
                held = self._running.get(name)
                if held is not None:
                    held.append(obj)
            if held is not None or self.engine_saw(obj):
                wake = Wake(wake.names - {name}, wake.at_once)
        for name in wake.names:
            if wake.at_once:
                self.queue.forget(name)
            self.queue.add(name)

    # -------------------------------------------------------------------------------------- workers
    def _worker(self) -> None:
        while True:
            try:
                name = self.queue.get()
            except ShutDown:
                return
            try:
                self._process(str(name))
            finally:
                self.queue.done(name)

    def _process(self, name: str) -> None:
        with self._running_lock:
            self._running[name] = []
        try:
            with self.watches.reconciling():
                self._reconcile_one(name)
        finally:
            with self._running_lock:
                held = self._running.pop(name, [])
            if not self._stopping.is_set() and any(not self.engine_saw(obj) for obj in held):
                self.queue.add(name)   # something it did not write changed while it ran

    def _reconcile_one(self, name: str) -> None:
        started = time.monotonic()
        try:
            result = self.reconcile_fn(self.cluster, name)
        except Exception as e:  # the engine returns errors; an exception here is a bug or an API error
            log.exception("reconcile %s raised", name)
            result = Result(error=e)
        finally:
            self.metrics.reconcile_duration.observe(time.monotonic() - started)
            self.reconcile_count += 1
        self._report_state(name, result)
        if self._gone(name):
            self.watches.forget(name)  # deleted meanwhile (its DELETED event may have come before this result)
        else:
            self.watches.reported(name, result.watched_kinds, result.referenced_secrets, result.error)
        for other in sorted(result.changed):
            self.queue.add(other)   # archived by this reconcile: its teardown starts now
        if result.events:
            cos_inf = self.caches.get(COS_KEY)
            cos = (cos_inf.get(None, name) if cos_inf else None) or {
                "apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": {"name": name}}
            for ev in result.events:
                self.recorder.record(cos, ev.type, ev.reason, ev.message)
        if self._stopping.is_set() and self.exit_code:
            return  # lost the lease: no more requeues
        if result.error is not None:
            delay = self.queue.add_rate_limited(name)
            self.metrics.reconciles.labels(result="error").inc()
            log.warning("reconcile %s failed: %s (retry in %.3fs)", name, result.error, delay)
        elif result.requeue_after is not None:
            self.queue.forget(name)
            self.queue.add_after(name, result.requeue_after)
            self.metrics.reconciles.labels(result="requeue").inc()
        else:
            self.queue.forget(name)
            self.metrics.reconciles.labels(result="success").inc()


def run_until_settled(kube: KubeCluster, *, system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE,
                      timeout: float = 120.0, workers: int = 2,
                      reconcile: ReconcileFn | None = None,
                      rollout_concurrency: int = DEFAULT_CONCURRENCY,
                      require_service_account: bool = False) -> tuple[bool, list[Obj]]:
    """Run the reconciler (no leader election) until every ClusterObjectSet is settled or ``timeout``;
    returns (all settled, the COSs as last seen). What ``make demo`` and ``cos-reconciler --once`` use."""
    proc = ReconcilerProcess(kube, ProcessConfig(system_namespace=system_namespace, workers=workers,
                                                 rollout_concurrency=rollout_concurrency,
                                                 require_service_account=require_service_account),
                             reconcile=reconcile)
    proc.start()
    deadline = time.monotonic() + timeout
    try:
        cos_inf = proc.caches.get(COS_KEY)
        assert cos_inf is not None
        cos_inf.synced.wait(max(0.0, deadline - time.monotonic()))
        while time.monotonic() < deadline:
            items = cos_inf.items()
            if proc.queue.idle() and all(settled(c) for c in items) and not (
                    any((c.get("metadata") or {}).get("deletionTimestamp") for c in items)):
                return True, items
            time.sleep(0.2)
        return False, cos_inf.items()
    finally:
        proc.stop()
