"""End-to-end: rollouts that depend on things outside the COS on a real cluster.

A COS object in a namespace nobody created yet: the API server refuses the create, the COS says so (Retrying
with the server's own text) and rolls out once the namespace appears, with no change to the COS. (A CRD in an
earlier phase and its CR in a later one is in ``test_e2e_reconciler_probes.py``.)
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import CM, cm, cos_name, exists, make_cos, wait_brief, wait_succeeded

pytestmark = pytest.mark.e2e


def test_object_in_a_namespace_created_later(env: dict[str, Any]) -> None:
    kube = env["kube"]
    ns = f"cos-e2e-later-{env['run']}"
    env["namespaces"].append(ns)
    name = cos_name(env, "ns-later")
    make_cos(env, "ns-later", 1, [{"name": "one", "objects": [{"object": cm(ns, "early")}]}])
    wait_brief(env, name, ("True", "Retrying", f'creating Object ConfigMap.v1 {ns}/early: namespaces "{ns}" not found'))
    assert not exists(env, ("v1", "Namespace"), ns, None)
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    wait_succeeded(env, name, timeout=180)
    assert exists(env, CM, "early", ns)
