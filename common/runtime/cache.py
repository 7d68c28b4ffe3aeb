"""Watch-fed caches (informers): reads come from memory, the API server only sees list+watch.

Each ``Informer`` lists its kind once (paged), then follows it with the one watch loop
(:func:`common.cluster.watch.follow`): a watch that ends (server timeout, dropped connection) resumes from the last
resourceVersion seen, bookmarks included, so nothing is missed and nothing is re-listed. Only a 410 Gone (the
history was compacted) forces a re-list, which is diffed against the cache so handlers still see every
ADDED/MODIFIED/DELETED. Failures back off exponentially (100 ms doubling to 30 s, jittered): a broken API server
never causes a busy loop.

``Caches`` starts informers on demand (a COS first needs a kind) and stops them when nobody needs them.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import orjson

from common.cluster.backoff import Backoff, extra_jitter
from common.cluster.kube import KubeCluster
from common.cluster.watch import WatchEvent, follow
from common.contract import labels
from common.contract.objects import Obj, copy_json

log = logging.getLogger(__name__)

ObjKey = tuple[str, str]  # (namespace or "", name)

# What the store holds per object: its resourceVersion and the object as compact JSON (orjson). Encoded bytes
# take a fraction of the memory of the same object as Python dicts, and decoding them is the cheapest way to
# hand each read a fresh object of its own (several times faster than a deep copy). An object orjson cannot
# encode (a string with a lone surrogate) is kept as a dict and deep-copied on read.
Stored = tuple[str, bytes | Obj]


def _encode(obj: Obj) -> bytes | Obj:
    """``obj`` as the store keeps it: compact JSON in a ``bytes`` of exactly its length.

    The ``bytes`` orjson returns keep the capacity of its output buffer: at least 4 KiB resident whatever the
    length (orjson 3.13: a 1.2 KiB ConfigMap kept as returned costs 4.9 KiB of resident memory, 1.1 KiB as an
    exact-size copy). The store keeps one per object for as long as the object is cached, so it keeps the copy
    (0.15 us for 1 KiB)."""
    try:
        return memoryview(orjson.dumps(obj)).tobytes()
    except TypeError:
        return copy_json(obj)


def _decode(data: bytes | Obj) -> Obj:
    if isinstance(data, bytes):
        out: Obj = orjson.loads(data)
        return out
    return copy_json(data)


@dataclass(frozen=True, slots=True)
class InformerKey:
    api_version: str
    kind: str
    namespace: str | None = None       # None: all namespaces (or a cluster-scoped kind)
    label_selector: str | None = None  # server-side filter of what is cached

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        sel = f" [{self.label_selector}]" if self.label_selector else ""
        return f"{self.kind}.{self.api_version}{where}{sel}"


# handler(informer key, event type ADDED|MODIFIED|DELETED, object, previous object or None). For ADDED and
# MODIFIED, ``previous is object`` (the same dict) means the store already held this very version: the event
# of a write whose answer was stored through :meth:`Informer.write_through` (an echo of our own write).
Handler = Callable[[InformerKey, str, Obj, Obj | None], None]


def _key(obj: Obj) -> ObjKey:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _rv_int(obj: Obj | None) -> int | None:
    return _as_int(((obj or {}).get("metadata") or {}).get("resourceVersion"))


def _as_int(rv: Any) -> int | None:
    if rv is None or rv == "":
        return None
    try:
        return int(rv)
    except (TypeError, ValueError):
        return None


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Informer:
    """List+watch of one kind (optionally one namespace and a label selector) into an in-memory store."""

    def __init__(self, kube: KubeCluster, key: InformerKey, handler: Handler | None = None, *,
                 watch_timeout: int = 300, strip_managed_fields: bool = True,
                 keep_managers: frozenset[str] = frozenset(),
                 backoff: Backoff = Backoff(0.1, 30.0, jitter=0.5)) -> None:
        self.kube = kube
        self.key = key
        self.handler = handler
        self.watch_timeout = watch_timeout  # seconds; each watch asks for 1x..2x this, like client-go
        self.strip_managed_fields = strip_managed_fields
        self.keep_managers = keep_managers  # managedFields entries (by manager) kept when stripping
        self.backoff = backoff
        self.selector = labels.parse(key.label_selector)
        self.synced = threading.Event()
        self.lists = 0     # list calls made (1 + one per 410)
        self.watches = 0   # watch requests made
        self._store: dict[ObjKey, Stored] = {}
        self._tombstones: dict[ObjKey, int] = {}  # resourceVersion of each recent DELETED event
        self._left: set[ObjKey] = set()  # objects that left the label selector (still exist, not cached)
        self._lock = threading.Lock()
        self._rv = ""
        self._stop = threading.Event()
        self._resp: Any = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------- lifecycle
    def start(self) -> Informer:
        self._thread = threading.Thread(target=self._run, name=f"informer {self.key}", daemon=True)
        self._thread.start()
        return self

    def stop(self, wait: float = 2.0) -> None:
        self._stop.set()
        resp = self._resp
        if resp is not None:
            with contextlib.suppress(Exception):  # already closed
                resp.shutdown()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(wait)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    # ---------------------------------------------------------------------------------------- reads
    def get(self, namespace: str | None, name: str) -> Obj | None:
        """A fresh copy of the cached object (the caller may change it), or None."""
        with self._lock:
            entry = self._store.get((namespace or "", name))
        return _decode(entry[1]) if entry is not None else None

    def resource_version(self, namespace: str | None, name: str) -> str | None:
        """The resourceVersion of the cached object (None when not cached): whether it changed, without a copy."""
        with self._lock:
            entry = self._store.get((namespace or "", name))
        return entry[0] if entry is not None else None

    def contains(self, namespace: str | None, name: str) -> bool:
        """Whether the object is cached (no copy made)."""
        with self._lock:
            return (namespace or "", name) in self._store

    def items(self) -> list[Obj]:
        with self._lock:
            entries = list(self._store.values())
        return [_decode(e[1]) for e in entries]

    def left(self, namespace: str | None, name: str) -> bool:
        """Whether the object left this cache's label selector (its DELETED event carried non-matching
        labels): it exists, so a read must go to the API server rather than answer NotFound."""
        with self._lock:
            return (namespace or "", name) in self._left

    def forget_left(self, namespace: str | None, name: str) -> None:
        with self._lock:
            self._left.discard((namespace or "", name))

    def keys(self) -> list[ObjKey]:
        with self._lock:
            return list(self._store)

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)

    def covers(self, namespace: str | None, selector: labels.Selector | None = None) -> bool:
        """Whether this cache holds every object of (namespace, selector): reads it may answer."""
        if self.key.namespace is not None and (namespace or "") != self.key.namespace:
            return False
        if self.key.label_selector:
            return selector is not None and set(self.selector.requirements) <= set(selector.requirements)
        return True

    def holds(self, obj: Obj) -> bool:
        """Whether ``obj`` belongs in this cache (namespace and selector match)."""
        meta = obj.get("metadata") or {}
        if self.key.namespace is not None and (meta.get("namespace") or "") != self.key.namespace:
            return False
        return self.selector.matches(meta.get("labels"))

    def write_through(self, obj: Obj) -> None:
        """Store what a write returned so the next read sees it even before the watch event arrives; a
        watch event older than what is stored is then ignored (resourceVersions compared as integers, which
        every real API server uses; opaque ones are simply not compared)."""
        if not self.holds(obj):
            return
        # An object marked for deletion is stored like any other: whether it is gone is the watch's to say
        # (its DELETED event, whose resourceVersion also keeps a late write result from bringing it back).
        slim = self._slimmed(obj)
        k, rv = _key(slim), _rv(slim)
        data = _encode(slim)
        new_rv = _as_int(rv)
        with self._lock:
            cur = self._store.get(k)
            cur_rv = _as_int(cur[0]) if cur is not None else None
            dead_rv = self._tombstones.get(k)
            if dead_rv is not None and (new_rv is None or new_rv <= dead_rv):
                return  # its DELETED event already came: a late write result must not bring it back
            if cur is None or new_rv is None or cur_rv is None or new_rv >= cur_rv:
                self._store[k] = (rv, data)

    def deleted(self, obj: Obj) -> None:
        """Our delete of ``obj`` (as we last saw it) succeeded and it is gone: drop it now, and ignore watch
        events up to its resourceVersion, so the next read does not act on (and delete) it again."""
        k = _key(obj)
        rv = _rv_int(obj) or 0
        with self._lock:
            entry = self._store.get(k)
            if entry is not None and (_as_int(entry[0]) or 0) > rv and \
                    (_decode(entry[1]).get("metadata") or {}).get("uid") != (obj.get("metadata") or {}).get("uid"):
                return  # a newer object of that name: not the one we deleted
            self._store.pop(k, None)
            self._tombstones[k] = max(rv, self._tombstones.get(k, 0))

    def _slim(self, obj: Obj) -> Obj:
        """``obj`` (changed in place) without the managedFields entries of managers not kept."""
        if self.strip_managed_fields:
            meta = obj.get("metadata") or {}
            kept = [e for e in meta.pop("managedFields", None) or []
                    if isinstance(e, dict) and e.get("manager") in self.keep_managers]
            if kept:
                meta["managedFields"] = kept
        return obj

    def _slimmed(self, obj: Obj) -> Obj:
        """What :meth:`_slim` makes of ``obj``, leaving ``obj`` itself as it is (a caller's write result)."""
        meta = obj.get("metadata")
        if not self.strip_managed_fields or not isinstance(meta, dict) or "managedFields" not in meta:
            return obj
        return self._slim({**obj, "metadata": dict(meta)})

    # --------------------------------------------------------------------------------------- the loop
    def _run(self) -> None:
        follow(self.kube, self.key.api_version, self.key.kind, namespace=self.key.namespace,
               label_selector=self.key.label_selector, position=lambda: self._rv, relist=self._relist,
               on_event=self._on_event, timeout_seconds=self._timeout_seconds, backoff=self.backoff,
               wait=self._stop.wait, stopped=self._stop.is_set, on_open=self._opened, log=log, name=str(self.key))

    def _timeout_seconds(self) -> int:
        """What the next watch asks the server for: 1x to 2x ``watch_timeout``, like client-go, so the watches of
        many informers do not all end (and come back) at once. Counts the watch request about to be made."""
        self.watches += 1
        return int(extra_jitter(self.watch_timeout, 1.0))

    def _on_event(self, event: WatchEvent) -> bool:
        self._apply_event(event.type, event.obj)
        return False

    def _opened(self, resp: Any) -> None:
        self._resp = resp
        if resp is not None and self._stop.is_set():
            resp.shutdown()

    def _relist(self) -> bool:
        self.lists += 1
        items, rv = self.kube.list_with_version(self.key.api_version, self.key.kind, self.key.namespace,
                                                self.key.label_selector)
        objs = {_key(o): self._slim(o) for o in items}
        new = {k: (_rv(o), _encode(o)) for k, o in objs.items()}
        with self._lock:
            old = self._store
            self._store = new
            self._rv = rv
        # Diff against what was cached: a re-list after 410 still tells handlers about every change.
        if self.handler is not None:
            for k, obj in objs.items():
                prev = old.get(k)
                if prev is None:
                    self._notify("ADDED", obj, None)
                elif prev[0] != new[k][0]:
                    self._notify("MODIFIED", obj, _decode(prev[1]))
            for k, gone in old.items():
                if k not in new:
                    last = _decode(gone[1])
                    self._notify("DELETED", last, last)
        self.synced.set()
        return False

    def _apply_event(self, etype: str, obj: Obj) -> None:
        """Apply one watch event to the store and tell the handler. An event for the version the store holds
        already (our own write, stored from its answer) stores nothing again."""
        rv = _rv(obj)
        if etype == "BOOKMARK":
            if rv:
                self._rv = rv
            return
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("%s: ignoring watch event of type %r", self.key, etype)
            return
        obj = self._slim(obj)
        k = _key(obj)
        same = stale = False
        with self._lock:
            entry = self._store.get(k)
            if etype == "DELETED":
                held_rv, new_rv = (_as_int(entry[0]) if entry is not None else None), _as_int(rv)
                if entry is not None and held_rv is not None and new_rv is not None and held_rv > new_rv and \
                        _uid(_decode(entry[1])) != _uid(obj):
                    # the late DELETED of an object made again since (our write-through stored the new one,
                    # another uid): the one held is not gone, and its own ADDED event comes next
                    stale = True
                else:
                    self._store.pop(k, None)
                    self._tombstones[k] = _as_int(rv) or 0
                    if self.key.label_selector and \
                            not self.selector.matches((obj.get("metadata") or {}).get("labels")):
                        self._left.add(k)  # it still exists: it only stopped matching our selector
                    if len(self._tombstones) > 10_000:
                        self._tombstones.pop(next(iter(self._tombstones)))
            else:
                dead_rv = self._tombstones.get(k)
                new_rv = _as_int(rv)
                if dead_rv is not None and new_rv is not None and new_rv <= dead_rv:
                    return  # an event from before our own delete of it: it is gone
                self._tombstones.pop(k, None)
                self._left.discard(k)
                prev_rv = _as_int(entry[0]) if entry is not None else None
                if prev_rv is not None and new_rv is not None and new_rv < prev_rv:
                    stale = True  # an older event than a write-through already stored
                else:
                    same = entry is not None and bool(rv) and entry[0] == rv
                    if not same:
                        self._store[k] = (rv, _encode(obj))
            if rv:
                self._rv = rv
        if stale or self.handler is None:
            return
        # the previous version for the handler: the same stored version is this very object
        prev = None if entry is None else obj if same else _decode(entry[1])
        self._notify(etype, obj, prev)

    def _notify(self, etype: str, obj: Obj, prev: Obj | None) -> None:
        if self.handler is None:
            return
        try:
            self.handler(self.key, etype, obj, prev)
        except Exception:  # a handler bug must not kill the watch
            log.exception("%s: event handler failed", self.key)


class Caches:
    """The set of running informers, started on demand and stopped when no longer wanted."""

    def __init__(self, kube: KubeCluster, handler: Handler | None = None, **informer_kwargs: Any) -> None:
        self.kube = kube
        self.handler = handler
        self.informer_kwargs = informer_kwargs
        self._informers: dict[InformerKey, Informer] = {}
        # the running informers as an immutable snapshot, replaced on every change: every cached read looks
        # them up, and reading a tuple needs no lock
        self._running: tuple[Informer, ...] = ()
        self._lock = threading.Lock()

    def ensure(self, key: InformerKey) -> Informer:
        with self._lock:
            inf = self._informers.get(key)
            if inf is None:
                inf = Informer(self.kube, key, self.handler, **self.informer_kwargs)
                self._informers[key] = inf
                self._running = tuple(self._informers.values())
                inf.start()
                log.info("started watch on %s", key)
            return inf

    def retain(self, wanted: AbstractSet[InformerKey], keep: AbstractSet[InformerKey] = frozenset()) -> None:
        """Start the ``wanted`` informers and stop every other one not in ``keep``."""
        for key in wanted:
            self.ensure(key)
        with self._lock:
            gone = [k for k in self._informers if k not in wanted and k not in keep]
            stopped = [self._informers.pop(k) for k in gone]
            self._running = tuple(self._informers.values())
        for inf in stopped:
            inf.stop(wait=0)
            log.info("stopped watch on %s", inf.key)

    def find(self, api_version: str, kind: str, namespace: str | None,
             selector: labels.Selector | None = None) -> Informer | None:
        """A synced informer that can answer reads of (kind, namespace, selector), if any."""
        cands = [i for i in self._running if i.key.api_version == api_version and i.key.kind == kind]
        for inf in cands:
            if inf.synced.is_set() and inf.covers(namespace, selector):
                return inf
        return None

    def informers(self) -> list[Informer]:
        return list(self._running)

    def get(self, key: InformerKey) -> Informer | None:
        with self._lock:
            return self._informers.get(key)

    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self.informers())

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(inf.synced.wait(max(0.0, deadline - time.monotonic())) for inf in self.informers())

    def stop_all(self) -> None:
        with self._lock:
            infs = list(self._informers.values())
            self._informers.clear()
            self._running = ()
        for inf in infs:
            inf.stop(wait=0)
        for inf in infs:
            if inf._thread is not None:
                inf._thread.join(2.0)
