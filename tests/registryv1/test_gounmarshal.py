"""encoding/json's Unmarshal into Kubernetes' Go types: every expected value and message below is what Go's
json.Unmarshal into operator-framework's SubscriptionConfig (and metav1's ObjectMeta) gave for the same input,
with the types vendored by OLM v1 (operator-controller at 186c9e64)."""

from __future__ import annotations

from typing import Any

import pytest

from common.bundle.registryv1.gounmarshal import UnmarshalError, object_meta_problem, unmarshal, unmarshal_fields

CONFIG = "olm.SubscriptionConfig"


def refusal(value: Any) -> str:
    with pytest.raises(UnmarshalError) as caught:
        unmarshal(CONFIG, value)
    return str(caught.value)


def test_the_result_is_what_json_marshal_prints() -> None:
    assert unmarshal(CONFIG, {"nodeSelector": {}, "affinity": {}, "Annotations": {"b": "1"}, "annotations": {"a": "2"},
                              "env": [{"name": "a", "Value": "b", "value": None}]}) == {
        "env": [{"name": "a", "value": "b"}], "affinity": {}, "annotations": {"a": "2", "b": "1"}}


def test_the_fields_keep_an_empty_map_apart_from_a_nil_one() -> None:
    assert unmarshal_fields(CONFIG, {"nodeSelector": {}, "tolerations": None, "env": []}) == {
        "nodeSelector": {}, "env": []}


def test_the_first_mismatch_in_key_order_is_reported() -> None:
    assert refusal({"tolerations": [{"key": 1}], "env": [{"name": 2}]}) == (
        "json: cannot unmarshal number into Go struct field EnvVar.env.name of type string")
    assert refusal({"volumes": [{"name": 5, "emptyDir": {"medium": 1}}]}) == (
        "json: cannot unmarshal number into Go struct field EmptyDirVolumeSource.volumes.VolumeSource.emptyDir.medium "
        "of type v1.StorageMedium")


def test_an_unmarshal_json_failure_wins_over_a_saved_mismatch() -> None:
    assert refusal({"env": [{"name": 1}], "resources": {"limits": {"cpu": "x"}}}) == (
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def test_integers_are_checked_against_their_go_type() -> None:
    assert refusal({"volumes": [{"name": "v", "secret": {"defaultMode": 4294967296}}]}) == (
        "json: cannot unmarshal number 4294967296 into Go struct field "
        "SecretVolumeSource.volumes.VolumeSource.secret.defaultMode of type int32")


@pytest.mark.parametrize(("metadata", "problem"), [
    ({"uid": [1]}, "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.uid of type types.UID"),
    ({"annotations": {"a": 1}},
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string"),
    ({"managedFields": [{"operation": True}], "creationTimestamp": "2024-01-01T00:00:00+01:61"},
     'parsing time "2024-01-01T00:00:00+01:61": time zone offset minute out of range'),
    ({"name": "x", "creationTimestamp": "2024-01-01T00:00:00Z"}, None),
    # OLM decodes metadata with apimachinery's util/json, which matches keys exactly (encoding/json would fold
    # them: NAME would be name, Annotations annotations)
    ({"name": "x", "NAME": {"a": "b"}, "Annotations": {"a": 1}, "\u212aind": 1}, None),
])
def test_object_meta_problem(metadata: dict[str, Any], problem: str | None) -> None:
    assert object_meta_problem({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}) == problem


def test_api_version_must_be_a_string() -> None:
    assert object_meta_problem({"apiVersion": 1, "kind": "ConfigMap"}) == (
        "json: cannot unmarshal number into Go struct field metadataOnlyObject.TypeMeta.apiVersion of type string")
