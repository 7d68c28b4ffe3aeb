"""End-to-end: the real reconciler process against a real cluster (opt-in: ``pytest -m e2e``).

The fixtures and helpers are in ``conftest.py``; the themes have their own files
(``test_e2e_reconciler_*.py``: probes, refs, collisions, handover and teardown, drift, process). Here: the
basic gated rollout and the steady-state cost of 210 mixed-shape objects.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import (
    CM,
    COS_API,
    KIND,
    cm,
    conditions,
    cos_name,
    exists,
    gone,
    make_cos,
    metrics,
    reason,
    wait_for,
)

pytestmark = pytest.mark.e2e


def test_three_phase_rollout_gated_by_a_probe(env: dict) -> None:
    ns = env["ns"]
    gate = cm(ns, "gate", labels={"e2e-gate": "yes"}, declared="1")
    cos = make_cos(env, "gated", 1, [
        {"name": "one", "objects": [{"object": gate}]},
        {"name": "two", "objects": [{"object": cm(ns, "two")}]},
        {"name": "three", "objects": [{"object": cm(ns, "three")}]},
    ], progressionProbes=[{
        "selector": {"type": "Label", "label": {"matchLabels": {"e2e-gate": "yes"}}},
        "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "data.ready", "value": "true"}}]}])
    name = cos["metadata"]["name"]
    wait_for(lambda: reason(env, name) == "RollingOut", what="RollingOut")
    wait_for(lambda: exists(env, CM, "gate", ns), what="phase one")
    time.sleep(5)
    assert not exists(env, CM, "two", ns), "phase two started before the probe passed"
    assert conditions(env, name)["Available"]["reason"] == "ProbeFailure"
    # a field the COS does not declare: our server-side apply leaves it to its manager
    env["kube"].merge_patch("v1", "ConfigMap", "gate", ns, {"data": {"ready": "true"}})
    wait_for(lambda: reason(env, name) == "Succeeded", what="Succeeded")
    assert exists(env, CM, "two", ns) and exists(env, CM, "three", ns)
    assert conditions(env, name)["Succeeded"]["status"] == "True"


def test_steady_state_of_200_mixed_shape_objects_sends_no_write(env: dict) -> None:
    """Issue 9: objects the server normalizes (empty maps and lists, stringData, defaults, int-or-string,
    quantities, nulls) cost no write and no dry run at steady state, counted by the API server itself."""
    from tests.support import mixed_shapes

    ns = env["ns"]
    full = cos_name(env, "shapes")
    make_cos(env, "shapes", 1, mixed_shapes.phases(ns))
    wait_for(lambda: reason(env, full) == "Succeeded", 300, "the 210-object COS to roll out")
    time.sleep(15)   # controllers finish their own first writes (Deployment revision annotations)
    before = mixed_shapes.apiserver_writes(metrics(env), mixed_shapes.RESOURCES)
    for tick in range(6):   # each COS change makes the reconciler walk all 210 objects again
        env["kube"].merge_patch(COS_API, KIND, full, None, {"metadata": {"annotations": {"e2e/tick": str(tick)}}})
        time.sleep(10)
    after = mixed_shapes.apiserver_writes(metrics(env), mixed_shapes.RESOURCES)
    delta = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after if after.get(k, 0.0) != before.get(k, 0.0)}
    assert delta == {}
    env["kube"].delete(COS_API, KIND, full)
    wait_for(lambda: gone(env["kube"], COS_API, KIND, full), 300, "the 210-object COS to be torn down")
