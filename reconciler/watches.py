"""Which watches the ClusterObjectSets need, and which ClusterObjectSets a watch event concerns.

The process watches exactly what some COS needs (:meth:`WatchSet.sync`), from what each reconcile reported:

- ClusterObjectSets, always;
- each managed kind a COS rolls out, through the label selector ``app.kubernetes.io/managed-by=
  olm.operatorframework.io`` in all namespaces, so the process holds only what it manages, not every ConfigMap in
  the cluster; a kind's watch starts on the first read of it (:meth:`WatchSet.informer_for_read`), one list and
  watch instead of a GET per object;
- the namespaces of the Secrets COSs reference.

And it turns watch events into COS names (:meth:`WatchSet.woken`):

- an event on a managed object wakes every COS named in its ownerReferences (the controller and any revision it
  was handed over from, so teardown waiting on an object wakes up);
- an event on a referenced Secret wakes every COS referencing it (creating or fixing a Secret retriggers).

A reconcile that failed for want of something outside the COS is retried at once when that thing appears, not at
its next backoff (:meth:`WatchSet.reported`): a namespace (every namespace is watched while some COS waits for
one), a ServiceAccount its token could not be issued for (its namespace's ServiceAccounts are watched meanwhile),
and a 403 (RBAC: Roles, ClusterRoles and their bindings are watched while some COS was refused, and any change
to them retries every such COS, since a grant may come through a group, a binding or a role). Only changes after
a watch's first list count, so starting a watch retries nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from common.cluster.interface import Forbidden, NotFound
from common.cluster.kube import KubeCluster
from common.cluster.tokens import ServiceAccountTokenError
from common.contract import api
from common.contract.objects import GVK, Obj
from common.contract.serviceaccount import ServiceAccountRef
from common.runtime.cache import Caches, Informer, InformerKey

MANAGED_SELECTOR = f"{api.LABEL_MANAGED_BY}={api.MANAGED_BY_VALUE}"
COS_KEY = InformerKey(api.API_VERSION, api.KIND)
# Every namespace, watched only while some COS waits for one to appear (see ``missing_namespace``).
NAMESPACES_KEY = InformerKey("v1", "Namespace")
# RBAC objects, every one, watched only while some COS was refused with a 403 (see ``forbidden``).
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
RBAC_KEYS = frozenset(InformerKey(RBAC_API_VERSION, kind)
                      for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"))
CRD_API_VERSION = "apiextensions.k8s.io/v1"
LAZY_SYNC_SECONDS = 10.0   # how long a first read waits for its kind's cache


@dataclass(frozen=True)
class Wake:
    """The COSs a watch event concerns; ``at_once``: what they waited for is there, so retry them without
    their backoff."""

    names: frozenset[str] = frozenset()
    at_once: bool = False


class WatchSet:
    """What each COS needs watched and what it waits for, and the watches that follows from it. Thread-safe:
    reconcile workers report, watch threads ask whom an event concerns."""

    def __init__(self, caches: Caches, kube: KubeCluster, system_namespace: str) -> None:
        self.caches = caches
        self.kube = kube
        self.system_namespace = system_namespace
        self._lock = threading.Lock()
        self._kinds: dict[str, set[tuple[str, str]]] = {}       # COS -> managed (apiVersion, kind)
        self._secrets: dict[str, set[tuple[str, str]]] = {}     # COS -> referenced (namespace, name)
        self._secret_users: dict[tuple[str, str], set[str]] = {}
        self._ns_waiters: dict[str, set[str]] = {}              # missing namespace -> COSs waiting for it
        self._sa_waiters: dict[ServiceAccountRef, set[str]] = {}  # missing ServiceAccount -> COSs waiting
        self._rbac_waiters: set[str] = set()                    # COSs refused with a 403
        self._lazy: dict[InformerKey, float] = {}  # informers started by a read, kept while reconciles run
        self._in_flight = 0

    # ------------------------------------------------------------------------------- what COSs need
    def reported(self, name: str, kinds: set[tuple[str, str]], secrets: set[tuple[str, str]],
                 error: BaseException | None) -> None:
        """What a reconcile of COS ``name`` found: the kinds it manages, the Secrets it references, and the error
        it failed with (what it waits for, if anything)."""
        with self._lock:
            known = name in self._kinds
        if kinds or secrets or known:
            self._remember(name, kinds, secrets)
        self._wait_for(name, missing_namespace(error), missing_service_account(error), forbidden(error))

    def forget(self, name: str) -> None:
        """COS ``name`` is gone: it needs nothing watched any more."""
        self._wait_for(name, None, None, False)
        with self._lock:
            self._kinds.pop(name, None)
            for ref in self._secrets.pop(name, set()):
                users = self._secret_users.get(ref)
                if users:
                    users.discard(name)
                    if not users:
                        del self._secret_users[ref]
        self.sync()

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
        self.sync()

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
            self.sync()

    def _waited_keys(self) -> set[InformerKey]:
        """The watches the waiting COSs need (call with ``_lock`` held)."""
        keys = {InformerKey("v1", "ServiceAccount", ref.namespace, None) for ref in self._sa_waiters}
        if self._ns_waiters:
            keys.add(NAMESPACES_KEY)
        if self._rbac_waiters:
            keys |= RBAC_KEYS
        return keys

    # ------------------------------------------------------------------------------------ the watches
    def sync(self) -> None:
        """Watch exactly what some COS needs: its managed kinds (label-filtered, all namespaces), the namespaces
        of its referenced Secrets, and what the waiting COSs wait for."""
        with self._lock:
            wanted = {COS_KEY}
            for kinds in self._kinds.values():
                for av, kind in kinds:
                    wanted.add(InformerKey(av, kind, None, MANAGED_SELECTOR))
            for ns, _ in self._secret_users:
                wanted.add(InformerKey("v1", "Secret", ns or self.system_namespace, None))
            wanted |= self._waited_keys()
            # An informer a read started is kept, even if no result names its kind yet, until no
            # reconcile is running any more: the one that started it has then reported its kinds.
            keep = set(self._lazy)
        self.caches.retain(wanted, keep)

    def informer_for_read(self, api_version: str, kind: str) -> Informer | None:
        """Start the managed-objects cache of a kind on its first read and wait (bounded) for it."""
        self.kube.resource(api_version, kind)  # UnknownKind for a kind not served yet: nothing to watch
        key = InformerKey(api_version, kind, None, MANAGED_SELECTOR)
        with self._lock:
            self._lazy[key] = time.monotonic()
        inf = self.caches.ensure(key)
        return inf if inf.synced.wait(LAZY_SYNC_SECONDS) else None

    @contextmanager
    def reconciling(self) -> Iterator[None]:
        """One reconcile runs: the informers reads start are kept until no reconcile runs any more."""
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1
                release = self._in_flight == 0 and bool(self._lazy)
                if release:
                    self._lazy.clear()
            if release:
                self.sync()

    def managed_objects(self) -> int:
        """Objects in the managed-objects caches (the ``cos_objects_managed`` gauge)."""
        return sum(len(i) for i in self.caches.informers() if i.key.label_selector == MANAGED_SELECTOR)

    # ----------------------------------------------------------------------------------------- events
    def woken(self, key: InformerKey, etype: str, obj: Obj, prev: Obj | None) -> Wake:
        """The COSs an event of a watch other than the COSs' own concerns."""
        meta = obj.get("metadata") or {}
        names: set[str] = set()
        if key.kind == "Secret" and key.label_selector is None:
            with self._lock:
                names |= self._secret_users.get((str(meta.get("namespace") or ""), str(meta.get("name"))), set())
            if key.namespace is not None:
                return Wake(frozenset(names))
        if key in RBAC_KEYS:
            inf = self.caches.get(key)
            if inf is None or not inf.synced.is_set():   # the watch's first list, not a change
                return Wake()
            with self._lock:
                return Wake(frozenset(self._rbac_waiters), at_once=True)   # refused by RBAC: may be allowed now
        if key.kind == "ServiceAccount" and key.label_selector is None:
            if etype == "DELETED":
                return Wake()
            account = ServiceAccountRef(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            with self._lock:
                return Wake(frozenset(self._sa_waiters.get(account, ())), at_once=True)
        if key == NAMESPACES_KEY:
            if etype == "DELETED":
                return Wake()
            with self._lock:   # it failed for want of this namespace: no backoff now
                return Wake(frozenset(self._ns_waiters.get(str(meta.get("name") or ""), ())), at_once=True)
        for o in (obj,) if prev is obj or prev is None else (obj, prev):   # (prev is obj: an echo of our write)
            for ref in (o.get("metadata") or {}).get("ownerReferences") or []:
                if ref.get("kind") == api.KIND and GVK.parse(str(ref.get("apiVersion", "")), "x").group == api.GROUP:
                    names.add(str(ref.get("name")))
        return Wake(frozenset(names))


def _causes(error: BaseException | None) -> list[BaseException]:
    """``error`` and what caused it (``cause`` attributes, then ``__cause__``), at most 10 deep."""
    out: list[BaseException] = []
    while error is not None and len(out) < 10:
        out.append(error)
        error = getattr(error, "cause", None) or error.__cause__
    return out


def missing_namespace(error: BaseException | None) -> str | None:
    """The namespace whose absence made a reconcile fail, if that is why it failed.

    The API server refuses a new object in a namespace that does not exist with 404 and Status details
    ``{"kind": "namespaces", "name": <ns>}`` (its NamespaceLifecycle admission). Such a COS is Retrying with
    exponential backoff like any error, which could leave it waiting up to 1000 s after the namespace appears;
    the process watches namespaces while some COS waits for one and wakes it up when it is created."""
    for e in _causes(error):
        if isinstance(e, NotFound):
            details = e.status.get("details") if isinstance(e.status, dict) else None
            if isinstance(details, dict) and details.get("kind") == "namespaces" and details.get("name"):
                return str(details["name"])
            return None
    return None


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


__all__ = ["COS_KEY", "CRD_API_VERSION", "MANAGED_SELECTOR", "NAMESPACES_KEY", "RBAC_KEYS", "Wake", "WatchSet",
           "forbidden", "missing_namespace", "missing_service_account"]
