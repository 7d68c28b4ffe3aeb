"""Verifying an image's signatures as its signature policy asks (:mod:`.policy`), as containers/image verifies them
for podman, skopeo and operator-controller: simple signatures (``signedBy``, GPG keys) and sigstore signatures
(``sigstoreSigned``, public keys).

Why: an admin whose policy accepts an image only signed (RHEL's default for registry.redhat.io) gets it pulled by
cosctl when, and only when, podman would pull it. The rules are containers/image's (``signature/``):

- Every requirement of the scope must accept the image; a requirement accepts it when one signature at least is
  accepted. No signature: ``A signature was required, but no signature exists``; several refused: ``None of the
  signatures were accepted, reasons: ...``, each in containers/image's words where it has some.
- A signature is accepted when it verifies with one of the requirement's keys, its payload parses strictly
  (exactly the fields of the format, no key twice), it names the manifest's digest (``Signature for digest ... does
  not match``) and an identity ``signedIdentity`` accepts (``Signature for identity "..." is not accepted``).
- ``signedBy`` (keyType ``GPGKeys``): the keys are imported into a keyring of their own that lives for the check
  (as containers/image's ephemeral GPGME keyring), and the signature (an OpenPGP signed message) is verified by
  ``gpg`` (GnuPG, what GPGME drives): one good signature, not expired, by a key not expired or revoked, whose
  fingerprint (or its primary key's) is among the keys imported.
- ``sigstoreSigned`` by public keys (PEM, ECDSA, RSA or Ed25519, SHA-256): the attachment's
  ``dev.cosignproject.cosign/signature`` over its payload, by ``cryptography``; with Rekor keys, only a key a
  Rekor SET names; keyless (``fulcio``), the key of a signing certificate Fulcio issued; with ``pki``, the key of
  a certificate the admin's own CA issued, valid now, naming the subject asked (:mod:`.sigstore`).

The identity a signature must claim (``signedIdentity``) is matched against the reference as asked (by tag or by
digest), never a mirror's: a mirror serves the same signed content. The image verified is the one pulled: for a
multi-platform image, the platform's image under its own digest (containers/image checks the instance it copies;
signing only the index is not enough for podman either).

The rules are those of the containers/image operator-controller builds with (go.podman.io/image/v5, 2025): a
signature by a signing subkey counts for its primary key (released containers/image up to 5.36 refuses it), and
``sigstoreSigned`` takes ``keyPaths`` and ``keyDatas`` (since 5.33). With an older podman, podman may refuse what
cosctl accepts there (judged against skopeo 1.9.3 and 1.10.0: every other decision the same).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

from .gotext import go_decoded_string, go_quote
from .imageref import ImageReference, parse_named
from .policy import (
    EXACT_REFERENCE,
    EXACT_REPOSITORY,
    MATCH_EXACT,
    MATCH_REPO_DIGEST_OR_EXACT,
    MATCH_REPOSITORY,
    REMAP_IDENTITY,
    SIGNED_BY,
    Pki,
    Requirement,
    SignatureCheck,
    SignedIdentity,
)
from .sigstore import (
    CERTIFICATE_ANNOTATION,
    CHAIN_ANNOTATION,
    SET_ANNOTATION,
    exact_fields,
    strict_json,
    verify_certificate,
    verify_pki,
    verify_set,
)
from .x509chain import Untrusted, key_problem, load_intermediates, load_roots

SIMPLE_SIGNING_TYPE: Final = "atomic container signature"
SIGSTORE_TYPE: Final = "cosign container image signature"
SIGSTORE_MIME: Final = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGSTORE_SIGNATURE_ANNOTATION: Final = "dev.cosignproject.cosign/signature"
MAX_SIGNATURE_BYTES: Final = 4 << 20   # containers/image's iolimits.MaxSignatureBodySize
GPG_TIMEOUT: Final = 60.0

# The first byte of an OpenPGP message a simple signature may start with (a compressed data, one-pass signature or
# signature packet, old or new format), as containers/image's signature.FromBlob tells them from other formats.
_OPENPGP_FIRST: Final = frozenset({0xA0, 0xA1, 0xA2, 0xA3, 0xC8, 0x90, 0x91, 0x92, 0x3D, 0xC4, 0x88, 0x89, 0x8A,
                                   0x8B, 0xC2})


class SignatureFormatError(Exception):
    """A lookaside blob that is no signature format containers/image knows (the pull names where it was read)."""


@dataclass(frozen=True, slots=True)
class SimpleSignature:
    """A simple signature (an OpenPGP signed message of an ``atomic container signature``)."""

    blob: bytes


@dataclass(frozen=True, slots=True)
class SigstoreSignature:
    """A sigstore signature: an attachment's media type, its payload and annotations (their text as Go's JSON
    decoder leaves it: a lone surrogate escape is U+FFFD, so it can neither pass for anything nor fail to encode)."""

    mime: str
    payload: bytes
    annotations: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "annotations", {go_decoded_string(k): go_decoded_string(v)
                                                 for k, v in self.annotations.items()})


Signature = SimpleSignature | SigstoreSignature


def from_blob(blob: bytes) -> Signature:
    """A signature read from lookaside storage, as containers/image's ``signature.FromBlob`` reads it: a bare
    OpenPGP message, or a zero byte, a format name and a newline before its content."""
    if not blob:
        raise SignatureFormatError("empty signature blob")
    if blob[0] in _OPENPGP_FIRST:
        return SimpleSignature(blob)
    if blob[0] != 0:
        raise SignatureFormatError(f"unrecognized signature format, starting with binary {blob[0]:#x}")
    name, newline, chunk = blob[1:].partition(b"\n")
    if not newline:
        raise SignatureFormatError("invalid signature format, missing newline")
    if any(b < 32 or b >= 0x7F for b in name):
        raise SignatureFormatError("invalid signature format, non-ASCII byte")
    if name == b"simple-signing":
        return SimpleSignature(chunk)
    if name == b"sigstore-json":
        # absent fields are Go's zero values, as containers/image reads them
        try:
            document = json.loads(chunk)
            if not isinstance(document, dict):
                raise ValueError("not a JSON object")
            mime, payload, annotations = (document.get("mimeType") or "", document.get("payload") or "",
                                          document.get("annotations") or {})
            if not isinstance(mime, str) or not isinstance(payload, str) or not isinstance(annotations, dict):
                raise ValueError("mimeType, payload or annotations of the wrong type")
            decoded = base64.b64decode(payload, validate=True)
        except (ValueError, RecursionError, binascii.Error) as exc:
            raise SignatureFormatError(f"invalid sigstore-json signature: {exc}") from None
        return SigstoreSignature(mime, decoded, {str(k): str(v) for k, v in annotations.items()})
    raise SignatureFormatError(f"unrecognized signature format {name.decode('ascii')!r}")


class Rejected(Exception):
    """Why a signature or an image is not accepted (containers/image's PolicyRequirementError or
    InvalidSignatureError text)."""


def verify(check: SignatureCheck, intended: ImageReference, manifest: bytes, signatures: Sequence[Signature],
           looked: str = "") -> None:
    """Accept ``manifest`` (as pulled for ``intended``) when every requirement of ``check`` accepts one of
    ``signatures``; else raise the policy's :class:`~.policy.PolicyError` with the first refusal's reasons.
    ``looked`` says where the signatures were looked for, after a refusal for want of any (a missing registries.d
    is then told from an unsigned image)."""
    none = f"{NO_SIGNATURE} ({looked})" if looked else NO_SIGNATURE
    for requirement in check.requirements:
        try:
            if requirement.type == SIGNED_BY:
                _signed_by(requirement, intended, manifest, signatures, none)
            else:
                _sigstore_signed(requirement, intended, manifest, signatures, none)
        except Rejected as exc:
            raise check.refusal(intended, str(exc)) from None


def _summary(rejections: list[str], none: str) -> Rejected:
    if not rejections:
        return Rejected(none)
    if len(rejections) == 1:
        return Rejected(rejections[0])
    return Rejected("None of the signatures were accepted, reasons: " + "; ".join(rejections))


NO_SIGNATURE: Final = "A signature was required, but no signature exists"


def _signed_by(requirement: Requirement, intended: ImageReference, manifest: bytes,
               signatures: Sequence[Signature], none: str) -> None:
    simple = [s for s in signatures if isinstance(s, SimpleSignature)]
    if not simple:
        raise Rejected(none)
    try:
        keys = _key_blobs(requirement)
    except Rejected as exc:   # containers/image reads the keys for each signature: the same reason for each
        raise _summary([str(exc)] * len(simple), none) from None
    rejections: list[str] = []
    with GPGKeyring(keys) as keyring:
        for signature in simple:
            try:
                payload = keyring.verify(signature.blob)
                _accept_payload(payload, SIMPLE_SIGNING_TYPE, requirement.identity, intended, manifest,
                                optional_null=False)
                return
            except Rejected as exc:
                rejections.append(str(exc))
    raise _summary(rejections, none)


def _sigstore_signed(requirement: Requirement, intended: ImageReference, manifest: bytes,
                     signatures: Sequence[Signature], none: str) -> None:
    other = sum(1 for s in signatures if not isinstance(s, SigstoreSignature))
    attachments = [s for s in signatures if isinstance(s, SigstoreSignature)]
    signed = [s for s in attachments if s.mime == SIGSTORE_MIME]
    rejections: list[str] = []
    for signature in signed:
        try:
            encoded = signature.annotations.get(SIGSTORE_SIGNATURE_ANNOTATION)
            if encoded is None:
                raise Rejected(f"missing {SIGSTORE_SIGNATURE_ANNOTATION} annotation")
            keys = _signing_keys(requirement, signature, encoded)
            try:
                raw = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError) as exc:   # ValueError: not ASCII
                raise Rejected(f"base64 decoding: {exc}") from None
            _check_sigstore(keys, signature.payload, raw)
            _accept_payload(signature.payload, SIGSTORE_TYPE, requirement.identity, intended, manifest,
                            optional_null=True)
            return
        except Rejected as exc:
            rejections.append(str(exc))
    if not rejections and (other or len(attachments) - len(signed)):
        raise Rejected(f"{NO_SIGNATURE} ({other} non-sigstore signatures, {len(attachments) - len(signed)} sigstore "
                       "non-signature attachments)" + none.removeprefix(NO_SIGNATURE))
    raise _summary(rejections, none)


# -- keys --

def _read(paths: Sequence[str], datas: Sequence[bytes]) -> list[bytes]:
    """Key material: the files named read, or the inline data."""
    if datas:
        return list(datas)
    blobs = []
    for path in paths:
        try:
            blobs.append(Path(path).read_bytes())
        except OSError as exc:
            raise Rejected(f"open {path}: {(exc.strerror or str(exc)).lower()}") from None
    return blobs


def _key_blobs(requirement: Requirement) -> list[bytes]:
    """The key material a requirement names: its files read, or its inline data."""
    return _read(requirement.key_paths, requirement.key_datas)


def _rekor_keys(requirement: Requirement) -> list[ec.EllipticCurvePublicKey]:
    keys = []
    for index, blob in enumerate(_read(requirement.rekor_paths, requirement.rekor_datas), 1):
        try:
            key = serialization.load_pem_public_key(blob)
        except (ValueError, UnsupportedAlgorithm):
            raise Rejected(f"parsing Rekor public key {index}: PEM decoding failed") from None
        if not isinstance(key, ec.EllipticCurvePublicKey):
            raise Rejected(f"Rekor public key {index} is not using ECDSA")
        keys.append(key)
    return keys


def _signing_keys(requirement: Requirement, signature: SigstoreSignature, encoded: str) -> list[PublicKey]:
    """The public keys a sigstore signature may be verified with under ``requirement`` (containers/image's
    prepareTrustRoot, then isSignatureAccepted up to VerifySigstorePayload): the policy's keys, those a Rekor SET
    vouches for, a Fulcio certificate's, or that of a certificate of the policy's PKI."""
    if requirement.pki is not None:
        return [_pki_key(requirement.pki, signature)]
    rekor = _rekor_keys(requirement) if requirement.rekor_paths or requirement.rekor_datas else []
    fulcio = requirement.fulcio
    roots: list[x509.Certificate] = []
    if fulcio is not None:
        roots = load_roots(_source(fulcio.ca_path, fulcio.ca_data))   # an empty caData: no CA, refused below
        if not roots:
            raise Rejected("error loading Fulcio CA certificates")
    keys = _public_keys(requirement) if fulcio is None else []
    if fulcio is None and not rekor:
        return keys
    found_set = signature.annotations.get(SET_ANNOTATION)
    if found_set is None:
        raise Rejected(f"missing {SET_ANNOTATION} annotation")
    try:
        if fulcio is not None:
            certificate = signature.annotations.get(CERTIFICATE_ANNOTATION)
            if certificate is None:
                raise Rejected(f"missing {CERTIFICATE_ANNOTATION} annotation")
            when = verify_set(rekor, found_set.encode(), certificate.encode(), encoded, signature.payload)
            return [_certificate_key(verify_certificate(
                roots, fulcio.oidc_issuer, fulcio.subject_email, when, certificate.encode(),
                signature.annotations.get(CHAIN_ANNOTATION, "").encode()))]
        failures = []
        for key in keys:
            pem = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            try:
                verify_set(rekor, found_set.encode(), pem, encoded, signature.payload)
                return [key]   # a SET names one key: the others either differ or repeat it
            except Untrusted as exc:
                failures.append(str(exc))
        raise Rejected(f"No public key verified against the RekorSET: {', '.join(failures)}")
    except Untrusted as exc:
        raise Rejected(str(exc)) from None


PublicKey = ec.EllipticCurvePublicKey | rsa.RSAPublicKey | ed25519.Ed25519PublicKey


def _source(path: str, data: bytes | None) -> bytes:
    """The bytes a policy names by path, or gives inline (containers/image's loadBytesFromConfigSources)."""
    return _read([path], [])[0] if path else data or b""


def _certificate_key(key: object) -> PublicKey:
    """A verified certificate's public key, of a kind a sigstore signature can be checked with."""
    if not isinstance(key, ec.EllipticCurvePublicKey | rsa.RSAPublicKey | ed25519.Ed25519PublicKey):
        raise Rejected("veryfing leaf certificate failed: x509: unknown public key algorithm")
    return key


def _pki_key(pki: Pki, signature: SigstoreSignature) -> PublicKey:
    """The public key of a signature's certificate when it chains, now, to the policy's PKI roots and names the
    subject the policy asks (containers/image's prSigstoreSignedPKI.prepareTrustRoot, then verifyPKI)."""
    roots = load_roots(_source(pki.roots_path, pki.roots_data))
    if not roots:
        raise Rejected("error loading PKI CA Roots certificates")
    try:
        intermediates: list[x509.Certificate] = []
        if pki.intermediates_path or pki.intermediates_data is not None:
            intermediates = load_intermediates(_source(pki.intermediates_path, pki.intermediates_data))
        certificate = signature.annotations.get(CERTIFICATE_ANNOTATION)
        if certificate is None:
            raise Rejected(f"missing {CERTIFICATE_ANNOTATION} annotation")
        key = verify_pki(roots, intermediates, pki.subject_email, pki.subject_hostname,
                         datetime.datetime.now(datetime.UTC), certificate.encode(),
                         signature.annotations.get(CHAIN_ANNOTATION, "").encode())
    except Untrusted as exc:
        raise Rejected(str(exc)) from None
    return _certificate_key(key)


def _public_keys(requirement: Requirement) -> list[PublicKey]:
    keys: list[PublicKey] = []
    for index, blob in enumerate(_key_blobs(requirement), 1):
        try:
            key = serialization.load_pem_public_key(blob)
        except (ValueError, UnsupportedAlgorithm) as exc:
            problem = "PEM decoding failed" if b"-----BEGIN" not in blob else str(exc).splitlines()[0]
            raise Rejected(f"parsing public key {index}: {problem}") from None
        if unusable := key_problem(key):   # the same rule as for a certificate's key
            raise Rejected(f"parsing public key {index}: x509: {unusable}")
        assert isinstance(key, ec.EllipticCurvePublicKey | rsa.RSAPublicKey | ed25519.Ed25519PublicKey)
        keys.append(key)
    return keys


def _check_sigstore(keys: list[PublicKey], payload: bytes, raw: bytes) -> None:
    """The payload's signature verified with one of ``keys`` (SHA-256, as containers/image hard-codes it)."""
    failures = []
    for key in keys:
        try:
            if isinstance(key, ec.EllipticCurvePublicKey):
                key.verify(raw, payload, ec.ECDSA(hashes.SHA256()))
            elif isinstance(key, rsa.RSAPublicKey):
                key.verify(raw, payload, padding.PKCS1v15(), hashes.SHA256())
            else:
                key.verify(raw, payload)
            return
        except InvalidSignature:
            failures.append("invalid signature when validating ASN.1 encoded signature"
                            if isinstance(key, ec.EllipticCurvePublicKey) else
                            "crypto/rsa: verification error" if isinstance(key, rsa.RSAPublicKey) else
                            "failed to verify signature")
    raise Rejected("cryptographic signature verification failed: " + ", ".join(failures))


# -- payloads --

def _accept_payload(payload: bytes, kind: str, identity: SignedIdentity, intended: ImageReference,
                    manifest: bytes, *, optional_null: bool) -> None:
    """The verified payload read as strictly as containers/image reads it, then its digest and identity held to
    the image's (the digest first, as there)."""
    try:
        critical, optional = exact_fields(strict_json(payload), ("critical", "optional"))
        if not (optional_null and optional is None):
            if not isinstance(optional, dict):
                raise Rejected("JSON object expected")
            timestamp = optional.get("timestamp")
            if "creator" in optional and not isinstance(optional["creator"], str):
                raise Rejected("Field optional.creator is not a string")
            if "timestamp" in optional and (not isinstance(timestamp, int | float) or isinstance(timestamp, bool)
                                            or not _integral(timestamp)):
                raise Rejected("Field optional.timestamp is not an integer")
        kind_found, image, claimed_identity = exact_fields(critical, ("type", "image", "identity"))
        if kind_found != kind:
            raise Rejected(f"Unrecognized signature type {kind_found}")
        (digest,) = exact_fields(image, ("docker-manifest-digest",))
        (reference,) = exact_fields(claimed_identity, ("docker-reference",))
        if not isinstance(digest, str) or not isinstance(reference, str):
            raise Rejected("JSON string expected")
    except Untrusted as exc:
        raise Rejected(str(exc)) from None
    if problem := _go_digest_problem(digest):
        raise Rejected(f"invalid docker-manifest-digest value {go_quote(digest)}: {problem}")
    algorithm, _, hexdigest = digest.partition(":")
    if hashlib.new(algorithm, manifest).hexdigest() != hexdigest:
        raise Rejected(f"Signature for digest {digest} does not match")
    if not identity_matches(identity, intended, reference):
        raise Rejected(f"Signature for identity {go_quote(reference)} is not accepted")


_GO_DIGEST: Final = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+")   # go-digest's DigestRegexp
_GO_DIGEST_LENGTHS: Final = {"sha256": 64, "sha384": 96, "sha512": 128}   # the algorithms containers/image links


def _go_digest_problem(digest: str) -> str:
    """Why go-digest's ``Parse`` refuses ``digest``, in its words, or ""."""
    index = digest.find(":")
    if index <= 0 or index + 1 == len(digest):
        return "invalid checksum digest format"
    algorithm, encoded = digest[:index], digest[index + 1:]
    if algorithm not in _GO_DIGEST_LENGTHS:
        return "unsupported digest algorithm" if _GO_DIGEST.fullmatch(digest) else "invalid checksum digest format"
    if len(encoded) != _GO_DIGEST_LENGTHS[algorithm]:
        return "invalid checksum digest length"
    return "" if re.fullmatch(r"[a-f0-9]+", encoded) else "invalid checksum digest format"


def _integral(value: float) -> bool:
    """Whether a JSON number is an integer Go's int64(float64) conversion keeps as it is."""
    try:
        return float(int(value)) == float(value) and -(2 ** 63) <= int(value) < 2 ** 63
    except (OverflowError, ValueError):
        return False


# -- identities --

def identity_matches(identity: SignedIdentity, intended: ImageReference, claimed: str) -> bool:
    """Whether a signature claiming ``claimed`` is accepted for the image asked for as ``intended`` (containers/
    image's PolicyReferenceMatch implementations)."""
    signed = parse_named(claimed)
    if signed is None:
        return False
    if identity.type == MATCH_EXACT:
        return _has_tag_or_digest(signed) and str(signed) == str(intended)
    if identity.type == MATCH_REPO_DIGEST_OR_EXACT:
        return _repo_digest_or_exact(intended, signed)
    if identity.type == MATCH_REPOSITORY:
        return signed.name == intended.name
    if identity.type == EXACT_REFERENCE:
        wanted = parse_named(identity.reference)
        return (wanted is not None and _has_tag_or_digest(wanted) and _has_tag_or_digest(signed)
                and str(signed) == str(wanted))
    if identity.type == EXACT_REPOSITORY:
        wanted = parse_named(identity.reference)
        return wanted is not None and signed.name == wanted.name
    if identity.type == REMAP_IDENTITY:
        remapped = _remapped(intended, identity.prefix, identity.signed_prefix)
        return remapped is not None and _repo_digest_or_exact(remapped, signed)
    return False


def _has_tag_or_digest(reference: ImageReference) -> bool:
    return reference.tag is not None or reference.digest is not None


def _repo_digest_or_exact(intended: ImageReference, signed: ImageReference) -> bool:
    if not _has_tag_or_digest(signed):
        return False
    if intended.tag is not None:
        return str(signed) == str(intended)
    if intended.digest is not None:
        return signed.name == intended.name
    return False


def _remapped(intended: ImageReference, prefix: str, signed_prefix: str) -> ImageReference | None:
    name = intended.name
    if not (name == prefix or (name.startswith(prefix) and name[len(prefix):].startswith("/"))):
        return intended
    text = str(intended).replace(prefix, signed_prefix, 1)
    remapped = parse_named(text)
    # ParseNamed takes only a name already normalised
    return remapped if remapped is not None and str(remapped) == text else None


# -- GPG --

class GPGKeyring:
    """A GnuPG keyring of its own (a temporary home directory) holding the keys a ``signedBy`` trusts, for as long
    as the ``with`` block runs: containers/image's ephemeral GPGME signing mechanism, driving ``gpg`` directly."""

    def __init__(self, keys: Sequence[bytes], gpg: str | None = None) -> None:
        self.keys = keys
        self.gpg = gpg or shutil.which("gpg") or ""
        self.home: Path | None = None
        self.fingerprints: set[str] = set()

    def __enter__(self) -> GPGKeyring:
        if not self.gpg:
            raise Rejected("cannot verify GPG signatures: gpg (GnuPG) is not on PATH (install gnupg, which podman's "
                           "GPGME needs too)")
        self.home = Path(tempfile.mkdtemp(prefix="cosctl-gpg-"))
        try:
            for index, blob in enumerate(self.keys):
                key_file = self.home / f"key-{index}"
                key_file.write_bytes(blob)
                status, _, _ = self._run(["--import", str(key_file)])
                for line in status:
                    if line[:1] == ["IMPORT_OK"] and len(line) >= 3:
                        self.fingerprints.add(line[2].upper())
            if not self.fingerprints:
                raise Rejected("No public keys imported")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.home is not None:
            gpgconf = shutil.which("gpgconf")
            if gpgconf:   # an agent gpg may have started for the home directory (none is needed to verify)
                subprocess.run([gpgconf, "--homedir", str(self.home), "--kill", "all"], capture_output=True,
                               timeout=GPG_TIMEOUT, check=False)
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def _run(self, args: list[str]) -> tuple[list[list[str]], str, int]:
        """gpg run on the keyring: its status lines (split), its stderr and its exit code."""
        assert self.home is not None
        command = [self.gpg, "--homedir", str(self.home), "--batch", "--no-tty", "--no-auto-key-retrieve",
                   "--status-fd", "1", *args]
        try:
            # stdin: nothing (GPGME's /dev/null): a detached signature must not verify cosctl's own input
            done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=GPG_TIMEOUT,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Rejected(f"cannot run gpg: {exc}") from None
        # status lines end with "\n" alone (what gpg writes; str.splitlines would break on more)
        status = [line.split(" ")[1:] for line in done.stdout.decode("utf-8", "replace").split("\n")
                  if line.startswith("[GNUPG:] ")]
        return status, done.stderr.decode("utf-8", "replace"), done.returncode

    def verify(self, blob: bytes) -> bytes:
        """The content ``blob`` signs, when gpg finds one good signature by one of the keys; else :class:`Rejected`
        naming what gpg found."""
        assert self.home is not None
        if len(blob) > MAX_SIGNATURE_BYTES:
            raise Rejected(f"a signature of more than {MAX_SIGNATURE_BYTES} bytes")
        with tempfile.TemporaryDirectory(dir=self.home) as scratch:
            signed, content = Path(scratch) / "signature", Path(scratch) / "content"
            signed.write_bytes(blob)
            # --max-output: a compressed message cannot unpack into more than a signature's payload may be
            # (--verify --output, as GPGME verifies an opaque signature)
            status, stderr, returncode = self._run(["--max-output", str(MAX_SIGNATURE_BYTES), "--output",
                                                    str(content), "--verify", str(signed)])
            return _gpg_verdict(status, stderr, self.fingerprints, content, returncode)


_GPG_BAD: Final = {
    "BADSIG": "a BAD signature by key {}",
    "EXPSIG": "an expired signature by key {}",
    "EXPKEYSIG": "a signature by key {}, which has expired",
    "REVKEYSIG": "a signature by key {}, which is revoked",
}


# Status lines after which GPGME fails the verification whatever else gpg said (a packet out of place, data
# that is no OpenPGP message, trailing packets).
_GPG_FAILED: Final = ("ERROR", "FAILURE", "NODATA", "UNEXPECTED", "BADMDC")


def _gpg_verdict(status: list[list[str]], stderr: str, trusted: set[str], content: Path, returncode: int) -> bytes:
    """containers/image's gpgme Verify over gpg's status lines: exactly one signature over one plaintext, good,
    valid, by a trusted key (its fingerprint or its primary key's), and nothing gpg calls an error."""
    count = sum(1 for line in status if line[:1] == ["NEWSIG"])
    if count > 1:
        raise Rejected(f"Unexpected GPG signature count {count}")
    plaintexts = sum(1 for line in status if line[:1] == ["PLAINTEXT"])
    if plaintexts > 1:
        raise Rejected(f"Invalid GPG signature: {plaintexts} signed contents in one message")
    for line in status:
        if line and line[0] in _GPG_BAD:
            raise Rejected("Invalid GPG signature: " + _GPG_BAD[line[0]].format(line[1] if len(line) > 1 else "?"))
        if line[:1] == ["ERRSIG"]:
            key = line[7] if len(line) > 7 and line[7] != "-" else line[1] if len(line) > 1 else "?"
            missing = len(line) > 6 and line[6] == "9"
            raise Rejected(f"Invalid GPG signature: made by key {key}, which is not one of the policy's keys"
                           if missing else f"Invalid GPG signature: cannot check the signature by key {key}")
        if line[:1] == ["TRUST_NEVER"]:
            raise Rejected("Invalid GPG signature: by a key marked never to be trusted")
    good = any(line[:1] == ["GOODSIG"] for line in status)
    valid = next((line for line in status if line[:1] == ["VALIDSIG"]), None)
    failed = next((line for line in status if line[:1] and line[0] in _GPG_FAILED), None)
    if good and valid is not None and (failed is not None or returncode != 0):
        what = " ".join(failed) if failed else f"gpg exited with {returncode}"
        raise Rejected(f"Invalid GPG signature: a signed message with more in it than one signature over one "
                       f"content ({what})")
    if not good or valid is None:
        detail = next((s.removeprefix("gpg: ") for s in stderr.splitlines() if s.startswith("gpg: ")), "")
        raise Rejected("Invalid GPG signature: not a signed OpenPGP message" + (f" ({detail})" if detail else ""))
    fingerprint = valid[1].upper()
    primary = valid[10].upper() if len(valid) > 10 else fingerprint
    if fingerprint not in trusted and primary not in trusted:
        raise Rejected(f"signature by key {fingerprint} of {primary} is not accepted")
    try:
        return content.read_bytes()
    except OSError:
        raise Rejected("Invalid GPG signature: a signature with no signed content in it (a detached signature?)") \
            from None

