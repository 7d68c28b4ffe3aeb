"""End-to-end: a torn-down COS lets go only when the API server says its objects are gone (issue 16).

For deletion and for archival, one COS holds one object of every kind whose deletion is not immediate, each in
its own phase, and the test keeps each of them from going the way a cluster does: a Pod bound to a node that
has no kubelet (its grace period), an object in foreground deletion (a dependent that blocks it), a finalizer
of someone else's, a PVC a Pod uses (``kubernetes.io/pvc-protection``), a bound PV (``kubernetes.io/pv-
protection``), a CRD with a custom resource left (``customresourcecleanup.apiextensions.k8s.io``) and a
Namespace with content left (its ``kubernetes`` finalizer, the namespace controller). The teardown walks the
phases last first; at each, the test waits for Available to name the held object, checks that the COS still
holds its finalizer and that earlier phases are untouched, then lets the object go (as the kubelet, the
garbage collector, the controllers would) and the reconciler must move on by itself. The end is watched
closely: each look reads the COS first, then the objects, so a COS released while any object of its phases
is still there fails the test. The issue's own case (Namespace, ConfigMap and ServiceAccount, Deployment) is
checked the same way with nothing held but the namespace controller's own work.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import pytest

from common.cluster.interface import ApiError
from tests.e2e.conftest import COS_API, KIND, brief, cos_name, get_cos, gone, make_cos, wait_for, wait_succeeded

pytestmark = pytest.mark.e2e
HOLD = "e2e.example.com/hold"
TEARDOWN_FINALIZER = "olm.operatorframework.io/teardown"
TEARING_DOWN = ("True", "Retrying", "removing revision resources that are not owned by another revision")
CRD_API = "apiextensions.k8s.io/v1"
MERGE = "application/merge-patch+json"

Ref = tuple[str, str, str, str | None]   # apiVersion, kind, name, namespace


def _end(env: dict[str, Any], name: str, how: str) -> None:
    if how == "delete":
        env["kube"].delete(COS_API, KIND, name)
    else:
        env["kube"].merge_patch(COS_API, KIND, name, None, {"spec": {"lifecycleState": "Archived"}})


def _released(env: dict[str, Any], name: str, how: str) -> bool:
    """The teardown is over: the COS is gone (deleted), or archived and without its finalizer."""
    try:
        cos = get_cos(env, name)
    except ApiError as e:
        if e.code == 404:
            return True
        raise
    if how == "delete":
        return False
    return TEARDOWN_FINALIZER not in (cos["metadata"].get("finalizers") or []) and \
        brief(env, name) == ("False", "Archived", "revision is archived")


def _holds(env: dict[str, Any], name: str) -> bool:
    return TEARDOWN_FINALIZER in (get_cos(env, name)["metadata"].get("finalizers") or [])


def _exists(env: dict[str, Any], ref: Ref) -> bool:
    return not gone(env["kube"], *ref)


def _marked(env: dict[str, Any], ref: Ref) -> bool:
    try:
        return bool(env["kube"].get(*ref)["metadata"].get("deletionTimestamp"))
    except ApiError:
        return True   # gone


def _strip_finalizers(env: dict[str, Any], ref: Ref) -> None:
    av, kind, name, ns = ref
    with contextlib.suppress(ApiError):
        env["kube"].merge_patch(av, kind, name, ns, {"metadata": {"finalizers": None}})


def _kubelet_delete(env: dict[str, Any], ns: str, pod: str) -> None:
    """What a kubelet does once a pod's containers have stopped: delete it with grace period 0."""
    with contextlib.suppress(ApiError):
        env["kube"].request("delete", "DELETE", f"/api/v1/namespaces/{ns}/pods/{pod}",
                            body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})


def _kubelet_ready(env: dict[str, Any], ns: str, pod: str) -> None:
    """What a kubelet reports for a running pod (this cluster has none)."""
    env["kube"].request("patch", "PATCH", f"/api/v1/namespaces/{ns}/pods/{pod}/status", content_type=MERGE,
                        body={"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})


def _watch_the_end(env: dict[str, Any], name: str, how: str, refs: list[Ref], timeout: float = 180.0) -> None:
    """Until the teardown is over, look often: the COS first, then every object of its phases. A COS
    released while one of them is still there is the bug this module is about."""
    deadline = time.monotonic() + timeout
    while True:
        released = _released(env, name, how)
        left = [ref for ref in refs if _exists(env, ref)]
        if released:
            assert left == [], f"the COS let go while these were still there: {left}"
            return
        assert time.monotonic() < deadline, f"the teardown did not finish; still there: {left}"
        time.sleep(0.2)


def _step(env: dict[str, Any], name: str, message: str, untouched: list[Ref], let_go: Callable[[], None]) -> None:
    """Wait for Available to name what the teardown waits for; the COS must still hold, earlier phases must be
    untouched; then let the object go."""
    expected = ("Unknown", "Reconciling", message)
    try:
        wait_for(lambda: brief(env, name, "Available") == expected, 120, f"Available {expected}")
    except AssertionError:
        assert brief(env, name, "Available") == expected   # shows what it said instead
    assert brief(env, name) == TEARING_DOWN
    assert _holds(env, name)
    for ref in untouched:
        assert not _marked(env, ref), f"{ref} (an earlier phase) is being deleted too early"
    let_go()


def _pv(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Mi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                     "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": f"/tmp/{name}"}}}


def _pvc(name: str, ns: str, volume: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": volume,
                     "resources": {"requests": {"storage": "1Mi"}}}}


def _pod(name: str, ns: str, node: str, claim: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "c", "image": "example.invalid/worker:1"}]}
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _crd(group: str) -> dict[str, Any]:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"apiVersion": CRD_API, "kind": "CustomResourceDefinition", "metadata": {"name": f"gadgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def _cm(name: str, ns: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, **meta},
            "data": {"k": "v"}}


@pytest.mark.parametrize("how", ["delete", "archive"])
def test_every_kind_that_is_not_deleted_at_once_holds_the_cos_until_it_is_gone(env: dict[str, Any],
                                                                               how: str) -> None:
    kube, run, tag = env["kube"], env["run"], how[0]
    ns = f"cos-e2e-td{tag}-{run}"
    node = f"cos-e2e-td{tag}-{run}"
    group = f"td{tag}-{run}.e2e.example.com"
    crd = _crd(group)
    pv_held, pv_data = f"cos-e2e-td{tag}-{run}-held", f"cos-e2e-td{tag}-{run}-data"
    name = cos_name(env, f"every-kind-{how}")
    env["namespaces"].append(ns)
    env["crds"].append(crd["metadata"]["name"])
    env["cleanup"].extend([("v1", "Node", node, None), ("v1", "PersistentVolume", pv_held, None),
                                          ("v1", "PersistentVolume", pv_data, None)])
    kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})   # no kubelet behind it
    ours: list[Ref] = [("v1", "Pod", "worker", ns), ("v1", "ConfigMap", "fg", ns), ("v1", "ConfigMap", "held", ns),
                       ("v1", "PersistentVolumeClaim", "data", ns), ("v1", "PersistentVolume", pv_held, None),
                       ("v1", "PersistentVolume", pv_data, None), (CRD_API, "CustomResourceDefinition",
                                                                   crd["metadata"]["name"], None),
                       ("v1", "Namespace", ns, None)]
    # the test's own objects that keep ours from going, released one by one below (or in the end, on failure)
    keeper_cm: Ref = ("v1", "ConfigMap", "keeper", ns)
    keeper_cr: Ref = (f"{group}/v1", "Gadget", "keeper", ns)
    child: Ref = ("v1", "ConfigMap", "fg-child", ns)
    held: Ref = ("v1", "ConfigMap", "held", ns)
    try:
        make_cos(env, f"every-kind-{how}", 1, [
            {"name": "namespace", "objects": [{"object": {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": ns}}}]},
            {"name": "crd", "objects": [{"object": crd}]},
            {"name": "volumes", "objects": [{"object": _pv(pv_held)}, {"object": _pv(pv_data)}]},
            {"name": "claim", "objects": [{"object": _pvc("data", ns, pv_data)}]},
            {"name": "config", "objects": [{"object": _cm("held", ns)}]},
            {"name": "foreground", "objects": [{"object": _cm("fg", ns)}]},
            {"name": "pod", "objects": [{"object": _pod("worker", ns, node)}]},
        ])
        wait_for(lambda: _exists(env, ("v1", "Pod", "worker", ns)), 120, "the rollout to reach the pod")
        _kubelet_ready(env, ns, "worker")
        wait_succeeded(env, name)

        kube.create(_cm("keeper", ns, finalizers=[HOLD]))                           # holds the namespace
        kube.create({"apiVersion": f"{group}/v1", "kind": "Gadget",                  # holds the CRD
                     "metadata": {"name": "keeper", "namespace": ns, "finalizers": [HOLD]}})
        kube.create(_pvc("keeper", ns, pv_held))                                     # binds (holds) one PV
        kube.create(_pod("user", ns, node, claim="data"))                            # uses (holds) the PVC
        fg = kube.get("v1", "ConfigMap", "fg", ns)
        kube.create(_cm("fg-child", ns, finalizers=[HOLD], ownerReferences=[        # blocks fg's deletion
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "fg", "uid": fg["metadata"]["uid"],
             "blockOwnerDeletion": True}]))
        kube.merge_patch("v1", "ConfigMap", "held", ns, {"metadata": {"finalizers": [HOLD]}})
        wait_for(lambda: (kube.get("v1", "PersistentVolume", pv_held).get("status") or {}).get("phase") == "Bound",
                 60, "the keeper claim to bind the held volume")

        _end(env, name, how)
        # someone deletes fg in the foreground meanwhile: it waits for its dependent
        kube.request("delete", "DELETE", f"/api/v1/namespaces/{ns}/configmaps/fg",
                     body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"})
        earlier = ours[1:]
        _step(env, name, f"Object Pod.v1 {ns}/worker: being deleted, grace period 30s", earlier[1:],
              lambda: _kubelet_delete(env, ns, "worker"))
        _step(env, name, f"Object ConfigMap.v1 {ns}/fg: being deleted, waiting for finalizers: foregroundDeletion",
              earlier[1:], lambda: _strip_finalizers(env, child))
        _step(env, name, f"Object ConfigMap.v1 {ns}/held: being deleted, waiting for finalizers: {HOLD}",
              earlier[2:], lambda: _strip_finalizers(env, held))
        _step(env, name, f"Object PersistentVolumeClaim.v1 {ns}/data: being deleted, waiting for finalizers: "
              "kubernetes.io/pvc-protection", earlier[3:], lambda: _kubelet_delete(env, ns, "user"))
        _step(env, name, f"Object PersistentVolume.v1 /{pv_held}: being deleted, waiting for finalizers: "
              "kubernetes.io/pv-protection", earlier[5:],
              lambda: kube.delete("v1", "PersistentVolumeClaim", "keeper", ns))
        _step(env, name, f"Object CustomResourceDefinition.{CRD_API} /{crd['metadata']['name']}: being deleted, "
              "waiting for finalizers: customresourcecleanup.apiextensions.k8s.io", earlier[6:],
              lambda: _strip_finalizers(env, keeper_cr))
        _step(env, name, f"Object Namespace.v1 /{ns}: being deleted, waiting for finalizers: kubernetes", [],
              lambda: _strip_finalizers(env, keeper_cm))
        _watch_the_end(env, name, how, ours)
    finally:   # whatever happened, nothing of the test's may keep the session's cleanup waiting
        for ref in (keeper_cm, keeper_cr, child, held):
            _strip_finalizers(env, ref)
        for pod in ("worker", "user"):
            _kubelet_delete(env, ns, pod)
        with contextlib.suppress(ApiError):
            kube.delete("v1", "PersistentVolumeClaim", "keeper", ns)


@pytest.mark.parametrize("how", ["delete", "archive"])
def test_the_issue_case_lets_go_only_once_the_namespace_is_gone(env: dict[str, Any], how: str) -> None:
    """Phases ``namespace`` (a Namespace), ``config`` (a ConfigMap and a ServiceAccount in it) and ``deploy``
    (a Deployment in it), as reported: nothing holds anything but the namespace controller's own work (it
    still removes the ServiceAccount token controller's and the root CA publisher's objects)."""
    ns = f"cos-e2e-tdi{how[0]}-{env['run']}"
    env["namespaces"].append(ns)
    name = cos_name(env, f"issue-case-{how}")
    labels = {"app": "web"}
    web = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns},
           "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels},
                                 "spec": {"containers": [{"name": "c", "image": "example.invalid/web:1"}]}}}}
    make_cos(env, f"issue-case-{how}", 1, [
        {"name": "namespace", "objects": [{"object": {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": ns}}}]},
        {"name": "config", "objects": [{"object": _cm("settings", ns)},
                                       {"object": {"apiVersion": "v1", "kind": "ServiceAccount",
                                                   "metadata": {"name": "runner", "namespace": ns}}}]},
        {"name": "deploy", "objects": [{"object": web}]},
    ])
    wait_succeeded(env, name)
    _end(env, name, how)
    _watch_the_end(env, name, how, [("apps/v1", "Deployment", "web", ns), ("v1", "ConfigMap", "settings", ns),
                                    ("v1", "ServiceAccount", "runner", ns), ("v1", "Namespace", ns, None)])
