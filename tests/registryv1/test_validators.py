"""OLM v1's bundle validators: every one of its list, in its order, each message byte for byte.

The expected messages are what OLM v1's renderer answers for the same bundle.
"""

from __future__ import annotations

import pytest

from common.bundle.registryv1.model import RegistryV1
from common.bundle.registryv1.typed import decode
from common.bundle.registryv1.validators import (
    BUNDLE_VALIDATORS,
    check_conversion_webhook_support,
    check_deployment_name_is_dns1123_subdomain,
    dns1123_subdomain_errors,
    validate,
)

from .test_render_builders import ALL, OWN, bundle, crd, csv, deployment, install_modes, webhook_definition

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LONG = "d" * 254
CONVERSION_MODES = (
    "and supports install modes [AllNamespaces OwnNamespace] - conversion webhooks are only supported for bundles "
    "that only support AllNamespaces install mode"
)


def everything_wrong() -> RegistryV1:
    """A bundle that breaks every validator, several of them more than once."""
    hooks = [
        webhook_definition("ConversionWebhook", "c2.example.com", "dup",
                           conversionCRDs=["b.example.com", "a.example.com"]),
        webhook_definition("ConversionWebhook", "c1.example.com", "dup", conversionCRDs=["a.example.com"]),
        webhook_definition("ValidatingAdmissionWebhook", "v.example.com", "ghost", rules=[
            {"apiGroups": ["*", "olm.operatorframework.io", "admissionregistration.k8s.io"],
             "resources": ["MutatingWebhookConfigurations", "pods", "*"], "operations": ["CREATE"]}]),
        webhook_definition("MutatingAdmissionWebhook", "m.example.com", "ghost"),
        webhook_definition("ValidatingAdmissionWebhook", "v.example.com", "dup"),
        webhook_definition("MutatingAdmissionWebhook", "Bad_Hook", "dup"),
        webhook_definition("ConversionWebhook", "c1.example.com", "a-ghost", conversionCRDs=["z.example.com"]),
    ]
    return bundle(
        csv("bad.v1", modes=install_modes(ALL, OWN),
            deployments=[deployment("dup"), deployment("dup"), deployment("Bad_Name"), deployment(LONG)],
            owned=["a.example.com", "missing.example.com"], webhooks=hooks),
        crds=[crd("as") | {"metadata": {"name": "a.example.com"}}, crd("as") | {"metadata": {"name": "a.example.com"}}],
        others=[{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}},
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p\tq"}}],
        package="",
    )


def test_every_validator_reports_every_error_in_olms_order() -> None:
    assert validate(decode(everything_wrong())) == [
        "cluster service version contains duplicate strategy deployment spec 'dup'",
        f"invalid cluster service version strategy deployment name 'Bad_Name': {SUBDOMAIN}",
        f"invalid cluster service version strategy deployment name '{LONG}': must be no more than 253 characters",
        "bundle contains duplicate custom resource definition 'a.example.com'",
        "cluster service definition references owned custom resource definition 'missing.example.com' not found "
        "in bundle",
        "package name is empty",
        f'bundle contains conversion webhook "c2.example.com" {CONVERSION_MODES}',
        f'bundle contains conversion webhook "c1.example.com" {CONVERSION_MODES}',
        f'bundle contains conversion webhook "c1.example.com" {CONVERSION_MODES}',
        "webhook of type 'ConversionWebhook' with name 'c1.example.com' references non-existent deployment 'a-ghost'",
        "webhook of type 'MutatingAdmissionWebhook' with name 'm.example.com' references non-existent deployment "
        "'ghost'",
        "webhook of type 'ValidatingAdmissionWebhook' with name 'v.example.com' references non-existent deployment "
        "'ghost'",
        "duplicate webhook 'c1.example.com' of type 'ConversionWebhook'",
        "duplicate webhook 'v.example.com' of type 'ValidatingAdmissionWebhook'",
        f"webhook of type 'MutatingAdmissionWebhook' has invalid name 'Bad_Hook': {SUBDOMAIN}",
        "conversion webhooks [c1.example.com,c2.example.com] reference same custom resource definition "
        "'a.example.com'",
        "conversion webhook 'c1.example.com' references custom resource definition 'z.example.com' not owned bundle",
        "conversion webhook 'c2.example.com' references custom resource definition 'b.example.com' not owned bundle",
        'webhook "v.example.com" contains forbidden rule: admission webhook rules cannot reference API group "*"',
        'webhook "v.example.com" contains forbidden rule: admission webhook rules cannot reference API group '
        '"olm.operatorframework.io"',
        'webhook "v.example.com" contains forbidden rule: admission webhook rules cannot reference resource '
        '"MutatingWebhookConfigurations" for API group "admissionregistration.k8s.io"',
        'webhook "v.example.com" contains forbidden rule: admission webhook rules cannot reference resource "*" '
        'for API group "admissionregistration.k8s.io"',
        'unsupported resource "db" with kind "StatefulSet"',
        'unsupported resource "p\\tq" with kind "Pod"',
    ]


def test_the_validator_list_is_olms() -> None:
    assert [v.__name__ for v in BUNDLE_VALIDATORS] == [
        "check_deployment_spec_uniqueness",
        "check_deployment_name_is_dns1123_subdomain",
        "check_crd_resource_uniqueness",
        "check_owned_crd_existence",
        "check_package_name_not_empty",
        "check_conversion_webhook_support",
        "check_webhook_deployment_referential_integrity",
        "check_webhook_name_uniqueness",
        "check_webhook_name_is_dns1123_subdomain",
        "check_conversion_webhook_crd_reference_uniqueness",
        "check_conversion_webhooks_reference_owned_crds",
        "check_webhook_rules",
        "check_object_support",
    ]


def test_a_valid_bundle_passes_every_validator() -> None:
    b = bundle(csv("ok.v1", modes=install_modes(ALL), deployments=[deployment("ok")], owned=["widgets.example.com"],
                   webhooks=[webhook_definition("ConversionWebhook", "c.example.com", "ok",
                                                conversionCRDs=["widgets.example.com"])]),
               crds=[crd("widgets")])
    assert validate(decode(b)) == []


def test_a_long_name_that_is_also_malformed_gets_both_messages_sorted() -> None:
    name = "X" * 254
    b = bundle(csv("n.v1", modes=install_modes(ALL), deployments=[deployment(name)]))
    assert check_deployment_name_is_dns1123_subdomain(decode(b)) == [
        f"invalid cluster service version strategy deployment name '{name}': {SUBDOMAIN}, must be no more than 253 "
        "characters"
    ]


@pytest.mark.parametrize(("value", "errors"), [
    ("a", 0), ("a.b-c.d", 0), ("a" * 253, 0), ("a" * 254, 1), ("-a", 1), ("a.", 1), ("A", 1), ("a\n", 1), ("", 1),
])
def test_dns1123_subdomain(value: str, errors: int) -> None:
    assert len(dns1123_subdomain_errors(value)) == errors


def test_conversion_webhooks_need_all_namespaces_alone() -> None:
    b = bundle(csv("c.v1", modes=install_modes(OWN), deployments=[deployment("c")],
                   webhooks=[webhook_definition("ConversionWebhook", "c.example.com", "c")]))
    assert check_conversion_webhook_support(decode(b)) == [
        'bundle contains conversion webhook "c.example.com" and supports install modes [OwnNamespace] - conversion '
        "webhooks are only supported for bundles that only support AllNamespaces install mode"
    ]
