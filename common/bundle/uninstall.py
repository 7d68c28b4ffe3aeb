"""Uninstalling an owner: deleting its revisions, so that the reconciler tears each one down in reverse phase order,
after checking what a bare ``kubectl delete`` cannot know.

Why a module of its own: an uninstall is one ``kubectl delete`` of the owner's revisions, and that deletes the
CustomResourceDefinitions they control, and with them every custom resource of them in the cluster. The CRDs go
last (after the webhooks and the Deployment), so a custom resource with a finalizer its operator would have removed
waits for an operator that is already gone: it holds its CRD's deletion, and with it the uninstall, for ever. So
before anything is deleted, :func:`plan_uninstall` reads:

- the CRDs the owner's revisions control, and whether custom resources of them exist anywhere in the cluster; the
  caller refuses when some do, unless the admin said what happens to them: deleted first, while the operator still
  runs (:func:`delete_custom_resources`), or kept with their CRDs (:func:`kept_phases`: the content of one last
  revision holding only the CRDs, to which the reconciler hands over as for any upgrade, tearing the rest down);
- the Namespaces the revisions control (deleted with everything in them);

and :func:`teardown_findings` checks, by the cluster's RBAC, that each revision's ServiceAccount still exists and
may make the teardown's deletes (:mod:`.permcheck`).

Plain functions over the :class:`~common.cluster.interface.Cluster` protocol; every write is reported as a
:class:`~common.bundle.publish.Action` once the cluster accepted it; waiting and printing belong to
``cosctl uninstall``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from common.bundle.crdcheck import (
    CRDCheckError,
    controller_uid,
    controllers,
    custom_resources,
    list_custom_resources,
    served_kind,
)
from common.bundle.crdsafety import CRD_API_VERSION, is_crd
from common.bundle.permcheck import PermissionCheckError, Teardown, check_teardowns
from common.bundle.phasing import Phase, sort_into_phases
from common.bundle.publish import Action, PublishError, active_revisions, owner_revisions
from common.cluster.interface import ApiError, Cluster, Conflict, NotFound
from common.contract import api
from common.contract.gotext import go_quote
from common.contract.objects import Obj, ObjectRef
from common.contract.serviceaccount import declared

SAMPLE = 3  # custom resources named per CRD in a message (then "and more")
_COS = (api.API_VERSION, api.KIND)


class UninstallError(PublishError):
    """Uninstalling cannot proceed safely, or the cluster could not be read to decide; nothing further was
    written (reported as publish's refusals are)."""


@dataclass(frozen=True, slots=True)
class HeldCRD:
    """A CustomResourceDefinition one of the owner's revisions controls: deleting the revisions deletes it."""

    name: str
    controller: str                  # the revision controlling it
    served: tuple[str, str] | None   # apiVersion and kind of its custom resources (None: it serves none)
    namespaced: bool                 # whether its custom resources live in namespaces
    found: tuple[Obj, ...]           # custom resources of it, at most SAMPLE + 1 (more than SAMPLE: "and more")

    @property
    def in_use(self) -> bool:
        """Custom resources of it exist, or may: one that serves no version cannot be asked, and deleting it
        deletes whatever it stores."""
        return bool(self.found) or self.served is None

    def describe_found(self) -> str:
        """``KokuMetricsConfig koku-metrics/koku-config, ... and more``: which custom resources exist."""
        if self.served is None:
            return "its custom resources cannot be listed (it serves no version); deleting it deletes any it stores"
        names = ", ".join(resource_label(o) for o in self.found[:SAMPLE])
        return names + (" and more" if len(self.found) > SAMPLE else "")


@dataclass(slots=True)
class Plan:
    """What deleting an owner's revisions would do, read from the cluster once."""

    owner: str
    revisions: list[Obj]   # every revision of the owner, oldest first
    active: list[Obj]      # Active and not being deleted: each tears down what it controls when deleted
    deleting: list[Obj]    # being deleted already (an uninstall under way)
    crds: list[HeldCRD] = field(default_factory=list)
    namespaces: dict[str, str] = field(default_factory=dict)   # Namespaces the revisions control: the controller

    @property
    def in_use(self) -> list[HeldCRD]:
        return [c for c in self.crds if c.in_use]

    def being_deleted(self, revision: str) -> bool:
        return any(c["metadata"]["name"] == revision for c in self.deleting)


def orphaning(cos: Obj) -> bool:
    """Whether a revision is being deleted with ``propagationPolicy: Orphan`` (its objects stay)."""
    meta = cos.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and "orphan" in (meta.get("finalizers") or [])


def tearing_down(cos: Obj) -> bool:
    """Whether an Archived revision still holds objects it is tearing down (its teardown finalizer is on)."""
    return ((cos.get("spec") or {}).get("lifecycleState") == api.LIFECYCLE_ARCHIVED
            and api.FINALIZER_TEARDOWN in ((cos.get("metadata") or {}).get("finalizers") or []))


def resource_label(obj: Obj) -> str:
    """``Kind namespace/name`` (``Kind name`` when cluster-scoped) of a custom resource, for messages."""
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"


def plan_uninstall(cluster: Cluster, owner: str, content: Callable[[Obj], list[Phase] | None]) -> Plan:
    """The owner's revisions, the CRDs and Namespaces they control, and which of those CRDs have custom resources.

    Candidates are the CRDs and Namespaces in the content of each revision that may still control something (one
    not torn down yet: Active, or still holding the teardown finalizer), each read by name; when a revision's
    content cannot be read (``content`` answers None: its Secrets are gone), every CRD and Namespace of the cluster
    is listed instead. Who controls an object is then read from the live object (its controller ownerReference):
    that is what the teardown deletes. Raises :class:`UninstallError` when the owner has no revisions or the
    cluster cannot be read."""
    revisions = owner_revisions(cluster, owner)
    if not revisions:
        raise UninstallError(f"owner {owner} has no revisions: nothing to uninstall")
    plan = Plan(owner, revisions, active_revisions(revisions),
                [c for c in revisions if (c.get("metadata") or {}).get("deletionTimestamp")])
    names = controllers(revisions)
    crds, namespaces = _candidates(cluster, revisions, content)
    try:
        for crd in crds:
            controller = names.get(controller_uid(crd) or "")
            if controller is not None:
                name = str(crd["metadata"]["name"])
                found = custom_resources(cluster, name, crd, limit=SAMPLE + 1)
                namespaced = (crd.get("spec") or {}).get("scope") != "Cluster"
                plan.crds.append(HeldCRD(name, controller, served_kind(crd), namespaced, tuple(found)))
    except CRDCheckError as exc:
        raise UninstallError(str(exc)) from None
    plan.namespaces = {str(ns["metadata"]["name"]): names[uid] for ns in namespaces
                       if (uid := controller_uid(ns) or "") in names}
    plan.crds.sort(key=lambda c: c.name)
    return plan


def _candidates(cluster: Cluster, revisions: Sequence[Obj],
                content: Callable[[Obj], list[Phase] | None]) -> tuple[list[Obj], list[Obj]]:
    """The live CRDs and Namespaces the owner's revisions may control (see :func:`plan_uninstall`)."""
    crd_names: set[str] = set()
    namespace_names: set[str] = set()
    for cos in revisions:
        meta = cos.get("metadata") or {}
        if (cos.get("spec") or {}).get("lifecycleState") != api.LIFECYCLE_ACTIVE \
                and api.FINALIZER_TEARDOWN not in (meta.get("finalizers") or []):
            continue   # archived and torn down: it controls nothing any more
        phases = content(cos)
        if phases is None:
            return (_listed(cluster, CRD_API_VERSION, "CustomResourceDefinition"),
                    _listed(cluster, "v1", "Namespace"))
        for obj in (o for p in phases for o in p.objects):
            name = str((obj.get("metadata") or {}).get("name") or "")
            if is_crd(obj):
                crd_names.add(name)
            elif (obj.get("apiVersion"), obj.get("kind")) == ("v1", "Namespace"):
                namespace_names.add(name)
    return ([o for n in sorted(crd_names) if (o := _read(cluster, CRD_API_VERSION, "CustomResourceDefinition", n))],
            [o for n in sorted(namespace_names) if (o := _read(cluster, "v1", "Namespace", n))])


def _read(cluster: Cluster, api_version: str, kind: str, name: str, namespace: str | None = None, *,
          what: str = "") -> Obj | None:
    """The live object, None when the server has none (UnknownKind included: its CRD is gone, and it with it);
    ``what`` names it in the refusal when it cannot be read (default ``Kind name``)."""
    try:
        return cluster.get(api_version, kind, name, namespace)
    except NotFound:
        return None
    except ApiError as exc:
        raise UninstallError(f"could not read {what or f'{kind} {name}'}: {exc.reason}: {exc.message}") from None


def _listed(cluster: Cluster, api_version: str, kind: str) -> list[Obj]:
    try:
        return cluster.list(api_version, kind)
    except ApiError as exc:
        raise UninstallError(f"could not list {kind}s: {exc.reason}: {exc.message}") from None


def conversion_service(crd: Obj) -> str:
    """``NS/NAME`` of the Service a CRD's conversion webhook calls, ``""`` when it converts without one."""
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return ""
    service = ((conversion.get("webhook") or {}).get("clientConfig") or {}).get("service") or {}
    return f"{service.get('namespace')}/{service.get('name')}" if service.get("name") else ""


def teardown_findings(cluster: Cluster, plan: Plan,
                      content: Callable[[Obj], list[Phase] | None]) -> list[tuple[str, str]]:
    """What the preflight permission check finds against tearing the plan's Active revisions down: a ServiceAccount
    a revision names that does not exist, and the rules each one lacks, by the cluster's RBAC, for the deletes and
    releases its teardown makes with its token. An object only one revision holds is counted as deleted; one several
    hold is read live, and counts as deleted by the revision controlling it and released by the others that
    reference it (mid-handover, the newer revision may not have adopted it yet). A revision naming no
    ServiceAccount is torn down with the reconciler's own rights, and one whose content cannot be read cannot be
    judged (the caller says so): neither is checked. Each finding comes with the ServiceAccount (``NS/NAME``) it
    concerns; empty when nothing is missing. Raises :class:`UninstallError` when the RBAC or a shared object cannot
    be read."""
    held = {str(c["metadata"]["name"]): (c, phases) for c in plan.active if (phases := content(c)) is not None}
    objects = {name: {ObjectRef.of(o): o for p in phases for o in p.objects} for name, (_, phases) in held.items()}
    holders = Counter(ref for refs in objects.values() for ref in refs)
    teardowns, released = [], {}
    for name, (cos, _) in held.items():
        account = declared(cos)
        if account is None:
            continue
        uid = str(cos["metadata"].get("uid") or "")
        mine, releasing = [], set()
        for ref, obj in objects[name].items():
            if holders[ref] == 1:
                mine.append(obj)
                continue
            meta = obj.get("metadata") or {}
            live = _read(cluster, str(obj.get("apiVersion")), str(obj.get("kind")), str(meta.get("name") or ""),
                         meta.get("namespace"), what=str(ObjectRef.of(obj)))
            if live is None:
                continue   # nothing to tear down
            if controller_uid(live) == uid:
                mine.append(obj)
            elif any(isinstance(r, dict) and r.get("uid") == uid
                     for r in (live.get("metadata") or {}).get("ownerReferences") or []):
                mine.append(obj)
                releasing.add(ref)
        teardowns.append(Teardown(name, account.namespace, account.name, mine))
        released[name] = releasing
    if not teardowns:
        return []
    try:
        absent, lacking = check_teardowns(cluster, teardowns, released)
    except PermissionCheckError as exc:
        raise UninstallError(f"the permission preflight failed: {exc}; nothing was deleted "
                             "(--preflight-permissions None skips the check)") from None
    found: list[tuple[str, str]] = []
    for who in absent:
        namespace, name = who.split("/", 1)
        users = ", ".join(str(t.revision) for t in teardowns if f"{t.account_namespace}/{t.account_name}" == who)
        found.append((who, f"ServiceAccount {who} does not exist: the reconciler tears ClusterObjectSet {users} "
                           f"down with its token (service account {go_quote(name)} not found in namespace "
                           f"{go_quote(namespace)})"))
    for t in teardowns:
        if lacking.get(t.revision):
            who = f"{t.account_namespace}/{t.account_name}"
            found.append((who, f"ServiceAccount {who} lacks, by the cluster's RBAC, to tear ClusterObjectSet "
                               f"{t.revision} down:\n  " + "\n  ".join(map(str, lacking[t.revision]))))
    return found


@dataclass(slots=True)
class Kept:
    """The content of the revision that keeps the CRDs (``--keep-crds``), and why each Namespace is in it."""

    phases: list[Phase]
    namespaces: dict[str, str]   # name: why it is kept

    @property
    def crds(self) -> list[Obj]:
        return [o for p in self.phases for o in p.objects if is_crd(o)]


def kept_phases(cluster: Cluster, plan: Plan, content: Callable[[Obj], list[Phase] | None]) -> Kept:
    """The content of the revision that keeps the plan's CRDs (``--keep-crds``): each CRD the owner's revisions
    control, as the revision controlling it declares it (what was applied), and each Namespace they control that
    holds custom resources of those CRDs or the ServiceAccount the new revision will be applied with (deleting the
    Namespace would delete them). Raises :class:`UninstallError` when there is no CRD to keep, when one (or a
    Namespace to keep) is controlled by a revision being deleted already (its teardown deletes it whatever is
    published), or when a controlling revision's content cannot be read."""
    if not plan.crds:
        raise UninstallError(f"owner {plan.owner}: its revisions control no CustomResourceDefinition, so there is none "
                             "to keep; uninstall without --keep-crds")
    account = declared(plan.active[-1]) if plan.active else None
    reasons: dict[str, str] = {}
    for namespace in sorted(_namespaces_in_use(cluster, plan, set(plan.namespaces))):
        reasons[namespace] = "custom resources are in it"
    if account is not None and account.namespace in plan.namespaces:
        reasons.setdefault(account.namespace, f"the ServiceAccount {account} the revisions are applied with is in it")
    wanted = [(c.name, c.controller, "crd") for c in plan.crds] + [
        (name, plan.namespaces[name], "ns") for name in sorted(reasons)]
    lost = [f"{'CustomResourceDefinition' if what == 'crd' else 'Namespace'} {name} (controlled by {controller})"
            for name, controller, what in wanted if plan.being_deleted(controller)]
    if lost:
        raise UninstallError(
            f"{', '.join(lost)} cannot be kept: the revision controlling it is being deleted already, and its teardown "
            "deletes it whatever is published now (with every custom resource of a CustomResourceDefinition, "
            "and everything in a Namespace); nothing was written")
    by_name = {str(c["metadata"]["name"]): c for c in plan.revisions}
    objects = []
    for name, controller, what in wanted:
        phases = content(by_name[controller])
        if phases is None:
            raise UninstallError(f"the content of ClusterObjectSet {controller} cannot be read (its object-data "
                                 f"Secrets): what it declares for {name} cannot be known, so it cannot be kept")
        found = next((o for p in phases for o in p.objects
                      if str((o.get("metadata") or {}).get("name")) == name and _is(o, what)), None)
        if found is None:
            raise UninstallError(f"{'CustomResourceDefinition' if what == 'crd' else 'Namespace'} {name} is "
                                 f"controlled by ClusterObjectSet {controller}, whose content does not hold it: it "
                                 "cannot be kept")
        objects.append(found)
    return Kept(sort_into_phases(objects), reasons)


def _is(obj: Obj, what: str) -> bool:
    return is_crd(obj) if what == "crd" else (obj.get("apiVersion"), obj.get("kind")) == ("v1", "Namespace")


def _namespaces_in_use(cluster: Cluster, plan: Plan, namespaces: set[str]) -> set[str]:
    """Which of ``namespaces`` hold custom resources of the plan's namespaced CRDs (one read per CRD and
    namespace)."""
    used: set[str] = set()
    for crd in plan.crds:
        if crd.served is None or not crd.namespaced:
            continue
        for namespace in sorted(namespaces - used):
            try:
                if cluster.list(*crd.served, namespace=namespace, limit=1):
                    used.add(namespace)
            except NotFound:
                break   # not served (any more)
            except ApiError as exc:
                raise UninstallError(f"could not list the custom resources of CustomResourceDefinition {crd.name} "
                                     f"in namespace {namespace}: {exc.reason}: {exc.message}") from None
    return used


def delete_custom_resources(cluster: Cluster, crds: Sequence[HeldCRD], *, dry_run: bool = False,
                            report: Callable[[Action], None] | None = None) -> list[Obj]:
    """Delete every custom resource of ``crds`` (each with its uid as precondition, so one made again under the same
    name since the read is left alone), while the operator still runs to finish them; the objects as read, for the
    caller to wait until they are gone (:func:`remaining`). Raises :class:`UninstallError` when they cannot be
    listed; the cluster's refusal of a delete is raised as it is."""
    deleted = []
    for crd in crds:
        if crd.served is None:
            continue   # cannot be listed, so cannot be deleted one by one: they go with their CRD
        try:
            items = list_custom_resources(cluster, crd.name, crd.served)
        except CRDCheckError as exc:
            raise UninstallError(str(exc)) from None
        for obj in sorted(items, key=resource_label):
            meta = obj["metadata"]
            if not dry_run:
                try:
                    cluster.delete(str(obj.get("apiVersion")), str(obj.get("kind")), str(meta["name"]),
                                   meta.get("namespace"), uid=meta.get("uid"))
                except (NotFound, Conflict):   # gone, or made again since: the next plan sees the new one
                    continue
            deleted.append(obj)
            if report is not None:
                report(Action("delete", str(obj.get("kind")), str(meta["name"]), meta.get("namespace"),
                              f"custom resource of CustomResourceDefinition {crd.name}"))
    return deleted


def remaining(cluster: Cluster, deleted: Sequence[Obj]) -> list[tuple[str, str]]:
    """Which of the ``deleted`` objects the server still shows (the same uid), with what holds each (finalizers),
    as ``(label, holds)``. An object gone, or made again under its name since, is not counted."""
    left = []
    for obj in deleted:
        meta = obj["metadata"]
        try:
            live = cluster.get(str(obj.get("apiVersion")), str(obj.get("kind")), str(meta["name"]),
                               meta.get("namespace"))
        except NotFound:
            continue
        if (live.get("metadata") or {}).get("uid") != meta.get("uid"):
            continue
        finalizers = [str(f) for f in (live.get("metadata") or {}).get("finalizers") or []]
        left.append((resource_label(obj), f"waiting for finalizers: {', '.join(finalizers)}" if finalizers else ""))
    return left


def delete_revisions(cluster: Cluster, revisions: Sequence[Obj], *, dry_run: bool = False,
                     report: Callable[[Action], None] | None = None) -> None:
    """Delete ``revisions``, newest first (the reconciler tears each down in reverse phase order before it lets it
    go), each with its uid as precondition. A revision gone, or made again under its name, meanwhile is skipped."""
    for cos in reversed(revisions):
        name = str(cos["metadata"]["name"])
        if not dry_run:
            try:
                cluster.delete(*_COS, name, uid=cos["metadata"].get("uid"))
            except (NotFound, Conflict):
                continue
        if report is not None:
            report(Action("delete", api.KIND, name, None, "the reconciler tears its objects down in reverse phase "
                                                           "order"))


__all__ = ["SAMPLE", "HeldCRD", "Kept", "Plan", "UninstallError", "conversion_service", "delete_custom_resources",
           "delete_revisions", "kept_phases", "orphaning", "plan_uninstall", "remaining", "resource_label",
           "teardown_findings", "tearing_down"]
