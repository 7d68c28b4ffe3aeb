"""The cache-backed client: reads from watch-fed caches when one covers them, writes to the API server.

Managed kinds are cached through a label selector, so a process holds only what it manages. A read that misses
such a filtered cache answers NotFound; the caller then creates, and an ``AlreadyExists`` marks the object as
"exists outside the cache" so the next read of it goes to the API server (controller-runtime's cache-backed
client has the same split of reads and writes).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable

from common.cluster.interface import AlreadyExists, NotFound
from common.cluster.kube import KubeCluster
from common.contract import labels
from common.contract.objects import GVK, Obj
from common.runtime.cache import Caches, Informer


class CachedCluster:
    """``Cluster`` for the engine: reads from the caches when one covers them, writes to the API server
    (and straight into the cache, so the next reconcile does not act on what it just changed).

    Reads go through ``kube`` (the process's identity), writes through ``writer``: the same, or, for the view
    :meth:`writing_as` makes, a ``KubeCluster`` writing with a ServiceAccount's token. Views share the caches
    and the memory of objects found outside them."""

    def __init__(self, kube: KubeCluster, caches: Caches,
                 lazy: Callable[[str, str], Informer | None] | None = None) -> None:
        self.kube = kube
        self.writer = kube
        self.caches = caches
        self.lazy = lazy  # starts (and waits for) the managed-objects cache of a kind on its first read
        self._outside: set[tuple[str, str, str, str]] = set()  # (apiVersion, kind, ns, name) not in caches
        self._lock = threading.Lock()

    def writing_as(self, writer: KubeCluster) -> CachedCluster:
        """This cluster with its writes sent through ``writer`` (same caches, same reads)."""
        view = copy.copy(self)   # shallow: the caches, the set of objects outside them and its lock are shared
        view.writer = writer
        return view

    def _informers(self, api_version: str, kind: str) -> list[Informer]:
        return [i for i in self.caches.informers()
                if i.key.api_version == api_version and i.key.kind == kind and i.synced.is_set()]

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        ns = namespace or ""
        infs = self._informers(api_version, kind)
        if not infs and self.lazy is not None and (api_version, kind) != ("v1", "Secret"):
            # First read of a kind: one list+watch instead of a GET per object. Secrets are the exception:
            # referenced object-data Secrets carry no managed-by label, so they are read live until their
            # namespace is watched.
            inf = self.lazy(api_version, kind)
            infs = [inf] if inf is not None else []
        full = [i for i in infs if i.covers(ns, None)]
        filtered = [i for i in infs if i.key.label_selector and
                    (i.key.namespace is None or i.key.namespace == ns)]
        for inf in full + filtered:
            obj = inf.get(ns, name)
            if obj is not None:
                with self._lock:
                    self._outside.discard((api_version, kind, ns, name))
                return obj
        if full:
            raise self._not_found(api_version, kind, name)
        if filtered:
            key = (api_version, kind, ns, name)
            with self._lock:
                outside = key in self._outside
            if not outside and not any(i.left(ns, name) for i in filtered):
                raise self._not_found(api_version, kind, name)
            try:
                return self.kube.get(api_version, kind, name, namespace)
            except NotFound:
                with self._lock:
                    self._outside.discard(key)
                for inf in filtered:
                    inf.forget_left(ns, name)
                raise
        return self.kube.get(api_version, kind, name, namespace)

    def _not_found(self, api_version: str, kind: str, name: str) -> NotFound:
        """NotFound in the API server's words: ``secrets "x" not found``, ``deployments.apps "x" not found``."""
        res = self.kube.resource(api_version, kind)
        resource = f"{res.plural}.{res.gvk.group}" if res.gvk.group else res.plural
        message = f'{resource} "{name}" not found'
        return NotFound(message, status={"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                         "message": message, "reason": "NotFound",
                                         "details": {"name": name, **({"group": res.gvk.group} if res.gvk.group
                                                                       else {}), "kind": res.plural},
                                         "code": 404})

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             label_selector: str | None = None, *, limit: int | None = None) -> list[Obj]:
        sel = labels.parse(label_selector)
        inf = self.caches.find(api_version, kind, namespace, sel)
        if inf is None or (namespace is None and inf.key.namespace is not None):
            return self.kube.list(api_version, kind, namespace, label_selector, limit=limit)
        found = [o for o in inf.items()
                 if (namespace is None or (o.get("metadata") or {}).get("namespace", "") == namespace)
                 and sel.matches((o.get("metadata") or {}).get("labels"))]
        return found if limit is None else found[:limit]

    def _written(self, obj: Obj) -> Obj:
        gvk = GVK.of(obj)
        for inf in self._informers(gvk.api_version, gvk.kind):
            inf.write_through(obj)
        return obj

    def create(self, obj: Obj, *, dry_run: bool = False, field_manager: str | None = None) -> Obj:
        try:
            out = self.writer.create(obj, dry_run=dry_run, field_manager=field_manager)
        except AlreadyExists:
            meta = obj.get("metadata") or {}
            with self._lock:
                self._outside.add((str(obj.get("apiVersion")), str(obj.get("kind")),
                                   str(meta.get("namespace") or ""), str(meta.get("name") or "")))
            raise
        return out if dry_run else self._written(out)

    def apply(self, obj: Obj, *, field_manager: str, force: bool = True, dry_run: bool = False) -> Obj:
        out = self.writer.apply(obj, field_manager=field_manager, force=force, dry_run=dry_run)
        return out if dry_run else self._written(out)

    def merge_patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Obj, *,
                    resource_version: str | None = None, subresource: str = "") -> Obj:
        return self._written(self.writer.merge_patch(api_version, kind, name, namespace, patch,
                                                     resource_version=resource_version, subresource=subresource))

    def update(self, obj: Obj) -> Obj:
        return self._written(self.writer.update(obj))

    def update_status(self, obj: Obj) -> Obj:
        return self._written(self.writer.update_status(obj))

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               uid: str | None = None, resource_version: str | None = None,
               propagation_policy: str | None = None) -> Obj | None:
        """DELETE. Gone is left for the server to say: its watch's DELETED event drops the object from the
        cache (a read then answers NotFound). When the answer shows the object marked
        (``metadata.deletionTimestamp``: finalizers, a Namespace being emptied, a Pod's grace period), the cache
        stores that at once, so the next read already shows it being deleted. Only a 404 answer, the server
        saying it is not there, drops it here (a tombstone: no second DELETE from a stale cache)."""
        last = None
        for inf in self._informers(api_version, kind):
            last = last or inf.get(namespace, name)
        try:
            answer = self.writer.delete(api_version, kind, name, namespace, uid=uid,
                                      resource_version=resource_version, propagation_policy=propagation_policy)
        except NotFound:
            self._gone(api_version, kind, name, namespace, last)
            raise
        if answer is not None and (answer.get("metadata") or {}).get("deletionTimestamp"):
            self._written(answer)
        return answer

    def _gone(self, api_version: str, kind: str, name: str, namespace: str | None, last: Obj | None) -> None:
        obj = last or {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace}}
        for inf in self._informers(api_version, kind):
            inf.deleted(obj)

    def is_namespaced(self, api_version: str, kind: str) -> bool:
        return self.kube.is_namespaced(api_version, kind)

    def resource_name(self, api_version: str, kind: str) -> str:
        return self.kube.resource_name(api_version, kind)
