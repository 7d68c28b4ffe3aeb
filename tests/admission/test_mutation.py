"""The mutating webhook's defaults: exact JSONPatch operations, idempotence."""

from __future__ import annotations

import copy

import jsonpatch

from common.contract.admission import Config, Request, mutate
from tests.admission.helpers import base_cos, check, reviewed


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


def test_update_defaults_only_the_refs_namespace() -> None:
    d = mutate(Request("ClusterObjectSet", "UPDATE", _refs_cos(), _refs_cos()), Config(system_namespace="olm"))
    assert d.patch == (
        {"op": "add", "path": "/spec/phases/0/objects/0/ref/namespace", "value": "olm"},
        {"op": "replace", "path": "/spec/phases/0/objects/1/ref/namespace", "value": "olm"},
    )
    assert d.warnings == ()


def test_reapplying_the_unchanged_file_is_allowed() -> None:
    """``kubectl apply`` of the file a COS was created from sends its refs without the namespace the mutating
    webhook added on CREATE; phases are immutable, so only the same default on UPDATE lets that through."""
    created = _refs_cos()
    created = jsonpatch.apply_patch(created, list(mutate(Request("ClusterObjectSet", "CREATE", created)).patch))
    again = _refs_cos()
    again["spec"].update(lifecycleState="Active", collisionProtection="Prevent")  # kept by kubectl's 3-way merge
    unmutated = check(again, created)
    assert not unmutated.allowed and "spec.phases: Invalid value: phases is immutable" in unmutated.status["message"]
    assert reviewed(again, created).allowed


def test_malformed_and_secret_updates_are_not_mutated() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "olm.operatorframework.io/object-data"}
    assert mutate(Request("Secret", "UPDATE", secret, secret)).patch == ()
    assert mutate(Request("Secret", "CREATE", secret)).patch == ({"op": "add", "path": "/immutable", "value": True},)
    assert mutate(Request("ClusterObjectSet", "CREATE", {"spec": "x"})).patch == ()
    assert mutate(Request("ClusterObjectSet", "CREATE", {"spec": {"phases": [1, {"objects": "x"}]}})).patch == (
        {"op": "add", "path": "/spec/lifecycleState", "value": "Active"},
        {"op": "add", "path": "/spec/collisionProtection", "value": "Prevent"},
    )
