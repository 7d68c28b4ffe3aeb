"""The Go typed round trip OLM v1's output goes through (common.bundle.registryv1.gounstructured, over the types of
common.bundle.registryv1.gotypes).

Expected values are what OLM v1's renderer printed for the same input (a CSV deployment spec, a CRD).
"""

from __future__ import annotations

from typing import Any

import pytest

from common.bundle import k8syaml
from common.bundle.registryv1.gotypes import in_go_order, struct_types
from common.bundle.registryv1.gounstructured import GoTypeError, roundtrip
from common.bundle.registryv1.typed import decode_crd


def test_unknown_fields_are_dropped_known_ones_kept() -> None:
    pod = {
        "containers": [{"name": "m", "livenessProbe": {"exec": {"failureThreshold": 3}, "periodSeconds": 5},
                        "ports": [{"containerPort": 80, "failureThreshold": 1}]}],
        "volumes": [{"name": "v", "secretName": "misplaced", "items": [], "secret": {"secretName": "s"}}],
        "serviceName": "not-a-pod-field",
    }
    assert roundtrip("core.PodSpec", pod) == {
        "volumes": [{"name": "v", "secret": {"secretName": "s"}}],
        "containers": [{"name": "m", "ports": [{"containerPort": 80}], "resources": {},
                        "livenessProbe": {"exec": {}, "periodSeconds": 5}}],
    }


def test_zero_values_print_as_go_prints_them() -> None:
    spec = {"template": {"spec": {"containers": [{"name": "m", "env": [
        {"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]}]}}, "replicas": 0}
    assert roundtrip("apps.DeploymentSpec", spec) == {
        "replicas": 0,  # a pointer to zero is not empty
        "template": {"metadata": {}, "spec": {"containers": [{
            "name": "m",
            "env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "0"}}}],
            "resources": {},
        }]}},
        "strategy": {},
    }


def test_nulls_are_kept_on_request_for_byte_exact_go_output() -> None:
    assert roundtrip("apps.DeploymentSpec", {}, nulls=True) == {
        "selector": None, "template": {"metadata": {}, "spec": {"containers": None}}, "strategy": {}}
    assert roundtrip("rbac.PolicyRule", {"verbs": [], "apiGroups": []}, nulls=True) == {"verbs": []}


@pytest.mark.parametrize(("path", "given", "printed"), [
    ("containers[0].resources.limits.cpu", "2000m", "2"),
    ("containers[0].resources.requests.memory", "0.5Gi", "512Mi"),
    ("containers[0].resources.requests.cpu", 0.05, "50m"),
    ("overhead.cpu", "1000m", "1"),
    ("volumes[0].emptyDir.sizeLimit", "1024Mi", "1Gi"),
    ("volumes[0].ephemeral.volumeClaimTemplate.spec.resources.requests.storage", "1000M", "1G"),
    ("containers[0].env[0].valueFrom.resourceFieldRef.divisor", "1000m", "1"),
    ("volumes[0].downwardAPI.items[0].resourceFieldRef.divisor", 1, "1"),
    ("resources.limits.memory", "2048Ki", "2Mi"),
])
def test_quantities_come_out_canonical_wherever_the_pod_spec_has_one(path: str, given: Any, printed: str) -> None:
    pod = _set({}, path, given)
    assert _get(roundtrip("core.PodSpec", pod), path) == printed


def test_int_or_string_keeps_its_kind() -> None:
    probe = {"httpGet": {"port": "8080"}, "tcpSocket": {"port": 8080}}
    assert roundtrip("core.Probe", probe) == {"httpGet": {"port": "8080"}, "tcpSocket": {"port": 8080}}
    with pytest.raises(GoTypeError, match=r"^tcpSocket.port: expected an integer or a string, got number 80.5$"):
        roundtrip("core.Probe", {"tcpSocket": {"port": 80.5}})
    with pytest.raises(GoTypeError, match="^tcpSocket.port: number 3000000000 does not fit an int32$"):
        roundtrip("core.Probe", {"tcpSocket": {"port": 3000000000}})


def test_integers_narrow_as_go_converts_them() -> None:
    assert roundtrip("core.Probe", {"periodSeconds": 10.0, "timeoutSeconds": 2**32 + 7}) == {
        "timeoutSeconds": 7, "periodSeconds": 10}
    assert roundtrip("core.ContainerPort", {"containerPort": 2**31}) == {"containerPort": -(2**31)}
    # a number beyond int64 is a float64 to Go, converted to int64 as amd64 converts it (judged against OLM v1's
    # source.FromFS on this machine): the minimum, then narrowed
    assert roundtrip("apiext.JSONSchemaProps", {"maxLength": 1e19, "minLength": 2**64, "maxItems": -1e21}) == {
        "maxLength": -(2**63), "minLength": -(2**63), "maxItems": -(2**63)}
    assert roundtrip("core.ContainerPort", {"containerPort": 1e19}) == {"containerPort": 0}


def test_the_csv_version_prints_as_operator_version_marshals_it() -> None:
    assert roundtrip("olm.ClusterServiceVersionSpec", {"version": "v1.2", "release": "1.2"})["version"] == "1.2.0"


def test_schemas_under_a_union_are_read_as_util_json_reads_them() -> None:
    """items, additionalProperties, additionalItems and dependencies decode through their UnmarshalJSON: an integer
    there must fit its type (OLM v1 refuses the bundle), where the converter would have converted it."""
    assert roundtrip("apiext.JSONSchemaProps", {"items": {"maxLength": 2**63 - 1, "minLength": 1.0}}) == {
        "items": {"maxLength": 2**63 - 1, "minLength": 1}}
    # a float there is read back from the text Go writes for it (judged with OLM v1's source.FromFS on a JSON CRD)
    assert roundtrip("apiext.JSONSchemaProps", {"items": {"maxLength": 4.611686018427388e18}}) == {
        "items": {"maxLength": 4611686018427388000}}
    for union in ({"items": {"maxLength": 2**63}}, {"additionalProperties": {"properties": {"a": {"minItems": 1e19}}}},
                  {"dependencies": {"d": {"maxItems": -(2**63) - 1}}}, {"items": [{"maxProperties": 1e21}]}):
        with pytest.raises(GoTypeError, match="expected an integer"):
            roundtrip("apiext.JSONSchemaProps", union)


@pytest.mark.parametrize(("type_name", "value", "message"), [
    ("core.Container", {"name": 5}, "name: expected a string, got number"),
    ("core.Container", {"name": "m", "args": "--x"}, "args: expected an array, got string"),
    ("core.Container", {"name": "m", "env": [{"name": "A", "value": True}]},
     "env[0].value: expected a string, got boolean"),
    ("core.Probe", {"periodSeconds": "10"}, 'periodSeconds: expected an integer, got string "10"'),
    ("core.Probe", {"periodSeconds": 1.5}, "periodSeconds: expected an integer, got number 1.5"),
    ("core.SecurityContext", {"privileged": "true"}, "privileged: expected a boolean, got string"),
    ("core.PodSpec", {"nodeSelector": ["a"]}, "nodeSelector: expected an object, got array"),
    ("core.PodSpec", {"nodeSelector": {"a": 1}}, "nodeSelector.a: expected a string, got number"),
    ("core.ResourceRequirements", {"limits": {"cpu": "one"}},
     "limits.cpu: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ("core.ResourceRequirements", {"limits": {"cpu": True}}, "limits.cpu: expected a quantity, got boolean"),
    ("meta.ObjectMeta", {"creationTimestamp": "yesterday"},
     'creationTimestamp: expected an RFC 3339 time, got "yesterday"'),
    ("apiext.JSONSchemaProps", {"additionalProperties": "yes"},
     "additionalProperties: boolean or JSON schema expected"),
    ("apiext.JSONSchemaProps", {"dependencies": {"a": [1]}}, "dependencies.a[0]: expected a string, got number"),
])
def test_values_go_cannot_decode_name_the_field(type_name: str, value: Any, message: str) -> None:
    with pytest.raises(GoTypeError) as exc:
        roundtrip(type_name, value)
    assert str(exc.value) == message


def test_metadata_times_are_utc_to_the_second_and_a_null_creation_timestamp_vanishes() -> None:
    assert roundtrip("meta.ObjectMeta", {"name": "x", "creationTimestamp": None}) == {"name": "x"}
    assert roundtrip("meta.ObjectMeta", {"deletionTimestamp": "2024-01-02T03:04:05.678+01:00"}) == {
        "deletionTimestamp": "2024-01-02T02:04:05Z"}


def test_a_v1beta1_crd_keeps_only_what_v1_has() -> None:
    v1beta1 = {
        "apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com", "creationTimestamp": None},
        "spec": {"group": "example.com", "version": "v1", "names": {"kind": "Gadget", "plural": "gadgets"},
                 "scope": "Cluster", "validation": {"openAPIV3Schema": {"type": "object"}},
                 "versions": [{"name": "v1", "served": True, "storage": True}], "subresources": {"status": {}}},
        "status": {"acceptedNames": {"kind": "Gadget", "plural": "gadgets"}, "conditions": None,
                   "storedVersions": ["v1"]},
    }
    assert decode_crd(v1beta1) == {
        "kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1beta1",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "names": {"plural": "gadgets", "kind": "Gadget"}, "scope": "Cluster",
                 "versions": [{"name": "v1", "served": True, "storage": True}]},
        "status": {"acceptedNames": {"plural": "gadgets", "kind": "Gadget"}, "storedVersions": ["v1"]},
    }


def test_crd_schema_unions_and_raw_json() -> None:
    schema = {
        "type": "object", "description": "<b>&</b>", "nullable": False, "unknownKeyword": 1, "$schema": "x",
        "properties": {
            "a": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False},
            "b": {"type": "array", "items": {"type": "string", "enum": ["x", None, 1, {"k": None}]}},
            "c": {"type": "object", "additionalProperties": True},
            "d": {"type": "object", "additionalProperties": {"type": "string", "default": None}},
            "e": {"dependencies": {"p": ["q", "r"], "s": {"required": ["t"]}, "u": []}},
            "f": {"type": "number", "maximum": 10, "minimum": 0.5, "exclusiveMaximum": False, "multipleOf": 2.0},
            "h": {"default": {"nested": None}, "example": [1, "two"], "type": "object"},
            "i": {"items": [], "type": "array"},
            "j": {"maxLength": 5.0, "x-kubernetes-validations": [{"rule": "self.size() > 0", "unknown": 1}]},
        },
    }
    assert roundtrip("apiext.JSONSchemaProps", schema) == {
        "$schema": "x", "description": "<b>&</b>", "type": "object",
        "properties": {
            "a": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False},
            "b": {"type": "array", "items": {"type": "string", "enum": ["x", None, 1, {"k": None}]}},
            "c": {"type": "object", "additionalProperties": True},
            "d": {"type": "object", "additionalProperties": {"type": "string"}},
            "e": {"dependencies": {"p": ["q", "r"], "s": {"required": ["t"]}, "u": None}},
            "f": {"type": "number", "maximum": 10, "minimum": 0.5, "multipleOf": 2},
            "h": {"type": "object", "default": {"nested": None}, "example": [1, "two"]},
            "i": {"type": "array"},
            "j": {"maxLength": 5, "x-kubernetes-validations": [{"rule": "self.size() > 0"}]},
        },
    }


def test_schema_numbers_from_2_to_the_54_print_as_olm_prints_them() -> None:
    """maximum, minimum and multipleOf are float64s: OLM v1 prints such a whole number with the float's shortest
    digits padded with zeros, not its exact value (judged with OLM v1's source.FromFS: 1152921504606847000 for
    2**60); integers and values kept as raw JSON (default, enum, example) keep every digit."""
    schema = {"maximum": 2**60, "minimum": -(2**63 - 1), "multipleOf": 123456789012345678, "default": 2**60,
              "items": {"maximum": 2**60}, "enum": [2**60], "maxLength": 2**62 + 1}
    assert roundtrip("apiext.JSONSchemaProps", schema) == {
        "maximum": 1152921504606847000, "minimum": -9223372036854776000, "multipleOf": 123456789012345680,
        "default": 2**60, "items": {"maximum": 1152921504606847000}, "enum": [2**60], "maxLength": 2**62 + 1}


def test_a_json_crds_float_fills_an_integer_field_with_the_float64s_value_as_olm_v1_does() -> None:
    """OLM v1 decodes a JSON manifest's ``4.611686018427388e+18`` into a float64 and the unstructured converter makes
    an int64 field of it by conversion: 4611686018427387904 (judged with OLM v1's source.FromFS), where a YAML
    manifest's same number is read back from JSON text as 4611686018427388000. Float fields print Go's digits."""
    text = ('{"maxLength": 4.611686018427388e+18, "minLength": -9.223372036854775e18, "maxItems": 1e19, '
            '"maximum": 4.611686018427388e+18}')
    assert roundtrip("apiext.JSONSchemaProps", k8syaml.load(text)) == {
        "maxLength": 4611686018427387904, "minLength": -9223372036854774784, "maxItems": -(2**63),
        "maximum": 4611686018427388000}
    assert roundtrip("apiext.JSONSchemaProps", k8syaml.load("maxLength: 4.611686018427388e+18")) == {
        "maxLength": 4611686018427388000}


def test_the_blank_status_go_prints_for_a_crd_is_left_out() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"},
           "spec": {"group": "b", "names": {"plural": "a", "kind": "A"}, "scope": "Namespaced", "versions": []},
           "status": {"conditions": [], "storedVersions": [], "acceptedNames": {"kind": "", "plural": ""}}}
    assert "status" not in decode_crd(crd)
    assert "status" not in decode_crd({k: v for k, v in crd.items() if k != "status"})


def test_map_keys_come_out_sorted_as_go_writes_them() -> None:
    assert list(roundtrip("core.PodSpec", {"nodeSelector": {"b": "1", "a": "2"}})["nodeSelector"]) == ["a", "b"]


def test_every_struct_of_the_table_decodes_its_zero_value() -> None:
    """Every field's type is defined: decoding a zero value walks every struct and field type once."""
    known = struct_types()
    assert {"apps.DeploymentSpec", "core.PodSpec", "apiext.JSONSchemaProps", "olm.SubscriptionConfig"} <= known
    for name in known:
        assert isinstance(roundtrip(name, None, nulls=True), dict)


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    node: Any = obj
    parts = path.replace("[0]", ".0").split(".")
    for part, following in zip(parts, [*parts[1:], None], strict=True):
        key: Any = 0 if part == "0" else part
        if following is None:
            node[key] = value
            break
        child: Any = [] if following == "0" else {}
        if isinstance(node, list):
            if not node:
                node.append(child)
        else:
            node.setdefault(key, child)
        node = node[key]
    return obj


def _get(obj: Any, path: str) -> Any:
    for part in path.replace("[0]", ".0").split("."):
        obj = obj[0 if part == "0" else part]
    return obj


@pytest.mark.parametrize(("given", "printed"), [
    ("0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z"),
    ("2024-01-01T1:00:00+24:00", "2023-12-31T01:00:00Z"),
    ("0001-01-01T01:00:00+01:00", None),  # the zero time: Go prints null, left out
])
def test_times_are_read_as_metav1_time_reads_them(given: str, printed: str | None) -> None:
    """The converter hands a Time its own UnmarshalJSON (Go's time.Parse), whatever Python's datetime can hold;
    OLM v1 rendered these template timestamps so."""
    meta = roundtrip("core.PodTemplateSpec", {"metadata": {"creationTimestamp": given}})["metadata"]
    assert meta.get("creationTimestamp") == printed


def test_a_time_go_cannot_parse_refuses_the_value() -> None:
    with pytest.raises(GoTypeError) as caught:
        roundtrip("meta.ObjectMeta", {"creationTimestamp": "2024-01-01 00:00:00Z"}, "metadata")
    assert str(caught.value) == 'metadata.creationTimestamp: expected an RFC 3339 time, got "2024-01-01 00:00:00Z"'


def test_in_go_order_only_puts_keys_back_in_order() -> None:
    """What the renderer does to a Deployment spec after merging into it: the order of Go's encoding, nothing
    decoded again (a time Go printed stays, even one no parser reads back)."""
    spec = {"template": {"spec": {"tolerations": [{"effect": "NoSchedule", "key": "k"}], "containers": [
        {"env": [{"value": "1", "name": "A"}], "name": "m"}]}, "metadata": {
        "annotations": {"b": "2", "a": "1"}, "creationTimestamp": "-0001-12-31T23:00:00Z"}},
        "revisionHistoryLimit": 1, "selector": {}}
    ordered = in_go_order("apps.DeploymentSpec", spec)
    assert ordered == spec
    assert list(ordered) == ["selector", "template", "revisionHistoryLimit"]
    assert list(ordered["template"]) == ["metadata", "spec"]
    assert list(ordered["template"]["metadata"]["annotations"]) == ["a", "b"]
    assert list(ordered["template"]["spec"]) == ["containers", "tolerations"]
    assert list(ordered["template"]["spec"]["containers"][0]) == ["name", "env"]
    assert list(ordered["template"]["spec"]["containers"][0]["env"][0]) == ["name", "value"]
