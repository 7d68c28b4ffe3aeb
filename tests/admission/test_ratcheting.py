"""Validation ratcheting of unchanged phases, as Kubernetes 1.30+ ratchets CRD validation."""

from __future__ import annotations

import copy

from common.contract.samples import maximal_cos
from common.contract.validation.cel_rules import json_equal
from tests.admission.helpers import base_cos, check, errors_of, update


def _legacy_cos() -> dict:
    """A COS admitted before the webhook existed: the same ConfigMap twice and a forbidden uid."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", "uid": "u"}}
    return base_cos(phases=[{"name": "deploy", "objects": [{"object": cm}, {"object": copy.deepcopy(cm)}]}])


def test_unchanged_phases_are_not_judged_again() -> None:
    old = _legacy_cos()
    assert errors_of(old) != []  # as a CREATE it is denied
    new, _ = update(old, lambda o: o["spec"].update(lifecycleState="Archived"))
    assert errors_of(new, old) == []  # archiving it must still be possible


def test_other_fields_are_still_judged_when_phases_are_unchanged() -> None:
    old = _legacy_cos()
    new, _ = update(old, lambda o: o["spec"].update(progressDeadlineMinutes=5, revision=7))
    assert errors_of(new, old) == [  # the API server's order: the schema's errors, then CEL's
        "spec.progressDeadlineMinutes: Invalid value: 5: "
        "spec.progressDeadlineMinutes in body should be greater than or equal to 10",
        "spec.revision: Invalid value: 7: revision is immutable",
    ]


def test_changed_phases_are_judged_in_full() -> None:
    old = base_cos(phases=[])
    new, _ = update(_legacy_cos(), lambda o: None)
    assert errors_of(new, old) == [
        "spec.phases[0].objects[0].object.metadata.uid: Forbidden: must be empty",
        "spec.phases[0].objects[1]: Duplicate value: "
        '{"group":"","kind":"ConfigMap","name":"a","namespace":"ns"}: the same object is already at '
        "spec.phases[0].objects[0]",
        "spec.phases[0].objects[1].object.metadata.uid: Forbidden: must be empty",
    ]


def test_ratcheting_compares_deeply() -> None:
    old = maximal_cos()
    new = copy.deepcopy(old)
    new["spec"]["phases"][19]["objects"][49]["object"]["spec"]["replicas"] = 3
    assert errors_of(new, old) == ["spec.phases: Invalid value: phases is immutable"]


def test_size_warning_is_given_once_at_creation() -> None:
    cos = maximal_cos()
    assert len(check(cos).warnings) == 1
    new, old = update(cos, lambda o: o["metadata"].update(labels={"team": "a"}))
    assert check(new, old).warnings == ()


def test_lone_surrogates_are_judged_not_crashed_on() -> None:
    obj = base_cos(phases=[{"name": "x\ud800", "objects": []}])
    obj["metadata"]["name"] = "a\ud800"
    assert errors_of(obj) == [
        'spec.phases[0].name: Invalid value: "x\ufffd": the value must consist of only lowercase alphanumeric '
        "characters and hyphens, and must start and end with an alphanumeric character."]


def test_unchanged_means_equal_values_of_equal_kinds() -> None:
    """What ratcheting calls "unchanged": ``==`` with a boolean never equal to a number, whatever the key
    order, and also for values orjson cannot encode (integers beyond 64 bits, lone surrogates)."""
    assert json_equal({"a": 1, "b": [True, "x"]}, {"b": [True, "x"], "a": 1})
    assert json_equal([1], [1.0])
    assert not json_equal([1], [True])
    assert not json_equal({"a": {"b": False}}, {"a": {"b": 0}})
    assert json_equal({"n": 2**70, "s": "x\ud800"}, {"s": "x\ud800", "n": 2**70})
    assert not json_equal({"n": 2**70, "f": 1}, {"n": 2**70, "f": True})
    assert not json_equal({"a": 1}, {"a": 2})


def test_an_update_of_a_deeply_nested_manifest_is_judged_like_its_create() -> None:
    """orjson encodes 255 levels at most: deeper values are compared by marshal and a loop, never by recursion
    (an UPDATE that CREATE admitted was a RecursionError: a 400 from the webhook, so never archivable)."""
    def nested(leaf: object = "x") -> object:
        value = leaf
        for _ in range(800):
            value = {"a": value}
        return value

    def cos(state: str) -> dict:
        widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                  "spec": nested()}
        obj = base_cos(phases=[{"name": "deploy", "objects": [{"object": widget}]}])
        obj["spec"]["lifecycleState"] = state
        return obj

    assert errors_of(cos("Active")) == []
    assert errors_of(cos("Archived"), cos("Active")) == []
    assert json_equal(nested([True]), nested([True]))
    assert not json_equal(nested([True]), nested([1]))
