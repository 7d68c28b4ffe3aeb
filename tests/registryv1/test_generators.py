"""Each of OLM v1's generators: what it makes of the bundle, field by field (checked against OLM v1's renderer)."""

from __future__ import annotations

import pytest

from common.bundle.registryv1.deploymentconfig import decode_deployment_config
from common.bundle.registryv1.generators import (
    RESOURCE_GENERATORS,
    Options,
    additional_resources,
    cert_provider_resources,
    crds,
    deployments,
    mutating_webhooks,
    service_accounts,
    validating_webhooks,
    webhook_services,
)
from common.bundle.registryv1.model import RenderError
from common.bundle.registryv1.typed import decode
from common.contract.objects import Obj

from .test_render_builders import (
    ALL,
    OWN,
    SINGLE,
    bundle,
    container,
    csv,
    deployment,
    install_modes,
    rbac_bundle,
    webhook_bundle,
    webhook_definition,
)

WH_NS = "wh-system"
SERVICE = "wh-operator-v1-service"
CERT = "wh-operator-v1-service-cert"
ALL_OPTS = Options(WH_NS, [""], "cert-manager")
RULES = [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}]


def test_generators_are_olms_list_in_its_order() -> None:
    assert [g.__name__ for g in RESOURCE_GENERATORS] == [
        "service_accounts", "permissions", "cluster_permissions", "crds", "additional_resources", "deployments",
        "validating_webhooks", "mutating_webhooks", "webhook_services", "cert_provider_resources",
    ]


def test_service_accounts_once_each_in_first_mention_order_never_default() -> None:
    b = bundle(csv(
        "s.v1", modes=install_modes(ALL), deployments=[deployment("s")],
        permissions=[{"serviceAccountName": "b", "rules": []}, {"rules": []}, {"serviceAccountName": "default"}],
        cluster_permissions=[{"serviceAccountName": "a"}, {"serviceAccountName": "b"}],
    ))
    assert service_accounts(decode(b), Options("inst", [""])) == [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "b", "namespace": "inst"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a", "namespace": "inst"}},
    ]


def test_webhook_deployment_gets_the_provider_certificate_volumes_replacing_colliding_ones() -> None:
    dep = deployments(decode(webhook_bundle(ALL)), ALL_OPTS)[0]
    pod = dep["spec"]["template"]["spec"]
    mounts = [
        {"name": "webhook-cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs"},
        {"name": "apiservice-cert", "mountPath": "/apiserver.local.config/certificates"},
    ]
    assert pod["volumes"] == [
        {"name": "data", "emptyDir": {}},  # "certs" (mounted at the webhook path) and "webhook-cert" are replaced
        {"name": "webhook-cert", "secret": {"secretName": CERT, "items": [
            {"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]}},
        {"name": "apiservice-cert", "secret": {"secretName": CERT, "items": [
            {"key": "tls.crt", "path": "apiserver.crt"}, {"key": "tls.key", "path": "apiserver.key"}]}},
    ]
    assert pod["containers"] == [
        {"name": "manager", "image": "example.com/manager:v1", "resources": {},
         "volumeMounts": [{"name": "data", "mountPath": "/data"}, *mounts]},
        {"name": "sidecar", "image": "example.com/sidecar:v1", "resources": {}, "volumeMounts": mounts},
    ]


def test_deployments_without_webhooks_or_without_a_provider_keep_their_volumes() -> None:
    b = decode(webhook_bundle(ALL))
    helper = deployments(b, ALL_OPTS)[1]
    assert "volumes" not in helper["spec"]["template"]["spec"]
    served = deployments(b, Options(WH_NS, [""]))[0]
    assert [v["name"] for v in served["spec"]["template"]["spec"]["volumes"]] == ["certs", "webhook-cert", "data"]


def test_deployment_metadata_and_template_annotations() -> None:
    b = bundle(csv("d.v1", modes=install_modes(OWN, SINGLE), annotations={"a": "csv", "b": "csv"},
                   deployments=[deployment("d", template_annotations={"b": "template", "olm.targetNamespaces": "x",
                                                                        "olm.operatorNamespace": "y"},
                                           label={"tier": "ops"})]))
    (dep,) = deployments(decode(b), Options("inst", ["w1"]))
    assert dep["metadata"] == {"name": "d", "namespace": "inst", "labels": {"tier": "ops"}}
    assert dep["spec"]["template"]["metadata"]["annotations"] == {"a": "csv", "b": "template",
                                                                  "olm.targetNamespaces": "w1",
                                                                  "olm.operatorNamespace": "inst"}
    assert dep["spec"]["revisionHistoryLimit"] == 1


def test_conversion_webhook_is_wired_into_its_crd_with_the_provider_annotation() -> None:
    (crd,) = crds(decode(webhook_bundle(ALL)), ALL_OPTS)
    assert crd["metadata"] == {"name": "widgets.example.com",
                               "annotations": {"cert-manager.io/inject-ca-from": f"{WH_NS}/{CERT}"}}
    assert crd["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"service": {"namespace": WH_NS, "name": SERVICE, "path": "/", "port": 443}},
            "conversionReviewVersions": ["v1"],
        },
    }
    assert "status" not in crd


def test_conversion_webhook_with_openshift_keeps_other_annotations_and_takes_the_given_path() -> None:
    b = webhook_bundle(ALL)
    b.csv["spec"]["webhookdefinitions"][3]["webhookPath"] = "/convert"
    (crd,) = crds(decode(b), Options(WH_NS, [""], "openshift-serviceca"))
    assert crd["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": "old/cert",
                                              "service.beta.openshift.io/inject-cabundle": "true"}
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"] == "/convert"


def test_conversion_webhook_refuses_a_crd_that_preserves_unknown_fields() -> None:
    b = webhook_bundle(ALL)
    b.crds[0]["spec"]["preserveUnknownFields"] = True
    with pytest.raises(RenderError) as exc:
        crds(decode(b), ALL_OPTS)
    assert str(exc.value) == (
        "custom resource definition 'widgets.example.com' must have .spec.preserveUnknownFields set to false to "
        "let API Server call webhook to do the conversion"
    )


def test_crds_not_served_by_a_conversion_webhook_pass_through() -> None:
    b = rbac_bundle(ALL)
    assert crds(decode(b), Options("ops", [""], "cert-manager")) == [{
        "kind": "CustomResourceDefinition",
        "apiVersion": "apiextensions.k8s.io/v1",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }]


def test_other_manifests_get_the_install_namespace_when_operator_registry_calls_them_namespaced() -> None:
    objs = additional_resources(decode(rbac_bundle(ALL)), Options("ops", [""]))
    assert [(o["kind"], o["metadata"].get("namespace")) for o in objs] == [
        ("ConfigMap", "ops"), ("ClusterRole", None), ("VerticalPodAutoscaler", None), ("PriorityClass", None),
    ]
    assert objs[0] == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ops-config", "namespace": "ops"},
                       "data": {"a": "b"}}


def test_an_unsupported_kind_is_refused_by_the_generator_too() -> None:
    b = bundle(csv("u.v1", modes=install_modes(ALL), deployments=[deployment("u")]),
               others=[{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}}])
    with pytest.raises(RenderError, match="^bundle contains unsupported resource: Name: agent, Kind: DaemonSet$"):
        additional_resources(decode(b), Options("inst", [""]))


def _webhook_config(name: str, kind: str, webhook: Obj, annotations: dict[str, str]) -> Obj:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name, "annotations": annotations}, "webhooks": [webhook]}


def test_validating_webhook_configurations_copy_the_definition_field_by_field() -> None:
    cm = {"cert-manager.io/inject-ca-from": f"{WH_NS}/{CERT}"}
    assert validating_webhooks(decode(webhook_bundle(ALL)), ALL_OPTS) == [
        _webhook_config("vwidgets.example.com", "ValidatingWebhookConfiguration", {
            "name": "vwidgets.example.com",
            # no containerPort given: OLM points at port 0 (the Service still listens on 443)
            "clientConfig": {"service": {"namespace": WH_NS, "name": SERVICE, "port": 0}},
            "rules": RULES,
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "objectSelector": {"matchLabels": {"validate": "yes"}},
            "sideEffects": "None",
            "timeoutSeconds": 5,
            "admissionReviewVersions": ["v1"],
        }, cm),
        _webhook_config("vgadgets.example.com", "ValidatingWebhookConfiguration", {
            "name": "vgadgets.example.com",
            "clientConfig": {"service": {"namespace": WH_NS, "name": SERVICE, "path": "/validate-gadgets",
                                         "port": 0}},
            "rules": RULES,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }, cm),
    ]


def test_mutating_webhooks_in_own_or_single_mode_select_the_watched_namespace() -> None:
    b = decode(webhook_bundle(OWN, SINGLE, conversion=False))
    assert mutating_webhooks(b, Options(WH_NS, ["tenant"], "openshift-serviceca")) == [
        _webhook_config("mwidgets.example.com", "MutatingWebhookConfiguration", {
            "name": "mwidgets.example.com",
            "clientConfig": {"service": {"namespace": WH_NS, "name": SERVICE, "path": "/mutate", "port": 8443}},
            "rules": RULES,
            "namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["tenant"]}]},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "reinvocationPolicy": "IfNeeded",
        }, {"service.beta.openshift.io/inject-cabundle": "true"}),
    ]


def test_webhook_service_has_one_port_per_distinct_webhook_port_sorted() -> None:
    assert webhook_services(decode(webhook_bundle(ALL)), ALL_OPTS) == [{
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": WH_NS},
        "spec": {
            "ports": [
                {"name": "443", "port": 443, "targetPort": "https"},  # two webhooks, one port
                {"name": "443", "port": 443, "targetPort": 9443},
                {"name": "8443", "port": 8443, "targetPort": 9443},
            ],
            "selector": {"app": "wh.operator-v1"},
        },
        "status": {"loadBalancer": {}},
    }]


def test_webhook_service_defaults_to_443_and_gets_the_openshift_serving_cert_annotation() -> None:
    b = bundle(csv("p.v1", modes=install_modes(ALL), deployments=[deployment("p")],
                   webhooks=[webhook_definition("ValidatingAdmissionWebhook", "v.example.com", "p")]))
    (service,) = webhook_services(decode(b), Options("inst", [""], "openshift-serviceca"))
    assert service["metadata"] == {
        "name": "p-service", "namespace": "inst",
        "annotations": {"service.beta.openshift.io/serving-cert-secret-name": "p-service-cert"},
    }
    assert service["spec"]["ports"] == [{"name": "443", "port": 443, "targetPort": 443}]


def test_cert_manager_objects_per_webhook_deployment() -> None:
    assert cert_provider_resources(decode(webhook_bundle(ALL)), ALL_OPTS) == [
        {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
         "metadata": {"name": f"{CERT}-selfsigned-issuer", "namespace": WH_NS}, "spec": {"selfSigned": {}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
         "metadata": {"name": CERT, "namespace": WH_NS},
         "spec": {
             "commonName": f"{SERVICE}.{WH_NS}",
             "duration": "17520h0m0s",
             "renewBefore": "24h0m0s",
             "dnsNames": [f"{SERVICE}.{WH_NS}", f"{SERVICE}.{WH_NS}.svc", f"{SERVICE}.{WH_NS}.svc.cluster.local"],
             "secretName": CERT,
             "issuerRef": {"name": f"{CERT}-selfsigned-issuer"},
             "usages": ["server auth"],
         }},
    ]
    assert cert_provider_resources(decode(webhook_bundle(ALL)), Options(WH_NS, [""], "openshift-serviceca")) == []
    assert cert_provider_resources(decode(webhook_bundle(ALL)), Options(WH_NS, [""])) == []


def test_deployment_config_reaches_every_deployment() -> None:
    b = decode(bundle(csv("c.v1", modes=install_modes(ALL), deployments=[
        deployment("one"), deployment("two", pod={"containers": [container("a"), container("b")]}),
    ])))
    config = decode_deployment_config({"env": [{"name": "X", "value": "1"}]})
    objs = deployments(b, Options("inst", [""], deployment_config=config))
    assert [[c.get("env") for c in d["spec"]["template"]["spec"]["containers"]] for d in objs] == [
        [[{"name": "X", "value": "1"}]], [[{"name": "X", "value": "1"}], [{"name": "X", "value": "1"}]],
    ]
