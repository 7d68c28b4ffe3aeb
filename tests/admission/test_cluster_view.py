"""What a cluster shows: the API server's own stages and order (``admission.on_cluster``), and kubectl's text
for a denial (``common.contract.kubectl``). Every expected list below was captured from a Kubernetes 1.36 API
server with this project's CRD (dry-run creates); the e2e test ``tests/e2e/test_e2e_admission.py`` checks the
examples against a live one."""

from __future__ import annotations

from typing import Any

import pytest

from common.contract import kubectl
from common.contract.admission import Request, on_cluster
from common.contract.validation import crd_errors, validate_cos
from tests.admission.helpers import base_cos, errors_of

NIL = ("<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
       "correct the existing errors to complete validation")
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}


def enum_violations() -> dict[str, Any]:
    obj = base_cos()
    obj["spec"]["phases"][0]["collisionProtection"] = "x"
    obj["spec"]["phases"][0]["objects"][0]["collisionProtection"] = "y"
    return obj


CASES = {
    # blocking (enum): CEL is skipped and the API server says so
    "enums": (enum_violations(), [
        'spec.phases[0].collisionProtection: Unsupported value: "x": supported values: "Prevent", '
        '"IfNoController", "None"',
        'spec.phases[0].objects[0].collisionProtection: Unsupported value: "y": supported values: "Prevent", '
        '"IfNoController", "None"',
        NIL]),
    # a minimum is not blocking; list-map duplicates come after the schema's errors, whatever their names
    "minimum and duplicate phase": (
        base_cos(revision=0, phases=[{"name": "deploy", "objects": []}, {"name": "deploy", "objects": []}]), [
            "spec.revision: Invalid value: 0: spec.revision in body should be greater than or equal to 1",
            'spec.phases[1]: Duplicate value: {"name":"deploy"}']),
    "enum and minimum": (base_cos(revision=0, lifecycleState="Paused", phases=[{"name": "-x", "objects": [{}]}]), [
        'spec.lifecycleState: Unsupported value: "Paused": supported values: "Active", "Archived"',
        "spec.revision: Invalid value: 0: spec.revision in body should be greater than or equal to 1",
        NIL]),
    # CEL only: properties by name at each level (assertions before selector), whatever the manifest's order
    "cel": (base_cos(phases=[{"name": "-x", "objects": [{}]}], progressionProbes=[{
        "selector": {"type": "Label", "groupKind": {"group": "", "kind": "Pod"}},
        "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "a..b", "value": "1"}}]}]), [
        'spec.phases[0].name: Invalid value: "-x": the value must consist of only lowercase alphanumeric '
        "characters and hyphens, and must start and end with an alphanumeric character.",
        "spec.phases[0].objects[0]: Invalid value: exactly one of the fields in [object ref] must be set",
        'spec.progressionProbes[0].assertions[0].fieldValue.fieldPath: Invalid value: "a..b": must contain a '
        'valid field path. valid fields contain upper or lower-case alphanumeric characters separated by the "." '
        "character.",
        "spec.progressionProbes[0].selector: Invalid value: groupKind is required when type is GroupKind, and "
        "forbidden otherwise",
        "spec.progressionProbes[0].selector: Invalid value: label is required when type is Label, and forbidden "
        "otherwise"]),
    # list items by index: [2] before [10]
    "indexes": (base_cos(phases=[{"name": f"p{i}" if i not in (2, 10) else f"-x{i}", "objects": []}
                                 for i in range(12)]), [
        f'spec.phases[{i}].name: Invalid value: "-x{i}": the value must consist of only lowercase alphanumeric '
        "characters and hyphens, and must start and end with an alphanumeric character." for i in (2, 10)]),
    # an embedded manifest without apiVersion and kind: Required, no detail, and blocking
    "no apiVersion, no kind": (base_cos(phases=[{"name": "a", "objects": [{"object": {"metadata": {"name": "x"}}}]}]), [
        "spec.phases[0].objects[0].object.apiVersion: Required value",
        "spec.phases[0].objects[0].object.kind: Required value",
        NIL]),
    "empty kind": (base_cos(phases=[{"name": "a", "objects": [{"object": {**CM, "kind": ""}}]}]), [
        'spec.phases[0].objects[0].object.kind: Invalid value: "": must not be empty']),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_api_servers_own_answer_in_its_order(name: str) -> None:
    obj, expected = CASES[name]
    assert [str(e) for e in crd_errors(obj)] == expected
    answer = on_cluster(Request("ClusterObjectSet", "CREATE", obj, name="demo"))
    assert (answer.stage, answer.decision.allowed) == ("crd", False)
    assert [f'{c["field"]}: {c["message"]}' for c in answer.decision.status["details"]["causes"]] == expected


@pytest.mark.parametrize("name", list(CASES))
def test_the_webhook_and_cosctl_list_the_same_errors_first_and_in_the_same_order(name: str) -> None:
    obj, expected = CASES[name]
    every = errors_of(obj)
    shown = [e for e in expected if e != NIL]
    assert every[:len(shown)] == shown


def test_what_the_crd_cannot_see_is_the_validating_webhooks_answer() -> None:
    obj = base_cos(phases=[{"name": "a", "objects": [{"object": CM}]}, {"name": "b", "objects": [{"object": CM}]}])
    assert crd_errors(obj) == []
    answer = on_cluster(Request("ClusterObjectSet", "CREATE", obj, name="demo"))
    assert answer.stage == "validate"
    assert [str(e) for e in answer.decision.errors] == [str(e) for e in validate_cos(obj)[0]] == [
        'spec.phases[1].objects[0]: Duplicate value: {"group":"","kind":"ConfigMap","name":"x",'
        '"namespace":"default"}: the same object is already at spec.phases[0].objects[0]']


def test_defaults_are_applied_before_the_crd_judges() -> None:
    obj = base_cos()
    del obj["spec"]["lifecycleState"], obj["spec"]["collisionProtection"]
    answer = on_cluster(Request("ClusterObjectSet", "CREATE", obj, name="demo"))
    assert (answer.stage, answer.decision.allowed) == ("validate", True)
    assert answer.decision.warnings == ('spec.lifecycleState was not set; defaulted to "Active"',
                                        'spec.collisionProtection was not set; defaulted to "Prevent"')


def status(*causes: tuple[str, str]) -> dict[str, Any]:
    return {"reason": "Invalid", "code": 422, "message": "ignored by kubectl",
            "details": {"kind": "ClusterObjectSet", "name": "many-1",
                        "causes": [{"field": f, "message": m, "reason": "FieldValueInvalid"} for f, m in causes]}}


def test_kubectl_prints_one_cause_on_the_line() -> None:
    assert kubectl.error_text(status(("spec.revision", "Invalid value: 0: too small"))) == (
        'The ClusterObjectSet "many-1" is invalid: spec.revision: Invalid value: 0: too small')


def test_kubectl_lists_several_causes_below_a_prefix_ending_in_a_space() -> None:
    assert kubectl.error_text(status(("a", "Required value"), ("<nil>", "Invalid value: null: x"))) == (
        'The ClusterObjectSet "many-1" is invalid: \n* a: Required value\n* <nil>: Invalid value: null: x')


def test_kubectl_prints_other_errors_with_their_reason_and_the_request() -> None:
    bad = {"reason": "BadRequest", "code": 400, "message": "UPDATE request without request.oldObject"}
    assert kubectl.error_text(bad, verb="patching", source="x.yaml") == (
        'Error from server (BadRequest): error when patching "x.yaml": UPDATE request without request.oldObject')
