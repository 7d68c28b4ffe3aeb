"""Rolling an Active COS out: phase walk, steady state, drift repair, refs, Blocked, errors, deadline."""

from __future__ import annotations

import gzip

import pytest

from common.cluster.interface import Forbidden, NotFound
from common.contract.api import API_VERSION, FINALIZER_TEARDOWN, KIND
from common.contract.objects import copy_json
from tests.engine.helpers import (
    as_gzip,
    as_json,
    at,
    brief,
    cluster,
    cm,
    cond,
    cos,
    deployment,
    get_cos,
    phase,
    ready_deployment,
    run,
    secret,
    writes,
)


def _two_phase(mc, **spec):
    mc.put(cos("ext-1", 1, phase("first", deployment("d")), phase("second", cm("later")), **spec))


def test_walk_stops_at_first_incomplete_phase_and_never_touches_later_ones() -> None:
    mc = cluster()
    _two_phase(mc)
    result = run(mc, "ext-1")
    assert result.error is None and result.requeue_after is None
    assert writes(mc) == [("patch", KIND, "ext-1"), ("create", "Deployment", "d"),
                          ("patch_status", KIND, "ext-1")]
    assert not any(r.name == "later" for r in mc.log)           # not even read
    assert get_cos(mc, "ext-1")["metadata"]["finalizers"] == [FINALIZER_TEARDOWN]
    assert brief(mc, "ext-1", "Progressing") == ("True", "RollingOut", "Revision 1 is rolling out.")
    assert brief(mc, "ext-1", "Available") == (
        "False", "ProbeFailure", "Object Deployment.apps/v1 ns/d: .status outdated")
    assert cond(mc, "ext-1", "Succeeded") is None
    assert result.watched_kinds == {("apps/v1", "Deployment"), ("v1", "ConfigMap")}

    mc.set_status("apps/v1", "Deployment", "d", "ns", {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 1,
                                                       "conditions": [{"type": "Available", "status": "False"}]})
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Available") == (
        "False", "ProbeFailure",
        'Object Deployment.apps/v1 ns/d: "status.updatedReplicas" != "status.replicas" expected: 1 got: 2'
        ' and .status.condition["Available"] is False')

    ready_deployment(mc, "d")
    mc.reset_requests()
    result = run(mc, "ext-1")
    assert writes(mc) == [("create", "ConfigMap", "later"), ("patch_status", KIND, "ext-1")]
    assert brief(mc, "ext-1", "Progressing") == ("True", "Succeeded", "Revision 1 has rolled out.")
    assert brief(mc, "ext-1", "Available") == ("True", "ProbesSucceeded", "Objects are available and pass all probes.")
    assert brief(mc, "ext-1", "Succeeded") == ("True", "Succeeded", "Revision succeeded rolling out.")
    assert [(e.type, e.reason, e.message) for e in result.events] == [
        ("Normal", "PhaseComplete", 'Phase 0 "first" is complete'),
        ("Normal", "PhaseComplete", 'Phase 1 "second" is complete'),
        ("Normal", "Succeeded", "Revision 1 has rolled out."),
    ]


def test_managed_object_identity() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", {**cm("a"), "status": {"ignored": True}})))
    run(mc, "ext-1")
    a = mc.peek("v1", "ConfigMap", "a", "ns")
    c = get_cos(mc, "ext-1")
    assert a["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "olm.operatorframework.io",
                                       "olm.operatorframework.io/owner-name": "ext"}
    assert a["metadata"]["annotations"] == {"olm.operatorframework.io/revision": "1"}
    assert a["metadata"]["ownerReferences"] == [{"apiVersion": API_VERSION, "kind": KIND, "name": "ext-1",
                                                 "uid": c["metadata"]["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]
    assert "status" not in a


def test_owner_name_label_empty_when_cos_has_none() -> None:
    mc = cluster()
    mc.put(cos("solo", 1, phase("p", cm("a")), owner=""))
    run(mc, "solo")
    assert mc.peek("v1", "ConfigMap", "a", "ns")["metadata"]["labels"]["olm.operatorframework.io/owner-name"] == ""
    assert mc.requests["list"] == 0   # no owner-name: no siblings to look for


def test_steady_state_makes_zero_writes() -> None:
    mc = cluster()
    mc.put(secret("bundle", {"a": as_gzip(cm("from-ref")), "b": as_json(cm("plain-ref"))}))
    mc.put(cos("ext-1", 1, phase("p", deployment("d"), {"ref": {"name": "bundle", "key": "a"}},
                                 {"ref": {"name": "bundle", "namespace": "olmv1-system", "key": "b"}})))
    run(mc, "ext-1")
    ready_deployment(mc, "d")
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Succeeded")[0] == "True"
    mc.reset_requests()
    result = run(mc, "ext-1", now=at(500))
    assert mc.writes == 0
    assert dict(mc.requests) == {"get": 5, "list": 1}   # COS, Secret once for two keys, three objects; siblings
    assert result.events == [] and result.error is None and result.requeue_after is None
    assert result.referenced_secrets == {("olmv1-system", "bundle")}


def test_drift_is_repaired_and_foreign_additions_survive() -> None:
    mc = cluster()
    dep = deployment("d")
    dep["spec"]["paused"] = False
    mc.put(cos("ext-1", 1, phase("p", dep, cm("c", a="1", b="2"))))
    run(mc, "ext-1")
    ready_deployment(mc, "d")
    run(mc, "ext-1")

    def meddle(o):
        o["data"]["a"] = "edited"        # edit a declared field
        del o["data"]["b"]               # delete a declared field
        o["metadata"]["labels"]["team"] = "blue"   # add an undeclared label
    mc.edit("v1", "ConfigMap", "c", "ns", meddle)
    mc.edit("apps/v1", "Deployment", "d", "ns", lambda o: o["spec"]["template"]["metadata"].setdefault(
        "annotations", {}).update({"kubectl.kubernetes.io/restartedAt": "now"}), manager="kubectl-rollout")
    ready_deployment(mc, "d")
    mc.reset_requests()
    run(mc, "ext-1")
    assert writes(mc) == [("apply", "ConfigMap", "c")]   # the restart annotation is not drift
    c = mc.peek("v1", "ConfigMap", "c", "ns")
    assert c["data"] == {"a": "1", "b": "2"}
    assert c["metadata"]["labels"]["team"] == "blue"
    d = mc.peek("apps/v1", "Deployment", "d", "ns")
    assert d["spec"]["template"]["metadata"]["annotations"] == {"kubectl.kubernetes.io/restartedAt": "now"}

    # a forced re-apply of the Deployment keeps the restart annotation another manager owns
    mc.edit("apps/v1", "Deployment", "d", "ns", lambda o: o["spec"].update({"paused": True}))
    mc.reset_requests()
    run(mc, "ext-1")
    # the spec changed twice (generation 3): until the controller observes it, the COS is rolling out again
    assert writes(mc) == [("apply", "Deployment", "d"), ("patch_status", KIND, "ext-1")]
    assert brief(mc, "ext-1", "Available")[2] == "Object Deployment.apps/v1 ns/d: .status outdated"
    d = mc.peek("apps/v1", "Deployment", "d", "ns")
    assert d["spec"]["paused"] is False
    assert d["spec"]["template"]["metadata"]["annotations"] == {"kubectl.kubernetes.io/restartedAt": "now"}

    # the object is deleted: it is created again
    mc.remove("v1", "ConfigMap", "c", "ns")
    mc.reset_requests()
    run(mc, "ext-1")
    assert writes(mc) == [("create", "ConfigMap", "c")]
    assert mc.peek("v1", "ConfigMap", "c", "ns")["data"] == {"a": "1", "b": "2"}


def test_cos_spec_and_inline_manifests_are_not_mutated() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a"))))
    spec = copy_json(get_cos(mc, "ext-1")["spec"])
    run(mc, "ext-1")
    run(mc, "ext-1")
    assert get_cos(mc, "ext-1")["spec"] == spec


def test_custom_resource_waits_for_its_crd() -> None:
    mc = cluster()
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets"},
                    "versions": [{"name": "v1", "served": True, "storage": True}]}}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}
    mc.put(cos("ext-1", 1, phase("crds", crd), phase("crs", widget)))
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Available") == (
        "False", "ProbeFailure",
        'Object CustomResourceDefinition.apiextensions.k8s.io/v1 /widgets.example.com: missing .status.conditions')
    mc.set_status("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", None,
                  {"conditions": [{"type": "Established", "status": "True"}]})
    run(mc, "ext-1")
    assert mc.peek("example.com/v1", "Widget", "w", "ns") is not None
    assert brief(mc, "ext-1", "Succeeded")[0] == "True"


def test_unserved_kind_is_retried_with_the_error() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", {"apiVersion": "example.com/v1", "kind": "Gadget",
                                       "metadata": {"name": "g"}})))
    result = run(mc, "ext-1")
    msg = 'getting Object Gadget.example.com/v1 /g: no matches for kind "Gadget" in version "example.com/v1"'
    assert str(result.error) == msg
    assert brief(mc, "ext-1", "Progressing") == ("True", "Retrying", msg)


def test_api_error_is_retrying_and_available_goes_unknown_only_if_present() -> None:
    mc = cluster()
    _two_phase(mc)
    mc.fail("create", Forbidden('deployments.apps "d" is forbidden: no'), kind="Deployment")
    result = run(mc, "ext-1")
    msg = 'creating Object Deployment.apps/v1 ns/d: deployments.apps "d" is forbidden: no'
    assert str(result.error) == msg and result.requeue_after is None
    assert brief(mc, "ext-1", "Progressing") == ("True", "Retrying", msg)
    assert brief(mc, "ext-1", "Available") is None
    run(mc, "ext-1")                       # creates it; Available is now present
    mc.fail("get", Forbidden("nope"), kind="Deployment")
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Available") == ("Unknown", "Reconciling",
                                               "getting Object Deployment.apps/v1 ns/d: nope")


def test_already_exists_after_a_stale_read_reads_again_and_decides() -> None:
    mc = cluster()
    mc.put(cm("a"), manager="someone")
    mc.put(cos("ext-1", 1, phase("p", cm("a")), protection="IfNoController"))
    mc.fail("get", NotFound('configmaps "a" not found'), kind="ConfigMap")   # a cache that has not seen it yet
    result = run(mc, "ext-1")
    assert result.error is None
    assert [v for v, k, _ in writes(mc) if k == "ConfigMap"] == ["create", "apply"]   # create refused, adopted
    assert mc.peek("v1", "ConfigMap", "a", "ns")["metadata"]["ownerReferences"][0]["name"] == "ext-1"


# ---- refs -------------------------------------------------------------------------------------------------------

def _ref_cos(mc, key="k", name="bundle", namespace=""):
    mc.put(cos("ext-1", 1, phase("p", {"ref": {"name": name, "namespace": namespace, "key": key}})))


def test_ref_errors_are_retrying_with_exact_messages() -> None:
    cases = [
        (None, "getting Secret olmv1-system/bundle: secrets \"bundle\" not found"),
        ({"other": as_json(cm("a"))}, 'key "k" not found in Secret olmv1-system/bundle'),
        ({"k": b"{not json"}, 'unmarshaling object from key "k" in Secret olmv1-system/bundle: '
                               "Expecting property name enclosed in double quotes at line 1 column 2"),
        ({"k": gzip.compress(b"\0" * (11 * 1024 * 1024))},
         'decompressed data for key "k" in Secret olmv1-system/bundle exceeds maximum size (10485760 bytes)'),
    ]
    for data, message in cases:
        mc = cluster()
        if data is not None:
            mc.put(secret("bundle", data))
        _ref_cos(mc)
        result = run(mc, "ext-1")
        assert str(result.error) == message
        assert result.requeue_after is None
        assert brief(mc, "ext-1", "Progressing") == ("True", "Retrying", message)
        assert result.referenced_secrets == {("olmv1-system", "bundle")}


def test_mutable_secret_blocks_until_fixed() -> None:
    mc = cluster()
    mc.put(secret("bundle", {"k": as_json(cm("a"))}, immutable=None))
    mc.put(secret("other", {"k": as_json(cm("b"))}, immutable=False))
    mc.put(cos("ext-1", 1, phase("p", {"ref": {"name": "bundle", "key": "k"}},
                                 {"ref": {"name": "other", "key": "k"}})))
    result = run(mc, "ext-1")
    msg = ("the following secrets are not immutable (referenced secrets must have immutable set to true): "
           "olmv1-system/bundle, olmv1-system/other")
    assert result.error is None and result.requeue_after is None
    assert [(e.type, e.reason) for e in result.events] == [("Warning", "Blocked")]
    assert brief(mc, "ext-1", "Progressing") == ("False", "Blocked", msg)
    assert mc.peek("v1", "ConfigMap", "a", "ns") is None
    assert "finalizers" not in get_cos(mc, "ext-1")["metadata"]
    # unchanged: no new event, no write
    mc.reset_requests()
    assert run(mc, "ext-1").events == [] and mc.writes == 0
    for name in ("bundle", "other"):
        mc.edit("v1", "Secret", name, "olmv1-system", lambda o: o.update({"immutable": True}))
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Succeeded")[0] == "True"


def test_changed_content_blocks_and_recovers_when_it_comes_back() -> None:
    mc = cluster()
    mc.put(secret("bundle", {"k": as_gzip(cm("a"))}))
    mc.put(cos("ext-1", 1, phase("p", {"ref": {"name": "bundle", "key": "k"}}), phase("empty")))
    run(mc, "ext-1")
    observed = get_cos(mc, "ext-1")["status"]["observedPhases"]
    assert observed[1] == {"name": "empty", "digest": "sha256:" + __import__("hashlib").sha256(
        b'{"name":"empty","objects":null}').hexdigest()}
    original = mc.peek("v1", "Secret", "bundle", "olmv1-system")
    mc.remove("v1", "Secret", "bundle", "olmv1-system")
    mc.put(secret("bundle", {"k": as_json(cm("a", k="different"))}))
    mc.reset_requests()
    result = run(mc, "ext-1")
    from reconciler.digest import phase_digest
    got = phase_digest("p", [cm("a", k="different")])
    assert brief(mc, "ext-1", "Progressing") == (
        "False", "Blocked",
        f'resolved content of 1 phase(s) has changed: phase "p" (expected digest {observed[0]["digest"]}, '
        f"got {got}); a referenced object source may have been deleted and recreated with different content")
    assert result.error is None and result.requeue_after is None
    assert writes(mc) == [("patch_status", KIND, "ext-1")]
    assert mc.peek("v1", "ConfigMap", "a", "ns")["data"] == {"k": "v"}   # nothing rolled out
    mc.remove("v1", "Secret", "bundle", "olmv1-system")
    original["metadata"] = {"name": "bundle", "namespace": "olmv1-system"}
    mc.put(original)
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Progressing") == ("True", "Succeeded", "Revision 1 has rolled out.")


def test_changed_phase_count_blocks() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a"))))
    c = get_cos(mc, "ext-1")
    c["status"] = {"observedPhases": [{"name": "p", "digest": "sha256:00"}, {"name": "q", "digest": "sha256:11"}]}
    mc.put(c)
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Progressing") == (
        "False", "Blocked", "number of phases has changed (expected 2 phases, got 1)")


# ---- progress deadline ----------------------------------------------------------------------------------------

def test_progress_deadline_before_after_and_recovery() -> None:
    mc = cluster()
    _two_phase(mc, progressDeadlineMinutes=10)
    result = run(mc, "ext-1", now=at(4))
    assert result.requeue_after == 6 * 60
    assert brief(mc, "ext-1", "Progressing") == ("True", "RollingOut", "Revision 1 is rolling out.")
    result = run(mc, "ext-1", now=at(10))
    assert result.requeue_after is None
    assert brief(mc, "ext-1", "Progressing") == (
        "False", "ProgressDeadlineExceeded",
        "Revision has not rolled out for 10 minute(s). Last status: Revision 1 is rolling out.")
    assert cond(mc, "ext-1", "Progressing")["lastTransitionTime"] == "2026-03-01T12:10:00Z"
    # a retrying error past the deadline keeps the deadline status, with the error as last status
    mc.fail("get", Forbidden("nope"), kind="Deployment")
    run(mc, "ext-1", now=at(11))
    assert brief(mc, "ext-1", "Progressing")[1:] == (
        "ProgressDeadlineExceeded",
        "Revision has not rolled out for 10 minute(s). Last status: getting Object Deployment.apps/v1 ns/d: nope")
    ready_deployment(mc, "d")
    run(mc, "ext-1", now=at(12))
    assert brief(mc, "ext-1", "Progressing") == ("True", "Succeeded", "Revision 1 has rolled out.")
    assert cond(mc, "ext-1", "Progressing")["lastTransitionTime"] == "2026-03-01T12:12:00Z"
    # once Succeeded, the deadline no longer applies even if the rollout regresses
    mc.set_status("apps/v1", "Deployment", "d", "ns", {})
    result = run(mc, "ext-1", now=at(60))
    assert brief(mc, "ext-1", "Progressing") == ("True", "RollingOut", "Revision 1 is rolling out.")
    assert brief(mc, "ext-1", "Succeeded")[0] == "True"   # latches
    assert result.requeue_after is None


def test_deadline_off_when_unset() -> None:
    mc = cluster()
    _two_phase(mc)
    result = run(mc, "ext-1", now=at(10_000))
    assert result.requeue_after is None
    assert brief(mc, "ext-1", "Progressing")[1] == "RollingOut"


def test_status_written_only_on_change_and_transition_time_only_on_status_change() -> None:
    mc = cluster()
    _two_phase(mc)
    run(mc, "ext-1", now=at(1))
    mc.reset_requests()
    run(mc, "ext-1", now=at(2))
    assert mc.writes == 0
    mc.set_status("apps/v1", "Deployment", "d", "ns", {"observedGeneration": 1})
    run(mc, "ext-1", now=at(3))   # message changes, status stays False
    avail = cond(mc, "ext-1", "Available")
    assert avail["lastTransitionTime"] == "2026-03-01T12:01:00Z"
    assert avail["observedGeneration"] == 1


def test_unreadable_cos_is_a_retryable_error_and_absent_cos_is_nothing() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a"))))
    mc.fail("get", Forbidden("denied"), kind=KIND)
    result = run(mc, "ext-1")
    assert str(result.error) == "getting ClusterObjectSet ext-1: denied"
    assert mc.writes == 0
    result = run(mc, "nope")
    assert result.error is None and result.requeue_after is None and result.events == []


def test_watched_kinds_known_even_when_a_ref_fails() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", deployment("d"), {"ref": {"name": "missing", "key": "k"}})))
    result = run(mc, "ext-1")
    assert result.error is not None
    assert result.watched_kinds == {("apps/v1", "Deployment")}
    assert result.referenced_secrets == {("olmv1-system", "missing")}


def test_declared_nulls_and_canonicalized_quantities_are_not_drift() -> None:
    """A manifest from `kubectl create --dry-run -o yaml` carries `creationTimestamp: null`; the server stores
    quantities canonically (500m stays, 1000m becomes 1, 1024Mi becomes 1Gi). Neither is a reason to write."""
    from tests.engine.helpers import cluster, cos, phase, run

    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "a", "namespace": "ns", "creationTimestamp": None, "labels": None},
           "data": {"cpu": "1000m", "memory": "1024Mi"}}
    mc = cluster()
    canonical = {"1000m": "1", "1024Mi": "1Gi"}
    mc.normalizers.append(lambda o: o.get("data") and o.update(data={k: canonical.get(v, v)
                                                                    for k, v in o["data"].items()}))
    mc.put(cos("ext-1", 1, phase("p", obj)))
    run(mc, "ext-1")
    live = mc.peek("v1", "ConfigMap", "a", "ns")
    assert "labels" in live["metadata"] and live["metadata"]["creationTimestamp"]  # ours, and the server's
    assert live["data"] == {"cpu": "1", "memory": "1Gi"}
    mc.reset_requests()
    run(mc, "ext-1")
    run(mc, "ext-1")
    assert mc.writes == 0 and mc.requests["apply:dry-run"] == 0


def test_any_server_normalization_is_not_drift_and_costs_nothing() -> None:
    """Issue 9: `data: {}`, `env: []`, Secret `stringData` and whatever else the server rewrites (here an
    invented rule no client could know) are not drift: steady state sends no write and no dry run."""
    from tests.engine.helpers import cluster, cos, deployment, phase, run

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
              "stringData": {"password": "hunter2"}, "data": {}}
    empty = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e", "namespace": "ns", "labels": {}},
             "data": {}}
    odd = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "odd", "namespace": "ns"},
           "data": {"mode": "LOUD"}}
    dep = deployment("d")
    dep["spec"]["template"]["spec"]["containers"][0]["env"] = []
    mc = cluster()
    mc.normalizers.append(lambda o: o.get("data", {}).get("mode") and o["data"].update(mode=o["data"]["mode"].lower()))
    mc.put(cos("ext-1", 1, phase("p", secret, empty, odd, dep)))
    run(mc, "ext-1")
    assert "data" not in mc.peek("v1", "ConfigMap", "e", "ns")                      # dropped, as a real server does
    assert "stringData" not in mc.peek("v1", "Secret", "s", "ns")                   # merged into data
    assert "env" not in mc.peek("apps/v1", "Deployment", "d", "ns")["spec"]["template"]["spec"]["containers"][0]
    assert mc.peek("v1", "ConfigMap", "odd", "ns")["data"] == {"mode": "loud"}
    mc.reset_requests()
    for _ in range(3):
        run(mc, "ext-1")
    assert mc.writes == 0
    assert mc.requests["apply:dry-run"] == 0


def test_after_a_restart_one_dry_run_per_object_then_nothing() -> None:
    """A new process (a new memory) asks the server once per controlled object, with a dry run, and writes
    nothing when the dry run says nothing would change; a kubectl edit of a field we own is then repaired."""
    from reconciler.engine import Memory, reconcile
    from tests.engine.helpers import T0, cluster, cos, phase

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
              "stringData": {"password": "hunter2"}}
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", secret, cm("c", a="1"))))
    reconcile(mc, "ext-1", now=T0, memory=Memory())
    restarted = Memory()
    mc.reset_requests()
    reconcile(mc, "ext-1", now=T0, memory=restarted)
    assert [(r.verb, r.name) for r in mc.log if r.kind in ("Secret", "ConfigMap")] == [
        ("get", "s"), ("apply:dry-run", "s"), ("get", "c"), ("apply:dry-run", "c")]
    assert mc.writes == 0 and len(restarted.applied) == 2
    mc.reset_requests()
    reconcile(mc, "ext-1", now=T0, memory=restarted)
    assert mc.writes == 0 and mc.requests["apply:dry-run"] == 0

    # kubectl edit of the Secret's data (which our stringData became) and of a ConfigMap key we declared
    mc.edit("v1", "Secret", "s", "ns", lambda o: o["data"].update(password="ZWRpdGVk"))
    mc.edit("v1", "ConfigMap", "c", "ns", lambda o: o["data"].update(a="edited"))
    mc.reset_requests()
    reconcile(mc, "ext-1", now=T0, memory=restarted)
    assert writes(mc) == [("apply", "Secret", "s"), ("apply", "ConfigMap", "c")]
    assert mc.peek("v1", "Secret", "s", "ns")["data"] == {"password": "aHVudGVyMg=="}
    assert mc.peek("v1", "ConfigMap", "c", "ns")["data"] == {"a": "1"}
    mc.reset_requests()
    reconcile(mc, "ext-1", now=T0, memory=restarted)
    assert mc.writes == 0 and mc.requests["apply:dry-run"] == 0


def test_quantities() -> None:
    from common.contract.quantity import QuantityError, parse_quantity, same_value

    assert same_value("1000m", "1") and same_value("1024Mi", "1Gi") and same_value("1e3", "1k")
    assert same_value("0.5", "500m")
    assert not same_value("1", "2") and not same_value("v1", "v1.0") and not same_value("1Gi", "1G")
    with pytest.raises(QuantityError):
        parse_quantity("nginx:1.25")
    assert parse_quantity("1E").value == 10**18


def test_object_in_a_namespace_created_later_retries_then_rolls_out() -> None:
    """The API server refuses a new object in a namespace that does not exist (NamespaceLifecycle): the COS
    is Retrying with the server's words, and rolls out once the namespace exists."""
    from common.testing.memcluster import MemCluster
    from tests.engine.helpers import T0, cos, phase, run

    mc = MemCluster(clock=lambda: T0, namespace_lifecycle=True)
    mc.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    mc.put(cos("ext-1", 1, phase("p", cm("here"), cm("early", ns="later"))))
    result = run(mc, "ext-1")
    message = 'creating Object ConfigMap.v1 later/early: namespaces "later" not found'
    assert str(result.error) == message
    assert brief(mc, "ext-1", "Progressing") == ("True", "Retrying", message)
    assert mc.peek("v1", "ConfigMap", "early", "later") is None
    mc.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "later"}})
    result = run(mc, "ext-1")
    assert result.error is None
    assert brief(mc, "ext-1", "Progressing") == ("True", "Succeeded", "Revision 1 has rolled out.")
    assert mc.peek("v1", "ConfigMap", "early", "later")["data"] == {"k": "v"}
