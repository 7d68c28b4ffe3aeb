"""End-to-end: every cell of the collision table (reconciler.md section 2.4) on a real cluster.

One test per live-object row; each runs the three protections (Prevent, IfNoController, None) side by side,
each with its own object and owner name, and asserts the action of the cell: adopt (our controller reference,
earlier references kept as non-controllers, our value, the revision annotation), Collision (the exact
Progressing message, the object untouched) or Progressed (a newer sibling keeps it; no write, and this
revision still completes). The absent and controlled-by-us rows are the other e2e files' everyday cases.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import (
    COS_REF,
    REVISION_ANNOTATION,
    cm,
    cos_name,
    get_cos,
    make_cos,
    uid,
    wait_brief,
    wait_for,
    wait_succeeded,
)

pytestmark = pytest.mark.e2e
PROTECTIONS = ("Prevent", "IfNoController", "None")

# row -> action per protection (Prevent, IfNoController, None), as in the spec's table
TABLE = {
    "sibling-lower": ("adopt", "adopt", "adopt"),
    "sibling-higher": ("progressed", "progressed", "progressed"),
    "sibling-equal": ("collision", "collision", "collision"),
    "other-cos": ("collision", "collision", "adopt"),
    "foreign-controller": ("collision", "collision", "adopt"),
    "orphaned": ("collision", "collision", "collision"),
    "unowned": ("collision", "adopt", "adopt"),
}
SIBLING_REVISION = {"sibling-lower": 1, "sibling-higher": 3, "sibling-equal": 2}


def _prepare(env: dict[str, Any], row: str, case: str, obj: str) -> str:
    """Make the live object of ``row``; returns the detail a collision report gives for it."""
    ns, kube = env["ns"], env["kube"]
    theirs = cm(ns, obj, k="theirs")
    if row in SIBLING_REVISION or row == "other-cos":
        rev = SIBLING_REVISION.get(row, 1)
        holder = f"{case}-holder"
        make_cos(env, holder, rev, [{"name": "p", "objects": [{"object": theirs}]}],
                 owner=case if row != "other-cos" else f"{case}-other")
        wait_succeeded(env, cos_name(env, holder))
        full = cos_name(env, holder)
        same = f", which has the same revision {rev}" if row == "sibling-equal" else ""
        return f"controlled by {COS_REF} {full} (uid {uid(env, full)}){same}"
    if row == "foreign-controller":
        owner = kube.create(cm(ns, f"{obj}-owner"))   # a real owner: the garbage collector keeps the object
        theirs["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": f"{obj}-owner",
                                                  "uid": owner["metadata"]["uid"], "controller": True}]
        kube.create(theirs)
        return f"controlled by ConfigMap.v1 {obj}-owner (uid {owner['metadata']['uid']})"
    if row == "orphaned":
        theirs["metadata"]["annotations"] = {REVISION_ANNOTATION: "1"}
        kube.create(theirs)
        return 'not controlled by anyone, but has revision annotation "1" (orphaned by garbage collection)'
    kube.create(theirs)
    return "exists without a controller"


@pytest.mark.parametrize("row", list(TABLE))
def test_collision_table_row(env: dict[str, Any], row: str) -> None:
    ns, kube = env["ns"], env["kube"]
    cases = []
    for protection, action in zip(PROTECTIONS, TABLE[row], strict=True):
        case = f"{row}-{protection.lower()}"
        obj = f"c-{case}"
        detail = _prepare(env, row, case, obj)
        before = kube.get("v1", "ConfigMap", obj, ns)
        make_cos(env, case, 2, [{"name": "p", "objects": [{"object": cm(ns, obj, k="mine")}]}], owner=case,
                 collisionProtection=protection)
        cases.append((case, obj, action, detail, before))
    for case, obj, action, detail, before in cases:
        name = cos_name(env, case)
        if action == "collision":
            wait_brief(env, name, ("True", "Retrying",
                                   f"revision object collisions in phase 0\nObject ConfigMap.v1 {ns}/{obj}: {detail}"))
            after = kube.get("v1", "ConfigMap", obj, ns)
            assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], case
        elif action == "progressed":
            wait_succeeded(env, name)
            after = kube.get("v1", "ConfigMap", obj, ns)
            assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], case
            assert after["data"] == {"k": "theirs"}
        else:
            wait_succeeded(env, name)
            after = kube.get("v1", "ConfigMap", obj, ns)
            ours = {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": name,
                    "uid": uid(env, name), "controller": True, "blockOwnerDeletion": True}
            previous = [{**r, "controller": False} for r in before["metadata"].get("ownerReferences") or []]
            assert after["data"] == {"k": "mine"}, case
            assert after["metadata"]["annotations"][REVISION_ANNOTATION] == "2", case
            if row == "sibling-lower":
                # the handed-over revision is archived and releases the object: only ours is left
                holder = cos_name(env, f"{case}-holder")
                wait_brief(env, holder, ("False", "Archived", "revision is archived"))
                assert get_cos(env, holder)["spec"]["lifecycleState"] == "Archived"
                wait_for(lambda o=obj, r=ours: kube.get("v1", "ConfigMap", o, ns)["metadata"]["ownerReferences"]
                         == [r], 60, "the archived sibling's reference to go")
            else:
                assert after["metadata"]["ownerReferences"] == [*previous, ours], case
