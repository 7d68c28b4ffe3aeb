"""Publishing revisions to a cluster, crash-safely, and cleaning up after crashes (``producer.md`` section 3).

The sequence is ordered so that a crash at any point leaves something recovery can finish or undo, and never
a COS pointing at missing data:

1. create every Secret (names are content addresses, so ``AlreadyExists`` with the same content is success);
2. create the COS (its refs now all resolve);
3. patch the COS as controller ownerReference onto each Secret, so deleting the COS garbage-collects them.

Recovery, run first by every publish and on its own by ``cosctl gc``: Secrets whose COS does not exist
(a crash after step 1) are deleted; Secrets of an existing COS without its ownerReference (a crash after step
2) get it. Retention then deletes Archived revisions of the owner beyond the newest five.

Deciding whether a new revision is needed compares *content*, not names: ref keys are SHA-256 content
addresses, so the latest revision's refs (or inline objects, hashed the same way) are compared key by key with
what would be packed now. Equal content only updates the mutable fields in place.

The ServiceAccount a revision is applied with (annotations ``olm.operatorframework.io/service-account-name``
and ``-namespace``) is kept across revisions: a publish that names none gives the new revision the latest
revision's, and one that names another updates the latest revision in place when its content is unchanged (as
OLM v1 does when a ClusterExtension's ``spec.serviceAccount`` changes). It is never removed by a publish.

Races with another publisher or a ``cosctl gc`` of the same owner are part of the design: recovery cannot tell
a crashed publish's Secrets from those of a publish still between steps 1 and 2, so it may delete them; the
publish then makes them again, owned from the start, once its COS exists (step 3 finds them gone). Recovery only
deletes with the resourceVersion it read, so a Secret a publish adopted or made again since is left alone, and it
only adopts Secrets the COS refers to: one left by a publish of other content that lost the race for that
revision name is deleted, not kept alive by a COS that never uses it. It deletes only within one owner's
Secrets: ``cosctl gc`` over every owner adds ownerReferences and deletes nothing, since ``kubectl create`` of
``cosctl pack`` output makes its Secrets before its COS and nothing would make them again.

Everything here talks to the ``common.cluster.interface.Cluster`` protocol; every write is recorded as an
:class:`Action` once the cluster accepted it (an :class:`ActionLog` passes each on as it is recorded, so a run
that fails part-way has already told its reader what it wrote), and ``dry_run`` records the same actions without
writing.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from common.bundle.contents import ContentUnavailable, cluster_reader, documents_reader, resolve_phases
from common.bundle.crdcheck import CRDCheckError, controllers, dropped_crds_in_use, unsafe_crd_upgrades
from common.bundle.crdsafety import ENFORCEMENT_NONE, ENFORCEMENT_STRICT
from common.bundle.packing import DEFAULT_OWNER_KIND, Packed, pack, stored_bytes
from common.bundle.permcheck import PermissionCheckError, Teardown, check_permissions
from common.bundle.phasing import Phase
from common.cluster.interface import AlreadyExists, Cluster, Conflict, NotFound
from common.contract import api
from common.contract.gotext import go_quote
from common.contract.objectdata import content_key
from common.contract.objects import Obj
from common.contract.serviceaccount import ServiceAccountRef, declared, with_service_account

RETAIN_ARCHIVED = 5
_SECRET = ("v1", "Secret")
_COS = (api.API_VERSION, api.KIND)
_MUTABLE_SPEC = ("progressDeadlineMinutes", "progressionProbes")
# What a revision says about where its content came from: updated in place when the content itself is unchanged,
# and carried to the new revision by a rollback, which restores that content.
PROVENANCE_ANNOTATIONS = (api.ANNOTATION_BUNDLE_VERSION, api.ANNOTATION_PACKAGE_NAME, api.ANNOTATION_BUNDLE_NAME,
                          api.ANNOTATION_BUNDLE_OPTIONS, api.ANNOTATION_BUNDLE_REFERENCE, api.ANNOTATION_OLM_PROPERTIES)
# How the bundle was chosen (publish --package): set in place when the publish names it, never removed by one that
# does not (the same content published by path is still the content that was resolved, and the next --package run
# must keep its bounds), and carried to the new revision by a rollback, with the content it restores.
SOURCE_ANNOTATIONS = (api.ANNOTATION_BUNDLE_SOURCE,)
# set in place when the publish names them; never removed (a revision must not lose its identity silently)
_IDENTITY_ANNOTATIONS = (api.ANNOTATION_SERVICE_ACCOUNT_NAME, api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE)


class PublishError(Exception):
    """Publishing cannot proceed safely; nothing further was written."""


@dataclass(frozen=True, slots=True)
class Action:
    """One write publish performed (or, in a dry run, would perform)."""

    verb: str  # create | patch | delete
    kind: str
    name: str
    namespace: str | None = None
    detail: str = ""

    def __str__(self) -> str:
        target = f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"
        return f"{self.verb} {target}" + (f": {self.detail}" if self.detail else "")


class ActionLog(list[Action]):
    """The writes of one run, in the order the cluster accepted them (in a dry run: would be asked).

    ``report`` hears each action as it is recorded, that is right after its write succeeded: a command prints
    them as they happen, so when a later request fails (or the process is killed) the reader has already seen
    what exists on the cluster, and that rerunning the same command finishes it."""

    def __init__(self, report: Callable[[Action], None] | None = None) -> None:
        super().__init__()
        self._report = report

    def append(self, action: Action) -> None:
        super().append(action)
        if self._report is not None:
            self._report(action)

    def extend(self, actions: Iterable[Action]) -> None:
        for action in actions:
            self.append(action)

    def __iadd__(self, actions: Iterable[Action]) -> ActionLog:  # type: ignore[override, misc]
        self.extend(actions)
        return self


@dataclass(slots=True)
class Result:
    """What publish decided (``created`` / ``unchanged`` / ``updated``) and every write it made."""

    outcome: str
    name: str
    revision: int
    actions: list[Action] = field(default_factory=list)
    dry_run: bool = False

    def summary(self) -> str:
        would = "would be " if self.dry_run else ""
        if self.outcome == "created":
            return f"ClusterObjectSet {self.name} (revision {self.revision}) {would}created"
        if self.outcome == "updated":
            return (f"unchanged content: ClusterObjectSet {self.name} (revision {self.revision}) "
                    f"{would}updated in place (mutable fields only)")
        return f"unchanged: ClusterObjectSet {self.name} (revision {self.revision}) already has this content"


# ------------------------------------------------------------------------------------------------ reading

def revision_of(cos: Obj) -> int:
    value = (cos.get("spec") or {}).get("revision")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def owner_revisions(cluster: Cluster, owner: str) -> list[Obj]:
    """The owner's COSs (by the owner-name label), oldest revision first."""
    items = cluster.list(*_COS, label_selector=f"{api.LABEL_OWNER_NAME}={owner}")
    return sorted(items, key=lambda c: (revision_of(c), c["metadata"]["name"]))


def _entry_key(entry: Obj) -> tuple[str, Any]:
    """The content address of one ``phases[].objects[]`` entry, the same for a ref and an inline object."""
    ref = entry.get("ref")
    if isinstance(ref, dict):
        return "key", ref.get("key")
    if isinstance(entry.get("object"), dict):
        try:
            return "key", content_key(stored_bytes(entry["object"]))
        except ValueError:  # not representable / too large: can only equal itself
            return "object", repr(entry["object"])
    return "invalid", repr(entry)


def content_of(spec: Obj) -> tuple[Any, ...]:
    """What makes two revisions the same: phases (names, collision protection, objects by content address)
    and the COS-level collision protection. Names of Secrets differ across revisions and do not count."""
    phases = tuple(
        (p.get("name"), p.get("collisionProtection"),
         tuple((_entry_key(o), o.get("collisionProtection")) for o in (p.get("objects") or [])))
        for p in (spec.get("phases") or [])
    )
    return spec.get("collisionProtection") or api.COLLISION_PREVENT, phases


def _mutable_patch(live: Obj, desired: Obj) -> Obj:
    """The merge patch that makes the live COS's mutable fields what ``desired`` declares (empty: none)."""
    patch: Obj = {}
    live_spec, want_spec = live.get("spec") or {}, desired.get("spec") or {}
    for key in _MUTABLE_SPEC:
        if live_spec.get(key) != want_spec.get(key):
            patch.setdefault("spec", {})[key] = want_spec.get(key)
    live_ann = (live.get("metadata") or {}).get("annotations") or {}
    want_ann = (desired.get("metadata") or {}).get("annotations") or {}
    for key in PROVENANCE_ANNOTATIONS:
        if live_ann.get(key) != want_ann.get(key):
            patch.setdefault("metadata", {}).setdefault("annotations", {})[key] = want_ann.get(key)
    for key in (*_IDENTITY_ANNOTATIONS, *SOURCE_ANNOTATIONS):
        if key in want_ann and live_ann.get(key) != want_ann[key]:
            patch.setdefault("metadata", {}).setdefault("annotations", {})[key] = want_ann[key]
    return patch


# ---------------------------------------------------------------------------------------------- recovery

def _has_owner(secret: Obj, cos: Obj) -> bool:
    uid = cos["metadata"].get("uid")
    return any(r.get("kind") == api.KIND and r.get("apiVersion", "").split("/")[0] == api.GROUP
               and r.get("name") == cos["metadata"]["name"] and r.get("uid") == uid
               for r in (secret.get("metadata") or {}).get("ownerReferences") or [])


def _own(cluster: Cluster, secret: Obj, cos: Obj, actions: list[Action], dry_run: bool) -> None:
    """Make ``cos`` the controller owner of ``secret`` (step 3), replacing a reference to an earlier COS of
    the same name (a stale uid would make garbage collection delete the Secret)."""
    if _has_owner(secret, cos):
        return
    meta = secret["metadata"]
    kept = [r for r in meta.get("ownerReferences") or []
            if not (r.get("kind") == api.KIND and r.get("name") == cos["metadata"]["name"])]
    if not dry_run:
        cluster.merge_patch(*_SECRET, meta["name"], meta.get("namespace"),
                            {"metadata": {"ownerReferences": [*kept, api.owner_reference(cos)]}},
                            resource_version=meta.get("resourceVersion"))
    actions.append(Action("patch", "Secret", meta["name"], meta.get("namespace"),
                          f"ownerReference to ClusterObjectSet {cos['metadata']['name']}"))


def _referenced(cos: Obj, system_namespace: str) -> set[tuple[str, str]]:
    """(namespace, name) of every Secret the COS's refs name (an empty namespace is the system namespace, as
    the reconciler resolves it)."""
    return {(r.get("namespace") or system_namespace, r.get("name") or "") for r in _refs(cos) if isinstance(r, dict)}


def recover(cluster: Cluster, *, namespace: str = api.DEFAULT_SYSTEM_NAMESPACE, owner: str | None = None,
            dry_run: bool = False, actions: list[Action] | None = None) -> list[Action]:
    """Finish or undo interrupted publishes. With ``owner`` (every publish, and ``cosctl gc --owner``), among
    that owner's object-data Secrets: delete those no COS refers to whose COS does not exist, or does not refer
    to them; add the missing ownerReference to those their COS refers to. Without ``owner``, over every
    object-data Secret of ``namespace``, only the ownerReferences are added: a Secret without an owner label
    whose COS does not exist may be ``cosctl pack`` output that ``kubectl create`` is applying at this moment
    (its Secrets come before its COS), and nothing would make it again.

    A Secret another COS refers to is never deleted, nor given its label's COS as controller owner (deleting
    that COS would take it away from the other): that is a hand-made sharing recovery leaves alone. Each delete
    carries the uid and resourceVersion read here: a Secret that a publish adopted or made again since then has
    changed, and is left to it."""
    actions = [] if actions is None else actions
    selector = api.LABEL_REVISION_NAME + (f",{api.LABEL_OWNER_NAME}={owner}" if owner else "")
    secrets = [s for s in cluster.list(*_SECRET, namespace=namespace, label_selector=selector)
               if s.get("type") == api.SECRET_TYPE]
    if not secrets:
        return actions
    coses = cluster.list(*_COS)
    by_name = {c["metadata"]["name"]: c for c in coses}
    users: dict[tuple[str, str], set[str]] = {}
    for each in coses:
        for where in _referenced(each, namespace):
            users.setdefault(where, set()).add(each["metadata"]["name"])
    for secret in sorted(secrets, key=lambda s: s["metadata"]["name"]):
        meta = secret["metadata"]
        revision = (meta.get("labels") or {}).get(api.LABEL_REVISION_NAME, "")
        cos = by_name.get(revision)
        using = users.get((meta.get("namespace") or "", meta["name"]), set())
        if using:
            if using == {revision} and cos is not None:
                if not dry_run:
                    _own_fresh(cluster, secret, cos, actions)
                else:
                    _own(cluster, secret, cos, actions, True)
            continue
        if owner is None:
            continue
        why = ("orphaned: its ClusterObjectSet does not exist" if cos is None else
               f"orphaned: ClusterObjectSet {revision} does not refer to it (left by a publish of other content "
               "for that revision)")
        if not dry_run:
            try:
                cluster.delete(*_SECRET, meta["name"], meta.get("namespace"), uid=meta.get("uid"),
                               resource_version=meta.get("resourceVersion"))
            except (NotFound, Conflict):  # gone already, or adopted / made again by a publish since we read it
                continue
        actions.append(Action("delete", "Secret", meta["name"], meta.get("namespace"), why))
    return actions


def retain(cluster: Cluster, owner: str, *, keep: int = RETAIN_ARCHIVED, dry_run: bool = False,
           revisions: Sequence[Obj] | None = None, actions: list[Action] | None = None) -> list[Action]:
    """Delete the owner's Archived revisions beyond the newest ``keep``; Active ones are never touched.
    Their Secrets follow through garbage collection (they are owned by the COS)."""
    actions = [] if actions is None else actions
    revisions = owner_revisions(cluster, owner) if revisions is None else revisions
    archived = [c for c in revisions if (c.get("spec") or {}).get("lifecycleState") == api.LIFECYCLE_ARCHIVED]
    archived.sort(key=revision_of, reverse=True)
    for cos in archived[keep:]:
        meta = cos["metadata"]
        if meta.get("deletionTimestamp"):
            continue
        if not dry_run:
            try:
                cluster.delete(*_COS, meta["name"], uid=meta.get("uid"), propagation_policy="Background")
            except NotFound:
                continue
        actions.append(Action("delete", api.KIND, meta["name"], None,
                              f"archived revision {revision_of(cos)} beyond the newest {keep}"))
    return actions


# ------------------------------------------------------------------------------------------------ writing

def _same_secret(live: Obj, want: Obj) -> bool:
    return bool(live.get("type") == want["type"] and live.get("data") == want["data"]
                and (live.get("metadata") or {}).get("labels", {}).get(api.LABEL_REVISION_NAME)
                == want["metadata"]["labels"][api.LABEL_REVISION_NAME])


def create_revision(cluster: Cluster, packed: Packed, *, dry_run: bool = False,
                    actions: list[Action] | None = None) -> list[Action]:
    """Steps 1-3 of the crash-safe sequence, each idempotent so a rerun after a crash completes it."""
    actions = [] if actions is None else actions
    present: list[tuple[Obj, Obj]] = []  # (as packed, as read back) for step 3
    made: list[Obj] = []  # what this call created itself (withdrawn if the revision name is taken)
    for secret in packed.secrets:
        meta = secret["metadata"]
        size = sum(len(base64.b64decode(v)) for v in secret["data"].values())
        action = Action("create", "Secret", meta["name"], meta["namespace"],
                        f"{len(secret['data'])} object(s), {size} bytes")
        if dry_run:
            actions.append(action)
            continue
        try:
            live = cluster.create(secret)
            made.append(live)
            actions.append(action)
        except AlreadyExists:
            live = cluster.get(*_SECRET, meta["name"], meta["namespace"])
            if not _same_secret(live, secret):
                _withdraw(cluster, made, None, actions)
                raise PublishError(
                    f"Secret {meta['namespace']}/{meta['name']} already exists with different content or labels; "
                    "its name is a content address, so refusing to use it; recovery does not delete a Secret "
                    "it did not pack: find out what made it, delete it, and publish again") from None
        present.append((secret, live))
    cos = packed.cos
    name = cos["metadata"]["name"]
    phases = cos["spec"]["phases"]
    action = Action("create", api.KIND, name, None,
                    f"revision {cos['spec']['revision']}, {len(phases)} phase(s), "
                    f"{sum(len(p['objects']) for p in phases)} object(s)")
    if dry_run:
        actions.append(action)
        for secret in packed.secrets:
            meta = secret["metadata"]
            actions.append(Action("patch", "Secret", meta["name"], meta["namespace"],
                                  f"ownerReference to ClusterObjectSet {name}"))
        return actions
    try:
        live_cos = cluster.create(cos)
        actions.append(action)
    except AlreadyExists:
        live_cos = cluster.get(*_COS, name)
        if content_of(live_cos.get("spec") or {}) != content_of(cos["spec"]):
            _withdraw(cluster, made, live_cos, actions)
            raise PublishError(f"ClusterObjectSet {name} already exists with different content (another "
                               "publish made it meanwhile); publish again to make the next revision") from None
    for secret, live in present:
        _own_fresh(cluster, live, live_cos, actions, packed=secret)
    return actions


def _withdraw(cluster: Cluster, made: Sequence[Obj], cos: Obj | None, actions: list[Action]) -> None:
    """Delete the Secrets this publish created when it cannot go on: for a revision name another publish took
    first with other content (``cos``; those that revision refers to too are kept), or when one of its names is
    taken by a Secret it cannot use (``cos`` None). Nothing else would ever use them."""
    for secret in made:
        meta = secret["metadata"]
        namespace = meta.get("namespace") or ""
        if cos is not None and (namespace, meta["name"]) in _referenced(cos, namespace):
            continue
        try:
            cluster.delete(*_SECRET, meta["name"], meta.get("namespace"), uid=meta.get("uid"))
        except (NotFound, Conflict):
            continue
        why = (f"ClusterObjectSet {cos['metadata']['name']} was made meanwhile with other content"
               if cos is not None else "this publish cannot go on (below)")
        actions.append(Action("delete", "Secret", meta["name"], meta.get("namespace"), why))


def _own_fresh(cluster: Cluster, secret: Obj, cos: Obj, actions: list[Action], *, packed: Obj | None = None) -> None:
    """Step 3 for one Secret, retrying once from a fresh read when it changed since we saw it. When it is gone
    (a concurrent recovery took it for a crashed publish's leftover before this COS existed) and ``packed``
    holds its content, it is made again, owned by the COS from the start, so the COS never points at nothing."""
    meta = secret["metadata"]
    try:
        try:
            _own(cluster, secret, cos, actions, False)
        except Conflict:
            _own(cluster, cluster.get(*_SECRET, meta["name"], meta.get("namespace")), cos, actions, False)
    except NotFound:
        if packed is None:
            return
        again = copy.deepcopy(packed)
        again["metadata"]["ownerReferences"] = [api.owner_reference(cos)]
        try:
            cluster.create(again)
        except AlreadyExists:  # made again meanwhile by another publish of the same content
            _own_fresh(cluster, cluster.get(*_SECRET, meta["name"], meta.get("namespace")), cos, actions)
            return
        actions.append(Action("create", "Secret", meta["name"], meta.get("namespace"),
                              f"deleted meanwhile (recovery run by another cosctl); made again, owned by "
                              f"ClusterObjectSet {cos['metadata']['name']}"))


def publish(cluster: Cluster, phases: Sequence[Phase], *, owner: str, owner_kind: str | None = None,
            system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE,
            collision_protection: str = api.COLLISION_PREVENT, progress_deadline_minutes: int | None = None,
            bundle_version: str | None = None, progression_probes: list[Obj] | None = None,
            annotations: Mapping[str, str] | None = None, service_account: ServiceAccountRef | None = None,
            dry_run: bool = False, revisions: Sequence[Obj] | None = None,
            report: Callable[[Action], None] | None = None,
            crd_upgrade_safety: str = ENFORCEMENT_STRICT, preflight_permissions: str = ENFORCEMENT_STRICT) -> Result:
    """Make the owner's latest Active revision carry ``phases``: in place when only mutable fields differ,
    otherwise as revision N+1 named ``<owner>-<N+1>``. Recovery runs first, retention before creating.
    ``service_account``: the ServiceAccount the revision is applied with (default: the latest revision's);
    ``revisions`` is the owner's list when the caller already read it (to complete a bundle's options);
    ``report`` hears each write as soon as it is made (:class:`ActionLog`); ``crd_upgrade_safety``: OLM v1's
    CRD upgrade safety preflight before a revision is created (``Strict``) or not (``None``);
    ``preflight_permissions``: whether a new revision naming a ServiceAccount is refused when that ServiceAccount
    may not make every write the reconciler makes for it (``Strict``, :mod:`.permcheck`) or not (``None``)."""

    def render(name: str, revision: int) -> Packed:
        return pack(phases, name=name, revision=revision, system_namespace=system_namespace, owner=owner,
                    owner_kind=owner_kind or DEFAULT_OWNER_KIND, collision_protection=collision_protection,
                    progress_deadline_minutes=progress_deadline_minutes, bundle_version=bundle_version,
                    progression_probes=progression_probes, annotations=annotations)

    return publish_rendered(cluster, render, owner=owner, system_namespace=system_namespace, dry_run=dry_run,
                            service_account=service_account, revisions=revisions, report=report,
                            crd_upgrade_safety=crd_upgrade_safety, preflight_permissions=preflight_permissions)


def publish_rendered(cluster: Cluster, render: Callable[[str, int], Packed], *, owner: str,
                     system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE, dry_run: bool = False,
                     revisions: Sequence[Obj] | None = None,
                     service_account: ServiceAccountRef | None = None,
                     report: Callable[[Action], None] | None = None,
                     crd_upgrade_safety: str = ENFORCEMENT_STRICT,
                     preflight_permissions: str = ENFORCEMENT_STRICT) -> Result:
    """The decision and the crash-safe sequence of :func:`publish` for any rendering: ``render(name, revision)``
    gives the revision's COS and Secrets (``cosctl rollback`` renders an earlier revision's content).
    ``revisions`` is the owner's list when the caller already read it (recovery never changes it).
    ``service_account`` names the ServiceAccount the revision is applied with; by default the latest
    revision's, so an identity once given is kept by every later revision. ``crd_upgrade_safety`` and
    ``preflight_permissions`` as for :func:`publish`."""
    for option, value in (("crd_upgrade_safety", crd_upgrade_safety), ("preflight_permissions", preflight_permissions)):
        if value not in (ENFORCEMENT_STRICT, ENFORCEMENT_NONE):
            raise ValueError(f"{option} must be {ENFORCEMENT_STRICT} or {ENFORCEMENT_NONE}, not {value!r}")
    actions = ActionLog(report)
    recover(cluster, namespace=system_namespace, owner=owner, dry_run=dry_run, actions=actions)
    for attempt in range(_DECISION_ATTEMPTS):
        if attempt:
            revisions = None  # the latest revision changed under us: decide again from a fresh list
        result = _decide_and_write(cluster, render, owner, revisions, service_account, actions, dry_run,
                                   system_namespace, last_attempt=attempt == _DECISION_ATTEMPTS - 1,
                                   crd_upgrade_safety=crd_upgrade_safety,
                                   preflight_permissions=preflight_permissions)
        if result is not None:
            return result
    raise AssertionError("unreachable: the last attempt raises its Conflict")


# How often a publish re-reads and decides again when the revision it was updating in place changed meanwhile
# (the reconciler writes status all the time): its in-place patch carries the resourceVersion it decided on.
_DECISION_ATTEMPTS = 5


def _decide_and_write(cluster: Cluster, render: Callable[[str, int], Packed], owner: str,
                      revisions: Sequence[Obj] | None, service_account: ServiceAccountRef | None,
                      actions: list[Action], dry_run: bool, system_namespace: str, *,
                      last_attempt: bool, crd_upgrade_safety: str, preflight_permissions: str) -> Result | None:
    """One decision of :func:`publish_rendered` and its writes; ``None`` when the latest revision changed
    between the read and the in-place patch (a Conflict), so the caller decides again."""
    revisions = list(owner_revisions(cluster, owner) if revisions is None else revisions)
    latest = revisions[-1] if revisions else None
    number = revision_of(latest) + 1 if latest else 1
    account = service_account or declared(latest)

    def rendered(name: str, revision: int) -> Packed:
        packed = render(name, revision)
        if account is not None:
            with_service_account(packed.cos, account)
        return packed

    packed = rendered(f"{owner}-{number}", number)  # validates names and sizes before any decision
    if (latest is not None and (latest.get("spec") or {}).get("lifecycleState") == api.LIFECYCLE_ACTIVE
            and not (latest.get("metadata") or {}).get("deletionTimestamp")
            and content_of(latest.get("spec") or {}) == content_of(packed.cos["spec"])):
        name = latest["metadata"]["name"]
        _restore_secrets(cluster, latest, rendered(name, revision_of(latest)), actions, dry_run)
        patch = _mutable_patch(latest, packed.cos)
        if not patch:
            return Result("unchanged", name, revision_of(latest), actions, dry_run)
        if (account is not None and account != declared(latest)
                and preflight_permissions == ENFORCEMENT_STRICT):  # the revision changes hands: same check
            content = resolve_phases(packed.cos, documents_reader(packed.secrets), system_namespace=system_namespace)
            _refuse_missing_permissions(cluster, content, account, [], HeldContent(cluster, system_namespace),
                                        target=f"ClusterObjectSet {name}")
        if not dry_run:
            # with the resourceVersion decided on: a revision archived, deleted or made again meanwhile (or only
            # its status written) is a Conflict, and the decision is made again from what is there now
            try:
                cluster.merge_patch(*_COS, name, None, patch,
                                    resource_version=latest["metadata"].get("resourceVersion"))
            except Conflict:
                if last_attempt:
                    raise
                return None
        actions.append(Action("patch", api.KIND, name, None, "mutable fields " + ", ".join(_paths(patch))))
        return Result("updated", name, revision_of(latest), actions, dry_run)
    active = active_revisions(revisions)
    strict = crd_upgrade_safety == ENFORCEMENT_STRICT
    handing_over = bool(active) and active[-1] is latest
    check_account = account is not None and preflight_permissions == ENFORCEMENT_STRICT
    if strict or handing_over or check_account:
        new = resolve_phases(packed.cos, documents_reader(packed.secrets), system_namespace=system_namespace)
        held = HeldContent(cluster, system_namespace)
        if handing_over and latest is not None:
            _refuse_dropping_used_namespaces(latest, held.content(latest), new)
        if strict:
            _refuse_unsafe_crds(cluster, new, active, held)
        if account is not None and check_account:
            _refuse_missing_permissions(cluster, new, account, active, held)
    retain(cluster, owner, dry_run=dry_run, revisions=revisions, actions=actions)
    create_revision(cluster, packed, dry_run=dry_run, actions=actions)
    return Result("created", packed.cos["metadata"]["name"], number, actions, dry_run)


def active_revisions(revisions: Sequence[Obj]) -> list[Obj]:
    """The revisions (oldest first) that a new revision's success archives: Active and not being deleted (a
    revision being deleted goes anyway)."""
    return [c for c in revisions if (c.get("spec") or {}).get("lifecycleState") == api.LIFECYCLE_ACTIVE
            and not (c.get("metadata") or {}).get("deletionTimestamp")]


class HeldContent:
    """The content of the owner's revisions, each read at most once (its Secrets); None when it cannot be read, and
    then nothing can be said of it (the reconciler reports that revision anyway)."""

    def __init__(self, cluster: Cluster, system_namespace: str) -> None:
        self.cluster = cluster
        self.system_namespace = system_namespace
        self._read: dict[str, list[Phase] | None] = {}

    def content(self, cos: Obj) -> list[Phase] | None:
        name = str(cos["metadata"]["name"])
        if name not in self._read:
            try:
                self._read[name] = resolve_phases(cos, cluster_reader(self.cluster),
                                                  system_namespace=self.system_namespace)
            except ContentUnavailable:
                self._read[name] = None
        return self._read[name]


def _refuse_dropping_used_namespaces(latest: Obj, held: list[Phase] | None, new: Sequence[Phase]) -> None:
    """Refuse revision N+1 when the Active revision N holds a Namespace that N+1 does not, while objects of N+1 are
    in it: handing over archives N, archiving deletes what only N held, and deleting a Namespace deletes
    everything in it, N+1's objects included. (A bundle published ``--no-create-namespace`` over one published
    ``--create-namespace``; a rollback to a revision from before the namespace was taken over.)"""
    if held is None:
        return
    used = {str(o["metadata"]["namespace"]) for p in new for o in p.objects
            if isinstance(o.get("metadata"), dict) and o["metadata"].get("namespace")}
    dropped = sorted((_namespaces(held) - _namespaces(new)) & used)
    if dropped:
        name = latest["metadata"]["name"]
        raise PublishError(
            f"ClusterObjectSet {name} holds Namespace {', '.join(dropped)}, which the new revision does not though "
            f"objects of it are in it: archiving {name} would delete the namespace and everything in it, the new "
            "revision's objects included; no revision was created. Keep the Namespace in the revision (for a "
            "bundle: --create-namespace), or put the objects in another namespace")


def _refuse_unsafe_crds(cluster: Cluster, new: Sequence[Phase], active: Sequence[Obj], held: HeldContent) -> None:
    """The CRD upgrade safety check before revision N+1 (or the first) is created (:mod:`.crdcheck`): OLM v1's
    preflight of each CRD it carries against the cluster's, as OLM v1 refuses the install or upgrade, then ours: a
    CRD an Active revision controls that N+1 drops while custom resources of it exist. Content that is unchanged
    is never checked (OLM v1 skips it too); reads only."""
    try:
        failures = unsafe_crd_upgrades(cluster, new)
        in_use = [] if failures else dropped_crds_in_use(
            cluster, [c for c in (held.content(cos) for cos in active) if c is not None], controllers(active), new)
    except CRDCheckError as exc:
        raise PublishError(f"the CRD upgrade safety check failed: {exc}; no revision was created "
                           "(--crd-upgrade-safety None skips the check)") from None
    if failures:
        raise PublishError(
            "the CRD upgrade safety check refused the new revision (no revision was created): its "
            "CustomResourceDefinitions would break custom resources the cluster may already store:\n"
            + "\n".join(failures)
            + "\nPublish again with --crd-upgrade-safety None only if the stored custom resources are known to fit "
              "the new schemas (OLM v1: spec.install.preflight.crdUpgradeSafety.enforcement: None)")
    if in_use:
        raise PublishError(
            f"the new revision drops CustomResourceDefinition {', '.join(map(str, in_use))}: archiving the "
            "revision that controls it would delete the CustomResourceDefinition and, with it, every custom "
            "resource of it; no revision was created. Keep the CustomResourceDefinition in the revision, delete its "
            "custom resources first, or publish with --crd-upgrade-safety None to let them go")


def permission_findings(cluster: Cluster, new: Sequence[Phase], account: ServiceAccountRef,
                        active: Sequence[Obj], content: Callable[[Obj], list[Phase] | None], *,
                        what: str = "the new revision") -> list[str]:
    """What the preflight permission check (:mod:`.permcheck`) finds against revision ``new`` applied with
    ``account``: that the ServiceAccount does not exist, the rules it lacks, by the cluster's RBAC, for every write
    the reconciler makes for the revision with its token (OLM v1's preflight asks the same of a ClusterExtension's
    ServiceAccount), and the rules each of the ``active`` revisions (archived once ``new`` succeeds; ``content``
    reads one, None when it cannot) lacks to delete what ``new`` drops and release what it keeps, since its
    ServiceAccount's RBAC may have been replaced by the new revision's. Empty when nothing is missing; raises
    :class:`PermissionCheckError` when the cluster's RBAC cannot be read. Reads only."""
    objects = [o for p in new for o in p.objects]
    teardowns = []
    for cos in active:
        old_account, held = declared(cos), content(cos)
        if old_account is not None and held is not None:
            teardowns.append(Teardown(str(cos["metadata"]["name"]), old_account.namespace, old_account.name,
                                      [o for p in held for o in p.objects]))
    verdict = check_permissions(cluster, objects, account.namespace, account.name, teardowns)
    found = []
    if not verdict.account_exists:
        found.append(f"ServiceAccount {account} does not exist: the reconciler could not write as it "
                     f"(service account {go_quote(account.name)} not found in namespace {go_quote(account.namespace)})")
    if verdict.lacking:
        found.append(f"ServiceAccount {account} lacks, by the cluster's RBAC, to apply {what}:\n  "
                     + "\n  ".join(map(str, verdict.lacking)))
    for t in teardowns:
        if verdict.teardown.get(t.revision):
            found.append(f"ServiceAccount {t.account_namespace}/{t.account_name} lacks, to tear ClusterObjectSet "
                         f"{t.revision} down once the new revision succeeds (deleting what the new revision drops, "
                         "releasing what it keeps):\n  " + "\n  ".join(map(str, verdict.teardown[t.revision])))
    created = _namespaces(new)
    later = sorted({m.namespace for m in verdict.lacking if m.namespace in created})
    if later:
        found.append(f"Namespace {', '.join(later)} is created by the revision itself: rights in it can only be "
                     f"granted once it exists: {CREATE_FIRST}")
    return found


# How to give rights in a namespace the revision itself creates (for publish's refusal and cosctl rbac's warning).
CREATE_FIRST = ("create the namespace first (a bundle: publish without --create-namespace; manifests: leave the "
                "Namespace out, or publish with --collision-protection IfNoController so the revision adopts it), or "
                "grant the rights with a ClusterRoleBinding")


PERMISSIONS_ADVICE = (
    "`cosctl rbac` prints the RBAC the revision needs (with --keep-installed, also what tearing the installed "
    "revisions down needs); --preflight-permissions None skips the check, for this run only")


def _refuse_missing_permissions(cluster: Cluster, new: Sequence[Phase], account: ServiceAccountRef,
                                active: Sequence[Obj], held: HeldContent, *, target: str = "") -> None:
    """Refuse revision N+1 (or the first) on the preflight's findings (:func:`permission_findings`). ``target``: an
    existing revision whose content is unchanged but whose ServiceAccount the publish changes in place (nothing to
    tear down then)."""
    what, outcome = (target, "it was not changed") if target else ("the new revision", "no revision was created")
    try:
        found = permission_findings(cluster, new, account, active, held.content, what=what)
    except PermissionCheckError as exc:
        raise PublishError(f"the permission preflight for ServiceAccount {account} failed: {exc}; {outcome} "
                           "(--preflight-permissions None skips the check)") from None
    if found:
        raise PublishError("\n".join([f"the permission preflight refused {what} ({outcome}):", *found,
                                      PERMISSIONS_ADVICE]))


def _namespaces(phases: Sequence[Phase]) -> set[str]:
    return {str(o["metadata"]["name"]) for p in phases for o in p.objects
            if o.get("apiVersion") == "v1" and o.get("kind") == "Namespace" and isinstance(o.get("metadata"), dict)}


def _refs(cos: Obj) -> list[Any]:
    return [o.get("ref") for p in (cos.get("spec") or {}).get("phases") or [] for o in p.get("objects") or []]


def _restore_secrets(cluster: Cluster, latest: Obj, packed: Packed, actions: list[Action], dry_run: bool) -> None:
    """Recreate Secrets of the unchanged latest revision that went missing (deleted by hand, or by a concurrent
    publisher's recovery before this COS existed), so republishing repairs a revision instead of calling a
    broken one unchanged. Only possible when the revision was packed exactly like this (same refs): then its
    Secrets are exactly ``packed.secrets``. One list request; no write when nothing is missing."""
    if not packed.secrets or _refs(latest) != _refs(packed.cos):
        return
    name = latest["metadata"]["name"]
    namespace = packed.secrets[0]["metadata"]["namespace"]
    present = {s["metadata"]["name"] for s in cluster.list(
        *_SECRET, namespace=namespace, label_selector=f"{api.LABEL_REVISION_NAME}={name}")}
    missing = [s for s in packed.secrets if s["metadata"]["name"] not in present]
    for secret in missing:
        meta = secret["metadata"]
        action = Action("create", "Secret", meta["name"], meta["namespace"],
                        f"missing Secret of ClusterObjectSet {name}")
        if dry_run:
            actions.append(action)
            continue
        try:
            live = cluster.create(secret)
            actions.append(action)
        except AlreadyExists:
            live = cluster.get(*_SECRET, meta["name"], meta["namespace"])
        _own_fresh(cluster, live, latest, actions, packed=secret)


def _paths(patch: Obj) -> list[str]:
    """The fields a mutable-field patch touches, for the action log."""
    return ([f"spec.{k}" for k in patch.get("spec", {})]
            + [f"metadata.annotations[{k}]" for k in patch.get("metadata", {}).get("annotations", {})])


def gc(cluster: Cluster, *, owner: str | None, namespace: str = api.DEFAULT_SYSTEM_NAMESPACE,
       dry_run: bool = False, report: Callable[[Action], None] | None = None) -> list[Action]:
    """Recovery and retention on their own (``cosctl gc``). With ``owner=None``: recovery over every
    object-data Secret of ``namespace`` (also those ``cosctl pack`` output put there through ``kubectl``, which
    carry no owner-name label and no ownerReference until recovery gives them their COS), and retention for
    every owner named by a COS's owner-name label."""
    actions = ActionLog(report)
    recover(cluster, namespace=namespace, owner=owner, dry_run=dry_run, actions=actions)
    if owner is not None:
        retain(cluster, owner, dry_run=dry_run, actions=actions)
        return actions
    every = cluster.list(*_COS, label_selector=api.LABEL_OWNER_NAME)
    for name in sorted({c["metadata"]["labels"][api.LABEL_OWNER_NAME] for c in every}):
        revisions = sorted((c for c in every if c["metadata"]["labels"][api.LABEL_OWNER_NAME] == name),
                           key=lambda c: (revision_of(c), c["metadata"]["name"]))
        retain(cluster, name, dry_run=dry_run, revisions=revisions, actions=actions)
    return actions
