"""Certificate providers for webhook bundles, as OLM v1 has them: cert-manager and OpenShift's service CA.

A bundle's webhooks need a serving certificate in the webhook deployment and the CA in every webhook
configuration and conversion-webhook CRD. OLM v1 leaves both to a provider. Names follow OLM v0 for parity:
the Service of a webhook deployment is ``<deployment with dots as dashes>-service`` and the certificate (and
its Secret) ``<service>-cert``, each cut to 63 characters by :func:`.names.object_name_for_base_and_suffix`.

- ``cert-manager``: a self-signed Issuer and a Certificate per webhook deployment (two-year duration, renewal a
  day before expiry, the Service's DNS names); ``cert-manager.io/inject-ca-from: <ns>/<cert>`` on webhook
  configurations and CRDs.
- ``openshift-serviceca``: ``service.beta.openshift.io/serving-cert-secret-name: <cert>`` on the Service (the
  service CA operator creates the Secret) and ``service.beta.openshift.io/inject-cabundle: "true"`` on webhook
  configurations and CRDs.

Both mount the Secret at the paths OLM v0 used (:data:`CERT_VOLUMES`, applied by the deployment generator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from common.contract.objects import Obj

from .names import object_name_for_base_and_suffix

CERT_MANAGER: Final = "cert-manager"
OPENSHIFT_SERVICE_CA: Final = "openshift-serviceca"
PROVIDERS: Final = (CERT_MANAGER, OPENSHIFT_SERVICE_CA)

CERT_MANAGER_INJECT_CA: Final = "cert-manager.io/inject-ca-from"
OPENSHIFT_SERVING_CERT_SECRET: Final = "service.beta.openshift.io/serving-cert-secret-name"
OPENSHIFT_INJECT_CABUNDLE: Final = "service.beta.openshift.io/inject-cabundle"

# (volume name, mount path, file of the certificate, file of the key): OLM v0's webhook and API service paths.
CERT_VOLUMES: Final = (
    ("webhook-cert", "/tmp/k8s-webhook-server/serving-certs", "tls.crt", "tls.key"),
    ("apiservice-cert", "/apiserver.local.config/certificates", "apiserver.crt", "apiserver.key"),
)
# Keys of the certificate and the private key in the provider's Secret (both providers use these).
CERT_KEY: Final = "tls.crt"
PRIVATE_KEY_KEY: Final = "tls.key"

_CA_INJECTED_KINDS: Final = frozenset(
    {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "CustomResourceDefinition"}
)


@dataclass(frozen=True, slots=True)
class CertProvisioner:
    """What a webhook deployment's certificate is called (OLM v1's ``CertProvisionerFor``)."""

    provider: str | None
    service_name: str
    cert_name: str
    namespace: str

    def inject_ca_bundle(self, obj: Obj) -> None:
        """Add the provider's annotations to a generated webhook configuration, CRD or Service (in place)."""
        kind = obj.get("kind")
        if self.provider == CERT_MANAGER and kind in _CA_INJECTED_KINDS:
            _annotate(obj, CERT_MANAGER_INJECT_CA, f"{self.namespace}/{self.cert_name}")
        elif self.provider == OPENSHIFT_SERVICE_CA:
            if kind in _CA_INJECTED_KINDS:
                _annotate(obj, OPENSHIFT_INJECT_CABUNDLE, "true")
            elif kind == "Service":
                _annotate(obj, OPENSHIFT_SERVING_CERT_SECRET, self.cert_name)

    def cert_secret_name(self) -> str | None:
        """The Secret holding the serving certificate, ``None`` without a provider."""
        return self.cert_name if self.provider else None

    def additional_objects(self) -> list[Obj]:
        """The objects the provider needs besides annotations: cert-manager's Issuer and Certificate."""
        if self.provider != CERT_MANAGER:
            return []
        issuer_name = object_name_for_base_and_suffix(self.cert_name, "selfsigned-issuer")
        host = f"{self.service_name}.{self.namespace}"
        issuer: Obj = {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": _metadata(issuer_name, self.namespace),
            "spec": {"selfSigned": {}},
        }
        certificate: Obj = {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": _metadata(self.cert_name, self.namespace),
            "spec": {
                "commonName": host,
                "duration": "17520h0m0s",  # two years, as Go prints the Duration
                "renewBefore": "24h0m0s",
                "dnsNames": [host, f"{host}.svc", f"{host}.svc.cluster.local"],
                "secretName": self.cert_name,
                "issuerRef": {"name": issuer_name},
                "usages": ["server auth"],
            },
        }
        return [issuer, certificate]


def _metadata(name: str, namespace: str) -> Obj:
    return {"name": name, "namespace": namespace} if namespace else {"name": name}


def _annotate(obj: Obj, key: str, value: str) -> None:
    metadata = obj.setdefault("metadata", {})
    annotations = metadata.get("annotations") or {}
    annotations[key] = value
    metadata["annotations"] = annotations


def provisioner_for(deployment_name: str, install_namespace: str, provider: str | None) -> CertProvisioner:
    """The names OLM v1 (and OLM v0 before it) gives a webhook deployment's Service and certificate."""
    service = object_name_for_base_and_suffix(deployment_name.replace(".", "-"), "service")
    return CertProvisioner(
        provider=provider,
        service_name=service,
        cert_name=object_name_for_base_and_suffix(service, "cert"),
        namespace=install_namespace,
    )
