"""End-to-end: the built-in readiness probes of issue 12 on the status a real API server and its controllers
write (opt-in: ``pytest -m e2e``, skipped without ``COS_E2E_KUBECONFIG``).

The kinds whose status a controller of the control plane writes are shown with that controller's own status:
the Job controller fails a Job past its ``activeDeadlineSeconds`` and completes a Job of zero completions, the
ReplicaSet, DaemonSet and disruption controllers report their counts and ``observedGeneration``, and the API
server's aggregator reports an APIService's availability. Status that a kubelet or a cloud controller would
write (a Pod's, a LoadBalancer Service's) is written here through the status subresource, as those would. Two
rollouts with the real reconciler process show what a user sees: a failed migration Job holds the later phase
back with the Job's own message, and a Pod and a LoadBalancer Service gate a phase until they are ready.

Works in namespaces and names with a per-run suffix of its own (not shared with ``test_e2e.py``, whose
namespaces may still be terminating), deleting them at the end.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from common.cluster.interface import ApiError, NotFound
from common.cluster.kube import KubeCluster
from common.contract import probes
from tests.e2e.conftest import COS_API, KIND, wait_for

pytestmark = pytest.mark.e2e

RUN = uuid.uuid4().hex[:6]
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def env(env: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The session's cluster and reconciler (tests/e2e/conftest.py: one reconciler per cluster at a time), plus
    the cluster-scoped objects this module creates (``cluster``), deleted at its end."""
    state = {**env, "cluster": []}
    try:
        yield state
    finally:
        for api_version, kind, name in state["cluster"]:
            with contextlib.suppress(ApiError):
                state["kube"].delete(api_version, kind, name)


def verdict(kube: KubeCluster, obj: Obj) -> tuple[str, list[str]]:
    """The built-in probe's verdict on the live object."""
    live = kube.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
    result = probes.probe(live)
    return result.status, result.messages


def settles_at(kube: KubeCluster, obj: Obj, expected: tuple[str, list[str]], what: str) -> None:
    """Wait until the controllers have written what makes the verdict ``expected`` (it is asserted exactly)."""
    last: list[tuple[str, list[str]]] = []

    def check() -> bool:
        last[:] = [verdict(kube, obj)]
        return last[0] == expected

    try:
        wait_for(check, 90, what)
    except AssertionError:
        assert last[0] == expected, what


def pod(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "registry.invalid/none:1"}]}}


def job(ns: str, name: str, **spec: Any) -> Obj:
    template = pod(ns, name)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"backoffLimit": 0, **spec,
                     "template": {"metadata": {"labels": {"app": name}}, "spec": template["spec"]}}}


def lb_service(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ports": [{"port": 80}]}}


def cm(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"k": "v"}}


# ---- each kind, on the status the server's controllers write ---------------------------------------------------

def test_job_failed_by_the_job_controller_carries_its_message(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    failing = kube.create(job(ns, "deadline", activeDeadlineSeconds=1))
    settles_at(kube, failing, (probes.FALSE, [
        '.status.condition["Failed"] is True (DeadlineExceeded): Job was active longer than specified deadline']),
        "the Job controller to fail the Job")


def test_job_completed_by_the_job_controller(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    done = kube.create(job(ns, "nothing-to-do", completions=0, parallelism=0))
    settles_at(kube, done, (probes.TRUE, ['.status.condition["Complete"] is True']), "the Job to complete")


def test_job_suspended_by_its_spec(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    held = kube.create(job(ns, "held", suspend=True))
    settles_at(kube, held, (probes.FALSE, ['.status.condition["Suspended"] is True (JobSuspended): Job suspended']),
               "the Job controller to mark the Job suspended")


def test_replicaset_without_a_scheduler_is_not_available(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": ns},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "rs"}},
                   "template": {"metadata": {"labels": {"app": "rs"}},
                                "spec": pod(ns, "rs")["spec"] | {"restartPolicy": "Always"}}}}
    live = kube.create(rs)
    # the ReplicaSet controller creates the pods; nothing schedules or runs them
    settles_at(kube, live, (probes.FALSE, ['"spec.replicas" != "status.availableReplicas" expected: 2 got: 0']),
               "the ReplicaSet controller to report 2 pods, none available")
    kube.merge_patch("apps/v1", "ReplicaSet", "rs", ns, {"spec": {"replicas": 0}})
    settles_at(kube, live, (probes.TRUE, ['"spec.replicas" == "status.replicas"',
                                          '"spec.replicas" == "status.availableReplicas"']),
               "the scale-down to 0 to be observed")


def test_daemonset_with_no_eligible_node_is_ready(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "namespace": ns},
          "spec": {"selector": {"matchLabels": {"app": "ds"}},
                   "template": {"metadata": {"labels": {"app": "ds"}}, "spec": pod(ns, "ds")["spec"] | {
                       "restartPolicy": "Always"}}}}
    live = kube.create(ds)
    settles_at(kube, live, (probes.TRUE, ['"status.desiredNumberScheduled" == "status.updatedNumberScheduled"',
                                          '"status.desiredNumberScheduled" == "status.numberAvailable"']),
               "the DaemonSet controller to observe the DaemonSet (this cluster has no nodes)")


def test_pod_disruption_budget_is_ready_once_observed(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    pdb = kube.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                       "metadata": {"name": "pdb", "namespace": ns},
                       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "none"}}}})
    settles_at(kube, pdb, (probes.TRUE, []), "the disruption controller to observe the PDB")
    kube.merge_patch("policy/v1", "PodDisruptionBudget", "pdb", ns, {"spec": {"minAvailable": 2}})
    settles_at(kube, pdb, (probes.TRUE, []), "the disruption controller to observe generation 2")
    live = kube.get("policy/v1", "PodDisruptionBudget", "pdb", ns)
    assert live["metadata"]["generation"] == 2 and live["status"]["observedGeneration"] == 2


def test_apiservice_availability_as_the_aggregator_reports_it(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    group = f"e2e-{RUN}.example.com"
    missing = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": f"v1.{group}"},
               "spec": {"group": group, "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10,
                        "insecureSkipTLSVerify": True, "service": {"name": "absent", "namespace": ns, "port": 443}}}
    env["cluster"].append(("apiregistration.k8s.io/v1", "APIService", f"v1.{group}"))
    live = kube.create(missing)
    settles_at(kube, live, (probes.FALSE, [
        f'.status.condition["Available"] is False (ServiceNotFound): service/absent in "{ns}" is not present']),
        "the aggregator to report the missing service")


# ---- status a kubelet or a cloud controller writes, written here through the status subresource ----------------

def test_pod_readiness_and_failure(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    live = kube.create(pod(ns, "lonely"))
    assert verdict(kube, live) == (probes.UNKNOWN, ["missing .status.conditions"])  # nothing schedules it
    live = kube.get("v1", "Pod", "lonely", ns)
    live["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}
    live = kube.update_status(live)
    assert verdict(kube, live) == (probes.FALSE, ['.status.condition["Ready"] is False'])
    live["status"] = {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory.",
                      "conditions": [{"type": "Ready", "status": "False"}]}
    live = kube.update_status(live)
    assert verdict(kube, live) == (probes.FALSE, [".status.phase is Failed (Evicted): The node was low on resource: "
                                                  "memory."])


def test_load_balancer_service_waits_for_an_address(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    live = kube.create(lb_service(ns, "lb"))
    assert verdict(kube, live) == (probes.FALSE, [".status.loadBalancer.ingress has no address yet"])
    live["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.10", "ipMode": "VIP"}]}}
    kube.update_status(live)
    assert verdict(kube, live) == (probes.TRUE, ['.status.loadBalancer.ingress has address "203.0.113.10"'])


# ---- what a user sees: the reconciler gating phases on them -----------------------------------------------------

def make_cos(env: dict, name: str, phases: list[dict]) -> str:
    full = f"{name}-{RUN}"
    env["cos"].append(full)
    env["kube"].create({"apiVersion": COS_API, "kind": KIND, "metadata": {"name": full},
                        "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent",
                                 "phases": phases}})
    return full


def condition(env: dict, name: str, ctype: str) -> dict:
    obj = env["kube"].get(COS_API, KIND, name)
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == ctype), {})


def available_says(env: dict, name: str, expected: str) -> None:
    """Wait for the Available message; on timeout, the assertion shows the message there is instead."""
    with contextlib.suppress(AssertionError):
        wait_for(lambda: condition(env, name, "Available").get("message") == expected, 120, "Available")
    assert condition(env, name, "Available").get("message") == expected


def exists(kube: KubeCluster, api_version: str, kind: str, name: str, ns: str) -> bool:
    try:
        kube.get(api_version, kind, name, ns)
        return True
    except NotFound:
        return False


def test_a_failed_migration_job_holds_the_next_phase_back_and_says_why(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    name = make_cos(env, "migrate", [
        {"name": "migrate", "objects": [{"object": job(ns, "migrate", activeDeadlineSeconds=1)}]},
        {"name": "app", "objects": [{"object": cm(ns, "after-migration")}]},
    ])
    expected = (f"Object Job.batch/v1 {ns}/migrate: .status.condition[\"Failed\"] is True (DeadlineExceeded): "
                "Job was active longer than specified deadline")
    available_says(env, name, expected)
    available = condition(env, name, "Available")
    assert (available["status"], available["reason"]) == ("False", "ProbeFailure")
    assert condition(env, name, "Progressing")["reason"] == "RollingOut"
    assert not exists(kube, "v1", "ConfigMap", "after-migration", ns), "the phase after a failed Job started"


def test_a_pod_and_a_load_balancer_gate_the_next_phase_until_ready(env: dict) -> None:
    kube, ns = env["kube"], env["ns"]
    name = make_cos(env, "gated", [
        {"name": "serve", "objects": [{"object": pod(ns, "server")}, {"object": lb_service(ns, "front")}]},
        {"name": "after", "objects": [{"object": cm(ns, "after-serving")}]},
    ])
    available_says(env, name, f"Object Pod.v1 {ns}/server: missing .status.conditions")
    live = kube.get("v1", "Pod", "server", ns)
    live["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    kube.update_status(live)
    available_says(env, name, f"Object Service.v1 {ns}/front: .status.loadBalancer.ingress has no address yet")
    assert not exists(kube, "v1", "ConfigMap", "after-serving", ns)
    live = kube.get("v1", "Service", "front", ns)
    live["status"] = {"loadBalancer": {"ingress": [{"hostname": "front.example.com"}]}}
    kube.update_status(live)
    wait_for(lambda: condition(env, name, "Progressing").get("reason") == "Succeeded", 120, "Succeeded")
    assert exists(kube, "v1", "ConfigMap", "after-serving", ns)


def test_a_message_the_builtin_and_a_user_probe_share_is_said_once(env: dict) -> None:
    """Issue 9's report on a real server: a PVC nothing binds, probed by the built-in probe and by the COS."""
    ns = env["ns"]
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "test-pvc", "namespace": ns},
           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "none",
                    "resources": {"requests": {"storage": "1Mi"}}}}
    name = f"pvc-{RUN}"
    env["cos"].append(name)
    env["kube"].create({"apiVersion": COS_API, "kind": KIND, "metadata": {"name": name}, "spec": {
        "revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent",
        "phases": [{"name": "storage", "objects": [{"object": pvc}]}],
        "progressionProbes": [{
            "selector": {"type": "GroupKind", "groupKind": {"group": "", "kind": "PersistentVolumeClaim"}},
            "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "status.phase", "value": "Bound"}}]}]}})
    expected = (f'Object PersistentVolumeClaim.v1 {ns}/test-pvc: value at key "status.phase" != "Bound"; '
                'expected: "Bound" got: "Pending"')
    available_says(env, name, expected)
