"""Every probe message of reconciler.md section 3, the built-in probes, selection and combining."""

from __future__ import annotations

import pytest

from common.contract.probes import (
    FALSE,
    TRUE,
    UNKNOWN,
    ProbeResult,
    ProbeSpecError,
    combine,
    condition_equal,
    field_value,
    fields_equal,
    parse_probes,
    probe,
)


def obj(status=None, generation=1, kind="Widget", api="example.com/v1", labels=None):
    o = {"apiVersion": api, "kind": kind, "metadata": {"name": "w", "generation": generation,
                                                       "labels": labels or {}}}
    if status is not None:
        o["status"] = status
    return o


def r(result: ProbeResult) -> tuple[str, list[str]]:
    return result.status, result.messages


# ---- ConditionEqual ---------------------------------------------------------------------------------------------

def test_condition_equal_messages() -> None:
    assert r(condition_equal(obj({"conditions": [{"type": "Ready", "status": "True"}]}), "Ready", "True")) == (
        TRUE, ['.status.condition["Ready"] is True'])
    assert r(condition_equal(obj({"conditions": [{"type": "Ready", "status": "False"}]}), "Ready", "True")) == (
        FALSE, ['.status.condition["Ready"] is False'])
    assert r(condition_equal(obj({}), "Ready", "True")) == (UNKNOWN, ["missing .status.conditions"])
    assert r(condition_equal(obj(), "Ready", "True")) == (UNKNOWN, ["missing .status.conditions"])
    assert r(condition_equal(obj({"conditions": [{"type": "Other", "status": "True"}]}), "Ready", "True")) == (
        UNKNOWN, ['missing .status.condition["Ready"]'])
    stale = obj({"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]}, generation=2)
    assert r(condition_equal(stale, "Ready", "True")) == (UNKNOWN, ['.status.condition["Ready"] outdated'])
    current = obj({"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 2}]}, generation=2)
    assert condition_equal(current, "Ready", "True").status == TRUE


# ---- FieldsEqual ----------------------------------------------------------------------------------------------

def test_fields_equal_messages() -> None:
    o = obj({"a": 3, "b": 3, "c": {"x": [1]}, "d": "3"})
    assert r(fields_equal(o, "status.a", "status.b")) == (TRUE, ['"status.a" == "status.b"'])
    assert r(fields_equal(o, "status.zz", "status.b")) == (FALSE, ['"status.zz" missing'])
    assert r(fields_equal(o, "status.a", "status.zz")) == (FALSE, ['"status.zz" missing'])
    assert r(fields_equal(o, "status.a", "status.c")) == (
        FALSE, ['"status.a" != "status.c" expected: 3 got: {"x":[1]}'])
    assert r(fields_equal(o, "status.a", "status.d")) == (FALSE, ['"status.a" != "status.d" expected: 3 got: "3"'])


# ---- FieldValue -----------------------------------------------------------------------------------------------

def test_field_value_messages_and_string_comparison() -> None:
    o = obj({"phase": "Pending", "replicas": 3, "ready": True})
    assert r(field_value(o, "status.missing", "x")) == (FALSE, ['missing key: "status.missing"'])
    assert r(field_value(o, "status.phase", "Active")) == (
        FALSE, ['value at key "status.phase" != "Active"; expected: "Active" got: "Pending"'])
    assert r(field_value(o, "status.replicas", "4")) == (
        FALSE, ['value at key "status.replicas" != "4"; expected: "4" got: 3'])
    assert field_value(o, "status.replicas", "3").status == TRUE     # ours: 3 matches "3"
    assert field_value(o, "status.ready", "true").status == TRUE
    assert r(field_value(o, "status.phase", "Pending")) == (TRUE, ['value at key "status.phase" == "Pending"'])


# ---- combining, selection, outdated status --------------------------------------------------------------------

def test_unknown_beats_false_beats_true_and_keeps_the_winners_messages() -> None:
    t, f1, f2, u = (ProbeResult(TRUE, ["t"]), ProbeResult(FALSE, ["f1"]), ProbeResult(FALSE, ["f2"]),
                    ProbeResult(UNKNOWN, ["u"]))
    assert r(combine([t, f1, u, f2])) == (UNKNOWN, ["u"])
    assert r(combine([t, f1, f2])) == (FALSE, ["f1", "f2"])
    assert r(combine([t])) == (TRUE, ["t"])
    assert r(combine([])) == (TRUE, [])


PROBES = [
    {"selector": {"type": "GroupKind", "groupKind": {"group": "example.com", "kind": "Widget"}},
     "assertions": [{"type": "ConditionEqual", "conditionEqual": {"type": "Ready", "status": "True"}},
                    {"type": "FieldValue", "fieldValue": {"fieldPath": "status.phase", "value": "Up"}}]},
    {"selector": {"type": "Label", "label": {"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["db"]}]}},
     "assertions": [{"type": "FieldsEqual", "fieldsEqual": {"fieldA": "status.want", "fieldB": "status.have"}}]},
]


def test_progression_probes_select_by_group_kind_and_label() -> None:
    probes = parse_probes(PROBES)
    # not selected by either: passes
    assert r(probe(obj({}, kind="Gadget"), probes)) == (TRUE, [])
    # selected by GroupKind: both assertions must hold; False messages of both are kept
    w = obj({"conditions": [{"type": "Ready", "status": "False"}], "phase": "Down"})
    assert r(probe(w, probes)) == (FALSE, ['.status.condition["Ready"] is False',
                                           'value at key "status.phase" != "Up"; expected: "Up" got: "Down"'])
    # selected by label as well
    g = obj({"want": 1, "have": 2}, kind="Gadget", labels={"tier": "db"})
    assert r(probe(g, probes)) == (FALSE, ['"status.want" != "status.have" expected: 1 got: 2'])
    ok = obj({"conditions": [{"type": "Ready", "status": "True"}], "phase": "Up"})
    assert probe(ok, probes).status == TRUE


def test_outdated_status_makes_a_selected_probe_unknown() -> None:
    probes = parse_probes(PROBES)
    w = obj({"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}], "phase": "Up"},
            generation=2)
    assert r(probe(w, probes)) == (UNKNOWN, [".status outdated"])


def test_bad_probe_spec_is_a_clear_error() -> None:
    with pytest.raises(ProbeSpecError, match=r"spec.progressionProbes\[0\].selector.type: unsupported value 'X'"):
        parse_probes([{"selector": {"type": "X"}, "assertions": []}])
    with pytest.raises(ProbeSpecError, match=r"spec.progressionProbes\[0\].selector.label: "):
        parse_probes([{"selector": {"type": "Label", "label": {"matchExpressions": [
            {"key": "a", "operator": "Bogus"}]}}, "assertions": []}])


# ---- built-in probes ------------------------------------------------------------------------------------------

def deployment(status, generation=1):
    return obj(status, generation, kind="Deployment", api="apps/v1")


def test_deployment_builtin() -> None:
    avail = [{"type": "Available", "status": "True"}]
    assert r(probe(deployment({}))) == (UNKNOWN, [".status outdated"])
    assert r(probe(deployment({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 1,
                               "conditions": avail}))) == (
        FALSE, ['"status.updatedReplicas" != "status.replicas" expected: 1 got: 2'])
    assert r(probe(deployment({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                               "conditions": [{"type": "Available", "status": "False"}]}))) == (
        FALSE, ['.status.condition["Available"] is False'])
    assert probe(deployment({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                             "conditions": avail})).status == TRUE
    # replicas: 0 has no counts in status at all: ready
    assert probe(deployment({"observedGeneration": 3, "conditions": avail}, generation=3)).status == TRUE
    assert r(probe(deployment({"observedGeneration": 2, "conditions": avail}, generation=3))) == (
        UNKNOWN, [".status outdated"])


def test_statefulset_builtin() -> None:
    def sts(status):
        return obj(status, kind="StatefulSet", api="apps/v1")
    assert r(probe(sts({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 2}))) == (
        FALSE, ['"status.availableReplicas" != "status.replicas" expected: 2 got: 3'])
    assert probe(sts({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3,
                      "availableReplicas": 3})).status == TRUE
    assert probe(sts({"observedGeneration": 1})).status == TRUE   # scaled to zero


@pytest.mark.parametrize("api,kind,status,ready", [
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition",
     {"conditions": [{"type": "Established", "status": "True"}]}, True),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition",
     {"conditions": [{"type": "Established", "status": "False"}]}, False),
    ("v1", "Namespace", {"phase": "Active"}, True),
    ("v1", "Namespace", {"phase": "Terminating"}, False),
    ("v1", "PersistentVolumeClaim", {"phase": "Bound"}, True),
    ("v1", "PersistentVolumeClaim", {"phase": "Pending"}, False),
    ("cert-manager.io/v1", "Certificate", {"conditions": [{"type": "Ready", "status": "True"}]}, True),
    ("cert-manager.io/v1", "Issuer", {"conditions": [{"type": "Ready", "status": "False"}]}, False),
    ("v1", "ConfigMap", None, True),
])
def test_other_builtins(api, kind, status, ready) -> None:
    assert probe(obj(status, kind=kind, api=api)).ok is ready


def test_builtin_namespace_message() -> None:
    assert r(probe(obj({"phase": "Terminating"}, kind="Namespace", api="v1"))) == (
        FALSE, ['value at key "status.phase" != "Active"; expected: "Active" got: "Terminating"'])
