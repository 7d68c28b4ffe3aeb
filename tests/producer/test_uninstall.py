"""``cosctl uninstall`` with the reconciler's engine on the in-memory API server: the refusal that keeps custom
resources from going unasked, deleting them first, keeping the CRDs, the teardown permission preflight, and
following the teardown to its end."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from common.cluster.interface import Forbidden
from common.contract import api
from common.testing.memcluster import MemCluster
from reconciler.engine import reconcile
from tests.producer.helpers import allow_service_accounts, cosctl, grant
from tests.producer.test_with_engine import controllers

COS = (api.API_VERSION, api.KIND)
CRD_API = "apiextensions.k8s.io/v1"
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


def operator(root: Path, image: str = "web:1", *, conversion: bool = False) -> str:
    """An operator's manifests: its namespace, a CRD, a ConfigMap and a Deployment."""
    root.mkdir(parents=True, exist_ok=True)
    crd = CRD + ("  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v1]\n"
                 "      clientConfig: {service: {name: web-service, namespace: shop, path: /convert}}\n"
                 if conversion else "")
    (root / "all.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n" + crd + "---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\ndata: {a: b}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
        f"spec: {{replicas: 1, template: {{spec: {{containers: [{{name: w, image: '{image}'}}]}}}}}}\n")
    return str(root)


def ticker(mc: MemCluster) -> Any:
    """What runs while cosctl sleeps: the reconciler and the controllers, twice over."""
    def tick(_seconds: float = 0) -> None:
        for _ in range(2):
            for cos in mc.objects(*COS):
                reconcile(mc, cos["metadata"]["name"])
            controllers(mc)
    return tick


def installed(tmp_path: Path, **kwargs: Any) -> MemCluster:
    """Owner ``shop`` installed and rolled out (revision shop-1)."""
    mc = MemCluster()
    assert cosctl("publish", operator(tmp_path / "v1", **kwargs), "--owner", "shop", cluster=mc)[0] == 0
    tick = ticker(mc)
    tick()
    tick()
    assert mc.peek(*COS, "shop-1")["status"]["conditions"][0]["reason"] == "Succeeded"
    return mc


def widget(mc: MemCluster, name: str, namespace: str, finalizers: list[str] | None = None) -> None:
    mc.put({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace, **({"finalizers": finalizers} if finalizers else {})}})


def uninstall(mc: MemCluster, *argv: str, **defaults: Any) -> tuple[int, str, str]:
    """``cosctl uninstall --owner shop ARGV`` with the reconciler running between reads; time stamps dropped."""
    defaults.setdefault("sleep", ticker(mc))
    code, out, err = cosctl("uninstall", "--owner", "shop", *argv, cluster=mc, tty=False, **defaults)
    return code, re.sub(r"(?m)^\d\d:\d\d:\d\d ", "", out), err


def left(mc: MemCluster) -> dict[str, list[str]]:
    """The names of what is left of each kind the owner installed (Widgets: none once their CRD is gone)."""
    served = mc.peek(CRD_API, "CustomResourceDefinition", "widgets.example.com") is not None
    return {kind: sorted(o["metadata"]["name"] for o in mc.objects(api_version, kind)) for api_version, kind in (
        (api.API_VERSION, api.KIND), (CRD_API, "CustomResourceDefinition"), ("v1", "Namespace"),
        ("apps/v1", "Deployment"), ("v1", "ConfigMap"), *([("example.com/v1", "Widget")] if served else []))}


PLAN = ("owner shop: Active revision shop-1 (4 object(s))\n"
        "CustomResourceDefinition widgets.example.com (controlled by shop-1): {crs}\n"
        "Namespace shop (controlled by shop-1): deleting it deletes everything in it\n")


# What a run prints when shop-1 has no custom resources left: the plan, the delete, the teardown followed.
TORN_DOWN = PLAN.format(crs="no custom resources") + (
    "delete ClusterObjectSet shop-1: the reconciler tears its objects down in reverse phase order\n"
    "owner shop: 1 revision(s) tearing down; shop-1: removing its objects in reverse phase order\n"
    "owner shop: every revision is gone\n"
    "owner shop uninstalled: 1 revision(s) deleted, their objects removed in reverse phase order\n")


def test_without_custom_resources_the_owner_is_torn_down_and_followed_to_the_end(tmp_path: Path) -> None:
    mc = installed(tmp_path)
    code, out, err = uninstall(mc)
    assert (code, err) == (0, "")
    assert out == TORN_DOWN
    assert left(mc) == {api.KIND: [], "CustomResourceDefinition": [], "Namespace": [], "Deployment": [],
                        "ConfigMap": []}
    code, out, err = uninstall(mc)
    assert (code, out, err) == (1, "", "cosctl uninstall: owner shop has no revisions: nothing to uninstall\n")


def test_custom_resources_refuse_the_uninstall_until_the_admin_says_what_becomes_of_them(tmp_path: Path) -> None:
    mc = installed(tmp_path)
    for i in range(5):
        widget(mc, f"w{i}", "default")
    mc.reset_requests()
    code, out, err = uninstall(mc)
    found = "Widget default/w0, Widget default/w1, Widget default/w2 and more"
    assert (code, out) == (1, PLAN.format(crs=f"custom resources exist: {found}"))
    assert err == (
        "cosctl uninstall: owner shop: custom resources of the CustomResourceDefinitions its revisions control "
        f"exist:\n  widgets.example.com: {found}\n"
        "deleting the revisions deletes the CustomResourceDefinitions and, with them, every custom resource of them, "
        "after the operator is gone (custom resources its finalizers hold would then hold the uninstall for ever); "
        "nothing was deleted. --delete-custom-resources deletes them first, while the operator still runs to finish "
        "them, then uninstalls; --keep-crds uninstalls all but the CustomResourceDefinitions, which keep their "
        "custom resources (a later publish of the package takes them over)\n")
    assert mc.writes == 0


def test_delete_custom_resources_waits_for_their_operator_to_finish_them_first(tmp_path: Path) -> None:
    mc = installed(tmp_path)
    widget(mc, "w1", "shop", finalizers=["example.com/cleanup"])
    widget(mc, "w2", "default")
    clock = iter(range(0, 1000, 2))
    code, out, err = uninstall(mc, "--delete-custom-resources", "--timeout", "5", clock=lambda: next(clock))
    assert code == 6
    assert out == PLAN.format(crs="custom resources exist: Widget default/w2, Widget shop/w1") + (
        "delete Widget default/w2: custom resource of CustomResourceDefinition widgets.example.com\n"
        "delete Widget shop/w1: custom resource of CustomResourceDefinition widgets.example.com\n"
        "custom resources: 1 custom resource(s) being deleted; Widget shop/w1: waiting for finalizers: "
        "example.com/cleanup\n")
    assert err == (
        "cosctl uninstall: custom resources: still waiting after 5 s (1 custom resource(s) being deleted; Widget "
        "shop/w1: waiting for finalizers: example.com/cleanup); nothing else was deleted; the custom resources that "
        "are left wait for what holds them (their operator still runs): run the command again once they are gone\n")
    assert left(mc)[api.KIND] == ["shop-1"] and left(mc)["Widget"] == ["w1"]

    mc.remove_finalizer("example.com/v1", "Widget", "w1", "shop", "example.com/cleanup")   # the operator's work
    code, out, err = uninstall(mc, "--delete-custom-resources")
    assert (code, err) == (0, "")
    assert out == TORN_DOWN
    assert left(mc)[api.KIND] == [] and left(mc)["CustomResourceDefinition"] == []


def test_custom_resources_an_operator_keeps_making_stop_the_uninstall(tmp_path: Path) -> None:
    mc = installed(tmp_path)
    widget(mc, "default-config", "shop")

    def operator_at_work(event: str, obj: dict[str, Any]) -> None:   # makes its default Widget again at once
        if event == "DELETED" and obj["kind"] == "Widget" and left(mc)["CustomResourceDefinition"]:
            widget(mc, "default-config", "shop")

    mc.listeners.append(operator_at_work)
    code, out, err = uninstall(mc, "--delete-custom-resources")
    assert code == 1
    assert out.count("delete Widget shop/default-config") == 3
    assert err == (
        "cosctl uninstall: custom resources were made again after 3 rounds of deletes (the operator may make its "
        "own):\n  widgets.example.com: Widget shop/default-config\nnothing else was deleted; --keep-crds keeps them "
        "instead\n")
    assert left(mc)[api.KIND] == ["shop-1"]


def test_keep_crds_hands_over_to_a_revision_holding_them_and_a_publish_takes_them_over_again(tmp_path: Path) -> None:
    mc = installed(tmp_path, conversion=True)
    widget(mc, "w1", "shop")
    code, out, err = uninstall(mc, "--keep-crds")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:5] == [*PLAN.format(crs="custom resources exist: Widget shop/w1").splitlines(),
                         "create Secret olmv1-system/shop-2-4eb1771a87e9086a: 2 object(s), 638 bytes",
                         "create ClusterObjectSet shop-2: revision 2, 2 phase(s), 2 object(s)"]
    assert lines[-4:] == [
        "owner shop: everything but CustomResourceDefinition widgets.example.com was removed; revision shop-2 keeps "
        "them and their custom resources",
        "Namespace shop was kept too: custom resources are in it",
        "warning: CustomResourceDefinition widgets.example.com converts between its versions with a webhook (Service "
        "shop/web-service), which was removed: until the operator is installed again, its custom resources can be "
        "read only at the version they are stored at",
        "reinstall: publish a bundle of the package for owner shop (the new revision takes the "
        "CustomResourceDefinitions over); remove them later: delete their custom resources while the operator is "
        "installed (their finalizers may need it), then cosctl uninstall --owner shop"]
    assert "shop-2: handed over; the revisions before it are torn down" in lines
    assert left(mc) == {api.KIND: ["shop-1", "shop-2"], "CustomResourceDefinition": ["widgets.example.com"],
                        "Namespace": ["shop"], "Deployment": [], "ConfigMap": [], "Widget": ["w1"]}
    assert mc.peek(*COS, "shop-1")["spec"]["lifecycleState"] == "Archived"
    # the same again: nothing new (the kept revision already holds them)
    code, out, err = uninstall(mc, "--keep-crds")
    assert (code, err) == (0, "")
    assert "unchanged: ClusterObjectSet shop-2 (revision 2) already has this content" in out.splitlines()
    # installing again takes the CRD over from the kept revision, as any upgrade does
    assert cosctl("publish", operator(tmp_path / "v1", conversion=True), "--owner", "shop", cluster=mc)[0] == 0
    tick = ticker(mc)
    tick()
    tick()
    crd = mc.peek(CRD_API, "CustomResourceDefinition", "widgets.example.com")
    assert [r["name"] for r in crd["metadata"]["ownerReferences"] if r.get("controller")] == ["shop-3"]
    assert left(mc)["Deployment"] == ["web"] and left(mc)["Widget"] == ["w1"]


def test_keep_crds_lets_a_namespace_without_custom_resources_go(tmp_path: Path) -> None:
    mc = installed(tmp_path)
    widget(mc, "w1", "default")
    code, out, err = uninstall(mc, "--keep-crds")
    assert (code, err) == (0, "")
    assert "Namespace shop was kept too: custom resources are in it" not in out
    assert left(mc)["Namespace"] == [] and left(mc)["Widget"] == ["w1"]
    assert left(mc)["CustomResourceDefinition"] == ["widgets.example.com"]


def test_keep_crds_needs_crds_to_keep(tmp_path: Path) -> None:
    mc = MemCluster()
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: default}\n")
    assert cosctl("publish", str(tmp_path / "cm.yaml"), "--owner", "shop", cluster=mc)[0] == 0
    ticker(mc)()
    code, out, err = uninstall(mc, "--keep-crds")
    assert (code, out, err) == (1, "owner shop: Active revision shop-1 (1 object(s))\n", (
        "cosctl uninstall: owner shop: its revisions control no CustomResourceDefinition, so there is none to keep; "
        "uninstall without --keep-crds\n"))


def test_dry_run_and_no_wait(tmp_path: Path) -> None:
    mc = installed(tmp_path)
    widget(mc, "w1", "shop")
    mc.reset_requests()
    code, out, err = uninstall(mc, "--delete-custom-resources", "--dry-run")
    assert (code, err) == (0, "")
    assert out == PLAN.format(crs="custom resources exist: Widget shop/w1") + (
        "would delete Widget shop/w1: custom resource of CustomResourceDefinition widgets.example.com\n"
        "would delete ClusterObjectSet shop-1: the reconciler tears its objects down in reverse phase order\n"
        "dry run: nothing was deleted\n")
    assert mc.writes == 0
    mc.remove("example.com/v1", "Widget", "w1", "shop")
    code, out, err = uninstall(mc, "--no-wait", sleep=lambda _s: None)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "the reconciler tears the revisions down; follow it: cosctl status --owner shop"
    assert mc.peek(*COS, "shop-1")["metadata"]["deletionTimestamp"]
    # run again while it is under way: nothing to delete, it follows the teardown to its end
    code, out, err = uninstall(mc)
    assert (code, err) == (0, "")
    assert out == ("owner shop: revision shop-1 is being deleted already\n"
                   "CustomResourceDefinition widgets.example.com (controlled by shop-1, being deleted): no custom "
                   "resources\n"
                   "Namespace shop (controlled by shop-1): deleting it deletes everything in it\n"
                   "owner shop: 1 revision(s) tearing down; shop-1: removing its objects in reverse phase order\n"
                   "owner shop: every revision is gone\n"
                   "owner shop uninstalled: 1 revision(s) deleted, their objects removed in reverse phase order\n")


def test_a_teardown_the_reconciler_cannot_make_is_shown_while_it_waits(tmp_path: Path) -> None:
    mc = installed(tmp_path)
    refused = Forbidden('deployments.apps "web" is forbidden: User "x" cannot delete resource "deployments"')
    clock = iter(range(0, 1000, 2))
    mc.fail("delete", refused, kind="Deployment", times=100)
    code, out, err = uninstall(mc, "--timeout", "3", clock=lambda: next(clock))
    assert code == 6
    assert out.splitlines()[-1] == (
        "owner shop: 1 revision(s) tearing down; shop-1: deleting Object Deployment.apps/v1 shop/web: "
        'deployments.apps "web" is forbidden: User "x" cannot delete resource "deployments"')
    assert err.startswith("cosctl uninstall: owner shop: still waiting after 3 s (")
    assert err.endswith("; the reconciler goes on; `cosctl status --owner shop` shows where it stands\n")


def test_the_teardown_permission_preflight(tmp_path: Path) -> None:
    mc = MemCluster()
    allow_service_accounts(mc, "shop/installer")
    assert cosctl("publish", operator(tmp_path / "v1"), "--owner", "shop", "--service-account", "shop/installer",
                  cluster=mc)[0] == 0
    mc.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "service-accounts-admin")
    code, out, err = uninstall(mc)
    assert (code, out) == (1, "owner shop: Active revision shop-1 (4 object(s))\n")   # not rolled out yet
    assert err == (
        "cosctl uninstall: the permission preflight refused the uninstall (nothing was deleted):\n"
        "ServiceAccount shop/installer lacks, by the cluster's RBAC, to tear ClusterObjectSet shop-1 down:\n"
        '  Namespace:"" APIGroups:[] Resources:[namespaces] ResourceNames:[shop] Verbs:[delete]\n'
        '  Namespace:"" APIGroups:[apiextensions.k8s.io] Resources:[customresourcedefinitions] '
        "ResourceNames:[widgets.example.com] Verbs:[delete]\n"
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[cfg] Verbs:[delete]\n'
        '  Namespace:"shop" APIGroups:[apps] Resources:[deployments] ResourceNames:[web] Verbs:[delete]\n'
        "`cosctl rbac --owner shop --service-account shop/installer` prints the RBAC the installed revision needs, "
        "its teardown included; --preflight-permissions None skips the check, for this run only\n")
    mc.delete("v1", "ServiceAccount", "installer", "shop")
    code, _, err = uninstall(mc)
    assert code == 1
    assert err.splitlines()[1] == (
        "ServiceAccount shop/installer does not exist: the reconciler tears ClusterObjectSet shop-1 down with its "
        'token (service account "installer" not found in namespace "shop")')
    code, _, err = uninstall(mc, "--preflight-permissions", "None", "--no-wait")
    assert (code, err) == (0, "")
    assert mc.peek(*COS, "shop-1") is None   # never rolled out: no finalizer, nothing to tear down


def test_the_plan_reads_what_the_revisions_hold_by_name_and_lists_everything_only_without_their_content(
        tmp_path: Path) -> None:
    """On a cluster with many CRDs, reading them all is slow: the CRDs and Namespaces the revision's content names
    are read one by one. When its Secrets are gone, every CRD and Namespace is listed, and the live controller
    reference still says which ones the teardown deletes."""
    mc = installed(tmp_path)
    widget(mc, "w1", "shop")
    mc.reset_requests()
    assert uninstall(mc)[0] == 1
    reads = sorted({(r.verb, r.kind, r.name) for r in mc.log if r.kind in ("CustomResourceDefinition", "Namespace")})
    assert reads == [("get", "CustomResourceDefinition", "widgets.example.com"), ("get", "Namespace", "shop")]

    for secret in mc.objects("v1", "Secret"):
        mc.remove("v1", "Secret", secret["metadata"]["name"], secret["metadata"]["namespace"])
    mc.reset_requests()
    code, out, err = uninstall(mc)
    assert (code, out) == (1, PLAN.replace("(4 object(s))", "(content unreadable)").format(
        crs="custom resources exist: Widget shop/w1"))
    assert "  widgets.example.com: Widget shop/w1\n" in err
    assert {(r.verb, r.kind) for r in mc.log if r.kind in ("CustomResourceDefinition", "Namespace")} == {
        ("list", "CustomResourceDefinition"), ("list", "Namespace")}


# ---------------------------------------------------------------------------------------- the review's cases

def test_keep_crds_refuses_what_a_revision_being_deleted_controls(tmp_path: Path) -> None:
    """Mid-handover, the newer revision (which adopted the CRD and the namespace) deleted already: its teardown
    deletes them whatever is published, so they cannot be kept, and nothing is written."""
    mc = installed(tmp_path)
    widget(mc, "w1", "shop")
    assert cosctl("publish", operator(tmp_path / "v2", image="web:2"), "--owner", "shop", cluster=mc)[0] == 0
    reconcile(mc, "shop-2")   # adopts everything; not ready yet, so shop-1 stays Active
    mc.delete(*COS, "shop-2")
    mc.reset_requests()
    code, out, err = uninstall(mc, "--keep-crds")
    assert code == 1
    assert "CustomResourceDefinition widgets.example.com (controlled by shop-2, being deleted): custom resources " \
           "exist: Widget shop/w1" in out.splitlines()
    assert err == (
        "cosctl uninstall: CustomResourceDefinition widgets.example.com (controlled by shop-2), Namespace shop "
        "(controlled by shop-2) cannot be kept: the revision controlling it is being deleted already, and its "
        "teardown deletes it whatever is published now (with every custom resource of a CustomResourceDefinition, "
        "and everything in a Namespace); nothing was written\n")
    assert mc.writes == 0 and left(mc)[api.KIND] == ["shop-1", "shop-2"]


V2_CRD = CRD.replace("""  versions:
  - name: v1
    served: true
    storage: true
""", """  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {service: {name: web-service, namespace: shop, path: /convert}}
  versions:
  - name: v2
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: false
""")


def test_keep_crds_keeps_the_crd_as_applied_not_as_a_stuck_revision_declares_it(tmp_path: Path) -> None:
    """The newest revision is stuck before its CRD phase (a collision): the CRD kept is the one its controller (the
    older revision) applied, not the never-applied version with another storage version and a conversion
    webhook."""
    mc = installed(tmp_path)
    widget(mc, "w1", "shop")
    mc.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "taken"}})   # someone else's
    root = tmp_path / "v2"
    operator(root, image="web:2")
    text = (root / "all.yaml").read_text().replace(CRD, V2_CRD)
    (root / "all.yaml").write_text(text + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: taken}\n")
    assert cosctl("publish", str(root), "--owner", "shop", cluster=mc)[0] == 0
    ticker(mc)()
    assert mc.peek(*COS, "shop-2")["status"]["conditions"][0]["reason"] == "Retrying"   # the collision
    code, out, err = uninstall(mc, "--keep-crds")
    assert (code, err) == (0, "")
    assert "warning:" not in out
    live = mc.peek(CRD_API, "CustomResourceDefinition", "widgets.example.com")
    assert ([v["name"] for v in live["spec"]["versions"]], "conversion" in live["spec"]) == (["v1"], False)
    assert [r["name"] for r in live["metadata"]["ownerReferences"] if r.get("controller")] == ["shop-3"]


def test_keep_crds_keeps_the_namespace_of_the_service_account_it_is_applied_with(tmp_path: Path) -> None:
    from reconciler.engine import EngineConfig
    from tests.engine.test_serviceaccount import Writers

    mc = MemCluster()
    mc.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})   # made first
    allow_service_accounts(mc, "shop/installer")
    assert cosctl("publish", operator(tmp_path / "v1"), "--owner", "shop", "--service-account", "shop/installer",
                  "--collision-protection", "IfNoController", cluster=mc)[0] == 0
    config = EngineConfig(writer=Writers())

    def tick(_seconds: float = 0) -> None:
        for _ in range(2):
            for cos in mc.objects(*COS):
                reconcile(mc, cos["metadata"]["name"], config=config)
            controllers(mc)

    tick()
    tick()
    widget(mc, "w1", "default")   # nothing of the operator's in shop
    code, out, err = uninstall(mc, "--keep-crds", sleep=tick)
    assert (code, err) == (0, "")
    assert "Namespace shop was kept too: the ServiceAccount shop/installer the revisions are applied with is in it" \
        in out.splitlines()
    assert mc.peek("v1", "ServiceAccount", "installer", "shop") is not None
    assert left(mc)["Namespace"] == ["shop"] and left(mc)["Deployment"] == []


def test_the_teardown_preflight_goes_by_who_controls_an_object_mid_handover(tmp_path: Path) -> None:
    """Revision 2 holds the ConfigMap but has not adopted it yet: revision 1's teardown deletes it, so revision 1's
    ServiceAccount needs delete on it, not only patch."""
    mc = installed(tmp_path)
    mc.edit(*COS, "shop-1", None, lambda o: o["metadata"].setdefault("annotations", {}).update({
        api.ANNOTATION_SERVICE_ACCOUNT_NAME: "installer", api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE: "default"}))
    for name in ("installer", "admin"):
        mc.put({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "default"}})
    grant(mc, {"kind": "ServiceAccount", "name": "installer", "namespace": "default"}, [
        {"apiGroups": ["", "apps", "apiextensions.k8s.io"],
         "resources": ["namespaces", "deployments", "customresourcedefinitions"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}], name="installer")
    grant(mc, {"kind": "ServiceAccount", "name": "admin", "namespace": "default"},
          [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], name="admin")
    assert cosctl("publish", operator(tmp_path / "v2", image="web:2"), "--owner", "shop", "--service-account",
                  "default/admin", cluster=mc)[0] == 0
    reconcile(mc, "shop-2")   # cannot write as default/admin here: adopts nothing yet
    code, _, err = uninstall(mc, "--dry-run")
    assert (code, err) == (1, (
        "cosctl uninstall: the permission preflight refused the uninstall (nothing was deleted):\n"
        "ServiceAccount default/installer lacks, by the cluster's RBAC, to tear ClusterObjectSet shop-1 down:\n"
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[cfg] Verbs:[delete]\n'
        "`cosctl rbac --owner shop --service-account default/installer` prints the RBAC the installed revision "
        "needs, its teardown included; --preflight-permissions None skips the check, for this run only\n"))
    from reconciler.engine import EngineConfig
    from tests.engine.test_serviceaccount import Writers

    reconcile(mc, "shop-2", config=EngineConfig(writer=Writers()))   # adopted: shop-1 only releases it (a patch)
    assert [r["name"] for r in mc.peek("v1", "ConfigMap", "cfg", "shop")["metadata"]["ownerReferences"]
            if r.get("controller")] == ["shop-2"]
    assert uninstall(mc, "--dry-run")[0] == 0


def test_cluster_scoped_custom_resources_keep_no_namespace(tmp_path: Path) -> None:
    mc = MemCluster()
    root = tmp_path / "v1"
    operator(root)
    (root / "all.yaml").write_text((root / "all.yaml").read_text().replace("scope: Namespaced", "scope: Cluster"))
    assert cosctl("publish", str(root), "--owner", "shop", cluster=mc)[0] == 0
    ticker(mc)()
    mc.put({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "g1"}})
    code, out, err = uninstall(mc, "--keep-crds")
    assert (code, err) == (0, "")
    assert "Namespace shop was kept too" not in out
    assert left(mc)["Namespace"] == [] and left(mc)["Widget"] == ["g1"]


def test_a_crd_serving_no_version_counts_as_holding_custom_resources(tmp_path: Path) -> None:
    mc = installed(tmp_path)
    widget(mc, "w1", "shop", finalizers=["example.com/cleanup"])
    mc.edit(CRD_API, "CustomResourceDefinition", "widgets.example.com", None,
            lambda o: [v.update(served=False) for v in o["spec"]["versions"]])
    code, out, err = uninstall(mc)
    found = "its custom resources cannot be listed (it serves no version); deleting it deletes any it stores"
    assert (code, out) == (1, PLAN.format(crs=f"custom resources exist: {found}"))
    assert f"  widgets.example.com: {found}\n" in err
    # asked to delete them: they cannot be deleted one by one, so they go with their CRD
    code, out, err = uninstall(mc, "--delete-custom-resources", "--dry-run")
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == [
        "would delete ClusterObjectSet shop-1: the reconciler tears its objects down in reverse phase order",
        "dry run: nothing was deleted"]


def test_what_an_orphaning_or_still_tearing_down_revision_is_called(tmp_path: Path) -> None:
    mc = installed(tmp_path)
    root = tmp_path / "v2"
    operator(root)   # shop-2 drops the ConfigMap, whose finalizer holds shop-1's teardown once archived
    (root / "all.yaml").write_text((root / "all.yaml").read_text().replace(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\ndata: {a: b}\n---\n", ""))
    mc.edit("v1", "ConfigMap", "cfg", "shop", lambda o: o["metadata"].__setitem__("finalizers", ["x/hold"]))
    assert cosctl("publish", str(root), "--owner", "shop", cluster=mc)[0] == 0
    ticker(mc)()
    assert "owner shop: archived revision shop-1 still tearing down" in uninstall(mc, "--dry-run")[1].splitlines()

    # kubectl delete --cascade=orphan: the API server adds the orphan finalizer, the garbage collector orphans
    mc.edit(*COS, "shop-2", None, lambda o: o["metadata"]["finalizers"].append("orphan"))
    mc.delete(*COS, "shop-2", propagation_policy="Orphan")
    mc.remove_finalizer("v1", "ConfigMap", "cfg", "shop", "x/hold")
    tick = ticker(mc)

    def garbage_collector(_seconds: float) -> None:
        tick()
        cos = mc.peek(*COS, "shop-2")
        if cos is not None and "orphan" in cos["metadata"]["finalizers"]:
            mc.remove_finalizer(*COS, "shop-2", None, "orphan")

    code, out, err = uninstall(mc, sleep=garbage_collector)
    assert (code, err) == (0, "")
    assert "owner shop: revision shop-2 is being deleted already, leaving its objects in place (propagationPolicy " \
           "Orphan)" in out.splitlines()
    assert out.splitlines()[-1] == (
        "owner shop uninstalled: 2 revision(s) deleted, the objects of shop-2 left in place (it was deleted with "
        "propagationPolicy Orphan), the others' removed in reverse phase order")
    assert left(mc)["Deployment"] == ["web"]
