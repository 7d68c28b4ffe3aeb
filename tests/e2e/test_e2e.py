"""End-to-end: the real reconciler process against a real cluster (opt-in: ``pytest -m e2e``).

Runs only when ``COS_E2E_KUBECONFIG`` names the kubeconfig of a reachable cluster; skipped otherwise with
the reason. It installs the ClusterObjectSet CRD if it is missing (and leaves it: other things may use it),
starts ``cos-reconciler`` as a subprocess with a per-run system namespace, and works only in namespaces and
COS names carrying a per-run random suffix, deleting them at the end, so it can run against any conformant
cluster repeatedly. The cluster must not run another COS reconciler at the same time (two reconcilers
without a shared Lease would both act on these COSs).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.cluster.interface import ApiError, NotFound
from common.cluster.kube import KubeCluster

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "deploy" / "crd" / "olm.operatorframework.io_clusterobjectsets.yaml"
COS_API = "olm.operatorframework.io/v1"
KIND = "ClusterObjectSet"
RUN = uuid.uuid4().hex[:6]


def _cluster_or_skip() -> tuple[str, KubeCluster]:
    path = os.environ.get("COS_E2E_KUBECONFIG")
    if not path:
        pytest.skip("set COS_E2E_KUBECONFIG to the kubeconfig of a disposable cluster to run the e2e suite")
    if not os.path.isfile(path):
        pytest.skip(f"COS_E2E_KUBECONFIG={path}: no such file")
    try:
        kube = KubeCluster.from_kubeconfig(path, max_retries=1, request_timeout=10)
        kube.list("v1", "Namespace", label_selector=f"cos-e2e-probe-{RUN}")
    except Exception as e:  # unreachable, bad credentials, broken file
        pytest.skip(f"COS_E2E_KUBECONFIG={path}: cluster not reachable ({type(e).__name__}: {e})")
    return path, kube


def wait_for(cond: Callable[[], Any], timeout: float = 120.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(1.0)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Iterator[dict[str, Any]]:
    path, kube = _cluster_or_skip()
    try:
        kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "clusterobjectsets.olm.operatorframework.io")
    except NotFound:
        kube.create(yaml.safe_load(CRD_FILE.read_text()))
        wait_for(lambda: _established(kube), 60, "the CRD to be established")
    system_ns = f"cos-e2e-sys-{RUN}"
    work_ns = f"cos-e2e-{RUN}"
    for ns in (system_ns, work_ns):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    log_path = tmp_path_factory.mktemp("e2e") / "reconciler.log"
    with log_path.open("w") as log:  # the child keeps its own descriptor; the teardown reads the file back
        proc = subprocess.Popen(
            [sys.executable, "-m", "reconciler.cli", "--kubeconfig", path, "--system-namespace", system_ns,
             "--workers", "4", "--health-bind", "0", "--metrics-bind", "0", "--log-format", "json"],
            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=log, stderr=subprocess.STDOUT)
    state = {"kube": kube, "ns": work_ns, "system_ns": system_ns, "cos": []}
    try:
        yield state
    finally:
        for name in state["cos"]:
            with contextlib.suppress(ApiError):
                kube.delete(COS_API, KIND, name)
        wait_for(lambda: all(_gone(kube, n) for n in state["cos"]), 120, "the test COSs to be deleted")
        proc.terminate()
        proc.wait(30)
        for ns in (work_ns, system_ns):
            with contextlib.suppress(ApiError):
                kube.delete("v1", "Namespace", ns)
        sys.stderr.write(log_path.read_text()[-4000:])


def _established(kube: KubeCluster) -> bool:
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "clusterobjectsets.olm.operatorframework.io")
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def _gone(kube: KubeCluster, name: str) -> bool:
    try:
        kube.get(COS_API, KIND, name)
        return False
    except NotFound:
        return True


def cm(ns: str, name: str, labels: dict | None = None, **data: str) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": "v"}}


def make_cos(env: dict, name: str, revision: int, phases: list[dict], owner: str | None = None,
             **spec: Any) -> dict:
    full = f"{name}-{RUN}"
    meta: dict[str, Any] = {"name": full}
    if owner:
        meta["labels"] = {"olm.operatorframework.io/owner-name": f"{owner}-{RUN}"}
    obj = {"apiVersion": COS_API, "kind": KIND, "metadata": meta,
           "spec": {"revision": revision, "lifecycleState": "Active", "collisionProtection": "Prevent",
                    "phases": phases, **spec}}
    env["cos"].append(full)
    return env["kube"].create(obj)


def conditions(env: dict, name: str) -> dict[str, dict]:
    obj = env["kube"].get(COS_API, KIND, name)
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def reason(env: dict, name: str, ctype: str = "Progressing") -> str:
    return str(conditions(env, name).get(ctype, {}).get("reason", ""))


def exists(env: dict, kind_av: tuple[str, str], name: str, ns: str | None) -> bool:
    try:
        env["kube"].get(kind_av[0], kind_av[1], name, ns)
        return True
    except NotFound:
        return False


CM = ("v1", "ConfigMap")


def test_three_phase_rollout_gated_by_a_probe(env: dict) -> None:
    ns = env["ns"]
    gate = cm(ns, "gate", labels={"e2e-gate": "yes"}, declared="1")
    cos = make_cos(env, "gated", 1, [
        {"name": "one", "objects": [{"object": gate}]},
        {"name": "two", "objects": [{"object": cm(ns, "two")}]},
        {"name": "three", "objects": [{"object": cm(ns, "three")}]},
    ], progressionProbes=[{
        "selector": {"type": "Label", "label": {"matchLabels": {"e2e-gate": "yes"}}},
        "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "data.ready", "value": "true"}}]}])
    name = cos["metadata"]["name"]
    wait_for(lambda: reason(env, name) == "RollingOut", what="RollingOut")
    wait_for(lambda: exists(env, CM, "gate", ns), what="phase one")
    time.sleep(5)
    assert not exists(env, CM, "two", ns), "phase two started before the probe passed"
    assert conditions(env, name)["Available"]["reason"] == "ProbeFailure"
    # a field the COS does not declare: our server-side apply leaves it to its manager
    env["kube"].merge_patch("v1", "ConfigMap", "gate", ns, {"data": {"ready": "true"}})
    wait_for(lambda: reason(env, name) == "Succeeded", what="Succeeded")
    assert exists(env, CM, "two", ns) and exists(env, CM, "three", ns)
    assert conditions(env, name)["Succeeded"]["status"] == "True"


def test_collision_with_an_object_owned_by_someone_else(env: dict) -> None:
    ns = env["ns"]
    owner = env["kube"].create(cm(ns, "foreign-owner"))
    foreign = cm(ns, "taken")
    foreign["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "foreign-owner",
                                               "uid": owner["metadata"]["uid"], "controller": True}]
    env["kube"].create(foreign)
    cos = make_cos(env, "collide", 1, [{"name": "one", "objects": [{"object": cm(ns, "taken", k="mine")}]}])
    name = cos["metadata"]["name"]
    wait_for(lambda: conditions(env, name).get("Progressing", {}).get("message", "").startswith(
        "revision object collisions in phase"), what="the collision report")
    assert reason(env, name) == "Retrying"
    live = env["kube"].get("v1", "ConfigMap", "taken", ns)
    assert live["data"] == {"k": "v"}  # not overwritten


def test_revision_handover_and_archival(env: dict) -> None:
    ns = env["ns"]
    one = make_cos(env, "app-r1", 1, [{"name": "one", "objects": [{"object": cm(ns, "shared", v="1")},
                                                                   {"object": cm(ns, "only-r1")}]}], owner="app")
    n1 = one["metadata"]["name"]
    wait_for(lambda: reason(env, n1) == "Succeeded", what="rev 1")
    two = make_cos(env, "app-r2", 2, [{"name": "one", "objects": [{"object": cm(ns, "shared", v="2")}]}],
                   owner="app")
    n2 = two["metadata"]["name"]
    wait_for(lambda: reason(env, n2) == "Succeeded", what="rev 2")
    wait_for(lambda: env["kube"].get(COS_API, KIND, n1)["spec"]["lifecycleState"] == "Archived", what="archival")
    wait_for(lambda: reason(env, n1) == "Archived", what="rev 1 torn down")
    shared = env["kube"].get("v1", "ConfigMap", "shared", ns)
    assert shared["data"] == {"v": "2"}
    controller = [r for r in shared["metadata"]["ownerReferences"] if r.get("controller")]
    assert [r["name"] for r in controller] == [n2]
    assert not exists(env, CM, "only-r1", ns)


def test_deletion_tears_down_in_reverse_order(env: dict) -> None:
    ns = env["ns"]
    cos = make_cos(env, "deleteme", 1, [{"name": "first", "objects": [{"object": cm(ns, "d-first")}]},
                                        {"name": "second", "objects": [{"object": cm(ns, "d-second")}]}])
    name = cos["metadata"]["name"]
    wait_for(lambda: reason(env, name) == "Succeeded", what="rollout")
    env["kube"].delete(COS_API, KIND, name)
    wait_for(lambda: _gone(env["kube"], name), what="the COS to go")
    assert not exists(env, CM, "d-first", ns) and not exists(env, CM, "d-second", ns)


def test_drift_is_repaired(env: dict) -> None:
    ns = env["ns"]
    cos = make_cos(env, "drift", 1, [{"name": "one", "objects": [{"object": cm(ns, "drifty", k="want")}]}])
    name = cos["metadata"]["name"]
    wait_for(lambda: reason(env, name) == "Succeeded", what="rollout")
    env["kube"].merge_patch("v1", "ConfigMap", "drifty", ns, {"data": {"k": "tampered"}})
    wait_for(lambda: env["kube"].get("v1", "ConfigMap", "drifty", ns)["data"].get("k") == "want",
             what="the drift repair")


def _metrics(env: dict) -> str:
    resp = env["kube"]._open("GET", "/metrics", None, None, "", 30)
    return str(resp.read().decode() if hasattr(resp, "read") else resp.data.decode())


def test_steady_state_of_200_mixed_shape_objects_sends_no_write(env: dict) -> None:
    """Issue 9: objects the server normalizes (empty maps and lists, stringData, defaults, int-or-string,
    quantities, nulls) cost no write and no dry run at steady state, counted by the API server itself."""
    from tests.support import mixed_shapes

    ns = env["ns"]
    full = f"shapes-{RUN}"
    make_cos(env, "shapes", 1, mixed_shapes.phases(ns))
    wait_for(lambda: reason(env, full) == "Succeeded", 300, "the 210-object COS to roll out")
    time.sleep(15)   # controllers finish their own first writes (Deployment revision annotations)
    before = mixed_shapes.apiserver_writes(_metrics(env), mixed_shapes.RESOURCES)
    for tick in range(6):   # each COS change makes the reconciler walk all 210 objects again
        env["kube"].merge_patch(COS_API, KIND, full, None, {"metadata": {"annotations": {"e2e/tick": str(tick)}}})
        time.sleep(10)
    after = mixed_shapes.apiserver_writes(_metrics(env), mixed_shapes.RESOURCES)
    delta = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after if after.get(k, 0.0) != before.get(k, 0.0)}
    assert delta == {}
    env["kube"].delete(COS_API, KIND, full)
    wait_for(lambda: _gone(env["kube"], full), 300, "the 210-object COS to be torn down")
