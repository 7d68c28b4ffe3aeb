"""Every cell of the collision-protection table (reconciler.md section 2.4), against the in-memory API server.

The COS under test is ``ext-2`` (revision 2, owner ``ext``) with one ConfigMap ``ns/obj``. Siblings ``ext-1``
(revision 1) and ``ext-3`` (revision 3) exist as stored COSs. For each row the live object is prepared, one
reconcile runs, and the test asserts the exact writes to the ConfigMap, its owner references afterwards and
the Progressing condition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from common.contract.api import ANNOTATION_REVISION, API_VERSION, FIELD_MANAGER, KIND, owner_reference
from common.testing.memcluster import MemCluster
from reconciler.collisions import decide
from tests.engine.helpers import brief, cluster, cm, cos, get_cos, phase, run

OBJ = cm("obj", k="v")


def _world(protection: str) -> tuple[MemCluster, dict[str, Any]]:
    mc = cluster()
    uids = {}
    for name, rev, owner in (("ext-1", 1, "ext"), ("ext-3", 3, "ext"), ("other-1", 1, "other")):
        uids[name] = mc.put(cos(name, rev, owner=owner))["metadata"]["uid"]
    # the COS under test; protection set on the object entry, the phase or the spec (object > phase > spec)
    mc.put(cos("ext-2", 2, phase("p", {"object": OBJ, "collisionProtection": protection}),
               protection="Prevent" if protection != "Prevent" else "None"))
    uids["ext-2"] = get_cos(mc, "ext-2")["metadata"]["uid"]
    return mc, uids


def _ref(mc: MemCluster, name: str) -> dict:
    return owner_reference(get_cos(mc, name))


def _live(mc: MemCluster, *, controller: str | None = None, annotation: str | None = None,
          data: str = "v", foreign_controller: bool = False) -> None:
    obj = cm("obj", k=data)
    meta = obj["metadata"]
    if controller:
        meta["ownerReferences"] = [_ref(mc, controller)]
    if foreign_controller:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                    "uid": "11111111-1111-4111-8111-111111111111", "controller": True}]
    if annotation is not None:
        meta["annotations"] = {ANNOTATION_REVISION: annotation}
    if controller == "ext-2":
        meta["labels"] = {"app.kubernetes.io/managed-by": "olm.operatorframework.io",
                          "olm.operatorframework.io/owner-name": "ext"}
        meta["ownerReferences"][0]["blockOwnerDeletion"] = True
    mc.put(obj, manager=FIELD_MANAGER if controller == "ext-2" else "someone")  # ours: our own earlier write


ROWS: dict[str, Callable[[MemCluster], None]] = {
    "absent": lambda mc: None,
    "ours-unchanged": lambda mc: _live(mc, controller="ext-2", annotation="2"),
    "ours-drifted": lambda mc: _live(mc, controller="ext-2", annotation="2", data="edited"),
    "sibling-lower": lambda mc: _live(mc, controller="ext-1", annotation="1"),
    "sibling-higher": lambda mc: _live(mc, controller="ext-3", annotation="3"),
    "sibling-equal": lambda mc: _live(mc, controller="ext-1", annotation="2"),
    "other-cos": lambda mc: _live(mc, controller="other-1", annotation="1"),
    "foreign-controller": lambda mc: _live(mc, foreign_controller=True),
    "orphaned": lambda mc: _live(mc, annotation="1"),
    "unowned": _live,
}

# row -> expected action per protection (Prevent, IfNoController, None)
TABLE = {
    "absent": ("create", "create", "create"),
    "ours-unchanged": ("idle", "idle", "idle"),
    "ours-drifted": ("apply", "apply", "apply"),
    "sibling-lower": ("adopt", "adopt", "adopt"),
    "sibling-higher": ("progressed", "progressed", "progressed"),
    "sibling-equal": ("collision", "collision", "collision"),
    "other-cos": ("collision", "collision", "adopt"),
    "foreign-controller": ("collision", "collision", "adopt"),
    "orphaned": ("collision", "collision", "collision"),
    "unowned": ("collision", "adopt", "adopt"),
}

CELLS = [(row, prot, TABLE[row][i]) for row in TABLE for i, prot in enumerate(("Prevent", "IfNoController", "None"))]


def _collision_detail(row: str, uids: dict[str, str]) -> str:
    cos_ref = "ClusterObjectSet.olm.operatorframework.io/v1"
    return {
        "sibling-equal": f"controlled by {cos_ref} ext-1 (uid {uids['ext-1']}), which has the same revision 2",
        "other-cos": f"controlled by {cos_ref} other-1 (uid {uids['other-1']})",
        "foreign-controller": "controlled by ReplicaSet.apps/v1 rs (uid 11111111-1111-4111-8111-111111111111)",
        "orphaned": 'not controlled by anyone, but has revision annotation "1" (orphaned by garbage collection)',
        "unowned": "exists without a controller",
    }[row]


@pytest.mark.parametrize("row,protection,action", CELLS, ids=[f"{r}-{p}" for r, p, _ in CELLS])
def test_collision_table_cell(row: str, protection: str, action: str) -> None:
    mc, uids = _world(protection)
    ROWS[row](mc)
    before = mc.peek("v1", "ConfigMap", "obj", "ns")
    mc.reset_requests()

    result = run(mc, "ext-2")

    cm_writes = [r.verb for r in mc.write_log() if r.kind == "ConfigMap"]
    after = mc.peek("v1", "ConfigMap", "obj", "ns")
    assert after is not None
    refs = after["metadata"].get("ownerReferences") or []
    ours = _ref(mc, "ext-2")
    if action == "create":
        assert cm_writes == ["create"]
        assert refs == [ours]
    elif action == "idle":
        assert cm_writes == []
        assert after == before
    elif action == "apply":
        assert cm_writes == ["apply"]
        assert after["data"] == {"k": "v"}
    elif action == "adopt":
        assert cm_writes == ["apply"]
        previous = [{**r, "controller": False} for r in (before["metadata"].get("ownerReferences") or [])]
        assert refs == [*previous, ours]
        assert after["metadata"]["annotations"][ANNOTATION_REVISION] == "2"
    elif action == "progressed":
        assert cm_writes == []
        assert after == before
    if action == "collision":
        assert cm_writes == []
        assert after == before
        assert result.requeue_after == 10.0
        assert result.error is None
        assert brief(mc, "ext-2", "Progressing") == (
            "True", "Retrying",
            f"revision object collisions in phase 0\nObject ConfigMap.v1 ns/obj: {_collision_detail(row, uids)}")
        assert [e.reason for e in result.events] == ["Collision"]
    else:
        assert result.requeue_after is None
        assert brief(mc, "ext-2", "Progressing") == ("True", "Succeeded", "Revision 2 has rolled out.")


def test_effective_protection_object_beats_phase_beats_spec() -> None:
    mc = cluster()
    mc.put(cm("a"), manager="someone")
    mc.put(cm("b"), manager="someone")
    mc.put(cm("c"), manager="someone")
    mc.put(cos("ext-1", 1,
               phase("p", {"object": cm("a"), "collisionProtection": "Prevent"}, cm("b"),
                     collisionProtection="IfNoController"),
               phase("q", cm("c")), protection="Prevent"))
    run(mc, "ext-1")
    # a: object says Prevent -> collision, so the phase stops; b: phase says IfNoController -> adopted
    a = mc.peek("v1", "ConfigMap", "a", "ns")
    b = mc.peek("v1", "ConfigMap", "b", "ns")
    assert "ownerReferences" not in a["metadata"]
    assert b["metadata"]["ownerReferences"][0]["name"] == "ext-1"
    assert brief(mc, "ext-1", "Progressing")[2] == (
        "revision object collisions in phase 0\nObject ConfigMap.v1 ns/a: exists without a controller")
    # c (phase q, spec Prevent) is not touched: the walk stopped at the colliding phase
    assert "ownerReferences" not in mc.peek("v1", "ConfigMap", "c", "ns")["metadata"]


def test_several_collisions_are_all_reported() -> None:
    mc = cluster()
    mc.put(cm("a"), manager="someone")
    mc.put(cm("b"), manager="someone")
    mc.put(cos("ext-1", 1, phase("p", cm("a"), cm("b"))))
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Progressing")[2] == (
        "revision object collisions in phase 0\n"
        "Object ConfigMap.v1 ns/a: exists without a controller\n\n"
        "Object ConfigMap.v1 ns/b: exists without a controller")
    # Available is only set to Unknown when it already exists
    assert brief(mc, "ext-1", "Available") is None


def test_ownership_is_by_uid_not_name() -> None:
    """A controller reference with our name but another uid (a deleted and recreated COS) is not us."""
    live = cm("obj")
    live["metadata"]["ownerReferences"] = [{"apiVersion": API_VERSION, "kind": KIND, "name": "ext-2",
                                            "uid": "stale", "controller": True}]
    d = decide(live, cos_name="ext-2", cos_uid="fresh", revision=2, siblings={}, protection="Prevent")
    assert d.action == "Collision"


def test_collision_after_success_makes_available_unknown() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a"))))
    run(mc, "ext-1")
    mc.edit("v1", "ConfigMap", "a", "ns", lambda o: o["metadata"].update({"ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-1", "controller": True}]}))
    result = run(mc, "ext-1")
    msg = ("revision object collisions in phase 0\n"
           "Object ConfigMap.v1 ns/a: controlled by ReplicaSet.apps/v1 rs (uid u-1)")
    assert brief(mc, "ext-1", "Progressing") == ("True", "Retrying", msg)
    assert brief(mc, "ext-1", "Available") == ("Unknown", "Reconciling", msg)
    assert brief(mc, "ext-1", "Succeeded") == ("True", "Succeeded", "Revision succeeded rolling out.")
    assert result.requeue_after == 10.0
    # the same collision again: no new event, no write
    mc.reset_requests()
    assert run(mc, "ext-1").events == [] and mc.writes == 0
