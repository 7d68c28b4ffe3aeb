"""End-to-end: readiness probes on a real cluster (spec section 3), built-in and user-declared.

Each test stops a rollout at a probe, asserts the exact Available/ProbeFailure message the reconciler writes,
makes the object ready the way the cluster would (a controller, the PV binder, a status write standing in
for an operator) and waits for the rollout to go on. The cluster has no kubelet, so Pods stay Pending:
workloads with replicas are never available, workloads scaled to zero are.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import (
    CM,
    brief,
    cm,
    cos_name,
    crd_established,
    exists,
    gone,
    kubectl,
    make_cos,
    wait_brief,
    wait_for,
    wait_succeeded,
)

pytestmark = pytest.mark.e2e
CRD_API = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")


def _rolling(env: dict[str, Any], name: str) -> tuple[str, str, str]:
    rev = env["kube"].get("olm.operatorframework.io/v1", "ClusterObjectSet", name)["spec"]["revision"]
    return ("True", "RollingOut", f"Revision {rev} is rolling out.")


def _probe_failure(env: dict[str, Any], name: str, message: str) -> None:
    wait_brief(env, name, ("False", "ProbeFailure", message), ctype="Available")
    assert brief(env, name) == _rolling(env, name)


def _crd(group: str, kind: str, plural: str, scope: str = "Namespaced") -> dict[str, Any]:
    """A structural CRD of one served version ``v1`` that keeps any field and has a status subresource."""
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope,
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}]}}


def _set_status(env: dict[str, Any], resource: str, name: str, ns: str, status: dict[str, Any]) -> None:
    kubectl(env, "patch", resource, name, "-n", ns, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": status}))


def test_crd_established_then_its_cr_and_a_group_kind_condition_probe(env: dict[str, Any]) -> None:
    """A CRD in phase one (built-in probe: Established), its CR in phase two (discovery refreshed by the CRD
    event), a GroupKind-selected ConditionEqual probe on the CR through all its Unknown/False/True states, and
    the deletion of the COS: CR first, then the CRD."""
    ns, run = env["ns"], env["run"]
    group = f"e2e{run}.example.com"
    crd = _crd(group, "Widget", "widgets")
    env["crds"].append(crd["metadata"]["name"])
    widget = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": ns},
              "spec": {"size": 1}}
    name = cos_name(env, "crd-then-cr")
    make_cos(env, "crd-then-cr", 1, [{"name": "crds", "objects": [{"object": crd}]},
                                     {"name": "crs", "objects": [{"object": widget}]}],
             progressionProbes=[{"selector": {"type": "GroupKind", "groupKind": {"group": group, "kind": "Widget"}},
                                 "assertions": [{"type": "ConditionEqual",
                                                 "conditionEqual": {"type": "Ready", "status": "True"}}]}])
    obj = f"Object Widget.{group}/v1 {ns}/w"
    _probe_failure(env, name, f"{obj}: missing .status.conditions")
    assert crd_established(env["kube"], crd["metadata"]["name"])
    resource = f"widgets.{group}"
    _set_status(env, resource, "w", ns, {"conditions": [{"type": "Other", "status": "True"}]})
    _probe_failure(env, name, f'{obj}: missing .status.condition["Ready"]')
    _set_status(env, resource, "w", ns, {"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 7}]})
    _probe_failure(env, name, f'{obj}: .status.condition["Ready"] outdated')
    _set_status(env, resource, "w", ns, {"conditions": [{"type": "Ready", "status": "False"}]})
    _probe_failure(env, name, f'{obj}: .status.condition["Ready"] is False')
    _set_status(env, resource, "w", ns, {"conditions": [{"type": "Ready", "status": "True"}]})
    wait_succeeded(env, name)
    assert brief(env, name, "Available") == ("True", "ProbesSucceeded", "Objects are available and pass all probes.")
    assert brief(env, name, "Succeeded") == ("True", "Succeeded", "Revision succeeded rolling out.")
    # uninstall: the CR goes first, then the CRD; once the CRD is gone its kind is not served any more, and
    # the teardown must count the CR as gone rather than fail reading it (found here, on a real server)
    kube = env["kube"]
    kube.delete("olm.operatorframework.io/v1", "ClusterObjectSet", name)
    wait_for(lambda: gone(kube, "olm.operatorframework.io/v1", "ClusterObjectSet", name), 120,
             "the COS and its CRD to be torn down")
    assert gone(kube, *CRD_API, crd["metadata"]["name"])


def test_namespace_in_an_earlier_phase(env: dict[str, Any]) -> None:
    """Namespace probe (status.phase Active, set by the API server itself): its objects follow at once."""
    ns = f"cos-e2e-made-{env['run']}"
    env["namespaces"].append(ns)
    name = cos_name(env, "namespace")
    make_cos(env, "namespace", 1, [
        {"name": "ns", "objects": [{"object": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}}]},
        {"name": "inside", "objects": [{"object": cm(ns, "inside")}]}])
    wait_succeeded(env, name)
    assert env["kube"].get("v1", "Namespace", ns)["status"]["phase"] == "Active"
    assert exists(env, CM, "inside", ns)


def test_pvc_waits_for_bound(env: dict[str, Any]) -> None:
    """PVC probe (status.phase Bound): Pending until the PV controller binds it to a matching volume."""
    ns, run = env["ns"], env["run"]
    pv_name = f"cos-e2e-pv-{run}"
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "claim", "namespace": ns},
           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": pv_name,
                    "resources": {"requests": {"storage": "1Mi"}}}}
    name = cos_name(env, "pvc")
    make_cos(env, "pvc", 1, [{"name": "claim", "objects": [{"object": pvc}]},
                             {"name": "after", "objects": [{"object": cm(ns, "after-pvc")}]}])
    _probe_failure(env, name, f'Object PersistentVolumeClaim.v1 {ns}/claim: value at key "status.phase" != "Bound"; '
                              'expected: "Bound" got: "Pending"')
    assert not exists(env, CM, "after-pvc", ns)
    env["kube"].create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
                        "spec": {"capacity": {"storage": "1Mi"}, "accessModes": ["ReadWriteOnce"],
                                 "storageClassName": "", "persistentVolumeReclaimPolicy": "Retain",
                                 "hostPath": {"path": f"/tmp/{pv_name}"}}})
    try:
        wait_succeeded(env, name)
        assert exists(env, CM, "after-pvc", ns)
    finally:
        env["kube"].delete("v1", "PersistentVolume", pv_name)


def _deployment(ns: str, name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "example.invalid/none:1"}]}}}}


def _statefulset(ns: str, name: str, replicas: int) -> dict[str, Any]:
    sts = _deployment(ns, name, replicas)
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = name
    return sts


def test_workloads_scaled_to_zero_pass_and_pending_pods_block(env: dict[str, Any]) -> None:
    """Deployment and StatefulSet probes: scaled to zero they are ready once their controller observed them;
    with one replica whose Pod can never run (no kubelet) they block the next phase with the exact reason."""
    ns, kube = env["ns"], env["kube"]
    # Here the StatefulSet exists, with its Pod, before the COS adopts it, so what is tested is the steady
    # Pending state; a StatefulSet the COS creates itself is the next test.
    kube.create(_statefulset(ns, "sts-one", 1))
    wait_for(lambda: (kube.get("apps/v1", "StatefulSet", "sts-one", ns).get("status") or {}).get("replicas") == 1,
             60, "the StatefulSet controller to create its Pod")
    name = cos_name(env, "workloads")
    make_cos(env, "workloads", 1, [
        {"name": "zero", "objects": [{"object": _deployment(ns, "dep-zero", 0)},
                                     {"object": _statefulset(ns, "sts-zero", 0)}]},
        {"name": "sts", "objects": [{"object": _statefulset(ns, "sts-one", 1),
                                     "collisionProtection": "IfNoController"}]},
        {"name": "after", "objects": [{"object": cm(ns, "after-sts")}]}])
    deployment = cos_name(env, "deployment")
    make_cos(env, "deployment", 1, [{"name": "dep", "objects": [{"object": _deployment(ns, "dep-one", 1)}]},
                                    {"name": "after", "objects": [{"object": cm(ns, "after-dep")}]}])
    _probe_failure(env, name, f'Object StatefulSet.apps/v1 {ns}/sts-one: "status.availableReplicas" != '
                              '"status.replicas" expected: 0 got: 1')
    _probe_failure(env, deployment, f'Object Deployment.apps/v1 {ns}/dep-one: .status.condition["Available"] is False')
    dep_zero = env["kube"].get("apps/v1", "Deployment", "dep-zero", ns)
    assert {c["type"]: c["status"] for c in dep_zero["status"]["conditions"]}["Available"] == "True"
    assert not exists(env, CM, "after-sts", ns)
    assert not exists(env, CM, "after-dep", ns)


def test_cert_manager_certificate_and_issuer_wait_for_ready(env: dict[str, Any]) -> None:
    """cert-manager probes (condition Ready) on the real kinds' group and names; the cluster has no
    cert-manager, so when its CRDs are missing the test installs stand-ins of the same group, kinds and names
    (schema-less), and a status write stands in for cert-manager's controller."""
    ns = env["ns"]
    kube = env["kube"]
    for kind, plural in (("Certificate", "certificates"), ("Issuer", "issuers")):
        crd_name = f"{plural}.cert-manager.io"
        if gone(kube, *CRD_API, crd_name):
            kube.create(_crd("cert-manager.io", kind, plural))
            env["crds"].append(crd_name)
            wait_for(lambda n=crd_name: crd_established(kube, n), 60, f"{crd_name} established")
    issuer = {"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": {"name": "selfsigned", "namespace": ns},
              "spec": {"selfSigned": {}}}
    cert = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "serving", "namespace": ns},
            "spec": {"secretName": "serving-tls", "dnsNames": ["svc.example"],
                     "issuerRef": {"name": "selfsigned", "kind": "Issuer"}}}
    name = cos_name(env, "certs")
    make_cos(env, "certs", 1, [{"name": "issuer", "objects": [{"object": issuer}]},
                               {"name": "cert", "objects": [{"object": cert}]},
                               {"name": "after", "objects": [{"object": cm(ns, "after-cert")}]}])
    _probe_failure(env, name, f"Object Issuer.cert-manager.io/v1 {ns}/selfsigned: missing .status.conditions")
    _set_status(env, "issuers.cert-manager.io", "selfsigned", ns, {"conditions": [{"type": "Ready", "status": "True"}]})
    _probe_failure(env, name, f"Object Certificate.cert-manager.io/v1 {ns}/serving: missing .status.conditions")
    _set_status(env, "certificates.cert-manager.io", "serving", ns,
                {"conditions": [{"type": "Ready", "status": "False"}]})
    _probe_failure(env, name,
                   f'Object Certificate.cert-manager.io/v1 {ns}/serving: .status.condition["Ready"] is False')
    assert not exists(env, CM, "after-cert", ns)
    _set_status(env, "certificates.cert-manager.io", "serving", ns,
                {"conditions": [{"type": "Ready", "status": "True"}]})
    wait_succeeded(env, name)
    assert exists(env, CM, "after-cert", ns)


def test_label_selected_fields_equal_and_field_value(env: dict[str, Any]) -> None:
    """User probes on fields only the user writes: FieldsEqual (missing, unequal, equal) and FieldValue
    (missing, unequal, equal) on Label-selected objects (matchLabels, matchExpressions); others pass."""
    ns = env["ns"]
    gate = cm(ns, "pair", labels={"e2e-probe": "pair"}, a="1")
    name = cos_name(env, "fields")
    make_cos(env, "fields", 1, [{"name": "one", "objects": [{"object": gate}, {"object": cm(ns, "unselected")}]},
                                {"name": "two", "objects": [{"object": cm(ns, "after-fields")}]}],
             progressionProbes=[
                 {"selector": {"type": "Label", "label": {"matchLabels": {"e2e-probe": "pair"}}},
                  "assertions": [{"type": "FieldsEqual", "fieldsEqual": {"fieldA": "data.a", "fieldB": "data.b"}}]},
                 {"selector": {"type": "Label", "label": {"matchExpressions": [
                     {"key": "e2e-probe", "operator": "In", "values": ["pair"]}]}},
                  "assertions": [{"type": "FieldValue",
                                  "fieldValue": {"fieldPath": "metadata.annotations.count", "value": "3"}}]}])
    obj = f"Object ConfigMap.v1 {ns}/pair"
    _probe_failure(env, name, f'{obj}: "data.b" missing and missing key: "metadata.annotations.count"')
    kube = env["kube"]
    kube.merge_patch("v1", "ConfigMap", "pair", ns, {"data": {"b": "2"}, "metadata": {"annotations": {"count": "4"}}})
    _probe_failure(env, name, f'{obj}: "data.a" != "data.b" expected: "1" got: "2" and '
                              'value at key "metadata.annotations.count" != "3"; expected: "3" got: "4"')
    kube.merge_patch("v1", "ConfigMap", "pair", ns, {"data": {"b": "1"}})
    _probe_failure(env, name, f'{obj}: value at key "metadata.annotations.count" != "3"; expected: "3" got: "4"')
    assert not exists(env, CM, "after-fields", ns)
    kube.merge_patch("v1", "ConfigMap", "pair", ns, {"metadata": {"annotations": {"count": "3"}}})
    wait_succeeded(env, name)
    assert exists(env, CM, "after-fields", ns)


def test_a_new_statefulset_holds_the_next_phase_from_its_first_status_on(env: dict[str, Any]) -> None:
    """The StatefulSet controller's first status of a new StatefulSet is {observedGeneration: 1, replicas: 0,
    availableReplicas: 0}, written before it creates any Pod (kube-apiserver 1.36). The status counts alone
    call that ready; the built-in probe also compares status.replicas with spec.replicas (ours), so the next
    phase never starts before the Pod is available."""
    ns, kube = env["ns"], env["kube"]
    name = cos_name(env, "new-sts")
    make_cos(env, "new-sts", 1, [{"name": "sts", "objects": [{"object": _statefulset(ns, "sts-new", 1)}]},
                                 {"name": "after", "objects": [{"object": cm(ns, "after-new-sts")}]}])
    seen: list[Any] = []

    def settled() -> bool:
        status = (kube.get("apps/v1", "StatefulSet", "sts-new", ns).get("status") or {}) if exists(
            env, ("apps/v1", "StatefulSet"), "sts-new", ns) else {}
        seen.append(status.get("replicas"))
        assert not exists(env, CM, "after-new-sts", ns), f"the next phase started at StatefulSet status {status}"
        return status.get("replicas") == 1

    wait_for(settled, 60, "the StatefulSet controller to create its Pod")
    _probe_failure(env, name, f'Object StatefulSet.apps/v1 {ns}/sts-new: "status.availableReplicas" != '
                              '"status.replicas" expected: 0 got: 1')
    assert not exists(env, CM, "after-new-sts", ns)
