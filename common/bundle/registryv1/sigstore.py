"""Sigstore's trust beyond a public key, as containers/image checks it for a ``sigstoreSigned`` requirement: a
Rekor signed entry timestamp (SET) over the signature, a Fulcio signing certificate (keyless signing), and a
signing certificate of the admin's own CA (``pki``).

Why: images signed keyless (``cosign sign`` with an OIDC identity) carry a short-lived certificate from Fulcio and
Rekor's promise that the signature was logged while the certificate was valid; a policy trusting them names the
Fulcio CA, the OIDC issuer and the e-mail of the signer, and Rekor's public key. The rules are containers/image's
(``signature/internal/rekor_set.go``, ``signature/fulcio_cert.go``):

- The SET (annotation ``dev.sigstore.cosign/bundle``): its ``Payload``, in canonical JSON (RFC 8785), signed
  (ECDSA, SHA-256) by one of the Rekor keys; the payload's ``body`` a ``hashedrekord`` 0.0.1 entry naming exactly
  the signature, the key or certificate (the same PEM content) and the SHA-256 of the signed payload. Its
  ``integratedTime`` is when the signature was made.
- The certificate (annotation ``dev.sigstore.cosign/certificate``, intermediates in ``dev.sigstore.cosign/chain``
  but its last, the root): chains to one of the policy's Fulcio CA certificates, valid at the SET's time, usable
  for code signing; its OIDC issuer extension (v1 or v2; both must agree) is the policy's ``oidcIssuer`` and its
  e-mail addresses include ``subjectEmail``. Its public key then verifies the payload, as a key from the policy
  would.
- With ``pki`` instead (``signature/pki_cert.go``): the same certificate annotations, chained to the policy's own
  CA roots (through its trusted intermediates too) valid now, usable for code signing, naming the policy's
  ``subjectEmail`` and ``subjectHostname`` (Go's VerifyHostname) where given; no Rekor.

Messages are containers/image's where it has words for the case. Pure functions over bytes (:mod:`.signatures`
calls them); ``cryptography`` does the cryptography.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from .gotext import go_decoded_string, go_quote, go_quote_list, go_v_float
from .x509chain import Untrusted, chain_intermediates, chain_problem, parse_leaf, pem_decode
from .x509names import email_addresses, hostname_problem

SET_ANNOTATION: Final = "dev.sigstore.cosign/bundle"
CERTIFICATE_ANNOTATION: Final = "dev.sigstore.cosign/certificate"
CHAIN_ANNOTATION: Final = "dev.sigstore.cosign/chain"
HASHEDREKORD_VERSION: Final = "0.0.1"
OID_ISSUER_V1: Final = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
OID_ISSUER_V2: Final = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
MAX_TIME: Final = 253402300799       # 9999-12-31T23:59:59Z: a later integratedTime is no time at all
# ASN.1 string types Go's asn1.Unmarshal reads into a string, and how their bytes decode
_STRING_TAGS: Final = {0x0C: "utf-8", 0x13: "ascii", 0x14: "latin-1", 0x16: "ascii", 0x1B: "latin-1",
                       0x1E: "utf-16-be"}


def canonical_json(value: Any) -> bytes:
    """``value`` in RFC 8785 canonical form, for the shapes a Rekor payload has (objects, strings, numbers: an
    integral number is written as an integer, as ECMAScript writes it)."""
    def numbers(item: Any) -> Any:
        if isinstance(item, float) and item.is_integer() and abs(item) < 2 ** 53:
            return int(item)
        if isinstance(item, dict):
            return {k: numbers(v) for k, v in item.items()}
        if isinstance(item, list):
            return [numbers(v) for v in item]
        return item

    return json.dumps(numbers(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def strict_json(data: bytes | str, what: str = "") -> Any:
    """``data`` read as containers/image's paranoid JSON reading reads a signature's parts: no key twice, no NaN
    or Infinity; :class:`Untrusted` (prefixed with ``what``) otherwise. Strings are Go's (a lone surrogate escape
    is U+FFFD, so two keys that differ only there are the same key, as in Go)."""
    prefix = f"{what}: " if what else ""

    def go_value(value: Any) -> Any:
        if isinstance(value, str):
            return go_decoded_string(value)
        return [go_value(v) for v in value] if isinstance(value, list) else value

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for raw_key, value in items:
            key = go_decoded_string(raw_key)
            if key in found:
                raise Untrusted(f"{prefix}Duplicate key {go_quote(key)}")
            found[key] = go_value(value)
        return found

    def constant(name: str) -> Any:
        raise Untrusted(f"{prefix}invalid character {name[:1]!r} looking for beginning of value")

    try:
        return json.loads(data, object_pairs_hook=pairs, parse_constant=constant)
    except (ValueError, RecursionError) as exc:
        raise Untrusted(f"{prefix}{exc}") from None


def _shown(value: Any) -> str:
    """A decoded JSON value in a message, as containers/image's ``%q`` of the Go string it decodes into: absent or
    null is Go's empty string; a value Go would not have decoded into a string at all is shown as JSON."""
    if value is None:
        return go_quote("")
    return go_quote(value) if isinstance(value, str) else json.dumps(value)


def _go_token(value: Any) -> str:
    """``%#v`` of the first JSON token Go's decoder reads of ``value`` (not an object)."""
    if isinstance(value, list):
        return "91"   # json.Delim('[') printed as the rune it is
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    return go_v_float(float(value))


def exact_fields(value: Any, fields: tuple[str, ...], what: str = "") -> tuple[Any, ...]:
    """The values of exactly ``fields`` of the object ``value`` (containers/image's
    ParanoidUnmarshalJSONObjectExactFields, in its words; prefixed with ``what``); :class:`Untrusted` otherwise."""
    prefix = f"{what}: " if what else ""
    if not isinstance(value, dict):
        raise Untrusted(f"{prefix}JSON object expected, got {_go_token(value)}")
    for key in value:
        if key not in fields:
            raise Untrusted(f"{prefix}Unknown key {go_quote(key)}")
    for key in fields:
        if key not in value:
            raise Untrusted(f"{prefix}Key {go_quote(key)} missing in a JSON object")
    return tuple(value[key] for key in fields)


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise Untrusted(f"{what}: a base64 string expected")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:   # ValueError: not ASCII
        raise Untrusted(f"{what}: {exc}") from None


def verify_set(rekor_keys: Sequence[ec.EllipticCurvePublicKey], raw_set: bytes, key_or_cert_pem: bytes,
               signature_b64: str, payload: bytes) -> datetime.datetime:
    """The time Rekor logged the signature, when ``raw_set`` is a SET one of ``rekor_keys`` signed over exactly this
    signature, key or certificate, and payload; else :class:`Untrusted`."""
    signed_timestamp, set_payload = exact_fields(strict_json(raw_set, "Rekor SET"), ("SignedEntryTimestamp", "Payload"),
                                           "Rekor SET")
    timestamp_signature = _b64(signed_timestamp, "Rekor SET SignedEntryTimestamp")
    try:
        canonical = canonical_json(set_payload)
    except (ValueError, RecursionError, UnicodeError, OverflowError) as exc:
        raise Untrusted(f"canonicalizing Rekor SET JSON: {exc}") from None
    for key in rekor_keys:
        try:
            key.verify(timestamp_signature, canonical, ec.ECDSA(hashes.SHA256()))
            break
        except InvalidSignature:
            continue
    else:
        raise Untrusted("cryptographic signature verification of Rekor SET failed")
    # read back from the canonical bytes, as containers/image reads them
    body, integrated, _index, _log = exact_fields(strict_json(canonical, "parsing Rekor SET payload"),
                                           ("body", "integratedTime", "logIndex", "logID"), "parsing Rekor SET payload")
    if not isinstance(integrated, int) or isinstance(integrated, bool) or not 0 <= integrated <= MAX_TIME:
        raise Untrusted("parsing Rekor SET payload: integratedTime is not a time")
    entry = strict_json(_b64(body, "Rekor SET payload body"), "decoding the body of a Rekor SET payload")
    if not isinstance(entry, dict) or entry.get("kind") != "hashedrekord":
        kind = entry.get("kind") if isinstance(entry, dict) else None
        raise Untrusted(f"decoding the body of a Rekor SET payload: invalid kind value: {_shown(kind)}")
    if entry.get("apiVersion") is None:
        raise Untrusted("missing Rekor SET Payload API version")
    if entry["apiVersion"] != HASHEDREKORD_VERSION:
        raise Untrusted(f"unsupported Rekor SET Payload hashedrekord version {json.dumps(entry['apiVersion'])}")
    spec = entry.get("spec")
    if not isinstance(spec, dict):
        raise Untrusted("decoding hashedrekod spec: not an object")
    signature = spec.get("signature")
    if not isinstance(signature, dict):
        raise Untrusted('Missing "signature" field in hashedrekord')
    public_key = signature.get("publicKey")
    if not isinstance(public_key, dict):
        raise Untrusted('Missing "signature.publicKey" field in hashedrekord')
    logged, after_logged = pem_decode(_b64(public_key.get("content", ""), "hashedrekord publicKey"))
    if logged is None:
        raise Untrusted("publicKey in Rekor SET is not in PEM format")
    if after_logged:
        raise Untrusted("publicKey in Rekor SET has trailing data")
    ours, after_ours = pem_decode(key_or_cert_pem)
    if ours is None:
        raise Untrusted("public key or cert to be matched against publicKey in Rekor SET is not in PEM format")
    if after_ours:
        raise Untrusted("public key or cert to be matched against publicKey in Rekor SET has trailing data")
    if logged.der != ours.der:
        raise Untrusted("publicKey in Rekor SET does not match")
    try:
        raw_signature = base64.b64decode(signature_b64, validate=True)
    except (binascii.Error, ValueError) as exc:   # ValueError: not ASCII
        raise Untrusted(f"decoding signature base64: {exc}") from None
    if _b64(signature.get("content", ""), "hashedrekord signature") != raw_signature:
        raise Untrusted("signature in Rekor SET does not match")
    data = spec.get("data")
    hashed = data.get("hash") if isinstance(data, dict) else None
    if not isinstance(data, dict):
        raise Untrusted('Missing "data" field in hashedrekord')
    if not isinstance(hashed, dict):
        raise Untrusted('Missing "data.hash" field in hashedrekord')
    if hashed.get("algorithm") is None:
        raise Untrusted('Missing "data.hash.algorithm" field in hashedrekord')
    if hashed["algorithm"] != "sha256":
        raise Untrusted(f'Unexpected "data.hash.algorithm" value {_shown(hashed["algorithm"])}')
    if hashed.get("value") is None:
        raise Untrusted('Missing "data.hash.value" field in hashedrekord')
    try:
        logged_hash = bytes.fromhex(str(hashed["value"]))
    except ValueError as exc:
        raise Untrusted(f'Invalid "data.hash.value" field in hashedrekord: {exc}') from None
    if logged_hash != hashlib.sha256(payload).digest():
        raise Untrusted("payload in Rekor SET does not match")
    return datetime.datetime.fromtimestamp(integrated, datetime.UTC)


def verify_certificate(roots: Sequence[x509.Certificate], oidc_issuer: str, subject_email: str,
                       when: datetime.datetime, leaf_pem: bytes, chain_pem: bytes) -> Any:
    """The public key of the signing certificate ``leaf_pem``, when it chains to ``roots`` (through the
    intermediates of ``chain_pem`` but its last certificate) valid at ``when``, for code signing, issued for
    ``oidc_issuer`` and ``subject_email``; else :class:`Untrusted`."""
    intermediates = chain_intermediates(chain_pem)
    leaf = parse_leaf(leaf_pem)
    if problem := chain_problem(leaf, intermediates, roots, when, "the signature's time"):
        raise Untrusted(f"veryfing leaf certificate failed: {problem}")
    issuer = _oidc_issuer(leaf)
    if issuer != oidc_issuer:
        raise Untrusted(f"Unexpected Fulcio OIDC issuer {go_quote(issuer)}")
    _require_email(leaf, subject_email)
    return leaf.public_key()


def verify_pki(roots: Sequence[x509.Certificate], trusted_intermediates: Sequence[x509.Certificate],
               subject_email: str, subject_hostname: str, now: datetime.datetime, leaf_pem: bytes,
               chain_pem: bytes) -> Any:
    """The public key of the signing certificate ``leaf_pem``, when it chains to ``roots`` (through the policy's
    ``trusted_intermediates`` and those of ``chain_pem`` but its last certificate) valid ``now``, for code
    signing, naming ``subject_email`` and ``subject_hostname`` where given (containers/image's verifyPKI); else
    :class:`Untrusted`."""
    intermediates = [*trusted_intermediates, *chain_intermediates(chain_pem)]
    leaf = parse_leaf(leaf_pem)
    if problem := chain_problem(leaf, intermediates, roots, now, "current time"):
        raise Untrusted(f"veryfing leaf certificate failed: {problem}")
    if subject_email:
        _require_email(leaf, subject_email)
    if subject_hostname and (problem := hostname_problem(leaf, subject_hostname)):
        raise Untrusted(f"Unexpected subject hostname: {problem}")
    return leaf.public_key()


def _require_email(leaf: x509.Certificate, subject_email: str) -> None:
    emails = email_addresses(leaf)
    if subject_email not in emails:
        raise Untrusted(f"Required email {go_quote(subject_email)} not found (got {go_quote_list(emails)})")


def _oidc_issuer(cert: x509.Certificate) -> str:
    v1: str | None = None
    v2: str | None = None
    for ext in cert.extensions:
        if ext.oid == OID_ISSUER_V1:
            if v1 is not None:
                raise Untrusted("Fulcio certificate has a duplicate OIDC issuer v1 extension")
            v1 = _raw(ext).decode("utf-8", "surrogateescape")   # invalid UTF-8 never equals a policy's issuer
        elif ext.oid == OID_ISSUER_V2:
            if v2 is not None:
                raise Untrusted("Fulcio certificate has a duplicate OIDC issuer v2 extension")
            v2 = _utf8_string(_raw(ext))
    if v1 is not None and v2 is not None:
        if v1 != v2:
            raise Untrusted(f"inconsistent OIDC issuer extension values: v1 {go_quote(v1)}, v2 {go_quote(v2)}")
        return v1
    if v1 is not None:
        return v1
    if v2 is not None:
        return v2
    raise Untrusted("Fulcio certificate is missing the issuer extension")


def _raw(ext: x509.Extension[Any]) -> bytes:
    value = ext.value
    return bytes(value.value) if isinstance(value, x509.UnrecognizedExtension) else b""


def _utf8_string(der: bytes) -> str:
    """A DER string (UTF8String, IA5String, PrintableString...: what Go's asn1.Unmarshal reads into a string),
    its length in DER's minimal form, nothing after it."""
    if len(der) < 2 or der[0] not in _STRING_TAGS:
        raise Untrusted("invalid ASN.1 in OIDC issuer v2 extension: not a string")
    length, offset = der[1], 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or len(der) < 2 + count or der[2] == 0:
            raise Untrusted("invalid ASN.1 in OIDC issuer v2 extension: bad length")
        length, offset = int.from_bytes(der[2:2 + count], "big"), 2 + count
        if length < 0x80:
            raise Untrusted("invalid ASN.1 in OIDC issuer v2 extension: non-minimal length")
    if len(der) < offset + length:
        raise Untrusted("invalid ASN.1 in OIDC issuer v2 extension: truncated")
    if len(der) > offset + length:
        raise Untrusted("invalid ASN.1 in OIDC issuer v2 extension, trailing data")
    try:
        return der[offset:offset + length].decode(_STRING_TAGS[der[0]])
    except UnicodeDecodeError:
        raise Untrusted("invalid ASN.1 in OIDC issuer v2 extension: not a valid string of its type") from None


