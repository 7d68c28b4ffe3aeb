"""Ordered teardown of a revision: last phase first, each phase fully gone before the previous one starts.

Order matters for uninstalls: webhooks and Deployments must go before the CRDs and namespaces they need, or
their finalizers and admission calls hang. Only what this COS controls is deleted, with uid and
resourceVersion preconditions so an object someone replaced meanwhile is never deleted by mistake; objects a
newer revision has adopted are released (our ownerReference removed), never deleted.

Gone means gone by the server's own word: a read that answers NotFound (from the watch-fed cache, whose
DELETED events come from the server, or from the server itself). The answer to a DELETE is never taken as
proof: a Namespace answers with itself marked ``Terminating`` while its namespace controller empties it, a Pod
bound to a node answers with itself marked for its grace period, an object with finalizers answers with
itself marked, and even a ``Status`` only says the request was accepted. So an object stays in one of three
states until a read no longer finds it:

- *deleting*: the server shows it marked (``metadata.deletionTimestamp``) and held by something we can name:
  finalizers (a Namespace's ``spec.finalizers`` included) or a grace period. The teardown waits for it, and
  the COS's condition names the first such object of the phase (:attr:`TeardownProgress.waiting_message`);
- *unconfirmed*: we sent its DELETE (:class:`SentDeletes` remembers the uid, so no DELETE is ever sent twice)
  and the server has not yet shown it gone, or shows it marked with nothing left holding it. This lasts as
  long as a watch event takes to arrive; it is waited for without being reported;
- gone.

No extra request is made to find out: the watch's DELETED (or MODIFIED) event enqueues the COS again (its
ownerReference names it) and the next pass reads the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from common.cluster.interface import ApiError, Cluster, NotFound, UnknownKind
from common.contract.objects import Obj
from reconciler import collisions
from reconciler.rollout import ObjectError, read

NAMESPACE_KIND = ("v1", "Namespace")


@dataclass(frozen=True)
class Waiting:
    """An object the server shows being deleted, and what holds it."""

    what: str      # collisions.describe_object
    holds: str     # "waiting for finalizers: kubernetes" / "grace period 30s" / ""

    @property
    def message(self) -> str:
        """``Object <Kind>.<group/version> <ns>/<name>: being deleted, <what holds it>``, in the style of
        the other per-object condition messages (probe failures, collisions)."""
        return f"Object {self.what}: being deleted" + (f", {self.holds}" if self.holds else "")


@dataclass
class TeardownProgress:
    done: bool
    deleted: list[str] = field(default_factory=list)      # objects we issued a delete for
    released: list[str] = field(default_factory=list)     # objects we dropped our ownerReference from
    waiting: list[Waiting] = field(default_factory=list)  # shown being deleted, held by something we can name
    unconfirmed: list[str] = field(default_factory=list)  # deleted, not yet shown gone by a read

    @property
    def waiting_message(self) -> str:
        """What the teardown waits for, naming the first held object of the phase (``""`` when it only waits
        for the server to confirm deletions it accepted)."""
        return self.waiting[0].message if self.waiting else ""


class SentDeletes:
    """The objects we sent a DELETE for, by uid, until a read shows them gone (thread-safe, one per process).

    A watch-fed cache may still show an object we deleted a moment ago: without this, the next pass would
    delete it again (and be answered 404, or 409 by the resourceVersion precondition). An entry goes when a
    read finds the object gone or finds another object (another uid) under its name; the oldest go first
    beyond ``limit`` (a COS whose finalizer someone removed by hand never reads its objects again)."""

    def __init__(self, limit: int = 100_000) -> None:
        self._uids: OrderedDict[tuple[str, str, str, str], str] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._uids)

    def sent(self, key: tuple[str, str, str, str], uid: str) -> None:
        with self._lock:
            self._uids[key] = uid
            self._uids.move_to_end(key)
            while len(self._uids) > self._limit:
                self._uids.popitem(last=False)

    def pending(self, key: tuple[str, str, str, str], live: Obj) -> bool:
        """Whether ``live`` is an object we already sent a DELETE for (forgets the entry when it is not)."""
        uid = str((live.get("metadata") or {}).get("uid") or "")
        with self._lock:
            known = self._uids.get(key)
            if known is not None and known != uid:
                del self._uids[key]   # a new object under that name: ours went
                return False
            return known is not None and bool(uid)

    def gone(self, key: tuple[str, str, str, str]) -> None:
        with self._lock:
            self._uids.pop(key, None)


def key_of(manifest: Obj) -> tuple[str, str, str, str]:
    meta = manifest.get("metadata") or {}
    return (str(manifest.get("apiVersion") or ""), str(manifest.get("kind") or ""),
            str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def holds(live: Obj) -> str | None:
    """What keeps an object the server shows being deleted, in words; ``None`` when nothing named holds it
    (marked, grace period 0, no finalizers: it is about to go, or already went and the read is behind)."""
    meta = live.get("metadata") or {}
    finalizers = [str(f) for f in meta.get("finalizers") or []]
    if (str(live.get("apiVersion")), str(live.get("kind"))) == NAMESPACE_KIND:
        # the namespace controller's own finalizer, removed once it has emptied the namespace
        finalizers += [str(f) for f in (live.get("spec") or {}).get("finalizers") or [] if f not in finalizers]
    if finalizers:
        return "waiting for finalizers: " + ", ".join(finalizers)
    try:
        grace = int(meta.get("deletionGracePeriodSeconds") or 0)
    except (TypeError, ValueError):
        grace = 0
    if grace > 0:
        return f"grace period {grace}s"
    return None


def _release(cluster: Cluster, live: Obj, name: str, uid: str) -> None:
    meta = live["metadata"]
    remaining = [r for r in meta.get("ownerReferences") or [] if not collisions.is_cos_ref(r, name, uid)]
    cluster.merge_patch(str(live.get("apiVersion")), str(live.get("kind")), meta["name"], meta.get("namespace"),
                        {"metadata": {"ownerReferences": remaining or None}},
                        resource_version=meta.get("resourceVersion"))


def _read(cluster: Cluster, manifest: Obj, sent: SentDeletes) -> Obj | None:
    """The live object, ``None`` when the server's word is that it is gone."""
    try:
        live = read(cluster, manifest)
    except ObjectError as exc:
        if isinstance(exc.cause, UnknownKind):
            # Its kind is not served: its CRD is gone (typically torn down by this very teardown, a later
            # phase, whose deletion removed every object of the kind), so nothing of it is left. Failing here
            # would block the teardown forever; the garbage collector still removes anything that carries
            # our ownerReference should the kind come back.
            sent.gone(key_of(manifest))
            return None
        raise
    if live is None:
        sent.gone(key_of(manifest))
    return live


def _classify(progress: TeardownProgress, manifest: Obj, live: Obj) -> None:
    """An object of ours that we deleted or that is being deleted: deleting (named) or unconfirmed."""
    what = collisions.describe_object(manifest)
    held = holds(live) if (live.get("metadata") or {}).get("deletionTimestamp") else None
    if held is not None:
        progress.waiting.append(Waiting(what, held))
    else:
        progress.unconfirmed.append(what)


def teardown(cluster: Cluster, phases: Sequence[Sequence[Obj]], *, cos_name: str, cos_uid: str,
             sent: SentDeletes | None = None) -> TeardownProgress:
    """Advance the teardown as far as possible without waiting; ``done`` when every phase is gone.

    ``sent`` is the process's memory of the DELETEs it sent (a fresh one forgets them: each object of ours
    not yet marked is then deleted again)."""
    sent = sent if sent is not None else SentDeletes()
    progress = TeardownProgress(done=False)
    for manifests in reversed(phases):
        deleted: list[Obj] = []
        for manifest in manifests:
            live = _read(cluster, manifest, sent)
            if live is None:
                continue
            meta = live["metadata"]
            what = collisions.describe_object(manifest)
            ctrl = collisions.controller_ref(live)
            if ctrl is not None and collisions.is_cos_ref(ctrl, cos_name, cos_uid):
                if meta.get("deletionTimestamp") or sent.pending(key_of(manifest), live):
                    _classify(progress, manifest, live)
                    continue
                try:
                    cluster.delete(str(live.get("apiVersion")), str(live.get("kind")), meta["name"],
                                   meta.get("namespace"), uid=meta.get("uid"),
                                   resource_version=meta.get("resourceVersion"))
                except NotFound:
                    sent.gone(key_of(manifest))   # the server says it is not there
                    continue
                except ApiError as exc:
                    raise ObjectError(f"deleting Object {what}: {exc}", exc) from None
                sent.sent(key_of(manifest), str(meta.get("uid") or ""))
                progress.deleted.append(what)
                deleted.append(manifest)
            elif any(collisions.is_cos_ref(r, cos_name, cos_uid) for r in meta.get("ownerReferences") or []):
                try:
                    _release(cluster, live, cos_name, cos_uid)
                except NotFound:
                    continue
                except ApiError as exc:
                    raise ObjectError(f"releasing Object {what}: {exc}", exc) from None
                progress.released.append(what)
        for manifest in deleted:   # read again: gone already, or what the server shows of it
            live = _read(cluster, manifest, sent)
            if live is not None:
                _classify(progress, manifest, live)
        if progress.waiting or progress.unconfirmed:
            order = {collisions.describe_object(m): i for i, m in enumerate(manifests)}
            progress.waiting.sort(key=lambda w: order.get(w.what, len(order)))   # the first of the phase first
            return progress
    progress.done = True
    return progress
