"""The long-running reconciler: caches, work queue, workers, leader election, events, health, metrics.

The engine (``reconciler.engine.reconcile``) is a plain function over ``Cluster``; this module gives it a
``CachedCluster`` whose reads come from watch-fed caches and whose writes go to the API server, and turns
watch events into queue items:

- a ClusterObjectSet event enqueues that COS;
- an event on a managed object enqueues every COS named in its ownerReferences (the controller and any
  revision it was handed over from, so teardown waiting on an object wakes up);
- an event on a referenced Secret enqueues every COS referencing it (creating or fixing a Secret retriggers);
- a CustomResourceDefinition event refreshes discovery of its group, so a CR in a later phase is applied
  as soon as its CRD is served.

A COS that names a ServiceAccount has its objects written with that ServiceAccount's token (one
``KubeCluster.with_bearer`` view per ServiceAccount, tokens from :class:`~common.cluster.tokens.ServiceAccountTokens`,
renewed before they expire); reads still come from the caches. A reconcile that failed for want of something
outside the COS is retried at once when that thing appears, not at its next backoff: a namespace (watched while
some COS waits for one), a ServiceAccount its token could not be issued for (its namespace's ServiceAccounts
are watched meanwhile), and a 403 (RBAC: Roles, ClusterRoles and their bindings are watched while some COS was
refused, and any change to them retries every such COS, since a grant may come through a group, a binding or a
role). Only changes after a watch's first list count, so starting a watch retries nothing.

Managed kinds are cached through the label selector ``app.kubernetes.io/managed-by=olm.operatorframework.io``,
so the process holds only what it manages, not every ConfigMap in the cluster. A read that misses such a
filtered cache answers NotFound; the engine then creates, and an ``AlreadyExists`` marks the object as
"exists outside the cache" so the engine's next read of it goes to the API server (spec section 2.4).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common.cluster.interface import Cluster, Forbidden, NotFound
from common.cluster.kube import KubeCluster
from common.cluster.tokens import DEFAULT_EXPIRATION_SECONDS, ServiceAccountTokenError, ServiceAccountTokens
from common.contract import api
from common.contract.conditions import settled
from common.contract.objects import GVK, Obj
from common.contract.serviceaccount import ServiceAccountRef
from common.runtime.cache import Caches, Informer, InformerKey
from common.runtime.client import CachedCluster
from common.runtime.leader import LeaderConfig, LeaderElector
from common.runtime.parallel import DEFAULT_CONCURRENCY, RETRY_JITTER, SEQUENTIAL, WATCH_CONNECTIONS, Fanout
from common.runtime.queue import ShutDown, WorkQueue
from common.runtime.recorder import EventRecorder
from reconciler.metrics import Metrics

log = logging.getLogger(__name__)

MANAGED_SELECTOR = f"{api.LABEL_MANAGED_BY}={api.MANAGED_BY_VALUE}"
COS_KEY = InformerKey(api.API_VERSION, api.KIND)
# Every namespace, watched only while some COS waits for one to appear (see ``missing_namespace``).
NAMESPACES_KEY = InformerKey("v1", "Namespace")
# RBAC objects, every one, watched only while some COS was refused with a 403 (see ``forbidden``).
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
RBAC_KEYS = frozenset(InformerKey(RBAC_API_VERSION, kind)
                      for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"))
CRD_API_VERSION = "apiextensions.k8s.io/v1"


@dataclass
class ReconcileOutcome:
    """What the process needs back from one reconcile (the engine's ``Result``, duck-typed)."""

    requeue_after: float | None = None
    error: Exception | None = None
    events: list[Any] = field(default_factory=list)
    watched_kinds: set[tuple[str, str]] = field(default_factory=set)
    referenced_secrets: set[tuple[str, str]] = field(default_factory=set)
    state: str | None = None               # Progressing reason written/read (cos_revision_state)
    owner: str = ""
    rollout_seconds: float | None = None   # set once, when this reconcile made Succeeded True


# reconcile(cluster, name) -> an object with the fields of ReconcileOutcome (the engine's Result)
ReconcileFn = Callable[[Cluster, str], Any]


def engine_reconcile(system_namespace: str, fanout: Fanout | None = None, *, require_service_account: bool = False,
                     writer: Any = None) -> ReconcileFn:
    """The real engine, bound to its configuration (``writer``: ``reconciler.engine.Writer``)."""
    from reconciler import drift, engine

    config = engine.EngineConfig(system_namespace=system_namespace, fanout=fanout or SEQUENTIAL,
                                 require_service_account=require_service_account, writer=writer)
    memory = drift.AppliedMemory()   # what our writes returned: steady state judged without a request

    def run(cluster: Cluster, name: str) -> Any:
        return engine.reconcile(cluster, name, config=config, memory=memory)

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
        self.cluster = CachedCluster(kube, self.caches, lazy=self._lazy_informer)
        self._lazy: dict[InformerKey, float] = {}  # informers started by a read, kept while reconciles run
        self._in_flight = 0
        self.recorder = EventRecorder(kube, "cos-reconciler", config.identity, on_recorded=self.metrics.count_event)
        self.metrics.bind_gauges(lambda: len(self.queue), self._objects_managed,
                                 lambda: len(self.caches.informers()))
        self._lock = threading.Lock()
        self._kinds: dict[str, set[tuple[str, str]]] = {}       # COS -> managed (apiVersion, kind)
        self._secrets: dict[str, set[tuple[str, str]]] = {}     # COS -> referenced (namespace, name)
        self._secret_users: dict[tuple[str, str], set[str]] = {}
        self._ns_waiters: dict[str, set[str]] = {}              # missing namespace -> COSs waiting for it
        self._sa_waiters: dict[ServiceAccountRef, set[str]] = {}  # missing ServiceAccount -> COSs waiting
        self._rbac_waiters: set[str] = set()                    # COSs refused with a 403
        # Orders "is the COS still in the cache? then set its state" against its DELETED event removing the
        # series, and both against losing the lease: no stale cos_revision_state series survives either.
        self._state_lock = threading.Lock()
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

    def _report_state(self, name: str, result: Any) -> None:
        """cos_revision_state and cos_rollout_duration_seconds from what the reconcile wrote or read."""
        seconds = getattr(result, "rollout_seconds", None)
        state = getattr(result, "state", None)
        with self._state_lock:
            if not self._exporting_states:
                return
            if seconds is not None:
                self.metrics.rollout_duration.observe(float(seconds))
            cos_inf = self.caches.get(COS_KEY)
            if cos_inf is not None and cos_inf.synced.is_set() and cos_inf.get(None, name) is None:
                self.metrics.forget_revision(name)   # deleted meanwhile
            elif state:
                self.metrics.set_revision_state(name, str(getattr(result, "owner", "") or ""), str(state))

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

    def _objects_managed(self) -> float:
        return float(sum(len(i) for i in self.caches.informers() if i.key.label_selector == MANAGED_SELECTOR))

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.leading.is_set()

    # --------------------------------------------------------------------------------------- events
    def _on_event(self, key: InformerKey, etype: str, obj: Obj, prev: Obj | None) -> None:
        meta = obj.get("metadata") or {}
        if key == COS_KEY:
            name = str(meta.get("name") or "")
            if etype == "DELETED":
                with self._state_lock:
                    self.metrics.forget_revision(name)
                self._forget(name)
            self.queue.add(name)
            return
        if key.kind == "Secret" and key.label_selector is None:
            with self._lock:
                users = set(self._secret_users.get((str(meta.get("namespace") or ""), str(meta.get("name"))), ()))
            for name in users:
                self.queue.add(name)
            if key.namespace is not None:
                return
        if key in RBAC_KEYS:
            inf = self.caches.get(key)
            if inf is not None and inf.synced.is_set():   # a change, not the watch's first list
                with self._lock:
                    refused = set(self._rbac_waiters)
                for name in refused:
                    self.queue.forget(name)   # refused by RBAC: it may be allowed now, no backoff
                    self.queue.add(name)
            return
        if key.kind == "ServiceAccount" and key.label_selector is None:
            if etype != "DELETED":
                account = ServiceAccountRef(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
                with self._lock:
                    waiting = set(self._sa_waiters.get(account, ()))
                for name in waiting:
                    self.queue.forget(name)
                    self.queue.add(name)
            return
        if key == NAMESPACES_KEY:
            if etype != "DELETED":
                with self._lock:
                    waiting = set(self._ns_waiters.get(str(meta.get("name") or ""), ()))
                for name in waiting:
                    self.queue.forget(name)   # it failed for want of this namespace: no backoff now
                    self.queue.add(name)
            return
        if key.kind == "CustomResourceDefinition" and key.api_version == CRD_API_VERSION:
            self.kube.invalidate_discovery(str((obj.get("spec") or {}).get("group") or "") or None)
        for o in (obj, prev):
            for ref in ((o or {}).get("metadata") or {}).get("ownerReferences") or []:
                if ref.get("kind") == api.KIND and GVK.parse(str(ref.get("apiVersion", "")), "x").group == api.GROUP:
                    self.queue.add(str(ref.get("name")))

    def _wait_for(self, name: str, namespace: str | None, account: ServiceAccountRef | None, rbac: bool) -> None:
        """Record what the last reconcile of ``name`` failed for want of (``None``/``False``: nothing), so the
        matching watch event retries it; the watches run while someone waits."""
        with self._lock:
            before = self._waited_keys()
            for ns in [n for n, users in self._ns_waiters.items() if name in users and n != namespace]:
                self._ns_waiters[ns].discard(name)
                if not self._ns_waiters[ns]:
                    del self._ns_waiters[ns]
            if namespace is not None:
                self._ns_waiters.setdefault(namespace, set()).add(name)
            for ref in [r for r, users in self._sa_waiters.items() if name in users and r != account]:
                self._sa_waiters[ref].discard(name)
                if not self._sa_waiters[ref]:
                    del self._sa_waiters[ref]
            if account is not None:
                self._sa_waiters.setdefault(account, set()).add(name)
            if rbac:
                self._rbac_waiters.add(name)
            else:
                self._rbac_waiters.discard(name)
            changed = before != self._waited_keys()
        if changed:
            self._sync_informers()

    def _waited_keys(self) -> set[InformerKey]:
        """The watches the waiting COSs need (call with ``_lock`` held)."""
        keys = {InformerKey("v1", "ServiceAccount", ref.namespace, None) for ref in self._sa_waiters}
        if self._ns_waiters:
            keys.add(NAMESPACES_KEY)
        if self._rbac_waiters:
            keys |= RBAC_KEYS
        return keys

    def _forget(self, name: str) -> None:
        self._wait_for(name, None, None, False)
        with self._lock:
            self._kinds.pop(name, None)
            for ref in self._secrets.pop(name, set()):
                users = self._secret_users.get(ref)
                if users:
                    users.discard(name)
                    if not users:
                        del self._secret_users[ref]
        self._sync_informers()

    def _remember(self, name: str, kinds: set[tuple[str, str]], secrets: set[tuple[str, str]]) -> None:
        with self._lock:
            changed = self._kinds.get(name) != kinds or self._secrets.get(name) != secrets
            if not changed:
                return
            self._kinds[name] = set(kinds)
            for ref in self._secrets.get(name, set()) - secrets:
                users = self._secret_users.get(ref)
                if users:
                    users.discard(name)
                    if not users:
                        del self._secret_users[ref]
            for ref in secrets:
                self._secret_users.setdefault(ref, set()).add(name)
            self._secrets[name] = set(secrets)
        self._sync_informers()

    def _lazy_informer(self, api_version: str, kind: str) -> Informer | None:
        """Start the managed-objects cache of a kind on its first read and wait (bounded) for it."""
        self.kube.resource(api_version, kind)  # UnknownKind for a kind not served yet: nothing to watch
        key = InformerKey(api_version, kind, None, MANAGED_SELECTOR)
        with self._lock:
            self._lazy[key] = time.monotonic()
        inf = self.caches.ensure(key)
        return inf if inf.synced.wait(10.0) else None

    def _sync_informers(self) -> None:
        """Watch exactly what some COS needs: its managed kinds (label-filtered, all namespaces) and the
        namespaces of its referenced Secrets."""
        with self._lock:
            wanted = {COS_KEY}
            for kinds in self._kinds.values():
                for av, kind in kinds:
                    wanted.add(InformerKey(av, kind, None, MANAGED_SELECTOR))
            for ns, _ in self._secret_users:
                wanted.add(InformerKey("v1", "Secret", ns or self.config.system_namespace, None))
            wanted |= self._waited_keys()
            # An informer a read started is kept, even if no result names its kind yet, until no
            # reconcile is running any more: the one that started it has then reported its kinds.
            keep = set(self._lazy)
        self.caches.retain(wanted, keep)

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
        with self._lock:
            self._in_flight += 1
        try:
            self._reconcile_one(name)
        finally:
            with self._lock:
                self._in_flight -= 1
                release = self._in_flight == 0 and bool(self._lazy)
                if release:
                    self._lazy.clear()
            if release:
                self._sync_informers()

    def _reconcile_one(self, name: str) -> None:
        started = time.monotonic()
        try:
            result = self.reconcile_fn(self.cluster, name)
        except Exception as e:  # the engine returns errors; an exception here is a bug or an API error
            log.exception("reconcile %s raised", name)
            result = ReconcileOutcome(error=e)
        finally:
            self.metrics.reconcile_duration.observe(time.monotonic() - started)
            self.reconcile_count += 1
        error = getattr(result, "error", None)
        requeue_after = getattr(result, "requeue_after", None)
        self._report_state(name, result)
        kinds = set(getattr(result, "watched_kinds", set()) or set())
        secrets = set(getattr(result, "referenced_secrets", set()) or set())
        cos_inf = self.caches.get(COS_KEY)
        if cos_inf is not None and cos_inf.synced.is_set() and cos_inf.get(None, name) is None:
            self._forget(name)  # deleted meanwhile (its DELETED event may have come before this result)
        else:
            if kinds or secrets or name in self._kinds:
                self._remember(name, kinds, secrets)
            self._wait_for(name, missing_namespace(error), missing_service_account(error), forbidden(error))
        events = list(getattr(result, "events", []) or [])
        if events:
            cos_inf = self.caches.get(COS_KEY)
            cos = (cos_inf.get(None, name) if cos_inf else None) or {
                "apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": {"name": name}}
            for ev in events:
                self.recorder.record(cos, ev.type, ev.reason, ev.message)
        if self._stopping.is_set() and self.exit_code:
            return  # lost the lease: no more requeues
        if error is not None:
            delay = self.queue.add_rate_limited(name)
            self.metrics.reconciles.labels(result="error").inc()
            log.warning("reconcile %s failed: %s (retry in %.3fs)", name, error, delay)
        elif requeue_after is not None:
            self.queue.forget(name)
            self.queue.add_after(name, float(requeue_after))
            self.metrics.reconciles.labels(result="requeue").inc()
        else:
            self.queue.forget(name)
            self.metrics.reconciles.labels(result="success").inc()


def missing_namespace(error: BaseException | None) -> str | None:
    """The namespace whose absence made a reconcile fail, if that is why it failed.

    The API server refuses a new object in a namespace that does not exist with 404 and Status details
    ``{"kind": "namespaces", "name": <ns>}`` (its NamespaceLifecycle admission). Such a COS is Retrying with
    exponential backoff like any error, which could leave it waiting up to 1000 s after the namespace appears;
    the process watches namespaces while some COS waits for one and wakes it up when it is created."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, NotFound):
            details = error.status.get("details") if isinstance(error.status, dict) else None
            if isinstance(details, dict) and details.get("kind") == "namespaces" and details.get("name"):
                return str(details["name"])
            return None
        error = getattr(error, "cause", None) or error.__cause__
        seen += 1
    return None


def _causes(error: BaseException | None) -> list[BaseException]:
    """``error`` and what caused it (``cause`` attributes, then ``__cause__``), at most 10 deep."""
    out: list[BaseException] = []
    while error is not None and len(out) < 10:
        out.append(error)
        error = getattr(error, "cause", None) or error.__cause__
    return out


def missing_service_account(error: BaseException | None) -> ServiceAccountRef | None:
    """The ServiceAccount whose absence made a reconcile fail (no token could be issued: 404), if that is
    why it failed."""
    for e in _causes(error):
        if isinstance(e, ServiceAccountTokenError):
            return e.ref if e.missing else None
    return None


def forbidden(error: BaseException | None) -> bool:
    """Whether the API server refused a reconcile's request with 403 (RBAC, most likely: a grant may fix it)."""
    return any(isinstance(e, Forbidden) for e in _causes(error))


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
