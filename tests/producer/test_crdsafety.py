"""OLM v1's CRD upgrade safety comparisons (common.bundle.crdsafety): each comparator's refusal in OLM's words,
what is allowed, the served-version comparison, and what never counts as a change."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from common.bundle.crdsafety import (
    CRDDecodeError,
    assume_stored_versions,
    crd_upgrade_errors,
    is_crd,
    preflight_failure,
)

Obj = dict[str, Any]


def crd(spec_props: Obj | None = None, *, versions: list[Obj] | None = None, scope: str = "Namespaced",
        stored: list[str] | None = None) -> Obj:
    """A Widget CRD with one version v1 whose ``spec`` has ``spec_props``."""
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": spec_props or {}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": scope, "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": versions or [{"name": "v1", "served": True, "storage": True,
                                           "schema": {"openAPIV3Schema": schema}}]},
        "status": {"storedVersions": stored if stored is not None else ["v1"]},
    }


def version(name: str, props: Obj, *, served: bool = True, storage: bool = False) -> Obj:
    return {"name": name, "served": served, "storage": storage, "schema": {"openAPIV3Schema": {
        "type": "object", "properties": {"spec": {"type": "object", "properties": props}}}}}


def errors(old_props: Obj, new_props: Obj) -> list[str]:
    return crd_upgrade_errors(crd(old_props), crd(new_props))


@pytest.mark.parametrize(("old", "new", "expected"), [
    ({"a": {"type": "string", "enum": ["x", "y"]}}, {"a": {"type": "string", "enum": ["x"]}},
     ['v1: ^.spec.a: enum: allowed enum values removed : ["y"]']),
    ({"a": {"type": "string"}}, {"a": {"type": "string", "enum": ["y", "x"]}},
     ['v1: ^.spec.a: enum: enum constraint added when there was none previously : ["x" "y"]']),
    ({"a": {"type": "integer", "enum": [1]}}, {"a": {"type": "integer", "enum": [1, 2]}}, []),  # additions allowed
    ({"a": {"type": "string"}}, {"a": {"type": "string", "default": "x"}},
     ['v1: ^.spec.a: default: default added when there was none previously : "\\"x\\""']),
    ({"a": {"type": "object", "default": {"b": 1}}}, {"a": {"type": "object"}},
     ['v1: ^.spec.a: default: default value removed : "{\\"b\\":1}"']),
    ({"a": {"type": "integer", "default": 1}}, {"a": {"type": "integer", "default": 2}},
     ['v1: ^.spec.a: default: default value changed : "1" -> "2"']),
    ({"n": {"type": "number", "maximum": 10}}, {"n": {"type": "number", "maximum": 1.5}},
     ["v1: ^.spec.n: maximum: maximum decreased : 10 -> 1.5"]),
    ({"n": {"type": "number"}}, {"n": {"type": "number", "maximum": 1e6}},
     ["v1: ^.spec.n: maximum: maximum constraint added when there was none previously : 1e+06"]),
    ({"n": {"type": "number", "minimum": 0.5}}, {"n": {"type": "number", "minimum": 0.75}},
     ["v1: ^.spec.n: minimum: minimum increased : 0.5 -> 0.75"]),
    ({"n": {"type": "number", "minimum": 2}}, {"n": {"type": "number", "minimum": 1}}, []),  # looser: allowed
    ({"s": {"type": "string", "maxLength": 10}}, {"s": {"type": "string", "maxLength": 5}},
     ["v1: ^.spec.s: maxLength: maximum decreased : 10 -> 5"]),
    ({"s": {"type": "string"}}, {"s": {"type": "string", "minLength": 1}},
     ["v1: ^.spec.s: minLength: minimum constraint added when there was none previously : 1"]),
    ({"l": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
     {"l": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
     ["v1: ^.spec.l: maxItems: maximum decreased : 3 -> 2"]),
    ({"l": {"type": "array", "items": {"type": "string"}}},
     {"l": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
     ["v1: ^.spec.l: minItems: minimum constraint added when there was none previously : 1"]),
    ({"m": {"type": "object", "maxProperties": 4}}, {"m": {"type": "object", "maxProperties": 3}},
     ["v1: ^.spec.m: maxProperties: maximum decreased : 4 -> 3"]),
    ({"m": {"type": "object", "minProperties": 1}}, {"m": {"type": "object", "minProperties": 2}},
     ["v1: ^.spec.m: minProperties: minimum increased : 1 -> 2"]),
    ({"a": {"type": "string"}}, {"a": {"type": "integer"}},
     ['v1: ^.spec.a: type: type changed : "string" -> "integer"']),
    ({"a": {"type": "string"}}, {"a": {"type": "string", "pattern": "^[a-z]+$"}},
     ['v1: ^.spec.a: pattern: pattern added : "" -> "^[a-z]+$"']),
    ({"a": {"type": "string", "pattern": "^a$"}}, {"a": {"type": "string"}},
     ['v1: ^.spec.a: pattern: pattern removed : "^a$" -> ""']),
    ({"a": {"type": "string", "pattern": "^a$"}}, {"a": {"type": "string", "pattern": "^b$"}},
     ['v1: ^.spec.a: pattern: pattern changed : "^a$" -> "^b$"']),
    ({"a": {"type": "string"}}, {"a": {"type": "string", "nullable": True}},
     ["v1: ^.spec.a: nullable: nullable added : false -> true"]),
    ({"a": {"type": "string", "nullable": True}}, {"a": {"type": "string"}},
     ["v1: ^.spec.a: nullable: nullable removed : true -> false"]),
    ({"a": {"type": "string", "description": "old"}}, {"a": {"type": "string", "description": "new"}}, []),
    ({"a": {"type": "string", "format": "date"}}, {"a": {"type": "string", "format": "date-time"}},
     ['v1: ^.spec.a: unhandled: unhandled changes found (Format "date" -> "date-time")']),
    ({"a": {"type": "string"}}, {"a": {"type": "string", "x-kubernetes-validations": [
        {"rule": "self != ''", "message": "must not be empty"}]}},
     ['v1: ^.spec.a: unhandled: unhandled changes found (XValidations nil -> ValidationRules{{Rule: "self != \'\'", '
      'Message: "must not be empty"}})']),
    ({"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}, {"a": {"type": "object"}},
     ["v1: ^.spec.a: unhandled: unhandled changes found (XPreserveUnknownFields &true -> nil)"]),
    ({"a": {"type": "object", "additionalProperties": {"type": "string"}}},
     {"a": {"type": "object", "additionalProperties": {"type": "integer"}}},
     ["v1: ^.spec.a: unhandled: unhandled changes found (AdditionalProperties <complex value> -> <complex value> "
      "(changed))",
      'v1: ^.spec.a.additionalProperties: type: type changed : "string" -> "integer"']),
])
def test_each_comparator_refuses_in_olms_words(old, new, expected):
    assert errors(old, new) == expected


def test_new_required_fields_are_listed_sorted_and_a_new_optional_field_is_safe():
    old = {"a": {"type": "string"}}
    new = {"a": {"type": "string"}, "c": {"type": "string"}, "b": {"type": "string"}}
    assert errors(old, new) == []
    old_crd, new_crd = crd(old), crd(new)
    new_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] = ["c", "b"]
    assert crd_upgrade_errors(old_crd, new_crd) == ["v1: ^.spec: required: new required fields: [b c]"]


def test_a_removed_field_is_reported_by_existing_field_removal_and_against_an_empty_schema():
    old = {"a": {"type": "string"}, "l": {"type": "array", "items": {"type": "string", "maxLength": 3}}}
    assert errors(old, {"a": {"type": "string"}}) == [
        "existingFieldRemoval: removed field : v1.^.spec.l",
        "existingFieldRemoval: removed field : v1.^.spec.l.items",
        'v1: ^.spec.l: type: type changed : "array" -> ""',
        'v1: ^.spec.l.items: type: type changed : "string" -> ""',
    ]


def test_scope_and_stored_versions():
    old = crd({}, versions=[version("v1alpha1", {}, storage=False), version("v1", {}, storage=True)],
              stored=["v1alpha1", "v1"])
    new = crd({}, versions=[version("v1", {}, storage=True)], scope="Cluster")
    assert crd_upgrade_errors(old, new) == [
        'scope: scope changed : "Namespaced" -> "Cluster"',
        "storedVersionRemoval: stored versions removed : [v1alpha1]",
    ]
    # a version removed that nothing was stored at is no stored-version removal
    old["status"]["storedVersions"] = ["v1"]
    new["spec"]["scope"] = "Namespaced"
    assert crd_upgrade_errors(old, new) == []


def test_served_versions_are_compared_pairwise_in_kubernetes_version_order_reporting_only_new_differences():
    old = crd({}, versions=[version("v1", {"a": {"type": "string"}}, storage=True)])
    new = crd({}, versions=[version("v1", {"a": {"type": "string"}}, storage=True),
                            version("v1alpha1", {"a": {"type": "integer"}}),
                            version("v1beta1", {"a": {"type": "string", "enum": ["x"]}})])
    assert crd_upgrade_errors(old, new) == [
        'v1alpha1 -> v1beta1: ^.spec.a: enum: enum constraint added when there was none previously : ["x"]',
        'v1alpha1 -> v1beta1: ^.spec.a: type: type changed : "integer" -> "string"',
        'v1alpha1 -> v1: ^.spec.a: type: type changed : "integer" -> "string"',
        'v1beta1 -> v1: ^.spec.a: enum: allowed enum values removed : ["x"]',
    ]
    # the same differences already present between the old CRD's served versions are not new
    assert crd_upgrade_errors(new, copy.deepcopy(new)) == []
    # a version that is not served takes no part
    new["spec"]["versions"][1]["served"] = False
    assert crd_upgrade_errors(old, new) == [
        'v1beta1 -> v1: ^.spec.a: enum: allowed enum values removed : ["x"]']
    # names that are no Kubernetes version sort below all, in reverse lexical order
    new["spec"]["versions"] = [version("v1", {"a": {"type": "string"}}, storage=True),
                               version("beta", {"a": {"type": "integer"}}), version("alpha", {})]
    assert crd_upgrade_errors(old, new) == [
        'beta -> alpha: ^.spec.a: type: type changed : "integer" -> ""',
        'beta -> v1: ^.spec.a: type: type changed : "integer" -> "string"',
    ]  # alpha -> v1: a field only the higher version has is no difference


def test_served_versions_converted_by_a_webhook_are_not_compared():
    old = crd({}, versions=[version("v1", {"a": {"type": "string"}}, storage=True)])
    new = crd({}, versions=[version("v1", {"a": {"type": "string"}}, storage=True),
                            version("v2", {"a": {"type": "integer"}})])
    assert crd_upgrade_errors(old, new) == ['v1 -> v2: ^.spec.a: type: type changed : "string" -> "integer"']
    new["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"], "clientConfig": {"service": {"namespace": "ns", "name": "svc"}}}}
    assert crd_upgrade_errors(old, new) == []


def test_what_never_counts_as_a_change():
    old = {"a": {"type": "object", "default": {"x": 1, "y": [1.0, "s"]}, "enum": [{"b": 2, "a": 1}],
                 "required": [], "properties": {}},
           "b": {"type": "number", "maximum": 10.0, "nullable": False}}
    # key order, 1.0 written as 1, empty lists, false for an unset flag: Go's decoding makes them the same
    new = {"b": {"maximum": 10, "type": "number"},
           "a": {"enum": [{"a": 1, "b": 2}], "default": {"y": [1, "s"], "x": 1}, "type": "object"}}
    assert errors(old, new) == []
    assert crd_upgrade_errors(crd(old), crd(old)) == []


def test_a_crd_that_does_not_decode_is_a_decode_error_naming_the_field():
    bad = crd({"a": {"type": "integer", "maximum": "5"}})
    with pytest.raises(CRDDecodeError) as caught:
        crd_upgrade_errors(crd({}), bad)
    assert str(caught.value).startswith("the new CustomResourceDefinition does not decode: "
                                        "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.a."
                                        "maximum: ")


def test_helpers():
    assert is_crd(crd({})) and not is_crd({"apiVersion": "apiextensions.k8s.io/v1beta1",
                                            "kind": "CustomResourceDefinition"})
    bare = crd({}, versions=[version("v1beta1", {}), version("v1", {}, storage=True)])
    del bare["status"]
    assert assume_stored_versions(bare)["status"] == {"storedVersions": ["v1"]}
    assert assume_stored_versions(crd({}, stored=["v0"]))["status"] == {"storedVersions": ["v0"]}
    assert preflight_failure("w.example.com", ["a", "b"]) == 'validating upgrade for CRD "w.example.com": a\nb'


def test_a_difference_between_served_versions_that_changed_is_new_even_when_it_reads_the_same():
    """OLM v1 subtracts the old CRD's served-version differences by their full text (a go-cmp diff): a difference
    in the same field whose values changed is a new one, though the summary line reads the same."""
    old = crd({}, versions=[version("v1", {"a": {"type": "string", "format": "date"}}, storage=True),
                            version("v2", {"a": {"type": "string", "format": "email"}})])
    new = crd({}, versions=[version("v1", {"a": {"type": "string", "format": "date"}}, storage=True),
                            version("v2", {"a": {"type": "string", "format": "uri"}})])
    assert crd_upgrade_errors(old, old) == []
    assert crd_upgrade_errors(old, new) == [
        'v2: ^.spec.a: unhandled: unhandled changes found (Format "email" -> "uri")',
        'v1 -> v2: ^.spec.a: unhandled: unhandled changes found (Format "date" -> "uri")']
    old["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["a"][
        "x-kubernetes-validations"] = [{"rule": "self != 'x'"}]
    new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["a"][
        "x-kubernetes-validations"] = [{"rule": "self != 'y'"}]
    new["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["a"][
        "format"] = "email"
    assert [line for line in crd_upgrade_errors(old, new) if line.startswith("v1 -> v2")] == [
        "v1 -> v2: ^.spec.a: unhandled: unhandled changes found (Format \"date\" -> \"email\"; XValidations "
        "ValidationRules{{Rule: \"self != 'y'\"}} -> nil)"]


def test_of_two_versions_of_one_name_the_first_counts_and_huge_integers_read_as_go_reads_them():
    old = crd({}, versions=[version("v1", {"a": {"type": "integer", "default": 12345678901234567890}}, storage=True)])
    new = crd({}, versions=[version("v1", {"a": {"type": "integer", "default": 12345678901234567891}}, storage=True),
                            version("v1", {"a": {"type": "boolean"}}, served=False)])
    assert crd_upgrade_errors(old, new) == []  # both are 12345678901234567000 to Go; the second v1 is never seen
    new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["a"]["default"] = 1
    assert crd_upgrade_errors(old, new) == [
        'v1: ^.spec.a: default: default value changed : "12345678901234567000" -> "1"']


def test_an_empty_property_name_prints_as_go_prints_it():
    assert errors({"": {"type": "string"}}, {"": {"type": "integer"}}) == [
        'v1: ^.spec[]: type: type changed : "string" -> "integer"']
