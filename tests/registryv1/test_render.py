"""render() and check_supported() of a decoded bundle: OLM v1's objects, in its generator order, and its refusals
word for word.

The expected objects and names below are what OLM v1's renderer produced for the same bundles (see
test_render_builders); the artefacts the spec lets us drop (null-valued keys, an empty status) are left out.
"""

from __future__ import annotations

from typing import Any

import pytest

from common.bundle.registryv1.deploymentconfig import decode_deployment_config
from common.bundle.registryv1.install import InstallOptions, render_bundle
from common.bundle.registryv1.model import BundleInputError, ConfigurationError, RenderError
from common.bundle.registryv1.render import check_supported, render
from common.bundle.registryv1.typed import decode
from common.contract.objects import Obj

from .test_render_builders import (
    ALL,
    MULTI,
    OWN,
    SINGLE,
    bundle,
    csv,
    deployment,
    install_modes,
    rbac_bundle,
    rule,
    webhook_bundle,
)

OPERATOR_ROLE = "ops.v1.2.3-ops-oper-ioy1xmov0cb3z7xco7s6v8dcf33a47apz2jjcbs4psf"  # permissions + namespaces rule
DEFAULT_ROLE = "ops.v1.2.3-default-c6a762bfcqd7t0ajen9fu47j8u85msn3hf661smcynm"
OPERATOR_CLUSTER_ROLE = "ops.v1.2.3-ops-ope-35wxotwxsed49ym2rl1662r8sfzvq5mh995v8ioo2cqz"
METRICS_CLUSTER_ROLE = "ops.v1.2.3-ops-met-200rkr474vre0id803509x675nazsh50fcx6bw1bg2nf"
OPERATOR_NS_ROLE = "ops.v1.2.3-ops-ope-2z9l56sn4mk22593tksrpf3zq4vlm2kxgexm8sidcdtq"  # permissions as they are
DEFAULT_NS_ROLE = "ops.v1.2.3-default-2xijhe3kxetsg5v8vo28270q3qske3ks3dyrospoht3p"


def identities(objs: list[Obj]) -> list[tuple[str, str, str]]:
    return [(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objs]


def by_kind(objs: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objs if o["kind"] == kind]


def test_all_namespaces_objects_come_in_olm_generator_order() -> None:
    objs = render(decode(rbac_bundle(ALL, OWN, SINGLE)), "ops")
    assert identities(objs) == [
        ("ServiceAccount", "ops", "ops-operator"),  # "default" (the unnamed account) gets none
        ("ServiceAccount", "ops", "ops-metrics"),
        ("ClusterRole", "", OPERATOR_CLUSTER_ROLE),
        ("ClusterRoleBinding", "", OPERATOR_CLUSTER_ROLE),
        ("ClusterRole", "", METRICS_CLUSTER_ROLE),
        ("ClusterRoleBinding", "", METRICS_CLUSTER_ROLE),
        ("ClusterRole", "", OPERATOR_ROLE),
        ("ClusterRoleBinding", "", OPERATOR_ROLE),
        ("ClusterRole", "", DEFAULT_ROLE),
        ("ClusterRoleBinding", "", DEFAULT_ROLE),
        ("CustomResourceDefinition", "", "widgets.example.com"),
        ("ConfigMap", "ops", "ops-config"),  # namespaced: moved into the install namespace
        ("ClusterRole", "", "ops-viewer"),
        ("VerticalPodAutoscaler", "", "ops-vpa"),  # operator-registry calls it cluster-scoped; OLM follows
        ("PriorityClass", "", "ops-high"),
        ("Deployment", "ops", "ops-controller"),
    ]


def test_all_namespaces_lifts_permissions_to_cluster_roles_with_the_namespaces_rule() -> None:
    objs = render(decode(rbac_bundle(ALL, OWN, SINGLE)), "ops")
    roles = {o["metadata"]["name"]: o for o in by_kind(objs, "ClusterRole")}
    assert roles[DEFAULT_ROLE] == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": DEFAULT_ROLE},
        "rules": [
            {"verbs": ["create"], "apiGroups": [""], "resources": ["events"]},
            {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]},
        ],
    }
    assert roles[OPERATOR_CLUSTER_ROLE]["rules"] == [
        {"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"], "resourceNames": ["one"]},
        {"verbs": ["get"], "nonResourceURLs": ["/metrics"]},
    ]
    binding = next(o for o in by_kind(objs, "ClusterRoleBinding") if o["metadata"]["name"] == DEFAULT_ROLE)
    assert binding == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": DEFAULT_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "ops"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": DEFAULT_ROLE},
    }


def test_the_deployment_is_the_csv_spec_after_the_go_round_trip_with_olm_parity_rules() -> None:
    objs = render(decode(rbac_bundle(ALL, OWN, SINGLE)), "ops")
    assert by_kind(objs, "Deployment") == [{
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ops-controller", "namespace": "ops", "labels": {"app.kubernetes.io/name": "ops"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "ops-controller"}},
            "template": {
                "metadata": {
                    "labels": {"app": "ops-controller"},
                    # CSV annotations under the template's own, plus the watched namespaces ("" = all) and the
                    # install namespace
                    "annotations": {"capabilities": "Basic Install", "olm.targetNamespaces": "",
                                    "olm.operatorNamespace": "ops", "team": "template"},
                },
                "spec": {
                    "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "512Mi"}}],  # secretName: not a field
                    "initContainers": [
                        {"name": "init", "image": "example.com/init:v1", "resources": {"requests": {"cpu": "100m"}}}
                    ],
                    "containers": [{
                        "name": "manager",
                        "image": "example.com/manager:v1",
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "env": [{"name": "MEM", "valueFrom": {
                            "resourceFieldRef": {"resource": "limits.memory", "divisor": "0"},
                        }}],
                        "resources": {"limits": {"cpu": "2", "memory": "512Mi"},
                                      "requests": {"cpu": "50m", "memory": "1Gi"}},
                        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                        "livenessProbe": {"exec": {}, "httpGet": {"path": "/healthz", "port": "http"}},
                    }],
                    "serviceAccountName": "ops-operator",
                    "priority": 0,
                },
            },
            "strategy": {},
            "revisionHistoryLimit": 1,
        },
    }]


def test_own_namespace_gets_roles_in_the_watched_namespace() -> None:
    objs = render(decode(rbac_bundle(OWN, SINGLE)), "ops", watch_namespace="ops")
    assert identities(objs)[:8] == [
        ("ServiceAccount", "ops", "ops-operator"),
        ("ServiceAccount", "ops", "ops-metrics"),
        ("Role", "ops", OPERATOR_NS_ROLE),
        ("RoleBinding", "ops", OPERATOR_NS_ROLE),
        ("Role", "ops", DEFAULT_NS_ROLE),
        ("RoleBinding", "ops", DEFAULT_NS_ROLE),
        ("ClusterRole", "", OPERATOR_CLUSTER_ROLE),
        ("ClusterRoleBinding", "", OPERATOR_CLUSTER_ROLE),
    ]
    (dep,) = by_kind(objs, "Deployment")
    assert dep["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"] == "ops"


def test_single_namespace_binds_the_install_namespace_account_in_the_watched_namespace() -> None:
    objs = render(decode(rbac_bundle(OWN, SINGLE)), "ops", watch_namespace="tenant")
    role = next(o for o in by_kind(objs, "Role") if o["metadata"]["name"] == OPERATOR_NS_ROLE)
    assert role == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": OPERATOR_NS_ROLE, "namespace": "tenant"},
        "rules": [
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]},
            {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]},
        ],
    }
    binding = next(o for o in by_kind(objs, "RoleBinding") if o["metadata"]["name"] == OPERATOR_NS_ROLE)
    assert binding == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": OPERATOR_NS_ROLE, "namespace": "tenant"},
        "subjects": [{"kind": "ServiceAccount", "name": "ops-operator", "namespace": "ops"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": OPERATOR_NS_ROLE},
    }


def test_webhook_bundle_with_cert_manager_in_generator_order() -> None:
    objs = render(decode(webhook_bundle(ALL)), "wh-system", cert_provider="cert-manager")
    role = "wh-operator.v1.0.0-2ihlqmmg1q7dhn7t0swni61t9xkhlvyp8j2s2c9jldwf"
    assert identities(objs) == [
        ("ServiceAccount", "wh-system", "wh"),
        ("ClusterRole", "", role),
        ("ClusterRoleBinding", "", role),
        ("CustomResourceDefinition", "", "widgets.example.com"),
        ("Deployment", "wh-system", "wh.operator-v1"),
        ("Deployment", "wh-system", "wh-helper"),
        ("ValidatingWebhookConfiguration", "", "vwidgets.example.com"),
        ("ValidatingWebhookConfiguration", "", "vgadgets.example.com"),
        ("MutatingWebhookConfiguration", "", "mwidgets.example.com"),
        ("Service", "wh-system", "wh-operator-v1-service"),
        ("Issuer", "wh-system", "wh-operator-v1-service-cert-selfsigned-issuer"),
        ("Certificate", "wh-system", "wh-operator-v1-service-cert"),
    ]


def _targets_bundle(*modes: str) -> Any:
    return bundle(csv("t.v1", modes=install_modes(*modes), deployments=[deployment("t")]))


@pytest.mark.parametrize(("modes", "watch", "problem"), [
    ((OWN, SINGLE), "", "[]: supported install modes [OwnNamespace SingleNamespace] do not support targeting all "
                        "namespaces"),
    ((OWN,), "other", "[other]: supported install modes [OwnNamespace] do not support target namespaces [other]"),
    ((SINGLE,), "inst", "[inst]: supported install modes [SingleNamespace] do not support targeting own namespace"),
    ((ALL,), "inst", "[inst]: supported install modes [AllNamespaces] do not support targeting own namespace"),
    ((ALL,), "x", "[x]: supported install modes [AllNamespaces] do not support target namespaces [x]"),
    ((MULTI,), "inst", "[inst]: supported install modes [MultiNamespace] do not support targeting own namespace"),
    # without a watched namespace: OLM's default, none unless the bundle supports AllNamespaces
    ((SINGLE, OWN), None, "[]: exactly one target namespace must be specified"),
    ((MULTI,), None, "[]: at least one target namespace must be specified"),
])
def test_target_namespaces_are_checked_against_the_install_modes(
    modes: tuple[str, ...], watch: str | None, problem: str
) -> None:
    with pytest.raises(RenderError) as exc:
        render(decode(_targets_bundle(*modes)), "inst", watch_namespace=watch)
    assert str(exc.value) == f"invalid option(s): invalid target namespaces {problem}"


@pytest.mark.parametrize(("modes", "watch"), [
    ((ALL,), None), ((ALL, MULTI), ""), ((MULTI, OWN), "inst"), ((SINGLE,), "x"), ((OWN,), "inst"),
])
def test_target_namespaces_the_install_modes_allow(modes: tuple[str, ...], watch: str | None) -> None:
    (dep,) = render(decode(_targets_bundle(*modes)), "inst", watch_namespace=watch)
    expected = "" if watch is None else watch
    assert dep["spec"]["template"]["metadata"]["annotations"] == {"olm.targetNamespaces": expected,
                                                                  "olm.operatorNamespace": "inst"}


def test_every_validator_error_is_reported_joined_by_newlines_before_the_target_namespaces() -> None:
    b = bundle(
        csv("bad.v1", modes=install_modes(OWN), deployments=[deployment("Dup"), deployment("Dup")],
            owned=["missing.example.com"]),
        others=[{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}}],
        package="",
    )
    with pytest.raises(RenderError) as exc:
        render(decode(b), "inst")  # OwnNamespace without a watched namespace would also be refused, after these
    assert str(exc.value) == "\n".join([
        "cluster service version contains duplicate strategy deployment spec 'Dup'",
        "invalid cluster service version strategy deployment name 'Dup': a lowercase RFC 1123 subdomain must "
        "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        "cluster service definition references owned custom resource definition 'missing.example.com' not found "
        "in bundle",
        "package name is empty",
        'unsupported resource "db" with kind "StatefulSet"',
    ])


def test_check_supported_refuses_api_services_first_then_webhooks_without_provider_then_install_modes() -> None:
    b = webhook_bundle(ALL)
    b.csv["spec"]["apiservicedefinitions"] = {"owned": [{"name": "v1.example.com", "group": "example.com",
                                                          "version": "v1", "kind": "Thing"}]}
    b.csv["spec"]["installModes"] = install_modes(MULTI)
    with pytest.raises(RenderError, match="^unsupported bundle: apiServiceDefintions are not supported$"):
        check_supported(decode(b), "cert-manager")
    del b.csv["spec"]["apiservicedefinitions"]
    for provider in (None, "none"):
        with pytest.raises(RenderError, match="^unsupported bundle: webhookDefinitions are not supported$"):
            check_supported(decode(b), provider)
    with pytest.raises(RenderError) as exc:
        check_supported(decode(b), "openshift-serviceca")
    assert str(exc.value) == (
        "unsupported bundle: bundle must support at least one of [AllNamespaces SingleNamespace OwnNamespace] "
        "install modes"
    )
    b.csv["spec"]["installModes"] = install_modes(SINGLE)
    check_supported(decode(b), "openshift-serviceca")
    check_supported(decode(rbac_bundle(OWN)), None)


def test_an_empty_apiservicedefinitions_is_no_refusal() -> None:
    b = rbac_bundle(ALL)
    b.csv["spec"]["apiservicedefinitions"] = {}
    check_supported(decode(b), None)


def test_webhooks_render_without_a_provider_as_olms_renderer_does() -> None:
    objs = render(decode(webhook_bundle(ALL)), "wh-system")
    assert [o["kind"] for o in objs if o["kind"] in ("Issuer", "Certificate")] == []
    dep = by_kind(objs, "Deployment")[0]
    assert [v["name"] for v in dep["spec"]["template"]["spec"]["volumes"]] == ["certs", "webhook-cert", "data"]


def test_an_unknown_certificate_provider_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown certificate provider 'vault'"):
        render(decode(rbac_bundle(ALL)), "ops", cert_provider="vault")


def test_a_deployment_config_quantity_that_does_not_parse_is_olms_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as exc:
        decode_deployment_config({"resources": {"limits": {"cpu": "lots"}}})
    assert str(exc.value) == (
        "invalid deploymentConfig: failed to unmarshal deploymentConfig: quantities must match the regular "
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_the_configuration_is_decoded_before_the_bundle_is_validated() -> None:
    b = rbac_bundle(ALL)
    b.package_name = ""
    with pytest.raises(ConfigurationError):
        render_bundle(b, InstallOptions("ops", {"deploymentConfig": {"resources": {"limits": {"cpu": "lots"}}}}))


def test_a_csv_value_go_cannot_decode_names_the_csv_and_the_field() -> None:
    b = rbac_bundle(ALL)
    b.csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["replicas"] = "two"
    with pytest.raises(BundleInputError) as exc:
        render(decode(b), "ops")
    assert str(exc.value) == (
        'ClusterServiceVersion "ops.v1.2.3": spec.install.spec.deployments[0].spec.replicas: expected an integer, '
        'got string "two"'
    )


def test_a_csv_list_that_is_no_list_is_named() -> None:
    b = rbac_bundle(ALL)
    b.csv["spec"]["install"]["spec"]["clusterPermissions"] = {"rules": []}
    with pytest.raises(BundleInputError) as exc:
        render(decode(b), "ops")
    assert str(exc.value) == (
        'ClusterServiceVersion "ops.v1.2.3": spec.install.spec.clusterPermissions: expected an array, got object'
    )


@pytest.mark.parametrize(("spec", "message"), [
    # fields nothing renders from: OLM v1 decodes the whole CSV, and refuses the bundle all the same
    ({"keywords": "operator"}, "spec.keywords: expected an array, got string"),
    ({"icon": [{"base64data": 1, "mediatype": "image/png"}]}, "spec.icon[0].base64data: expected a string, got number"),
    ({"maintainers": [["me"]]}, "spec.maintainers[0]: expected an object, got array"),
    ({"customresourcedefinitions": {"owned": [{"name": "a.b", "version": ["v1"]}]}},
     "spec.customresourcedefinitions.owned[0].version: expected a string, got array"),
    ({"customresourcedefinitions": {"required": [{"name": "a.b", "specDescriptors": [{"path": 1}]}]}},
     "spec.customresourcedefinitions.required[0].specDescriptors[0].path: expected a string, got number"),
    ({"cleanup": {"enabled": "yes"}}, "spec.cleanup.enabled: expected a boolean, got string"),
    ({"nativeAPIs": [{"group": "", "version": "v1", "kind": 7}]},
     "spec.nativeAPIs[0].kind: expected a string, got number"),
    # the version and release are read by blang/semver, with its messages
    ({"version": "1.0.0_beta"}, 'spec.version: "1.0.0_beta" is not a semantic version: Invalid character(s) found in '
                                'patch number "0_beta"'),
    ({"version": "1.0.0-01"}, 'spec.version: "1.0.0-01" is not a semantic version: Numeric PreRelease version must '
                              'not contain leading zeroes "01"'),
    ({"version": "1.2-rc1"}, 'spec.version: "1.2-rc1" is not a semantic version: Short version cannot contain '
                             'PreRelease/Build meta data'),
    ({"version": 1.5}, "spec.version: expected a string, got number"),
    ({"release": "a..b"}, 'spec.release: "a..b" is not a semantic version: Prerelease is empty'),
])
def test_the_whole_csv_is_decoded_as_olm_v1_decodes_it(spec: dict[str, Any], message: str) -> None:
    b = rbac_bundle(ALL)
    b.csv["spec"].update(spec)
    with pytest.raises(BundleInputError) as exc:
        decode(b)
    assert str(exc.value) == f'ClusterServiceVersion "ops.v1.2.3": {message}'


@pytest.mark.parametrize("version", ["1.2.3", "v1.2.3", " 1.2 ", "01.02.03", "1", "1.2.3-rc.1+build.5", "0.0.0-0"])
def test_versions_blang_semver_tolerates_are_accepted(version: str) -> None:
    b = rbac_bundle(ALL)
    b.csv["spec"]["version"] = version
    b.csv["spec"]["release"] = "2.hotfix-1"
    decode(b)


def test_a_crd_quantity_or_type_go_cannot_decode_names_the_crd() -> None:
    b = rbac_bundle(ALL)
    b.crds[0]["spec"]["versions"][0]["served"] = "yes"
    with pytest.raises(BundleInputError) as exc:
        render(decode(b), "ops")
    assert str(exc.value) == (
        'CustomResourceDefinition "widgets.example.com": spec.versions[0].served: expected a boolean, got string'
    )
    b.source = "bundles/ops"
    with pytest.raises(BundleInputError, match='^bundles/ops: CustomResourceDefinition "widgets.example.com": '):
        render(decode(b), "ops")


def test_neither_the_bundle_nor_the_decoded_bundle_is_modified() -> None:
    """The decoded bundle is shared by check_supported and render (decoded once): rendering must not change it,
    so rendering it again gives the same objects."""
    b = webhook_bundle(ALL)
    before = repr(b)
    typed = decode(b)
    decoded = repr(typed)
    config = {"env": [{"name": "A", "value": "1"}], "annotations": {"x": "y"}, "nodeSelector": {"a": "b"}}
    first = render(typed, "wh-system", cert_provider="cert-manager", deployment_config=decode_deployment_config(config))
    assert repr(b) == before
    assert repr(typed) == decoded
    assert render(typed, "wh-system", cert_provider="cert-manager",
                  deployment_config=decode_deployment_config(config)) == first


def test_rules_of_a_permission_given_as_an_empty_list_stay_an_empty_list() -> None:
    b = bundle(csv("e.v1", modes=install_modes(ALL), deployments=[deployment("e")],
                   cluster_permissions=[{"serviceAccountName": "e", "rules": []}, {"serviceAccountName": "f"}]))
    roles = by_kind(render(decode(b), "inst"), "ClusterRole")
    assert [r.get("rules", "absent") for r in roles] == [[], "absent"]
    assert [r["metadata"]["name"] for r in roles] == [
        "e.v1-e-2v8a1okz4vnaisdbcf6ndlm332gzpybdh879hduyq85w",
        "e.v1-f-3130ab7p96369sefv7xrxnjznof6q41ixmf2gk4e5f3w",
    ]


def test_a_webhook_definition_rule_that_is_forbidden_refuses_the_bundle() -> None:
    b = webhook_bundle(ALL)
    b.csv["spec"]["webhookdefinitions"][0]["rules"] = [rule(["*"], ["pods"], ["CREATE"])]
    with pytest.raises(RenderError) as exc:
        render(decode(b), "wh-system", cert_provider="cert-manager")
    assert str(exc.value) == (
        'webhook "vwidgets.example.com" contains forbidden rule: admission webhook rules cannot reference API group "*"'
    )
