"""The preflight permission check against a cluster: would the ServiceAccount a revision names be allowed every
write the reconciler makes for it (:mod:`.permissions`), by the cluster's RBAC as it is now?

Why a module of its own: the rules are pure (:mod:`.rbac`, :mod:`.permissions`); this is the part that reads the
cluster, as OLM v1's pre-authorizer does: every ClusterRole and ClusterRoleBinding, and the Roles and RoleBindings
of the namespaces the revision writes to, read once (a handful of list requests however large the revision), then
evaluated here. Kinds are resolved by the cluster's discovery, then by the revision's own CRDs (kinds it is about to
serve), then by the built-in table. A read that fails is a :class:`PermissionCheckError` naming what could not be
read, never a verdict.

Only RBAC is consulted, as OLM v1 consults it: a cluster that authorizes through a webhook as well may allow more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from common.bundle.kinds import builtin
from common.bundle.permissions import (
    MissingRule,
    PermissionsError,
    ResourceLookup,
    ResourceType,
    crd_resources,
    missing,
    namespaces_of,
)
from common.bundle.rbac import RBAC_GROUP, Policy, service_account_user
from common.cluster.interface import ApiError, Cluster, NotFound, UnknownKind
from common.contract.objects import GVK, Obj, ObjectRef

_RBAC_VERSION = f"{RBAC_GROUP}/v1"


class PermissionCheckError(Exception):
    """The check could not be made: the cluster's RBAC could not be read, or a kind could not be resolved."""


def cluster_lookup(cluster: Cluster, objects: Sequence[Obj]) -> ResourceLookup:
    """A kind's resource from the cluster's discovery, else the revision's CRDs, else the built-in table."""
    crds = crd_resources(objects)
    cache: dict[tuple[str, str], ResourceType | None] = {}

    def lookup(api_version: str, kind: str) -> ResourceType | None:
        key = (api_version, kind)
        if key not in cache:
            group = GVK.parse(api_version, kind).group
            try:
                cache[key] = ResourceType(group, cluster.resource_name(api_version, kind),
                                          cluster.is_namespaced(api_version, kind))
            except UnknownKind:
                cache[key] = crds.get((group, kind)) or builtin(api_version, kind)
            except ApiError as exc:
                raise PermissionCheckError(f"could not discover kind {kind} in {api_version}: {exc.reason}: "
                                           f"{exc.message}") from None
        return cache[key]

    return lookup


def read_policy(cluster: Cluster, namespaces: set[str]) -> Policy:
    """The cluster's ClusterRoles and ClusterRoleBindings, and the Roles and RoleBindings of ``namespaces``."""
    def listed(kind: str, namespace: str | None = None) -> list[Obj]:
        try:
            return cluster.list(_RBAC_VERSION, kind, namespace)
        except ApiError as exc:
            where = f" in namespace {namespace}" if namespace else ""
            raise PermissionCheckError(f"could not list {kind}s{where}: {exc.reason}: {exc.message}") from None

    def name(obj: Obj) -> str:
        return str((obj.get("metadata") or {}).get("name") or "")

    roles: dict[tuple[str, str], Obj] = {}
    role_bindings: dict[str, list[Obj]] = {}
    for namespace in sorted(namespaces):
        roles.update(((namespace, name(r)), r) for r in listed("Role", namespace))
        role_bindings[namespace] = listed("RoleBinding", namespace)
    return Policy(cluster_roles={name(r): r for r in listed("ClusterRole")},
                  cluster_role_bindings=listed("ClusterRoleBinding"), roles=roles, role_bindings=role_bindings)


@dataclass(frozen=True, slots=True)
class Teardown:
    """An installed revision the new one archives once it succeeds: its objects are then deleted, or released to
    the new revision, with the ServiceAccount it names."""

    revision: str
    account_namespace: str
    account_name: str
    objects: Sequence[Obj]


@dataclass(slots=True)
class Verdict:
    """What the check found: the rules the new revision's ServiceAccount lacks, whether it exists, and the rules
    each revision to be torn down lacks for that (by revision name)."""

    lacking: list[MissingRule] = field(default_factory=list)
    account_exists: bool = True
    teardown: dict[str, list[MissingRule]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.account_exists and not self.lacking and not any(self.teardown.values())


def check_permissions(cluster: Cluster, objects: Sequence[Obj], account_namespace: str, account_name: str,
                      teardowns: Sequence[Teardown] = ()) -> Verdict:
    """What the ServiceAccount lacks for the revision's ``objects``, and what each of ``teardowns`` lacks to tear
    its revision down after it, by the cluster's RBAC now (one snapshot for all)."""
    lookup = cluster_lookup(cluster, objects)
    held = _held(teardowns, lookup)
    everything = [*objects, *(o for kept in held.values() for o in kept)]
    verdict = Verdict(account_exists=_account_exists(cluster, account_namespace, account_name))
    try:
        policy = read_policy(cluster, namespaces_of(everything, lookup))
        verdict.lacking = missing(objects, lookup, policy, service_account_user(account_namespace, account_name))
        kept = {ObjectRef.of(o) for o in objects}   # what the new revision adopts
        for t in teardowns:
            verdict.teardown[t.revision] = _teardown_lacking(t, held[t.revision], kept, lookup, policy)
    except PermissionsError as exc:
        raise PermissionCheckError(str(exc)) from None
    return verdict


def check_teardowns(cluster: Cluster, teardowns: Sequence[Teardown],
                    released: Mapping[str, set[ObjectRef]]) -> tuple[list[str], dict[str, list[MissingRule]]]:
    """What tearing all of ``teardowns`` (an owner's revisions) down at once needs, as an uninstall deletes them:
    the ServiceAccounts among theirs that do not exist (``NS/NAME``; the reconciler cannot tear a revision down
    without its ServiceAccount), and the rules each revision's ServiceAccount lacks (by revision name) to release
    the objects ``released`` names for it (another revision controls them, and deletes them) and to delete the
    rest, by the cluster's RBAC now (one snapshot for all)."""
    lookup = cluster_lookup(cluster, [])
    held = _held(teardowns, lookup)
    absent = [f"{namespace}/{name}" for namespace, name in sorted({(t.account_namespace, t.account_name)
                                                                   for t in teardowns})
              if not _account_exists(cluster, namespace, name)]
    lacking: dict[str, list[MissingRule]] = {}
    try:
        policy = read_policy(cluster, namespaces_of([o for kept in held.values() for o in kept], lookup))
        for t in teardowns:
            lacking[t.revision] = _teardown_lacking(t, held[t.revision], released.get(t.revision, set()), lookup,
                                                    policy)
    except PermissionsError as exc:
        raise PermissionCheckError(str(exc)) from None
    return absent, lacking


def _held(teardowns: Sequence[Teardown], lookup: ResourceLookup) -> dict[str, list[Obj]]:
    """Each revision's objects whose kind is served: one of a kind nobody serves any more went with its CRD, so
    there is nothing to tear down."""
    return {t.revision: [o for o in t.objects if lookup(str(o.get("apiVersion") or ""), str(o.get("kind") or ""))]
            for t in teardowns}


def _account_exists(cluster: Cluster, namespace: str, name: str) -> bool:
    try:
        cluster.get("v1", "ServiceAccount", name, namespace)
    except NotFound:
        return False
    except ApiError as exc:
        raise PermissionCheckError(f"could not read ServiceAccount {namespace}/{name}: {exc.reason}: "
                                   f"{exc.message}") from None
    return True


def _teardown_lacking(t: Teardown, held: Sequence[Obj], kept: set[ObjectRef], lookup: ResourceLookup,
                      policy: Policy) -> list[MissingRule]:
    """What ``t``'s ServiceAccount lacks to delete what it ``held`` that is not ``kept`` by a newer revision and to
    release the rest (a patch of ownerReferences alone, never escalation-checked)."""
    user = service_account_user(t.account_namespace, t.account_name)
    released = [o for o in held if ObjectRef.of(o) in kept]
    deleted = [o for o in held if ObjectRef.of(o) not in kept]
    return sorted([*missing(released, lookup, policy, user, create=False, object_verbs=("patch",), escalation=[]),
                   *missing(deleted, lookup, policy, user, create=False, object_verbs=("delete",), escalation=[])],
                  key=str)
