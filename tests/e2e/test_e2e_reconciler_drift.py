"""End-to-end: drift repair on a real cluster, with the real kubectl doing what users do.

Each kind of drift the reconciler must see through its watch and repair without any COS change: ``kubectl
edit`` of a field we own (an Update by another manager), ``kubectl apply --server-side --force-conflicts``
(another manager takes the field over), deletion of a managed object, removal of a label we set (for the
managed-by label this also takes the object out of the reconciler's label-filtered cache). A label a user adds
is not ours and survives every repair. After each repair our field manager owns the field again.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.drift import our_fields
from tests.e2e.conftest import (
    MANAGED_BY,
    OWNER_LABEL,
    brief,
    cm,
    cos_name,
    kubectl,
    make_cos,
    wait_for,
    wait_succeeded,
)

pytestmark = pytest.mark.e2e
WANT = "wanted-value"


def _rolled_out(env: dict[str, Any], case: str, **data: str) -> str:
    name = cos_name(env, case)
    make_cos(env, case, 1, [{"name": "one", "objects": [{"object": cm(env["ns"], case, **data)}]}], owner=case)
    wait_succeeded(env, name)
    return name


def _live(env: dict[str, Any], case: str) -> dict[str, Any]:
    return env["kube"].get("v1", "ConfigMap", case, env["ns"])


def _ours(obj: dict[str, Any]) -> dict[str, Any]:
    return our_fields(obj) or {}


def _repaired(env: dict[str, Any], case: str) -> dict[str, Any]:
    return wait_for(lambda: (o := _live(env, case))["data"] == {"k": WANT} and "f:k" in _ours(o).get("f:data", {})
                    and o, 60, f"{case} to be repaired")


def _still_succeeded(env: dict[str, Any], name: str) -> None:
    assert brief(env, name) == ("True", "Succeeded", "Revision 1 has rolled out.")


def test_kubectl_edit_of_a_field_we_own_is_repaired_and_a_users_label_kept(env: dict[str, Any]) -> None:
    ns, case = env["ns"], "drift-edit"
    name = _rolled_out(env, case, k=WANT)
    kubectl(env, "label", "configmap", case, "-n", ns, "team=blue")
    out = kubectl(env, "edit", "configmap", case, "-n", ns, editor=f"sed -i s/{WANT}/edited-by-hand/")
    assert out.strip() == f"configmap/{case} edited"
    live = _repaired(env, case)
    assert live["metadata"]["labels"]["team"] == "blue"
    _still_succeeded(env, name)


def test_server_side_apply_force_conflicts_is_repaired(env: dict[str, Any]) -> None:
    ns, case = env["ns"], "drift-ssa"
    name = _rolled_out(env, case, k=WANT)
    manifest = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {case}, namespace: {ns}}}\ndata: {{k: taken}}\n"
    out = kubectl(env, "apply", "--server-side", "--force-conflicts", "--field-manager=e2e-user", "-f", "-",
                  stdin=manifest)
    assert out.strip() == f"configmap/{case} serverside-applied"
    live = _repaired(env, case)
    users = [e for e in live["metadata"]["managedFields"] if e["manager"] == "e2e-user"]
    assert all("f:k" not in (e["fieldsV1"].get("f:data") or {}) for e in users)   # taken back
    _still_succeeded(env, name)


def test_deleted_managed_object_is_recreated(env: dict[str, Any]) -> None:
    ns, case = env["ns"], "drift-delete"
    name = _rolled_out(env, case, k=WANT)
    old_uid = _live(env, case)["metadata"]["uid"]
    kubectl(env, "delete", "configmap", case, "-n", ns)
    live = wait_for(lambda: (o := _live(env, case))["metadata"]["uid"] != old_uid and o, 60, "the re-creation")
    assert live["data"] == {"k": WANT}
    assert [r["name"] for r in live["metadata"]["ownerReferences"]] == [name]
    _still_succeeded(env, name)


@pytest.mark.parametrize("label", [MANAGED_BY, OWNER_LABEL])
def test_a_label_we_set_is_restored_and_a_users_label_kept(env: dict[str, Any], label: str) -> None:
    ns = env["ns"]
    case = "drift-label-" + ("managed" if label == MANAGED_BY else "owner")
    name = _rolled_out(env, case, k=WANT)
    want = _live(env, case)["metadata"]["labels"][label]
    kubectl(env, "label", "configmap", case, "-n", ns, "team=green")
    assert kubectl(env, "label", "configmap", case, "-n", ns, f"{label}-").strip() == f"configmap/{case} unlabeled"
    live = wait_for(lambda: (o := _live(env, case))["metadata"]["labels"].get(label) == want and o, 60,
                    f"the label {label} to come back")
    assert live["metadata"]["labels"]["team"] == "green"
    assert live["data"] == {"k": WANT}
    _still_succeeded(env, name)
