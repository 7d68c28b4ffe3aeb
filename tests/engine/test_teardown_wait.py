"""Issue 16: a torn-down COS lets go only when the server says its objects are gone.

Against the in-memory API server, which answers deletions as kube-apiserver 1.36 does (a Namespace is marked
Terminating until its namespace controller, :meth:`MemCluster.finish_namespace`, has emptied it; a Pod bound
to a node waits for its kubelet; objects with finalizers wait for them). For deletion and for archival, for
every kind whose deletion is not immediate: the COS keeps its finalizer while the object is there, its
Available condition names the object and what holds it, no DELETE is sent twice, and it completes once the
object is gone. A cache that has not yet seen a deletion (:class:`LaggingReads`) never causes a second DELETE.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from common.cluster.interface import NotFound
from common.contract.api import API_VERSION, FINALIZER_TEARDOWN, KIND
from common.contract.objects import Obj
from common.testing.memcluster import MemCluster
from reconciler import engine
from reconciler.engine import reconcile
from tests.engine.helpers import brief, cluster, cm, cos, deployment, get_cos, phase, ready_deployment, run, writes

TEARING_DOWN = "removing revision resources that are not owned by another revision"
CRD_API = "apiextensions.k8s.io/v1"
CLEANUP = "customresourcecleanup.apiextensions.k8s.io"


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def service_account(name: str, ns: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}


def end(mc: MemCluster, name: str, how: str) -> None:
    """Delete the COS (``delete``) or archive it (``archive``)."""
    if how == "delete":
        mc.remove(API_VERSION, KIND, name)
    else:
        mc.edit(API_VERSION, KIND, name, None, lambda o: o["spec"].update({"lifecycleState": "Archived"}))


def released(mc: MemCluster, name: str, how: str) -> bool:
    """Whether the teardown finished: the COS is gone (deleted) or archived without its finalizer."""
    obj = mc.peek(API_VERSION, KIND, name)
    if how == "delete":
        return obj is None
    return obj is not None and FINALIZER_TEARDOWN not in (obj["metadata"].get("finalizers") or []) and \
        brief(mc, name, "Progressing") == ("False", "Archived", "revision is archived")


def deletes(mc: MemCluster) -> list[tuple[str, str]]:
    return [(r.kind, r.name) for r in mc.log if r.verb == "delete"]


# ---- the issue's own case: phase 0 a Namespace, then a ConfigMap and a ServiceAccount, then a Deployment -------

@pytest.mark.parametrize("how", ["delete", "archive"])
def test_a_cos_whose_first_phase_is_a_namespace_is_held_until_the_namespace_is_gone(how: str) -> None:
    mc = cluster()
    mc.put(cos("app-1", 1, phase("namespace", namespace("apps")),
               phase("config", cm("settings", ns="apps"), service_account("runner", "apps")),
               phase("deploy", deployment("web", ns="apps"))))
    run(mc, "app-1")
    mc.set_status("v1", "Namespace", "apps", None, {"phase": "Active"})
    run(mc, "app-1")
    ready_deployment(mc, "web", "apps")
    run(mc, "app-1")
    assert brief(mc, "app-1", "Succeeded")[0] == "True"
    outside = mc.put(cm("left-by-a-user", ns="apps"))   # not ours: the namespace controller removes it
    assert outside["metadata"]["name"] == "left-by-a-user"
    end(mc, "app-1", how)

    mc.reset_requests()
    result = run(mc, "app-1")
    assert deletes(mc) == [("Deployment", "web"), ("ConfigMap", "settings"), ("ServiceAccount", "runner"),
                           ("Namespace", "apps")]
    assert result.error is None and result.requeue_after == 5.0
    ns = mc.peek("v1", "Namespace", "apps")
    assert ns["status"]["phase"] == "Terminating" and ns["spec"]["finalizers"] == ["kubernetes"]
    assert get_cos(mc, "app-1")["metadata"]["finalizers"] == [FINALIZER_TEARDOWN]
    assert brief(mc, "app-1", "Progressing") == ("True", "Retrying", TEARING_DOWN)
    assert brief(mc, "app-1", "Available") == (
        "Unknown", "Reconciling", "Object Namespace.v1 /apps: being deleted, waiting for finalizers: kubernetes")

    mc.reset_requests()
    result = run(mc, "app-1")   # nothing changed: no second DELETE, no status write
    assert mc.writes == 0 and result.requeue_after == 5.0

    assert mc.finish_namespace("apps") == []   # the namespace controller empties it and lets it go
    assert mc.peek("v1", "ConfigMap", "left-by-a-user", "apps") is None
    mc.reset_requests()
    result = run(mc, "app-1")
    assert result.error is None and result.requeue_after is None
    assert deletes(mc) == []
    assert released(mc, "app-1", how)
    assert [e.reason for e in result.events] == ["TeardownComplete"]


# ---- every kind whose deletion is not immediate ---------------------------------------------------------------

def _crd() -> Obj:
    return {"apiVersion": CRD_API, "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _pv() -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "data"},
            "spec": {"capacity": {"storage": "1Mi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                     "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/tmp/data"}}}


def _pvc() -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ns"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": "data",
                     "resources": {"requests": {"storage": "1Mi"}}}}


def _pod() -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "worker", "namespace": "ns"},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "img:1"}]}}


def _finalize(*finalizers: str) -> Callable[[MemCluster, Obj], None]:
    """Put finalizers on the live object, as the API server or a controller does for real."""
    def hold(mc: MemCluster, obj: Obj) -> None:
        meta = obj["metadata"]
        mc.edit(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"),
                lambda o: o["metadata"].update(finalizers=[*(o["metadata"].get("finalizers") or []), *finalizers]))
    return hold


def _unfinalize(finalizer: str) -> Callable[[MemCluster, Obj], None]:
    def go(mc: MemCluster, obj: Obj) -> None:
        meta = obj["metadata"]
        mc.remove_finalizer(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"), finalizer)
    return go


def _kubelet(mc: MemCluster, obj: Obj) -> None:
    mc.remove("v1", "Pod", obj["metadata"]["name"], obj["metadata"]["namespace"], grace_period_seconds=0)


def _nothing(mc: MemCluster, obj: Obj) -> None:
    return None


# (id, the object, make it ready, hold it before the teardown, what the condition says, let it go)
KINDS: list[tuple[str, Obj, Callable[[MemCluster, Obj], None], Callable[[MemCluster, Obj], None], str,
                  Callable[[MemCluster, Obj], None]]] = [
    ("crd", _crd(),
     lambda mc, o: mc.set_status(CRD_API, "CustomResourceDefinition", o["metadata"]["name"], None,
                                 {"conditions": [{"type": "Established", "status": "True"}]}),
     _finalize(CLEANUP),
     f"Object CustomResourceDefinition.{CRD_API} /widgets.example.com: being deleted, waiting for finalizers: "
     f"{CLEANUP}", _unfinalize(CLEANUP)),
    ("pvc", _pvc(),
     lambda mc, o: mc.set_status("v1", "PersistentVolumeClaim", "data", "ns", {"phase": "Bound"}),
     _finalize("kubernetes.io/pvc-protection"),
     "Object PersistentVolumeClaim.v1 ns/data: being deleted, waiting for finalizers: kubernetes.io/pvc-protection",
     _unfinalize("kubernetes.io/pvc-protection")),
    ("pv", _pv(), _nothing, _finalize("kubernetes.io/pv-protection"),
     "Object PersistentVolume.v1 /data: being deleted, waiting for finalizers: kubernetes.io/pv-protection",
     _unfinalize("kubernetes.io/pv-protection")),
    ("foreground", cm("parent"), _nothing, _finalize("foregroundDeletion"),
     "Object ConfigMap.v1 ns/parent: being deleted, waiting for finalizers: foregroundDeletion",
     _unfinalize("foregroundDeletion")),
    ("someone-elses-finalizer", cm("held"), _nothing, _finalize("example.com/hold"),
     "Object ConfigMap.v1 ns/held: being deleted, waiting for finalizers: example.com/hold",
     _unfinalize("example.com/hold")),
    ("pod-with-a-grace-period", _pod(),
     lambda mc, o: mc.set_status("v1", "Pod", "worker", "ns",
                                 {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}),
     _nothing,
     "Object Pod.v1 ns/worker: being deleted, grace period 30s", _kubelet),
]


@pytest.mark.parametrize("how", ["delete", "archive"])
@pytest.mark.parametrize("kind_id,obj,ready,hold,message,let_go", KINDS, ids=[k[0] for k in KINDS])
def test_each_kind_holds_the_cos_until_it_is_gone(how: str, kind_id: str, obj: Obj,
                                                  ready: Callable[[MemCluster, Obj], None],
                                                  hold: Callable[[MemCluster, Obj], None], message: str,
                                                  let_go: Callable[[MemCluster, Obj], None]) -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("first", cm("base")), phase("held", obj)))
    run(mc, "ext-1")
    ready(mc, obj)
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Succeeded")[0] == "True", kind_id
    hold(mc, obj)
    end(mc, "ext-1", how)

    mc.reset_requests()
    result = run(mc, "ext-1")
    assert deletes(mc) == [(obj["kind"], obj["metadata"]["name"])]
    assert result.requeue_after == 5.0 and not released(mc, "ext-1", how)
    assert mc.peek("v1", "ConfigMap", "base", "ns")["metadata"].get("deletionTimestamp") is None  # phase order
    assert brief(mc, "ext-1", "Progressing") == ("True", "Retrying", TEARING_DOWN)
    assert brief(mc, "ext-1", "Available") == ("Unknown", "Reconciling", message)
    mc.reset_requests()
    run(mc, "ext-1")
    assert mc.writes == 0   # still waiting: no second DELETE, nothing new to say

    let_go(mc, obj)
    meta = obj["metadata"]
    assert mc.peek(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")) is None
    mc.reset_requests()
    result = run(mc, "ext-1")
    assert result.error is None and released(mc, "ext-1", how)
    assert deletes(mc) == [("ConfigMap", "base")]


def test_the_condition_names_the_first_held_object_of_the_phase_and_follows_it() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("base", cm("first")), phase("top", cm("a"), cm("b"), cm("c"))))
    run(mc, "ext-1")
    for name in ("b", "c"):
        mc.edit("v1", "ConfigMap", name, "ns", lambda o: o["metadata"].update(finalizers=["x/hold"]))
    end(mc, "ext-1", "archive")
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Available")[2] == \
        "Object ConfigMap.v1 ns/b: being deleted, waiting for finalizers: x/hold"
    mc.remove_finalizer("v1", "ConfigMap", "b", "ns", "x/hold")
    mc.reset_requests()
    run(mc, "ext-1")
    assert writes(mc) == [("patch_status", KIND, "ext-1")]
    assert brief(mc, "ext-1", "Available")[2] == \
        "Object ConfigMap.v1 ns/c: being deleted, waiting for finalizers: x/hold"
    mc.remove_finalizer("v1", "ConfigMap", "c", "ns", "x/hold")
    run(mc, "ext-1")
    assert released(mc, "ext-1", "archive")


# ---- a read that has not seen the deletion yet (a watch-fed cache a moment behind) ---------------------------------

class LaggingReads:
    """The in-memory server seen through a cache that has not yet had the DELETED events of the objects named
    in ``behind``: reading one shows its last state before the deletion (as a watch-fed cache does for a few
    milliseconds), until the test lets the cache catch up. Everything else is the server itself."""

    def __init__(self, mc: MemCluster) -> None:
        self.mc = mc
        self.behind: dict[tuple[str, str, str], Obj] = {}
        self.lagging = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.mc, name)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        key = (kind, namespace or "", name)
        if self.lagging and key in self.behind:
            return dict(self.behind[key])
        return self.mc.get(api_version, kind, name, namespace)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, **kw: Any) -> Obj | None:
        key = (kind, namespace or "", name)
        if self.lagging:
            with contextlib.suppress(NotFound):
                self.behind[key] = self.mc.get(api_version, kind, name, namespace)
        return self.mc.delete(api_version, kind, name, namespace, **kw)


def test_a_deletion_the_reads_do_not_show_yet_is_waited_for_and_never_sent_again() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("base", cm("first")), phase("top", cm("a"), cm("b"))))
    run(mc, "ext-1")
    end(mc, "ext-1", "delete")
    lag = LaggingReads(mc)

    mc.reset_requests()
    result = reconcile(lag, "ext-1")
    assert deletes(mc) == [("ConfigMap", "a"), ("ConfigMap", "b")]
    assert mc.peek("v1", "ConfigMap", "a", "ns") is None   # gone on the server; the reads do not show it yet
    assert result.error is None and result.requeue_after == 5.0
    assert get_cos(mc, "ext-1")["metadata"]["finalizers"] == [FINALIZER_TEARDOWN]   # not gone until a read says so
    assert mc.writes == 2   # and nothing to report: only the server's confirmation is awaited

    mc.reset_requests()
    result = reconcile(lag, "ext-1")
    assert deletes(mc) == [] and mc.writes == 0 and result.requeue_after == 5.0   # never deleted twice

    lag.lagging = False   # the DELETED events arrived
    mc.reset_requests()
    result = reconcile(lag, "ext-1")
    assert deletes(mc) == [("ConfigMap", "first")]
    assert mc.peek(API_VERSION, KIND, "ext-1") is None
    assert len(engine.memory_for(lag).sent) == 0   # every entry went with the read that showed the object gone
