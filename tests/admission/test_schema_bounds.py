"""Every structural constraint of the schema at its boundary, with the API server's exact field errors."""

from __future__ import annotations

import pytest

from tests.admission.helpers import base_cos, errors_of, probe

CM = {"object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}}}


def _objects(n: int) -> list[dict]:
    return [{"object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}", "namespace": "ns"}}}
            for i in range(n)]


def test_20_phases_allowed_21_denied() -> None:
    assert errors_of(base_cos(phases=[{"name": f"p{i}", "objects": []} for i in range(20)])) == []
    assert errors_of(base_cos(phases=[{"name": f"p{i}", "objects": []} for i in range(21)])) == [
        "spec.phases: Too many: 21: must have at most 20 items"]


def test_50_objects_allowed_51_denied() -> None:
    assert errors_of(base_cos(phases=[{"name": "p", "objects": _objects(50)}])) == []
    assert errors_of(base_cos(phases=[{"name": "p", "objects": _objects(51)}])) == [
        "spec.phases[0].objects: Too many: 51: must have at most 50 items"]


def test_phase_name_63_allowed_64_denied_empty_denied() -> None:
    assert errors_of(base_cos(phases=[{"name": "a" * 63, "objects": []}])) == []
    assert errors_of(base_cos(phases=[{"name": "a" * 64, "objects": []}])) == [
        "spec.phases[0].name: Too long: may not be more than 63 bytes"]
    errs = errors_of(base_cos(phases=[{"name": "", "objects": []}]))
    assert errs[0] == (
        'spec.phases[0].name: Invalid value: "": spec.phases[0].name in body should be at least 1 chars long')


@pytest.mark.parametrize("field,limit", [("name", 253), ("key", 253), ("namespace", 63)])
def test_ref_field_lengths(field: str, limit: int) -> None:
    def cos_with(value: str) -> dict:
        ref = {"name": "s", "namespace": "ns", "key": "k", field: value}
        return base_cos(phases=[{"name": "p", "objects": [{"ref": ref}]}])

    assert errors_of(cos_with("a" * limit)) == []
    assert errors_of(cos_with("a" * (limit + 1))) == [
        f"spec.phases[0].objects[0].ref.{field}: Too long: may not be more than {limit} bytes"]


@pytest.mark.parametrize("field", ["name", "key"])
def test_ref_name_and_key_required_and_non_empty(field: str) -> None:
    ref = {"name": "s", "key": "k"}
    del ref[field]
    assert errors_of(base_cos(phases=[{"name": "p", "objects": [{"ref": ref}]}])) == [
        f"spec.phases[0].objects[0].ref.{field}: Required value"]
    ref[field] = ""
    assert errors_of(base_cos(phases=[{"name": "p", "objects": [{"ref": ref}]}])) == [
        f'spec.phases[0].objects[0].ref.{field}: Invalid value: "": '
        f"spec.phases[0].objects[0].ref.{field} in body should be at least 1 chars long"]


@pytest.mark.parametrize("minutes,ok", [(9, False), (10, True), (720, True), (721, False)])
def test_progress_deadline_bounds(minutes: int, ok: bool) -> None:
    errs = errors_of(base_cos(progressDeadlineMinutes=minutes))
    if ok:
        assert errs == []
    elif minutes < 10:
        assert errs == [f"spec.progressDeadlineMinutes: Invalid value: {minutes}: "
                        "spec.progressDeadlineMinutes in body should be greater than or equal to 10"]
    else:
        assert errs == [f"spec.progressDeadlineMinutes: Invalid value: {minutes}: "
                        "spec.progressDeadlineMinutes in body should be less than or equal to 720"]


def test_revision_minimum_and_required() -> None:
    assert errors_of(base_cos(revision=1)) == []
    assert errors_of(base_cos(revision=0)) == [
        "spec.revision: Invalid value: 0: spec.revision in body should be greater than or equal to 1"]
    obj = base_cos()
    del obj["spec"]["revision"]
    assert errors_of(obj) == ["spec.revision: Required value"]


def test_revision_beyond_int64_is_denied() -> None:
    assert errors_of(base_cos(revision=2**63)) == [
        f'spec.revision: Invalid value: {2**63}: spec.revision in body must be of type int64: "{2**63}"']


def test_enums() -> None:
    assert errors_of(base_cos(lifecycleState="Paused")) == [
        'spec.lifecycleState: Unsupported value: "Paused": supported values: "Active", "Archived"']
    assert errors_of(base_cos(collisionProtection="Always")) == [
        'spec.collisionProtection: Unsupported value: "Always": supported values: "Prevent", "IfNoController", "None"']
    obj = base_cos()
    obj["spec"]["phases"][0]["collisionProtection"] = "x"
    obj["spec"]["phases"][0]["objects"][0]["collisionProtection"] = "y"
    assert errors_of(obj) == [  # the API server's order: properties by name (collisionProtection, objects)
        # Whole API-server messages, one a line: split, a missing comma would silently join two of them.
        'spec.phases[0].collisionProtection: Unsupported value: "x": supported values: "Prevent", "IfNoController", "None"',  # noqa: E501
        'spec.phases[0].objects[0].collisionProtection: Unsupported value: "y": supported values: "Prevent", "IfNoController", "None"',  # noqa: E501
    ]


def test_duplicate_phase_names() -> None:
    obj = base_cos(phases=[{"name": "deploy", "objects": []}, {"name": "deploy", "objects": []}])
    assert errors_of(obj) == ['spec.phases[1]: Duplicate value: {"name":"deploy"}']


def test_wrong_types_report_the_type_only() -> None:
    assert errors_of(base_cos(revision="1")) == [
        'spec.revision: Invalid value: "string": spec.revision in body must be of type integer: "string"']
    assert errors_of(base_cos(phases="deploy")) == [
        'spec.phases: Invalid value: "string": spec.phases in body must be of type array: "string"']
    assert errors_of(base_cos(lifecycleState=5)) == [
        'spec.lifecycleState: Invalid value: "integer": spec.lifecycleState in body must be of type string: "integer"']


def test_nulls_are_pruned_as_the_api_server_prunes_them() -> None:
    # a null in a declared field never reaches admission on a cluster: it is as if the field were absent
    assert errors_of(base_cos(lifecycleState=None)) == ["spec.lifecycleState: Required value"]
    assert errors_of(base_cos(progressDeadlineMinutes=None, progressionProbes=None)) == []


def test_spec_required_and_must_be_an_object() -> None:
    obj = base_cos()
    del obj["spec"]
    assert errors_of(obj) == ["spec: Required value"]
    obj["spec"] = []
    assert errors_of(obj) == ['spec: Invalid value: "array": spec in body must be of type object: "array"']


@pytest.mark.parametrize("n,ok", [(1, True), (20, True), (21, False)])
def test_probes_and_assertions_counts(n: int, ok: bool) -> None:
    assertion = {"type": "ConditionEqual", "conditionEqual": {"type": "Ready", "status": "True"}}
    errs = errors_of(base_cos(progressionProbes=[probe() for _ in range(n)]))
    assert errs == ([] if ok else ["spec.progressionProbes: Too many: 21: must have at most 20 items"])
    errs = errors_of(base_cos(progressionProbes=[probe(assertions=[assertion] * n)]))
    assert errs == ([] if ok else ["spec.progressionProbes[0].assertions: Too many: 21: must have at most 20 items"])


def test_empty_probe_lists_denied() -> None:
    assert errors_of(base_cos(progressionProbes=[])) == [
        "spec.progressionProbes: Invalid value: 0: spec.progressionProbes in body should have at least 1 items"]
    assert errors_of(base_cos(progressionProbes=[probe(assertions=[])])) == [
        "spec.progressionProbes[0].assertions: Invalid value: 0: "
        "spec.progressionProbes[0].assertions in body should have at least 1 items"]


@pytest.mark.parametrize("field,limit", [("type", 200)])
def test_condition_equal_type_length(field: str, limit: int) -> None:
    def cos_with(value: str) -> dict:
        a = {"type": "ConditionEqual", "conditionEqual": {"type": value, "status": "True"}}
        return base_cos(progressionProbes=[probe(assertions=[a])])

    assert errors_of(cos_with("a" * limit)) == []
    assert errors_of(cos_with("a" * (limit + 1))) == [
        "spec.progressionProbes[0].assertions[0].conditionEqual.type: Too long: may not be more than 200 bytes"]


def test_field_value_value_and_path_lengths() -> None:
    def cos_with(path: str, value: str) -> dict:
        a = {"type": "FieldValue", "fieldValue": {"fieldPath": path, "value": value}}
        return base_cos(progressionProbes=[probe(assertions=[a])])

    assert errors_of(cos_with("a" * 200, "v" * 200)) == []
    # the over-long path breaks the length bound and, judged anyway, the field-path rule: both are listed
    assert errors_of(cos_with("a" * 201, "v")) == [
        "spec.progressionProbes[0].assertions[0].fieldValue.fieldPath: Too long: may not be more than 200 bytes"]
    assert errors_of(cos_with("a", "v" * 201)) == [
        "spec.progressionProbes[0].assertions[0].fieldValue.value: Too long: may not be more than 200 bytes"]


def test_condition_status_enum() -> None:
    a = {"type": "ConditionEqual", "conditionEqual": {"type": "Ready", "status": "Unknown"}}
    assert errors_of(base_cos(progressionProbes=[probe(assertions=[a])])) == [
        'spec.progressionProbes[0].assertions[0].conditionEqual.status: Unsupported value: "Unknown": '
        'supported values: "True", "False"']


def test_all_violations_reported_at_once() -> None:
    obj = base_cos(revision=0, lifecycleState="Paused", phases=[{"name": "-x", "objects": [{}]}])
    assert errors_of(obj) == [  # schema errors by property name, then the CEL rules a cluster would skip
        'spec.lifecycleState: Unsupported value: "Paused": supported values: "Active", "Archived"',
        "spec.revision: Invalid value: 0: spec.revision in body should be greater than or equal to 1",
        'spec.phases[0].name: Invalid value: "-x": the value must consist of only lowercase alphanumeric '
        "characters and hyphens, and must start and end with an alphanumeric character.",
        "spec.phases[0].objects[0]: Invalid value: exactly one of the fields in [object ref] must be set",
    ]
