"""Every row of the CEL table (shared/spec/api-and-admission.md section 2): allowed and denied, exact text."""

from __future__ import annotations

import pytest

from common.contract import schema
from tests.admission.helpers import base_cos, errors_of, probe, update

DNS_MSG = ("the value must consist of only lowercase alphanumeric characters and hyphens, and must start and "
           "end with an alphanumeric character.")
FIELD_PATH_MSG = ('must contain a valid field path. valid fields contain upper or lower-case alphanumeric '
                  'characters separated by the "." character.')


def test_table_holds_exactly_the_spec_rules() -> None:
    rules = {(path, msg) for path, _, msg in schema.iter_rules()}
    assert rules == {
        (".spec.revision", "revision is immutable"),
        (".spec.lifecycleState", "cannot un-archive"),
        (".spec.collisionProtection", "collisionProtection is immutable"),
        (".spec.phases", "phases is immutable"),
        (".spec.phases[].name", DNS_MSG),
        (".spec.phases[].objects[]", "exactly one of the fields in [object ref] must be set"),
        (".spec.progressionProbes[].selector", "groupKind is required when type is GroupKind, and forbidden otherwise"),
        (".spec.progressionProbes[].selector", "label is required when type is Label, and forbidden otherwise"),
        (".spec.progressionProbes[].selector.label", "exactly one of matchLabels or matchExpressions must be set"),
        (".spec.progressionProbes[].assertions[]",
         "conditionEqual is required when type is ConditionEqual, and forbidden otherwise"),
        (".spec.progressionProbes[].assertions[]",
         "fieldsEqual is required when type is FieldsEqual, and forbidden otherwise"),
        (".spec.progressionProbes[].assertions[]",
         "fieldValue is required when type is FieldValue, and forbidden otherwise"),
        (".spec.progressionProbes[].assertions[].fieldsEqual.fieldA", FIELD_PATH_MSG),
        (".spec.progressionProbes[].assertions[].fieldsEqual.fieldB", FIELD_PATH_MSG),
        (".spec.progressionProbes[].assertions[].fieldValue.fieldPath", FIELD_PATH_MSG),
        (".status.observedPhases", "observedPhases is immutable"),
        (".status.observedPhases[].digest", "digest must be in the format '<algorithm>:<hex>'"),
    }


def test_rule_texts_are_upstreams() -> None:
    texts = {r for _, r, _ in schema.iter_rules()}
    assert "[has(self.object),has(self.ref)].filter(x,x==true).size() == 1" in texts
    assert "oldSelf == 'Active' || oldSelf == 'Archived' && oldSelf == self" in texts
    assert "self.matches('^[a-zA-Z0-9]+(?:\\\\.[a-zA-Z0-9]+)*$')" in texts
    assert "self.type == 'GroupKind' ?has(self.groupKind) : !has(self.groupKind)" in texts


def test_valid_cos_is_allowed() -> None:
    assert errors_of(base_cos()) == []


# --- transition rules -------------------------------------------------------------------------------------

def test_revision_is_immutable() -> None:
    new, old = update(base_cos(), lambda o: o["spec"].update(revision=2))
    assert errors_of(new, old) == ["spec.revision: Invalid value: 2: revision is immutable"]


def test_collision_protection_is_immutable() -> None:
    new, old = update(base_cos(), lambda o: o["spec"].update(collisionProtection="None"))
    assert errors_of(new, old) == ['spec.collisionProtection: Invalid value: "None": collisionProtection is immutable']


def test_active_to_archived_is_allowed() -> None:
    new, old = update(base_cos(), lambda o: o["spec"].update(lifecycleState="Archived"))
    assert errors_of(new, old) == []


def test_archived_to_archived_is_allowed() -> None:
    new, old = update(base_cos(lifecycleState="Archived"), lambda o: o["metadata"].update(labels={"a": "b"}))
    assert errors_of(new, old) == []


def test_archived_to_active_is_denied() -> None:
    new, old = update(base_cos(lifecycleState="Archived"), lambda o: o["spec"].update(lifecycleState="Active"))
    assert errors_of(new, old) == ['spec.lifecycleState: Invalid value: "Active": cannot un-archive']


def test_transition_rules_never_run_on_create() -> None:
    # revision 5 on CREATE: oldSelf does not exist, so "self == oldSelf" must not fire.
    assert errors_of(base_cos(revision=5, lifecycleState="Archived")) == []


def test_phases_set_when_previously_absent_is_allowed() -> None:
    old = base_cos()
    del old["spec"]["phases"]
    new, _ = update(old, lambda o: o["spec"].update(phases=base_cos()["spec"]["phases"]))
    assert errors_of(new, old) == []


def test_phases_set_when_previously_empty_is_allowed() -> None:
    old = base_cos(phases=[])
    new, _ = update(old, lambda o: o["spec"].update(phases=base_cos()["spec"]["phases"]))
    assert errors_of(new, old) == []


@pytest.mark.parametrize("change", [
    pytest.param(lambda o: o["spec"]["phases"][1]["objects"][0]["object"]["metadata"].update(name="cm2"), id="object"),
    pytest.param(lambda o: o["spec"]["phases"][0].update(collisionProtection="None"), id="phase-field"),
    pytest.param(lambda o: o["spec"]["phases"].append({"name": "more", "objects": []}), id="append"),
    pytest.param(lambda o: o["spec"].update(phases=[]), id="emptied"),
    pytest.param(lambda o: o["spec"]["phases"].reverse(), id="reorder"),
    pytest.param(lambda o: o["spec"].pop("phases"), id="removed"),
])
def test_any_change_of_non_empty_phases_is_denied(change) -> None:
    old = base_cos(phases=[{"name": "a", "objects": []}, *base_cos()["spec"]["phases"]])
    new, _ = update(old, change)
    assert errors_of(new, old) == ["spec.phases: Invalid value: phases is immutable"]


def test_observed_phases_are_immutable_once_set() -> None:
    old = base_cos()
    old["status"] = {"observedPhases": [{"name": "deploy", "digest": "sha256:ab"}]}
    new, _ = update(old, lambda o: o["status"]["observedPhases"][0].update(digest="sha256:cd"))
    assert errors_of(new, old) == ["status.observedPhases: Invalid value: observedPhases is immutable"]
    first = base_cos()
    first["status"] = {"observedPhases": []}
    new, _ = update(first, lambda o: o["status"].update(observedPhases=[{"name": "deploy", "digest": "sha256:ab"}]))
    assert errors_of(new, first) == []


def test_digest_format() -> None:
    obj = base_cos()
    obj["status"] = {"observedPhases": [{"name": "deploy", "digest": "SHA256:xyz"}]}
    assert errors_of(obj) == ['status.observedPhases[0].digest: Invalid value: "SHA256:xyz": '
                              "digest must be in the format '<algorithm>:<hex>'"]
    obj["status"]["observedPhases"][0]["digest"] = "sha256:0123abcdef"
    assert errors_of(obj) == []


# --- phase names --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["-invalid", "invalid-", "Upper", "under_score", "dot.ted"])
def test_phase_name_must_be_dns_label(name: str) -> None:
    obj = base_cos()
    obj["spec"]["phases"][0]["name"] = name
    assert errors_of(obj) == [f'spec.phases[0].name: Invalid value: "{name}": {DNS_MSG}']


@pytest.mark.parametrize("name", ["a", "deploy", "a-b-c", "1st", "x" * 63])
def test_phase_name_valid(name: str) -> None:
    obj = base_cos()
    obj["spec"]["phases"][0]["name"] = name
    assert errors_of(obj) == []


# --- object entries -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", [
    pytest.param({}, id="neither"),
    pytest.param({"object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
                  "ref": {"name": "s", "key": "k"}}, id="both"),
    pytest.param({"collisionProtection": "None"}, id="only-collision-protection"),
])
def test_exactly_one_of_object_and_ref(entry) -> None:
    obj = base_cos()
    obj["spec"]["phases"][0]["objects"] = [entry]
    assert errors_of(obj) == [
        "spec.phases[0].objects[0]: Invalid value: exactly one of the fields in [object ref] must be set"]


def test_ref_alone_is_allowed() -> None:
    obj = base_cos()
    obj["spec"]["phases"][0]["objects"] = [{"ref": {"name": "s", "namespace": "olmv1-system", "key": "k"}}]
    assert errors_of(obj) == []


# --- probes -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("selector,message", [
    ({"type": "GroupKind"}, "groupKind is required when type is GroupKind, and forbidden otherwise"),
    ({"type": "Label", "label": {"matchLabels": {"a": "b"}}, "groupKind": {"group": "", "kind": "Pod"}},
     "groupKind is required when type is GroupKind, and forbidden otherwise"),
    ({"type": "Label"}, "label is required when type is Label, and forbidden otherwise"),
    ({"type": "GroupKind", "groupKind": {"group": "", "kind": "Pod"}, "label": {"matchLabels": {"a": "b"}}},
     "label is required when type is Label, and forbidden otherwise"),
])
def test_selector_body_matches_type(selector, message) -> None:
    obj = base_cos(progressionProbes=[probe(selector)])
    assert errors_of(obj) == [f"spec.progressionProbes[0].selector: Invalid value: {message}"]


@pytest.mark.parametrize("label", [
    {},
    {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "a", "operator": "Exists"}]},
])
def test_label_selector_needs_exactly_one_form(label) -> None:
    obj = base_cos(progressionProbes=[probe({"type": "Label", "label": label})])
    assert errors_of(obj) == ["spec.progressionProbes[0].selector.label: Invalid value: "
                              "exactly one of matchLabels or matchExpressions must be set"]


@pytest.mark.parametrize("selector", [
    {"type": "GroupKind", "groupKind": {"group": "", "kind": "Pod"}},
    {"type": "Label", "label": {"matchLabels": {"app": "x"}}},
    {"type": "Label", "label": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]}},
])
def test_selectors_allowed(selector) -> None:
    assert errors_of(base_cos(progressionProbes=[probe(selector)])) == []


BODIES = {
    "ConditionEqual": ("conditionEqual", {"type": "Ready", "status": "True"}),
    "FieldsEqual": ("fieldsEqual", {"fieldA": "status.a", "fieldB": "spec.b"}),
    "FieldValue": ("fieldValue", {"fieldPath": "status.phase", "value": "Active"}),
}


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_assertion_body_required(kind: str) -> None:
    field = BODIES[kind][0]
    obj = base_cos(progressionProbes=[probe(assertions=[{"type": kind}])])
    assert errors_of(obj) == [f"spec.progressionProbes[0].assertions[0]: Invalid value: "
                              f"{field} is required when type is {kind}, and forbidden otherwise"]


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_assertion_other_body_forbidden(kind: str) -> None:
    field, body = BODIES[kind]
    other_kind = next(k for k in sorted(BODIES) if k != kind)
    other_field, other_body = BODIES[other_kind]
    obj = base_cos(progressionProbes=[probe(assertions=[{"type": kind, field: body, other_field: other_body}])])
    assert errors_of(obj) == [f"spec.progressionProbes[0].assertions[0]: Invalid value: "
                              f"{other_field} is required when type is {other_kind}, and forbidden otherwise"]


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_assertion_allowed(kind: str) -> None:
    field, body = BODIES[kind]
    assert errors_of(base_cos(progressionProbes=[probe(assertions=[{"type": kind, field: body}])])) == []


@pytest.mark.parametrize("where", ["fieldA", "fieldB", "fieldPath"])
@pytest.mark.parametrize("bad", ["a..b", ".a", "a.", "a-b", "a[0]", "spec.containers[0]"])
def test_field_paths(where: str, bad: str) -> None:
    if where == "fieldPath":
        assertion = {"type": "FieldValue", "fieldValue": {"fieldPath": bad, "value": "x"}}
        path = "fieldValue.fieldPath"
    else:
        body = {"fieldA": "a", "fieldB": "b", where: bad}
        assertion = {"type": "FieldsEqual", "fieldsEqual": body}
        path = f"fieldsEqual.{where}"
    obj = base_cos(progressionProbes=[probe(assertions=[assertion])])
    assert errors_of(obj) == [
        f'spec.progressionProbes[0].assertions[0].{path}: Invalid value: "{bad}": {FIELD_PATH_MSG}']


@pytest.mark.parametrize("good", ["a", "status.readyReplicas", "A1.b2.C3"])
def test_field_paths_allowed(good: str) -> None:
    assertion = {"type": "FieldValue", "fieldValue": {"fieldPath": good, "value": "x"}}
    assert errors_of(base_cos(progressionProbes=[probe(assertions=[assertion])])) == []


def test_cel_error_value_is_a_failure_not_a_pass() -> None:
    from common.contract.cel import compile_rule

    rule = compile_rule("self.missing == 1", "m")
    assert rule.holds({"present": 1}) is False  # a no-such-key error
    assert compile_rule("self.size()", "m").holds([1]) is False  # not a bool
    assert compile_rule("self == oldSelf", "m").holds(1, 1) is True
