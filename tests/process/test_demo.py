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
