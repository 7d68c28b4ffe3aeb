"""The in-memory API server behaves like the real one where the engine and the producer depend on it."""

from __future__ import annotations

import pytest

from common.cluster.interface import AlreadyExists, BadRequest, Cluster, Conflict, Invalid, NotFound, UnknownKind
from common.contract import labels
from common.contract.objects import Obj
from common.testing.memcluster import MemCluster
from tests.engine.helpers import cluster, cm, secret


def test_is_a_cluster() -> None:
    assert isinstance(MemCluster(), Cluster)


def test_bookkeeping_and_no_op_writes() -> None:
    mc = cluster()
    a = mc.create(cm("a"))
    assert a["metadata"]["uid"] == "00000000-0000-4000-8000-000000000001"
    assert a["metadata"]["generation"] == 1
    assert a["metadata"]["creationTimestamp"] == "2026-03-01T12:00:00Z"
    rv = a["metadata"]["resourceVersion"]
    same = mc.apply(cm("a"), field_manager="m")
    assert same["metadata"]["resourceVersion"] == rv           # nothing changed: no new resourceVersion
    changed = mc.apply(cm("a", k="2"), field_manager="m")
    assert int(changed["metadata"]["resourceVersion"]) > int(rv)
    assert changed["metadata"]["generation"] == 2
    labelled = mc.merge_patch("v1", "ConfigMap", "a", "ns", {"metadata": {"labels": {"x": "y"}}})
    assert labelled["metadata"]["generation"] == 2              # metadata changes keep the generation
    with pytest.raises(AlreadyExists, match='^configmaps "a" already exists$'):
        mc.create(cm("a"))
    with pytest.raises(NotFound, match='^deployments.apps "d" not found$'):
        mc.get("apps/v1", "Deployment", "d", "ns")
    assert dict(mc.requests) == {"create": 2, "apply": 2, "patch": 1, "get": 1}
    assert mc.writes == 5


def test_optimistic_concurrency() -> None:
    mc = cluster()
    a = mc.create(cm("a"))
    mc.merge_patch("v1", "ConfigMap", "a", "ns", {"data": {"k": "2"}})
    with pytest.raises(Conflict, match="the object has been modified"):
        mc.update(a)
    with pytest.raises(Conflict):
        mc.merge_patch("v1", "ConfigMap", "a", "ns", {"data": {"k": "3"}},
                       resource_version=a["metadata"]["resourceVersion"])
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: nope"):
        mc.delete("v1", "ConfigMap", "a", "ns", uid="nope")
    with pytest.raises(Conflict, match="Precondition failed: ResourceVersion in precondition"):
        mc.delete("v1", "ConfigMap", "a", "ns", resource_version=a["metadata"]["resourceVersion"])
    assert mc.peek("v1", "ConfigMap", "a", "ns") is not None


def test_apply_field_ownership() -> None:
    mc = cluster()
    mine = cm("a", x="1", y="2")
    mc.apply(mine, field_manager="me")
    mc.edit("v1", "ConfigMap", "a", "ns", lambda o: o["metadata"].setdefault("labels", {}).update({"team": "b"}),
            manager="user")
    mc.edit("v1", "ConfigMap", "a", "ns", lambda o: o["data"].update({"x": "hijacked"}), manager="user")
    # not forced: the changed field is a conflict with the other manager
    with pytest.raises(Conflict, match='^Apply failed with 1 conflict: conflict with "user": .data.x$'):
        mc.apply(mine, field_manager="me", force=False)
    # forced: we take data.x back; user's label survives; a field we stop declaring is removed
    out = mc.apply(cm("a", x="1"), field_manager="me")
    assert out["data"] == {"x": "1"}
    assert out["metadata"]["labels"] == {"team": "b"}
    assert mc.managers("v1", "ConfigMap", "a", "ns") == {"me": {"data.x"}, "user": {"metadata.labels.team"}}


def test_field_owned_by_another_manager_survives_when_we_stop_declaring_it() -> None:
    mc = cluster()
    mc.apply(cm("a", x="1", y="2"), field_manager="me")
    mc.apply(cm("a", y="2"), field_manager="other")   # shared ownership of data.y
    out = mc.apply(cm("a", x="1"), field_manager="me")
    assert out["data"] == {"x": "1", "y": "2"}


def test_status_subresource() -> None:
    mc = cluster()
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
         "spec": {"replicas": 1}, "status": {"replicas": 9}}
    created = mc.create(d)
    assert "status" not in created
    with_status = mc.update_status({**created, "status": {"replicas": 1}})
    assert with_status["status"] == {"replicas": 1}
    assert with_status["metadata"]["generation"] == 1
    out = mc.apply({**d, "status": {"replicas": 5}}, field_manager="me")
    assert out["status"] == {"replicas": 1}
    with pytest.raises(NotFound):
        mc.update_status({**cm("c"), "status": {}})


def test_immutable_secret() -> None:
    mc = cluster()
    mc.put(secret("s", {"k": b"1"}, ns="ns"))
    with pytest.raises(Invalid) as err:
        mc.merge_patch("v1", "Secret", "s", "ns", {"data": {"k": "Mg=="}})
    assert str(err.value) == 'Secret "s" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    with pytest.raises(Invalid, match="immutable: Forbidden"):
        mc.merge_patch("v1", "Secret", "s", "ns", {"immutable": False})
    mc.merge_patch("v1", "Secret", "s", "ns", {"metadata": {"labels": {"ok": "yes"}}})   # metadata may change


def test_string_data_is_folded_into_data() -> None:
    mc = cluster()
    s = mc.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
                   "stringData": {"a": "hi"}})
    assert s["data"] == {"a": "aGk="} and "stringData" not in s


def test_deletion_waits_for_finalizers() -> None:
    mc = cluster()
    mc.create({**cm("a"), "metadata": {"name": "a", "namespace": "ns", "finalizers": ["x/y"]}})
    mc.delete("v1", "ConfigMap", "a", "ns")
    a = mc.peek("v1", "ConfigMap", "a", "ns")
    assert a["metadata"]["deletionTimestamp"] == "2026-03-01T12:00:00Z"
    with pytest.raises(AlreadyExists):
        mc.create(cm("a"))
    mc.remove_finalizer("v1", "ConfigMap", "a", "ns", "x/y")
    assert mc.peek("v1", "ConfigMap", "a", "ns") is None


def _owned(name: str, *owners: dict) -> dict:
    o = cm(name)
    o["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": w["metadata"]["name"], "uid": w["metadata"]["uid"],
         "controller": i == 0} for i, w in enumerate(owners)]
    return o


def test_garbage_collection() -> None:
    mc = cluster()
    owner = mc.create(cm("owner"))
    other = mc.create(cm("other"))
    mc.create(_owned("only-child", owner))
    mc.create(_owned("shared-child", owner, other))
    grandchild_parent = mc.create(_owned("parent", owner))
    mc.create(_owned("grandchild", grandchild_parent))
    held = _owned("held", owner)
    held["metadata"]["finalizers"] = ["x/y"]
    mc.create(held)
    mc.delete("v1", "ConfigMap", "owner", "ns")
    assert mc.peek("v1", "ConfigMap", "only-child", "ns") is None
    assert mc.peek("v1", "ConfigMap", "grandchild", "ns") is None
    shared = mc.peek("v1", "ConfigMap", "shared-child", "ns")
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["other"]
    assert mc.peek("v1", "ConfigMap", "held", "ns")["metadata"]["deletionTimestamp"]


def test_orphan_propagation() -> None:
    mc = cluster()
    owner = mc.create(cm("owner"))
    mc.create(_owned("child", owner))
    mc.delete("v1", "ConfigMap", "owner", "ns", propagation_policy="Orphan")
    child = mc.peek("v1", "ConfigMap", "child", "ns")
    assert child is not None and "ownerReferences" not in child["metadata"]


def test_kinds_scopes_and_crds() -> None:
    mc = cluster()
    assert mc.is_namespaced("v1", "ConfigMap") and not mc.is_namespaced("v1", "Namespace")
    with pytest.raises(UnknownKind, match='^no matches for kind "Widget" in version "example.com/v1"$'):
        mc.is_namespaced("example.com/v1", "Widget")
    with pytest.raises(BadRequest):
        mc.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "no-namespace"}})
    crd = mc.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                     "metadata": {"name": "widgets.example.com"},
                     "spec": {"group": "example.com", "scope": "Cluster",
                              "names": {"kind": "Widget", "plural": "widgets"},
                              "versions": [{"name": "v1", "served": True, "storage": True}]}})
    assert not mc.is_namespaced("example.com/v1", "Widget")
    mc.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    mc.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd["metadata"]["name"])
    with pytest.raises(UnknownKind):
        mc.get("example.com/v1", "Widget", "w")
    mc.register_kind("example.com/v2", "Gizmo", namespaced=True)
    mc.create({"apiVersion": "example.com/v2", "kind": "Gizmo", "metadata": {"name": "g", "namespace": "ns"}})


def test_list_with_selectors_and_namespaces() -> None:
    mc = cluster()
    for name, ns, lbl in (("a", "x", {"app": "web", "tier": "1"}), ("b", "y", {"app": "db"}), ("c", "x", {})):
        o = cm(name, ns)
        o["metadata"]["labels"] = lbl
        mc.create(o)
    def names(objs):
        return [o["metadata"]["name"] for o in objs]
    assert names(mc.list("v1", "ConfigMap")) == ["a", "c", "b"]
    assert names(mc.list("v1", "ConfigMap", "x")) == ["a", "c"]
    assert names(mc.list("v1", "ConfigMap", label_selector="app in (web,db),!tier")) == ["b"]
    assert names(mc.list("v1", "ConfigMap", label_selector="app!=web")) == ["c", "b"]
    assert names(mc.list("v1", "ConfigMap", limit=2)) == ["a", "c"]
    assert names(mc.list("v1", "ConfigMap", label_selector="app!=web", limit=1)) == ["c"]
    with pytest.raises(BadRequest):
        mc.list("v1", "ConfigMap", label_selector="a in (")


def test_fault_injection_and_request_log() -> None:
    mc = cluster()
    mc.fail("create", Conflict("boom"), kind="ConfigMap", times=2)
    for _ in range(2):
        with pytest.raises(Conflict):
            mc.create(cm("a"))
    mc.create(cm("a"))
    assert [(r.verb, r.name) for r in mc.write_log()] == [("create", "a")] * 3
    mc.create(cm("b"), dry_run=True)
    assert mc.peek("v1", "ConfigMap", "b", "ns") is None
    assert mc.requests["create:dry-run"] == 1 and mc.writes == 3


def test_listeners_see_changes() -> None:
    mc = cluster()
    seen = []
    mc.listeners.append(lambda ev, obj: seen.append((ev, obj["metadata"]["name"])))
    mc.create(cm("a"))
    mc.merge_patch("v1", "ConfigMap", "a", "ns", {"data": {"k": "2"}})
    mc.delete("v1", "ConfigMap", "a", "ns")
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


# ---- common/contract/labels.py --------------------------------------------------------------------------------------

@pytest.mark.parametrize("selector,lbls,expected", [
    ("", {}, True),
    ("a=b", {"a": "b"}, True),
    ("a==b", {"a": "c"}, False),
    ("a!=b", {}, True),
    ("a in (x, y)", {"a": "y"}, True),
    ("a notin (x,y)", {"a": "z"}, True),
    ("a notin (x,y)", {}, True),
    ("a", {"a": ""}, True),
    ("!a", {"a": ""}, False),
    ("a=b,c", {"a": "b"}, False),
    ("olm.operatorframework.io/owner-name=ext", {"olm.operatorframework.io/owner-name": "ext"}, True),
])
def test_selector_strings(selector, lbls, expected) -> None:
    assert labels.matches(selector, lbls) is expected


@pytest.mark.parametrize("bad", ["a in (", "a in ()", "=b", "a in x", "a=b=c", ",", "a b"])
def test_bad_selector_strings(bad) -> None:
    with pytest.raises(labels.SelectorError):
        labels.parse(bad)


def test_label_selector_objects() -> None:
    sel = {"matchLabels": {"app": "web"},
           "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]},
                                {"key": "env", "operator": "Exists"}]}
    assert labels.matches(sel, {"app": "web", "env": "prod"})
    assert not labels.matches(sel, {"app": "web", "env": "prod", "tier": "db"})
    assert not labels.matches(sel, {"app": "web"})
    assert labels.to_string(sel) == "app=web,tier notin (db),env"
    assert labels.matches(labels.to_string(sel), {"app": "web", "env": "x"})
    with pytest.raises(labels.SelectorError, match=r'operator: Invalid value: "Near"'):
        labels.from_label_selector({"matchExpressions": [{"key": "a", "operator": "Near"}]})
    with pytest.raises(labels.SelectorError, match="must be specified when `operator` is 'In' or 'NotIn'"):
        labels.from_label_selector({"matchExpressions": [{"key": "a", "operator": "In"}]})
    with pytest.raises(labels.SelectorError, match="may not be specified when `operator` is 'Exists'"):
        labels.from_label_selector({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})


# ---- deletion as kube-apiserver 1.36 answers and announces it (issue 16) ---------------------------------------------

def _events(mc: MemCluster) -> list[tuple[str, str, str, dict]]:
    seen: list[tuple[str, str, str, dict]] = []

    def record(ev: str, obj: Obj) -> None:
        m = obj["metadata"]
        seen.append((ev, obj["kind"], m["name"], {k: m[k] for k in ("resourceVersion", "deletionTimestamp",
                                                                   "deletionGracePeriodSeconds", "finalizers")
                                                 if k in m}))
    mc.listeners.append(record)
    return seen


def test_a_namespace_is_terminating_until_its_controller_has_emptied_it() -> None:
    mc = cluster()
    ns = mc.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}, field_manager="me")
    assert ns["spec"] == {"finalizers": ["kubernetes"]}   # the server's, owned by no manager
    assert mc.managers("v1", "Namespace", "apps") == {}
    mc.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps", "labels": {"a": "b"}}},
             field_manager="me")
    mc.merge_patch("v1", "Namespace", "apps", None, {"spec": {"finalizers": []}})   # only the controller may
    assert mc.peek("v1", "Namespace", "apps")["spec"] == {"finalizers": ["kubernetes"]}
    mc.create(cm("mine", ns="apps"))
    mc.put({**cm("held", ns="apps"), "metadata": {"name": "held", "namespace": "apps", "finalizers": ["x/hold"]}})
    seen = _events(mc)

    answer = mc.delete("v1", "Namespace", "apps")
    assert answer is not None
    assert answer["status"] == {"phase": "Terminating"} and answer["spec"] == {"finalizers": ["kubernetes"]}
    assert answer["metadata"]["deletionTimestamp"] == "2026-03-01T12:00:00Z"
    assert "finalizers" not in answer["metadata"] and "deletionGracePeriodSeconds" not in answer["metadata"]
    assert mc.delete("v1", "Namespace", "apps") == answer   # again: nothing changes
    assert mc.finish_namespace("apps") == ["configmaps held"]   # held by its finalizer
    assert mc.peek("v1", "ConfigMap", "mine", "apps") is None
    mc.remove_finalizer("v1", "ConfigMap", "held", "apps", "x/hold")
    assert mc.peek("v1", "Namespace", "apps") is not None
    assert mc.finish_namespace("apps") == []
    assert mc.peek("v1", "Namespace", "apps") is None
    rv = int(answer["metadata"]["resourceVersion"])
    assert [(e, k, n) for e, k, n, _ in seen] == [
        ("MODIFIED", "Namespace", "apps"), ("DELETED", "ConfigMap", "mine"), ("MODIFIED", "ConfigMap", "held"),
        ("DELETED", "ConfigMap", "held"), ("DELETED", "Namespace", "apps")]
    assert int(seen[-1][3]["resourceVersion"]) > rv   # DELETED: the last stored state at a newer version


def test_an_object_with_finalizers_is_marked_then_goes_with_the_last_one() -> None:
    mc = cluster()
    mc.put({**cm("held"), "metadata": {"name": "held", "namespace": "ns", "finalizers": ["x/hold"]}})
    seen = _events(mc)
    answer = mc.delete("v1", "ConfigMap", "held", "ns")
    assert answer is not None and answer["metadata"]["finalizers"] == ["x/hold"]
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 0 and answer["metadata"]["deletionTimestamp"]
    marked_rv = answer["metadata"]["resourceVersion"]
    out = mc.merge_patch("v1", "ConfigMap", "held", "ns", {"metadata": {"finalizers": None}})
    # answered at the version it had; only DELETED follows, carrying the last stored state at a newer version
    assert out["metadata"]["resourceVersion"] == marked_rv and "finalizers" not in out["metadata"]
    assert mc.peek("v1", "ConfigMap", "held", "ns") is None
    assert [(e, m.get("finalizers")) for e, _, _, m in seen] == [("MODIFIED", ["x/hold"]), ("DELETED", ["x/hold"])]
    assert int(seen[-1][3]["resourceVersion"]) > int(marked_rv)
    mc.create(cm("a"))
    assert mc.delete("v1", "ConfigMap", "a", "ns") is None   # gone at once: the server answers a Status


def test_a_pod_bound_to_a_node_waits_for_its_kubelet() -> None:
    mc = cluster()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    mc.create(pod)
    seen = _events(mc)
    answer = mc.delete("v1", "Pod", "p", "ns")   # never scheduled: at once, answered with its last state
    assert answer is not None and answer["metadata"]["deletionGracePeriodSeconds"] == 0
    assert mc.peek("v1", "Pod", "p", "ns") is None
    assert [e for e, *_ in seen] == ["MODIFIED", "DELETED"]
    mc.create({**pod, "spec": {**pod["spec"], "nodeName": "n1"}})
    answer = mc.delete("v1", "Pod", "p", "ns")
    assert answer is not None and answer["metadata"]["deletionGracePeriodSeconds"] == 30
    assert answer["metadata"]["deletionTimestamp"] == "2026-03-01T12:00:30Z"
    assert mc.delete("v1", "Pod", "p", "ns") == answer   # a pending deletion is only ever shortened
    assert mc.peek("v1", "Pod", "p", "ns") is not None
    mc.remove("v1", "Pod", "p", "ns", grace_period_seconds=0)   # its kubelet, once the containers stopped
    assert mc.peek("v1", "Pod", "p", "ns") is None
