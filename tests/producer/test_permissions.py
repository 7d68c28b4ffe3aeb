"""What a revision's ServiceAccount must be allowed: Kubernetes' RBAC semantics (:mod:`common.bundle.rbac`), the
revision's needs and the RBAC granting them (:mod:`common.bundle.permissions`), the preflight ``cosctl publish``
runs (``--preflight-permissions``) and ``cosctl rbac``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from common.bundle.kinds import guess_resource, offline_lookup
from common.bundle.permissions import grant, missing
from common.bundle.rbac import (
    Attributes,
    Policy,
    PolicyRule,
    User,
    compact,
    describe_rule,
    rule_allows,
    service_account_user,
    uncovered,
)
from common.contract import api
from common.testing.memcluster import MemCluster
from tests.producer.helpers import allow_service_accounts, cosctl
from tests.producer.helpers import grant as grant_rules
from tests.producer.test_cli import set_conditions
from tests.producer.test_cli_bundles import demo_bundle

RBAC = "rbac.authorization.k8s.io/v1"
COS = (api.API_VERSION, api.KIND)
SA = service_account_user("shop", "installer")


def rule(verbs: str, groups: str = "", resources: str = "", names: str = "", urls: str = "") -> PolicyRule:
    def split(text: str) -> tuple[str, ...]:
        return tuple(text.split(",")) if text else ()
    return PolicyRule(split(verbs), tuple(groups.split(",")) if resources else (), split(resources), split(names),
                      split(urls))


# ------------------------------------------------------------------------------------------- RBAC semantics

@pytest.mark.parametrize(("attrs", "the_rule", "allowed"), [
    (Attributes("get", "", "pods", namespace="a"), rule("get", "", "pods"), True),
    (Attributes("get", "", "pods"), rule("*", "*", "*"), True),
    (Attributes("*", "", "pods"), rule("get,list", "", "pods"), False),          # "*" asked is only matched by "*"
    (Attributes("get", "apps", "deployments"), rule("get", "", "deployments"), False),
    (Attributes("patch", "apps", "deployments", "scale"), rule("patch", "apps", "*/scale"), True),
    (Attributes("patch", "apps", "deployments", "status"), rule("patch", "apps", "*/scale"), False),
    (Attributes("patch", "apps", "deployments"), rule("patch", "apps", "deployments/scale"), False),
    (Attributes("patch", "", "configmaps", name="a"), rule("patch", "", "configmaps", "a,b"), True),
    (Attributes("patch", "", "configmaps", name="c"), rule("patch", "", "configmaps", "a,b"), False),
    (Attributes("create", "", "configmaps"), rule("create", "", "configmaps", "a"), False),  # a create names nothing
    (Attributes("get", path="/metrics"), rule("get", urls="/metrics"), True),
    (Attributes("get", path="/api/v1/x"), rule("get", urls="/api/*"), True),
    (Attributes("get", path="/apis"), rule("get", urls="/api/*"), False),
    (Attributes("get", path="/metrics"), rule("get", "*", "*"), False),       # resource rules never allow URLs
])
def test_a_rule_allows_what_the_rbac_authorizer_allows(attrs: Attributes, the_rule: PolicyRule,
                                                       allowed: bool) -> None:
    assert rule_allows(attrs, the_rule) is allowed


def _binding(kind: str, name: str, subject: dict[str, str], namespace: str = "",
             role_kind: str = "ClusterRole") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta, "subjects": [subject],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name}}


def test_the_rules_that_reach_a_service_account_are_those_of_its_bindings_and_groups() -> None:
    roles = {n: {"rules": [{"apiGroups": [""], "resources": [n], "verbs": ["get"]}]}
             for n in ("by-name", "by-group", "by-user", "other", "in-ns")}
    policy = Policy(
        cluster_roles=roles,
        cluster_role_bindings=[
            _binding("ClusterRoleBinding", "by-name", {"kind": "ServiceAccount", "name": "installer",
                                                      "namespace": "shop"}),
            _binding("ClusterRoleBinding", "by-group", {"kind": "Group", "name": "system:serviceaccounts:shop"}),
            _binding("ClusterRoleBinding", "by-user", {"kind": "User", "name": "system:serviceaccount:shop:installer"}),
            _binding("ClusterRoleBinding", "other", {"kind": "ServiceAccount", "name": "installer",
                                                    "namespace": "other"}),
        ],
        # a ServiceAccount subject without a namespace, in a RoleBinding, means the binding's
        role_bindings={"shop": [_binding("RoleBinding", "in-ns", {"kind": "ServiceAccount", "name": "installer"},
                                         "shop")]})
    cluster_wide = {r.resources[0] for r in policy.rules_for(SA)}
    assert cluster_wide == {"by-name", "by-group", "by-user"}
    assert {r.resources[0] for r in policy.rules_for(SA, "shop")} == cluster_wide | {"in-ns"}
    assert policy.rules_for(User("system:serviceaccount:shop:installer")) != policy.rules_for(SA)  # groups count


def test_granting_a_role_needs_holding_each_of_its_permissions() -> None:
    owner = [rule("get,list", "", "pods"), rule("*", "apps", "*/scale"), rule("get", urls="/healthz/*")]
    wanted = [rule("get,list,watch", "", "pods"), rule("patch", "apps", "deployments/scale,deployments"),
              rule("get", urls="/healthz/ready,/metrics")]
    assert [describe_rule(r) for r in uncovered(owner, wanted)] == [
        'Namespace:"" APIGroups:[] Resources:[pods] Verbs:[watch]',
        'Namespace:"" APIGroups:[apps] Resources:[deployments] Verbs:[patch]',
        'Namespace:"" Verbs:[get] NonResourceURLs:[/metrics]',
    ]
    # a rule limited to names never covers one without: that would grant every object
    assert uncovered([rule("get", "", "pods", "a")], [rule("get", "", "pods")]) == [rule("get", "", "pods")]
    assert uncovered([rule("get", "", "pods")], [rule("get", "", "pods", "a")]) == []


def test_missing_rules_are_compacted_and_written_as_olm_v1_lists_them() -> None:
    rules = [rule("patch", "", "configmaps", "a"), rule("delete", "", "configmaps", "a"),
             rule("create", "", "configmaps"), rule("get", "x.io", "widgets"), rule("*", "x.io", "widgets"),
             rule("get", urls="/metrics")]
    assert [describe_rule(r, "shop") for r in compact(rules)] == [
        'Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[a] Verbs:[delete,patch]',
        'Namespace:"shop" APIGroups:[] Resources:[configmaps] Verbs:[create]',
        'Namespace:"shop" APIGroups:[x.io] Resources:[widgets] Verbs:[*]',
        'Namespace:"shop" Verbs:[get] NonResourceURLs:[/metrics]',
    ]


def test_kubernetes_guesses_a_resource_as_its_restmapper_does() -> None:
    assert [guess_resource(k) for k in ("ServiceMonitor", "Ingress", "Policy", "Endpoints", "Gateway")] == [
        "servicemonitors", "ingresses", "policies", "endpoints", "gatewaies"]


# ------------------------------------------------------------------------------------------ a revision's needs

def _objects() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "shop"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flags", "namespace": "shop"}},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": "widgets.x.io"},
         "spec": {"group": "x.io", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}}},
        {"apiVersion": "x.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "shop"}},
        {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "reader", "namespace": "shop"},
         "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]},
        {"apiVersion": RBAC, "kind": "RoleBinding", "metadata": {"name": "view", "namespace": "shop"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "ServiceAccount", "name": "app"}]},
    ]


def test_what_a_service_account_without_rights_lacks_for_a_revision() -> None:
    objects = _objects()
    lacking = missing(objects, offline_lookup(objects, {}), Policy(), SA)
    assert [str(m) for m in lacking] == [
        'Namespace:"" APIGroups:[apiextensions.k8s.io] Resources:[customresourcedefinitions] '
        "ResourceNames:[widgets.x.io] Verbs:[delete,patch]",
        'Namespace:"" APIGroups:[apiextensions.k8s.io] Resources:[customresourcedefinitions] Verbs:[create]',
        'Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[flags] Verbs:[delete,patch]',
        'Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[settings] Verbs:[delete,patch]',
        'Namespace:"shop" APIGroups:[] Resources:[configmaps] Verbs:[create]',
        'Namespace:"shop" APIGroups:[] Resources:[secrets] Verbs:[get]',     # what the Role grants
        # the ClusterRole "view" is not on this cluster: binding a role that exists nowhere takes bind on it (the
        # API server answers NotFound otherwise)
        'Namespace:"shop" APIGroups:[rbac.authorization.k8s.io] Resources:[clusterroles] ResourceNames:[view] '
        "Verbs:[bind]",
        'Namespace:"shop" APIGroups:[rbac.authorization.k8s.io] Resources:[rolebindings] ResourceNames:[view] '
        "Verbs:[delete,patch]",
        'Namespace:"shop" APIGroups:[rbac.authorization.k8s.io] Resources:[rolebindings] Verbs:[create]',
        'Namespace:"shop" APIGroups:[rbac.authorization.k8s.io] Resources:[roles] ResourceNames:[reader] '
        "Verbs:[delete,patch]",
        'Namespace:"shop" APIGroups:[rbac.authorization.k8s.io] Resources:[roles] Verbs:[create]',
        'Namespace:"shop" APIGroups:[x.io] Resources:[widgets] ResourceNames:[w] Verbs:[delete,patch]',
        'Namespace:"shop" APIGroups:[x.io] Resources:[widgets] Verbs:[create]',
    ]


def test_escalate_and_bind_stand_in_for_holding_the_permissions() -> None:
    objects = _objects()
    view = {"metadata": {"name": "view"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    writes = {"metadata": {"name": "writes"}, "rules": [
        {"apiGroups": ["", "x.io", "apiextensions.k8s.io", "rbac.authorization.k8s.io"], "resources": ["*"],
         "verbs": ["create", "patch", "delete"]}]}
    bound = [_binding("ClusterRoleBinding", "writes", {"kind": "ServiceAccount", "name": "installer",
                                                       "namespace": "shop"})]
    policy = Policy(cluster_roles={"view": view, "writes": writes}, cluster_role_bindings=bound)
    assert [str(m) for m in missing(objects, offline_lookup(objects, {}), policy, SA)] == [
        'Namespace:"shop" APIGroups:[] Resources:[pods] Verbs:[get]',        # binding "view" grants pods get
        'Namespace:"shop" APIGroups:[] Resources:[secrets] Verbs:[get]',     # the Role grants secrets get
    ]
    policy.cluster_roles["escalate-bind"] = {"rules": [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"],
         "resourceNames": ["view"]}]}
    policy.role_bindings = {"shop": [_binding("RoleBinding", "escalate-bind", {"kind": "ServiceAccount",
                                                                               "name": "installer"}, "shop")]}
    assert missing(objects, offline_lookup(objects, {}), policy, SA) == []


def _policy_of(documents: list[dict[str, Any]]) -> Policy:
    """A cluster whose RBAC is exactly ``documents`` (what ``cosctl rbac`` printed, applied)."""
    def name(o: dict[str, Any]) -> str:
        return str(o["metadata"]["name"])
    role_bindings: dict[str, list[dict[str, Any]]] = {}
    for o in documents:
        if o["kind"] == "RoleBinding":
            role_bindings.setdefault(o["metadata"]["namespace"], []).append(o)
    return Policy(cluster_roles={name(o): o for o in documents if o["kind"] == "ClusterRole"},
                  cluster_role_bindings=[o for o in documents if o["kind"] == "ClusterRoleBinding"],
                  roles={(o["metadata"]["namespace"], name(o)): o for o in documents if o["kind"] == "Role"},
                  role_bindings=role_bindings)


def test_what_grant_writes_is_exactly_enough() -> None:
    objects = _objects()
    lookup = offline_lookup(objects, {})
    rbac = grant(objects, lookup, "shop", "installer", name="shop-installer")
    view = {"kind": "ClusterRole", "metadata": {"name": "view"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}   # as every cluster has one
    assert missing(objects, lookup, _policy_of([*rbac, view]), SA) == []
    # each rule is needed: without any one of them, something is missing
    for i, doc in enumerate(rbac):
        for j in range(len(doc.get("rules") or [])):
            fewer = [dict(d) for d in rbac]
            fewer[i] = {**doc, "rules": [r for k, r in enumerate(doc["rules"]) if k != j]}
            if doc["rules"][j]["resources"] == ["clusterobjectsets/finalizers"]:
                continue   # for OwnerReferencesPermissionEnforcement, which the check cannot see
            assert missing(objects, lookup, _policy_of([*fewer, view]), SA) != [], doc["rules"][j]
    assert [(d["kind"], d["metadata"].get("namespace"), d.get("rules")) for d in rbac] == [
        ("ClusterRole", None, [
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["create"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
             "resourceNames": ["widgets.x.io"], "verbs": ["delete", "patch"]},
            {"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterobjectsets/finalizers"],
             "verbs": ["update"]}]),
        ("ClusterRoleBinding", None, None),
        ("Role", "shop", [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings", "roles"], "verbs": ["create"]},
            {"apiGroups": ["x.io"], "resources": ["widgets"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["flags", "settings"],
             "verbs": ["delete", "patch"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"], "resourceNames": ["view"],
             "verbs": ["delete", "patch"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "resourceNames": ["reader"],
             "verbs": ["delete", "patch"]},
            {"apiGroups": ["x.io"], "resources": ["widgets"], "resourceNames": ["w"], "verbs": ["delete", "patch"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["view"],
             "verbs": ["bind"]}]),
        ("RoleBinding", "shop", None),
    ]


def test_a_bundles_rbac_is_enough_for_its_rendering(tmp_path: Path) -> None:
    code, out, err = cosctl("rbac", str(demo_bundle(tmp_path / "b")), "-n", "demo-system", "--service-account",
                            "installer")
    assert (code, err) == (0, "")
    assert out.startswith("# RBAC for ServiceAccount demo-system/installer to have demo's revisions applied with "
                          "its rights (cosctl rbac)\n---\napiVersion: v1\nkind: ServiceAccount\n")
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("ServiceAccount", "installer"), ("ClusterRole", "demo-installer"), ("ClusterRoleBinding", "demo-installer"),
        ("Role", "demo-installer"), ("RoleBinding", "demo-installer")]
    code, rendered, _ = cosctl("render", str(demo_bundle(tmp_path / "b")), "-n", "demo-system")
    objects = [d for d in yaml.safe_load_all(rendered) if d]
    assert missing(objects, offline_lookup(objects, {}), _policy_of(docs[1:]),
                   service_account_user("demo-system", "installer")) == []


def test_rbac_says_which_kinds_it_guessed_and_what_it_needs(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: m, namespace: shop}\n")
    assert cosctl("rbac", str(tmp_path / "m.yaml"), "--service-account", "shop/installer")[::2] == (
        1, "cosctl rbac: give --name (or --owner) for plain manifests: the name of the roles and bindings\n")
    code, out, err = cosctl("rbac", str(tmp_path / "m.yaml"), "--owner", "mon", "--service-account", "installer")
    assert (code, err) == (2, "cosctl rbac: --service-account installer: give NAMESPACE/NAME (a bare name means a "
                              "ServiceAccount of a registry+v1 bundle's install namespace)\n")
    code, out, err = cosctl("rbac", str(tmp_path / "m.yaml"), "--owner", "mon", "--service-account", "shop/installer")
    assert (code, err) == (0, "cosctl rbac: warning: kind ServiceMonitor.monitoring.coreos.com is neither built in nor "
                              "served by a CustomResourceDefinition of the revision: assumed to be the namespaced "
                              "resource 'servicemonitors' (check with kubectl api-resources)\n")
    role = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "Role")
    assert role["metadata"] == {"name": "mon-installer", "namespace": "shop"}


# ------------------------------------------------------------------------------------------ cosctl publish

def _manifests(root: Path, *names: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cms.yaml").write_text("".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: shop}}\ndata: {{a: '1'}}\n"
        for n in names))
    return root


def test_publish_refuses_a_service_account_that_lacks_rights_and_lists_them_all(tmp_path: Path) -> None:
    mc = MemCluster()
    code, out, err = cosctl("publish", str(_manifests(tmp_path / "m", "a", "b")), "--owner", "shop",
                            "--service-account", "shop/installer", cluster=mc)
    assert (code, err) == (1, (
        "cosctl publish: the permission preflight refused the new revision (no revision was created):\n"
        "ServiceAccount shop/installer does not exist: the reconciler could not write as it (service account "
        '"installer" not found in namespace "shop")\n'
        "ServiceAccount shop/installer lacks, by the cluster's RBAC, to apply the new revision:\n"
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[a] Verbs:[delete,patch]\n'
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[b] Verbs:[delete,patch]\n'
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] Verbs:[create]\n'
        "`cosctl rbac` prints the RBAC the revision needs (with --keep-installed, also what tearing the installed "
        "revisions down needs); --preflight-permissions None skips the check, for this run only\n"))
    assert mc.objects(*COS) == [] and mc.writes == 0
    # granted as `cosctl rbac` would (here by hand: create, and patch/delete by name): published
    mc.put({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": "shop"}})
    grant_rules(mc, {"kind": "ServiceAccount", "name": "installer", "namespace": "shop"}, [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a", "b"], "verbs": ["patch", "delete"]}],
        namespace="shop")
    code, out, err = cosctl("publish", str(_manifests(tmp_path / "m", "a", "b")), "--owner", "shop",
                            "--service-account", "shop/installer", cluster=mc)
    assert (code, err, out.splitlines()[-1]) == (0, "", "ClusterObjectSet shop-1 (revision 1) created")


def test_preflight_permissions_none_skips_the_check(tmp_path: Path) -> None:
    mc = MemCluster()
    code, out, err = cosctl("publish", str(_manifests(tmp_path / "m", "a")), "--owner", "shop", "--service-account",
                            "shop/installer", "--preflight-permissions", "None", cluster=mc)
    assert (code, err, out.splitlines()[-1]) == (0, "", "ClusterObjectSet shop-1 (revision 1) created")


def test_an_upgrade_must_leave_the_installed_revision_its_teardown_rights(tmp_path: Path) -> None:
    """Applying the next revision's RBAC over the installed one's takes away the delete the installed revision's
    teardown needs for what the next one drops: publish says so, and ``cosctl rbac --keep-installed`` keeps it."""
    mc = MemCluster()
    allow_service_accounts(mc, "shop/installer")
    mc.delete(RBAC, "ClusterRoleBinding", "service-accounts-admin")   # the account, without its rights
    first, second = _manifests(tmp_path / "v1", "a", "old"), _manifests(tmp_path / "v2", "a", "new")

    def apply_rbac(*argv: str) -> None:
        code, out, err = cosctl("rbac", *argv, "--owner", "shop", "--service-account", "shop/installer", cluster=mc)
        assert code == 0, err
        for doc in yaml.safe_load_all(out):
            if doc and doc["kind"] != "ServiceAccount":
                mc.put(doc)

    apply_rbac(str(first))
    assert cosctl("publish", str(first), "--owner", "shop", "--service-account", "shop/installer", cluster=mc)[0] == 0
    set_conditions(mc, "shop-1", ("True", "Succeeded", "Revision 1 has rolled out."),
                   {"type": "Succeeded", "status": "True", "reason": "Succeeded",
                    "message": "Revision succeeded rolling out.", "lastTransitionTime": "2026-01-02T03:04:05Z"})
    apply_rbac(str(second))
    code, _, err = cosctl("publish", str(second), "--owner", "shop", cluster=mc)
    assert (code, err) == (1, (
        "cosctl publish: the permission preflight refused the new revision (no revision was created):\n"
        "ServiceAccount shop/installer lacks, to tear ClusterObjectSet shop-1 down once the new revision succeeds "
        "(deleting what the new revision drops, releasing what it keeps):\n"
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[old] Verbs:[delete]\n'
        "`cosctl rbac` prints the RBAC the revision needs (with --keep-installed, also what tearing the installed "
        "revisions down needs); --preflight-permissions None skips the check, for this run only\n"))
    code, out, err = cosctl("rbac", str(second), "--owner", "shop", "--keep-installed", cluster=mc)
    assert (code, err) == (0, "cosctl rbac: keeping patch and delete on the objects of shop-1\n")  # its account
    role = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "Role")
    assert {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a", "new", "old"],
            "verbs": ["delete", "patch"]} in role["rules"]
    apply_rbac(str(second), "--keep-installed")
    code, out, err = cosctl("publish", str(second), "--owner", "shop", cluster=mc)
    assert (code, err, out.splitlines()[-1]) == (0, "", "ClusterObjectSet shop-2 (revision 2) created")


def test_naming_another_service_account_for_unchanged_content_is_checked_too(tmp_path: Path) -> None:
    """The revision changes hands in place (the reconciler writes with the new ServiceAccount from then on): the
    same preflight, and the revision is left as it was."""
    mc = MemCluster()
    allow_service_accounts(mc, "shop/installer")
    manifests = _manifests(tmp_path / "m", "a")
    assert cosctl("publish", str(manifests), "--owner", "shop", "--service-account", "shop/installer",
                  cluster=mc)[0] == 0
    mc.delete(RBAC, "ClusterRoleBinding", "service-accounts-admin")
    mc.reset_requests()
    code, _, err = cosctl("publish", str(manifests), "--owner", "shop", "--service-account", "shop/other",
                          cluster=mc)
    assert (code, err) == (1, (
        "cosctl publish: the permission preflight refused ClusterObjectSet shop-1 (it was not changed):\n"
        "ServiceAccount shop/other does not exist: the reconciler could not write as it (service account "
        '"other" not found in namespace "shop")\n'
        "ServiceAccount shop/other lacks, by the cluster's RBAC, to apply ClusterObjectSet shop-1:\n"
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[a] Verbs:[delete,patch]\n'
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] Verbs:[create]\n'
        "`cosctl rbac` prints the RBAC the revision needs (with --keep-installed, also what tearing the installed "
        "revisions down needs); --preflight-permissions None skips the check, for this run only\n"))
    assert mc.writes == 0
    assert mc.peek(*COS, "shop-1")["metadata"]["annotations"][api.ANNOTATION_SERVICE_ACCOUNT_NAME] == "installer"


# ------------------------------------------------------------------- what a real API server showed (issue notes)

def test_label_selectors_match_as_kubernetes_matches_them() -> None:
    from common.bundle.rbac import selector_matches
    labels = {"a": "1", "b": "2"}
    assert [selector_matches(sel, labels) for sel in (
        {}, {"matchLabels": {"a": "1"}}, {"matchLabels": {"a": "2"}},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "3"]}]},
        {"matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["1"]}]},
        {"matchExpressions": [{"key": "b", "operator": "Exists"}, {"key": "c", "operator": "DoesNotExist"}]},
        {"matchExpressions": [{"key": "b", "operator": "Gt", "values": ["1"]}]},
    )] == [True, True, False, True, True, True, False]


AGGREGATING = {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "agg"},
               "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"to-agg": "true"}}]}}
PLAIN = {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "agg"},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
HOLDS_PODS = _binding("ClusterRoleBinding", "pods", {"kind": "ServiceAccount", "name": "installer",
                                                     "namespace": "shop"})
WRITES_RBAC = {"rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["*"],
                          "verbs": ["create", "patch", "delete"]}]}


def _lacks(objects: list[dict[str, Any]], policy: Policy) -> list[str]:
    return [str(m) for m in missing(objects, offline_lookup(objects, {}), policy, SA)]


def test_a_clusterrole_that_aggregates_now_or_after_needs_every_right() -> None:
    """The API server asks for every right when the old or the new ClusterRole aggregates: replacing the cluster's
    aggregating one with a plain one included (a manifest-only view would miss it)."""
    base = {"pods": {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
            "writes": WRITES_RBAC}
    bindings = [HOLDS_PODS, _binding("ClusterRoleBinding", "writes", HOLDS_PODS["subjects"][0])]
    assert _lacks([PLAIN], Policy(cluster_roles=base, cluster_role_bindings=bindings)) == []
    every = ['Namespace:"" APIGroups:[*] Resources:[*] Verbs:[*]', 'Namespace:"" Verbs:[*] NonResourceURLs:[*]']
    assert _lacks([PLAIN], Policy(cluster_roles={**base, "agg": AGGREGATING}, cluster_role_bindings=bindings)) == every
    assert _lacks([AGGREGATING], Policy(cluster_roles=base, cluster_role_bindings=bindings)) == every


def test_a_binding_to_an_aggregating_clusterrole_needs_what_the_cluster_will_aggregate_into_it() -> None:
    binding = {"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": "agg"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "agg"},
               "subjects": [{"kind": "ServiceAccount", "name": "app", "namespace": "shop"}]}
    secrets = {"metadata": {"name": "secrets", "labels": {"to-agg": "true"}},
               "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]}
    escalate = {"rules": [*WRITES_RBAC["rules"], {"apiGroups": ["rbac.authorization.k8s.io"],
                                                  "resources": ["clusterroles"], "verbs": ["escalate"]}]}
    policy = Policy(cluster_roles={"secrets": secrets, "writes": escalate},
                    cluster_role_bindings=[_binding("ClusterRoleBinding", "writes", HOLDS_PODS["subjects"][0])])
    assert _lacks([AGGREGATING, binding], policy) == ['Namespace:"" APIGroups:[] Resources:[secrets] Verbs:[list]']
    # cosctl rbac cannot know what the cluster will aggregate: it grants bind on that ClusterRole
    rbac = grant([AGGREGATING, binding], offline_lookup([AGGREGATING, binding], {}), "shop", "installer", name="i")
    assert {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["agg"],
            "verbs": ["bind"]} in rbac[0]["rules"]
    assert {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["escalate"]} in \
        rbac[0]["rules"]


def test_tearing_down_releases_roles_without_holding_what_they_grant(tmp_path: Path) -> None:
    """Releasing (a patch of ownerReferences alone) and deleting are never escalation-checked: an installed
    revision's Roles need only patch and delete by name to be torn down."""
    from common.bundle.permcheck import Teardown, check_permissions
    mc = MemCluster()
    mc.put({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": "shop"}})
    role = {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "reader", "namespace": "shop"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}
    grant_rules(mc, {"kind": "ServiceAccount", "name": "installer", "namespace": "shop"}, [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "resourceNames": ["reader"],
         "verbs": ["patch", "delete"]}], namespace="shop")
    verdict = check_permissions(mc, [], "shop", "installer", [Teardown("shop-1", "shop", "installer", [role])])
    assert (verdict.ok, verdict.teardown) == (True, {"shop-1": []})
    assert [str(m) for m in check_permissions(mc, [role], "shop", "installer").lacking] == [
        'Namespace:"shop" APIGroups:[] Resources:[secrets] Verbs:[get]',
        'Namespace:"shop" APIGroups:[rbac.authorization.k8s.io] Resources:[roles] Verbs:[create]']


def test_an_installed_object_of_a_kind_nobody_serves_any_more_needs_no_teardown_right() -> None:
    """Its CRD is gone, and with it every object of the kind: tearing the revision down has nothing to delete there,
    so the check neither asks for a right on it nor fails to tell which resource it is."""
    from common.bundle.permcheck import PermissionCheckError, Teardown, check_permissions
    mc = MemCluster()
    allow_service_accounts(mc, "shop/installer")
    gone = {"apiVersion": "gone.example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "shop"}}
    verdict = check_permissions(mc, [], "shop", "installer", [Teardown("shop-1", "shop", "installer", [gone])])
    assert (verdict.ok, verdict.teardown) == (True, {"shop-1": []})
    with pytest.raises(PermissionCheckError, match="cannot tell which resource these objects are .*Gadget.gone"):
        check_permissions(mc, [gone], "shop", "installer")


# ------------------------------------------------------------------------------------ what a review turned up

def test_a_selector_the_api_server_would_refuse_matches_nothing_instead_of_failing(tmp_path: Path) -> None:
    from common.bundle.rbac import selector_matches
    assert selector_matches({"matchExpressions": [{"key": ["a"], "operator": "Exists"}]}, {"a": "1"}) is False
    (tmp_path / "agg.yaml").write_text(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: agg}\n"
        "aggregationRule: {clusterRoleSelectors: [{matchExpressions: [{key: [a], operator: Exists}]}]}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: agg}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: agg}\n"
        "subjects: [{kind: ServiceAccount, name: app, namespace: shop}]\n")
    code, _, err = cosctl("rbac", str(tmp_path / "agg.yaml"), "--owner", "x", "--service-account", "shop/inst")
    assert (code, err) == (0, "cosctl rbac: warning: ClusterRole agg has an aggregationRule: creating it takes "
                              "escalate on every ClusterRole (or every right), which is as much as cluster-admin\n")
    mc = MemCluster()
    allow_service_accounts(mc, "shop/inst")
    code, _, err = cosctl("publish", str(tmp_path / "agg.yaml"), "--owner", "x", "--service-account", "shop/inst",
                          cluster=mc)
    assert (code, err) == (0, "")


def test_a_namespaced_object_without_a_namespace_is_named_not_granted_everywhere(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nons}\n")
    message = ("these objects are of a namespaced kind but name no metadata.namespace (the API server refuses to "
               "create them): ConfigMap.v1 nons")
    assert cosctl("rbac", str(tmp_path / "m.yaml"), "--owner", "x", "--service-account", "shop/inst")[::2] == (
        1, f"cosctl rbac: {message}\n")
    mc = MemCluster()
    allow_service_accounts(mc, "shop/inst")
    code, _, err = cosctl("publish", str(tmp_path / "m.yaml"), "--owner", "x", "--service-account", "shop/inst",
                          cluster=mc)
    assert (code, err) == (1, f"cosctl publish: the permission preflight for ServiceAccount shop/inst failed: "
                              f"{message}; no revision was created (--preflight-permissions None skips the check)\n")


def test_rbac_refuses_a_name_the_api_server_would_refuse(tmp_path: Path) -> None:
    code, _, err = cosctl("rbac", str(_manifests(tmp_path / "m", "a")), "--name", "Bad_Name",
                          "--service-account", "shop/inst")
    assert code == 1 and err.startswith("cosctl rbac: invalid name 'Bad_Name' for the roles and bindings (--name, "
                                        "or <owner>-<ServiceAccount>): a lowercase RFC 1123 subdomain must")


def test_a_namespace_the_revision_creates_itself_is_said_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: newns}\n---\n"
                                     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: newns}\n")
    advice = ("create the namespace first (a bundle: publish without --create-namespace; manifests: leave the "
              "Namespace out, or publish with --collision-protection IfNoController so the revision adopts it), or "
              "grant the rights with a ClusterRoleBinding")
    code, _, err = cosctl("rbac", str(tmp_path / "m.yaml"), "--owner", "x", "--service-account", "shop/inst")
    assert (code, err) == (0, "cosctl rbac: warning: the revision creates Namespace newns, where this ServiceAccount "
                              f"or its Roles must exist before it: {advice}\n")
    mc = MemCluster()
    mc.put({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "inst", "namespace": "shop"}})
    code, _, err = cosctl("publish", str(tmp_path / "m.yaml"), "--owner", "x", "--service-account", "shop/inst",
                          cluster=mc)
    assert code == 1
    assert err.splitlines()[-2] == f"Namespace newns is created by the revision itself: rights in it can only be " \
                                   f"granted once it exists: {advice}"


def test_keep_installed_names_a_revision_another_service_account_tears_down(tmp_path: Path) -> None:
    """Another ServiceAccount's RBAC is its own (named after it) and is left alone; the command says so."""
    mc = MemCluster()
    allow_service_accounts(mc, "shop/one", "shop/two")
    assert cosctl("publish", str(_manifests(tmp_path / "v1", "a", "old")), "--owner", "shop", "--service-account",
                  "shop/one", cluster=mc)[0] == 0
    code, out, err = cosctl("rbac", str(_manifests(tmp_path / "v2", "a", "new")), "--owner", "shop",
                            "--service-account", "shop/two", "--keep-installed", cluster=mc)
    assert (code, err) == (0, "cosctl rbac: shop-1 is torn down with ServiceAccount shop/one, not shop/two: keep "
                              "what that grants until it is gone\n")
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert {d["metadata"]["name"] for d in docs[1:]} == {"shop-two"}


def test_rollback_runs_the_preflight_too(tmp_path: Path) -> None:
    mc = MemCluster()
    allow_service_accounts(mc, "shop/installer")
    first, second = _manifests(tmp_path / "v1", "a"), _manifests(tmp_path / "v2", "b")
    for manifests in (first, second):
        assert cosctl("publish", str(manifests), "--owner", "shop", "--service-account", "shop/installer",
                      cluster=mc)[0] == 0
        set_conditions(mc, f"shop-{1 if manifests == first else 2}",
                       ("True", "Succeeded", "rolled out."),
                       {"type": "Succeeded", "status": "True", "reason": "Succeeded",
                        "message": "Revision succeeded rolling out.", "lastTransitionTime": "2026-01-02T03:04:05Z"})
    mc.delete(RBAC, "ClusterRoleBinding", "service-accounts-admin")
    code, _, err = cosctl("rollback", "--owner", "shop", cluster=mc)
    assert code == 1 and err.splitlines()[:3] == [
        "cosctl rollback: the permission preflight refused the new revision (no revision was created):",
        "ServiceAccount shop/installer lacks, by the cluster's RBAC, to apply the new revision:",
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[a] Verbs:[delete,patch]']
    assert [c["metadata"]["name"] for c in mc.objects(*COS)] == ["shop-1", "shop-2"]
    code, out, err = cosctl("rollback", "--owner", "shop", "--preflight-permissions", "None", cluster=mc)
    assert (code, err, out.splitlines()[-2]) == (0, "", "ClusterObjectSet shop-3 (revision 3) created")


def test_an_installation_made_with_the_reconcilers_rights_moves_to_a_service_account(tmp_path: Path) -> None:
    """`cosctl rbac --owner X` (no manifests) grants what the installed revision needs, read from the cluster; the
    same content published naming the ServiceAccount then changes hands in place, the preflight passing."""
    mc = MemCluster()
    manifests = _manifests(tmp_path / "m", "a", "b")
    assert cosctl("publish", str(manifests), "--owner", "shop", cluster=mc)[0] == 0   # the reconciler's rights
    mc.put({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "inst", "namespace": "shop"}})
    assert cosctl("publish", str(manifests), "--owner", "shop", "--service-account", "shop/inst", cluster=mc)[::2] \
        == (1, "cosctl publish: the permission preflight refused ClusterObjectSet shop-1 (it was not changed):\n"
               "ServiceAccount shop/inst lacks, by the cluster's RBAC, to apply ClusterObjectSet shop-1:\n"
               '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[a] Verbs:[delete,patch]\n'
               '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[b] Verbs:[delete,patch]\n'
               '  Namespace:"shop" APIGroups:[] Resources:[configmaps] Verbs:[create]\n'
               "`cosctl rbac` prints the RBAC the revision needs (with --keep-installed, also what tearing the "
               "installed revisions down needs); --preflight-permissions None skips the check, for this run only\n")
    code, out, err = cosctl("rbac", "--owner", "shop", "--service-account", "shop/inst", cluster=mc)
    assert (code, err) == (0, "cosctl rbac: for the objects of shop-1\n")
    for doc in yaml.safe_load_all(out):
        if doc and doc["kind"] != "ServiceAccount":
            mc.put(doc)
    code, out, err = cosctl("publish", str(manifests), "--owner", "shop", "--service-account", "shop/inst",
                            cluster=mc)
    assert (code, err, out.splitlines()[-1]) == (
        0, "", "unchanged content: ClusterObjectSet shop-1 (revision 1) updated in place (mutable fields only)")
    assert mc.peek(*COS, "shop-1")["metadata"]["annotations"][api.ANNOTATION_SERVICE_ACCOUNT_NAME] == "inst"
    assert cosctl("rbac", "--service-account", "shop/inst")[::2] == (
        1, "cosctl rbac: give the manifests or the bundle to grant for, or --owner OWNER for the RBAC of the owner's "
           "installed revisions\n")
    assert cosctl("rbac", "--owner", "nobody", "--service-account", "shop/inst", cluster=mc)[::2] == (
        1, "cosctl rbac: owner nobody has no Active revision on the cluster\n")


def test_grant_leaves_out_rules_others_cover_and_rules_the_api_server_refuses() -> None:
    """A bundle's own broad rule, copied, makes the create and patch rules beneath it say nothing more; a rule the
    API server refuses (resources without apiGroups, as a CSV misspelling ``apigroups`` renders) would make the whole
    Role refused, and the bundle's own Role is refused anyway."""
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "shop"}},
        {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "op", "namespace": "shop"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["*"]},
                   {"resources": ["routes"], "verbs": ["*"]}]},
    ]
    lookup = offline_lookup(objects, {})
    rbac = grant(objects, lookup, "shop", "installer", name="i")
    assert rbac[2]["rules"] == [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["create"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "resourceNames": ["op"],
         "verbs": ["delete", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["*"]}]
    assert missing(objects, lookup, _policy_of(rbac), SA) == []
