"""Signing images as podman and skopeo sign them, for the tests of signature verification: simple signatures made
by the real ``gpg`` (GnuPG) over containers/image's payload, and sigstore signatures (cosign's format) made with
``cryptography``, published where containers/image looks for them (lookaside storage, sigstore attachments)."""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.support.registry_server import Registry

SIMPLE = "atomic container signature"
SIGSTORE = "cosign container image signature"
SIGSTORE_MIME = "application/vnd.dev.cosign.simplesigning.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def payload(digest: str, reference: str, kind: str = SIMPLE) -> bytes:
    """containers/image's signature payload for the manifest ``digest`` claiming ``reference``."""
    return json.dumps({"critical": {"type": kind, "image": {"docker-manifest-digest": digest},
                                    "identity": {"docker-reference": reference}},
                       "optional": {"creator": "cos tests", "timestamp": 1764000000}}).encode()


@dataclass
class GPGKey:
    fingerprint: str
    public: bytes   # the armored public key, as a keyPath file holds it


class GPG:
    """A GnuPG home of the tests' own (short path: gpg-agent's socket lives in it), with keys generated in it."""

    def __init__(self) -> None:
        gpg = shutil.which("gpg")
        assert gpg, "the signature tests need gpg (GnuPG): apt-get install gnupg (.ci/run installs it)"
        self.gpg = gpg
        self.home = Path(tempfile.mkdtemp(prefix="cosgpg-"))

    def run(self, *args: str, data: bytes | None = None, faked_time: str | None = None) -> bytes:
        command = [self.gpg, "--homedir", str(self.home), "--batch", "--no-tty", "--pinentry-mode", "loopback",
                   "--passphrase", ""]
        if faked_time:
            command += ["--faked-system-time", faked_time, "--ignore-time-conflict"]
        done = subprocess.run([*command, *args], input=data, capture_output=True, check=False, timeout=120)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout

    def generate(self, uid: str, *, subkey: bool = False, expires: str = "never",
                 faked_time: str | None = None) -> GPGKey:
        """A new ed25519 key; with ``subkey``, it signs with a signing subkey (the primary only certifies)."""
        self.run("--quick-gen-key", uid, "ed25519", "cert" if subkey else "sign", expires, faked_time=faked_time)
        fingerprint = self.fingerprint(uid)
        if subkey:
            self.run("--quick-add-key", fingerprint, "ed25519", "sign", expires, faked_time=faked_time)
        return GPGKey(fingerprint, self.run("--armor", "--export", fingerprint))

    def fingerprint(self, uid: str) -> str:
        listing = self.run("--with-colons", "--list-keys", uid).decode()
        return next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))

    def sign(self, key: GPGKey, content: bytes, *, faked_time: str | None = None) -> bytes:
        """``content`` as an OpenPGP signed message (what containers/image's GPGME mechanism writes)."""
        return self.run("--local-user", key.fingerprint, "--sign", data=content, faked_time=faked_time)

    def close(self) -> None:
        gpgconf = shutil.which("gpgconf")
        if gpgconf:
            subprocess.run([gpgconf, "--homedir", str(self.home), "--kill", "all"], capture_output=True, check=False)
        shutil.rmtree(self.home, ignore_errors=True)


def lookaside(root: Path, repository: str, digest: str, signatures: list[bytes]) -> None:
    """``signatures`` stored as ``root`` lookaside storage keeps them (signature-1, signature-2, ...)."""
    algorithm, _, hexdigest = digest.partition(":")
    directory = root / repository
    directory = Path(f"{directory}@{algorithm}={hexdigest}")
    directory.mkdir(parents=True, exist_ok=True)
    for index, blob in enumerate(signatures, 1):
        (directory / f"signature-{index}").write_bytes(blob)


def registries_d(home: Path, text: str) -> None:
    """``text`` as the user's registries.d/default.yaml (the name of the file containers-common installs, which it
    replaces: a machine's own default-docker would otherwise be defined twice)."""
    directory = home / ".config" / "containers" / "registries.d"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "default.yaml").write_text(text)


@dataclass
class CosignKey:
    private: ec.EllipticCurvePrivateKey

    @classmethod
    def generate(cls) -> CosignKey:
        return cls(ec.generate_private_key(ec.SECP256R1()))

    @property
    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)

    def sign(self, content: bytes) -> str:
        return base64.b64encode(self.private.sign(content, ec.ECDSA(hashes.SHA256()))).decode()


def attach(registry: Registry, repo: str, digest: str, layers: list[tuple[bytes, dict[str, str], str]]) -> str:
    """Sigstore attachments (payload, annotations, media type) as cosign pushes them: an OCI manifest tagged
    ``sha256-<hex>.sig`` whose layers are the payloads."""
    config = registry.put_blob(repo, b"{}")
    descriptors = []
    for content, notes, media_type in layers:
        descriptors.append({"mediaType": media_type, "digest": registry.put_blob(repo, content),
                            "size": len(content), "annotations": notes})
    manifest = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config,
                                      "size": 2},
                           "layers": descriptors}).encode()
    algorithm, _, hexdigest = digest.partition(":")
    return registry.put_manifest(repo, manifest, OCI_MANIFEST, tag=f"{algorithm}-{hexdigest}.sig")


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def rekor_set(rekor: ec.EllipticCurvePrivateKey, key_or_cert_pem: bytes, signature_b64: str, content: bytes,
              integrated: int = 1764000000, kind: str | None = "hashedrekord") -> str:
    """A Rekor signed entry timestamp (cosign's dev.sigstore.cosign/bundle annotation) for a hashedrekord entry
    of this signature, key or certificate and payload, signed by ``rekor`` (an entry of another ``kind``, or
    none, for refusals)."""
    body: dict[str, Any] = {"apiVersion": "0.0.1", "kind": kind, "spec": {
        "data": {"hash": {"algorithm": "sha256", "value": hashlib.sha256(content).hexdigest()}},
        "signature": {"content": signature_b64, "publicKey": {"content": base64.b64encode(key_or_cert_pem).decode()}}}}
    if kind is None:
        del body["kind"]
    set_payload = {"body": base64.b64encode(json.dumps(body).encode()).decode(), "integratedTime": integrated,
                   "logIndex": 7, "logID": "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d"}
    canonical = json.dumps(set_payload, sort_keys=True, separators=(",", ":")).encode()
    timestamp = base64.b64encode(rekor.sign(canonical, ec.ECDSA(hashes.SHA256()))).decode()
    return json.dumps({"SignedEntryTimestamp": timestamp, "Payload": set_payload})


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


@dataclass
class FulcioCA:
    """A stand-in for Fulcio: a root CA, an intermediate, and short-lived code-signing certificates as Fulcio
    issues them (an e-mail SAN, the OIDC issuer extensions)."""

    root_key: ec.EllipticCurvePrivateKey
    root: x509.Certificate
    inter_key: ec.EllipticCurvePrivateKey
    intermediate: x509.Certificate

    @classmethod
    def generate(cls, name: str = "sigstore") -> FulcioCA:
        start = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
        root_key, inter_key = ec.generate_private_key(ec.SECP384R1()), ec.generate_private_key(ec.SECP384R1())
        ca = x509.BasicConstraints(ca=True, path_length=None)
        root = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
                .public_key(root_key.public_key()).serial_number(1).not_valid_before(start)
                .not_valid_after(start + datetime.timedelta(days=3650)).add_extension(ca, critical=True)
                .sign(root_key, hashes.SHA384()))
        intermediate = (x509.CertificateBuilder().subject_name(_name(f"{name}-intermediate"))
                        .issuer_name(root.subject).public_key(inter_key.public_key()).serial_number(2)
                        .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650))
                        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
                        .sign(root_key, hashes.SHA384()))
        return cls(root_key, root, inter_key, intermediate)

    @property
    def root_pem(self) -> bytes:
        return self.root.public_bytes(serialization.Encoding.PEM)

    @property
    def chain_pem(self) -> bytes:
        """The dev.sigstore.cosign/chain annotation: the intermediate, then the root."""
        return self.intermediate.public_bytes(serialization.Encoding.PEM) + self.root_pem

    def issue(self, key: ec.EllipticCurvePrivateKey, email: str, issuer: str, *, at: int = 1764000000,
              minutes: int = 10) -> bytes:
        """A signing certificate for ``key`` valid ``minutes`` from ``at`` (Fulcio's are 10 minutes)."""
        start = datetime.datetime.fromtimestamp(at - 60, datetime.UTC)
        issuer_v2 = bytes([0x0C, len(issuer)]) + issuer.encode()
        cert = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(self.intermediate.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(start + datetime.timedelta(minutes=minutes))
                .add_extension(x509.SubjectAlternativeName([x509.RFC822Name(email)]), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
                .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                               critical=True)
                .add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1"),
                                                          issuer.encode()), critical=False)
                .add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8"),
                                                          issuer_v2), critical=False)
                .sign(self.inter_key, hashes.SHA384()))
        return cert.public_bytes(serialization.Encoding.PEM)


@dataclass
class PkiCA:
    """An organisation's own CA for a ``pki`` policy: a root, an intermediate, and code-signing certificates for an
    e-mail address and host names, valid from an hour ago (the PKI is checked at the current time)."""

    root_key: ec.EllipticCurvePrivateKey
    root: x509.Certificate
    inter_key: ec.EllipticCurvePrivateKey
    intermediate: x509.Certificate

    @classmethod
    def generate(cls, name: str = "Example Corp", *, inter_usage: x509.KeyUsage | None = None) -> PkiCA:
        now = datetime.datetime.now(datetime.UTC)
        root_key, inter_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        signer = x509.KeyUsage(False, False, False, False, False, True, True, False, False)
        root = (x509.CertificateBuilder().subject_name(_name(f"{name} Root")).issuer_name(_name(f"{name} Root"))
                .public_key(root_key.public_key()).serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=365))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(signer, critical=True).sign(root_key, hashes.SHA256()))
        intermediate = (x509.CertificateBuilder().subject_name(_name(f"{name} Signing CA")).issuer_name(root.subject)
                        .public_key(inter_key.public_key()).serial_number(2)
                        .not_valid_before(now - datetime.timedelta(days=1))
                        .not_valid_after(now + datetime.timedelta(days=365))
                        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                        .add_extension(inter_usage or signer, critical=True).sign(root_key, hashes.SHA256()))
        return cls(root_key, root, inter_key, intermediate)

    @property
    def root_pem(self) -> bytes:
        return self.root.public_bytes(serialization.Encoding.PEM)

    @property
    def intermediate_pem(self) -> bytes:
        return self.intermediate.public_bytes(serialization.Encoding.PEM)

    @property
    def chain_pem(self) -> bytes:
        """The dev.sigstore.cosign/chain annotation: the intermediate, then the root."""
        return self.intermediate_pem + self.root_pem

    def issue(self, key: ec.EllipticCurvePrivateKey, *, emails: tuple[str, ...] = (), hosts: tuple[str, ...] = (),
              hours: tuple[int, int] = (-1, 1)) -> bytes:
        """A code-signing certificate for ``key`` naming ``emails`` and ``hosts`` (DNS names), valid ``hours``
        around now."""
        now = datetime.datetime.now(datetime.UTC)
        names: list[x509.GeneralName] = [x509.RFC822Name(e) for e in emails] + [x509.DNSName(h) for h in hosts]
        builder = (x509.CertificateBuilder().subject_name(_name("release signing"))
                   .issuer_name(self.intermediate.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now + datetime.timedelta(hours=hours[0]))
                   .not_valid_after(now + datetime.timedelta(hours=hours[1]))
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(self.inter_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
