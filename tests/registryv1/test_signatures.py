"""Signatures verified as the signature policy asks, as containers/image verifies them: simple signatures made by
the real gpg and read from lookaside storage (a directory, or an HTTP server), sigstore signatures read from the
test registry's attachments; the identity rules of signedIdentity; what cannot be checked refused before any
request."""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Final

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from common.bundle.registryv1 import gourl, sigstore, x509chain, x509names
from common.bundle.registryv1.imageref import parse_reference
from common.bundle.registryv1.policy import SignedIdentity
from common.bundle.registryv1.pull import host_platform
from common.bundle.registryv1.registriesd import RegistriesDError, read_registries_d, registries_d_dirs
from common.bundle.registryv1.signatures import identity_matches
from common.bundle.registryv1.source import load_bundle
from tests.producer.helpers import cosctl
from tests.registryv1.bundles import Layout, files_layer, tree_files, write_bundle
from tests.registryv1.pulling import push_bundle, trust
from tests.registryv1.signing import (
    GPG,
    SIGSTORE,
    SIGSTORE_MIME,
    CosignKey,
    FulcioCA,
    GPGKey,
    PkiCA,
    attach,
    lookaside,
    payload,
    registries_d,
    rekor_set,
)
from tests.registryv1.test_policy import write_policy
from tests.registryv1.test_pull import basic_entry, write_auth
from tests.support.registry_server import Registry
from tests.webhook.support import CA

REPO = "op/demo-bundle"
NO_SIGNATURE = "A signature was required, but no signature exists"
NOT_ATTACHED = "sigstore attachments not read: registries.d does not set use-sigstore-attachments"


def looked(storage: str, repo: str, digest: str, attachments: str = NOT_ATTACHED) -> str:
    """Where a refusal for want of signatures says they were looked for."""
    return f"(looked in lookaside storage {storage}/{repo}@sha256={digest.removeprefix('sha256:')}; {attachments})"


@pytest.fixture(scope="module")
def gpg() -> Iterator[GPG]:
    keys = GPG()
    yield keys
    keys.close()


@pytest.fixture(scope="module")
def trusted(gpg: GPG) -> GPGKey:
    return gpg.generate("Trusted Signer <trusted@example.com>")


@pytest.fixture(scope="module")
def stranger(gpg: GPG) -> GPGKey:
    return gpg.generate("Someone Else <else@example.com>")


class Signed:
    """A bundle pushed to the test registry, with a policy asking for simple signatures by ``trusted`` and
    lookaside storage in a directory."""

    def __init__(self, registry: Registry, home: Path, tmp_path: Path, key: GPGKey) -> None:
        self.registry = registry
        self.digest = push_bundle(registry, write_bundle(tmp_path / "bundle"), tmp_path)
        self.ref = f"docker://{registry.ref(REPO, 'v1')}"
        self.identity = registry.ref(REPO, "v1")
        self.storage = tmp_path / "sigstore"
        registries_d(home, f"default-docker:\n  lookaside: file://{self.storage}\n")
        (tmp_path / "trusted.asc").write_bytes(key.public)
        self.policy = write_policy(home, {"default": [{"type": "reject"}], "transports": {"docker": {
            registry.host: [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": str(tmp_path / "trusted.asc")}]}}})

    def publish(self, *signatures: bytes) -> None:
        lookaside(self.storage, REPO, self.digest, list(signatures))

    def refusal(self, reason: str, kinds: str = "signedBy") -> str:
        return (f"{self.ref}: rejected by the signature policy {self.policy} ({kinds}, scope transports.docker "
                f'"{self.registry.host}"): {reason}')


@pytest.fixture
def signed(registry: Registry, home: Path, tmp_path: Path, trusted: GPGKey) -> Signed:
    return Signed(registry, home, tmp_path, trusted)


def refused(ref: str) -> str:
    with pytest.raises(Exception) as caught:
        load_bundle(ref)
    return str(caught.value)


def test_an_image_signed_by_a_trusted_key_is_pulled_and_others_are_refused(signed: Signed, gpg: GPG,
                                                                           trusted: GPGKey, stranger: GPGKey) -> None:
    assert refused(signed.ref) == signed.refusal(
        f"{NO_SIGNATURE} {looked(f'file://{signed.storage}', REPO, signed.digest)}")
    signed.publish(gpg.sign(stranger, payload(signed.digest, signed.identity)))
    assert refused(signed.ref) == signed.refusal(
        f"Invalid GPG signature: made by key {stranger.fingerprint}, which is not one of the policy's keys")
    signed.publish(gpg.sign(stranger, payload(signed.digest, signed.identity)),
                   gpg.sign(trusted, payload(signed.digest, signed.identity)))
    assert load_bundle(signed.ref).package_name == "demo"   # one accepted signature is enough
    status, _, err = cosctl("render", signed.ref, "-n", "demo-system")
    assert (status, err.splitlines()[0]) == (0, (
        f"cosctl render: {signed.ref}: signatures verified as the signature policy {signed.policy} asks (signedBy, "
        f'scope transports.docker "{signed.registry.host}")'))


def test_a_signature_must_name_the_manifest_and_an_identity_the_policy_accepts(signed: Signed, gpg: GPG,
                                                                               trusted: GPGKey) -> None:
    other = "sha256:" + "0" * 64
    signed.publish(gpg.sign(trusted, payload(other, signed.identity)))
    assert refused(signed.ref) == signed.refusal(f"Signature for digest {other} does not match")
    moved = signed.registry.ref("elsewhere/demo-bundle", "v1")
    signed.publish(gpg.sign(trusted, payload(signed.digest, moved)),
                   gpg.sign(trusted, payload(signed.digest, signed.registry.ref(REPO, "v2"))))
    assert refused(signed.ref) == signed.refusal(
        f'None of the signatures were accepted, reasons: Signature for identity "{moved}" is not accepted; '
        f'Signature for identity "{signed.registry.ref(REPO, "v2")}" is not accepted')
    # matchRepository takes another tag of the same repository
    key = json.loads(signed.policy.read_text())["transports"]["docker"][signed.registry.host][0]
    key["signedIdentity"] = {"type": "matchRepository"}
    write_policy(signed.policy.parent.parent.parent, {"default": [{"type": "reject"}], "transports": {
        "docker": {signed.registry.host: [key]}}})
    assert load_bundle(signed.ref).package_name == "demo"


def test_a_payload_is_read_as_strictly_as_containers_image_reads_it(signed: Signed, gpg: GPG,
                                                                    trusted: GPGKey) -> None:
    document = json.loads(payload(signed.digest, signed.identity))
    document["critical"]["extra"] = 1
    signed.publish(gpg.sign(trusted, json.dumps(document).encode()))
    assert refused(signed.ref) == signed.refusal('Unknown key "extra"')   # ParanoidUnmarshalJSONObject's words
    for critical, refusal in (([1], "JSON object expected, got 91"),   # %#v of json.Delim('[')
                              ({"type": "atomic container signature", "image": {"docker-manifest-digest": "sha256:ab"},
                                "identity": {"docker-reference": signed.identity}},
                               'invalid docker-manifest-digest value "sha256:ab": invalid checksum digest length')):
        document["critical"] = critical
        signed.publish(gpg.sign(trusted, json.dumps(document).encode()))
        assert refused(signed.ref) == signed.refusal(refusal)
    document = json.loads(payload(signed.digest, signed.identity))
    document["critical"]["type"] = SIGSTORE
    signed.publish(gpg.sign(trusted, json.dumps(document).encode()))
    assert refused(signed.ref) == signed.refusal(f"Unrecognized signature type {SIGSTORE}")
    signed.publish(b"\xa3 not a signature")
    assert refused(signed.ref).startswith(signed.refusal("Invalid GPG signature: not a signed OpenPGP message"))
    signed.publish(b"<html>")
    assert refused(signed.ref) == (
        f"{signed.ref}: parsing signature file://{signed.storage}/{REPO}@sha256={signed.digest[7:]}/signature-1: "
        "unrecognized signature format, starting with binary 0x3c")


def test_a_signing_subkey_counts_as_its_primary_key_and_an_expired_key_does_not(
        signed: Signed, gpg: GPG, tmp_path: Path) -> None:
    with_subkey = gpg.generate("Subkey Signer <sub@example.com>", subkey=True)
    (tmp_path / "trusted.asc").write_bytes(with_subkey.public)
    signed.publish(gpg.sign(with_subkey, payload(signed.digest, signed.identity)))
    assert load_bundle(signed.ref).package_name == "demo"
    expired = gpg.generate("Expired Signer <old@example.com>", expires="1d", faked_time="20200101T000000")
    (tmp_path / "trusted.asc").write_bytes(expired.public)
    signed.publish(gpg.sign(expired, payload(signed.digest, signed.identity), faked_time="20200101T010000"))
    assert refused(signed.ref) == signed.refusal(
        f"Invalid GPG signature: a signature by key {expired.fingerprint[-16:]}, which has expired")


def test_a_multi_platform_image_is_verified_by_the_image_chosen_as_containers_image_verifies_it(
        signed: Signed, gpg: GPG, trusted: GPGKey, tmp_path: Path) -> None:
    os_name, arch = host_platform()
    layout = Layout(tmp_path / "multi")
    mine = layout.image([layout.layer(files_layer(tree_files(write_bundle(tmp_path / "mine"))))])
    index = layout.index([{**mine, "platform": {"os": os_name, "architecture": arch}}])
    layout.finish([index])
    index_digest = signed.registry.push_layout("op/multi", "v1", layout.root)
    ref, identity = f"docker://{signed.registry.ref('op/multi', 'v1')}", signed.registry.ref("op/multi", "v1")
    lookaside(signed.storage, "op/multi", index_digest, [gpg.sign(trusted, payload(index_digest, identity))])
    # the index alone signed: podman refuses it (it checks the image it copies, under that image's digest)
    assert refused(ref) == (f"{ref}: rejected by the signature policy {signed.policy} (signedBy, scope "
                            f'transports.docker "{signed.registry.host}"): {NO_SIGNATURE} '
                            f"{looked(f'file://{signed.storage}', 'op/multi', mine['digest'])}")
    lookaside(signed.storage, "op/multi", mine["digest"], [gpg.sign(trusted, payload(mine["digest"], identity))])
    heard: list[str] = []
    assert load_bundle(ref, heard.append).package_name == "demo"
    assert heard[0] == (f"{ref}: signatures verified as the signature policy {signed.policy} asks (signedBy, scope "
                        f'transports.docker "{signed.registry.host}", the {os_name}/{arch} image)')


def test_keys_given_inline_or_missing(signed: Signed, gpg: GPG, trusted: GPGKey, home: Path, tmp_path: Path) -> None:
    signed.publish(gpg.sign(trusted, payload(signed.digest, signed.identity)))
    write_policy(home, {"default": [{"type": "signedBy", "keyType": "GPGKeys",
                                     "keyData": base64.b64encode(trusted.public).decode()}]})
    assert load_bundle(signed.ref).package_name == "demo"
    write_policy(home, {"default": [{"type": "signedBy", "keyType": "GPGKeys",
                                     "keyPaths": [str(tmp_path / "trusted.asc"), str(tmp_path / "gone.asc")]}]})
    assert refused(signed.ref) == (
        f"{signed.ref}: rejected by the signature policy {signed.policy} (signedBy, scope default): open "
        f"{tmp_path / 'gone.asc'}: no such file or directory")
    write_policy(home, {"default": [{"type": "signedBy", "keyType": "GPGKeys",
                                     "keyData": base64.b64encode(b"not a key").decode()}]})
    assert refused(signed.ref) == (
        f"{signed.ref}: rejected by the signature policy {signed.policy} (signedBy, scope default): No public keys "
        "imported")


def test_without_gpg_a_signed_by_requirement_refuses_saying_what_to_install(
        signed: Signed, gpg: GPG, trusted: GPGKey, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    signed.publish(gpg.sign(trusted, payload(signed.digest, signed.identity)))
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert refused(signed.ref) == signed.refusal("cannot verify GPG signatures: gpg (GnuPG) is not on PATH (install "
                                                 "gnupg, which podman's GPGME needs too)")


def test_a_registry_serving_signatures_itself_is_asked_for_them_instead_of_lookaside(
        ca: CA, home: Path, tmp_path: Path, gpg: GPG, trusted: GPGKey, stranger: GPGKey) -> None:
    with Registry(ca, auth="bearer", users={"alice": "s3cret"}, supports_signatures=True) as registry:
        trust(home, ca, registry)
        write_auth(home / ".config" / "containers" / "auth.json", {registry.host: basic_entry("alice", "s3cret")})
        signed = Signed(registry, home, tmp_path, trusted)
        signed.publish(gpg.sign(stranger, payload(signed.digest, signed.identity)))   # lookaside: not read
        registry.signatures[(REPO, signed.digest)] = [gpg.sign(trusted, payload(signed.digest, signed.identity))]
        assert load_bundle(signed.ref).package_name == "demo"
        asked = [r.path for r in registry.requests if r.path.startswith("/extensions/")]
        assert asked[-1] == f"/extensions/v2/{REPO}/signatures/{signed.digest}"
        registry.signatures[(REPO, signed.digest)] = []
        assert refused(signed.ref) == signed.refusal(
            f"{NO_SIGNATURE} (looked in {registry.host}'s signature API; {NOT_ATTACHED})")


class _Lookaside(http.server.SimpleHTTPRequestHandler):
    requested: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        type(self).requested.append(self.path)
        super().do_GET()


def test_signatures_are_read_from_a_lookaside_server_until_one_is_missing(signed: Signed, gpg: GPG,
                                                                          trusted: GPGKey, home: Path) -> None:
    signed.publish(gpg.sign(trusted, payload("sha256:" + "1" * 64, signed.identity)),
                   gpg.sign(trusted, payload(signed.digest, signed.identity)))
    handler = type("Handler", (_Lookaside,), {"requested": []})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: handler(*a, directory=str(signed.storage)))  # type: ignore[misc]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        registries_d(home, f"docker:\n  {signed.registry.host}/op:\n    lookaside: {base}\n"
                           f"default-docker:\n  lookaside: file:///nowhere\n")
        assert load_bundle(signed.ref).package_name == "demo"
        where = f"/{REPO}@sha256={signed.digest[7:]}"
        assert handler.requested == [f"{where}/signature-1", f"{where}/signature-2", f"{where}/signature-3"]
    finally:
        server.shutdown()
        server.server_close()


def test_sigstore_signatures_are_read_from_attachments_when_registries_d_asks(
        registry: Registry, home: Path, tmp_path: Path) -> None:
    key, other = CosignKey.generate(), CosignKey.generate()
    digest = push_bundle(registry, write_bundle(tmp_path / "bundle"), tmp_path)
    ref = f"docker://{registry.ref(REPO, 'v1')}"
    (tmp_path / "cosign.pub").write_bytes(key.public_pem)
    policy = write_policy(home, {"default": [{"type": "sigstoreSigned", "keyPath": str(tmp_path / "cosign.pub"),
                                              "signedIdentity": {"type": "matchRepository"}}]})
    good = payload(digest, registry.ref(REPO, "v1"), SIGSTORE)
    attach(registry, REPO, digest, [(good, {"dev.cosignproject.cosign/signature": key.sign(good)}, SIGSTORE_MIME)])
    registries_d(home, f"default-docker:\n  lookaside: file://{tmp_path / 'none'}\n")
    prefix = f"{ref}: rejected by the signature policy {policy} (sigstoreSigned, scope default): "
    nowhere = f"file://{tmp_path / 'none'}"
    assert refused(ref) == prefix + f"{NO_SIGNATURE} {looked(nowhere, REPO, digest)}"
    registries_d(home, f"default-docker:\n  lookaside: file://{tmp_path / 'none'}\n  use-sigstore-attachments: true\n")
    assert load_bundle(ref).package_name == "demo"
    attach(registry, REPO, digest, [(good, {"dev.cosignproject.cosign/signature": other.sign(good)}, SIGSTORE_MIME),
                                    (b"{}", {}, "application/vnd.in-toto+json")])
    assert refused(ref) == prefix + ("cryptographic signature verification failed: invalid signature when "
                                     "validating ASN.1 encoded signature")
    attach(registry, REPO, digest, [(b"{}", {}, "application/vnd.in-toto+json")])
    attached = f"sigstore attachments read from {registry.host}/{REPO}:sha256-{digest.removeprefix('sha256:')}.sig"
    assert refused(ref) == prefix + (f"{NO_SIGNATURE} (0 non-sigstore signatures, 1 sigstore non-signature "
                                     f"attachments) {looked(nowhere, REPO, digest, attached)}")
    # without signedIdentity, matchRepoDigestOrExact: the tag signed must be the tag asked for
    write_policy(home, {"default": [{"type": "sigstoreSigned", "keyData": base64.b64encode(key.public_pem).decode()}]})
    v2 = payload(digest, registry.ref(REPO, "v2"), SIGSTORE)
    attach(registry, REPO, digest, [(v2, {"dev.cosignproject.cosign/signature": key.sign(v2)}, SIGSTORE_MIME)])
    assert refused(ref) == prefix + f'Signature for identity "{registry.ref(REPO, "v2")}" is not accepted'
    attach(registry, REPO, digest, [(good, {"dev.cosignproject.cosign/signature": key.sign(good)}, SIGSTORE_MIME)])
    assert load_bundle(ref).package_name == "demo"


SIGNER: Final = "release@example.com"


class CertificateSigned:
    """A bundle pushed to the test registry for sigstore signatures with certificates, read from attachments, under
    a policy with one ``sigstoreSigned`` requirement (``requirement`` adds to it)."""

    EMAIL = SIGNER

    def __init__(self, registry: Registry, home: Path, tmp_path: Path, requirement: dict[str, Any]) -> None:
        self.registry, self.home, self.tmp = registry, home, tmp_path
        self.digest = push_bundle(registry, write_bundle(tmp_path / "bundle"), tmp_path)
        self.ref = f"docker://{registry.ref(REPO, 'v1')}"
        registries_d(home, f"default-docker:\n  lookaside: file://{tmp_path / 'none'}\n"
                           "  use-sigstore-attachments: true\n")
        self.policy = write_policy(home, {"default": [{
            "type": "sigstoreSigned", **requirement, "signedIdentity": {"type": "matchRepository"}}]})
        self.content = payload(self.digest, registry.ref(REPO, "v1"), SIGSTORE)

    def refusal(self, reason: str) -> str:
        return f"{self.ref}: rejected by the signature policy {self.policy} (sigstoreSigned, scope default): {reason}"

    def signature(self, key: ec.EllipticCurvePrivateKey) -> str:
        """The payload signed by ``key``, as the signature annotation holds it."""
        return base64.b64encode(key.sign(self.content, ec.ECDSA(hashes.SHA256()))).decode()

    def attach_signed(self, signature: str, cert: bytes, chain: bytes | None, **notes: str) -> None:
        """Attach the payload with ``signature``, ``cert``, ``chain`` (when not None) and other annotations."""
        annotations = {"dev.cosignproject.cosign/signature": signature,
                       "dev.sigstore.cosign/certificate": cert.decode(), **notes}
        if chain is not None:
            annotations["dev.sigstore.cosign/chain"] = chain.decode()
        attach(self.registry, REPO, self.digest, [(self.content, annotations, SIGSTORE_MIME)])


class Keyless(CertificateSigned):
    """A bundle signed as ``cosign sign`` signs keyless: a Fulcio certificate for the signer's e-mail, Rekor's SET."""

    ISSUER = "https://token.actions.githubusercontent.com"

    def __init__(self, registry: Registry, home: Path, tmp_path: Path) -> None:
        self.fulcio, self.rekor = FulcioCA.generate(), ec.generate_private_key(ec.SECP256R1())
        (tmp_path / "fulcio.pem").write_bytes(self.fulcio.root_pem)
        (tmp_path / "rekor.pub").write_bytes(self.rekor.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        super().__init__(registry, home, tmp_path, {
            "rekorPublicKeyPath": str(tmp_path / "rekor.pub"),
            "fulcio": {"caPath": str(tmp_path / "fulcio.pem"), "oidcIssuer": self.ISSUER, "subjectEmail": self.EMAIL}})

    def sign(self, *, email: str = SIGNER, issuer: str = ISSUER, at: int = 1764000000, logged_at: int | None = None,
             rekor: ec.EllipticCurvePrivateKey | None = None, chain: bool = True, content: bytes | None = None,
             ca: FulcioCA | None = None) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (ca or self.fulcio).issue(key, email, issuer, at=at)
        signature = self.signature(key)
        self.attach_signed(signature, cert, (ca or self.fulcio).chain_pem if chain else None, **{
            "dev.sigstore.cosign/bundle": rekor_set(rekor or self.rekor, cert, signature, content or self.content,
                                                    logged_at or at + 30)})


def test_keyless_signatures_are_verified_by_their_fulcio_certificate_at_the_time_rekor_logged_them(
        registry: Registry, home: Path, tmp_path: Path) -> None:
    signed = Keyless(registry, home, tmp_path)
    signed.sign()
    assert load_bundle(signed.ref).package_name == "demo"
    signed.sign(email="someone@example.com")
    assert refused(signed.ref) == signed.refusal(
        'Required email "release@example.com" not found (got ["someone@example.com"])')
    signed.sign(issuer="https://accounts.example.com")
    assert refused(signed.ref) == signed.refusal('Unexpected Fulcio OIDC issuer "https://accounts.example.com"')
    signed.sign(logged_at=1764000000 + 3600)   # logged after the 10 minutes the certificate was valid
    assert refused(signed.ref).startswith(signed.refusal(
        "veryfing leaf certificate failed: x509: certificate has expired or is not yet valid: "))
    signed.sign(ca=FulcioCA.generate("elsewhere"))
    assert refused(signed.ref) == signed.refusal(
        "veryfing leaf certificate failed: x509: certificate signed by unknown authority")
    signed.sign(chain=False)   # the intermediate is needed to reach the root
    assert refused(signed.ref) == signed.refusal(
        "veryfing leaf certificate failed: x509: certificate signed by unknown authority")
    signed.sign(rekor=ec.generate_private_key(ec.SECP256R1()))
    assert refused(signed.ref) == signed.refusal("cryptographic signature verification of Rekor SET failed")
    signed.sign(content=b"another payload")
    assert refused(signed.ref) == signed.refusal("payload in Rekor SET does not match")


def test_a_hostile_chain_or_set_is_refused_quickly_and_cleanly(registry: Registry, home: Path, tmp_path: Path) -> None:
    signed = Keyless(registry, home, tmp_path)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = signed.fulcio.issue(key, Keyless.EMAIL, Keyless.ISSUER)
    signature = signed.signature(key)
    loop = FulcioCA.generate(signed.fulcio.intermediate.subject.rfc4514_string().removeprefix("CN="))
    notes = {"dev.cosignproject.cosign/signature": signature, "dev.sigstore.cosign/certificate": cert.decode(),
             "dev.sigstore.cosign/bundle": rekor_set(signed.rekor, cert, signature, signed.content),
             # a self-issued CA of the intermediate's name, many times: each is tried once (Go's alreadyInChain)
             "dev.sigstore.cosign/chain": (loop.root_pem * 12 + signed.fulcio.root_pem).decode()}
    attach(registry, REPO, signed.digest, [(signed.content, notes, SIGSTORE_MIME)])
    assert refused(signed.ref) == signed.refusal(
        "veryfing leaf certificate failed: x509: certificate signed by unknown authority")
    notes["dev.sigstore.cosign/bundle"] = '{"SignedEntryTimestamp": "AA==", "Payload": {"body": NaN}}'
    attach(registry, REPO, signed.digest, [(signed.content, notes, SIGSTORE_MIME)])
    assert refused(signed.ref) == signed.refusal("Rekor SET: invalid character 'N' looking for beginning of value")
    notes["dev.sigstore.cosign/bundle"] = rekor_set(signed.rekor, cert + b"\n", signature, signed.content)
    notes["dev.sigstore.cosign/chain"] = signed.fulcio.chain_pem.decode()
    attach(registry, REPO, signed.digest, [(signed.content, notes, SIGSTORE_MIME)])
    assert refused(signed.ref) == signed.refusal("publicKey in Rekor SET has trailing data")
    del notes["dev.cosignproject.cosign/signature"]
    attach(registry, REPO, signed.digest, [(signed.content, notes, SIGSTORE_MIME)])
    assert refused(signed.ref) == signed.refusal("missing dev.cosignproject.cosign/signature annotation")


@pytest.mark.parametrize(("mail", "constraint", "matches"), [
    ("release@example.com", "example.com", True),
    ("release@ci.example.com", "example.com", True),     # a domain covers its subdomains (Go)
    ("release@ci.example.com", ".example.com", True),
    ("release@example.com", ".example.com", False),
    ("release@EXAMPLE.com", "release@example.com", True),
    ("Release@example.com", "release@example.com", False),   # the local part is compared as it is
    ("release@example.org", "example.com", False),
])
def test_email_name_constraints_match_as_go_matches_them(mail: str, constraint: str, matches: bool) -> None:
    assert (_constrained([x509.RFC822Name(constraint)], None, x509.RFC822Name(mail)) is None) is matches


def test_an_empty_rekor_key_list_is_no_way_around_rekor(registry: Registry, home: Path, tmp_path: Path) -> None:
    digest = push_bundle(registry, write_bundle(tmp_path / "bundle"), tmp_path)
    ref = f"docker://{registry.ref(REPO, 'v1')}"
    key = CosignKey.generate()
    policy = write_policy(home, {"default": [{"type": "sigstoreSigned", "keyData": base64.b64encode(
        key.public_pem).decode(), "rekorPublicKeyData": "", "signedIdentity": {"type": "matchRepository"}}]})
    registries_d(home, f"default-docker:\n  lookaside: file://{tmp_path / 'none'}\n  use-sigstore-attachments: true\n")
    content = payload(digest, registry.ref(REPO, "v1"), SIGSTORE)
    attach(registry, REPO, digest, [(content, {"dev.cosignproject.cosign/signature": key.sign(content)},
                                     SIGSTORE_MIME)])
    assert refused(ref) == (f"{ref}: rejected by the signature policy {policy} (sigstoreSigned, scope default): "
                            "parsing Rekor public key 1: PEM decoding failed")


def test_an_empty_fulcio_ca_is_no_ca(registry: Registry, home: Path, tmp_path: Path) -> None:
    signed = Keyless(registry, home, tmp_path)
    policy = json.loads(signed.policy.read_text())
    policy["default"][0]["fulcio"] = {"caData": "", "oidcIssuer": Keyless.ISSUER, "subjectEmail": Keyless.EMAIL}
    signed.policy.write_text(json.dumps(policy))
    signed.sign()
    assert refused(signed.ref) == signed.refusal("error loading Fulcio CA certificates")


def test_a_public_key_with_rekor_needs_a_set_naming_that_key(registry: Registry, home: Path, tmp_path: Path) -> None:
    key, other_key, rekor = CosignKey.generate(), CosignKey.generate(), ec.generate_private_key(ec.SECP256R1())
    digest = push_bundle(registry, write_bundle(tmp_path / "bundle"), tmp_path)
    ref = f"docker://{registry.ref(REPO, 'v1')}"
    registries_d(home, f"default-docker:\n  lookaside: file://{tmp_path / 'none'}\n  use-sigstore-attachments: true\n")
    policy = write_policy(home, {"default": [{
        "type": "sigstoreSigned", "keyDatas": [base64.b64encode(other_key.public_pem).decode(),
                                               base64.b64encode(key.public_pem).decode()],
        "rekorPublicKeyData": base64.b64encode(rekor.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)).decode(),
        "signedIdentity": {"type": "matchRepository"}}]})
    content = payload(digest, registry.ref(REPO, "v1"), SIGSTORE)
    signature = key.sign(content)
    prefix = f"{ref}: rejected by the signature policy {policy} (sigstoreSigned, scope default): "
    attach(registry, REPO, digest, [(content, {"dev.cosignproject.cosign/signature": signature}, SIGSTORE_MIME)])
    assert refused(ref) == prefix + "missing dev.sigstore.cosign/bundle annotation"
    attach(registry, REPO, digest, [(content, {"dev.cosignproject.cosign/signature": signature,
                                               "dev.sigstore.cosign/bundle": rekor_set(rekor, key.public_pem,
                                                                                      signature, content)},
                                     SIGSTORE_MIME)])
    assert load_bundle(ref).package_name == "demo"
    attach(registry, REPO, digest, [(content, {"dev.cosignproject.cosign/signature": signature,
                                               "dev.sigstore.cosign/bundle": rekor_set(rekor, other_key.public_pem,
                                                                                      signature, content)},
                                     SIGSTORE_MIME)])
    assert refused(ref) == prefix + ("cryptographic signature verification failed: invalid signature when "
                                     "validating ASN.1 encoded signature")
    attach(registry, REPO, digest, [(content, {"dev.cosignproject.cosign/signature": signature,
                                               "dev.sigstore.cosign/bundle": rekor_set(rekor, key.public_pem,
                                                                                      key.sign(b"x"), content)},
                                     SIGSTORE_MIME)])
    assert refused(ref) == prefix + ("No public key verified against the RekorSET: publicKey in Rekor SET does not "
                                     "match, signature in Rekor SET does not match")


class PkiSigned(CertificateSigned):
    """A bundle signed as ``cosign sign --certificate`` signs with a certificate of an organisation's own CA, under a
    ``pki`` policy naming that CA's root and the signer's e-mail address (``pki`` adds to it)."""

    def __init__(self, registry: Registry, home: Path, tmp_path: Path, ca: PkiCA | None = None, **pki: Any) -> None:
        self.ca = ca or PkiCA.generate()
        tmp_path.mkdir(parents=True, exist_ok=True)
        (tmp_path / "roots.pem").write_bytes(self.ca.root_pem)
        super().__init__(registry, home, tmp_path, {"pki": {
            "caRootsPath": str(tmp_path / "roots.pem"), "subjectEmail": self.EMAIL, **pki}})

    def sign(self, *, ca: PkiCA | None = None, chain: bool = True, emails: tuple[str, ...] = (SIGNER,),
             hosts: tuple[str, ...] = (), hours: tuple[int, int] = (-1, 1), certificate: bytes | None = None,
             key: ec.EllipticCurvePrivateKey | None = None) -> None:
        key = key or ec.generate_private_key(ec.SECP256R1())
        ca = ca or self.ca
        cert = certificate or ca.issue(key, emails=emails, hosts=hosts, hours=hours)
        self.attach_signed(self.signature(key), cert, ca.chain_pem if chain else None)


def test_pki_signatures_are_verified_by_a_certificate_of_the_policys_ca_valid_now(
        registry: Registry, home: Path, tmp_path: Path) -> None:
    signed = PkiSigned(registry, home, tmp_path)
    signed.sign()
    assert load_bundle(signed.ref).package_name == "demo"
    signed.sign(emails=("someone@example.com",))
    assert refused(signed.ref) == signed.refusal(
        'Required email "release@example.com" not found (got ["someone@example.com"])')
    signed.sign(emails=("someone@example.com", "other@example.com"))   # Go's %q of a []string: no commas
    assert refused(signed.ref) == signed.refusal(
        'Required email "release@example.com" not found (got ["someone@example.com" "other@example.com"])')
    signed.sign(hours=(-3, -2))   # expired an hour ago: a PKI has no Rekor time, it is checked now
    assert refused(signed.ref).startswith(signed.refusal(
        "veryfing leaf certificate failed: x509: certificate has expired or is not yet valid: current time "))
    signed.sign(chain=False)   # the intermediate is needed to reach the root
    assert refused(signed.ref) == signed.refusal(
        "veryfing leaf certificate failed: x509: certificate signed by unknown authority")
    signed.sign(ca=PkiCA.generate("Elsewhere"))
    assert refused(signed.ref) == signed.refusal(
        "veryfing leaf certificate failed: x509: certificate signed by unknown authority")
    signed.sign(ca=PkiCA.generate("Example Corp", inter_usage=x509.KeyUsage(
        True, False, False, False, False, False, False, False, False)))   # a CA not allowed to sign certificates
    assert refused(signed.ref) == signed.refusal(
        'veryfing leaf certificate failed: x509: certificate signed by unknown authority (possibly because of "x509: '
        'invalid signature: parent certificate cannot sign this kind of certificate")')
    attach(registry, REPO, signed.digest, [(signed.content, {"dev.cosignproject.cosign/signature": "AA=="},
                                            SIGSTORE_MIME)])
    assert refused(signed.ref) == signed.refusal("missing dev.sigstore.cosign/certificate annotation")


def test_a_pki_policy_may_name_the_intermediates_a_hostname_or_the_signing_certificate_itself(
        registry: Registry, home: Path, tmp_path: Path) -> None:
    ca = PkiCA.generate()
    signed = PkiSigned(registry, home, tmp_path / "b", ca, caIntermediatesData=base64.b64encode(
        ca.intermediate_pem).decode())
    signed.sign(chain=False)
    assert load_bundle(signed.ref).package_name == "demo"
    signed = PkiSigned(registry, home, tmp_path / "c", subjectEmail="", subjectHostname="signer.example.com")
    signed.sign(hosts=("*.EXAMPLE.com",))
    assert load_bundle(signed.ref).package_name == "demo"
    signed.sign(hosts=("signer.example.org", "example.com"))
    assert refused(signed.ref) == signed.refusal("Unexpected subject hostname: x509: certificate is valid for "
                                                 "signer.example.org, example.com, not signer.example.com")
    # a self-signed signing certificate named as the root is a chain of its own (Go: the leaf is in Roots)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    own = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(x509.Name([]))
           .public_key(key.public_key()).serial_number(7).not_valid_before(now - datetime.timedelta(hours=1))
           .not_valid_after(now + datetime.timedelta(hours=1))
           .add_extension(x509.SubjectAlternativeName([x509.RFC822Name(PkiSigned.EMAIL)]), critical=True)
           .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
           .sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    signed = PkiSigned(registry, home, tmp_path / "d", caRootsPath="", caRootsData=base64.b64encode(own).decode())
    signed.sign(certificate=own, key=key, chain=False)
    assert load_bundle(signed.ref).package_name == "demo"
    signed = PkiSigned(registry, home, tmp_path / "e", caRootsPath="", caRootsData="")
    signed.sign()
    assert refused(signed.ref) == signed.refusal("error loading PKI CA Roots certificates")


def _named(*names: x509.GeneralName, common: str = "") -> x509.Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)] if common else [])
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
               .serial_number(1).not_valid_before(datetime.datetime(2025, 1, 1))
               .not_valid_after(datetime.datetime(2030, 1, 1)))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    return builder.sign(key, hashes.SHA256())


@pytest.mark.parametrize(("names", "host", "problem"), [
    ((x509.DNSName("*.example.com"),), "signer.example.com", None),
    ((x509.DNSName("*.example.com"),), "a.signer.example.com",
     "x509: certificate is valid for *.example.com, not a.signer.example.com"),
    ((x509.DNSName("Signer.Example.com"),), "signer.example.com.", None),     # ASCII case, a trailing dot
    ((x509.DNSName("signer_1.example.com"),), "SIGNER_1.example.com", None),
    ((x509.DNSName("a*.example.com"),), "ab.example.com",
     "x509: certificate is valid for a*.example.com, not ab.example.com"),     # only a whole-label wildcard
    ((x509.DNSName("a*.example.com"),), "A*.example.com", None),               # an invalid name matches exactly
    ((x509.IPAddress(ipaddress.ip_address("10.0.0.1")),), "10.0.0.1", None),
    ((x509.IPAddress(ipaddress.ip_address("::ffff:10.0.0.1")),), "10.0.0.1", None),
    ((x509.IPAddress(ipaddress.ip_address("2001:db8::1")),), "[2001:db8::1]", None),
    ((x509.IPAddress(ipaddress.ip_address("10.0.0.2")),), "10.0.0.1",
     "x509: certificate is valid for 10.0.0.2, not 10.0.0.1"),
    ((x509.DNSName("10.0.0.1"),), "10.0.0.1",
     "x509: cannot validate certificate for 10.0.0.1 because it doesn't contain any IP SANs"),
    ((x509.RFC822Name("release@example.com"),), "signer.example.com",
     "x509: certificate is not valid for any names, but wanted to match signer.example.com"),
    ((), "signer.example.com", "x509: certificate relies on legacy Common Name field, use SANs instead"),
])
def test_a_pki_hostname_is_matched_as_gos_verify_hostname_matches_it(names: tuple[x509.GeneralName, ...], host: str,
                                                                     problem: str | None) -> None:
    assert x509names.hostname_problem(_named(*names, common="signer.example.com"), host) == problem


def _constrained(permitted: list[x509.GeneralName] | None, excluded: list[x509.GeneralName] | None,
                 *names: x509.GeneralName) -> str | None:
    """Why a CA with these name constraints may not sign a certificate naming ``names`` (x509names.name_problem)."""
    key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(x509.Name([]))
          .public_key(key.public_key()).serial_number(1).not_valid_before(datetime.datetime(2025, 1, 1))
          .not_valid_after(datetime.datetime(2030, 1, 1))
          .add_extension(x509.NameConstraints(permitted, excluded), critical=True).sign(key, hashes.SHA256()))
    return x509names.name_problem(ca, [_named(*names)])


NOT_AUTHORIZED = "x509: a root or intermediate certificate is not authorized to sign for this name: "
IP = ipaddress.ip_address
NET = ipaddress.ip_network


@pytest.mark.parametrize(("permitted", "excluded", "names", "problem"), [
    ([x509.DNSName("example.com")], None, [x509.DNSName("signer.EXAMPLE.com")], None),
    ([x509.DNSName("example.com")], None, [x509.DNSName("example.com")], None),
    ([x509.DNSName(".example.com")], None, [x509.DNSName("example.com")],
     NOT_AUTHORIZED + 'DNS name "example.com" is not permitted by any constraint'),
    ([x509.DNSName("example.com")], None, [x509.DNSName("badexample.com")],
     NOT_AUTHORIZED + 'DNS name "badexample.com" is not permitted by any constraint'),
    (None, [x509.DNSName("bad.example.com")], [x509.DNSName("*.example.com")],
     NOT_AUTHORIZED + 'DNS name "*.example.com" is excluded by constraint "bad.example.com"'),
    ([x509.DNSName("example.com")], None, [x509.DNSName("signer.example.com.")],
     NOT_AUTHORIZED + 'x509: cannot parse dnsName "signer.example.com."'),
    ([x509.RFC822Name("example.com")], None, [x509.RFC822Name("a@example.com"), x509.DNSName("x.example.org")],
     None),   # no DNS constraint: DNS names are free
    ([x509.IPAddress(NET("10.0.0.0/8"))], None, [x509.IPAddress(IP("10.1.2.3"))], None),
    ([x509.IPAddress(NET("10.0.0.0/8"))], None, [x509.IPAddress(IP("::ffff:10.1.2.3"))],
     NOT_AUTHORIZED + 'IP address "10.1.2.3" is not permitted by any constraint'),   # another address length
    ([x509.IPAddress(NET("::ffff:0:0/96"))], None, [x509.IPAddress(IP("::ffff:10.1.2.3"))], None),
    (None, [x509.IPAddress(NET("2001:db8::/64"))], [x509.IPAddress(IP("2001:db8::7"))],
     NOT_AUTHORIZED + 'IP address "2001:db8::7" is excluded by constraint "2001:db8::/64"'),
    ([x509.UniformResourceIdentifier(".example.com")], None,
     [x509.UniformResourceIdentifier("https://user@CI.example.com:8443/build")], None),
    ([x509.UniformResourceIdentifier("example.com")], None, [x509.UniformResourceIdentifier("urn:example:x")],
     NOT_AUTHORIZED + 'URI with empty host ("urn:example:x") cannot be matched against constraints'),
    ([x509.UniformResourceIdentifier("example.com")], None, [x509.UniformResourceIdentifier("https://10.0.0.1/")],
     NOT_AUTHORIZED + 'URI with IP ("https://10.0.0.1/") cannot be matched against constraints'),
    # mailboxes read as Go reads them: quotes resolved, the domain after the first unquoted @
    ([x509.RFC822Name("release@example.com")], None, [x509.RFC822Name('"release"@example.com')], None),
    ([x509.RFC822Name("example.com")], None, [x509.RFC822Name._init_without_validation("a@b@example.com")],
     NOT_AUTHORIZED + 'email address "a@b@example.com" is not permitted by any constraint'),
    ([x509.DNSName("example.com")], None, [x509.RFC822Name("re..lease@example.com")],
     NOT_AUTHORIZED + 'cannot parse rfc822Name "re..lease@example.com"'),
    (None, [x509.RFC822Name("bad.example.com")], [x509.RFC822Name("x@*.example.com")],
     NOT_AUTHORIZED + 'email address "x@*.example.com" is excluded by constraint "bad.example.com"'),
    # Go's search tries the nearest lower constraint only: ::/1 is missed beside an IPv4-mapped /96
    ([x509.IPAddress(NET("::/1")), x509.IPAddress(NET("::ffff:0:0/96"))], None,
     [x509.IPAddress(IP("2001:db8::7"))],
     NOT_AUTHORIZED + 'IP address "2001:db8::7" is not permitted by any constraint'),
])
def test_name_constraints_of_every_type_hold_as_go_holds_them(permitted: Any, excluded: Any,
                                                              names: list[x509.GeneralName],
                                                              problem: str | None) -> None:
    assert _constrained(permitted, excluded, *names) == problem


def test_pem_is_read_as_go_reads_it_a_block_that_does_not_decode_skipped() -> None:
    ca = PkiCA.generate()
    bad = b"-----BEGIN CERTIFICATE-----\nQUJD@@@@\n-----END CERTIFICATE-----\n"
    assert [c.subject for c in x509chain.load_roots(bad + ca.root_pem)] == [ca.root.subject]
    assert [c.subject for c in x509chain.load_intermediates(bad + ca.intermediate_pem)] == [ca.intermediate.subject]
    headed = ca.root_pem.replace(b"-----\n", b"-----\nComment: x\n\n", 1)
    assert x509chain.load_roots(headed) == []   # AppendCertsFromPEM skips a block with headers
    assert [c.subject for c in x509chain.load_intermediates(headed)] == [ca.root.subject]
    block, rest = x509chain.pem_decode(b"junk\n" + ca.root_pem + b"tail")
    assert (block is not None and block.label, rest) == ("CERTIFICATE", b"tail")
    assert x509chain.pem_decode(b"-----BEGIN X-----\nAAAA\n-----END Y-----\n") == (
        None, b"-----BEGIN X-----\nAAAA\n-----END Y-----\n")


@pytest.mark.parametrize(("uri", "problem"), [
    ("spiffe://example.org/ns/release/sa/signer", None),
    ("https://user@signer.example.com:8443/x?y#z", None),
    ("https://signer.example.com:abc/", 'cannot parse URI "https://signer.example.com:abc/": parse '
                                        '"https://signer.example.com:abc/": invalid port ":abc" after host'),
    ("https://signer.example.com./", 'cannot parse URI "https://signer.example.com./": invalid domain'),
    ("https://sign%65r.example.com/", 'cannot parse URI "https://sign%65r.example.com/": parse '
                                      '"https://sign%65r.example.com/": invalid URL escape "%65"'),
    ("https://sign er.example.com/", 'cannot parse URI "https://sign er.example.com/": parse '
                                     '"https://sign er.example.com/": invalid character " " in host name'),

    ("spiffe://[fe80::1%25en0]/x", None),
    ("spiffe://[::1%25]", 'cannot parse URI "spiffe://[::1%25]": parse "spiffe://[::1%25]": invalid host: '
                          'ParseAddr("::1%"): zone must be a non-empty string'),
    ("spiffe://[fe80::1%25%2F]", 'cannot parse URI "spiffe://[fe80::1%25%2F]": parse '
                                 '"spiffe://[fe80::1%25%2F]": invalid URL escape "%2F"'),
    ("*#%zz", 'cannot parse URI "*#%zz": parse "*#%zz": invalid URL escape "%zz"'),   # "*" is a path: the
    # fragment is still read
])
def test_a_uri_go_cannot_parse_makes_the_certificate_unreadable(uri: str, problem: str | None) -> None:
    assert x509names.certificate_name_problem(_named(x509.UniformResourceIdentifier(uri))) == problem


@pytest.mark.parametrize(("kind", "shown"), [(None, '""'), ("rekord", '"rekord"'), ("r\u00e9kord", '"r\u00e9kord"')])
def test_a_rekor_entry_of_another_kind_is_refused_in_containers_images_words(kind: str | None, shown: str) -> None:
    """Go decodes the kind into a string: a missing one is "" (not null), quoted by %q."""
    rekor, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    raw_set = rekor_set(rekor, pem, "c2ln", b"payload", kind=kind).encode()
    with pytest.raises(x509chain.Untrusted) as refused_set:
        sigstore.verify_set([rekor.public_key()], raw_set, pem, "c2ln", b"payload")
    assert str(refused_set.value) == f"decoding the body of a Rekor SET payload: invalid kind value: {shown}"


def test_strict_json_reads_lone_surrogate_escapes_as_go_does() -> None:
    """Go decodes a lone surrogate escape to U+FFFD: two keys differing only there are the same key."""
    with pytest.raises(x509chain.Untrusted) as duplicate:
        sigstore.strict_json(b'{"\\ud800": 1, "\\udc80": 2}')
    assert str(duplicate.value) == 'Duplicate key "\ufffd"'
    assert sigstore.strict_json(b'{"a": ["x\\udfff"]}') == {"a": ["x\ufffd"]}


def test_url_errors_quote_as_go_quotes_them() -> None:
    """Go's %q: printable non-ASCII as it is, an undecodable byte as \\xNN, a control character by its escape."""
    assert gourl.go_url_host("https://\u00e9 x/") == ("", 'parse "https://\u00e9 x/": invalid character " " '
                                                         "in host name")
    assert gourl.go_url_host("https://a/%\udcc3") == ("", 'parse "https://a/%\\xc3": invalid URL escape '
                                                          '"%\\xc3"')
    assert gourl.go_url_host("a\x7fb") == ("", 'parse "a\\x7fb": net/url: invalid control character in URL')


def test_a_name_constraint_go_cannot_read_makes_the_certificate_unreadable() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    for constraint, problem in ((x509.DNSName("other.org."), 'failed to parse dnsName constraint "other.org."'),
                                (x509.UniformResourceIdentifier("192.0.2.7"),
                                 'failed to parse URI constraint "192.0.2.7": cannot be IP address'),
                                (x509.RFC822Name("a..b@example.org"),
                                 'failed to parse rfc822Name constraint "a..b@example.org"')):
        ca = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(x509.Name([]))
              .public_key(key.public_key()).serial_number(1).not_valid_before(datetime.datetime(2025, 1, 1))
              .not_valid_after(datetime.datetime(2030, 1, 1))
              .add_extension(x509.NameConstraints(None, [constraint]), critical=True).sign(key, hashes.SHA256()))
        assert x509names.certificate_name_problem(ca) == problem


def test_pem_base64_is_as_strict_as_gos() -> None:
    assert x509chain.pem_decode(b"-----BEGIN A-----\nQUJD\n-----END A-----\n")[0] is not None
    for body in (b"QUJD=", b"QUJD\n==", b"QUJDRA"):   # padding after a whole group, a group cut short
        assert x509chain.pem_decode(b"-----BEGIN A-----\n" + body + b"\n-----END A-----\n")[0] is None


P1, P2, ANY_POLICY = (x509.ObjectIdentifier("1.3.6.1.4.1.99999.1"), x509.ObjectIdentifier("1.3.6.1.4.1.99999.2"),
                      x509.ObjectIdentifier("2.5.29.32.0"))


def _mapping(issuer: x509.ObjectIdentifier, subject: x509.ObjectIdentifier) -> x509.UnrecognizedExtension:
    """A policy mappings extension of one pair (cryptography writes none of its own)."""
    def oid(o: x509.ObjectIdentifier) -> bytes:
        arcs = [int(a) for a in o.dotted_string.split(".")]
        body = bytearray([arcs[0] * 40 + arcs[1]])
        for arc in arcs[2:]:
            chunk = [arc & 0x7F]
            while arc := arc >> 7:
                chunk.append(0x80 | (arc & 0x7F))
            body += bytes(reversed(chunk))
        return bytes([6, len(body)]) + bytes(body)
    pair = oid(issuer) + oid(subject)
    inner = bytes([0x30, len(pair)]) + pair
    return x509.UnrecognizedExtension(x509.oid.ExtensionOID.POLICY_MAPPINGS, bytes([0x30, len(inner)]) + inner)


def _policy_chain(intermediate_extensions: list[tuple[x509.ExtensionType, bool]],
                  leaf_policies: tuple[x509.ObjectIdentifier, ...] = ()) -> str | None:
    """Why a root -> intermediate (with these extensions) -> leaf chain does not verify (x509chain.chain_problem), or
    why the intermediate does not read."""
    now = datetime.datetime.now(datetime.UTC)
    keys = [ec.generate_private_key(ec.SECP256R1()) for _ in range(3)]
    names = [x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, n)]) for n in ("root", "intermediate", "leaf")]

    def cert(i: int, extensions: list[tuple[x509.ExtensionType, bool]]) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(names[i]).issuer_name(names[max(i - 1, 0)])
                   .public_key(keys[i].public_key()).serial_number(i + 1)
                   .not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(hours=1)))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(keys[max(i - 1, 0)], hashes.SHA256())

    ca = (x509.BasicConstraints(ca=True, path_length=None), True)
    leaf_extensions: list[tuple[x509.ExtensionType, bool]] = [
        (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False)]
    if leaf_policies:
        leaf_extensions.append((x509.CertificatePolicies([x509.PolicyInformation(p, None) for p in leaf_policies]),
                                False))
    try:   # the intermediate read as a signature's chain is read
        intermediates = x509chain.load_intermediates(
            cert(1, [ca, *intermediate_extensions]).public_bytes(serialization.Encoding.PEM))
    except x509chain.Untrusted as exc:
        return str(exc)
    return x509chain.chain_problem(cert(2, leaf_extensions), intermediates, [cert(0, [ca])], now, "current time")


def _policies(*oids: x509.ObjectIdentifier) -> tuple[x509.ExtensionType, bool]:
    return x509.CertificatePolicies([x509.PolicyInformation(o, None) for o in oids]), False


def test_policy_extensions_are_parsed_as_go_parses_them() -> None:
    assert _policy_chain([(x509.UnrecognizedExtension(x509.oid.ExtensionOID.POLICY_MAPPINGS, b"\x05\x00"), False)]) \
        == "loading trusted intermediate certificates: x509: invalid policy mappings extension"
    lenient = _mapping(P1, P2).value + b"\x05\x00"   # what follows the first item is not read, as in Go
    assert _policy_chain([_policies(P1), (x509.UnrecognizedExtension(x509.oid.ExtensionOID.POLICY_MAPPINGS,
                                                                       lenient), False)]) is None
    assert _policy_chain([(x509.CertificatePolicies([x509.PolicyInformation(P1, None)] * 2), False)]) == (
        "loading trusted intermediate certificates: x509: invalid certificate policies")


INVALID_POLICIES = "x509: no valid chains built: 1 candidate chains with invalid policies"


@pytest.mark.parametrize(("extensions", "leaf_policies", "problem"), [
    ([_policies(P1)], (), None),
    ([_policies(P1), (_mapping(P1, P2), False)], (), None),
    ([_policies(P1), (_mapping(P1, ANY_POLICY), False)], (), INVALID_POLICIES),    # mapping anyPolicy: refused
    ([(_mapping(P1, ANY_POLICY), False)], (), None),    # ...unless a certificate above carries no policies (Go)
    ([_policies(P1), (x509.PolicyConstraints(0, None), True)], (), INVALID_POLICIES),   # explicit, none below
    ([_policies(P1), (x509.PolicyConstraints(0, None), True)], (P1,), None),
    ([_policies(P1), (x509.PolicyConstraints(0, None), True)], (P2,), INVALID_POLICIES),
    ([_policies(ANY_POLICY), (x509.PolicyConstraints(0, None), True)], (P2,), None),
    # anyPolicy inhibited below the intermediate: the leaf's own anyPolicy no longer counts, a named policy does
    ([_policies(ANY_POLICY), (x509.PolicyConstraints(0, None), True), (x509.InhibitAnyPolicy(0), True)],
     (ANY_POLICY,), INVALID_POLICIES),
    ([_policies(ANY_POLICY), (x509.PolicyConstraints(0, None), True), (x509.InhibitAnyPolicy(0), True)], (P2,),
     None),
])
def test_certificate_policies_hold_as_go_holds_them(extensions: list[tuple[x509.ExtensionType, bool]],
                                                    leaf_policies: tuple[x509.ObjectIdentifier, ...],
                                                    problem: str | None) -> None:
    assert _policy_chain(extensions, leaf_policies) == problem


def test_a_chain_search_stops_after_100_signature_checks_with_gos_words() -> None:
    ca = PkiCA.generate()
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = x509.load_pem_x509_certificate(ca.issue(key, emails=(SIGNER,)))
    now = datetime.datetime.now(datetime.UTC)
    impostors = [(x509.CertificateBuilder().subject_name(ca.intermediate.subject).issuer_name(ca.root.subject)
                  .public_key(ec.generate_private_key(ec.SECP256R1()).public_key()).serial_number(i + 10)
                  .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=1))
                  .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                  .sign(ca.root_key, hashes.SHA256())) for i in range(110)]   # the intermediate's name, other keys
    assert x509chain.chain_problem(leaf, impostors, [ca.root], now, "current time") == (
        "x509: signature check attempts limit reached while verifying certificate chain")
    assert x509chain.chain_problem(leaf, [*impostors[:5], ca.intermediate], [ca.root], now, "current time") is None


def test_a_critical_san_with_a_name_go_reads_is_handled() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    other = x509.OtherName(x509.ObjectIdentifier("1.3.6.1.4.1.99999.7"), b"\x0c\x01x")
    cert = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(x509.Name([]))
            .public_key(key.public_key()).serial_number(1).not_valid_before(datetime.datetime(2025, 1, 1))
            .not_valid_after(datetime.datetime(2030, 1, 1)))
    mixed = cert.add_extension(x509.SubjectAlternativeName([x509.RFC822Name("a@example.com"), other]), critical=True)
    only_other = cert.add_extension(x509.SubjectAlternativeName([other]), critical=True)
    assert x509chain._unhandled_critical(mixed.sign(key, hashes.SHA256())) is False
    assert x509chain._unhandled_critical(only_other.sign(key, hashes.SHA256())) is True


@pytest.mark.parametrize(("requirement", "why"), [
    ({"type": "signedBaseLayer", "baseLayerIdentity": {"type": "matchExact"}},
     "signedBaseLayer, which containers/image does not implement either (signedBaseLayer not implemented yet!)"),
    ({"type": "signedBy", "keyType": "X509Certificates", "keyPath": "/k"},
     'signedBy with keyType X509Certificates, which containers/image does not implement either (Unimplemented '
     '"keyType" value "X509Certificates")'),
])
def test_what_cosctl_cannot_check_is_refused_before_any_request(registry: Registry, home: Path,
                                                               requirement: dict[str, Any], why: str) -> None:
    policy = write_policy(home, {"default": [requirement]})
    asked = len(registry.requests)
    ref = f"docker://{registry.ref(REPO, 'v1')}"
    assert refused(ref) == (f"{ref}: the signature policy {policy} accepts it only with signatures cosctl cannot "
                            f"check (scope default: {why}): podman and skopeo refuse it as well; give the image's "
                            "scope a requirement containers/image implements")
    assert len(registry.requests) == asked


TAGGED = parse_reference("quay.io/op/demo:v1")
PINNED = parse_reference("quay.io/op/demo@sha256:" + "a" * 64)


@pytest.mark.parametrize(("identity", "intended", "claimed", "accepted"), [
    (SignedIdentity("matchRepoDigestOrExact"), TAGGED, "quay.io/op/demo:v1", True),
    (SignedIdentity("matchRepoDigestOrExact"), TAGGED, "quay.io/op/demo:v2", False),
    (SignedIdentity("matchRepoDigestOrExact"), PINNED, "quay.io/op/demo:v2", True),
    (SignedIdentity("matchRepoDigestOrExact"), PINNED, "quay.io/op/demo", False),
    (SignedIdentity("matchRepoDigestOrExact"), PINNED, "quay.io/op/other:v1", False),
    (SignedIdentity("matchExact"), TAGGED, "quay.io/op/demo:v1", True),
    (SignedIdentity("matchExact"), PINNED, "quay.io/op/demo:v1", False),
    (SignedIdentity("matchRepository"), TAGGED, "quay.io/op/demo", True),
    (SignedIdentity("matchRepository"), TAGGED, "quay.io/op/demo2:v1", False),
    (SignedIdentity("matchRepository"), parse_reference("busybox:1"), "docker.io/library/busybox:2", True),
    (SignedIdentity("exactReference", "registry.example/op/demo:v1"), TAGGED, "registry.example/op/demo:v1", True),
    (SignedIdentity("exactReference", "registry.example/op/demo:v1"), TAGGED, "quay.io/op/demo:v1", False),
    (SignedIdentity("exactRepository", "registry.example/op/demo"), TAGGED, "registry.example/op/demo:x", True),
    (SignedIdentity("remapIdentity", prefix="quay.io/op", signed_prefix="registry.redhat.io/op"), TAGGED,
     "registry.redhat.io/op/demo:v1", True),
    (SignedIdentity("remapIdentity", prefix="quay.io/op", signed_prefix="registry.redhat.io/op"), TAGGED,
     "quay.io/op/demo:v1", False),
    (SignedIdentity("remapIdentity", prefix="quay.io/o", signed_prefix="registry.redhat.io/o"), TAGGED,
     "quay.io/op/demo:v1", True),   # a prefix matches whole path components only: not remapped
    (SignedIdentity("matchRepoDigestOrExact"), TAGGED, "QUAY.io/op/Demo:v1", False),
])
def test_signed_identities_match_as_containers_image_matches_them(identity: SignedIdentity, intended: Any,
                                                                  claimed: str, accepted: bool) -> None:
    assert identity_matches(identity, intended, claimed) is accepted


def test_registries_d_directories_are_those_containers_image_reads_for_root_and_for_others(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert registries_d_dirs(0) == [Path("/usr/share/containers/registries.d"),
                                    Path("/usr/share/containers/registries.rootful.d"),
                                    Path("/etc/containers/registries.d"), Path("/etc/containers/registries.rootful.d"),
                                    tmp_path / "containers/registries.d"]
    assert registries_d_dirs(1000) == [Path("/usr/share/containers/registries.d"),
                                       Path("/usr/share/containers/registries.rootless.d"),
                                       Path("/usr/share/containers/registries.rootless.d/1000"),
                                       Path("/etc/containers/registries.d"),
                                       Path("/etc/containers/registries.rootless.d"),
                                       Path("/etc/containers/registries.rootless.d/1000"),
                                       tmp_path / "containers/registries.d"]


@pytest.mark.parametrize(("lookaside", "url"), [
    ("https://sigs.example/s/", "https://sigs.example/s//org/app"),   # Path + "/" + repository, as it is
    ("https://sigs.example/a%2Fb", "https://sigs.example/a/b/org/app"),   # unescaped, escaped again: a slash
    ("https://sigs.example/\u00fcn", "https://sigs.example/%C3%BCn/org/app"),
    ("file:///var/sig%20s", "file:///var/sig%20s/org/app"),
])
def test_a_lookaside_url_is_built_as_containers_image_builds_it(tmp_path: Path, lookaside: str, url: str) -> None:
    (tmp_path / "a.yaml").write_text(f'default-docker:\n  lookaside: "{lookaside}"\n')
    assert read_registries_d(tmp_path).storage(parse_reference("r.io/org/app:v1")).lookaside == url


def test_a_lookaside_url_go_cannot_parse_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text('default-docker:\n  lookaside: "https://sigs.example/%zz"\n')
    with pytest.raises(RegistriesDError) as refused:
        read_registries_d(tmp_path).storage(parse_reference("r.io/org/app:v1"))
    assert str(refused.value) == ('registries.d: Invalid signature storage URL https://sigs.example/%zz: parse '
                                  '"https://sigs.example/%zz": invalid URL escape "%zz"')


def test_registries_d_directories_are_merged_a_later_file_replacing_one_of_the_same_name(tmp_path: Path) -> None:
    low, high = tmp_path / "etc", tmp_path / "user"
    low.mkdir()
    high.mkdir()
    (low / "redhat.yaml").write_text("docker:\n  registry.redhat.io:\n    lookaside: https://rh.example/sigstore\n")
    (low / "default.yaml").write_text("default-docker:\n  lookaside: file:///var/lib/containers/sigstore\n")
    (high / "default.yaml").write_text("default-docker:\n  lookaside: https://mine.example/s?token=t\n")
    config = read_registries_d(low, high)
    assert config.storage(parse_reference("registry.redhat.io/ubi9/ubi:9")).lookaside == \
        "https://rh.example/sigstore/ubi9/ubi"
    mine = config.storage(parse_reference("quay.io/op/demo:v1"))
    assert mine.url("sha256:" + "c" * 64, 1) == f"https://mine.example/s/op/demo@sha256={'c' * 64}/signature-2?token=t"
    (high / "default.yaml").write_text("default-docker:\n  lookaside: https://a/\n  lookaside: https://b/\n")
    with pytest.raises(RegistriesDError) as caught:
        read_registries_d(low, high)
    assert str(caught.value) == (f"registries.d {high / 'default.yaml'}: line 3: default-docker: mapping key "
                                 '"lookaside" already defined at line 2')


@pytest.mark.parametrize(("text", "lookaside", "attachments"), [
    # a boolean as yaml.v3 reads one into a Go bool: YAML 1.1's words too, quoted or not
    ("default-docker:\n  lookaside: https://d/\n  use-sigstore-attachments: y\n", "https://d//org/app", True),
    ("default-docker:\n  lookaside: https://d/\n  use-sigstore-attachments: 'yes'\n", "https://d//org/app", True),
    ("default-docker:\n  lookaside: https://d/\n  use-sigstore-attachments: OFF\n", "https://d//org/app", False),
    ("default-docker:\n  lookaside: https://d/\n  use-sigstore-attachments: !!str on\n", "https://d//org/app", True),
    ("default-docker:\n  lookaside: https://d/\n  use-sigstore-attachments: ! true\n", "https://d//org/app", True),
    ("default-docker:\n  lookaside: https://d/\n  use-sigstore-attachments: ~\n", "https://d//org/app", False),
    # a string field takes any scalar as its text
    ("default-docker:\n  lookaside: 123\n", "123/org/app", False),
    ("default-docker:\n  lookaside: yes\n", "yes/org/app", False),
    # null namespaces are there but empty; unknown keys are never read, duplicates in them included
    ("docker:\n  r.io/org/app: ~\n  r.io:\n    lookaside: https://r/\n", "https://r//org/app", False),
    ("default-docker:\n  other: {a: 1, a: 2}\n  lookaside: https://d/\n", "https://d//org/app", False),
    # merge keys, aliases, and only the first document
    ("default-docker: &d\n  lookaside: https://d/\ndocker:\n  r.io:\n    <<: *d\n    use-sigstore-attachments: on\n",
     "https://d//org/app", True),
    ("docker:\n  r.io:\n    lookaside: https://r/\n---\nnot: [yaml\n", "https://r//org/app", False),
    ("base: &b\n  lookaside: https://m/\ndefault-docker:\n  !!merge <<: *b\n", "https://m//org/app", False),
    ("base: &b\n  lookaside: https://m/\ndefault-docker:\n  '<<': *b\n", "file:///var/lib/containers/sigstore/org/app",
     False),
    # a core tag that fits its text is the text (!!float takes an int, !!int one beyond int64); keys Go skips are
    # not looked at
    ("default-docker:\n  lookaside: !!int 0o+7\n", "0o+7/org/app", False),
    ("default-docker:\n  lookaside: !!float 12\n", "12/org/app", False),
    ("default-docker:\n  lookaside: !!int 18446744073709551615\n", "18446744073709551615/org/app", False),
    ("default-docker:\n  lookaside: !!timestamp 2001-12-14\n", "2001-12-14/org/app", False),
    ("default-docker:\n  lookaside: https://d/\n  other: !!int x\n", "https://d//org/app", False),
])
def test_registries_d_is_decoded_as_go_yaml_v3_decodes_it(tmp_path: Path, text: str, lookaside: str,
                                                          attachments: bool) -> None:
    """containers/image decodes registries.d with gopkg.in/yaml.v3 into its structs (judged on 20,000 random
    directories against v5.40's loadRegistryConfiguration: the same values and the same refusals)."""
    (tmp_path / "a.yaml").write_text(text)
    storage = read_registries_d(tmp_path).storage(parse_reference("r.io/org/app:v1"))
    assert (storage.lookaside, storage.attachments) == (lookaside, attachments)


@pytest.mark.parametrize(("text", "message"), [
    ("default-docker:\n  use-sigstore-attachments: 'true'\n",
     "line 2: default-docker: use-sigstore-attachments: cannot unmarshal !!str `true` into bool"),
    ("default-docker:\n  use-sigstore-attachments: ! 'true'\n",
     "line 2: default-docker: use-sigstore-attachments: cannot unmarshal !!str `true` into bool"),
    ("default-docker:\n  use-sigstore-attachments: !!null x\n",
     "line 2: default-docker: use-sigstore-attachments: cannot decode !!str `x` as a !!null"),
    ("default-docker:\n  use-sigstore-attachments: maybe\n",
     "line 2: default-docker: use-sigstore-attachments: cannot unmarshal !!str `maybe` into bool"),
    ("default-docker:\n  lookaside-staging: [a]\n",
     "line 2: default-docker: lookaside-staging: cannot unmarshal !!seq into string"),
    ("docker:\n  r.io: x\n", "line 2: docker 'r.io': cannot unmarshal !!str `x` into registryNamespace"),
    ("default-docker:\n  use-sigstore-attachments: 1\n",
     "line 2: default-docker: use-sigstore-attachments: cannot unmarshal !!int `1` into bool"),
    # a core tag that does not fit its text, wherever Go decodes it (keys included)
    ("default-docker:\n  lookaside: !!int x\n",
     "line 2: default-docker: lookaside: cannot decode !!str `x` as a !!int"),
    ("default-docker:\n  lookaside: !!int ~\n",
     "line 2: default-docker: lookaside: cannot decode !!null `~` as a !!int"),
    ("default-docker:\n  lookaside: !!float 18446744073709551615\n",
     "line 2: default-docker: lookaside: cannot decode !!int `18446744073709551615` as a !!float"),
    ("default-docker:\n  lookaside: !!timestamp 2001-02-30\n",
     "line 2: default-docker: lookaside: cannot decode !!str `2001-02-30` as a !!timestamp"),
    ("default-docker:\n  use-sigstore-attachments: !!bool yes\n",
     "line 2: default-docker: use-sigstore-attachments: cannot decode !!str `yes` as a !!bool"),
    ("docker:\n  !!float r.io: {}\n", "line 2: docker: cannot decode !!str `r.io` as a !!float"),
    ("docker:\n  '1': {}\n  1: {}\n", 'line 3: docker: mapping key "1" already defined at line 2'),
    ("- a\n", "line 1: the file: cannot unmarshal !!seq into registryConfiguration"),
    ("%YAML 1.2\n---\ndocker: {}\n", "not YAML: found incompatible YAML document (yaml.v3 reads %YAML 1.1 only)"),
    ("docker:\n  r.io: &x\n    <<: *x\n", "an alias refers to a mapping that holds it"),   # Go: "... contains itself"
])
def test_registries_d_go_yaml_v3_refuses_is_refused(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "a.yaml").write_text(text)
    with pytest.raises(RegistriesDError) as refused:
        read_registries_d(tmp_path)
    assert str(refused.value) == f"registries.d {tmp_path / 'a.yaml'}: {message}"



def test_a_detached_signature_verifies_nothing_and_cosctls_input_is_not_read(signed: Signed, gpg: GPG,
                                                                            trusted: GPGKey) -> None:
    content = payload(signed.digest, signed.identity)
    detached = gpg.run("--local-user", trusted.fingerprint, "--detach-sign", data=content)
    signed.publish(detached)
    read, write = os.pipe()   # an input that never ends: gpg must not wait on it
    saved = os.dup(0)
    os.dup2(read, 0)
    try:
        reason = refused(signed.ref)
    finally:
        os.dup2(saved, 0)
        for fd in (read, write, saved):
            os.close(fd)
    assert reason.startswith(signed.refusal("Invalid GPG signature: "))


def test_trailing_packets_after_a_signed_message_are_refused_as_gpgme_refuses_them(signed: Signed, gpg: GPG,
                                                                                   trusted: GPGKey) -> None:
    good = gpg.run("--local-user", trusted.fingerprint, "--sign", "--compress-algo", "none",
                   data=payload(signed.digest, signed.identity))
    second_literal = bytes([0xC8, 12, 0x00, 0xCB, 10]) + b"b\x00\x00\x00\x00\x00" + b"MORE"
    for trailing in (second_literal, b"\x00garbage"):
        signed.publish(good + trailing)
        assert refused(signed.ref).startswith(signed.refusal(
            "Invalid GPG signature: a signed message with more in it than one signature over one content ("))
    signed.publish(good)
    assert load_bundle(signed.ref).package_name == "demo"


def test_registries_d_refuses_what_containers_image_refuses(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("default-docker:\n  lookaside: https://a.example/sigstore\n")
    (tmp_path / "b.yaml").write_text("default-docker:\n  lookaside: https://b.example/sigstore\n")
    with pytest.raises(RegistriesDError) as caught:
        read_registries_d(tmp_path)
    assert str(caught.value) == (f'registries.d: "default-docker" is defined both in {tmp_path / "a.yaml"} and '
                                 f'{tmp_path / "b.yaml"} (as podman and skopeo refuse it)')
    (tmp_path / "b.yaml").write_text("docker:\n  quay.io/op:\n    sigstore: https://q.example/s\n"
                                     "    use-sigstore-attachments: true\n  quay.io:\n    lookaside: https://x/\n")
    config = read_registries_d(tmp_path)
    storage = config.storage(parse_reference("quay.io/op/demo:v1"))
    assert (storage.lookaside, storage.attachments) == ("https://q.example/s/op/demo", True)
    assert storage.url("sha256:" + "b" * 64, 0) == f"https://q.example/s/op/demo@sha256={'b' * 64}/signature-1"
    other = config.storage(parse_reference("quay.io/team/demo:v1"))
    assert (other.lookaside, other.attachments) == ("https://x//team/demo", False)
    assert config.storage(parse_reference("docker.io/x/y")).lookaside == "https://a.example/sigstore/x/y"
    # a namespace set to null is in Go's map all the same: defined in two files
    (tmp_path / "c.yaml").write_text("docker:\n  quay.io: ~\n")
    with pytest.raises(RegistriesDError) as caught:
        read_registries_d(tmp_path)
    assert str(caught.value) == (f"registries.d: the \"docker\" namespace 'quay.io' is defined both in "
                                 f"{tmp_path / 'b.yaml'} and {tmp_path / 'c.yaml'} (as podman and skopeo refuse it)")
