"""The configuration of registry+v1 bundles: schema per install modes, the shipped schema data, OLM v1's
messages byte for byte, deploymentConfig decoding, configuration files (spec §2).

Every expected message below is what OLM v1's own code (``config.UnmarshalConfig`` and the provider's
``GetDeploymentConfig`` step, built from operator-controller's vendored tree) printed for the same bundle
install modes, configuration and install namespace. Where OLM's order is Go's random map order, the comment
says so and the expected text is ours (the configuration's key order).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from common.bundle.registryv1 import config as cfg
from common.bundle.registryv1.config import (
    CONFIG_FILE_MAX_BYTES,
    BundleConfig,
    config_schema,
    load_config_file,
    parse_config,
)
from common.bundle.registryv1.configerrors import SUPPORTED_KEYWORDS
from common.bundle.registryv1.model import BundleInputError, ConfigurationError, RegistryV1
from tests.registryv1 import bundles
from tools import gen_registryv1_schema as gen

A, OWN, S, M = "AllNamespaces", "OwnNamespace", "SingleNamespace", "MultiNamespace"
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "common/bundle/registryv1/registryv1bundleconfig.json"
NS_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


def bundle(*supported: str) -> RegistryV1:
    return RegistryV1(package_name="demo", csv=bundles.csv(supported=supported))


def refusal(modes: list[str], config: Any, namespace: str = "pulp") -> str:
    with pytest.raises(ConfigurationError) as caught:
        parse_config(bundle(*modes), config, namespace)
    return str(caught.value)


# --- the schema per install modes (spec §2's table) ----------------------------------------------------------

VALUE = {"type": "string", "minLength": 1, "maxLength": 63, "pattern": NS_PATTERN}
DESCRIPTION = "The namespace that the operator should watch for custom resources"


@pytest.mark.parametrize(("modes", "watch", "required"), [
    pytest.param([A], None, False, id="all-only"),
    pytest.param([M], None, False, id="multi-only"),
    pytest.param([A, M], None, False, id="all-multi"),
    pytest.param([], None, False, id="none"),
    pytest.param([A, OWN], {"description": DESCRIPTION,
                          "anyOf": [{"type": "null"}, {**VALUE, "format": "ownNamespaceInstallMode"}]}, False,
                 id="all-own"),
    pytest.param([A, S], {"description": DESCRIPTION,
                          "anyOf": [{"type": "null"}, {**VALUE, "format": "singleNamespaceInstallMode"}]}, False,
                 id="all-single"),
    pytest.param([A, OWN, S], {"description": DESCRIPTION, "anyOf": [{"type": "null"}, VALUE]}, False,
                 id="all-own-single"),
    pytest.param([OWN, S], {"description": DESCRIPTION, **VALUE}, True, id="own-single"),
    pytest.param([OWN], {"description": DESCRIPTION, **VALUE, "format": "ownNamespaceInstallMode"}, True,
                 id="own-only"),
    pytest.param([S, M], {"description": DESCRIPTION, **VALUE, "format": "singleNamespaceInstallMode"}, True,
                 id="single-multi"),
])
def test_schema_follows_install_modes(modes: list[str], watch: dict[str, Any] | None, required: bool) -> None:
    schema = config_schema(bundle(*modes))
    assert schema.get("properties", {}).get("watchNamespace") == watch
    assert schema.get("required") == (["watchNamespace"] if required else None)
    assert schema["additionalProperties"] is False
    assert schema["type"] == "object"
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert set(schema["properties"]) == {"deploymentConfig"} | ({"watchNamespace"} if watch else set())


def test_schema_counts_only_supported_modes() -> None:
    csv = bundles.csv(supported=[OWN])
    csv["spec"]["installModes"] += [{"type": "AllNamespaces", "supported": "true"}, {"supported": True}, "junk"]
    schema = config_schema(RegistryV1(package_name="demo", csv=csv))
    assert schema["required"] == ["watchNamespace"]  # "true" (a string) is not supported: true


def test_schema_is_a_fresh_copy_each_time() -> None:
    first = config_schema(bundle(A))
    first["properties"].clear()
    assert "deploymentConfig" in config_schema(bundle(A))["properties"]


# --- the shipped schema data -------------------------------------------------------------------------------------


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _schemas(node: Any, *, inside_properties: bool = False) -> Any:
    """Every sub-schema (not the maps of property names to schemas)."""
    if isinstance(node, dict):
        if not inside_properties:
            yield node
        for key, value in node.items():
            if key in ("properties", "patternProperties", "schemas"):
                for sub in value.values():
                    yield from _schemas(sub)
            elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
                yield from _schemas(value)
            elif key in ("allOf", "anyOf", "oneOf"):
                for sub in value:
                    yield from _schemas(sub)
            elif key == "components":
                yield from _schemas(value, inside_properties=True)


def test_data_file_is_closed_under_ref_and_has_the_spec_properties() -> None:
    schema = json.loads(DATA.read_text())
    components = schema["components"]["schemas"]
    refs = {n["$ref"] for n in _walk(schema) if isinstance(n.get("$ref"), str)}
    assert refs, "the schema references the core types"
    for ref in refs:
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.removeprefix("#/components/schemas/") in components, ref
    deployment = schema["properties"]["deploymentConfig"]
    assert set(deployment["properties"]) == {"env", "envFrom", "resources", "nodeSelector", "tolerations", "volumes",
                                             "volumeMounts", "affinity", "annotations"}
    assert deployment["additionalProperties"] is False
    assert deployment["properties"]["resources"] == {
        "$ref": "#/components/schemas/io.k8s.api.core.v1.ResourceRequirements"}
    assert deployment["properties"]["nodeSelector"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"watchNamespace", "deploymentConfig"}


def test_data_file_uses_only_what_the_message_rebuilder_mirrors() -> None:
    """The messages are right only for keywords the Go tree rebuilder knows, only if no $ref has siblings
    that validate (Go checks them, Python's draft-07 ignores them), and only for formats both libraries treat
    alike (int32/int64 are unknown to both; date-time is ported)."""
    schema = json.loads(DATA.read_text())
    ignored = {"description", "default", "title", "$schema", "$id", "readOnly", "components", "example"}
    formats = set()
    for node in _schemas(schema):
        keywords = {k for k in node if not k.startswith("x-kubernetes-")} - ignored
        assert keywords <= SUPPORTED_KEYWORDS, keywords - SUPPORTED_KEYWORDS
        if "$ref" in node:
            assert keywords == {"$ref"}, node
        if "format" in node:
            formats.add(node["format"])
        if "type" in node:
            assert isinstance(node["type"], str)
    assert formats == {"int32", "int64", "date-time"}


def test_data_file_is_the_generators_output() -> None:
    """Regenerating from the components the file holds gives the file back, byte for byte: the file is closed,
    and it is exactly what tools/gen_registryv1_schema.py writes."""
    text = DATA.read_text()
    schema = json.loads(text)
    assert gen.render(gen.build_schema({"components": schema["components"]})) == text


def test_data_file_ships_in_the_wheel() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "registryv1bundleconfig.json" in pyproject["tool"]["setuptools"]["package-data"]["common.bundle.registryv1"]
    assert cfg.base_schema() == json.loads(DATA.read_text())


def test_generator_collects_the_closure_and_writes_like_go() -> None:
    ref = "#/components/schemas/"
    core = "io.k8s.api.core.v1."
    schemas = {core + name: {"type": "object"} for name in
               ("Toleration", "EnvFromSource", "EnvVar", "Volume", "VolumeMount", "Affinity")}
    schemas[core + "ResourceRequirements"] = {"type": "object", "description": "a <b> & c",
                                              "properties": {"limits": {"$ref": ref + "Q"}}}
    schemas["Q"] = {"oneOf": [{"type": "string"}, {"type": "number"}]}
    schemas["Unused"] = {"type": "string"}
    built = gen.build_schema({"components": {"schemas": schemas}})
    assert set(built["components"]["schemas"]) == set(schemas) - {"Unused"}
    text = gen.render(built)
    assert '"description": "a \\u003cb\\u003e \\u0026 c"' in text
    assert list(built) == ["$schema", "$id", "title", "description", "type", "properties", "additionalProperties",
                           "components"]
    del schemas["Q"]
    with pytest.raises(gen.GeneratorError, match="no schema 'Q'"):
        gen.build_schema({"components": {"schemas": schemas}})


def test_generator_command(tmp_path: Path) -> None:
    source = tmp_path / "api.json"
    source.write_text(json.dumps({"components": json.loads(DATA.read_text())["components"]}))
    out = tmp_path / "out.json"
    assert gen.main([str(source), "--output", str(out)]) == 0
    assert out.read_text() == DATA.read_text()
    assert gen.main([str(tmp_path / "missing.json"), "--output", str(out)]) == 1


# --- OLM's messages ------------------------------------------------------------------------------------------------


OLM: dict[str, Any] = json.loads((Path(__file__).parent / "olm_config_messages.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", OLM["cases"], ids=[case["id"] for case in OLM["cases"]])
def test_refusals_are_olms_messages(case: dict[str, Any]) -> None:
    assert refusal(case["modes"], case["config"], case["namespace"]) == case["expected"]


def test_the_spec_examples() -> None:
    assert refusal([A], {"logLevel": 1}) == (
        'invalid ClusterExtension configuration: invalid configuration: unknown field "logLevel"')
    assert refusal([OWN], {}) == ('invalid ClusterExtension configuration: invalid configuration: required field '
                                '"watchNamespace" is missing')
    assert refusal([OWN], {"watchNamespace": "pulp-x"}, "pulp") == (
        "invalid ClusterExtension configuration: invalid configuration: invalid format for field \"watchNamespace\": "
        "'pulp-x' is not valid ownNamespaceInstallMode: invalid value \"pulp-x\": must be \"pulp\" (the namespace "
        "where the operator is installed) because this operator only supports OwnNamespace install mode")
    assert refusal([A], {"deploymentConfig": {"tolerations": {}, "nodeSelector": {"disktype": 1}}}) == (
        "invalid ClusterExtension configuration: invalid configuration: multiple errors found:\n"
        "  - invalid type for field \"deploymentConfig.tolerations\": got object, want array\n"
        "  - invalid type for field \"deploymentConfig.nodeSelector.disktype\": got number, want string")
    assert refusal([A], {"deploymentConfig": {"resources": {"limits": {"memory": "1x"}}}}) == (
        "invalid deploymentConfig: failed to unmarshal deploymentConfig: quantities must match the regular "
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


# OLM's own table (config_test.go Test_UnmarshalConfig and error_formatting_test.go), the raw configuration read
# from a file as cosctl reads it; the expected text is what OLM's code printed for each row.
PORTED = [(r["modes"], r["raw"], r["namespace"], r["error"], r["watch"]) for r in OLM["ported"]]


@pytest.mark.parametrize(("modes", "raw", "namespace", "error", "watch"), PORTED)
def test_olms_own_table(tmp_path: Path, modes: list[str], raw: str | None, namespace: str, error: str | None,
                        watch: str | None) -> None:
    config = None
    if raw is not None:
        (tmp_path / "config.yaml").write_text(raw)
        try:
            config = load_config_file(tmp_path / "config.yaml")
        except ConfigurationError as exc:  # a configuration that is not an object
            assert str(exc) == error
            return
    if error is None:
        assert parse_config(bundle(*modes), config, namespace) == BundleConfig(watch, None)
    else:
        assert refusal(modes, config, namespace) == error


@pytest.mark.parametrize("config", [None, {}, {"watchNamespace": None}])
def test_no_configuration_is_all_namespaces(config: Any) -> None:
    assert parse_config(bundle(A, OWN), config, "pulp") == BundleConfig(None, None)


def test_empty_install_namespace_skips_the_namespace_formats() -> None:
    assert parse_config(bundle(OWN), {"watchNamespace": "x"}, "").watch_namespace == "x"
    assert parse_config(bundle(S), {"watchNamespace": "x"}, "").watch_namespace == "x"


def test_bundle_config_is_frozen() -> None:
    result = parse_config(bundle(OWN), {"watchNamespace": "pulp"}, "pulp")
    with pytest.raises(AttributeError):
        result.watch_namespace = "other"  # type: ignore[misc]


def test_the_go_pattern_anchor_refuses_a_final_newline() -> None:
    """Python's ``$`` matches before a final newline, Go's does not: OLM refuses ``ns\\n``."""
    assert re.search(NS_PATTERN, "ns\n")
    assert refusal([OWN, S], {"watchNamespace": "ns\n"}).endswith(
        f'field "watchNamespace" must match pattern "{NS_PATTERN}"')


# --- deploymentConfig decoding ---------------------------------------------------------------------------------


def decoded(deployment_config: dict[str, Any]) -> dict[str, Any] | None:
    """The fields of OLM's typed DeploymentConfig after json.Unmarshal, as Go prints each one."""
    typed = parse_config(bundle(A), {"deploymentConfig": deployment_config}, "pulp").deployment_config
    return None if typed is None else typed.fields


def test_decoding_keeps_known_fields_canonical() -> None:
    """What json.Marshal prints for the decoded SubscriptionConfig (Go's output for the same input): quantities
    canonical, integers as integers, omitempty fields given empty (the toleration's key) left out, struct fields
    in Go's order."""
    assert decoded({
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "resources": {"limits": {"cpu": 0.5, "memory": "0.5Gi"}, "requests": {"cpu": "1000m", "memory": 1e21}},
        "tolerations": [{"key": "", "operator": "Exists", "tolerationSeconds": 5.0}],
        "env": [{"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}}],
        "volumes": [{"name": "e", "emptyDir": {"sizeLimit": "1.5Gi"}}],
        "annotations": {"a": "b"},
    }) == {
        "annotations": {"a": "b"},
        "env": [{"name": "X", "valueFrom": {"resourceFieldRef": {"divisor": "1m", "resource": "limits.cpu"}}}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "1", "memory": "1e+21"}},
        "tolerations": [{"operator": "Exists", "tolerationSeconds": 5}],
        "volumes": [{"emptyDir": {"sizeLimit": "1536Mi"}, "name": "e"}],
    }
    volume = (decoded({"volumes": [{"emptyDir": {"sizeLimit": "1"}, "name": "e"}]}) or {})["volumes"][0]
    assert list(volume) == ["name", "emptyDir"]  # Go's field order, not the given one


def test_decoding_matches_keys_as_go_does() -> None:
    """Unknown keys inside Kubernetes types pass the schema (the OpenAPI schemas do not close them) and Go's
    decoder drops them; keys that differ only in case fill the field, the last in sorted order winning;
    objects given twice merge."""
    assert decoded({"env": [{"name": "a", "Value": "b", "unknown": 1, "\u017fecret": 2}]}) == {
        "env": [{"name": "a", "value": "b"}]}
    assert decoded({"env": [{"name": "a", "Value": "b", "value": "c"}]}) == {"env": [{"name": "a", "value": "c"}]}
    assert decoded({"volumes": [{"name": "v", "Secret": {"optional": True}, "secret": {"secretName": "s"}}]}) == {
        "volumes": [{"name": "v", "secret": {"optional": True, "secretName": "s"}}]}
    assert decoded({"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"creationTimestamp": "2024-01-01T00:00:00+01:00"}, "spec": {}}}}]}) == {
        "volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {
            "metadata": {"creationTimestamp": "2023-12-31T23:00:00Z"}, "spec": {"resources": {}}}}}]}


def test_decoding_follows_encoding_json_where_keys_repeat_in_other_cases() -> None:
    """Each expected value is what Go's json.Unmarshal into SubscriptionConfig gave for the same input: a list
    given twice is decoded element by element into the earlier one, a null leaves a string as it was (the
    Kelvin sign folds like k and sorts after it), an empty map is not a nil one."""
    assert decoded({"affinity": {"podAffinity": {
        "RequiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "a", "namespaces": ["n"]},
                                                           {"topologyKey": "b"}],
        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "c"}],
    }}}) == {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"namespaces": ["n"], "topologyKey": "c"}]}}}
    assert decoded({"tolerations": [{"key": "k", "\u212aey": None}]}) == {"tolerations": [{"key": "k"}]}
    assert decoded({"nodeSelector": {}, "env": []}) == {"nodeSelector": {}, "env": []}


def test_decoding_prints_times_as_metav1_time_does() -> None:
    """Go's output: the instant in UTC to the second, four-digit (or longer, or negative) years, and null (left
    out) for the zero time."""
    def stamp(text: str) -> Any:
        fields = decoded({"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {
            "metadata": {"creationTimestamp": text}, "spec": {}}}}]}) or {}
        return fields["volumes"][0]["ephemeral"]["volumeClaimTemplate"]["metadata"].get("creationTimestamp")
    assert stamp("0006-01-01T01:00:00+01:00") == "0006-01-01T00:00:00Z"
    assert stamp("0000-01-01T00:00:00+01:00") == "-0001-12-31T23:00:00Z"
    assert stamp("9999-12-31T23:00:00-05:00") == "10000-01-01T04:00:00Z"
    assert stamp("0001-01-01T01:00:00+01:00") is None


@pytest.mark.parametrize(("config", "message"), [
    ({"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"key": "k", "NAME": 1}}}]},
     "json: cannot unmarshal number into Go struct field "
     "ConfigMapKeySelector.env.valueFrom.configMapKeyRef.LocalObjectReference.name of type string"),
    ({"tolerations": [{"Effect": 1}]},
     "json: cannot unmarshal number into Go struct field Toleration.tolerations.effect of type v1.TaintEffect"),
    ({"resources": {"Limits": []}},
     "json: cannot unmarshal array into Go struct field ResourceRequirements.resources.limits of type v1.ResourceList"),
    ({"tolerations": [{"tolerationSeconds": 1e19}]},
     "json: cannot unmarshal number 10000000000000000000 into Go struct field Toleration.tolerations.tolerationSeconds "
     "of type int64"),
])
def test_what_the_schema_lets_through_and_go_refuses_is_gos_message(config: dict[str, Any], message: str) -> None:
    """A key spelled in another case is no property of the schema, so only Go's decoder sees its value: its
    message names the struct, the JSON path (with an embedded struct's Go name) and Go's named type."""
    assert refusal([A], {"deploymentConfig": config}) == (
        f"invalid deploymentConfig: failed to unmarshal deploymentConfig: {message}")


def test_empty_deployment_config_is_kept() -> None:
    assert decoded({}) == {}


# --- configuration files -----------------------------------------------------------------------------------------


def test_load_yaml_and_json(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("watchNamespace: ns1\ndeploymentConfig:\n  nodeSelector: {a: b}\n")
    (tmp_path / "c.json").write_text('{"watchNamespace": "ns1", "deploymentConfig": {"nodeSelector": {"a": "b"}}}')
    expected = {"watchNamespace": "ns1", "deploymentConfig": {"nodeSelector": {"a": "b"}}}
    assert load_config_file(tmp_path / "c.yaml") == expected
    assert load_config_file(str(tmp_path / "c.json")) == expected


@pytest.mark.parametrize("text", ["", "# nothing\n", "null\n", "---\n"])
def test_empty_file_is_no_configuration(tmp_path: Path, text: str) -> None:
    (tmp_path / "c.yaml").write_text(text)
    assert load_config_file(tmp_path / "c.yaml") is None


@pytest.mark.parametrize(("text", "kind"), [("- a\n", "array"), ("hello\n", "string"), ("5\n", "number"),
                                            ("true\n", "boolean")])
def test_non_object_file_is_refused_as_olm_refuses_it(tmp_path: Path, text: str, kind: str) -> None:
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigurationError) as caught:
        load_config_file(tmp_path / "c.yaml")
    assert str(caught.value) == (f"invalid ClusterExtension configuration: invalid configuration: invalid type: got "
                                 f"{kind}, want object")


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le-bom", "utf-16-be-bom"])
def test_a_configuration_file_is_decoded_as_kubectl_decodes_a_file(tmp_path: Path, encoding: str) -> None:
    """What Windows editors save as "Unicode" (UTF-16 with its byte order mark) reads as its UTF-8 twin."""
    text = 'watchNamespace: "team-a"\ndeploymentConfig: {nodeSelector: {disk: ssd}}\n'
    marks = {"utf-16-le-bom": b"\xff\xfe", "utf-16-be-bom": b"\xfe\xff"}
    data = marks[encoding] + text.encode(encoding[:9]) if encoding in marks else text.encode(encoding)
    path = tmp_path / "c.yaml"
    path.write_bytes(data)
    assert load_config_file(path) == {"watchNamespace": "team-a", "deploymentConfig": {"nodeSelector": {"disk": "ssd"}}}


def test_unusable_files_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with pytest.raises(BundleInputError, match=f"^{re.escape(str(path))}: no such file or directory$"):
        load_config_file(path)
    path.write_text("a: [1\n")
    with pytest.raises(BundleInputError, match=f"^{re.escape(str(path))}:0: invalid YAML: "):
        load_config_file(path)
    path.write_text("a: 1\n---\nb: 2\n")
    with pytest.raises(BundleInputError) as caught:
        load_config_file(path)
    assert str(caught.value) == f"{path}: a configuration is one document, found 2"
    with pytest.raises(BundleInputError) as caught:
        load_config_file(tmp_path)
    assert str(caught.value) == f"{tmp_path}: is a directory, not a configuration file"
    path.write_bytes(b"a: \xff\n")
    with pytest.raises(BundleInputError) as caught:
        load_config_file(path)
    assert str(caught.value) == f"{path}: not UTF-8 text"
    path.write_bytes(b"\xff\xfea\x00:\x00 \x00\x00\xd8")   # UTF-16's mark, then half a surrogate pair
    with pytest.raises(BundleInputError) as caught:
        load_config_file(path)
    assert str(caught.value) == f"{path}: not UTF-16 text, though it starts with UTF-16's byte order mark"
    path.write_text("a: " + "x" * CONFIG_FILE_MAX_BYTES + "\n")
    with pytest.raises(BundleInputError) as caught:
        load_config_file(path)
    assert str(caught.value) == f"{path}: more than {CONFIG_FILE_MAX_BYTES} bytes"
    with pytest.raises(BundleInputError) as caught:
        load_config_file("/dev/zero")   # a stream that never ends is refused once it passed the limit
    assert str(caught.value) == f"/dev/zero: more than {CONFIG_FILE_MAX_BYTES} bytes"
