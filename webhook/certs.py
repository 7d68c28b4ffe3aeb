"""``cos-webhook certs``: the webhook's serving certificate without cert-manager.

Generates a CA and a serving certificate for ``<service>.<namespace>.svc`` into a Secret, and writes the CA
bundle into the ``caBundle`` of every webhook of the Validating- and MutatingWebhookConfiguration that calls
that Service. Run by a Job at install and by a CronJob daily (deploy/certs-builtin), so it is built to be
run over and over:

- idempotent: when everything is in order it only reads (no write request at all), so a daily run leaves
  no trace and cannot race an admin's change;
- renewal: the serving certificate is re-issued ``--renew-before-days`` before it expires (or when the key
  does not match, the DNS names changed, or the CA changed); the CA is replaced when it would not outlive a
  fresh serving certificate. The replaced CA stays in the bundle until it expires, so the API server keeps
  trusting pods that still serve the old certificate until the kubelet has refreshed their Secret volume;
- concurrency-safe: writes carry the resourceVersion they were computed from; on a conflict (another run, a
  second replica) it reads again and re-decides, so two runs never leave a mismatched CA and bundle;
- it refuses to overwrite a Secret it did not create (for example one managed by cert-manager).

The decision is a pure function (``plan``) over the Secret's data and the clock; the Kubernetes client is the
project's one client behind a thin adapter (``KubeApi``) reading and writing raw JSON so that no field of the
webhook configurations that the client library does not model is ever dropped on write. Key material never
appears in output or errors.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from common.cluster.backoff import Backoff
from common.cluster.connection import ConfigError
from common.cluster.interface import AlreadyExists, ApiError, Conflict, NotFound, Unreachable
from common.cluster.kube import KubeCluster
from common.contract import api as cos_api
from webhook.argtypes import positive_int

Obj = dict[str, Any]

MANAGED_BY = ("app.kubernetes.io/managed-by", "cos-webhook-certs")
SECRET_TYPE = "kubernetes.io/tls"
CONFIG_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
IN_CLUSTER_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
MAX_ATTEMPTS = 5
EXIT_CHANGES_NEEDED = 3
CONFIG_POLL = Backoff(1.0, 1.0)   # while waiting for webhook configurations: every second


class CertsError(Exception):
    """A problem the admin must fix (missing configuration, foreign Secret, API refusal); never holds key data."""


# --- the decision: pure functions over PEM bytes and the clock ---------------------------------------------

@dataclass(frozen=True)
class Policy:
    service: str
    namespace: str
    ca_days: int = 3650
    cert_days: int = 365
    renew_before_days: int = 30

    def hostnames(self) -> list[str]:
        """The names the API server may use to reach the Service: it dials ``<service>.<namespace>.svc``."""
        base = f"{self.service}.{self.namespace}"
        return [f"{base}.svc", f"{base}.svc.cluster.local", base, self.service]


@dataclass(frozen=True)
class Material:
    """What the Secret should hold (PEM), and why it differs from what it holds (empty: nothing to do)."""

    ca_bundle: bytes
    ca_key: bytes
    tls_crt: bytes
    tls_key: bytes
    reasons: tuple[str, ...] = ()

    def secret_data(self) -> dict[str, str]:
        return {key: base64.b64encode(value).decode() for key, value in (
            ("ca.crt", self.ca_bundle), ("ca.key", self.ca_key), ("tls.crt", self.tls_crt), ("tls.key", self.tls_key))}


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def new_ca(policy: Policy, now: dt.datetime) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                         f"cos-webhook CA {policy.namespace} {now:%Y%m%dT%H%M%SZ}")])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=policy.ca_days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(ski, critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


def issue_serving(policy: Policy, ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
                  now: dt.datetime) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    hosts = policy.hostnames()
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(min(now + dt.timedelta(days=policy.cert_days), ca_cert.not_valid_after_utc))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=False,
                                         crl_sign=False, content_commitment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def _load_certs(pem: bytes | None) -> list[x509.Certificate]:
    if not pem:
        return []
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError:
        return []


def _load_key(pem: bytes | None) -> Any:
    if not pem:
        return None
    try:
        return serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        return None


def _same_public_key(key: Any, cert: x509.Certificate) -> bool:
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key is not None and key.public_key().public_bytes(*fmt) == cert.public_key().public_bytes(*fmt)


def _issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _sans(cert: x509.Certificate) -> set[str]:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return set()
    return set(ext.value.get_values_for_type(x509.DNSName))


def plan(current: dict[str, bytes] | None, policy: Policy, now: dt.datetime) -> Material:
    """Decide the Secret's content from its current content (``None``: no Secret yet) at time ``now``.

    Returns the current content unchanged (``reasons`` empty) when it is still good, so that a second run
    writes nothing.
    """
    current = current or {}
    reasons: list[str] = []
    renew = dt.timedelta(days=policy.renew_before_days)

    bundle = _load_certs(current.get("ca.crt"))
    ca_key = _load_key(current.get("ca.key"))
    ca_cert = bundle[0] if bundle else None
    if ca_cert is None or ca_key is None:
        reasons.append("no CA yet" if not current else "CA missing or unreadable")
        ca_cert = None
    elif not _same_public_key(ca_key, ca_cert):
        reasons.append("CA key does not match the CA certificate")
        ca_cert = None
    elif ca_cert.not_valid_after_utc - now <= dt.timedelta(days=policy.cert_days) + renew:
        reasons.append(f"CA expires {ca_cert.not_valid_after_utc:%Y-%m-%d}, too soon for a new serving certificate")
        ca_cert = None

    if ca_cert is None:
        ca_cert, ca_key = new_ca(policy, now)
        # Keep older CAs that are still valid in the bundle: pods serve the old certificate until the kubelet
        # refreshes their Secret volume, and the API server must keep trusting them meanwhile.
        bundle = [ca_cert] + [c for c in bundle if c.not_valid_after_utc > now]
        ca_key_pem = _key_pem(ca_key)
    else:
        ca_key_pem = current["ca.key"]
        kept = [bundle[0]] + [c for c in bundle[1:] if c.not_valid_after_utc > now]
        if len(kept) != len(bundle):
            reasons.append("expired CA removed from the bundle")
        bundle = kept

    served = _load_certs(current.get("tls.crt"))
    tls_key = _load_key(current.get("tls.key"))
    leaf = served[0] if served else None
    if leaf is None or tls_key is None:
        reasons.append("no serving certificate yet" if not current else "serving certificate missing or unreadable")
        leaf = None
    elif not _same_public_key(tls_key, leaf):
        reasons.append("serving key does not match the serving certificate")
        leaf = None
    elif not _issued_by(leaf, ca_cert):
        reasons.append("serving certificate not issued by the current CA")
        leaf = None
    elif not set(policy.hostnames()) <= _sans(leaf):
        reasons.append(f"serving certificate does not cover {policy.hostnames()[0]}")
        leaf = None
    elif leaf.not_valid_after_utc - now <= renew:
        reasons.append(f"serving certificate expires {leaf.not_valid_after_utc:%Y-%m-%d}")
        leaf = None

    if leaf is None:
        leaf, tls_key = issue_serving(policy, ca_cert, ca_key, now)
        tls_crt, tls_key_pem = _cert_pem(leaf), _key_pem(tls_key)
    else:
        tls_crt, tls_key_pem = current["tls.crt"], current["tls.key"]

    ca_bundle = b"".join(_cert_pem(c) for c in bundle)
    if not reasons and ca_bundle != current.get("ca.crt"):
        reasons.append("CA bundle re-encoded")
    return Material(ca_bundle, ca_key_pem, tls_crt, tls_key_pem, tuple(reasons))


def secret_manifest(name: str, namespace: str, material: Material, existing: Obj | None) -> Obj:
    """The Secret to write: the existing object (keeping its other labels, annotations and resourceVersion for
    optimistic concurrency) with our data and type, or a new one."""
    obj: Obj = json.loads(json.dumps(existing)) if existing else {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}}
    obj["metadata"].setdefault("labels", {})[MANAGED_BY[0]] = MANAGED_BY[1]
    obj["type"] = SECRET_TYPE
    obj["data"] = material.secret_data()
    obj.pop("stringData", None)
    return obj


def inject_ca_bundle(config: Obj, service: str, namespace: str, ca_bundle: bytes) -> int:
    """Set ``caBundle`` on every webhook of ``config`` that calls ``namespace/service``; returns how many
    changed. Raises ``CertsError`` when no webhook calls that Service (wrong names: better loud than idle)."""
    encoded = base64.b64encode(ca_bundle).decode()
    matched = changed = 0
    for hook in config.get("webhooks") or []:
        svc = (hook.get("clientConfig") or {}).get("service") or {}
        if svc.get("name") != service or svc.get("namespace") != namespace:
            continue
        matched += 1
        if hook["clientConfig"].get("caBundle") != encoded:
            hook["clientConfig"]["caBundle"] = encoded
            changed += 1
    if not matched:
        raise CertsError(f"{config.get('kind')} {config['metadata']['name']} has no webhook calling Service "
                         f"{namespace}/{service}; check --service and --namespace")
    return changed


# --- the Kubernetes adapter ----------------------------------------------------------------------------------

class Api(Protocol):
    def get_secret(self, namespace: str, name: str) -> Obj: ...
    def create_secret(self, namespace: str, obj: Obj) -> Obj: ...
    def replace_secret(self, namespace: str, name: str, obj: Obj) -> Obj: ...
    def get_config(self, kind: str, name: str) -> Obj: ...
    def replace_config(self, kind: str, name: str, obj: Obj) -> Obj: ...


class KubeApi:
    """:class:`Api` over the project's one Kubernetes client (:class:`~common.cluster.kube.KubeCluster`: its
    configuration loading, TLS, proxy and authentication, including in-cluster token refresh), reading and
    writing raw JSON; failures are ``common.cluster.interface`` ``ApiError``s.

    Raw JSON on purpose: the ``kubernetes`` client's typed models would validate bodies against its own
    models, which rejects (or, in older versions, drops) fields of webhook configurations newer than the
    client, and a replace must send back exactly what it read. One attempt per request (``max_retries=0``): a
    run that fails is the Job's to retry, and says why at once.
    """

    def __init__(self, kubeconfig: str | None, timeout: float = 30.0) -> None:
        try:
            self.kube = KubeCluster.auto(kubeconfig, max_retries=0, request_timeout=timeout)
        except ConfigError as exc:
            raise CertsError(f"cannot load Kubernetes client configuration: {exc}") from None
        self.host = str(self.kube.api_client.configuration.host).rstrip("/")

    def request(self, what: str, method: str, path: str, body: Obj | None = None) -> Obj:
        try:
            obj = self.kube.request(method.lower(), method, path, body=body)
        except Unreachable as exc:
            raise CertsError(f"{what}: cannot reach the API server at {self.host}: {exc.cause}") from None
        if not isinstance(obj, dict) or not obj:
            raise CertsError(f"{what}: the API server answered with something that is not an object")
        return obj

    @staticmethod
    def _secret_path(namespace: str, name: str | None = None) -> str:
        base = f"/api/v1/namespaces/{quote(namespace, safe='')}/secrets"
        return f"{base}/{quote(name, safe='')}" if name else base

    @staticmethod
    def _config_path(kind: str, name: str) -> str:
        plural = {"ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
                  "MutatingWebhookConfiguration": "mutatingwebhookconfigurations"}[kind]
        return f"/apis/admissionregistration.k8s.io/v1/{plural}/{quote(name, safe='')}"

    def get_secret(self, namespace: str, name: str) -> Obj:
        return self.request(f"reading Secret {namespace}/{name}", "GET", self._secret_path(namespace, name))

    def create_secret(self, namespace: str, obj: Obj) -> Obj:
        return self.request(f"creating Secret {namespace}/{obj['metadata']['name']}", "POST",
                             self._secret_path(namespace), obj)

    def replace_secret(self, namespace: str, name: str, obj: Obj) -> Obj:
        return self.request(f"updating Secret {namespace}/{name}", "PUT", self._secret_path(namespace, name), obj)

    def get_config(self, kind: str, name: str) -> Obj:
        return self.request(f"reading {kind} {name}", "GET", self._config_path(kind, name))

    def replace_config(self, kind: str, name: str, obj: Obj) -> Obj:
        return self.request(f"updating {kind} {name}", "PUT", self._config_path(kind, name), obj)


# --- one run -------------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    actions: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(not a.endswith(": up to date") for a in self.actions)


def _decode(data: dict[str, str] | None) -> dict[str, bytes]:
    out = {}
    for key, value in (data or {}).items():
        try:
            out[key] = base64.b64decode(value, validate=True)
        except (ValueError, TypeError):
            out[key] = b""  # unreadable: treated as missing, and replaced
    return out


def _describe(exc: ApiError, what: str) -> CertsError:
    return CertsError(f"{what}: {exc.code} {exc.reason}: {exc.message}")


def ensure(api: Api, policy: Policy, secret_name: str, config_name: str, *, now: dt.datetime,
           check_only: bool = False, wait_for_configurations: float = 0.0) -> Outcome:
    """Bring the Secret and both webhook configurations in line; with ``check_only``, report only.

    ``wait_for_configurations``: seconds to keep polling for a webhook configuration that does not exist yet.
    ``kubectl apply -k`` creates webhook configurations last, so the install Job may start before them.
    """
    outcome = Outcome()
    deadline = time.monotonic() + wait_for_configurations
    ns, where = policy.namespace, f"Secret {policy.namespace}/{secret_name}"
    for _ in range(MAX_ATTEMPTS):
        try:
            existing: Obj | None = api.get_secret(ns, secret_name)
        except NotFound:
            existing = None
        except ApiError as exc:
            raise _describe(exc, f"reading {where}") from None
        if existing is not None:
            labels = (existing.get("metadata") or {}).get("labels") or {}
            if labels.get(MANAGED_BY[0]) != MANAGED_BY[1]:
                raise CertsError(f"{where} exists but was not created by `cos-webhook certs` (no label "
                                 f"{MANAGED_BY[0]}={MANAGED_BY[1]}); it is left alone. Delete it, or use "
                                 "--secret to name another Secret")
        material = plan(_decode(existing.get("data") if existing else None), policy, now)
        if not material.reasons:
            outcome.actions.append(f"{where}: up to date")
            break
        action = f"{where}: {'would be ' if check_only else ''}{'updated' if existing else 'created'} " \
                 f"({'; '.join(material.reasons)})"
        if check_only:
            outcome.actions.append(action)
            break
        body = secret_manifest(secret_name, ns, material, existing)
        try:
            if existing is None:
                api.create_secret(ns, body)
            else:
                api.replace_secret(ns, secret_name, body)
        except (AlreadyExists, Conflict):
            continue  # someone else wrote it meanwhile: read again and re-decide
        except ApiError as exc:
            raise _describe(exc, f"writing {where}") from None
        outcome.actions.append(action)
        break
    else:
        raise CertsError(f"{where}: still conflicting after {MAX_ATTEMPTS} attempts; is another writer looping?")

    for kind in CONFIG_KINDS:
        what = f"{kind} {config_name}"
        attempts = polls = 0
        while attempts < MAX_ATTEMPTS:
            try:
                config = api.get_config(kind, config_name)
            except NotFound:
                if time.monotonic() < deadline:
                    polls += 1
                    time.sleep(CONFIG_POLL.delay(polls))
                    continue
                raise CertsError(f"{what} not found; apply the deploy/ manifests first (it is created "
                                 "without a caBundle, which this command fills in)") from None
            except ApiError as exc:
                raise _describe(exc, f"reading {what}") from None
            changed = inject_ca_bundle(config, policy.service, ns, material.ca_bundle)
            if not changed:
                outcome.actions.append(f"{what}: up to date")
                break
            if check_only:
                outcome.actions.append(f"{what}: caBundle would be updated on {changed} webhook(s)")
                break
            try:
                api.replace_config(kind, config_name, config)
            except Conflict:
                attempts += 1
                continue
            except ApiError as exc:
                raise _describe(exc, f"updating {what}") from None
            outcome.actions.append(f"{what}: caBundle updated on {changed} webhook(s)")
            break
        else:
            raise CertsError(f"{what}: still conflicting after {MAX_ATTEMPTS} attempts")
    return outcome


# --- command line --------------------------------------------------------------------------------------------

def _default_namespace() -> str:
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        with open(IN_CLUSTER_NAMESPACE_FILE, encoding="utf-8") as f:
            return f.read().strip() or cos_api.DEFAULT_SYSTEM_NAMESPACE
    except OSError:
        return cos_api.DEFAULT_SYSTEM_NAMESPACE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cos-webhook certs",
        description="Create or renew the webhook's CA and serving certificate (for <service>.<namespace>.svc) "
                    "in a Secret, and write the CA bundle into the Validating- and MutatingWebhookConfiguration. "
                    "Safe to run repeatedly: it writes only what is missing, wrong or due for renewal.")
    parser.add_argument("--namespace", default=None, metavar="NS",
                        help="namespace of the webhook Service and the Secret (default: $POD_NAMESPACE, the "
                             f"in-cluster namespace, else {cos_api.DEFAULT_SYSTEM_NAMESPACE})")
    parser.add_argument("--service", default="cos-webhook", metavar="NAME",
                        help="the webhook's Service (default: %(default)s)")
    parser.add_argument("--secret", default="cos-webhook-tls", metavar="NAME",
                        help="Secret holding ca.crt, ca.key, tls.crt, tls.key (default: %(default)s)")
    parser.add_argument("--webhook-configuration", default="cos-webhook", metavar="NAME",
                        help="name of both the Validating- and the MutatingWebhookConfiguration "
                             "(default: %(default)s)")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use (default: in-cluster config inside a pod, else $KUBECONFIG "
                             "or ~/.kube/config)")
    parser.add_argument("--ca-validity-days", type=positive_int, default=3650, metavar="N",
                        help="lifetime of a new CA (default: %(default)s)")
    parser.add_argument("--cert-validity-days", type=positive_int, default=365, metavar="N",
                        help="lifetime of a new serving certificate (default: %(default)s)")
    parser.add_argument("--renew-before-days", type=positive_int, default=30, metavar="N",
                        help="renew the serving certificate this many days before it expires (default: "
                             "%(default)s)")
    parser.add_argument("--wait-for-configurations", type=float, default=0.0, metavar="SECONDS",
                        help="keep polling this long for webhook configurations that do not exist yet, as at "
                             "install time (default: %(default)s)")
    parser.add_argument("--check", action="store_true",
                        help=f"change nothing; exit {EXIT_CHANGES_NEEDED} if a run would write something")
    return parser


def main(argv: list[str]) -> int:
    """Entry point of ``cos-webhook certs``; returns the exit code (0 done, 1 error, 3 ``--check`` found work)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.renew_before_days >= args.cert_validity_days:
        parser.error("--renew-before-days must be smaller than --cert-validity-days")
    if args.cert_validity_days + args.renew_before_days >= args.ca_validity_days:
        parser.error("--ca-validity-days must exceed --cert-validity-days plus --renew-before-days")
    policy = Policy(service=args.service, namespace=args.namespace or _default_namespace(),
                    ca_days=args.ca_validity_days, cert_days=args.cert_validity_days,
                    renew_before_days=args.renew_before_days)
    try:
        kube = KubeApi(args.kubeconfig)
        outcome = ensure(kube, policy, args.secret, args.webhook_configuration,
                         now=dt.datetime.now(dt.UTC), check_only=args.check,
                         wait_for_configurations=args.wait_for_configurations)
    except CertsError as exc:
        print(f"cos-webhook certs: error: {exc}", file=sys.stderr)
        return 1
    for action in outcome.actions:
        print(action)
    return EXIT_CHANGES_NEEDED if args.check and outcome.changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
