"""reconciler.demo against the fake API server: what ``make demo`` does when KUBECONFIG names a cluster."""

from __future__ import annotations

import io
from pathlib import Path

from reconciler.demo import cluster_problem, run_on_cluster
from tests.support.fake_apiserver import FakeApiServer

EXAMPLE = """
apiVersion: olm.operatorframework.io/v1
kind: ClusterObjectSet
metadata:
  name: demo-1
spec:
  revision: 1
  lifecycleState: Active
  collisionProtection: Prevent
  phases:
    - name: config
      objects:
        - object:
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: settings, namespace: demo}
            data: {mode: production}
"""


def test_cluster_problem_explains_what_is_missing(tmp_path: Path, server: FakeApiServer) -> None:
    assert cluster_problem(None).startswith("KUBECONFIG is not set: point it at a cluster")
    assert cluster_problem(str(tmp_path / "nope")) == f"KUBECONFIG={tmp_path / 'nope'}: no such file"
    assert cluster_problem(server.write_kubeconfig(str(tmp_path / "kc"))) is None


def test_run_on_cluster_installs_the_crd_creates_examples_and_reconciles(tmp_path: Path) -> None:
    with FakeApiServer(with_cos_crd=False) as server:
        example = tmp_path / "01-demo.yaml"
        example.write_text(EXAMPLE)
        out = io.StringIO()
        rc = run_on_cluster(server.write_kubeconfig(str(tmp_path / "kc")), [example], timeout=20, out=out)
        text = out.getvalue()
        assert rc == 0, text
        assert "installed CustomResourceDefinition clusterobjectsets.olm.operatorframework.io" in text
        assert "ClusterObjectSet demo-1 created" in text
        assert "demo-1: Progressing=True Succeeded: Revision 1 has rolled out. | Available=True ProbesSucceeded" in text
        assert server.get_object("v1", "ConfigMap", "settings", "demo")["data"] == {"mode": "production"}


def test_run_on_cluster_creates_the_objects_the_webhook_admitted(tmp_path: Path) -> None:
    """``make demo`` passes the objects with the webhook's defaults applied, so a cluster without the webhook
    takes them: here the admitted COS, where the file had no lifecycleState."""
    import yaml

    admitted = yaml.safe_load(EXAMPLE)
    with FakeApiServer(with_cos_crd=False) as server:
        out = io.StringIO()
        rc = run_on_cluster(server.write_kubeconfig(str(tmp_path / "kc")), [admitted], timeout=20, out=out)
        assert rc == 0, out.getvalue()
        assert "ClusterObjectSet demo-1 created" in out.getvalue()


def test_run_on_cluster_says_what_it_waits_for_and_what_is_still_pending(tmp_path: Path) -> None:
    import yaml

    cos = yaml.safe_load(EXAMPLE)
    cos["metadata"]["name"] = "demo-2"
    cos["spec"]["phases"][0]["objects"] = [{"object": {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "example.com/web:1"}]}}}}}]
    with FakeApiServer(with_cos_crd=False) as server:
        out = io.StringIO()
        rc = run_on_cluster(server.write_kubeconfig(str(tmp_path / "kc")), [cos], timeout=3, out=out)
        lines = out.getvalue().splitlines()
    assert rc == 1
    assert ("running the reconciler for up to 3s, until each of the 1 ClusterObjectSet(s) has rolled out (every "
            "phase's objects ready: Deployments Available, which needs nodes that can pull and run their images), "
            "been archived, or is blocked...") in lines
    (status,) = [line for line in lines if line.startswith("demo-2: ")]
    assert status.startswith("demo-2: Progressing=True RollingOut: Revision 1 is rolling out. | Available=False "
                             "ProbeFailure: "), status
    assert "demo/web" in status or "web" in status.split("ProbeFailure: ", 1)[1], status
    assert lines[-1] == "not settled after 3s: demo-2 (Available above names what each still waits for)"
