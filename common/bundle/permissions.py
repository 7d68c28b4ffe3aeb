"""What a ServiceAccount must be allowed for the reconciler to apply a revision with its rights: the check before
publishing (OLM v1's preflight permission check), and the RBAC that grants exactly that.

Why: a revision naming a ServiceAccount is written with that ServiceAccount's token, object by object. A right it
lacks shows up on the cluster as a 403 in the revision's ``Retrying`` condition, one object at a time, phase after
phase; an admin writing a least-privilege ServiceAccount for an operator bundle would learn its needs one refusal
at a time. OLM v1 lists every missing rule before it installs (its ``PreflightPermissions`` pre-authorizer); this
module does the same for what this reconciler does, and can also write the Role and ClusterRole that grant it.

What the reconciler does with the ServiceAccount's token, and so what is needed (reads go through the reconciler's
own caches and need nothing):

- ``create`` on the resource, in each namespace (or cluster-wide) the revision has such objects; Kubernetes
  cannot restrict a create by name;
- ``patch`` (server-side apply, its dry runs, adoption from the previous revision, release at teardown) and
  ``delete`` (teardown) on each object, by name;
- for each Role and ClusterRole of the revision, every permission it grants (the API server's escalation check),
  unless the ServiceAccount may ``escalate`` roles there; a ClusterRole with an ``aggregationRule``, in the revision
  or on the cluster, needs all of them (``*`` on ``*``); for each binding, every permission of the role it binds
  (for an aggregating ClusterRole, what the cluster aggregates into it), unless it may ``bind`` that role, and
  ``bind`` when that role exists nowhere (the API server answers NotFound otherwise).

These were checked against a Kubernetes 1.36 API server: SubjectAccessReviews, and creates, applies and deletes
with a ServiceAccount's real token.

On clusters with the ``OwnerReferencesPermissionEnforcement`` admission plugin (OpenShift enables it) setting an
ownerReference with ``blockOwnerDeletion`` also needs ``update`` on ``clusterobjectsets/finalizers``; the API does
not say whether the plugin is on, so the check does not ask for it and :func:`grant` includes it.

OLM v1 asks for more on every object (``get``, ``update``, and ``list``/``watch`` cluster-wide on every resource,
because its applier reads and updates with the ClusterExtension's ServiceAccount); this check asks, beyond OLM v1's,
for ``bind`` on a role a binding names that exists nowhere (the API server refuses that binding otherwise), for every
right when the cluster's ClusterRole of that name aggregates, and for what tearing the replaced revision down needs.
The list of missing rules reads as OLM v1's (:func:`.rbac.describe_rule`).

Pure functions over plain ``dict`` objects and a :class:`.rbac.Policy`; reading the cluster is the caller's
(:mod:`.permcheck`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from common.bundle.rbac import (
    ALL,
    RBAC_GROUP,
    Attributes,
    Policy,
    PolicyRule,
    User,
    aggregated_rules,
    aggregates,
    allowed,
    as_map,
    compact,
    describe_rule,
    rules_of,
    uncovered,
)
from common.contract import api
from common.contract.objects import GVK, Obj

OBJECT_VERBS = ("patch", "delete")
COLLECTION_VERBS = ("create",)
# OwnerReferencesPermissionEnforcement: blockOwnerDeletion on an ownerReference to the revision
FINALIZERS_RULE = PolicyRule(verbs=("update",), api_groups=(api.GROUP,), resources=("clusterobjectsets/finalizers",))
FULL_AUTHORITY = (PolicyRule(verbs=(ALL,), api_groups=(ALL,), resources=(ALL,)),
                  PolicyRule(verbs=(ALL,), non_resource_urls=(ALL,)))


class PermissionsError(Exception):
    """The revision's needs cannot be told: an object of a kind whose resource is unknown."""


@dataclass(frozen=True, slots=True)
class ResourceType:
    """What RBAC needs to know of a kind: its group, its resource (plural) and whether it is namespaced."""

    group: str
    resource: str
    namespaced: bool


# (api_version, kind) -> its resource type, or None when unknown
ResourceLookup = Callable[[str, str], "ResourceType | None"]


@dataclass(frozen=True, slots=True)
class Target:
    """One object of the revision, as RBAC sees it."""

    type: ResourceType
    name: str
    namespace: str  # "" for cluster-scoped objects


@dataclass(frozen=True, slots=True)
class MissingRule:
    """A rule the ServiceAccount lacks, in a namespace ("" for cluster-wide)."""

    namespace: str
    rule: PolicyRule

    def __str__(self) -> str:
        return describe_rule(self.rule, self.namespace)


def crd_resources(objects: Iterable[Obj]) -> dict[tuple[str, str], ResourceType]:
    """(group, kind) -> resource type of the CustomResourceDefinitions among ``objects``: the kinds a revision
    serves itself, which the cluster may not serve yet."""
    out: dict[tuple[str, str], ResourceType] = {}
    for obj in objects:
        if obj.get("kind") != "CustomResourceDefinition" or GVK.of(obj).group != "apiextensions.k8s.io":
            continue
        spec = as_map(obj.get("spec"))
        names = as_map(spec.get("names"))
        group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
        if isinstance(group, str) and isinstance(kind, str) and isinstance(plural, str) and plural:
            out[(group, kind)] = ResourceType(group, plural, spec.get("scope") != "Cluster")
    return out


def targets(objects: Iterable[Obj], lookup: ResourceLookup) -> list[Target]:
    """The objects as RBAC targets; :class:`PermissionsError` names every object whose kind ``lookup`` does not
    know."""
    out: list[Target] = []
    unknown: list[str] = []
    unplaced: list[str] = []
    for obj in objects:
        api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
        meta = as_map(obj.get("metadata"))
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        kind_type = lookup(api_version, kind)
        if kind_type is None:
            unknown.append(f"{kind}.{api_version} {namespace + '/' if namespace else ''}{name}")
            continue
        if kind_type.namespaced and not namespace:
            unplaced.append(f"{kind}.{api_version} {name}")
            continue
        out.append(Target(kind_type, name, namespace if kind_type.namespaced else ""))
    problems = []
    if unknown:
        problems.append("cannot tell which resource these objects are (the cluster does not serve their kind and "
                        f"the revision has no CustomResourceDefinition for it): {', '.join(unknown)}")
    if unplaced:
        problems.append(f"these objects are of a namespaced kind but name no metadata.namespace (the API server "
                        f"refuses to create them): {', '.join(unplaced)}")
    if problems:
        raise PermissionsError("; ".join(problems))
    return out


def needed_attributes(objects: Sequence[Target], *, create: bool = True,
                      object_verbs: Sequence[str] = OBJECT_VERBS) -> list[Attributes]:
    """Every request the reconciler makes with the ServiceAccount's token for these objects: ``create`` once per
    resource and namespace (unless ``create`` is false: a revision being torn down creates nothing), and
    ``object_verbs`` (``patch`` and ``delete``) per object."""
    out: list[Attributes] = []
    collections: set[tuple[str, str, str]] = set()
    for t in objects:
        key = (t.type.group, t.type.resource, t.namespace)
        if create and key not in collections:
            collections.add(key)
            out += [Attributes(verb, t.type.group, t.type.resource, namespace=t.namespace) for verb in COLLECTION_VERBS]
        out += [Attributes(verb, t.type.group, t.type.resource, name=t.name, namespace=t.namespace)
                for verb in object_verbs]
    return out


def _rbac(objects: Iterable[Obj], kind: str) -> list[Obj]:
    return [o for o in objects if o.get("kind") == kind and GVK.of(o).group == RBAC_GROUP]


def _name_ns(obj: Obj) -> tuple[str, str]:
    meta = as_map(obj.get("metadata"))
    return str(meta.get("name") or ""), str(meta.get("namespace") or "")


def _ref(binding: Obj) -> tuple[str, str]:
    ref = as_map(binding.get("roleRef"))
    return str(ref.get("kind") or ""), str(ref.get("name") or "")


@dataclass(frozen=True, slots=True)
class Bound:
    """The role a binding refers to, as its creation will find it: the rules it grants, whether it is the
    revision's own, whether it exists at all (a binding to a missing role is refused, NotFound, unless its author may
    ``bind`` it), and whether it aggregates (its rules are what the aggregation controller gives it)."""

    rules: list[PolicyRule]
    own: bool
    exists: bool
    aggregating: bool = False


def bound_role(binding: Obj, objects: Sequence[Obj], policy: Policy | None) -> Bound:
    """The role ``binding`` names: the revision's own when it has one (it is applied before its bindings), else the
    cluster's. An aggregating ClusterRole of the revision is given the rules of the ClusterRoles its selectors match
    on the cluster and in the revision (none without ``policy``)."""
    kind, name = _ref(binding)
    _, namespace = _name_ns(binding)
    for role in _rbac(objects, kind):
        role_name, role_ns = _name_ns(role)
        if role_name == name and (kind == "ClusterRole" or role_ns == namespace):
            if kind == "ClusterRole" and aggregates(role):
                others = [*(policy.cluster_roles.values() if policy is not None else ()),
                          *_rbac(objects, "ClusterRole")]
                return Bound(aggregated_rules(role, others), True, True, True)
            return Bound(rules_of(role), True, True)
    live = policy.role(kind, name, namespace) if policy is not None else None
    return Bound(rules_of(live), False, live is not None, aggregates(live))


def _valid(rule: PolicyRule, *, namespaced: bool) -> bool:
    """Whether the API server accepts ``rule`` in a Role (``namespaced``) or ClusterRole: verbs, and either
    resources with API groups or (ClusterRoles only) non-resource URLs alone."""
    if not rule.verbs:
        return False
    if rule.non_resource_urls:
        return not namespaced and not rule.resources and not rule.api_groups
    return bool(rule.resources) and bool(rule.api_groups)


def _without_redundant(rules: list[PolicyRule], held: Sequence[PolicyRule] = ()) -> list[PolicyRule]:
    """``rules`` without those the others (and ``held``: a Role's rules are granted with the ClusterRole's) cover
    entirely, first to last: a bundle's copied ``*`` rule makes the create and patch rules beneath it say nothing
    more, and shorter RBAC is easier to review."""
    kept = list(rules)
    i = 0
    while i < len(kept):
        others = [*kept[:i], *kept[i + 1:], *held]
        if not uncovered(others, [kept[i]]):
            del kept[i]
        else:
            i += 1
    return kept


def missing(objects: Sequence[Obj], lookup: ResourceLookup, policy: Policy, user: User, *, create: bool = True,
            object_verbs: Sequence[str] = OBJECT_VERBS, escalation: Sequence[Obj] | None = None) -> list[MissingRule]:
    """What ``user`` lacks to have the revision's ``objects`` applied and torn down with its rights, compacted and
    sorted as OLM v1 lists it; empty when nothing is missing. ``policy`` must hold the RoleBindings of every
    namespace the objects are in.

    The API server's escalation checks apply to the revision's roles and bindings it creates and applies
    (``escalation``, default all of them): a Role's or ClusterRole's every rule must be held, unless ``escalate``;
    a ClusterRole that aggregates, now on the cluster or in the revision, needs every right; a binding, the rules of
    the role it names, unless ``bind`` on it, and a binding to a role that exists nowhere needs ``bind``. A revision
    that is only torn down (archived once the next one succeeds): ``create=False``, ``escalation=[]`` and
    ``object_verbs`` ``delete`` for what the next one drops, ``patch`` for what it keeps and the old one releases (a
    patch of ``metadata.ownerReferences`` alone, which the API server does not escalation-check)."""
    escalated = objects if escalation is None else escalation
    found: dict[str, list[PolicyRule]] = {}
    rules_in: dict[str, list[PolicyRule]] = {}

    def rules(namespace: str) -> list[PolicyRule]:
        if namespace not in rules_in:
            rules_in[namespace] = policy.rules_for(user, namespace)
        return rules_in[namespace]

    for attrs in needed_attributes(targets(objects, lookup), create=create, object_verbs=object_verbs):
        if not allowed(attrs, rules(attrs.namespace)):
            found.setdefault(attrs.namespace, []).append(attrs.as_rule())
    for kind, resource in (("ClusterRole", "clusterroles"), ("Role", "roles")):
        for role in _rbac(escalated, kind):
            name, namespace = _name_ns(role)
            namespace = namespace if kind == "Role" else ""
            if allowed(Attributes("escalate", RBAC_GROUP, resource, namespace=namespace), rules(namespace)):
                continue
            aggregating = kind == "ClusterRole" and (aggregates(role) or aggregates(policy.cluster_roles.get(name)))
            wanted = list(FULL_AUTHORITY) if aggregating else rules_of(role)
            found.setdefault(namespace, []).extend(uncovered(rules(namespace), wanted))
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in _rbac(escalated, kind):
            ref_kind, ref_name = _ref(binding)
            _, namespace = _name_ns(binding)
            namespace = namespace if kind == "RoleBinding" else ""
            resource = "clusterroles" if ref_kind == "ClusterRole" else "roles"
            bind = Attributes("bind", RBAC_GROUP, resource, name=ref_name, namespace=namespace)
            if allowed(bind, rules(namespace)):
                continue
            bound = bound_role(binding, objects, policy)
            if not bound.exists:
                found.setdefault(namespace, []).append(bind.as_rule())
            else:
                found.setdefault(namespace, []).extend(uncovered(rules(namespace), bound.rules))
    return sorted((MissingRule(ns, rule) for ns, ns_rules in found.items() for rule in compact(ns_rules)),
                  key=str)


def namespaces_of(objects: Iterable[Obj], lookup: ResourceLookup) -> set[str]:
    """The namespaces whose RoleBindings :func:`missing` reads: those of the objects (roles and bindings included)."""
    return {t.namespace for t in targets(objects, lookup) if t.namespace}


# --------------------------------------------------------------------------------------------------- granting


def grant(objects: Sequence[Obj], lookup: ResourceLookup, account_namespace: str, account_name: str, *,
          name: str, teardown: Sequence[Obj] = ()) -> list[Obj]:
    """The RBAC that lets the ServiceAccount have these objects applied and torn down, and nothing the revision does
    not need: a ClusterRole for the cluster-scoped objects and the permissions the revision's ClusterRoles grant,
    a Role in each namespace the revision writes to, each bound to the ServiceAccount under ``name``.

    The revision's own Roles and ClusterRoles are copied rule for rule (the API server lets a ServiceAccount grant
    only what it holds); a binding to a role the revision does not carry is allowed by ``bind`` on that role by
    name, and so is a binding to an aggregating ClusterRole of the revision (whose rules the cluster decides). A
    ClusterRole with an ``aggregationRule`` needs ``escalate`` on ClusterRoles.

    ``teardown``: objects of installed revisions the same ServiceAccount tears down once the new one succeeds
    (``patch`` and ``delete`` by name): without them, replacing the RBAC of the installed revision with the new
    one's would leave the old revision's objects that the new one drops undeletable."""
    cluster_rules: list[PolicyRule] = []
    namespaced: dict[str, list[PolicyRule]] = {}
    creates: dict[tuple[str, str], set[str]] = {}  # (namespace, group) -> resources
    named: dict[tuple[str, str, str], set[str]] = {}  # (namespace, group, resource) -> names
    for t in targets(objects, lookup):
        creates.setdefault((t.namespace, t.type.group), set()).add(t.type.resource)
        named.setdefault((t.namespace, t.type.group, t.type.resource), set()).add(t.name)
    for t in targets(teardown, lookup):
        named.setdefault((t.namespace, t.type.group, t.type.resource), set()).add(t.name)

    def add(namespace: str, rule: PolicyRule) -> None:
        if not _valid(rule, namespaced=bool(namespace)):
            return   # copied from a role the API server refuses anyway; it would make this one refused too
        rules = namespaced.setdefault(namespace, []) if namespace else cluster_rules
        if rule not in rules:
            rules.append(rule)

    for (namespace, group), resources in sorted(creates.items()):
        add(namespace, PolicyRule(COLLECTION_VERBS, (group,), tuple(sorted(resources))))
    for (namespace, group, resource), names in sorted(named.items()):
        add(namespace, PolicyRule(tuple(sorted(OBJECT_VERBS)), (group,), (resource,), tuple(sorted(names))))
    add("", FINALIZERS_RULE)
    for role in _rbac(objects, "ClusterRole"):
        if aggregates(role):
            add("", PolicyRule(("escalate",), (RBAC_GROUP,), ("clusterroles",)))
        for rule in rules_of(role):
            add("", rule)
    for role in _rbac(objects, "Role"):
        _, namespace = _name_ns(role)
        for rule in rules_of(role):
            add(namespace, rule)
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in _rbac(objects, kind):
            bound = bound_role(binding, objects, None)
            if bound.own and not bound.aggregating:
                continue   # its rules are copied above
            ref_kind, ref_name = _ref(binding)
            _, namespace = _name_ns(binding)
            resource = "clusterroles" if ref_kind == "ClusterRole" else "roles"
            add(namespace if kind == "RoleBinding" else "",
                PolicyRule(("bind",), (RBAC_GROUP,), (resource,), (ref_name,)))

    cluster_rules = _without_redundant(cluster_rules)
    namespaced = {ns: _without_redundant(rules, cluster_rules) for ns, rules in namespaced.items()}
    subject = {"kind": "ServiceAccount", "name": account_name, "namespace": account_namespace}
    rbac_version = f"{RBAC_GROUP}/v1"
    out: list[Obj] = [
        {"apiVersion": rbac_version, "kind": "ClusterRole", "metadata": {"name": name},
         "rules": [r.to_obj() for r in cluster_rules]},
        {"apiVersion": rbac_version, "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name}, "subjects": [subject]},
    ]
    for namespace in sorted(namespaced):
        out += [
            {"apiVersion": rbac_version, "kind": "Role", "metadata": {"name": name, "namespace": namespace},
             "rules": [r.to_obj() for r in namespaced[namespace]]},
            {"apiVersion": rbac_version, "kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
             "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name}, "subjects": [subject]},
        ]
    return out
