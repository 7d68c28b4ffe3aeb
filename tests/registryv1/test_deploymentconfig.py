"""deploymentConfig merged into every Deployment exactly as OLM v1's applyCustomConfigToDeployment does.

Each case's outcome is what OLM v1's renderer produced for the same bundle and configuration.
"""

from __future__ import annotations

from typing import Any

import pytest

from common.bundle.registryv1.deploymentconfig import apply_deployment_config, decode_deployment_config
from common.bundle.registryv1.model import ConfigurationError, RegistryV1
from common.bundle.registryv1.render import render
from common.bundle.registryv1.typed import decode
from common.contract.objects import Obj

from .test_render_builders import ALL, bundle, container, csv, deployment, install_modes

NODE_AFFINITY = {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1, "preference": {"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]}}]}
POD_AFFINITY = {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "t"}]}


def dc_bundle() -> RegistryV1:
    pod = {
        "containers": [
            container("a",
                      env=[{"name": "X", "value": "old"}, {"name": "Y", "value": "1"}, {"name": "X", "value": "dup"}],
                      envFrom=[{"configMapRef": {"name": "cm"}}], volumeMounts=[{"name": "v1", "mountPath": "/v1"}],
                      resources={"limits": {"cpu": "1"}}),
            container("b"),
        ],
        "initContainers": [container("init")],
        "volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2", "emptyDir": {}}],
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "nodeSelector": {"disk": "ssd"},
        "affinity": {"nodeAffinity": NODE_AFFINITY, "podAffinity": POD_AFFINITY},
    }
    return bundle(csv("dc.v1", modes=install_modes(ALL), annotations={"keep": "csv"},
                      deployments=[deployment("dc", pod=pod, template_annotations={"tmpl": "t"})]))


def rendered(config: Any) -> Obj:
    typed = decode_deployment_config(config)
    (dep,) = [o for o in render(decode(dc_bundle()), "inst", deployment_config=typed) if o["kind"] == "Deployment"]
    return dep


def pod(config: Any) -> Obj:
    spec: Obj = rendered(config)["spec"]["template"]["spec"]
    return spec


def containers(config: Any, key: str) -> list[Any]:
    return [c.get(key) for c in pod(config)["containers"]]


def test_env_overrides_by_name_in_place_and_appends_the_rest() -> None:
    config = {"env": [{"name": "X", "value": "new"}, {"name": "Z", "value": "z"}, {"name": "Z", "value": "z2"}]}
    assert containers(config, "env") == [
        # the last of two existing X is the one replaced; a new name given twice is appended twice
        [{"name": "X", "value": "old"}, {"name": "Y", "value": "1"}, {"name": "X", "value": "new"},
         {"name": "Z", "value": "z"}, {"name": "Z", "value": "z2"}],
        [{"name": "X", "value": "new"}, {"name": "Z", "value": "z"}, {"name": "Z", "value": "z2"}],
    ]
    assert "env" not in pod(config)["initContainers"][0]


def test_env_from_appends_sources_not_already_there() -> None:
    config = {"envFrom": [{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}}, {"secretRef": {"name": "s"}},
                          {"configMapRef": {"name": "cm", "optional": False}}]}
    added = [{"secretRef": {"name": "s"}}, {"configMapRef": {"name": "cm", "optional": False}}]
    assert containers(config, "envFrom") == [[{"configMapRef": {"name": "cm"}}, *added],
                                             [{"configMapRef": {"name": "cm"}}, *added]]


def test_volumes_and_mounts_override_by_name() -> None:
    config = {"volumes": [{"name": "v2", "configMap": {"name": "c"}},
                          {"name": "v3", "emptyDir": {"sizeLimit": "1000M"}}],
              "volumeMounts": [{"name": "v1", "mountPath": "/new"}, {"name": "v3", "mountPath": "/v3"}]}
    assert pod(config)["volumes"] == [{"name": "v1", "emptyDir": {}}, {"name": "v2", "configMap": {"name": "c"}},
                                      {"name": "v3", "emptyDir": {"sizeLimit": "1G"}}]
    mounts = [{"name": "v1", "mountPath": "/new"}, {"name": "v3", "mountPath": "/v3"}]
    assert containers(config, "volumeMounts") == [mounts, mounts]


def test_tolerations_append_unless_equal_in_go() -> None:
    config = {"tolerations": [{"key": "k", "operator": "Exists", "value": ""}, {"key": "n", "effect": "NoSchedule"},
                              {"key": "n", "effect": "NoSchedule"}]}
    assert pod(config)["tolerations"] == [{"key": "k", "operator": "Exists"}, {"key": "n", "effect": "NoSchedule"}]


@pytest.mark.parametrize(("given", "expected"), [
    ({"requests": {"memory": "0.5Gi", "cpu": 0.25}}, {"requests": {"cpu": "250m", "memory": "512Mi"}}),
    ({}, {}),
])
def test_resources_replace_every_containers_as_a_whole(given: Obj, expected: Obj) -> None:
    assert containers({"resources": given}, "resources") == [expected, expected]
    assert pod({"resources": given})["initContainers"][0]["resources"] == {}


def test_node_selector_replaces_and_empty_clears() -> None:
    assert pod({"nodeSelector": {"zone": "a"}})["nodeSelector"] == {"zone": "a"}
    assert "nodeSelector" not in pod({"nodeSelector": {}})


@pytest.mark.parametrize(("given", "expected"), [
    ({}, None),  # affinity: {} erases everything
    ({"nodeAffinity": {}}, {"podAffinity": POD_AFFINITY}),  # an empty sub-affinity erases that one
    ({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}, {"nodeAffinity": NODE_AFFINITY}),
    ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}},
      "podAffinity": {}}, None),  # nothing left: no affinity at all
    ({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "podAffinityTerm": {"topologyKey": "h"}}]}},
     {"nodeAffinity": NODE_AFFINITY, "podAffinity": POD_AFFINITY, "podAntiAffinity": {
         "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {"topologyKey": "h"}}]}}),
])
def test_affinity(given: Obj, expected: Obj | None) -> None:
    assert pod({"affinity": given}).get("affinity") == expected


def test_affinity_on_a_pod_without_one() -> None:
    dep: Obj = {"spec": {"template": {"spec": {"containers": []}}}}
    apply_deployment_config(dep, decode_deployment_config({"affinity": {"podAffinity": POD_AFFINITY}}))
    assert dep["spec"]["template"]["spec"]["affinity"] == {"podAffinity": POD_AFFINITY}


def test_annotations_are_added_to_deployment_and_template_never_overriding() -> None:
    dep = rendered({"annotations": {"tmpl": "config", "keep": "config", "new": "n"}})
    assert dep["metadata"]["annotations"] == {"keep": "config", "new": "n", "tmpl": "config"}
    assert dep["spec"]["template"]["metadata"]["annotations"] == {
        "keep": "csv", "new": "n", "olm.operatorNamespace": "inst", "olm.targetNamespaces": "", "tmpl": "t"}


@pytest.mark.parametrize("config", [None, {}, {"env": [], "tolerations": [], "annotations": {}}])
def test_nothing_or_empty_lists_change_nothing(config: Any) -> None:
    assert rendered(config) == rendered(None)


def test_null_members_mean_not_given() -> None:
    assert fields({"resources": None, "nodeSelector": None, "affinity": None}) == {}
    assert decode_deployment_config(None) is None


def fields(config: Any) -> Obj | None:
    typed = decode_deployment_config(config)
    return None if typed is None else typed.fields


def test_config_is_decoded_into_go_types() -> None:
    assert fields({
        "resources": {"limits": {"memory": "1024Mi"}}, "unknown": 1,
        "tolerations": [{"key": "k", "tolerationSeconds": 30.0}],
    }) == {"tolerations": [{"key": "k", "tolerationSeconds": 30}], "resources": {"limits": {"memory": "1Gi"}}}


@pytest.mark.parametrize(("config", "message"), [
    ({"resources": {"requests": {"memory": "1kk"}}}, "unable to parse quantity's suffix"),
    ({"volumes": [{"name": "v", "emptyDir": {"sizeLimit": "x"}}]},
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ({"env": [{"name": "A", "value": 1}]},
     "json: cannot unmarshal number into Go struct field EnvVar.env.value of type string"),
])
def test_config_go_refuses_is_a_configuration_error(config: Obj, message: str) -> None:
    with pytest.raises(ConfigurationError) as exc:
        decode_deployment_config(config)
    assert str(exc.value) == f"invalid deploymentConfig: failed to unmarshal deploymentConfig: {message}"
