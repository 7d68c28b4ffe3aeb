"""Issue 16 through the process and the fake API server: a torn-down COS lets go only when the watch says its
objects are gone.

The fake API server answers and announces deletions as kube-apiserver 1.36 does (checked against one): a
Namespace DELETE is answered 200 with the Namespace marked Terminating, its ``spec.finalizers`` holding it
until the namespace controller (``finish_namespace``) has emptied it; a Pod bound to a node waits for its
kubelet. The teardown's 5 s requeue is set to an hour here, so completion can only come from a watch event.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from common.cluster.kube import KubeCluster
from common.contract.conditions import settled
from reconciler import engine
from reconciler.process import ProcessConfig, ReconcilerProcess
from tests.engine.helpers import cm, cos, deployment, phase
from tests.process.test_process import condition, get_cos, wait_for
from tests.support.fake_apiserver import FakeApiServer

COS_API = "olm.operatorframework.io/v1"
DEL = {"kind": "DeleteOptions", "apiVersion": "v1"}


@pytest.fixture
def proc(kube: KubeCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[ReconcilerProcess]:
    monkeypatch.setattr(engine, "TEARDOWN_REQUEUE", 3600.0)   # no poke: only the watch can finish a teardown
    kube.sleep = lambda s: time.sleep(min(s, 0.05))  # type: ignore[attr-defined]
    p = ReconcilerProcess(kube, ProcessConfig(workers=2, system_namespace="sys"), watch_timeout=30)
    yield p
    p.stop()


def raw(kube: KubeCluster, method: str, path: str, body: Any = None,
        content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    """One request; (HTTP code, decoded body) exactly as the server answered."""
    resp = kube._open(method, path, None, body, content_type, 10)
    return resp.status, json.loads(resp.read())


def events(kube: KubeCluster, api_version: str, kind: str, since: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every watch event of a kind after ``since`` (the watch ends after a second)."""
    return [(ev.type, ev.obj["metadata"]["name"], ev.obj) for ev in
            kube.watch(api_version, kind, resource_version=since, timeout_seconds=1)]


def rv(kube: KubeCluster, api_version: str, kind: str) -> str:
    return kube.list_with_version(api_version, kind)[1]


def deletes(server: FakeApiServer) -> list[str]:
    return [r.path.rsplit("/", 1)[1] for r in server.requests if r.method == "DELETE"]


# ---- the fake API server answers as kube-apiserver 1.36 ---------------------------------------------------------

def test_a_namespace_delete_is_answered_with_the_namespace_terminating(server: FakeApiServer,
                                                                       kube: KubeCluster) -> None:
    code, ns = raw(kube, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": "apps"}})
    assert code == 201 and ns["spec"] == {"finalizers": ["kubernetes"]}
    server.put_object({**cm("held", ns="apps"), "metadata": {"name": "held", "namespace": "apps",
                                                              "finalizers": ["x/hold"]}})
    since = rv(kube, "v1", "Namespace")
    code, answer = raw(kube, "DELETE", "/api/v1/namespaces/apps", DEL)
    assert code == 200 and answer["kind"] == "Namespace"
    assert answer["status"] == {"phase": "Terminating"} and answer["spec"] == {"finalizers": ["kubernetes"]}
    assert answer["metadata"]["deletionTimestamp"] and "finalizers" not in answer["metadata"]
    assert raw(kube, "DELETE", "/api/v1/namespaces/apps", DEL) == (200, answer)   # again: the same
    assert server.finish_namespace("apps") == ["configmaps held"]
    assert server.get_object("v1", "Namespace", "apps") is not None
    held = server.get_object("v1", "ConfigMap", "held", "apps")
    held["metadata"]["finalizers"] = []
    server.put_object(held)
    assert server.finish_namespace("apps") == []
    seen = events(kube, "v1", "Namespace", since)
    assert [(t, n) for t, n, _ in seen] == [("MODIFIED", "apps"), ("DELETED", "apps")]
    gone = seen[-1][2]   # the last stored state (finalizer still listed) at a newer resourceVersion
    assert gone["spec"] == {"finalizers": ["kubernetes"]} and gone["status"] == {"phase": "Terminating"}
    assert int(gone["metadata"]["resourceVersion"]) > int(answer["metadata"]["resourceVersion"])


def test_finalizers_pods_and_plain_objects_are_answered_as_kube_apiserver_does(server: FakeApiServer,
                                                                               kube: KubeCluster) -> None:
    server.put_object({**cm("held"), "metadata": {"name": "held", "namespace": "ns", "finalizers": ["x/hold"]}})
    server.put_object(cm("plain"))
    since = rv(kube, "v1", "ConfigMap")
    code, marked = raw(kube, "DELETE", "/api/v1/namespaces/ns/configmaps/held", DEL)
    assert code == 200 and marked["metadata"]["finalizers"] == ["x/hold"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0 and marked["metadata"]["deletionTimestamp"]
    code, released = raw(kube, "PATCH", "/api/v1/namespaces/ns/configmaps/held",
                         {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    assert code == 200 and "finalizers" not in released["metadata"]
    assert released["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]
    code, status = raw(kube, "DELETE", "/api/v1/namespaces/ns/configmaps/plain", DEL)
    assert (code, status["kind"], status["status"]) == (200, "Status", "Success")
    assert status["details"] == {"name": "plain", "kind": "configmaps", "uid": status["details"]["uid"]}
    seen = events(kube, "v1", "ConfigMap", since)
    assert [(t, n, o["metadata"].get("finalizers")) for t, n, o in seen] == [
        ("MODIFIED", "held", ["x/hold"]), ("DELETED", "held", ["x/hold"]), ("DELETED", "plain", None)]

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}}
    server.put_object(pod)
    code, graceful = raw(kube, "DELETE", "/api/v1/namespaces/ns/pods/p", DEL)
    assert code == 200 and graceful["metadata"]["deletionGracePeriodSeconds"] == 30
    assert server.get_object("v1", "Pod", "p", "ns") is not None   # its kubelet has not confirmed
    code, last = raw(kube, "DELETE", "/api/v1/namespaces/ns/pods/p", dict(DEL, gracePeriodSeconds=0))
    assert code == 200 and last["kind"] == "Pod" and last["metadata"]["deletionGracePeriodSeconds"] == 0
    assert server.get_object("v1", "Pod", "p", "ns") is None


def test_the_adapter_passes_the_answer_on_and_never_calls_a_marked_namespace_gone(server: FakeApiServer,
                                                                                   kube: KubeCluster) -> None:
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    answer = kube.delete("v1", "Namespace", "apps")
    assert answer is not None and answer["status"] == {"phase": "Terminating"}
    kube.create(cm("plain"))
    assert kube.delete("v1", "ConfigMap", "plain", "ns") is None   # a Status


# ---- the reconciler ------------------------------------------------------------------------------------------

def _issue_cos() -> dict[str, Any]:
    """The issue's COS: phase 0 a Namespace, then a ConfigMap and a ServiceAccount in it, then a Deployment."""
    runner = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner", "namespace": "apps"}}
    return cos("app-1", 1, phase("namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}),
               phase("config", cm("settings", ns="apps"), runner),
               phase("deploy", deployment("web", ns="apps", replicas=0)))


def _roll_out(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    server.put_object(_issue_cos())
    proc.start()
    wait_for(lambda: server.get_object("v1", "Namespace", "apps") is not None)
    server.put_object({**server.get_object("v1", "Namespace", "apps"), "status": {"phase": "Active"}})
    wait_for(lambda: server.get_object("apps/v1", "Deployment", "web", "apps") is not None)
    web = server.get_object("apps/v1", "Deployment", "web", "apps")
    server.put_object({**web, "status": {"observedGeneration": web["metadata"]["generation"],
                                         "conditions": [{"type": "Available", "status": "True"}]}})
    wait_for(lambda: settled(get_cos(server, "app-1")))
    wait_for(proc.queue.idle)


NS_WAIT = ("Unknown", "Reconciling", "Object Namespace.v1 /apps: being deleted, waiting for finalizers: kubernetes")


def _brief(server: FakeApiServer, ctype: str) -> tuple[str, str, str]:
    c = condition(get_cos(server, "app-1"), ctype)
    return c.get("status", ""), c.get("reason", ""), c.get("message", "")


@pytest.mark.parametrize("how", ["delete", "archive"])
def test_the_cos_is_held_until_its_namespace_is_gone_and_the_watch_finishes_it(server: FakeApiServer,
                                                                               proc: ReconcilerProcess,
                                                                               how: str) -> None:
    _roll_out(server, proc)
    server.put_object(cm("left-by-a-user", ns="apps"))
    server.clear_requests()
    if how == "delete":
        server.delete_object(COS_API, "ClusterObjectSet", "app-1")
    else:
        live = get_cos(server, "app-1")
        server.put_object({**live, "spec": {**live["spec"], "lifecycleState": "Archived"}})
    wait_for(lambda: _brief(server, "Available") == NS_WAIT)
    assert (server.get_object("v1", "Namespace", "apps") or {}).get("status") == {"phase": "Terminating"}
    assert get_cos(server, "app-1")["metadata"]["finalizers"] == ["olm.operatorframework.io/teardown"]
    # more reconciles while it waits (the namespace controller's updates would cause them): nothing is sent
    sent = len(server.requests)
    for _ in range(2):
        count = proc.reconcile_count
        proc.queue.add("app-1")
        wait_for(lambda c=count: proc.reconcile_count > c and proc.queue.idle())
    assert [r for r in server.requests[sent:] if r.method != "GET"] == []
    assert get_cos(server, "app-1")["metadata"]["finalizers"] == ["olm.operatorframework.io/teardown"]

    assert server.finish_namespace("apps") == []   # the namespace controller empties it: DELETED
    if how == "delete":
        wait_for(lambda: server.get_object(COS_API, "ClusterObjectSet", "app-1") is None)
    else:
        wait_for(lambda: _brief(server, "Progressing") == ("False", "Archived", "revision is archived"))
        assert "finalizers" not in get_cos(server, "app-1")["metadata"]
    assert sorted(deletes(server)) == ["apps", "runner", "settings", "web"]   # each once, in phase order:
    assert deletes(server)[0] == "web" and deletes(server)[-1] == "apps"
    assert [r for r in server.requests if r.status in (404, 409)] == []


def test_a_pod_in_its_grace_period_holds_the_archived_cos_until_its_kubelet_deletes_it(
        server: FakeApiServer, proc: ReconcilerProcess) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "worker", "namespace": "ns"},
           "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "img:1"}]}}
    server.put_object(cos("app-1", 1, phase("base", cm("base")), phase("work", pod)))
    proc.start()
    wait_for(lambda: server.get_object("v1", "Pod", "worker", "ns") is not None)
    server.put_object({**server.get_object("v1", "Pod", "worker", "ns"),
                       "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    wait_for(lambda: settled(get_cos(server, "app-1")))
    wait_for(proc.queue.idle)
    server.clear_requests()
    live = get_cos(server, "app-1")
    server.put_object({**live, "spec": {**live["spec"], "lifecycleState": "Archived"}})
    wait_for(lambda: _brief(server, "Available") == (
        "Unknown", "Reconciling", "Object Pod.v1 ns/worker: being deleted, grace period 30s"))
    assert server.get_object("v1", "ConfigMap", "base", "ns")["metadata"].get("deletionTimestamp") is None
    server.delete_object("v1", "Pod", "worker", "ns", grace_period_seconds=0)   # its kubelet
    wait_for(lambda: _brief(server, "Progressing") == ("False", "Archived", "revision is archived"))
    assert deletes(server) == ["worker", "base"]
    assert [r for r in server.requests if r.status in (404, 409)] == []
