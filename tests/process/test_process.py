"""The reconciler process with the real engine against the fake API server: what it sends, when."""

from __future__ import annotations

import base64
import itertools
import time
from collections.abc import Callable, Iterator

import pytest

from common.cluster.interface import AlreadyExists, NotFound, UnknownKind
from common.cluster.kube import KubeCluster
from common.contract.conditions import settled
from common.runtime.cache import InformerKey
from common.runtime.client import CachedCluster
from reconciler.engine import Result, memory_for
from reconciler.process import ProcessConfig, ReconcilerProcess
from reconciler.watches import MANAGED_SELECTOR
from tests.engine.helpers import cm, cos, phase
from tests.support.fake_apiserver import FakeApiServer

COS_API = "olm.operatorframework.io/v1"


def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def get_cos(server: FakeApiServer, name: str) -> dict:
    obj = server.get_object(COS_API, "ClusterObjectSet", name)
    assert obj is not None
    return obj


def condition(obj: dict, ctype: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == ctype), {})


@pytest.fixture
def proc(kube: KubeCluster) -> Iterator[ReconcilerProcess]:
    kube.sleep = lambda s: time.sleep(min(s, 0.05))  # type: ignore[attr-defined]
    p = ReconcilerProcess(kube, ProcessConfig(workers=2, system_namespace="sys"), watch_timeout=30)
    yield p
    p.stop()


def writes(server: FakeApiServer) -> list:
    return [r for r in server.requests if r.method not in ("GET",)]


def test_rollout_then_steady_state_sends_no_writes(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x")), phase("b", cm("y"), cm("z"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    objs = server.objects("v1", "ConfigMap")
    assert sorted(o["metadata"]["name"] for o in objs) == ["x", "y", "z"]
    # the first read of the kind started its cache: one list, no GET per object
    assert [r.verb for r in server.requests if "/configmaps" in r.path and r.verb in ("get", "list")] == ["list"]
    assert all(o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "olm.operatorframework.io" for o in objs)
    wait_for(lambda: proc.caches.get(InformerKey("v1", "ConfigMap", None, MANAGED_SELECTOR)) is not None)
    wait_for(proc.queue.idle)
    time.sleep(0.3)
    server.clear_requests()
    count = proc.reconcile_count
    proc.queue.add("c1")  # a resync: the engine runs again on an unchanged, complete COS
    wait_for(lambda: proc.reconcile_count > count and proc.queue.idle())
    time.sleep(0.3)
    assert writes(server) == []
    assert [r for r in server.requests if r.verb in ("get", "list")] == []  # all reads from the caches


def test_status_is_written_as_a_merge_patch_of_what_changed_on_the_cos_read(server: FakeApiServer,
                                                                            proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    status_writes = [r for r in server.requests if r.path.endswith("/clusterobjectsets/c1/status")]
    assert [(r.method, r.content_type) for r in status_writes] == [("PATCH", "application/merge-patch+json")]
    body = status_writes[0].body
    assert sorted(body) == ["metadata", "status"]           # never the spec: the 1,000 objects stay on the server
    assert sorted(body["status"]) == ["conditions", "observedPhases"]
    # with the resourceVersion of the COS as read (the server checks it: a stale one would be a 409)
    assert list(body["metadata"]) == ["resourceVersion"] and status_writes[0].status == 200
    assert body["metadata"]["resourceVersion"] != get_cos(server, "c1")["metadata"]["resourceVersion"]


def test_a_rollout_is_one_reconcile_the_echoes_of_its_own_writes_wake_nothing(server: FakeApiServer,
                                                                              proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x")), phase("b", cm("y"), cm("z"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    wait_for(proc.queue.idle)
    time.sleep(0.5)   # the watch events of its creates, its finalizer and its status writes have all come
    assert proc.reconcile_count == 1
    # a write by anyone else still wakes it: a label on the COS, and a change to one of its objects
    live = get_cos(server, "c1")
    live["metadata"].setdefault("labels", {})["touched"] = "yes"
    server.put_object(live)
    wait_for(lambda: proc.reconcile_count == 2 and proc.queue.idle())
    x = server.get_object("v1", "ConfigMap", "x", "ns")
    x["metadata"]["annotations"] = {**(x["metadata"].get("annotations") or {}), "someone": "else"}
    server.put_object(x)
    wait_for(lambda: proc.reconcile_count == 3 and proc.queue.idle())
    time.sleep(0.3)
    assert proc.reconcile_count == 3


def test_someone_removing_the_teardown_finalizer_wakes_the_cos_and_it_is_put_back(server: FakeApiServer,
                                                                                  proc: ReconcilerProcess) -> None:
    # our own finalizer's addition is an echo; its removal by anyone else is not: left alone, a later archive
    # would find no finalizer, take the COS for torn down already and leave its objects behind
    server.put_object(cos("c1", 1, phase("a", cm("x"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    wait_for(proc.queue.idle)
    time.sleep(0.3)
    count = proc.reconcile_count
    live = get_cos(server, "c1")
    assert live["metadata"]["finalizers"] == ["olm.operatorframework.io/teardown"]
    live["metadata"]["finalizers"] = []
    server.put_object(live)   # kubectl patch --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
    wait_for(lambda: get_cos(server, "c1")["metadata"].get("finalizers") == ["olm.operatorframework.io/teardown"])
    wait_for(lambda: proc.reconcile_count > count)  # counted when the reconcile ends, after its finalizer patch
    live = get_cos(server, "c1")
    live["spec"]["lifecycleState"] = "Archived"
    live["metadata"]["generation"] += 1
    server.put_object(live)
    wait_for(lambda: server.get_object("v1", "ConfigMap", "x", "ns") is None)   # torn down, not orphaned


def test_the_memory_of_deleted_objects_goes_with_them(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    # a long-lived process that rolls out and deletes COSs must not keep a record of every object it ever wrote
    proc.start()
    for i in range(3):
        server.put_object(cos(f"c{i}", 1, phase("a", cm(f"x{i}"), cm(f"y{i}"))))
        wait_for(lambda i=i: settled(get_cos(server, f"c{i}")))
    wait_for(proc.queue.idle)
    applied = memory_for(proc.cluster).applied
    assert len(applied) == 6
    for i in range(3):
        server.delete_object(COS_API, "ClusterObjectSet", f"c{i}")
    wait_for(lambda: server.objects("v1", "ConfigMap") == [] and server.objects(COS_API, "ClusterObjectSet") == [])
    wait_for(lambda: len(applied) == 0)


def test_events_during_a_reconcile_are_judged_when_it_ends(kube: KubeCluster) -> None:
    """An event of one of the COS's objects that comes while the COS is being reconciled is held: at the end, a
    version the engine wrote itself is dropped, anyone else's queues the COS again (driven without workers)."""
    managed = InformerKey("v1", "ConfigMap", None, MANAGED_SELECTOR)

    def version(rv: str, manager: str = "olm.operatorframework.io") -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "ns", "uid": "u-x", "resourceVersion": rv,
                             "ownerReferences": [{"apiVersion": "olm.operatorframework.io/v1",
                                                  "kind": "ClusterObjectSet", "name": "c1", "uid": "u-c1",
                                                  "controller": True}],
                             "managedFields": [{"manager": manager, "operation": "Apply", "apiVersion": "v1",
                                                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]},
                "data": {"k": "v"}}

    deliver: list[dict] = []

    def reconcile(cluster: object, name: str) -> Result:
        for obj in deliver:   # the watch event comes before the write's answer is recorded
            p._on_event(managed, "MODIFIED", obj, None)
        memory_for(p.cluster).applied.remember(version("7"), version("7"))   # our write's answer
        return Result()

    p = ReconcilerProcess(kube, ProcessConfig(workers=1), reconcile=reconcile, watch_timeout=30)
    try:
        deliver[:] = [version("7")]           # the echo of our own write
        p._process("c1")
        assert len(p.queue) == 0
        deliver[:] = [version("8", manager="kubectl-edit")]   # someone else's change, during the reconcile
        p._process("c1")
        assert len(p.queue) == 1 and p.queue.get(timeout=1) == "c1"
        p.queue.done("c1")
        p._on_event(managed, "MODIFIED", version("7"), None)  # outside a reconcile: known, wakes nobody
        assert len(p.queue) == 0
        p._on_event(managed, "MODIFIED", version("9", manager="kubectl-edit"), None)
        assert len(p.queue) == 1
    finally:
        p.stop()


def test_a_change_of_fields_not_ours_wakes_the_cos_and_costs_no_request(server: FakeApiServer,
                                                                       proc: ReconcilerProcess) -> None:
    """The answers of the rollout's writes are not fingerprinted when written (reconciler.drift): the watch settles
    the one a label edit replaces, so the reconcile that edit wakes finds the object unchanged without a dry run."""
    server.put_object(cos("c1", 1, phase("a", cm("x", k="v"), cm("y"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    wait_for(proc.queue.idle)
    time.sleep(0.3)
    rec = proc.memory.applied.record(cm("x", k="v"), server.get_object("v1", "ConfigMap", "x", "ns") or {})
    assert rec is not None and rec.fingerprint is None   # pending: nobody else changed it yet
    server.clear_requests()
    count = proc.reconcile_count
    live = server.get_object("v1", "ConfigMap", "x", "ns")
    assert live is not None
    live["metadata"]["labels"]["team"] = "blue"
    server.put_object(live)
    wait_for(lambda: proc.reconcile_count > count and proc.queue.idle())
    time.sleep(0.3)
    assert writes(server) == []
    rec = proc.memory.applied.record(cm("x", k="v"), live)
    assert rec is not None and rec.fingerprint is not None
    assert rec.resource_version == server.get_object("v1", "ConfigMap", "x", "ns")["metadata"]["resourceVersion"]


def test_drift_on_a_managed_object_is_repaired_through_its_watch(server: FakeApiServer,
                                                                 proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x", k="v"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    wait_for(lambda: len(proc.caches.informers()) == 2 and proc.caches.synced())
    live = server.get_object("v1", "ConfigMap", "x", "ns")
    live["data"] = {"k": "tampered"}
    server.put_object(live)
    wait_for(lambda: server.get_object("v1", "ConfigMap", "x", "ns")["data"] == {"k": "v"})
    applies = [r for r in server.requests if r.verb == "apply"]
    assert applies and applies[-1].query == {"fieldManager": "olm.operatorframework.io", "force": "true"}


def test_secret_events_retrigger_the_cos_that_references_them(server: FakeApiServer,
                                                               proc: ReconcilerProcess) -> None:
    data = base64.b64encode(b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fromref","namespace":"ns"}}')
    server.put_object({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bundle", "namespace": "sys"},
                       "type": "olm.operatorframework.io/object-data", "data": {"obj": data.decode()}})
    server.put_object(cos("c1", 1, phase("a", {"ref": {"name": "bundle", "key": "obj"}})))
    proc.start()
    wait_for(lambda: condition(get_cos(server, "c1"), "Progressing").get("reason") == "Blocked")
    assert condition(get_cos(server, "c1"), "Progressing")["message"] == (
        "the following secrets are not immutable (referenced secrets must have immutable set to true): sys/bundle")
    wait_for(lambda: proc.caches.get(InformerKey("v1", "Secret", "sys")) is not None)
    secret = server.get_object("v1", "Secret", "bundle", "sys")
    secret["immutable"] = True
    server.put_object(secret)  # no requeue was pending: only the Secret's watch event can wake the COS
    wait_for(lambda: settled(get_cos(server, "c1")) and condition(get_cos(server, "c1"), "Available")
             .get("status") == "True")
    assert server.get_object("v1", "ConfigMap", "fromref", "ns") is not None


def test_events_are_recorded_on_the_cos_once(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    wait_for(proc.queue.idle)
    events = server.objects("v1", "Event")
    assert events, "no Event recorded"
    uid = get_cos(server, "c1")["metadata"]["uid"]
    for ev in events:
        assert ev["metadata"]["namespace"] == "default"
        assert ev["involvedObject"] == {"apiVersion": COS_API, "kind": "ClusterObjectSet", "name": "c1",
                                        "uid": uid, "resourceVersion": ev["involvedObject"]["resourceVersion"]}
        assert ev["source"] == {"component": "cos-reconciler"} and ev["type"] in ("Normal", "Warning")
    n = len(events)
    proc.recorder.record(get_cos(server, "c1"), events[0]["type"], events[0]["reason"], events[0]["message"])
    assert len(server.objects("v1", "Event")) == n  # identical event within 5 minutes: not written again


def test_deleted_cos_stops_the_watches_it_needed(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    key = InformerKey("v1", "ConfigMap", None, MANAGED_SELECTOR)
    wait_for(lambda: proc.caches.get(key) is not None)
    server.delete_object(COS_API, "ClusterObjectSet", "c1")
    wait_for(lambda: server.get_object(COS_API, "ClusterObjectSet", "c1") is None, timeout=15)
    assert server.get_object("v1", "ConfigMap", "x", "ns") is None  # ordered teardown ran first
    wait_for(lambda: proc.caches.get(key) is None)


def test_errors_requeue_with_backoff_and_success_forgets(kube: KubeCluster, server: FakeApiServer) -> None:
    calls: list[float] = []

    def flaky(cluster, name):
        calls.append(time.monotonic())
        return Result(error=RuntimeError("boom") if len(calls) < 4 else None)

    p = ReconcilerProcess(kube, ProcessConfig(workers=1), reconcile=flaky, watch_timeout=30)
    try:
        server.put_object(cos("c1", 1, phase("a", cm("x"))))
        p.start()
        wait_for(lambda: len(calls) == 4)
        time.sleep(0.1)
        assert len(calls) == 4
        gaps = [b - a for a, b in itertools.pairwise(calls)]
        assert gaps[0] >= 0.005 and gaps[1] >= 0.01 and gaps[2] >= 0.02
        assert p.queue.backoff.failures("c1") == 0
        text = p.metrics.render().decode()
        assert 'cos_reconciles_total{result="error"} 3.0' in text
        assert 'cos_reconciles_total{result="success"} 1.0' in text
        assert 'cos_api_requests_total{code="200",verb="list"}' in text
    finally:
        p.stop()


def test_fixed_requeue_comes_back_after_the_delay(kube: KubeCluster, server: FakeApiServer) -> None:
    calls: list[float] = []

    def slow(cluster, name):
        calls.append(time.monotonic())
        return Result(requeue_after=0.3 if len(calls) == 1 else None)

    p = ReconcilerProcess(kube, ProcessConfig(workers=1), reconcile=slow, watch_timeout=30)
    try:
        server.put_object(cos("c1", 1))
        p.start()
        wait_for(lambda: len(calls) == 2)
        assert 0.28 <= calls[1] - calls[0] < 1.0
    finally:
        p.stop()


def test_cached_cluster_reads_misses_of_filtered_caches_live_only_after_already_exists(
        kube: KubeCluster, server: FakeApiServer, proc: ReconcilerProcess) -> None:
    proc.caches.retain({InformerKey("v1", "ConfigMap", None, MANAGED_SELECTOR)})
    assert proc.caches.wait_synced(5)
    server.put_object(cm("foreign"))  # exists, but without our label: not in the cache
    cluster = CachedCluster(kube, proc.caches)
    server.clear_requests()
    with pytest.raises(NotFound):
        cluster.get("v1", "ConfigMap", "foreign", "ns")
    assert [r for r in server.requests if r.verb != "watch"] == []  # answered by the cache
    with pytest.raises(AlreadyExists):
        cluster.create(cm("foreign"))
    assert cluster.get("v1", "ConfigMap", "foreign", "ns")["metadata"]["name"] == "foreign"
    assert [(r.method, r.path) for r in server.requests if r.verb != "watch"] == [
        ("POST", "/api/v1/namespaces/ns/configmaps"), ("GET", "/api/v1/namespaces/ns/configmaps/foreign")]
    # a kind nobody watches is read live
    server.clear_requests()
    with pytest.raises(NotFound):
        cluster.get("v1", "Service", "s", "ns")
    assert [r.path for r in server.requests if r.verb == "get"] == ["/api/v1/namespaces/ns/services/s"]
    # a list with a limit: from the cache, cut; live, one page of that size
    server.put_object({**cm("mine-a"), "metadata": {**cm("mine-a")["metadata"], "labels": {"x": "y"}}})
    server.put_object({**cm("mine-b"), "metadata": {**cm("mine-b")["metadata"], "labels": {"x": "y"}}})
    server.clear_requests()
    assert len(cluster.list("v1", "ConfigMap", limit=1)) == 1
    assert [r.query.get("limit") for r in server.requests if r.verb == "list"] == ["1"]


def test_health_and_readiness(kube: KubeCluster, server: FakeApiServer, proc: ReconcilerProcess) -> None:
    ready, live = proc.ready_checks(), proc.live_checks()
    assert ready["informer-sync"]() == "ClusterObjectSet cache not synced"
    proc.start()
    wait_for(lambda: ready["informer-sync"]() is None)
    assert ready["leader-election"]() is None and live["leader-election"]() is None


def test_cr_of_a_crd_from_an_earlier_phase_is_applied_once_the_crd_is_served(tmp_path) -> None:
    from tests.cluster.test_kube_http import crd

    with FakeApiServer(crd_discovery_delay=0.5) as server:
        kube = KubeCluster.from_kubeconfig(server.write_kubeconfig(str(tmp_path / "kc")),
                                           discovery_refresh_interval=3600)  # only the CRD's watch refreshes
        p = ReconcilerProcess(kube, ProcessConfig(workers=2), watch_timeout=30)
        try:
            widget = {"apiVersion": "example.com/v1", "kind": "Widget",
                      "metadata": {"name": "w1", "namespace": "ns"}, "spec": {"size": 3}}
            with pytest.raises(UnknownKind):  # a cached discovery miss that only the CRD's event can clear
                kube.resource("example.com/v1", "Widget")
            server.put_object(cos("c1", 1, phase("crds", crd()), phase("crs", widget)))
            p.start()
            wait_for(lambda: settled(get_cos(server, "c1")), timeout=15)
            assert server.get_object("example.com/v1", "Widget", "w1", "ns")["spec"] == {"size": 3}
        finally:
            p.stop()


def test_managed_by_label_removed_by_a_user_is_restored(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    wait_for(lambda: proc.caches.get(InformerKey("v1", "ConfigMap", None, MANAGED_SELECTOR)) is not None)
    live = server.get_object("v1", "ConfigMap", "x", "ns")
    del live["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    server.put_object(live)  # leaves the filtered cache: DELETED for the informer, the owner is enqueued
    wait_for(lambda: (server.get_object("v1", "ConfigMap", "x", "ns")["metadata"].get("labels") or {})
             .get("app.kubernetes.io/managed-by") == "olm.operatorframework.io")
    sent = [r for r in server.requests if r.path.startswith("/api/v1/namespaces/ns/configmaps")]
    # it left the filtered cache, so it is read live; its values at our fields changed (a dry run confirms
    # that an apply would change them), then it is re-labelled
    assert [(r.verb, r.query.get("dryRun")) for r in sent[-3:]] == [("get", None), ("apply", "All"), ("apply", None)]


def test_change_made_while_watches_were_down_and_history_compacted_is_still_seen(
        server: FakeApiServer, proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x", k="v"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    key = InformerKey("v1", "ConfigMap", None, MANAGED_SELECTOR)
    wait_for(lambda: proc.caches.get(key) is not None and proc.caches.synced())
    lists_before = proc.caches.get(key).lists
    with server._lock:  # atomically: cut the watches, change the object, forget the history
        server.drop_watches(abrupt=True)
        live = server.get_object("v1", "ConfigMap", "x", "ns")
        live["data"] = {"k": "tampered"}
        server.put_object(live)
        server.compact()
    wait_for(lambda: server.get_object("v1", "ConfigMap", "x", "ns")["data"] == {"k": "v"})
    assert proc.caches.get(key).lists == lists_before + 1  # the 410 re-list delivered the change


def test_namespaced_object_without_namespace_is_reported_on_the_cos(server: FakeApiServer,
                                                                     proc: ReconcilerProcess) -> None:
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nons"}, "data": {"k": "v"}}
    server.put_object(cos("c1", 1, phase("a", bad)))
    proc.start()
    wait_for(lambda: condition(get_cos(server, "c1"), "Progressing").get("reason") == "Retrying")
    prog = condition(get_cos(server, "c1"), "Progressing")
    assert prog["message"].endswith("ConfigMap nons: metadata.namespace is required (the kind is namespaced)")
