"""Producer and reconciler engine together on the in-memory API server: what publish creates rolls out,
status --watch follows it to success, and the next revision takes over and archives the previous one."""

from __future__ import annotations

from pathlib import Path

from common.contract import api
from common.testing.memcluster import MemCluster
from reconciler.engine import reconcile
from tests.producer.helpers import cosctl

COS = (api.API_VERSION, api.KIND)


def write_bundle(root: Path, image: str) -> str:
    root.mkdir(parents=True, exist_ok=True)
    (root / "all.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\ndata: {a: b}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
        f"spec: {{replicas: 1, template: {{spec: {{containers: [{{name: w, image: '{image}'}}]}}}}}}\n")
    return str(root)


def controllers(mc: MemCluster) -> None:
    """Play the namespace, CRD and deployment controllers: everything that exists becomes ready, a
    Namespace being deleted is emptied."""
    for ns in mc.objects("v1", "Namespace"):
        if (ns.get("status") or {}).get("phase") != "Active":
            mc.set_status("v1", "Namespace", ns["metadata"]["name"], None, {"phase": "Active"})
        if ns["metadata"].get("deletionTimestamp"):
            mc.finish_namespace(ns["metadata"]["name"])
    for crd in mc.objects("apiextensions.k8s.io/v1", "CustomResourceDefinition"):
        if not crd.get("status"):
            mc.set_status("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd["metadata"]["name"], None,
                          {"conditions": [{"type": "Established", "status": "True"},
                                          {"type": "NamesAccepted", "status": "True"}]})
    for d in mc.objects("apps/v1", "Deployment"):
        want = {"observedGeneration": d["metadata"]["generation"], "replicas": 1, "updatedReplicas": 1,
                "availableReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
        if d.get("status") != want:
            mc.set_status("apps/v1", "Deployment", d["metadata"]["name"], "shop", want)


def test_publish_roll_out_watch_and_hand_over(tmp_path):
    mc = MemCluster()
    assert cosctl("publish", write_bundle(tmp_path / "v1", "web:1"), "--owner", "shop", cluster=mc)[0] == 0

    def tick(_seconds: float) -> None:
        for cos in mc.objects(*COS):
            reconcile(mc, cos["metadata"]["name"])
        controllers(mc)

    code, out, err = cosctl("status", "shop-1", "--watch", cluster=mc, sleep=tick)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "shop-1: rollout succeeded: Revision 1 has rolled out."
    assert cosctl("status", "shop-1", cluster=mc)[1].startswith(
        "ClusterObjectSet shop-1: revision 1, Active, owner shop\n"
        "  Progressing  True     Succeeded                 Revision 1 has rolled out.\n"
        "  Available    True     ProbesSucceeded           Objects are available and pass all probes.\n"
        "  Succeeded    True     Succeeded                 Revision succeeded rolling out.\n"
        "phase 1/3 namespaces: complete (1/1 ready)\n")

    # same content again: nothing; new image: revision 2 rolls out and archives revision 1
    assert cosctl("publish", write_bundle(tmp_path / "v1", "web:1"), "--owner", "shop", cluster=mc)[1] == (
        "unchanged: ClusterObjectSet shop-1 (revision 1) already has this content\n")
    assert cosctl("publish", write_bundle(tmp_path / "v2", "web:2"), "--owner", "shop", cluster=mc)[0] == 0
    code, out, _ = cosctl("status", "shop-2", "--watch", cluster=mc, sleep=tick)
    assert code == 0
    for _ in range(3):
        tick(0)
    assert mc.peek(*COS, "shop-1")["spec"]["lifecycleState"] == "Archived"
    assert mc.peek("apps/v1", "Deployment", "web", "shop")["spec"]["template"]["spec"]["containers"][0][
        "image"] == "web:2"
    history = cosctl("history", "--owner", "shop", cluster=mc)[1].splitlines()
    assert [line.split()[:5] for line in history[1:]] == [
        ["1", "shop-1", "Archived", "Archived", "yes"], ["2", "shop-2", "Active", "Succeeded", "yes"]]
    assert cosctl("status", "shop-1", "--watch", cluster=mc)[0] == 5


def test_retention_with_the_engine_keeps_five_archived_and_their_secrets(tmp_path):
    mc = MemCluster()

    def tick(_seconds: float = 0) -> None:
        for _ in range(3):
            for cos in mc.objects(*COS):
                reconcile(mc, cos["metadata"]["name"])
            controllers(mc)

    for v in range(1, 10):
        assert cosctl("publish", write_bundle(tmp_path / f"v{v}", f"web:{v}"), "--owner", "shop", cluster=mc)[0] == 0
        tick()
    states = {c["metadata"]["name"]: c["spec"]["lifecycleState"] for c in mc.objects(*COS)}
    # retention ran before creating revision 9: revisions 1..2 went, 3..7 archived are kept, and 8 was
    # archived by 9's successful rollout afterwards
    assert states == {**{f"shop-{i}": "Archived" for i in range(3, 9)}, "shop-9": "Active"}
    assert cosctl("gc", "--owner", "shop", cluster=mc)[1] == (
        "delete ClusterObjectSet shop-3: archived revision 3 beyond the newest 5\n")
    left = {s["metadata"]["labels"][api.LABEL_REVISION_NAME] for s in mc.objects("v1", "Secret")}
    assert left == {f"shop-{i}" for i in range(4, 10)}
