"""Issue 9 through the process and the fake API server: teardown never repeats its own deletes, NotFound
quotes the API server's words, and server normalization costs nothing at steady state."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from common.cluster.interface import NotFound
from common.cluster.kube import KubeCluster
from common.contract.conditions import settled
from common.runtime.cache import InformerKey
from reconciler.process import ProcessConfig, ReconcilerProcess
from reconciler.watches import MANAGED_SELECTOR
from tests.engine.helpers import cm, cos, phase
from tests.process.test_process import get_cos, wait_for
from tests.support.fake_apiserver import FakeApiServer

COS_API = "olm.operatorframework.io/v1"


@pytest.fixture
def proc(kube: KubeCluster) -> Iterator[ReconcilerProcess]:
    kube.sleep = lambda s: time.sleep(min(s, 0.05))  # type: ignore[attr-defined]
    p = ReconcilerProcess(kube, ProcessConfig(workers=2, system_namespace="sys"), watch_timeout=30)
    yield p
    p.stop()


def test_teardown_deletes_each_object_once_without_404_or_409(server: FakeApiServer,
                                                               proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x")), phase("b", cm("y"), cm("z"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    server.clear_requests()
    server.delete_object(COS_API, "ClusterObjectSet", "c1")   # finalizer: marked, the reconciler tears down
    wait_for(lambda: server.get_object(COS_API, "ClusterObjectSet", "c1") is None)
    wait_for(proc.queue.idle)
    time.sleep(0.3)
    deletes = [r for r in server.requests if r.method == "DELETE"]
    assert sorted(r.path.rsplit("/", 1)[1] for r in deletes) == ["x", "y", "z"]
    # last phase first: y and z before x
    assert deletes[-1].path.endswith("/x")
    assert [r for r in server.requests if r.status in (404, 409)] == []


def test_teardown_waits_for_finalizers_without_deleting_again(server: FakeApiServer,
                                                              proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x")), phase("b", cm("y"))))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    y = server.get_object("v1", "ConfigMap", "y", "ns")
    y["metadata"]["finalizers"] = ["example.com/hold"]
    server.put_object(y)
    # the cache must see the finalizer first: a delete from an older cached version is refused (409) by its
    # resourceVersion precondition and retried, a second DELETE this test would count
    wait_for(lambda: proc.cluster.get("v1", "ConfigMap", "y", "ns")["metadata"].get("finalizers"))
    server.clear_requests()
    server.delete_object(COS_API, "ClusterObjectSet", "c1")
    wait_for(lambda: (server.get_object("v1", "ConfigMap", "y", "ns") or {}).get("metadata", {})
             .get("deletionTimestamp") is not None)
    count = proc.reconcile_count
    proc.queue.add("c1")
    wait_for(lambda: proc.reconcile_count > count and proc.queue.idle())
    assert [r.path.rsplit("/", 1)[1] for r in server.requests if r.method == "DELETE"] == ["y"]
    assert server.get_object("v1", "ConfigMap", "x", "ns") is not None   # phase a waits for phase b
    y = server.get_object("v1", "ConfigMap", "y", "ns")
    y["metadata"]["finalizers"] = []
    server.put_object(y)
    wait_for(lambda: server.get_object(COS_API, "ClusterObjectSet", "c1") is None)
    assert sorted(r.path.rsplit("/", 1)[1] for r in server.requests if r.method == "DELETE") == ["x", "y"]
    assert [r for r in server.requests if r.status in (404, 409)] == []


def test_not_found_from_a_cache_quotes_the_api_server(server: FakeApiServer, proc: ReconcilerProcess,
                                                      kube: KubeCluster) -> None:
    proc.start()
    for av, kind in (("v1", "ConfigMap"), ("apps/v1", "Deployment")):
        inf = proc.caches.ensure(InformerKey(av, kind))
        assert inf.synced.wait(5)
    with pytest.raises(NotFound) as cached:
        proc.cluster.get("v1", "ConfigMap", "nope", "ns")
    with pytest.raises(NotFound) as live:
        kube.get("v1", "ConfigMap", "nope", "ns")
    assert str(cached.value) == str(live.value) == 'configmaps "nope" not found'
    assert cached.value.status == live.value.status
    with pytest.raises(NotFound) as dep:
        proc.cluster.get("apps/v1", "Deployment", "nope", "ns")
    assert str(dep.value) == 'deployments.apps "nope" not found'
    proc.caches.ensure(InformerKey("v1", "Secret", None, MANAGED_SELECTOR)).synced.wait(5)
    with pytest.raises(NotFound) as sec:
        proc.cluster.get("v1", "Secret", "x", "ns")
    assert str(sec.value) == 'secrets "x" not found'


def test_normalized_objects_cost_nothing_at_steady_state(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
              "stringData": {"k": "v"}, "data": {}}
    empty = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e", "namespace": "ns"}, "data": {}}
    server.put_object(cos("c1", 1, phase("a", secret, empty)))
    proc.start()
    wait_for(lambda: settled(get_cos(server, "c1")))
    wait_for(proc.queue.idle)
    time.sleep(0.3)
    assert "data" not in server.get_object("v1", "ConfigMap", "e", "ns")
    server.clear_requests()
    for _ in range(3):
        count = proc.reconcile_count
        proc.queue.add("c1")
        wait_for(lambda c=count: proc.reconcile_count > c and proc.queue.idle())
    time.sleep(0.2)
    assert [r for r in server.requests if r.method != "GET"] == []


def test_a_second_process_sends_one_dry_run_per_object_and_no_write(server: FakeApiServer,
                                                                    kube: KubeCluster) -> None:
    """After a restart (or failover) the memory of our writes is empty: each controlled object costs exactly
    one server-side apply dry run, the answer shows nothing would change, so no write follows; from then on
    the new process is at the zero-request steady state."""
    kube.sleep = lambda s: time.sleep(min(s, 0.05))  # type: ignore[attr-defined]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
              "stringData": {"k": "v"}}
    empty = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e", "namespace": "ns"}, "data": {}}
    server.put_object(cos("c1", 1, phase("a", cm("x"), secret, empty), phase("b", cm("y"), cm("z", k="w"))))
    first = ReconcilerProcess(kube, ProcessConfig(workers=2, system_namespace="sys"), watch_timeout=30)
    first.start()
    try:
        wait_for(lambda: settled(get_cos(server, "c1")))
        # the first process's own steady state: a re-reconcile sends nothing (its memory holds every object)
        wait_for(first.queue.idle)
        time.sleep(0.3)
        server.clear_requests()
        count = first.reconcile_count
        first.queue.add("c1")
        wait_for(lambda: first.reconcile_count > count and first.queue.idle())
        assert [r for r in server.requests if r.method != "GET"] == []
    finally:
        first.stop()
    status = get_cos(server, "c1")["status"]
    server.clear_requests()

    second = ReconcilerProcess(kube, ProcessConfig(workers=2, system_namespace="sys"), watch_timeout=30)
    second.start()
    try:
        wait_for(lambda: second.reconcile_count > 0 and second.queue.idle())
        time.sleep(0.3)
        sent = [(r.verb, r.path.rsplit("/", 1)[1], r.query.get("dryRun")) for r in server.requests
                if r.method != "GET"]
        assert sorted(sent) == [("apply", name, "All") for name in ("e", "s", "x", "y", "z")]
        assert get_cos(server, "c1")["status"] == status   # no status write either
        server.clear_requests()
        count = second.reconcile_count
        second.queue.add("c1")
        wait_for(lambda: second.reconcile_count > count and second.queue.idle())
        time.sleep(0.2)
        assert [r for r in server.requests if r.method != "GET"] == []
    finally:
        second.stop()


def test_a_new_object_in_a_missing_namespace_is_refused_as_a_real_server_does(kubeconfig: str) -> None:
    """NamespaceLifecycle, as kube-apiserver 1.36 answers it (create and server-side apply, dry run or not)."""
    from common.cluster.interface import ApiError

    with FakeApiServer(namespace_lifecycle=True) as server:
        k = KubeCluster.from_kubeconfig(server.write_kubeconfig(kubeconfig + "-ns"))
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "nope"}}
        for call in (lambda: k.create(body), lambda: k.apply(body, field_manager="t"),
                     lambda: k.apply(body, field_manager="t", dry_run=True)):
            with pytest.raises(NotFound) as err:
                call()
            assert isinstance(err.value, ApiError)
            assert err.value.status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                        "message": 'namespaces "nope" not found', "reason": "NotFound",
                                        "details": {"name": "nope", "kind": "namespaces"}, "code": 404}
        k.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nope"}})
        assert k.create(body)["metadata"]["namespace"] == "nope"
        k.close()
