"""Ordered teardown of a revision: last phase first, each phase fully gone before the previous one starts.

Order matters for uninstalls: webhooks and Deployments must go before the CRDs and namespaces they need, or
their finalizers and admission calls hang. Only what this COS controls is deleted, with uid and
resourceVersion preconditions so an object someone replaced meanwhile is never deleted by mistake; objects a
newer revision has adopted are released (our ownerReference removed), never deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from common.cluster.interface import ApiError, Cluster, NotFound, UnknownKind
from common.contract.objects import Obj
from reconciler import collisions
from reconciler.rollout import ObjectError, read


@dataclass
class TeardownProgress:
    done: bool
    deleted: list[str] = field(default_factory=list)     # objects we issued a delete for
    released: list[str] = field(default_factory=list)    # objects we dropped our ownerReference from
    waiting: list[str] = field(default_factory=list)     # objects still going away (finalizers)


def _release(cluster: Cluster, live: Obj, name: str, uid: str) -> None:
    meta = live["metadata"]
    remaining = [r for r in meta.get("ownerReferences") or [] if not collisions.is_cos_ref(r, name, uid)]
    cluster.merge_patch(str(live.get("apiVersion")), str(live.get("kind")), meta["name"], meta.get("namespace"),
                        {"metadata": {"ownerReferences": remaining or None}},
                        resource_version=meta.get("resourceVersion"))


def teardown(cluster: Cluster, phases: Sequence[Sequence[Obj]], *, cos_name: str, cos_uid: str) -> TeardownProgress:
    """Advance the teardown as far as possible without waiting; ``done`` when every phase is gone."""
    progress = TeardownProgress(done=False)
    for manifests in reversed(phases):
        deleted: list[Obj] = []
        for manifest in manifests:
            try:
                live = read(cluster, manifest)
            except ObjectError as exc:
                if isinstance(exc.cause, UnknownKind):
                    # Its kind is not served: its CRD is gone (typically torn down by this very teardown, a
                    # later phase, whose deletion removed every object of the kind), so nothing of it is left.
                    # Failing here would block the teardown forever; the garbage collector still removes
                    # anything that carries our ownerReference should the kind come back.
                    continue
                raise
            if live is None:
                continue
            meta = live["metadata"]
            what = collisions.describe_object(manifest)
            ctrl = collisions.controller_ref(live)
            if ctrl is not None and collisions.is_cos_ref(ctrl, cos_name, cos_uid):
                if meta.get("deletionTimestamp"):
                    progress.waiting.append(what)
                    continue
                try:
                    cluster.delete(str(live.get("apiVersion")), str(live.get("kind")), meta["name"],
                                   meta.get("namespace"), uid=meta.get("uid"),
                                   resource_version=meta.get("resourceVersion"))
                except NotFound:
                    continue
                except ApiError as exc:
                    raise ObjectError(f"deleting Object {what}: {exc}", exc) from None
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
        for manifest in deleted:   # gone at once unless it has finalizers of its own
            if read(cluster, manifest) is not None:
                progress.waiting.append(collisions.describe_object(manifest))
        if progress.waiting:
            return progress
    progress.done = True
    return progress
