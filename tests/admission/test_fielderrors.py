"""Field errors print exactly as the Kubernetes API server prints them."""

from __future__ import annotations

from common.contract.fielderrors import (
    OMIT,
    aggregate_message,
    duplicate,
    forbidden,
    go_quote,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)


def test_formats_from_the_spec() -> None:
    assert str(invalid("spec.phases[0].objects[0]", OMIT, "exactly one of the fields in [object ref] must be set")) == \
        "spec.phases[0].objects[0]: Invalid value: exactly one of the fields in [object ref] must be set"
    assert str(invalid("spec.revision", 0, "x")) == "spec.revision: Invalid value: 0: x"
    assert str(not_supported("spec.lifecycleState", "Paused", ["Active", "Archived"])) == \
        'spec.lifecycleState: Unsupported value: "Paused": supported values: "Active", "Archived"'
    assert str(required("spec.revision")) == "spec.revision: Required value"
    assert str(too_many("spec.phases", 21, 20)) == "spec.phases: Too many: 21: must have at most 20 items"
    assert str(too_long("spec.phases[0].name", 63)) == "spec.phases[0].name: Too long: may not be more than 63 bytes"
    assert str(duplicate("spec.phases[1]", {"name": "deploy"})) == 'spec.phases[1]: Duplicate value: {"name":"deploy"}'
    assert str(forbidden("a.b", "must be empty")) == "a.b: Forbidden: must be empty"
    assert type_invalid("a", "string", "m").cause() == {"reason": "FieldValueTypeInvalid",
                                                        "message": 'Invalid value: "string": m', "field": "a"}


def test_values() -> None:
    assert str(invalid("a", True, "m")) == "a: Invalid value: true: m"
    assert str(invalid("a", None, "m")) == "a: Invalid value: null: m"
    assert str(invalid("a", 1.5, "m")) == "a: Invalid value: 1.5: m"
    assert go_quote('say "hi"\n\x00é') == '"say \\"hi\\"\\n\\x00é"'


def test_aggregate_dedups_and_brackets() -> None:
    a, b = required("a"), required("b")
    assert aggregate_message([a]) == "a: Required value"
    assert aggregate_message([a, b, a]) == "[a: Required value, b: Required value]"
