"""Every probe message of reconciler.md section 3, the built-in probes, selection and combining."""

from __future__ import annotations

import pytest

from common.contract.probes import (
    FALSE,
    TRUE,
    UNKNOWN,
    ProbeResult,
    ProbeSpecError,
    combine,
    condition_equal,
    field_value,
    fields_equal,
    parse_probes,
    probe,
)


def obj(status=None, generation=1, kind="Widget", api="example.com/v1", labels=None):
    o = {"apiVersion": api, "kind": kind, "metadata": {"name": "w", "generation": generation,
                                                       "labels": labels or {}}}
    if status is not None:
        o["status"] = status
    return o


def r(result: ProbeResult) -> tuple[str, list[str]]:
    return result.status, result.messages


# ---- ConditionEqual ---------------------------------------------------------------------------------------------

def test_condition_equal_messages() -> None:
    assert r(condition_equal(obj({"conditions": [{"type": "Ready", "status": "True"}]}), "Ready", "True")) == (
        TRUE, ['.status.condition["Ready"] is True'])
    assert r(condition_equal(obj({"conditions": [{"type": "Ready", "status": "False"}]}), "Ready", "True")) == (
        FALSE, ['.status.condition["Ready"] is False'])
    assert r(condition_equal(obj({}), "Ready", "True")) == (UNKNOWN, ["missing .status.conditions"])
    assert r(condition_equal(obj(), "Ready", "True")) == (UNKNOWN, ["missing .status.conditions"])
    assert r(condition_equal(obj({"conditions": [{"type": "Other", "status": "True"}]}), "Ready", "True")) == (
        UNKNOWN, ['missing .status.condition["Ready"]'])
    stale = obj({"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]}, generation=2)
    assert r(condition_equal(stale, "Ready", "True")) == (UNKNOWN, ['.status.condition["Ready"] outdated'])
    current = obj({"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 2}]}, generation=2)
    assert condition_equal(current, "Ready", "True").status == TRUE


# ---- FieldsEqual ----------------------------------------------------------------------------------------------

def test_fields_equal_messages() -> None:
    o = obj({"a": 3, "b": 3, "c": {"x": [1]}, "d": "3"})
    assert r(fields_equal(o, "status.a", "status.b")) == (TRUE, ['"status.a" == "status.b"'])
    assert r(fields_equal(o, "status.zz", "status.b")) == (FALSE, ['"status.zz" missing'])
    assert r(fields_equal(o, "status.a", "status.zz")) == (FALSE, ['"status.zz" missing'])
    assert r(fields_equal(o, "status.a", "status.c")) == (
        FALSE, ['"status.a" != "status.c" expected: 3 got: {"x":[1]}'])
    assert r(fields_equal(o, "status.a", "status.d")) == (FALSE, ['"status.a" != "status.d" expected: 3 got: "3"'])


# ---- FieldValue -----------------------------------------------------------------------------------------------

def test_field_value_messages_and_string_comparison() -> None:
    o = obj({"phase": "Pending", "replicas": 3, "ready": True})
    assert r(field_value(o, "status.missing", "x")) == (FALSE, ['missing key: "status.missing"'])
    assert r(field_value(o, "status.phase", "Active")) == (
        FALSE, ['value at key "status.phase" != "Active"; expected: "Active" got: "Pending"'])
    assert r(field_value(o, "status.replicas", "4")) == (
        FALSE, ['value at key "status.replicas" != "4"; expected: "4" got: 3'])
    assert field_value(o, "status.replicas", "3").status == TRUE     # ours: 3 matches "3"
    assert field_value(o, "status.ready", "true").status == TRUE
    assert r(field_value(o, "status.phase", "Pending")) == (TRUE, ['value at key "status.phase" == "Pending"'])


# ---- combining, selection, outdated status --------------------------------------------------------------------

def test_unknown_beats_false_beats_true_and_keeps_the_winners_messages() -> None:
    t, f1, f2, u = (ProbeResult(TRUE, ["t"]), ProbeResult(FALSE, ["f1"]), ProbeResult(FALSE, ["f2"]),
                    ProbeResult(UNKNOWN, ["u"]))
    assert r(combine([t, f1, u, f2])) == (UNKNOWN, ["u"])
    assert r(combine([t, f1, f2])) == (FALSE, ["f1", "f2"])
    assert r(combine([t])) == (TRUE, ["t"])
    assert r(combine([])) == (TRUE, [])


PROBES = [
    {"selector": {"type": "GroupKind", "groupKind": {"group": "example.com", "kind": "Widget"}},
     "assertions": [{"type": "ConditionEqual", "conditionEqual": {"type": "Ready", "status": "True"}},
                    {"type": "FieldValue", "fieldValue": {"fieldPath": "status.phase", "value": "Up"}}]},
    {"selector": {"type": "Label", "label": {"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["db"]}]}},
     "assertions": [{"type": "FieldsEqual", "fieldsEqual": {"fieldA": "status.want", "fieldB": "status.have"}}]},
]


def test_progression_probes_select_by_group_kind_and_label() -> None:
    probes = parse_probes(PROBES)
    # not selected by either: passes
    assert r(probe(obj({}, kind="Gadget"), probes)) == (TRUE, [])
    # selected by GroupKind: both assertions must hold; False messages of both are kept
    w = obj({"conditions": [{"type": "Ready", "status": "False"}], "phase": "Down"})
    assert r(probe(w, probes)) == (FALSE, ['.status.condition["Ready"] is False',
                                           'value at key "status.phase" != "Up"; expected: "Up" got: "Down"'])
    # selected by label as well
    g = obj({"want": 1, "have": 2}, kind="Gadget", labels={"tier": "db"})
    assert r(probe(g, probes)) == (FALSE, ['"status.want" != "status.have" expected: 1 got: 2'])
    ok = obj({"conditions": [{"type": "Ready", "status": "True"}], "phase": "Up"})
    assert probe(ok, probes).status == TRUE


def test_outdated_status_makes_a_selected_probe_unknown() -> None:
    probes = parse_probes(PROBES)
    w = obj({"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}], "phase": "Up"},
            generation=2)
    assert r(probe(w, probes)) == (UNKNOWN, [".status outdated"])


def test_bad_probe_spec_is_a_clear_error() -> None:
    with pytest.raises(ProbeSpecError, match=r"spec.progressionProbes\[0\].selector.type: unsupported value 'X'"):
        parse_probes([{"selector": {"type": "X"}, "assertions": []}])
    with pytest.raises(ProbeSpecError, match=r"spec.progressionProbes\[0\].selector.label: "):
        parse_probes([{"selector": {"type": "Label", "label": {"matchExpressions": [
            {"key": "a", "operator": "Bogus"}]}}, "assertions": []}])


# ---- built-in probes ------------------------------------------------------------------------------------------

def deployment(status, generation=1):
    return obj(status, generation, kind="Deployment", api="apps/v1")


def test_deployment_builtin() -> None:
    avail = [{"type": "Available", "status": "True"}]
    assert r(probe(deployment({}))) == (UNKNOWN, [".status outdated"])
    assert r(probe(deployment({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 1,
                               "conditions": avail}))) == (
        FALSE, ['"status.updatedReplicas" != "status.replicas" expected: 1 got: 2'])
    assert r(probe(deployment({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                               "conditions": [{"type": "Available", "status": "False"}]}))) == (
        FALSE, ['.status.condition["Available"] is False'])
    assert probe(deployment({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                             "conditions": avail})).status == TRUE
    # replicas: 0 has no counts in status at all: ready
    assert probe(deployment({"observedGeneration": 3, "conditions": avail}, generation=3)).status == TRUE
    assert r(probe(deployment({"observedGeneration": 2, "conditions": avail}, generation=3))) == (
        UNKNOWN, [".status outdated"])


def test_statefulset_builtin() -> None:
    def sts(status, replicas=3):
        o = obj(status, kind="StatefulSet", api="apps/v1")
        if replicas is not None:
            o["spec"] = {"replicas": replicas}
        return o
    assert r(probe(sts({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 2}))) == (
        FALSE, ['"status.availableReplicas" != "status.replicas" expected: 2 got: 3'])
    assert probe(sts({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3,
                      "availableReplicas": 3})).status == TRUE
    assert probe(sts({"observedGeneration": 1}, replicas=0)).status == TRUE   # scaled to zero
    # the controller's first status, before any Pod exists (kube-apiserver 1.36): not ready
    first = {"observedGeneration": 1, "replicas": 0, "availableReplicas": 0}
    assert r(probe(sts(first, replicas=None))) == (FALSE, ['"spec.replicas" != "status.replicas" expected: 1 got: 0'])
    assert r(probe(sts(first))) == (FALSE, ['"spec.replicas" != "status.replicas" expected: 3 got: 0'])


@pytest.mark.parametrize("api,kind,status,ready", [
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition",
     {"conditions": [{"type": "Established", "status": "True"}]}, True),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition",
     {"conditions": [{"type": "Established", "status": "False"}]}, False),
    ("v1", "Namespace", {"phase": "Active"}, True),
    ("v1", "Namespace", {"phase": "Terminating"}, False),
    ("v1", "PersistentVolumeClaim", {"phase": "Bound"}, True),
    ("v1", "PersistentVolumeClaim", {"phase": "Pending"}, False),
    ("cert-manager.io/v1", "Certificate", {"conditions": [{"type": "Ready", "status": "True"}]}, True),
    ("cert-manager.io/v1", "Issuer", {"conditions": [{"type": "Ready", "status": "False"}]}, False),
    ("v1", "ConfigMap", None, True),
])
def test_other_builtins(api, kind, status, ready) -> None:
    assert probe(obj(status, kind=kind, api=api)).ok is ready


def test_builtin_namespace_message() -> None:
    assert r(probe(obj({"phase": "Terminating"}, kind="Namespace", api="v1"))) == (
        FALSE, ['value at key "status.phase" != "Active"; expected: "Active" got: "Terminating"'])


# ---- identical messages once (issue 9) --------------------------------------------------------------------------

def test_identical_messages_are_reported_once_in_order() -> None:
    a, b = ProbeResult(FALSE, ["x", "y"]), ProbeResult(FALSE, ["y", "z", "x"])
    assert r(combine([a, b])) == (FALSE, ["x", "y", "z"])


def test_builtin_and_user_probe_on_the_same_field_say_it_once() -> None:
    """The doubled PVC message of issue 9: the built-in probe and a user FieldValue probe agree."""
    probes = parse_probes([{"selector": {"type": "GroupKind", "groupKind": {"group": "",
                                                                             "kind": "PersistentVolumeClaim"}},
                            "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "status.phase",
                                                                                 "value": "Bound"}}]}])
    pvc = obj({"phase": "Pending"}, kind="PersistentVolumeClaim", api="v1")
    assert r(probe(pvc, probes)) == (
        FALSE, ['value at key "status.phase" != "Bound"; expected: "Bound" got: "Pending"'])


# ---- built-in probes of the kinds added by issue 12 (ours) -----------------------------------------------------

def built(kind: str, api: str, status=None, spec=None, generation=1) -> ProbeResult:
    o = obj(status, generation, kind=kind, api=api)
    if spec is not None:
        o["spec"] = spec
    return probe(o)


def test_daemonset_builtin() -> None:
    def ds(status, generation=1):
        return r(built("DaemonSet", "apps/v1", status, generation=generation))
    assert ds({"observedGeneration": 2, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3,
               "numberAvailable": 3}, generation=2) == (
        TRUE, ['"status.desiredNumberScheduled" == "status.updatedNumberScheduled"',
               '"status.desiredNumberScheduled" == "status.numberAvailable"'])
    assert ds({"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 1,
               "numberAvailable": 3}) == (
        FALSE, ['"status.desiredNumberScheduled" != "status.updatedNumberScheduled" expected: 3 got: 1'])
    assert ds({"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3,
               "numberAvailable": 2}) == (
        FALSE, ['"status.desiredNumberScheduled" != "status.numberAvailable" expected: 3 got: 2'])
    assert ds({"observedGeneration": 1, "desiredNumberScheduled": 2}) == (
        FALSE, ['"status.desiredNumberScheduled" != "status.updatedNumberScheduled" expected: 2 got: 0',
                '"status.desiredNumberScheduled" != "status.numberAvailable" expected: 2 got: 0'])
    # no node is eligible: nothing to wait for (the controller writes zeros, or nothing at all)
    assert ds({"observedGeneration": 1, "desiredNumberScheduled": 0})[0] == TRUE
    assert ds({"observedGeneration": 1})[0] == TRUE
    # unknown until the controller has seen this generation
    assert ds({}) == (UNKNOWN, [".status outdated"])
    assert ds(None) == (UNKNOWN, [".status outdated"])
    assert ds({"observedGeneration": 1, "desiredNumberScheduled": 1, "updatedNumberScheduled": 1,
               "numberAvailable": 1}, generation=2) == (UNKNOWN, [".status outdated"])


def test_replicaset_builtin() -> None:
    def rs(status, replicas=3, generation=1):
        return r(built("ReplicaSet", "apps/v1", status, spec={"replicas": replicas}, generation=generation))
    assert rs({"observedGeneration": 1, "replicas": 3, "availableReplicas": 3}) == (
        TRUE, ['"spec.replicas" == "status.replicas"', '"spec.replicas" == "status.availableReplicas"'])
    assert rs({"observedGeneration": 1, "replicas": 3, "availableReplicas": 1}) == (
        FALSE, ['"spec.replicas" != "status.availableReplicas" expected: 3 got: 1'])
    # a scale-down still deleting pods
    assert rs({"observedGeneration": 1, "replicas": 5, "availableReplicas": 3}) == (
        FALSE, ['"spec.replicas" != "status.replicas" expected: 3 got: 5'])
    assert rs({"observedGeneration": 1}, replicas=0)[0] == TRUE
    assert rs({"observedGeneration": 0, "replicas": 3, "availableReplicas": 3}) == (UNKNOWN, [".status outdated"])
    # spec.replicas left out: the API server's default of 1
    assert r(built("ReplicaSet", "apps/v1", {"observedGeneration": 1}, spec={})) == (
        FALSE, ['"spec.replicas" != "status.replicas" expected: 1 got: 0',
                '"spec.replicas" != "status.availableReplicas" expected: 1 got: 0'])


def test_pod_builtin() -> None:
    def pod(status):
        return r(built("Pod", "v1", status))
    assert pod({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}) == (
        TRUE, ['.status.condition["Ready"] is True'])
    assert pod({"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}) == (
        TRUE, [".status.phase is Succeeded"])
    assert pod({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}) == (
        FALSE, ['.status.condition["Ready"] is False'])
    assert pod({"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}) == (
        FALSE, [".status.phase is Failed (Evicted): The node was low on resource: memory."])
    assert pod({"phase": "Failed"}) == (FALSE, [".status.phase is Failed"])
    # not scheduled yet, or no kubelet has reported: not known
    assert pod({"phase": "Pending"}) == (UNKNOWN, ["missing .status.conditions"])
    assert pod({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}) == (
        UNKNOWN, ['missing .status.condition["Ready"]'])


JOB_FAILED = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
              "message": "Job has reached the specified backoff limit"}


def test_job_builtin() -> None:
    def job(conditions):
        return r(built("Job", "batch/v1", {} if conditions is None else {"conditions": conditions}))
    assert job([{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]) == (
        TRUE, ['.status.condition["Complete"] is True'])
    assert job([{"type": "FailureTarget", "status": "True"}, JOB_FAILED]) == (
        FALSE, ['.status.condition["Failed"] is True (BackoffLimitExceeded): '
                'Job has reached the specified backoff limit'])
    assert job([{"type": "Failed", "status": "True"}]) == (FALSE, ['.status.condition["Failed"] is True'])
    # still running
    assert job(None) == (UNKNOWN, ["missing .status.conditions"])
    assert job([{"type": "Suspended", "status": "False"}]) == (UNKNOWN, ['missing .status.condition["Complete"]'])
    assert job([{"type": "Failed", "status": "False"}, {"type": "Complete", "status": "False"}]) == (
        FALSE, ['.status.condition["Complete"] is False'])
    # suspended: it waits for spec.suspend to be set to false
    assert job([{"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended"}]) == (
        FALSE, ['.status.condition["Suspended"] is True (JobSuspended): Job suspended'])
    assert job([{"type": "Suspended", "status": "True"}, {"type": "Complete", "status": "True"}]) == (
        TRUE, ['.status.condition["Complete"] is True'])


def test_apiservice_builtin() -> None:
    def api(conditions):
        return r(built("APIService", "apiregistration.k8s.io/v1",
                       None if conditions is None else {"conditions": conditions}))
    assert api([{"type": "Available", "status": "True", "reason": "Passed"}]) == (
        TRUE, ['.status.condition["Available"] is True'])
    assert api([{"type": "Available", "status": "False", "reason": "MissingEndpoints",
                 "message": 'endpoints for service/metrics-server in "kube-system" have no addresses'}]) == (
        FALSE, ['.status.condition["Available"] is False (MissingEndpoints): '
                'endpoints for service/metrics-server in "kube-system" have no addresses'])
    assert api([{"type": "Available", "status": "Unknown"}]) == (FALSE, ['.status.condition["Available"] is Unknown'])
    assert api(None) == (UNKNOWN, ["missing .status.conditions"])
    assert api([]) == (UNKNOWN, ['missing .status.condition["Available"]'])


def test_load_balancer_service_builtin() -> None:
    def svc(spec, status=None):
        return r(built("Service", "v1", status, spec=spec))
    lb = {"type": "LoadBalancer"}
    assert svc(lb, {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}) == (
        TRUE, ['.status.loadBalancer.ingress has address "203.0.113.7"'])
    assert svc(lb, {"loadBalancer": {"ingress": [{"ports": [{"port": 80}]}, {"hostname": "lb.example.com"}]}}) == (
        TRUE, ['.status.loadBalancer.ingress has address "lb.example.com"'])
    assert svc(lb, {"loadBalancer": {}}) == (FALSE, [".status.loadBalancer.ingress has no address yet"])
    assert svc(lb, {"loadBalancer": {"ingress": [{"ip": ""}]}}) == (
        FALSE, [".status.loadBalancer.ingress has no address yet"])
    assert svc(lb) == (FALSE, [".status.loadBalancer.ingress has no address yet"])
    # every other type of Service is ready as it is
    assert svc({"type": "ClusterIP"}) == (TRUE, [])
    assert svc({"type": "NodePort"}, {"loadBalancer": {}}) == (TRUE, [])
    assert svc({}) == (TRUE, [])


def test_pod_disruption_budget_builtin() -> None:
    def pdb(status, generation=1):
        return r(built("PodDisruptionBudget", "policy/v1", status, generation=generation))
    assert pdb({"observedGeneration": 1, "currentHealthy": 0, "desiredHealthy": 1}) == (TRUE, [])
    assert pdb({"observedGeneration": 1}, generation=2) == (UNKNOWN, [".status outdated"])
    assert pdb(None) == (UNKNOWN, [".status outdated"])


def test_the_probe_failure_condition_says_a_shared_message_once() -> None:
    """Issue 9's report, through the engine: the Available message names the PVC's phase once."""
    from tests.engine.helpers import brief, cluster, cos, phase, run

    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "test-pvc", "namespace": "ns"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("one", pvc), progressionProbes=[
        {"selector": {"type": "GroupKind", "groupKind": {"group": "", "kind": "PersistentVolumeClaim"}},
         "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "status.phase", "value": "Bound"}}]}]))
    run(mc, "ext-1")
    mc.set_status("v1", "PersistentVolumeClaim", "test-pvc", "ns", {"phase": "Pending"})
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Available") == (
        "False", "ProbeFailure",
        'Object PersistentVolumeClaim.v1 ns/test-pvc: value at key "status.phase" != "Bound"; expected: "Bound" '
        'got: "Pending"')
