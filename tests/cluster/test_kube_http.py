"""common.cluster.kube.KubeCluster against the fake API server: the exact HTTP requests, and the retry policy."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from common.cluster.interface import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    InternalError,
    Invalid,
    NotFound,
    ServiceUnavailable,
    UnknownKind,
)
from common.cluster.kube import KubeCluster
from tests.support.fake_apiserver import FakeApiServer, status_body

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", "namespace": "ns1"},
      "data": {"a": "1"}}
MANAGER = "olm.operatorframework.io"


def crd(group: str = "example.com", kind: str = "Widget", plural: str = "widgets",
        scope: str = "Namespaced") -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope,
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}}


def writes(server: FakeApiServer) -> list:
    return [r for r in server.requests if r.method != "GET"]


def test_create_posts_json_to_the_namespaced_collection(kube: KubeCluster, server: FakeApiServer) -> None:
    out = kube.create(CM)
    (req,) = writes(server)
    assert (req.method, req.path, req.query, req.content_type) == (
        "POST", "/api/v1/namespaces/ns1/configmaps", {}, "application/json")
    assert req.body == CM
    assert out["metadata"]["uid"] and out["metadata"]["resourceVersion"] and out["data"] == {"a": "1"}


def test_create_dry_run_sends_dry_run_all_and_stores_nothing(kube: KubeCluster, server: FakeApiServer) -> None:
    kube.create(CM, dry_run=True)
    (req,) = writes(server)
    assert req.query == {"dryRun": "All"}
    assert server.get_object("v1", "ConfigMap", "cm1", "ns1") is None


def test_cluster_scoped_and_grouped_paths_come_from_discovery(kube: KubeCluster, server: FakeApiServer) -> None:
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n1"}})
    kube.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "r1", "namespace": "ignored"}, "rules": []})
    kube.get("rbac.authorization.k8s.io/v1", "ClusterRole", "r1")
    kube.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"}})
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", "/api/v1"),
        ("POST", "/api/v1/namespaces"),
        ("GET", "/apis/rbac.authorization.k8s.io/v1"),
        ("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/r1"),
        ("GET", "/apis/apps/v1"),
        ("POST", "/apis/apps/v1/namespaces/x/deployments"),
    ]
    assert kube.is_namespaced("apps/v1", "Deployment") is True
    assert kube.is_namespaced("v1", "Namespace") is False
    # what RBAC rules name a kind by (the permission preflight), from the same discovery: no further request
    assert (kube.resource_name("apps/v1", "Deployment"), kube.resource_name("v1", "Namespace"),
            kube.resource_name("rbac.authorization.k8s.io/v1", "ClusterRole")) == (
        "deployments", "namespaces", "clusterroles")
    assert len(server.requests) == 7


def test_threads_needing_a_group_version_at_once_send_one_discovery(kube: KubeCluster,
                                                                    server: FakeApiServer) -> None:
    """A phase's first writes (8 in flight) all need the kind's discovery: one asks, the others wait for it."""
    server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}})
    start = threading.Barrier(8)

    def create(i: int) -> None:
        start.wait()
        kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "ns1"}})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(8)))
    assert sorted(r.verb for r in server.requests) == ["create"] * 8 + ["discovery"]


def test_namespaced_kind_without_namespace_is_a_clear_error(kube: KubeCluster, server: FakeApiServer) -> None:
    # an ApiError, so the engine reports it in the COS's conditions like any refused request
    with pytest.raises(BadRequest, match=r"^ConfigMap cm1: metadata.namespace is required \(the kind is namespaced\)$"):
        kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}})
    with pytest.raises(BadRequest, match="^ConfigMap: metadata.name is required$"):
        kube.get("v1", "ConfigMap", "", "ns")
    assert [r.verb for r in server.requests] == ["discovery"]


def test_apply_is_a_patch_with_the_apply_content_type_field_manager_and_force(
        kube: KubeCluster, server: FakeApiServer) -> None:
    kube.apply(CM, field_manager=MANAGER)
    kube.apply(CM, field_manager=MANAGER, force=False, dry_run=True)
    a, b = writes(server)
    assert (a.method, a.path, a.content_type) == ("PATCH", "/api/v1/namespaces/ns1/configmaps/cm1",
                                                  "application/apply-patch+yaml")
    assert a.query == {"fieldManager": MANAGER, "force": "true"}
    assert a.body == CM
    assert b.query == {"fieldManager": MANAGER, "force": "false", "dryRun": "All"}


def test_apply_releases_fields_no_longer_declared_and_keeps_others(kube: KubeCluster, server: FakeApiServer) -> None:
    kube.apply({**CM, "data": {"a": "1", "b": "2"}}, field_manager=MANAGER)
    kube.merge_patch("v1", "ConfigMap", "cm1", "ns1", {"data": {"user": "x"}})
    out = kube.apply(CM, field_manager=MANAGER)
    assert out["data"] == {"a": "1", "user": "x"}


def test_merge_patch_carries_the_resource_version_precondition(kube: KubeCluster, server: FakeApiServer) -> None:
    live = kube.create(CM)
    kube.merge_patch("v1", "ConfigMap", "cm1", "ns1", {"data": {"b": "2"}},
                     resource_version=live["metadata"]["resourceVersion"])
    req = writes(server)[-1]
    assert (req.method, req.content_type) == ("PATCH", "application/merge-patch+json")
    assert req.body == {"data": {"b": "2"}, "metadata": {"resourceVersion": live["metadata"]["resourceVersion"]}}
    with pytest.raises(Conflict) as e:
        kube.merge_patch("v1", "ConfigMap", "cm1", "ns1", {"data": {"c": "3"}},
                         resource_version=live["metadata"]["resourceVersion"])
    assert str(e.value) == ('Operation cannot be fulfilled on configmaps "cm1": the object has been modified; '
                            "please apply your changes to the latest version and try again")
    assert e.value.status["reason"] == "Conflict"


def test_update_and_update_status_put_to_the_object_and_its_status(kube: KubeCluster, server: FakeApiServer) -> None:
    cos = kube.create({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
                       "metadata": {"name": "c1"}, "spec": {"revision": 1}})
    cos["status"] = {"conditions": [{"type": "Available", "status": "True"}]}
    out = kube.update_status(cos)
    req = writes(server)[-1]
    assert (req.method, req.path) == ("PUT", "/apis/olm.operatorframework.io/v1/clusterobjectsets/c1/status")
    assert out["status"]["conditions"][0]["type"] == "Available"
    out["metadata"]["finalizers"] = ["olm.operatorframework.io/teardown"]
    kube.update(out)
    req = writes(server)[-1]
    assert (req.method, req.path) == ("PUT", "/apis/olm.operatorframework.io/v1/clusterobjectsets/c1")
    with pytest.raises(Conflict):
        kube.update(cos)  # stale resourceVersion


def test_merge_patch_of_the_status_subresource_sends_only_the_patch(kube: KubeCluster, server: FakeApiServer) -> None:
    cos = kube.create({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
                       "metadata": {"name": "c1"}, "spec": {"revision": 1}})
    rv = cos["metadata"]["resourceVersion"]
    out = kube.merge_patch("olm.operatorframework.io/v1", "ClusterObjectSet", "c1", None,
                           {"status": {"conditions": [{"type": "Available", "status": "True"}]},
                            "spec": {"revision": 2}}, resource_version=rv, subresource="status")
    req = writes(server)[-1]
    assert (req.method, req.path, req.content_type) == (
        "PATCH", "/apis/olm.operatorframework.io/v1/clusterobjectsets/c1/status", "application/merge-patch+json")
    assert req.body == {"status": {"conditions": [{"type": "Available", "status": "True"}]},
                        "spec": {"revision": 2}, "metadata": {"resourceVersion": rv}}
    assert out["status"] == {"conditions": [{"type": "Available", "status": "True"}]}
    assert out["spec"] == {"revision": 1}   # the status subresource changes status only
    with pytest.raises(Conflict):            # the COS read is stale now
        kube.merge_patch("olm.operatorframework.io/v1", "ClusterObjectSet", "c1", None, {"status": {}},
                         resource_version=rv, subresource="status")
    with pytest.raises(NotFound) as e:       # a kind without the subresource: refused before any request
        kube.merge_patch("v1", "ConfigMap", "cm1", "ns1", {"status": {}}, subresource="status")
    assert str(e.value) == "ConfigMap has no status subresource"


def test_delete_sends_preconditions_and_propagation_policy(kube: KubeCluster, server: FakeApiServer) -> None:
    live = kube.create(CM)
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: other"):
        kube.delete("v1", "ConfigMap", "cm1", "ns1", uid="other")
    kube.delete("v1", "ConfigMap", "cm1", "ns1", uid=live["metadata"]["uid"],
                resource_version=live["metadata"]["resourceVersion"], propagation_policy="Orphan")
    req = writes(server)[-1]
    assert (req.method, req.path, req.content_type) == ("DELETE", "/api/v1/namespaces/ns1/configmaps/cm1",
                                                        "application/json")
    assert req.body == {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan",
                        "preconditions": {"uid": live["metadata"]["uid"],
                                          "resourceVersion": live["metadata"]["resourceVersion"]}}
    assert server.get_object("v1", "ConfigMap", "cm1", "ns1") is None


def test_errors_keep_the_server_message_and_map_to_classes(kube: KubeCluster, server: FakeApiServer) -> None:
    with pytest.raises(NotFound) as nf:
        kube.get("v1", "ConfigMap", "nope", "ns1")
    assert str(nf.value) == 'configmaps "nope" not found'
    kube.create(CM)
    with pytest.raises(AlreadyExists, match='^configmaps "cm1" already exists$'):
        kube.create(CM)
    server.inject("GET", "/api/v1/namespaces/ns1/configmaps/cm1", 403,
                  body=status_body(403, "Forbidden", 'configmaps "cm1" is forbidden: User "x" cannot get'))
    with pytest.raises(Forbidden, match='^configmaps "cm1" is forbidden: User "x" cannot get$'):
        kube.get("v1", "ConfigMap", "cm1", "ns1")
    server.inject("POST", "/api/v1/namespaces/a/configmaps", 422,
                  body=status_body(422, "Invalid", 'ConfigMap "x" is invalid: data: Invalid value'))
    with pytest.raises(Invalid, match='^ConfigMap "x" is invalid: data: Invalid value$'):
        kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "a"}})


def test_429_waits_for_retry_after_then_retries(kube: KubeCluster, server: FakeApiServer,
                                                sleeps: list[float]) -> None:
    kube.create(CM)
    server.clear_requests()
    server.inject("GET", "/api/v1/namespaces/ns1/configmaps/cm1", 429, headers={"Retry-After": "3"}, times=2)
    assert kube.get("v1", "ConfigMap", "cm1", "ns1")["data"] == {"a": "1"}
    assert sleeps == [3.0, 3.0]
    assert [r.path for r in server.requests] == ["/api/v1/namespaces/ns1/configmaps/cm1"] * 3


def test_500s_retry_with_growing_backoff_then_succeed(kube: KubeCluster, server: FakeApiServer,
                                                      sleeps: list[float]) -> None:
    server.inject("POST", "/api/v1/namespaces/ns1/configmaps", 500, times=3)
    assert kube.create(CM)["metadata"]["name"] == "cm1"
    assert len(sleeps) == 3
    # jittered exponential: attempt n waits within [base*2^(n-1)/2, base*2^(n-1)]
    for n, d in enumerate(sleeps, start=1):
        assert 0.2 * 2 ** (n - 1) / 2 <= d <= 0.2 * 2 ** (n - 1)
    assert [r.method for r in server.requests if r.path.endswith("configmaps")] == ["POST"] * 4


def test_500s_beyond_the_retry_budget_raise_with_the_server_message(kube: KubeCluster, server: FakeApiServer,
                                                                     sleeps: list[float]) -> None:
    server.inject("GET", "/api/v1/namespaces/ns1/configmaps/cm1", 503, times=10,
                  body=status_body(503, "ServiceUnavailable", "etcd is sad"))
    with pytest.raises(ServiceUnavailable, match="^etcd is sad$"):
        kube.get("v1", "ConfigMap", "cm1", "ns1")
    assert len(sleeps) == kube.options.max_retries


def test_4xx_other_than_429_are_not_retried(kube: KubeCluster, server: FakeApiServer, sleeps: list[float]) -> None:
    with pytest.raises(NotFound):
        kube.get("v1", "ConfigMap", "cm1", "ns1")
    assert sleeps == []


def test_unreachable_server_is_service_unavailable(tmp_path, sleeps: list[float]) -> None:
    s = FakeApiServer().start()
    path = s.write_kubeconfig(str(tmp_path / "kc"))
    s.stop()
    k = KubeCluster.from_kubeconfig(path, sleep=sleeps.append, max_retries=2)
    with pytest.raises(ServiceUnavailable, match="cannot reach the API server"):
        k.get("v1", "ConfigMap", "x", "y")
    assert len(sleeps) == 2


def test_apply_409_is_retried_after_a_fresh_read(kube: KubeCluster, server: FakeApiServer) -> None:
    kube.create(CM)
    server.clear_requests()
    server.inject("PATCH", "/api/v1/namespaces/ns1/configmaps/cm1", 409)
    out = kube.apply({**CM, "data": {"a": "2"}}, field_manager=MANAGER)
    assert out["data"] == {"a": "2"}
    assert [(r.method, r.path) for r in server.requests] == [
        ("PATCH", "/api/v1/namespaces/ns1/configmaps/cm1"),
        ("GET", "/api/v1/namespaces/ns1/configmaps/cm1"),
        ("PATCH", "/api/v1/namespaces/ns1/configmaps/cm1"),
    ]


def test_apply_409_with_a_resource_version_precondition_is_reported(kube: KubeCluster,
                                                                     server: FakeApiServer) -> None:
    live = kube.create(CM)
    kube.merge_patch("v1", "ConfigMap", "cm1", "ns1", {"data": {"z": "1"}})
    server.clear_requests()
    stale = {**CM, "metadata": {**CM["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}}
    with pytest.raises(Conflict, match="the object has been modified"):
        kube.apply(stale, field_manager=MANAGER)
    assert [r.method for r in server.requests] == ["PATCH"]


def test_apply_409_retries_are_bounded(kube: KubeCluster, server: FakeApiServer) -> None:
    kube.create(CM)
    server.clear_requests()
    server.inject("PATCH", "/api/v1/namespaces/ns1/configmaps/cm1", 409, times=5)
    with pytest.raises(Conflict):
        kube.apply(CM, field_manager=MANAGER)
    assert [r.method for r in server.requests] == ["PATCH", "GET", "PATCH", "GET", "PATCH"]


def test_kind_appears_in_discovery_after_its_crd_is_created(kube: KubeCluster, server: FakeApiServer) -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "ns1"},
              "spec": {"size": 1}}
    with pytest.raises(UnknownKind, match='^no matches for kind "Widget" in version "example.com/v1"$'):
        kube.apply(widget, field_manager=MANAGER)
    kube.create(crd())
    out = kube.apply(widget, field_manager=MANAGER)
    assert out["spec"] == {"size": 1}
    assert [(r.method, r.path) for r in server.requests if "example.com" in r.path] == [
        ("GET", "/apis/example.com/v1"),
        ("GET", "/apis/example.com/v1"),
        ("PATCH", "/apis/example.com/v1/namespaces/ns1/widgets/w1"),
    ]


def test_discovery_misses_are_rate_limited_and_invalidation_refreshes(kubeconfig: str,
                                                                       server: FakeApiServer) -> None:
    k = KubeCluster.from_kubeconfig(kubeconfig, discovery_refresh_interval=3600)
    for _ in range(3):
        with pytest.raises(UnknownKind):
            k.get("example.com/v1", "Widget", "w", "ns1")
    assert sum(r.path == "/apis/example.com/v1" for r in server.requests) == 1
    k.create(crd())
    with pytest.raises(UnknownKind):  # still within the refresh interval
        k.get("example.com/v1", "Widget", "w", "ns1")
    k.invalidate_discovery("example.com")
    with pytest.raises(NotFound) as e:
        k.get("example.com/v1", "Widget", "w", "ns1")
    assert not isinstance(e.value, UnknownKind)
    assert str(e.value) == 'widgets.example.com "w" not found'


def test_list_pages_with_limit_and_continue_and_fills_kind(kube: KubeCluster, server: FakeApiServer) -> None:
    for i in range(7):
        server.put_object({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": f"cm{i}", "namespace": "ns1", "labels": {"x": str(i % 2)}}})
    items, rv = kube.list_with_version("v1", "ConfigMap", "ns1", "x=1", page_size=2)
    assert [o["metadata"]["name"] for o in items] == ["cm1", "cm3", "cm5"]
    assert all(o["apiVersion"] == "v1" and o["kind"] == "ConfigMap" for o in items)
    lists = [r for r in server.requests if r.verb == "list"]
    assert next(r.query for r in lists) == {"limit": "2", "labelSelector": "x=1"}
    assert "continue" in lists[1].query and len(lists) == 2
    assert rv == str(server._last_rv)


def test_list_with_a_limit_reads_one_page_of_that_size(kube: KubeCluster, server: FakeApiServer) -> None:
    for i in range(5):
        server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}", "namespace": "ns1"}})
    server.clear_requests()
    assert [o["metadata"]["name"] for o in kube.list("v1", "ConfigMap", "ns1", limit=2)] == ["cm0", "cm1"]
    assert [r.query for r in server.requests if r.verb == "list"] == [{"limit": "2"}]  # no continue followed


def test_watch_sends_resource_version_and_streams_events(kube: KubeCluster, server: FakeApiServer) -> None:
    _, rv = kube.list_with_version("v1", "ConfigMap", "ns1")
    server.put_object(CM)
    events = []
    for ev in kube.watch("v1", "ConfigMap", "ns1", resource_version=rv, timeout_seconds=1,
                         label_selector="a!=b"):
        events.append(ev)
        if ev.type == "ADDED":
            break
    req = next(r for r in server.requests if r.verb == "watch")
    assert req.path == "/api/v1/namespaces/ns1/configmaps"
    assert req.query == {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": "1",
                         "resourceVersion": rv, "labelSelector": "a!=b"}
    assert events[0].type == "ADDED" and events[0].obj["metadata"]["name"] == "cm1"
    assert events[0].obj["kind"] == "ConfigMap"


def test_a_server_url_with_a_path_keeps_it_in_front_of_every_request(tmp_path) -> None:
    # Rancher (https://rancher/k8s/clusters/c-xyz) and `kubectl proxy --api-prefix` serve the API under a path;
    # the fake server answers 404 to anything outside it, so each call below fails if the prefix is dropped
    with FakeApiServer(path_prefix="/k8s/clusters/c-abc") as server:
        kube = KubeCluster.from_kubeconfig(server.write_kubeconfig(str(tmp_path / "kubeconfig")))
        try:
            kube.create(CM)
            assert kube.get("v1", "ConfigMap", "cm1", "ns1")["data"] == {"a": "1"}
            _, rv = kube.list_with_version("v1", "ConfigMap", "ns1")
            kube.merge_patch("v1", "ConfigMap", "cm1", "ns1", {"data": {"b": "2"}})
            (event,) = kube.watch("v1", "ConfigMap", "ns1", resource_version=rv, timeout_seconds=1)
            assert (event.type, event.obj["data"]) == ("MODIFIED", {"a": "1", "b": "2"})
        finally:
            kube.close()
        assert [(r.method, r.path) for r in server.requests] == [
            ("GET", "/api/v1"),
            ("POST", "/api/v1/namespaces/ns1/configmaps"),
            ("GET", "/api/v1/namespaces/ns1/configmaps/cm1"),
            ("GET", "/api/v1/namespaces/ns1/configmaps"),
            ("PATCH", "/api/v1/namespaces/ns1/configmaps/cm1"),
            ("GET", "/api/v1/namespaces/ns1/configmaps"),
        ]


def test_watch_refused_with_410_raises_gone(kube: KubeCluster, server: FakeApiServer) -> None:
    from common.cluster.interface import Gone

    server.inject("GET", "/api/v1/configmaps", 410, query={"watch": "true"})
    with pytest.raises(Gone):
        list(kube.watch("v1", "ConfigMap", resource_version="1", timeout_seconds=1))


def test_internal_error_class_for_unknown_5xx(kube: KubeCluster, server: FakeApiServer,
                                              sleeps: list[float]) -> None:
    server.inject("GET", "/api/v1/namespaces/ns1/configmaps/cm1", 500, times=99)
    with pytest.raises(InternalError, match="injected 500"):
        kube.get("v1", "ConfigMap", "cm1", "ns1")


def test_bearer_token_from_the_kubeconfig_is_sent(server: FakeApiServer, tmp_path) -> None:
    k = KubeCluster.from_kubeconfig(server.write_kubeconfig(str(tmp_path / "kc"), token="s3cret"))
    k.create(CM)
    assert {r.token for r in server.requests} == {"s3cret"}


def test_kubeconfig_from_the_environment_at_call_time(server: FakeApiServer, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KUBECONFIG", server.write_kubeconfig(str(tmp_path / "kc"), token="from-env"))
    k = KubeCluster.from_kubeconfig(None)
    k.create(CM)
    assert {r.token for r in server.requests} == {"from-env"}


def test_create_names_its_field_manager(kube: KubeCluster, server: FakeApiServer) -> None:
    kube.create(CM, field_manager=MANAGER)
    (req,) = writes(server)
    assert req.query == {"fieldManager": MANAGER}


CREATED_FIELDS = {"f:data": {".": {}, "f:a": {}, "f:legacy": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}}


def _created_by_us(server: FakeApiServer) -> dict:
    """A ConfigMap as a real server stores one we POSTed: its fields owned by our *Update* entry."""
    return server.put_object({**CM, "data": {"a": "1", "legacy": "old"},
                              "metadata": {**CM["metadata"], "labels": {"x": "y"}, "managedFields": [
                                  {"manager": MANAGER, "operation": "Update", "apiVersion": "v1",
                                   "time": "2026-11-21T05:00:00Z", "fieldsType": "FieldsV1",
                                   "fieldsV1": CREATED_FIELDS},
                                  {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1",
                                   "time": "2026-11-21T05:01:00Z", "fieldsType": "FieldsV1",
                                   "fieldsV1": {"f:metadata": {"f:annotations": {"f:note": {}}}}},
                              ]}})


def test_first_apply_after_our_create_takes_over_the_created_fields(kube: KubeCluster,
                                                                     server: FakeApiServer) -> None:
    stored = _created_by_us(server)
    server.clear_requests()
    intent = {**CM, "data": {"a": "2"}}
    kube.apply(intent, field_manager=MANAGER)
    path = "/api/v1/namespaces/ns1/configmaps/cm1"
    sent = writes(server)
    assert [(r.method, r.path, r.content_type) for r in sent] == [
        ("PATCH", path, "application/apply-patch+yaml"),
        ("PATCH", path, "application/json-patch+json"),
        ("PATCH", path, "application/apply-patch+yaml"),
    ]
    test_op, replace_op = sent[1].body
    assert test_op["op"] == "test" and test_op["path"] == "/metadata/resourceVersion"
    assert test_op["value"] != stored["metadata"]["resourceVersion"]  # the version the first apply produced
    assert replace_op["op"] == "replace" and replace_op["path"] == "/metadata/managedFields"
    by_manager = {(e["manager"], e["operation"]): e for e in replace_op["value"]}
    assert set(by_manager) == {(MANAGER, "Apply"), ("kubectl-edit", "Update")}  # our Update entry folded in
    folded = by_manager[(MANAGER, "Apply")]["fieldsV1"]
    assert folded["f:data"]["f:legacy"] == {} and folded["f:metadata"]["f:labels"]["f:x"] == {}
    assert sent[2].body == intent


def test_apply_without_an_update_entry_of_ours_is_one_request(kube: KubeCluster, server: FakeApiServer) -> None:
    kube.create(CM)
    server.clear_requests()
    kube.apply({**CM, "data": {"a": "2"}}, field_manager=MANAGER)
    assert [r.content_type for r in writes(server)] == ["application/apply-patch+yaml"]


def test_options_are_given_once_and_a_client_with_others_is_a_new_object(kubeconfig: str,
                                                                          server: FakeApiServer) -> None:
    base = KubeCluster.from_kubeconfig(kubeconfig, user_agent="cos-test/1", pool_size=3)
    try:
        assert base.with_options(pool_size=3) is base
        lease = base.with_options(max_retries=0, request_timeout=2.0)
        assert (lease.options.max_retries, lease.options.request_timeout) == (0, 2.0)
        assert lease.api_client is base.api_client and base.options.max_retries == 5   # a view; base unchanged
        bigger = base.with_options(pool_size=40)
        assert bigger.api_client is not base.api_client
        assert bigger.api_client.rest_client.pool_manager.connection_pool_kw["maxsize"] == bigger.pool_size == 40
        assert base.api_client.rest_client.pool_manager.connection_pool_kw["maxsize"] == base.pool_size == 3
        server.clear_requests()
        bigger.list("v1", "ConfigMap", "ns1")
        lease.close()   # a view closes nothing
        base.list("v1", "ConfigMap", "ns1")
        assert {r.user_agent for r in server.requests} == {"cos-test/1"}
        bigger.close()
    finally:
        base.close()


def test_no_usable_configuration_is_a_config_error(tmp_path) -> None:
    from common.cluster.connection import ConfigError

    with pytest.raises(ConfigError) as caught:
        KubeCluster.auto(str(tmp_path / "missing"))
    assert str(caught.value) == f"kubeconfig {tmp_path / 'missing'}: no such file"
    from common.cluster.connection import kubeconfig_configuration

    several = f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}"
    for environ, message in ((several, f"kubeconfig {several} (from $KUBECONFIG): none of these files exists"),
                             ("", "kubeconfig ~/.kube/config (the default): no such file")):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("KUBECONFIG", environ)
            patch.setenv("HOME", str(tmp_path))
            with pytest.raises(ConfigError) as caught:
                kubeconfig_configuration(None)
            assert str(caught.value) == message
    empty = tmp_path / "empty"
    empty.write_text("apiVersion: v1\n")
    with pytest.raises(ConfigError) as caught:
        KubeCluster.auto(str(empty))
    assert str(caught.value) == (f"kubeconfig {empty}: Invalid kube-config file. Expected key current-context in "
                                 f"{empty}")
