"""Certificate providers: OLM v0/v1 names for a webhook deployment's Service and certificate, and what each
provider adds (names and objects as OLM v1's renderer produces them)."""

from __future__ import annotations

import pytest

from common.bundle.registryv1.certproviders import provisioner_for
from common.contract.objects import Obj

LONG = "a.very-long.deployment-name.that.goes.on.and.on.and.on.for.more.than.sixty-three.characters"


def test_names_follow_the_deployment_with_dots_as_dashes() -> None:
    p = provisioner_for("wh.operator-v1", "ns", "cert-manager")
    assert (p.service_name, p.cert_name, p.namespace) == ("wh-operator-v1-service", "wh-operator-v1-service-cert", "ns")


def test_long_names_are_cut_to_63_characters() -> None:
    p = provisioner_for(LONG, "inst", "cert-manager")
    assert p.service_name == "a-very-long-deployment-name-that-goes-on-and-on-and-on--service"
    assert p.cert_name == "a-very-long-deployment-name-that-goes-on-and-on-and-on--se-cert"
    issuer, certificate = p.additional_objects()
    assert issuer["metadata"]["name"] == "a-very-long-deployment-name-that-goes-on-and--selfsigned-issuer"
    assert certificate["spec"]["commonName"] == f"{p.service_name}.inst"
    assert all(len(n) == 63 for n in (p.service_name, p.cert_name, issuer["metadata"]["name"]))


def _obj(kind: str, annotations: dict[str, str] | None = None) -> Obj:
    metadata: Obj = {"name": "x"}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"kind": kind, "metadata": metadata}


@pytest.mark.parametrize("kind", ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                                  "CustomResourceDefinition"])
def test_cert_manager_injects_the_ca_from_its_certificate(kind: str) -> None:
    obj = _obj(kind, {"cert-manager.io/inject-ca-from": "old/cert", "other": "kept"})
    provisioner_for("d", "ns", "cert-manager").inject_ca_bundle(obj)
    assert obj["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": "ns/d-service-cert", "other": "kept"}


def test_cert_manager_leaves_services_alone() -> None:
    obj = _obj("Service")
    provisioner_for("d", "ns", "cert-manager").inject_ca_bundle(obj)
    assert obj == _obj("Service")


@pytest.mark.parametrize("kind", ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                                  "CustomResourceDefinition"])
def test_openshift_service_ca_injects_the_cabundle(kind: str) -> None:
    obj = _obj(kind)
    provisioner_for("d", "ns", "openshift-serviceca").inject_ca_bundle(obj)
    assert obj["metadata"]["annotations"] == {"service.beta.openshift.io/inject-cabundle": "true"}


def test_openshift_service_ca_names_the_serving_secret_on_the_service() -> None:
    obj = _obj("Service")
    provisioner_for("d", "ns", "openshift-serviceca").inject_ca_bundle(obj)
    assert obj["metadata"]["annotations"] == {"service.beta.openshift.io/serving-cert-secret-name": "d-service-cert"}


def test_no_provider_changes_nothing_and_has_no_secret() -> None:
    p = provisioner_for("d", "ns", None)
    obj = _obj("CustomResourceDefinition")
    p.inject_ca_bundle(obj)
    assert obj == _obj("CustomResourceDefinition")
    assert (p.cert_secret_name(), p.additional_objects()) == (None, [])


def test_only_cert_manager_needs_objects_of_its_own() -> None:
    assert provisioner_for("d", "ns", "openshift-serviceca").additional_objects() == []
    assert provisioner_for("d", "ns", "openshift-serviceca").cert_secret_name() == "d-service-cert"
    assert [o["kind"] for o in provisioner_for("d", "ns", "cert-manager").additional_objects()] == [
        "Issuer", "Certificate"]
