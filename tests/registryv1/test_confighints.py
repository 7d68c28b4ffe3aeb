"""What we say beside OLM v1's configuration messages (common/bundle/registryv1/confighints.py): the keys its
decoder drops without a word, and the fields behind a refusal whose message names none. OLM's messages stay
byte for byte (tests/registryv1/test_config.py); these are extra lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from common.bundle.registryv1.config import load_config_file, parse_config
from common.bundle.registryv1.confighints import dropped_keys
from common.bundle.registryv1.model import ConfigurationError, RegistryV1
from tests.registryv1 import bundles

PREFIX = "invalid ClusterExtension configuration: invalid configuration: "


def refused(config: Any) -> ConfigurationError:
    bundle = RegistryV1(package_name="demo", csv=bundles.csv(supported=["AllNamespaces"]))
    with pytest.raises(ConfigurationError) as caught:
        parse_config(bundle, config, "demo")
    return caught.value


@pytest.mark.parametrize(("deployment_config", "hints"), [
    ({"env": [{"name": "A", "value": 2}]},
     ['invalid type for field "deploymentConfig.env.0.value": got number, want string']),
    ({"tolerations": [{"key": "a"}, {"tolerationSeconds": "30"}]},
     ['invalid type for field "deploymentConfig.tolerations.1.tolerationSeconds": got string, want integer']),
    ({"volumes": [{"configMap": {"name": "x"}}]},
     ['in "deploymentConfig.volumes.0": required field "name" is missing']),
    ({"volumeMounts": [{"name": "x"}]},
     ['in "deploymentConfig.volumeMounts.0": required field "mountPath" is missing']),
])
def test_a_refusal_that_names_no_field_gets_its_fields(deployment_config: dict[str, Any], hints: list[str]) -> None:
    error = refused({"deploymentConfig": deployment_config})
    assert str(error) == PREFIX + "validation failed"  # OLM's words, unchanged
    assert error.hints == tuple(hints)


def test_hints_only_for_the_units_olm_leaves_unnamed() -> None:
    error = refused({"deploymentConfig": {"env": [{"name": "A", "value": 2}], "tolerations": "x"}})
    assert str(error) == (PREFIX + "multiple errors found:\n  - validation failed\n"
                          '  - invalid type for field "deploymentConfig.tolerations": got string, want array')
    assert error.hints == ('invalid type for field "deploymentConfig.env.0.value": got number, want string',)
    assert refused({"logLevel": 1}).hints == ()
    grouped = refused({"logLevel": 1, "deploymentConfig": {"nodeSelector": {"disktype": 1},
                                                           "tolerations": {"key": "x"}}})
    assert str(grouped) == (PREFIX + "multiple errors found:\n  - validation failed\n"
                            '  - invalid type for field "deploymentConfig.nodeSelector.disktype": got number, want '
                            'string\n  - invalid type for field "deploymentConfig.tolerations": got object, want array'
                            '\n  - unknown field "logLevel"')
    assert grouped.hints == ()  # that "validation failed" heads the two lines after it: nothing is unnamed
    twice = refused({"deploymentConfig": {"volumeMounts": [{"name": "a", "readOnly": "x"}, {"name": "b"}]}})
    assert str(twice) == (PREFIX + "multiple errors found:\n  - validation failed\n  - required field \"mountPath\" "
                          'is missing\n  - invalid type for field "deploymentConfig.volumeMounts.0.readOnly": got '
                          "string, want boolean\n  - validation failed")
    assert twice.hints == ('in "deploymentConfig.volumeMounts.1": required field "mountPath" is missing',)


def test_a_quantity_that_does_not_parse_is_named_with_its_value() -> None:
    error = refused({"deploymentConfig": {"resources": {"limits": {"cpu": "1", "memory": "1Gb"}}}})
    assert str(error) == ("invalid deploymentConfig: failed to unmarshal deploymentConfig: quantities must match "
                          "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    assert error.hints == ('field "deploymentConfig.resources.limits.memory": "1Gb" is not a quantity',)


def test_dropped_keys_name_the_field_and_what_was_meant_never_the_value() -> None:
    config = {"deploymentConfig": {
        "tolerations": [{"key": "a", "effects": "NoSchedule"}],
        "env": [{"name": "PASSWORD", "valu": "hunter2"}],
        "volumes": [{"name": "v", "emptyDir": {"sizeLimt": "1Gi"}}],
        "affinity": {"nodeAffinity": {"zzz": 1}},
    }}
    assert dropped_keys(config) == [
        'deploymentConfig.tolerations.0: unknown field "effects" is ignored: Kubernetes\' Toleration has no such '
        'field, and OLM v1 drops it too (did you mean "effect"?)',
        'deploymentConfig.env.0: unknown field "valu" is ignored: Kubernetes\' EnvVar has no such field, and OLM '
        'v1 drops it too (did you mean "value"?)',
        'deploymentConfig.volumes.0.emptyDir: unknown field "sizeLimt" is ignored: Kubernetes\' '
        'EmptyDirVolumeSource has no such field, and OLM v1 drops it too (did you mean "sizeLimit"?)',
        'deploymentConfig.affinity.nodeAffinity: unknown field "zzz" is ignored: Kubernetes\' NodeAffinity has no '
        'such field, and OLM v1 drops it too',
    ]
    assert "hunter2" not in "".join(dropped_keys(config))


@pytest.mark.parametrize("config", [
    None, {}, {"deploymentConfig": None}, {"watchNamespace": "a", "extra": {"x": 1}},
    {"deploymentConfig": {"logLevel": 1}},  # the schema refuses it: not ours to warn about
    {"deploymentConfig": {"tolerations": [{"Effect": "NoSchedule", "KEY": "a"}]}},  # Go takes other cases
    {"deploymentConfig": {"nodeSelector": {"anything": "x"}, "annotations": {"any": "y"},
                          "resources": {"limits": {"example.com/gpu": "1"}}}},  # maps take any key
])
def test_nothing_dropped(config: Any) -> None:
    assert dropped_keys(config) == []


def test_a_config_file_warns_of_dropped_and_repeated_keys(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("watchNamespace: a\nwatchNamespace: b\ndeploymentConfig:\n  env: [{name: A, valu: b}]\n")
    warnings: list[str] = []
    assert load_config_file(path, warnings) == {"watchNamespace": "b",
                                                "deploymentConfig": {"env": [{"name": "A", "valu": "b"}]}}
    assert warnings == [
        f'{path}:0: key "watchNamespace" at line 2 repeats an earlier key of the same mapping: its last value is '
        "used, as kubectl does",
        f'{path}: deploymentConfig.env.0: unknown field "valu" is ignored: Kubernetes\' EnvVar has no such field, '
        'and OLM v1 drops it too (did you mean "value"?)',
    ]


@pytest.mark.parametrize(("config", "message", "hints"), [
    ({"deploymentconfig": {}}, 'unknown field "deploymentconfig"',
     ['unknown field "deploymentconfig" (did you mean "deploymentConfig"?)']),
    ({"deploymentConfig": {"resource": {}}}, 'unknown field "resource"',
     ['in "deploymentConfig": unknown field "resource" (did you mean "resources"?)']),
    ({"deploymentConfig": {"toleration": [], "envs": []}}, 'unknown field "toleration"',
     ['in "deploymentConfig": unknown field "toleration" (did you mean "tolerations"?)',
      'in "deploymentConfig": unknown field "envs" (did you mean "env"?)']),
    ({"logLevel": 1, "debug": True}, 'unknown field "logLevel"', ['unknown field "debug"']),  # OLM names one
    ({"logLevel": 1}, 'unknown field "logLevel"', []),  # OLM's message says it all
])
def test_unknown_fields_are_all_named_where_they_are_with_what_was_meant(config: dict[str, Any], message: str,
                                                                          hints: list[str]) -> None:
    error = refused(config)
    assert str(error) == PREFIX + message
    assert error.hints == tuple(hints)


@pytest.mark.parametrize(("modes", "config", "choices"), [
    (["AllNamespaces"], {"watchNamespace": "a"},
     "this bundle supports AllNamespaces: leave watchNamespace out to watch all namespaces"),
    (["AllNamespaces", "OwnNamespace"], {"watchNamespace": "a"},
     'this bundle supports AllNamespaces and OwnNamespace: leave watchNamespace out (or null) to watch all '
     'namespaces, or give "demo" (the install namespace)'),
    (["AllNamespaces", "SingleNamespace"], {"watchNamespace": "demo"},
     'this bundle supports AllNamespaces and SingleNamespace: leave watchNamespace out (or null) to watch all '
     'namespaces, or give an existing namespace other than "demo" (the install namespace)'),
    (["OwnNamespace", "SingleNamespace"], {},
     'this bundle supports OwnNamespace and SingleNamespace: give the namespace to watch: "demo" (the install '
     'namespace) or another existing one'),
    (["OwnNamespace"], {"watchNamespace": None},
     'this bundle supports OwnNamespace: give "demo" (the install namespace)'),
])
def test_a_refused_watch_namespace_says_what_it_may_be(modes: list[str], config: dict[str, Any],
                                                        choices: str) -> None:
    """OLM's words say it in parts (and "only supports OwnNamespace" of a bundle that supports AllNamespaces too)."""
    bundle = RegistryV1(package_name="demo", csv=bundles.csv(supported=modes))
    with pytest.raises(ConfigurationError) as caught:
        parse_config(bundle, config, "demo")
    assert caught.value.hints[-1] == choices
    assert refused({"deploymentConfig": {"env": "x"}}).hints == ()  # no word on watchNamespace where it is fine
