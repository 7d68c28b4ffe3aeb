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
import ipaddress
import json
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID

SET_ANNOTATION: Final = "dev.sigstore.cosign/bundle"
CERTIFICATE_ANNOTATION: Final = "dev.sigstore.cosign/certificate"
CHAIN_ANNOTATION: Final = "dev.sigstore.cosign/chain"
HASHEDREKORD_VERSION: Final = "0.0.1"
OID_ISSUER_V1: Final = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
OID_ISSUER_V2: Final = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
MAX_SIGNATURE_CHECKS: Final = 100   # Go's maxChainSignatureChecks: a chain search costs no more than this
MAX_TIME: Final = 253402300799       # 9999-12-31T23:59:59Z: a later integratedTime is no time at all
# Extensions Go's x509 understands: a critical one outside these (and SAN, always handled) fails verification.
_HANDLED: Final = frozenset({ExtensionOID.KEY_USAGE, ExtensionOID.BASIC_CONSTRAINTS,
                             ExtensionOID.SUBJECT_ALTERNATIVE_NAME, ExtensionOID.EXTENDED_KEY_USAGE,
                             ExtensionOID.NAME_CONSTRAINTS, ExtensionOID.CERTIFICATE_POLICIES,
                             ExtensionOID.AUTHORITY_KEY_IDENTIFIER, ExtensionOID.SUBJECT_KEY_IDENTIFIER,
                             ExtensionOID.CRL_DISTRIBUTION_POINTS, ExtensionOID.AUTHORITY_INFORMATION_ACCESS,
                             ExtensionOID.POLICY_CONSTRAINTS, ExtensionOID.POLICY_MAPPINGS,
                             ExtensionOID.INHIBIT_ANY_POLICY})
# ASN.1 string types Go's asn1.Unmarshal reads into a string, and how their bytes decode
_STRING_TAGS: Final = {0x0C: "utf-8", 0x13: "ascii", 0x14: "latin-1", 0x16: "ascii", 0x1B: "latin-1",
                       0x1E: "utf-16-be"}
# Extensions Go refuses to parse when marked critical
_NEVER_CRITICAL: Final = {ExtensionOID.SUBJECT_KEY_IDENTIFIER: "subject key identifier",
                          ExtensionOID.AUTHORITY_KEY_IDENTIFIER: "authority key identifier",
                          ExtensionOID.AUTHORITY_INFORMATION_ACCESS: "authority info access"}
_SPACE: Final = b" \t\n\v\f\r"   # what bytes.TrimSpace trims (sigstore's UnmarshalCertificatesFromPEM trims first)
# General name types Go's x509 understands in SANs and name constraints
_GO_NAMES: Final = (x509.DNSName, x509.RFC822Name, x509.IPAddress, x509.UniformResourceIdentifier)


class Untrusted(Exception):
    """Why the SET or the certificate is not accepted (containers/image's InvalidSignatureError text)."""


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
    or Infinity; :class:`Untrusted` (prefixed with ``what``) otherwise."""
    prefix = f"{what}: " if what else ""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in items:
            if key in found:
                raise Untrusted(f"{prefix}Duplicate key {json.dumps(key)}")
            found[key] = value
        return found

    def constant(name: str) -> Any:
        raise Untrusted(f"{prefix}invalid character {name[:1]!r} looking for beginning of value")

    try:
        return json.loads(data, object_pairs_hook=pairs, parse_constant=constant)
    except (ValueError, RecursionError) as exc:
        raise Untrusted(f"{prefix}{exc}") from None


def exact_fields(value: Any, fields: tuple[str, ...], what: str = "", where: str = "") -> tuple[Any, ...]:
    """The values of exactly ``fields`` of the object ``value`` (containers/image's
    ParanoidUnmarshalJSONObjectExactFields, in its words; prefixed with ``what``, an unexpected key placed
    ``where``); :class:`Untrusted` otherwise."""
    prefix = f"{what}: " if what else ""
    if not isinstance(value, dict):
        raise Untrusted(f"{prefix}JSON object expected")
    for key in value:
        if key not in fields:
            raise Untrusted(f"{prefix}Unexpected key {json.dumps(key)}" + (f" in {where}" if where else ""))
    for key in fields:
        if key not in value:
            raise Untrusted(f"{prefix}Key {json.dumps(key)} missing in a JSON object")
    return tuple(value[key] for key in fields)


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise Untrusted(f"{what}: a base64 string expected")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise Untrusted(f"{what}: {exc}") from None


@dataclass(frozen=True, slots=True)
class PemBlock:
    """A PEM block as Go's encoding/pem decodes it: its label, headers and DER content."""

    label: str
    headers: dict[bytes, bytes]
    der: bytes


_PEM_START: Final = b"\n-----BEGIN "
_PEM_END: Final = b"\n-----END "
_PEM_EOL: Final = b"-----"


def _get_line(data: bytes) -> tuple[bytes, bytes, int]:
    """Go's pem getLine: the first line (its CR and trailing blanks dropped), the rest, the bytes consumed."""
    i = data.find(b"\n")
    if i < 0:
        i = j = len(data)
    else:
        j = i + 1
        if i > 0 and data[i - 1:i] == b"\r":
            i -= 1
    return data[:i].rstrip(b" \t"), data[j:], j


def pem_decode(data: bytes) -> tuple[PemBlock | None, bytes]:
    """Go 1.26's pem.Decode: the first block (found from the first END line back to the last BEGIN line before
    it) and what follows its END line; a block that does not decode (a BEGIN line not starting a line, labels
    that differ, text after the END line, bad base64) is skipped for the next one; (None, ``data``) without any."""
    rest = data
    end_trailer_index = 0
    while True:
        if end_trailer_index < 0 or end_trailer_index > len(rest):
            return None, data
        rest = rest[end_trailer_index:]
        end_index = rest.find(_PEM_END)
        if end_index < 0:
            return None, data
        end_trailer_index = end_index + len(_PEM_END)
        begin_index = rest.rfind(_PEM_START[1:], 0, end_index)
        if begin_index < 0 or (begin_index > 0 and rest[begin_index - 1] != ord("\n")):
            continue
        skip = begin_index + len(_PEM_START) - 1
        rest, end_index, end_trailer_index = rest[skip:], end_index - skip, end_trailer_index - skip
        type_line, rest, consumed = _get_line(rest)
        end_index, end_trailer_index = end_index - consumed, end_trailer_index - consumed
        if not type_line.endswith(_PEM_EOL):
            continue
        type_line = type_line[:-len(_PEM_EOL)]
        headers: dict[bytes, bytes] = {}
        while True:
            if not rest:
                return None, data
            line, following, consumed = _get_line(rest)
            key, colon, value = line.partition(b":")
            if not colon:
                break
            headers[key.strip(_SPACE)] = value.strip(_SPACE)
            rest, end_index, end_trailer_index = following, end_index - consumed, end_trailer_index - consumed
        if (headers and end_index < 0) or end_trailer_index < 0:
            continue
        end_trailer = rest[end_trailer_index:]
        trailer_length = len(type_line) + len(_PEM_EOL)
        if len(end_trailer) < trailer_length:
            continue
        rest_of_end_line, end_trailer = end_trailer[trailer_length:], end_trailer[:trailer_length]
        if not end_trailer.startswith(type_line) or not end_trailer.endswith(_PEM_EOL):
            continue
        if _get_line(rest_of_end_line)[0]:
            continue
        der = b""
        if end_index > 0:
            encoded = rest[:end_index].translate(None, b" \t\r\n")   # Go's decoder skips CR and LF itself
            try:
                der = base64.b64decode(encoded, validate=True)
            except binascii.Error:
                continue
        return PemBlock(type_line.decode("latin-1"), headers, der), _get_line(rest[end_index + len(_PEM_END) - 1:])[1]


def _pem_certificates(data: bytes, what: str, *, skip_bad: bool = False) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle, as sigstore's UnmarshalCertificatesFromPEM reads it (anything left
    that is no PEM block is an error), or as Go's AppendCertsFromPEM (``skip_bad``: blocks that are no certificate,
    or carry headers, skipped). Each certificate is parsed whole now, so a malformed one is refused here, not met
    later."""
    found: list[x509.Certificate] = []
    rest = data
    while rest:
        block, rest = pem_decode(rest)
        if block is None:
            if skip_bad:
                break
            raise Untrusted(f"{what}: error during PEM decoding")
        if skip_bad and (block.label != "CERTIFICATE" or block.headers):
            continue
        try:
            cert = _parsed(x509.load_der_x509_certificate(block.der))
        except (ValueError, TypeError, UnicodeError, UnsupportedAlgorithm, x509.DuplicateExtension,
                x509.UnsupportedGeneralNameType, Untrusted) as exc:
            if skip_bad:
                continue
            raise Untrusted(f"{what}: x509: {exc}") from None
        found.append(cert)
    return found


def _parsed(cert: x509.Certificate) -> x509.Certificate:
    """``cert`` with everything cryptography parses lazily read once (names, extensions, key), as Go parses a
    certificate whole; raises what a malformed part raises, :class:`Untrusted` for Go's own refusals."""
    cert.subject.rfc4514_string()
    cert.issuer.rfc4514_string()
    for ext in cert.extensions:
        if ext.critical and ext.oid in _NEVER_CRITICAL:
            raise Untrusted(f"{_NEVER_CRITICAL[ext.oid]} incorrectly marked critical")
        value = ext.value
        if isinstance(value, x509.NameConstraints):
            list(value.permitted_subtrees or ())
            list(value.excluded_subtrees or ())
        elif isinstance(value, x509.SubjectAlternativeName | x509.ExtendedKeyUsage | x509.CertificatePolicies):
            list(value)
    problem = key_problem(cert.public_key())
    if problem:
        raise Untrusted(problem)
    return cert


def key_problem(key: Any) -> str | None:
    """Why Go's x509 would not use ``key`` (an unsupported curve or algorithm, an RSA key under 1024 bits): for a
    certificate's key and a policy's alike."""
    if isinstance(key, ec.EllipticCurvePublicKey):
        if not isinstance(key.curve, ec.SECP256R1 | ec.SECP384R1 | ec.SECP521R1):
            return "unsupported elliptic curve"
        return None
    if isinstance(key, rsa.RSAPublicKey):
        return f"crypto/rsa: {key.key_size}-bit keys are insecure" if key.key_size < 1024 else None
    if isinstance(key, ed25519.Ed25519PublicKey):
        return None
    return "unknown public key algorithm"


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
        raise Untrusted(f"decoding the body of a Rekor SET payload: invalid kind value: {json.dumps(kind)}")
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
    except binascii.Error as exc:
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
        raise Untrusted(f'Unexpected "data.hash.algorithm" value {json.dumps(hashed["algorithm"])}')
    if hashed.get("value") is None:
        raise Untrusted('Missing "data.hash.value" field in hashedrekord')
    try:
        logged_hash = bytes.fromhex(str(hashed["value"]))
    except ValueError as exc:
        raise Untrusted(f'Invalid "data.hash.value" field in hashedrekord: {exc}') from None
    if logged_hash != hashlib.sha256(payload).digest():
        raise Untrusted("payload in Rekor SET does not match")
    return datetime.datetime.fromtimestamp(integrated, datetime.UTC)


def load_roots(data: bytes) -> list[x509.Certificate]:
    """The CA certificates of a policy, Fulcio's or a PKI's (Go's AppendCertsFromPEM: a block that is no
    certificate skipped)."""
    return _pem_certificates(data, "CA certificates", skip_bad=True)


def load_intermediates(data: bytes) -> list[x509.Certificate]:
    """A PKI's trusted intermediates, read as sigstore's UnmarshalCertificatesFromPEM reads them (anything that is
    not a certificate refuses)."""
    return _pem_certificates(data.strip(_SPACE), "loading trusted intermediate certificates")


def verify_certificate(roots: Sequence[x509.Certificate], oidc_issuer: str, subject_email: str,
                       when: datetime.datetime, leaf_pem: bytes, chain_pem: bytes) -> Any:
    """The public key of the signing certificate ``leaf_pem``, when it chains to ``roots`` (through the
    intermediates of ``chain_pem`` but its last certificate) valid at ``when``, for code signing, issued for
    ``oidc_issuer`` and ``subject_email``; else :class:`Untrusted`."""
    intermediates = _chain_intermediates(chain_pem)
    leaf = _leaf(leaf_pem)
    if problem := _chain_problem(leaf, intermediates, roots, when, "the signature's time"):
        raise Untrusted(f"veryfing leaf certificate failed: {problem}")
    issuer = _oidc_issuer(leaf)
    if issuer != oidc_issuer:
        raise Untrusted(f"Unexpected Fulcio OIDC issuer {json.dumps(issuer)}")
    _require_email(leaf, subject_email)
    return leaf.public_key()


def verify_pki(roots: Sequence[x509.Certificate], trusted_intermediates: Sequence[x509.Certificate],
               subject_email: str, subject_hostname: str, now: datetime.datetime, leaf_pem: bytes,
               chain_pem: bytes) -> Any:
    """The public key of the signing certificate ``leaf_pem``, when it chains to ``roots`` (through the policy's
    ``trusted_intermediates`` and those of ``chain_pem`` but its last certificate) valid ``now``, for code
    signing, naming ``subject_email`` and ``subject_hostname`` where given (containers/image's verifyPKI); else
    :class:`Untrusted`."""
    intermediates = [*trusted_intermediates, *_chain_intermediates(chain_pem)]
    leaf = _leaf(leaf_pem)
    if problem := _chain_problem(leaf, intermediates, roots, now, "current time"):
        raise Untrusted(f"veryfing leaf certificate failed: {problem}")
    if subject_email:
        _require_email(leaf, subject_email)
    if subject_hostname and (problem := hostname_problem(leaf, subject_hostname)):
        raise Untrusted(f"Unexpected subject hostname: {problem}")
    return leaf.public_key()


def _chain_intermediates(chain_pem: bytes) -> list[x509.Certificate]:
    """The intermediates a signature's ``dev.sigstore.cosign/chain`` offers: all its certificates but the last (the
    root, which only the policy may name)."""
    if not chain_pem:
        return []
    return _pem_certificates(chain_pem.strip(_SPACE), "loading certificate chain")[:-1]


def _leaf(leaf_pem: bytes) -> x509.Certificate:
    """The one certificate of a signature's ``dev.sigstore.cosign/certificate`` (containers/image's
    parseLeafCertFromPEM)."""
    leaves = _pem_certificates(leaf_pem.strip(_SPACE), "parsing leaf certificate")
    if not leaves:
        raise Untrusted("no certificate found in signature certificate data")
    if len(leaves) > 1:
        raise Untrusted("unexpected multiple certificates present in signature certificate data")
    return leaves[0]


def _require_email(leaf: x509.Certificate, subject_email: str) -> None:
    emails = _emails(leaf)
    if subject_email not in emails:
        raise Untrusted(f"Required email {json.dumps(subject_email)} not found (got {json.dumps(emails)})")


def hostname_problem(cert: x509.Certificate, host: str) -> str | None:
    """Why ``cert`` is not valid for ``host`` as Go's Certificate.VerifyHostname decides (an IP address, bracketed
    or not, against the IP SANs; a name against the DNS SANs without regard to ASCII case, a wildcard as a whole
    left-most label and a trailing dot allowed where both are valid hostnames), in its words; None when valid."""
    candidate_ip = host[1:-1] if len(host) >= 3 and host[0] == "[" and host[-1] == "]" else host
    ip = _go_ip(candidate_ip)
    if ip is not None:
        if any(_go_ip_equal(ip, san) for san in _ip_sans(cert)):
            return None
        return _hostname_error(cert, candidate_ip)
    name = _ascii_lower(host)
    valid_name = _valid_hostname(name, pattern=False)
    for match in _dns_sans(cert):
        if valid_name and _valid_hostname(match, pattern=True):
            if _match_hostnames(match, name):
                return None
        elif match not in ("", ".") and name not in ("", ".") and _ascii_lower(match) == name:
            return None
    return _hostname_error(cert, host)


def _hostname_error(cert: x509.Certificate, host: str) -> str:
    """Go's HostnameError.Error()."""
    try:
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        has_san = True
    except x509.ExtensionNotFound:
        has_san = False
    common = [a.value for a in cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)]
    if not has_san and _match_hostnames(str(common[-1]) if common else "", host):
        return "x509: certificate relies on legacy Common Name field, use SANs instead"
    if _go_ip(host) is not None:
        ips = _ip_sans(cert)
        if not ips:
            return f"x509: cannot validate certificate for {host} because it doesn't contain any IP SANs"
        if len(ips) >= 100:
            return f"x509: certificate is valid for {len(ips)} IP SANs, but none matched {host}"
        valid = ", ".join(_go_ip_text(ip) for ip in ips)
    else:
        names = _dns_sans(cert)
        if len(names) >= 100:
            return f"x509: certificate is valid for {len(names)} names, but none matched {host}"
        valid = ", ".join(names)
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {host}"
    return f"x509: certificate is valid for {valid}, not {host}"


def _dns_sans(cert: x509.Certificate) -> list[str]:
    try:
        return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName)
    except x509.ExtensionNotFound:
        return []


def _ip_sans(cert: x509.Certificate) -> list[Any]:
    try:
        return list(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.IPAddress))
    except x509.ExtensionNotFound:
        return []


def _go_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``text`` as Go's net.ParseIP reads it (dotted IPv4 without leading zeros, IPv6 without a zone), else None."""
    if "%" in text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _go_ip_equal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, san: Any) -> bool:
    """Go's IP.Equal: an IPv4 address equals its IPv4-mapped IPv6 form."""
    return bool(_v4_form(ip) == _v4_form(san))


def _v4_form(ip: Any) -> Any:
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped if mapped is not None else ip


def _go_ip_text(ip: Any) -> str:
    """An IP SAN as Go's IP.String writes it (an IPv4-mapped IPv6 address as the IPv4 one)."""
    return str(_v4_form(ip))


def _ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def _valid_hostname(host: str, *, pattern: bool) -> bool:
    """Go's validHostname: labels of ASCII letters, digits, '_' and inner '-'; a pattern may start with a whole
    '*' label; an input may end with a dot."""
    if not pattern:
        host = host.removesuffix(".")
    if not host or host == "*":
        return False
    for index, part in enumerate(host.split(".")):
        if not part:
            return False
        if pattern and index == 0 and part == "*":
            continue
        for position, char in enumerate(part):
            if not (char.isascii() and (char.isalnum() or char == "_" or (char == "-" and position != 0))):
                return False
    return True


def _match_hostnames(pattern: str, host: str) -> bool:
    """Go's matchHostnames: label by label, a left-most '*' matching any one label."""
    pattern, host = _ascii_lower(pattern), _ascii_lower(host.removesuffix("."))
    if not pattern or not host:
        return False
    pattern_parts, host_parts = pattern.split("."), host.split(".")
    if len(pattern_parts) != len(host_parts):
        return False
    return all((index == 0 and part == "*") or part == host_parts[index] for index, part in enumerate(pattern_parts))


def _valid_at(cert: x509.Certificate, when: datetime.datetime) -> bool:
    return cert.not_valid_before_utc <= when <= cert.not_valid_after_utc


def _path_length(cert: x509.Certificate) -> int | None:
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.path_length
    except x509.ExtensionNotFound:
        return None


_NOT_AUTHORIZED: Final = "x509: a root or intermediate certificate is not authorized to sign for this name: "


def _name_problem(ca: x509.Certificate, below: Sequence[x509.Certificate]) -> str | None:
    """Why ``ca``'s name constraints forbid a name of a certificate ``below`` it, or None, as Go 1.26's
    checkChainConstraints decides: every IP address, DNS name, URI host and e-mail address of their SANs must be
    within a permitted subtree of its type (when the CA permits any of that type) and in no excluded one; DNS
    names, URI hosts and e-mail domains match a constraint naming the domain itself or a parent (``.domain``: the
    subdomains only), ignoring ASCII case; a wildcard name is excluded by a constraint on any name it may stand
    for; a name Go cannot read (a DNS name ending in a dot, a URI without a host or with an IP address) refuses
    the chain."""
    try:
        constraints = ca.extensions.get_extension_for_class(x509.NameConstraints).value
    except x509.ExtensionNotFound:
        return None
    permitted = list(constraints.permitted_subtrees or [])
    excluded = list(constraints.excluded_subtrees or [])

    def values(kind: type[x509.GeneralName], subtrees: list[x509.GeneralName]) -> list[Any]:
        return [c.value for c in subtrees if isinstance(c, kind)]

    ip_rules = (values(x509.IPAddress, permitted), values(x509.IPAddress, excluded))
    dns_rules = (values(x509.DNSName, permitted), values(x509.DNSName, excluded))
    uri_rules = (values(x509.UniformResourceIdentifier, permitted), values(x509.UniformResourceIdentifier, excluded))
    mail_rules = (values(x509.RFC822Name, permitted), values(x509.RFC822Name, excluded))
    for cert in below:
        try:
            names = list(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
        except x509.ExtensionNotFound:
            continue
        hosts: list[tuple[str, str]] = []
        for name in names:
            if isinstance(name, x509.UniformResourceIdentifier):
                host_or_problem = _uri_host(name.value)
                if host_or_problem[1]:
                    return _NOT_AUTHORIZED + host_or_problem[1]
                hosts.append((name.value, host_or_problem[0]))
        for name in names:
            if isinstance(name, x509.IPAddress) and (problem := _checked(
                    "IP address", _go_ip_text(name.value), ip_rules,
                    lambda network, ip=name.value: _ip_in(network, ip))):
                return problem
        for name in names:
            if isinstance(name, x509.DNSName):
                if not _domain_valid(name.value):
                    return f"{_NOT_AUTHORIZED}x509: cannot parse dnsName {json.dumps(name.value)}"
                if problem := _checked_domain("DNS name", name.value, name.value, dns_rules):
                    return problem
        for shown, host in hosts:
            if not _domain_valid(host):
                return f"{_NOT_AUTHORIZED}x509: internal error: URI SAN {json.dumps(shown)} failed to parse"
            if problem := _checked_domain("URI", host, shown, uri_rules):
                return problem
        for name in names:
            if isinstance(name, x509.RFC822Name):
                _local, at, domain = name.value.rpartition("@")
                if not at or not _domain_valid(domain):
                    return f"{_NOT_AUTHORIZED}x509: cannot parse rfc822Name {json.dumps(name.value)}"
                if problem := _checked("email address", name.value, mail_rules,
                                       lambda constraint, mail=name.value: _mail_matches(mail, constraint)):
                    return problem
    return None


def _checked(kind: str, shown: str, rules: tuple[list[Any], list[Any]], matches: Any) -> str | None:
    """Go's checkConstraints: not permitted when the CA permits names of this kind and none of them matches;
    excluded when one of its exclusions matches."""
    permitted, excluded = rules
    if permitted and not any(matches(c) for c in permitted):
        return f"{_NOT_AUTHORIZED}{kind} {json.dumps(shown)} is not permitted by any constraint"
    for constraint in excluded:
        if matches(constraint):
            return (f"{_NOT_AUTHORIZED}{kind} {json.dumps(shown)} is excluded by constraint "
                    f"{json.dumps(str(constraint))}")
    return None


def _checked_domain(kind: str, host: str, shown: str, rules: tuple[list[str], list[str]]) -> str | None:
    permitted, excluded = rules
    problem = _checked(kind, shown, (permitted, []), lambda c: _dns_has_suffix(c, host))
    if problem is None:
        wildcard_parent = _first_label_trimmed(_ascii_lower(host)) if host.startswith("*") else ""
        problem = _checked(kind, shown, ([], excluded), lambda c: _dns_has_suffix(c, host) or bool(
            wildcard_parent and _first_label_trimmed(_ascii_lower(c)) == wildcard_parent))
    return problem


def _dns_has_suffix(constraint: str, name: str) -> bool:
    """Go's dnsHasSuffix for a constraint: ``""`` matches everything; else the name ends with it, ignoring ASCII
    case, at a label boundary (or the constraint starts with a dot)."""
    if not constraint:
        return True
    if len(constraint) > len(name) or not _ascii_lower(name).endswith(_ascii_lower(constraint)):
        return False
    return constraint[0] == "." or len(name) == len(constraint) or name[len(name) - len(constraint) - 1] == "."


def _first_label_trimmed(name: str) -> str:
    """Go's trimFirstLabel: from the first dot on (``""`` for a single label)."""
    dot = name.find(".")
    return "" if dot < 0 else name[dot:]


def _domain_valid(name: str) -> bool:
    """Go 1.26's domainNameValid for a name (not a constraint): no trailing dot, no empty label, printable ASCII
    only (the empty name passes)."""
    if not name:
        return True
    if name.endswith("."):
        return False
    return all(label and all(33 <= ord(c) <= 126 for c in label) for label in name.split("."))


def _uri_host(uri: str) -> tuple[str, str]:
    """The host a URI SAN is held to constraints by (lower case, without a port), or ("", why Go refuses it)."""
    try:
        netloc = urllib.parse.urlsplit(uri).netloc
    except ValueError as exc:
        return "", f"cannot parse URI {json.dumps(uri)}: {exc}"
    host = netloc.rpartition("@")[2].lower()
    if not host:
        return "", f"URI with empty host ({json.dumps(uri)}) cannot be matched against constraints"
    if ":" in host and not host.endswith("]"):
        host, colon, _port = host.rpartition(":")
        if not colon or (":" in host and not host.startswith("[")):
            return "", f"cannot parse URI host {json.dumps(netloc)}: too many colons"
    if (host.startswith("[") and host.endswith("]")) or _parse_addr(host):
        return "", f"URI with IP ({json.dumps(uri)}) cannot be matched against constraints"
    return host, ""


def _parse_addr(text: str) -> bool:
    """Whether Go's netip.ParseAddr reads ``text`` (an IPv4 or IPv6 address, a zone allowed)."""
    try:
        ipaddress.ip_address(text.split("%", 1)[0] if ":" in text else text)
    except ValueError:
        return False
    return True


_V4_IN_V6: Final = bytes(10) + b"\xff\xff"


def _ip_in(network: Any, ip: Any) -> bool:
    """Go's IPNet.Contains, on the constraint sets Go keeps per address length: an address is held to networks
    written with as many bytes (4 or 16), then compared as IPv4 when both are (an IPv4-mapped IPv6 form is)."""
    if network.version != ip.version:
        return False
    address, number, mask = ip.packed, network.network_address.packed, network.netmask.packed
    if len(address) == 16 and address[:12] == _V4_IN_V6:
        address = address[12:]
    if len(number) == 16 and number[:12] == _V4_IN_V6:
        number, mask = number[12:], mask[12:]
    if len(address) != len(number):
        return False
    return all(a & m == n & m for a, n, m in zip(address, number, mask, strict=True))


def _mail_matches(mail: str, constraint: str) -> bool:
    """Go's e-mail constraints: a mailbox constraint matches the local part exactly and the domain without
    regard to case; a domain constraint matches as a DNS name constraint does (itself and its subdomains,
    ``.domain`` its subdomains only)."""
    local, _, host = mail.rpartition("@")
    if "@" in constraint:
        c_local, _, c_host = constraint.rpartition("@")
        return local == c_local and _ascii_lower(host) == _ascii_lower(c_host)
    return _dns_has_suffix(constraint, host)


def _unhandled_critical(cert: x509.Certificate) -> bool:
    """Go's UnhandledCriticalExtensions: a critical extension it does not know, a critical SAN holding no name of a
    type it understands, and critical name constraints holding a name type it does not understand."""
    for ext in cert.extensions:
        if not ext.critical:
            continue
        if ext.oid not in _HANDLED:
            return True
        value = ext.value
        if isinstance(value, x509.SubjectAlternativeName) and not any(isinstance(n, _GO_NAMES) for n in value):
            return True
        if isinstance(value, x509.NameConstraints) and any(
                not isinstance(n, _GO_NAMES) for n in [*(value.permitted_subtrees or ()),
                                                       *(value.excluded_subtrees or ())]):
            return True
    return False


def _explicit_policy(cert: x509.Certificate) -> bool:
    """Whether ``cert`` requires explicit certificate policies below it (policy validation cosctl does not do: a
    chain through it is refused rather than accepted unchecked; Go ignores a root's)."""
    try:
        constraints = cert.extensions.get_extension_for_class(x509.PolicyConstraints).value
    except x509.ExtensionNotFound:
        return False
    return constraints.require_explicit_policy is not None


def _allows_code_signing(cert: x509.Certificate) -> bool:
    """Go's EKU rule: no extension allows any use; else code signing or anyExtendedKeyUsage must be listed."""
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return True
    return ExtendedKeyUsageOID.CODE_SIGNING in usages or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usages


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _may_sign_certificates(parent: x509.Certificate) -> bool:
    """Go's CheckSignatureFrom before the signature: a version 3 certificate signs others only with basic
    constraints saying CA (a version 1 certificate may), and only if its key usage, when it has one, allows
    certificate signing."""
    try:
        constraints: x509.BasicConstraints | None = parent.extensions.get_extension_for_class(
            x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        constraints = None
    if (parent.version == x509.Version.v3 and constraints is None) or (constraints is not None and not constraints.ca):
        return False
    try:
        usage = parent.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return True
    bits = (usage.digital_signature, usage.content_commitment, usage.key_encipherment, usage.data_encipherment,
            usage.key_agreement, usage.key_cert_sign, usage.crl_sign,
            usage.key_agreement and usage.encipher_only, usage.key_agreement and usage.decipher_only)
    return usage.key_cert_sign or not any(bits)


def _chain_problem(leaf: x509.Certificate, intermediates: Sequence[x509.Certificate],
                   roots: Sequence[x509.Certificate], when: datetime.datetime, clock: str) -> str | None:
    """None when ``leaf`` chains to a root as Go's x509.Verify (ExtKeyUsageCodeSigning, CurrentTime ``when``, which
    messages call ``clock``) requires: every certificate valid then, no critical extension it does not handle, code
    signing allowed by each one's extended key usage (the root's too), issuers allowed to sign certificates (basic
    constraints and key usage; an intermediate a CA) within their path length, names within their constraints; a
    leaf that is itself one of the roots is its own chain; else why not (the reason of the closest chain, else an
    unknown authority). As in Go, a certificate is used once per chain and the search stops after
    :data:`MAX_SIGNATURE_CHECKS` signature checks."""
    if problem := _certificate_problem(leaf, when, clock):
        return problem
    leaf_der = leaf.public_bytes(serialization.Encoding.DER)
    if any(root.public_bytes(serialization.Encoding.DER) == leaf_der for root in roots):
        return None
    if _explicit_policy(leaf):
        return "x509: certificate policies required by a policy constraint are not checked by cosctl"
    der = {id(c): c.public_bytes(serialization.Encoding.DER) for c in [*intermediates, *roots, leaf]}
    root_der = {der[id(r)] for r in roots}
    reasons: list[str] = []
    checks = 0

    def issued(child: x509.Certificate, parent: x509.Certificate) -> bool:
        nonlocal checks
        if parent.subject != child.issuer:
            return False
        if checks >= MAX_SIGNATURE_CHECKS:
            return False
        checks += 1
        if not _may_sign_certificates(parent):
            reasons.append("x509: certificate signed by unknown authority (possibly because of \"x509: invalid "
                           "signature: parent certificate cannot sign this kind of certificate\")")
            return False
        try:
            child.verify_directly_issued_by(parent)
        except (ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
            return False
        return True

    def acceptable(parent: x509.Certificate, path: list[x509.Certificate], *, root: bool) -> bool:
        """Whether ``parent`` may issue for ``path`` (the leaf first, then the CAs under ``parent``)."""
        problem = _certificate_problem(parent, when, clock) or _name_problem(parent, path)
        if problem is None and not root and not _is_ca(parent):
            problem = "x509: certificate is not authorized to sign other certificates"
        length = _path_length(parent)
        if problem is None and length is not None and len(path) - 1 > length:
            problem = "x509: too many intermediates for path length constraint"
        if problem is not None:
            reasons.append(problem)
            return False
        return True

    def walk(path: list[x509.Certificate]) -> bool:
        cert = path[-1]
        for root in roots:
            if issued(cert, root) and acceptable(root, path, root=True):
                return True
        on_path = {der[id(c)] for c in path}
        for candidate in intermediates:
            mine = der[id(candidate)]
            if mine in root_der or mine in on_path:
                continue
            if _explicit_policy(candidate):
                reasons.append("x509: certificate policies required by a policy constraint are not checked by "
                               "cosctl")
                continue
            if issued(cert, candidate) and acceptable(candidate, path, root=False) and walk([*path, candidate]):
                return True
        return False

    if walk([leaf]):
        return None
    return reasons[0] if reasons else "x509: certificate signed by unknown authority"


def _certificate_problem(cert: x509.Certificate, when: datetime.datetime, clock: str) -> str | None:
    if not _valid_at(cert, when):
        return (f"x509: certificate has expired or is not yet valid: {clock} {when:%Y-%m-%dT%H:%M:%SZ} "
                f"is outside {cert.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ} to "
                f"{cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}")
    if _unhandled_critical(cert):
        return "x509: unhandled critical extension"
    if not _allows_code_signing(cert):
        return "x509: certificate specifies an incompatible key usage"
    return None


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
            raise Untrusted(f"inconsistent OIDC issuer extension values: v1 {json.dumps(v1)}, v2 {json.dumps(v2)}")
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


def _emails(cert: x509.Certificate) -> list[str]:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(n) for n in names.get_values_for_type(x509.RFC822Name)]
