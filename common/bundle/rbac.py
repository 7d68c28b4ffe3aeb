"""Kubernetes RBAC as the API server evaluates it: which rules reach a user in a namespace, whether a rule allows
a request, whether one set of rules covers another (the escalation check), and the compact form OLM v1 lists
missing rules in.

Why a module of its own: a revision applied with a ServiceAccount's rights fails on the cluster, object by object,
where that ServiceAccount may not write, and the preflight (:mod:`.permissions`) must say before publishing what the
API server would refuse. That needs RBAC's own semantics, not an approximation: ``*`` only matches a rule's ``*``,
``*/scale`` covers every resource's ``scale`` subresource, ``resourceNames`` restrict only requests that name an
object, a ServiceAccount subject without a namespace means the binding's, and creating a Role requires holding
every permission it grants (or ``escalate``). These are Kubernetes' ``plugin/pkg/auth/authorizer/rbac`` (``RuleAllows``,
``appliesTo``), ``pkg/registry/rbac/validation`` (``VisitRulesFor``, ``Covers``, ``BreakdownRule``,
``CompactRules``) and ``pkg/apis/rbac/v1`` (``VerbMatches`` and its siblings), rule for rule; OLM v1's preflight
(``internal/operator-controller/authorization``) evaluates with the same code.

Pure functions over plain ``dict`` objects and a snapshot of the cluster's RBAC objects (:class:`Policy`); reading
them is the caller's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from common.contract.objects import Obj

RBAC_GROUP = "rbac.authorization.k8s.io"
ALL = "*"


def as_map(value: object) -> Obj:
    """``value`` when it is a mapping, else an empty one: manifests are read defensively, a bad field is the API
    server's to refuse."""
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One rule of a Role or ClusterRole (``rbac/v1`` PolicyRule); empty tuples where the field is absent."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_obj(cls, rule: object) -> PolicyRule:
        """A rule as a manifest or the API server spells it; what is not a list of strings counts as absent (the API
        server refuses such a Role before it could grant anything)."""
        data = as_map(rule)

        def strings(key: str) -> tuple[str, ...]:
            value = data.get(key)
            return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

        return cls(strings("verbs"), strings("apiGroups"), strings("resources"), strings("resourceNames"),
                   strings("nonResourceURLs"))

    def to_obj(self) -> Obj:
        """The rule as a manifest spells it (absent fields left out)."""
        out: Obj = {}
        if self.api_groups or self.resources:
            out["apiGroups"] = list(self.api_groups)
            out["resources"] = list(self.resources)
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        out["verbs"] = list(self.verbs)
        return out


@dataclass(frozen=True, slots=True)
class Attributes:
    """One request as the authorizer sees it (``authorizer.AttributesRecord``): a resource request, or a
    non-resource one when ``path`` is set."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    path: str = ""

    @property
    def resource_request(self) -> bool:
        return not self.path

    def as_rule(self) -> PolicyRule:
        """The smallest rule that allows this request (OLM v1's ``policyRuleFromAttributesRecord``)."""
        if not self.resource_request:
            return PolicyRule(verbs=(self.verb,), non_resource_urls=(self.path,))
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return PolicyRule(verbs=(self.verb,), api_groups=(self.group,), resources=(resource,),
                          resource_names=(self.name,) if self.name else ())


@dataclass(frozen=True, slots=True)
class User:
    """Who asks: a user name and its groups (a ServiceAccount's token carries three, :func:`service_account_user`)."""

    name: str
    groups: tuple[str, ...] = ()


def service_account_user(namespace: str, name: str) -> User:
    """The user a ServiceAccount's token authenticates as, with the groups the API server gives every such token."""
    return User(f"system:serviceaccount:{namespace}:{name}",
                ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"))


# --------------------------------------------------------------------------------------------------- matching


def rule_allows(attrs: Attributes, rule: PolicyRule) -> bool:
    """Whether ``rule`` allows the request (the RBAC authorizer's ``RuleAllows``)."""
    if not _has_or_all(rule.verbs, attrs.verb):
        return False
    if not attrs.resource_request:
        return any(u in (ALL, attrs.path) or (u.endswith(ALL) and attrs.path.startswith(u.rstrip(ALL)))
                   for u in rule.non_resource_urls)
    if not _has_or_all(rule.api_groups, attrs.group):
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not any(r in (ALL, combined)
               or (attrs.subresource and len(r) == len(attrs.subresource) + 2 and r.startswith("*/")
                   and r.endswith(attrs.subresource))
               for r in rule.resources):
        return False
    return not rule.resource_names or attrs.name in rule.resource_names


def _has_or_all(values: Sequence[str], wanted: str) -> bool:
    return ALL in values or wanted in values


def allowed(attrs: Attributes, rules: Iterable[PolicyRule]) -> bool:
    return any(rule_allows(attrs, rule) for rule in rules)


# --------------------------------------------------------------------------------------------------- coverage


def breakdown(rule: PolicyRule) -> list[PolicyRule]:
    """``rule`` as rules of one verb, one group, one resource and at most one name (``BreakdownRule``)."""
    out = [PolicyRule(verbs=(verb,), api_groups=(group,), resources=(resource,),
                      resource_names=(name,) if name else ())
           for group in rule.api_groups for resource in rule.resources
           for name in (rule.resource_names or ("",)) for verb in rule.verbs]
    out += [PolicyRule(verbs=(verb,), non_resource_urls=(url,))
            for url in rule.non_resource_urls for verb in rule.verbs]
    return out


def _covers(owner: PolicyRule, sub: PolicyRule) -> bool:
    """``ruleCovers``: the owner rule grants everything the (broken down) sub rule does."""
    if not (ALL in owner.verbs or set(sub.verbs) <= set(owner.verbs)):
        return False
    if not (ALL in owner.api_groups or set(sub.api_groups) <= set(owner.api_groups)):
        return False
    if not _resources_cover(owner.resources, sub.resources):
        return False
    if not all(any(o == u or (o.endswith(ALL) and u.startswith(o.rstrip(ALL))) for o in owner.non_resource_urls)
               for u in sub.non_resource_urls):
        return False
    if not sub.resource_names:
        return not owner.resource_names
    return not owner.resource_names or set(sub.resource_names) <= set(owner.resource_names)


def _resources_cover(owner: Sequence[str], wanted: Sequence[str]) -> bool:
    if ALL in owner or set(wanted) <= set(owner):
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def uncovered(owner: Sequence[PolicyRule], wanted: Iterable[PolicyRule]) -> list[PolicyRule]:
    """The parts of ``wanted`` (broken down) that no rule of ``owner`` covers (``Covers``' missing rights): what
    the API server's escalation check reports when someone without ``escalate`` creates a Role granting them."""
    return [sub for rule in wanted for sub in breakdown(rule) if not any(_covers(o, sub) for o in owner)]


def compact(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """``CompactRules`` and OLM v1's verb de-duplication: rules of one group, one resource and at most one name
    merged into one with all their verbs (sorted, or only ``*``); other rules as they are; sorted by their
    description, the order OLM v1's message lists them in."""
    merged: dict[tuple[str, str, str], set[str]] = {}
    others: list[PolicyRule] = []
    for rule in rules:
        simple = (len(rule.api_groups) == 1 and len(rule.resources) == 1 and len(rule.resource_names) <= 1
                  and not rule.non_resource_urls)
        if simple:
            key = (rule.api_groups[0], rule.resources[0], rule.resource_names[0] if rule.resource_names else "")
            merged.setdefault(key, set()).update(rule.verbs)
        else:
            others.append(rule)
    out = [PolicyRule(verbs=_verbs(verbs), api_groups=(group,), resources=(resource,),
                      resource_names=(name,) if name else ()) for (group, resource, name), verbs in merged.items()]
    out += [PolicyRule(_verbs(set(r.verbs)), r.api_groups, r.resources, r.resource_names, r.non_resource_urls)
            for r in others]
    return sorted(set(out), key=describe_rule)


def _verbs(verbs: set[str]) -> tuple[str, ...]:
    return (ALL,) if ALL in verbs else tuple(sorted(verbs))


def describe_rule(rule: PolicyRule, namespace: str = "") -> str:
    """A rule as OLM v1's preflight lists it: ``Namespace:"ns" APIGroups:[...] Resources:[...] ResourceNames:[...]
    Verbs:[...] NonResourceURLs:[...]``, values sorted, absent fields left out."""
    parts = [f'Namespace:"{namespace}"']
    for label, values in (("APIGroups", rule.api_groups), ("Resources", rule.resources),
                          ("ResourceNames", rule.resource_names), ("Verbs", rule.verbs),
                          ("NonResourceURLs", rule.non_resource_urls)):
        if values:
            parts.append(f"{label}:[{','.join(sorted(values))}]")
    return " ".join(parts)


# --------------------------------------------------------------------------------------------------- resolution


@dataclass(slots=True)
class Policy:
    """A snapshot of the cluster's RBAC objects: every ClusterRole and ClusterRoleBinding, and the Roles and
    RoleBindings of the namespaces read (``namespaces``). A namespace not read has no RoleBindings here, so ask
    only about namespaces that were."""

    cluster_roles: Mapping[str, Obj] = field(default_factory=dict)
    cluster_role_bindings: Sequence[Obj] = ()
    roles: Mapping[tuple[str, str], Obj] = field(default_factory=dict)  # (namespace, name)
    role_bindings: Mapping[str, Sequence[Obj]] = field(default_factory=dict)  # namespace -> bindings

    def role(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """The Role of ``namespace`` or the ClusterRole a roleRef names, or None when there is none."""
        if kind == "ClusterRole":
            return self.cluster_roles.get(name)
        return self.roles.get((namespace, name)) if kind == "Role" else None

    def role_rules(self, kind: str, name: str, namespace: str = "") -> list[PolicyRule]:
        """The rules of a roleRef (``GetRoleReferenceRules``): a ClusterRole's, or a Role of ``namespace``; none
        when it does not exist (a binding to a missing role grants nothing)."""
        return rules_of(self.role(kind, name, namespace))

    def rules_for(self, user: User, namespace: str = "") -> list[PolicyRule]:
        """Every rule that reaches ``user`` in ``namespace`` (``""``: cluster-wide only), as ``VisitRulesFor`` walks
        them: ClusterRoleBindings, then the namespace's RoleBindings."""
        rules: list[PolicyRule] = []
        for binding in self.cluster_role_bindings:
            if _applies_to(user, binding, ""):
                ref = _role_ref(binding)
                if ref[0] == "ClusterRole":
                    rules += self.role_rules(*ref)
        if namespace:
            for binding in self.role_bindings.get(namespace, ()):
                if _applies_to(user, binding, namespace):
                    rules += self.role_rules(*_role_ref(binding), namespace=namespace)
        return rules


def rules_of(role: Obj | None) -> list[PolicyRule]:
    """The rules a Role or ClusterRole object grants."""
    rules = (role or {}).get("rules")
    return [PolicyRule.from_obj(r) for r in rules] if isinstance(rules, list) else []


def _role_ref(binding: Obj) -> tuple[str, str]:
    ref = binding.get("roleRef")
    if not isinstance(ref, dict):
        return ("", "")
    if ref.get("apiGroup", RBAC_GROUP) != RBAC_GROUP:
        return ("", "")
    return (str(ref.get("kind") or ""), str(ref.get("name") or ""))


def _applies_to(user: User, binding: Obj, namespace: str) -> bool:
    subjects = binding.get("subjects")
    for subject in subjects if isinstance(subjects, list) else ():
        if not isinstance(subject, dict):
            continue
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user.name:
            return True
        if kind == "Group" and name in user.groups:
            return True
        if kind == "ServiceAccount":
            sa_namespace = subject.get("namespace") or namespace
            if sa_namespace and user.name == f"system:serviceaccount:{sa_namespace}:{name}":
                return True
    return False


# --------------------------------------------------------------------------------------------------- aggregation


def aggregates(role: Obj | None) -> bool:
    """Whether a ClusterRole has an ``aggregationRule`` with selectors (Kubernetes' ``hasAggregationRule``: an empty
    list of selectors aggregates nothing)."""
    rule = (role or {}).get("aggregationRule")
    return isinstance(rule, dict) and isinstance(rule.get("clusterRoleSelectors"), list) and bool(
        rule["clusterRoleSelectors"])


def selector_matches(selector: object, labels: Mapping[str, object]) -> bool:
    """A ``metav1.LabelSelector`` (``matchLabels``, ``matchExpressions`` with In, NotIn, Exists, DoesNotExist)
    against an object's labels; an empty selector matches everything, an unknown operator nothing."""
    if not isinstance(selector, dict):
        return False
    match_labels = selector.get("matchLabels")
    for key, value in (match_labels.items() if isinstance(match_labels, dict) else ()):
        if labels.get(key) != value:
            return False
    expressions = selector.get("matchExpressions")
    for req in expressions if isinstance(expressions, list) else ():
        if not isinstance(req, dict):
            return False
        key, op = req.get("key"), req.get("operator")
        if not isinstance(key, str):   # the API server refuses such a selector: it matches nothing here
            return False
        listed = req.get("values")
        values: list[object] = listed if isinstance(listed, list) else []
        present = key in labels
        ok = {"In": present and labels.get(key) in values, "NotIn": not present or labels.get(key) not in values,
              "Exists": present, "DoesNotExist": not present}.get(str(op), False)
        if not ok:
            return False
    return True


def aggregated_rules(role: Obj, cluster_roles: Iterable[Obj]) -> list[PolicyRule]:
    """The rules Kubernetes' aggregation controller gives a ClusterRole with an ``aggregationRule``: those of every
    other ClusterRole whose labels one of its selectors matches, each rule once."""
    name = (role.get("metadata") or {}).get("name")
    selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
    out: list[PolicyRule] = []
    for other in cluster_roles:
        meta = as_map(other.get("metadata"))
        labels = as_map(meta.get("labels"))
        if meta.get("name") == name or not any(selector_matches(sel, labels) for sel in selectors):
            continue
        out += [r for r in rules_of(other) if r not in out]
    return out
