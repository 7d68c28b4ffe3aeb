"""End-to-end: revision handover, archival and deletion teardown on a real cluster (spec sections 2.6 and 5).

Handover N -> N+1 adopts what both declare, deletes what N+1 dropped (a whole object) and removes what it
dropped inside an object (an env var of a Deployment: gone from the live object). Teardown order is observed
without timing: a user's finalizer holds an object of the LAST phase; while it is held, the first phase's
objects must be untouched (no deletionTimestamp), since a phase must be fully gone before the previous starts.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.conftest import (
    CM,
    COS_API,
    KIND,
    brief,
    cm,
    controller_of,
    cos_name,
    exists,
    get_cos,
    gone,
    make_cos,
    wait_brief,
    wait_for,
    wait_succeeded,
)

pytestmark = pytest.mark.e2e
HOLD = "e2e.example.com/hold"
TEARING_DOWN = ("True", "Retrying", "removing revision resources that are not owned by another revision")


def _web(ns: str, env_vars: list[dict[str, str]]) -> dict[str, Any]:
    labels = {"app": "web"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "example.invalid/web:1",
                                                           "env": env_vars}]}}}}


def test_handover_drops_an_object_and_a_field(env: dict[str, Any]) -> None:
    ns, kube = env["ns"], env["kube"]
    one = cos_name(env, "app-r1")
    make_cos(env, "app-r1", 1, [
        {"name": "cfg", "objects": [{"object": cm(ns, "shared", v="1")}, {"object": cm(ns, "only-r1")}]},
        {"name": "app", "objects": [{"object": _web(ns, [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])}]},
    ], owner="app")
    wait_succeeded(env, one)
    env_of = lambda: kube.get("apps/v1", "Deployment", "web", ns)["spec"]["template"]["spec"]["containers"][0]["env"]  # noqa: E731
    assert env_of() == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    two = cos_name(env, "app-r2")
    make_cos(env, "app-r2", 2, [
        {"name": "cfg", "objects": [{"object": cm(ns, "shared", v="2")}]},
        {"name": "app", "objects": [{"object": _web(ns, [{"name": "A", "value": "1"}])}]},
    ], owner="app")
    wait_succeeded(env, two)
    wait_brief(env, one, ("False", "Archived", "revision is archived"))
    assert brief(env, one, "Available") == ("Unknown", "Archived", "revision is archived")
    assert get_cos(env, one)["spec"]["lifecycleState"] == "Archived"
    assert "finalizers" not in get_cos(env, one)["metadata"]
    shared = kube.get("v1", "ConfigMap", "shared", ns)
    assert shared["data"] == {"v": "2"}
    assert controller_of(shared) == [two]
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == [two]   # rev 1 released it
    assert not exists(env, CM, "only-r1", ns)
    assert env_of() == [{"name": "A", "value": "1"}]
    assert [r["name"] for r in kube.get("apps/v1", "Deployment", "web", ns)["metadata"]["ownerReferences"]] == [two]


def _hold(env: dict[str, Any], name: str) -> None:
    env["kube"].merge_patch("v1", "ConfigMap", name, env["ns"], {"metadata": {"finalizers": [HOLD]}})


def _release(env: dict[str, Any], name: str) -> None:
    env["kube"].merge_patch("v1", "ConfigMap", name, env["ns"], {"metadata": {"finalizers": None}})


def _marked(env: dict[str, Any], name: str) -> bool:
    return bool(env["kube"].get("v1", "ConfigMap", name, env["ns"])["metadata"].get("deletionTimestamp"))


def _assert_first_phase_waits(env: dict[str, Any], first: list[str], last: str) -> None:
    wait_for(lambda: _marked(env, last), 60, f"{last} (last phase) to be deleted first")
    time.sleep(12)   # two teardown requeues (5 s): the first phase must still be waiting for the last one
    for name in first:
        assert not _marked(env, name), f"{name} (first phase) deleted while the last phase was still there"


def test_archival_tears_down_phases_in_reverse(env: dict[str, Any]) -> None:
    ns = env["ns"]
    one = cos_name(env, "order-r1")
    make_cos(env, "order-r1", 1, [{"name": "first", "objects": [{"object": cm(ns, "o-first")},
                                                                {"object": cm(ns, "o-first-b")}]},
                                  {"name": "middle", "objects": [{"object": cm(ns, "o-middle")}]},
                                  {"name": "last", "objects": [{"object": cm(ns, "o-last")}]}], owner="order")
    wait_succeeded(env, one)
    _hold(env, "o-last")
    two = cos_name(env, "order-r2")
    make_cos(env, "order-r2", 2, [{"name": "only", "objects": [{"object": cm(ns, "o-new")}]}], owner="order")
    wait_succeeded(env, two)
    _assert_first_phase_waits(env, ["o-first", "o-first-b", "o-middle"], "o-last")
    assert brief(env, one) == TEARING_DOWN
    assert brief(env, one, "Available")[:2] == ("Unknown", "Reconciling")
    _release(env, "o-last")
    wait_brief(env, one, ("False", "Archived", "revision is archived"))
    for name in ("o-first", "o-first-b", "o-middle", "o-last"):
        assert not exists(env, CM, name, ns)
    assert exists(env, CM, "o-new", ns)


def test_deletion_tears_down_phases_in_reverse(env: dict[str, Any]) -> None:
    ns, kube = env["ns"], env["kube"]
    name = cos_name(env, "deleteme")
    make_cos(env, "deleteme", 1, [{"name": "first", "objects": [{"object": cm(ns, "d-first")}]},
                                  {"name": "second", "objects": [{"object": cm(ns, "d-second")}]}])
    wait_succeeded(env, name)
    _hold(env, "d-second")
    kube.delete(COS_API, KIND, name)
    _assert_first_phase_waits(env, ["d-first"], "d-second")
    assert get_cos(env, name)["metadata"]["finalizers"] == ["olm.operatorframework.io/teardown"]
    _release(env, "d-second")
    wait_for(lambda: gone(kube, COS_API, KIND, name), 120, "the COS to go")
    assert not exists(env, CM, "d-first", ns) and not exists(env, CM, "d-second", ns)
