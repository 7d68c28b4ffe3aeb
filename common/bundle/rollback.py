"""Rolling an owner back to an earlier revision's content, forward: history stays append-only.

A rollback publishes revision latest+1 whose content (phases, objects, collision protection, probes, deadline,
bundle version) is that of revision N, through :func:`~common.bundle.publish.publish_rendered`, the same
crash-safe path (recovery, retention, Secrets, COS, ownerReferences) as any publish. The reconciler then hands
the objects over from the latest revision to the new one and archives the latest, exactly as for an upgrade;
nothing is re-activated or edited in place (an Archived COS can never be un-archived anyway).

The target's content must still be readable: a revision deleted by retention, or one whose Secrets are gone,
cannot be restored, and the error names what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from common.bundle.contents import ContentUnavailable, cluster_reader, resolve_phases
from common.bundle.crdsafety import ENFORCEMENT_STRICT
from common.bundle.packing import DEFAULT_OWNER_KIND, Packed, pack
from common.bundle.publish import (
    PROVENANCE_ANNOTATIONS,
    SOURCE_ANNOTATIONS,
    Action,
    PublishError,
    Result,
    content_of,
    owner_revisions,
    publish_rendered,
    revision_of,
)
from common.cluster.interface import Cluster
from common.contract import api
from common.contract.conditions import outcome, succeeded
from common.contract.objects import Obj
from common.contract.serviceaccount import ServiceAccountRef

_ENTRY_FIELDS = ("collisionProtection",)


class RollbackError(PublishError):
    """The rollback target does not exist or cannot be restored; nothing was written."""


def choose_target(revisions: Sequence[Obj], owner: str, to_revision: int | None) -> Obj:
    """Revision ``to_revision``, or by default the newest revision before the latest that succeeded.

    Except when the latest is still rolling out (no outcome yet: not succeeded, blocked, past its deadline or
    archived) and holds the content of an earlier revision that succeeded: it is then a rollback to that
    revision, under way or interrupted part-way (the command failed or was killed after creating it), and the
    default target stays that revision. Rerunning a rollback finishes it (``unchanged``, repairing what the
    interrupted run left) instead of going back to the revision it rolled back from, which may have succeeded
    too. Once such a revision failed, the default is the usual one again. ``--to-revision`` names any revision."""
    if not revisions:
        raise RollbackError(f"owner {owner} has no revisions")
    latest = revisions[-1]
    present = ", ".join(str(revision_of(c)) for c in revisions)
    if to_revision is None:
        if outcome(latest) is None:
            content = content_of(latest.get("spec") or {})
            twins = [c for c in revisions[:-1] if succeeded(c) and content_of(c.get("spec") or {}) == content]
            if twins:
                return twins[-1]
        earlier = [c for c in revisions if revision_of(c) < revision_of(latest) and succeeded(c)]
        if not earlier:
            raise RollbackError(f"owner {owner} has no earlier revision that succeeded to roll back to "
                                f"(revisions on the cluster: {present}); name one with --to-revision")
        return earlier[-1]
    for cos in revisions:
        if revision_of(cos) == to_revision:
            if cos is latest:
                raise RollbackError(f"revision {to_revision} ({cos['metadata']['name']}) is already the latest "
                                    f"revision of owner {owner}")
            return cos
    raise RollbackError(f"revision {to_revision} of owner {owner} does not exist (any more: retention keeps only "
                        f"the newest archived revisions); revisions on the cluster: {present}")


def rollback(cluster: Cluster, *, owner: str, to_revision: int | None = None,
             system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE, service_account: ServiceAccountRef | None = None,
             dry_run: bool = False, announce: Callable[[Obj], None] | None = None,
             report: Callable[[Action], None] | None = None,
             crd_upgrade_safety: str = ENFORCEMENT_STRICT,
             preflight_permissions: str = ENFORCEMENT_STRICT) -> tuple[Obj, Result]:
    """Publish the content of ``to_revision`` (default: the previous revision that succeeded) as the owner's
    next revision. Returns the target and the publish result (``unchanged`` when the latest Active revision
    already has that content). The new revision is applied with ``service_account``, by default the latest
    revision's: the identity the owner is installed with now, not the one it had at revision N. ``announce``
    hears the target once chosen, before any write; ``report`` each write as it is made. The CRD upgrade
    safety check applies as to any publish (``crd_upgrade_safety``): going back to an older CRD can drop fields
    that custom resources created since have set; so does the permission preflight (``preflight_permissions``)."""
    revisions = owner_revisions(cluster, owner)
    target = choose_target(revisions, owner, to_revision)
    try:
        phases = resolve_phases(target, cluster_reader(cluster), system_namespace=system_namespace)
    except ContentUnavailable as exc:
        raise RollbackError(f"cannot roll back to revision {revision_of(target)}: " + str(exc)) from None
    if announce is not None:
        announce(target)
    spec = target.get("spec") or {}
    meta = target.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}

    def render(name: str, revision: int) -> Packed:
        packed = pack(phases, name=name, revision=revision, system_namespace=system_namespace, owner=owner,
                      owner_kind=labels.get(api.LABEL_OWNER_KIND) or DEFAULT_OWNER_KIND,
                      collision_protection=spec.get("collisionProtection") or api.COLLISION_PREVENT,
                      progress_deadline_minutes=spec.get("progressDeadlineMinutes"),
                      progression_probes=spec.get("progressionProbes"),
                      annotations={k: v for k in (*PROVENANCE_ANNOTATIONS, *SOURCE_ANNOTATIONS)
                                   if isinstance(v := annotations.get(k), str)})
        _copy_entry_fields(spec, packed.cos["spec"])
        return packed

    return target, publish_rendered(cluster, render, owner=owner, system_namespace=system_namespace,
                                    dry_run=dry_run, revisions=revisions, service_account=service_account,
                                    report=report, crd_upgrade_safety=crd_upgrade_safety,
                                    preflight_permissions=preflight_permissions)


def _copy_entry_fields(source: Obj, spec: Obj) -> None:
    """Per-phase and per-object ``collisionProtection`` of the target, which ``pack`` never sets itself."""
    for old, new in zip(source.get("phases") or [], spec.get("phases") or [], strict=True):
        for key in _ENTRY_FIELDS:
            if key in old:
                new[key] = old[key]
        for old_entry, new_entry in zip(old.get("objects") or [], new.get("objects") or [], strict=True):
            for key in _ENTRY_FIELDS:
                if key in old_entry:
                    new_entry[key] = old_entry[key]
