"""The mutating webhook's defaults: exact JSONPatch operations, idempotence."""

from __future__ import annotations

import copy

import jsonpatch

from common.contract.admission import Config, Request, mutate
from tests.admission.helpers import base_cos


def _refs_cos() -> dict:
    obj = base_cos(phases=[{"name": "p", "objects": [
        {"ref": {"name": "a", "key": "k"}},
        {"ref": {"name": "b", "namespace": "", "key": "k"}},
        {"ref": {"name": "c", "namespace": "elsewhere", "key": "k"}},
    ]}])
    del obj["spec"]["lifecycleState"], obj["spec"]["collisionProtection"]
    return obj


def test_defaults_patch() -> None:
    d = mutate(Request("ClusterObjectSet", "CREATE", _refs_cos()), Config(system_namespace="olm"))
    assert d.allowed
    assert d.patch == (
        {"op": "add", "path": "/spec/lifecycleState", "value": "Active"},
        {"op": "add", "path": "/spec/collisionProtection", "value": "Prevent"},
        {"op": "add", "path": "/spec/phases/0/objects/0/ref/namespace", "value": "olm"},
        {"op": "replace", "path": "/spec/phases/0/objects/1/ref/namespace", "value": "olm"},
    )
    assert d.warnings == ('spec.lifecycleState was not set; defaulted to "Active"',
                          'spec.collisionProtection was not set; defaulted to "Prevent"')


def test_mutation_is_idempotent() -> None:
    obj = _refs_cos()
    first = mutate(Request("ClusterObjectSet", "CREATE", obj))
    once = jsonpatch.apply_patch(copy.deepcopy(obj), list(first.patch))
    again = mutate(Request("ClusterObjectSet", "CREATE", once))
    assert again.patch == () and again.warnings == ()


def test_update_and_malformed_are_not_mutated() -> None:
    assert mutate(Request("ClusterObjectSet", "UPDATE", _refs_cos(), _refs_cos())).patch == ()
    assert mutate(Request("ClusterObjectSet", "CREATE", {"spec": "x"})).patch == ()
    assert mutate(Request("ClusterObjectSet", "CREATE", {"spec": {"phases": [1, {"objects": "x"}]}})).patch == (
        {"op": "add", "path": "/spec/lifecycleState", "value": "Active"},
        {"op": "add", "path": "/spec/collisionProtection", "value": "Prevent"},
    )
