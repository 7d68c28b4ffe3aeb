"""X.509 certificate chains as Go's crypto/x509 (1.26) verifies them, for the signing certificates of sigstore
signatures (:mod:`.sigstore`): PEM read as ``encoding/pem`` reads it, certificates parsed whole as Go parses them,
chains built as ``Certificate.Verify`` builds them (signatures, CA rights, validity at a given time, critical
extensions, extended key usage, path lengths, name constraints through :mod:`.x509names`).

Why: containers/image verifies certificates with Go's crypto/x509; a certificate podman refuses must be refused here,
and one it accepts accepted. Messages are Go's where it has words for the case. Pure functions over bytes and
``cryptography`` certificates; ``cryptography`` does the cryptography.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID

from .x509names import GO_NAMES, certificate_name_problem, extension_value, name_problem
from .x509policies import policies_valid, policy_extensions_problem

MAX_SIGNATURE_CHECKS: Final = 100   # Go's maxChainSignatureChecks: a chain search costs no more than this


# Extensions Go's x509 understands: a critical one outside these (and SAN, always handled) fails verification.
_HANDLED: Final = frozenset({ExtensionOID.KEY_USAGE, ExtensionOID.BASIC_CONSTRAINTS,
                             ExtensionOID.SUBJECT_ALTERNATIVE_NAME, ExtensionOID.EXTENDED_KEY_USAGE,
                             ExtensionOID.NAME_CONSTRAINTS, ExtensionOID.CERTIFICATE_POLICIES,
                             ExtensionOID.AUTHORITY_KEY_IDENTIFIER, ExtensionOID.SUBJECT_KEY_IDENTIFIER,
                             ExtensionOID.CRL_DISTRIBUTION_POINTS, ExtensionOID.AUTHORITY_INFORMATION_ACCESS,
                             ExtensionOID.POLICY_CONSTRAINTS, ExtensionOID.POLICY_MAPPINGS,
                             ExtensionOID.INHIBIT_ANY_POLICY})


# Extensions Go refuses to parse when marked critical
_NEVER_CRITICAL: Final = {ExtensionOID.SUBJECT_KEY_IDENTIFIER: "subject key identifier",
                          ExtensionOID.AUTHORITY_KEY_IDENTIFIER: "authority key identifier",
                          ExtensionOID.AUTHORITY_INFORMATION_ACCESS: "authority info access"}


_SPACE: Final = b" \t\n\v\f\r"   # what bytes.TrimSpace trims (sigstore's UnmarshalCertificatesFromPEM trims first)


class Untrusted(Exception):
    """Why the SET or the certificate is not accepted (containers/image's InvalidSignatureError text)."""


@dataclass(frozen=True, slots=True)
class PemBlock:
    """A PEM block as Go's encoding/pem decodes it: its label, headers and DER content."""

    label: str
    headers: dict[bytes, bytes]
    der: bytes


_PEM_START: Final = b"\n-----BEGIN "


_PEM_END: Final = b"\n-----END "


_PEM_EOL: Final = b"-----"
_STRICT_BASE64: Final = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _line_at(data: bytes, at: int) -> tuple[bytes, int]:
    """Go's pem getLine on ``data[at:]``: the line (its CR and trailing blanks dropped) and the bytes consumed."""
    i = data.find(b"\n", at)
    if i < 0:
        i = j = len(data)
    else:
        j = i + 1
        if i > at and data[i - 1] == 0x0D:
            i -= 1
    return data[at:i].rstrip(b" \t"), j - at


def pem_decode(data: bytes) -> tuple[PemBlock | None, bytes]:
    """Go 1.26's pem.Decode: the first block of ``data`` and what follows its END line, or (None, ``data``)."""
    block, after = _pem_decode_at(data, 0)
    return block, data[after:] if block is not None else data


def _pem_decode_at(data: bytes, at: int) -> tuple[PemBlock | None, int]:
    """Go 1.26's pem.Decode on ``data[at:]``, by offsets (a hostile input costs linear time): the first block (found
    from the first END line back to the last BEGIN line before it) and the offset after its END line; a block that
    does not decode (a BEGIN line not starting a line, labels that differ, text after the END line, bad base64) is
    skipped for the next one; (None, ``at``) without any. Offsets named as in Go are relative to ``rest``."""
    rest = at
    end_trailer_index = 0
    while True:
        if end_trailer_index < 0 or end_trailer_index > len(data) - rest:
            return None, at
        rest += end_trailer_index
        found = data.find(_PEM_END, rest)
        if found < 0:
            return None, at
        end_index = found - rest
        end_trailer_index = end_index + len(_PEM_END)
        begin = data.rfind(_PEM_START[1:], rest, rest + end_index)
        if begin < 0 or (begin > rest and data[begin - 1] != 0x0A):
            continue
        skip = begin - rest + len(_PEM_START) - 1
        rest, end_index, end_trailer_index = rest + skip, end_index - skip, end_trailer_index - skip
        type_line, consumed = _line_at(data, rest)
        rest, end_index, end_trailer_index = rest + consumed, end_index - consumed, end_trailer_index - consumed
        if not type_line.endswith(_PEM_EOL):
            continue
        type_line = type_line[:-len(_PEM_EOL)]
        headers: dict[bytes, bytes] = {}
        while True:
            if rest >= len(data):
                return None, at
            line, consumed = _line_at(data, rest)
            key, colon, value = line.partition(b":")
            if not colon:
                break
            headers[key.strip(_SPACE)] = value.strip(_SPACE)
            rest, end_index, end_trailer_index = rest + consumed, end_index - consumed, end_trailer_index - consumed
        if (headers and end_index < 0) or end_trailer_index < 0:
            continue
        trailer_at = rest + end_trailer_index
        trailer_length = len(type_line) + len(_PEM_EOL)
        if len(data) - trailer_at < trailer_length:
            continue
        end_trailer = data[trailer_at:trailer_at + trailer_length]
        if not end_trailer.startswith(type_line) or not end_trailer.endswith(_PEM_EOL):
            continue
        if _line_at(data, trailer_at + trailer_length)[0]:
            continue
        der = b""
        if end_index > 0:
            encoded = data[rest:rest + end_index].translate(None, b" \t\r\n")   # Go's decoder skips CR and LF
            if not _STRICT_BASE64.fullmatch(encoded):   # Go takes padding only at the very end
                continue
            try:
                der = base64.b64decode(encoded, validate=True)
            except binascii.Error:
                continue
        end_line = rest + end_index + len(_PEM_END) - 1
        return PemBlock(type_line.decode("latin-1"), headers, der), end_line + _line_at(data, end_line)[1]


def _pem_certificates(data: bytes, what: str, *, skip_bad: bool = False) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle, as sigstore's UnmarshalCertificatesFromPEM reads it (anything left
    that is no PEM block is an error), or as Go's AppendCertsFromPEM (``skip_bad``: blocks that are no certificate,
    or carry headers, skipped). Each certificate is parsed whole now, so a malformed one is refused here, not met
    later."""
    found: list[x509.Certificate] = []
    at = 0
    while at < len(data):
        block, at = _pem_decode_at(data, at)
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
    problem = key_problem(cert.public_key()) or certificate_name_problem(cert) or policy_extensions_problem(cert)
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


def load_roots(data: bytes) -> list[x509.Certificate]:
    """The CA certificates of a policy, Fulcio's or a PKI's (Go's AppendCertsFromPEM: a block that is no
    certificate skipped)."""
    return _pem_certificates(data, "CA certificates", skip_bad=True)


def load_intermediates(data: bytes) -> list[x509.Certificate]:
    """A PKI's trusted intermediates, read as sigstore's UnmarshalCertificatesFromPEM reads them (anything that is
    not a certificate refuses)."""
    return _pem_certificates(data.strip(_SPACE), "loading trusted intermediate certificates")


def chain_intermediates(chain_pem: bytes) -> list[x509.Certificate]:
    """The intermediates a signature's ``dev.sigstore.cosign/chain`` offers: all its certificates but the last (the
    root, which only the policy may name)."""
    if not chain_pem:
        return []
    return _pem_certificates(chain_pem.strip(_SPACE), "loading certificate chain")[:-1]


def parse_leaf(leaf_pem: bytes) -> x509.Certificate:
    """The one certificate of a signature's ``dev.sigstore.cosign/certificate`` (containers/image's
    parseLeafCertFromPEM)."""
    leaves = _pem_certificates(leaf_pem.strip(_SPACE), "parsing leaf certificate")
    if not leaves:
        raise Untrusted("no certificate found in signature certificate data")
    if len(leaves) > 1:
        raise Untrusted("unexpected multiple certificates present in signature certificate data")
    return leaves[0]


def _valid_at(cert: x509.Certificate, when: datetime.datetime) -> bool:
    return cert.not_valid_before_utc <= when <= cert.not_valid_after_utc


def _path_length(cert: x509.Certificate) -> int | None:
    constraints = extension_value(cert, x509.BasicConstraints)
    return None if constraints is None else constraints.path_length


def _unhandled_critical(cert: x509.Certificate) -> bool:
    """Go's UnhandledCriticalExtensions: a critical extension it does not know, a critical SAN holding no name of a
    type it understands, and critical name constraints holding a name type it does not understand."""
    for ext in cert.extensions:
        if not ext.critical:
            continue
        if ext.oid not in _HANDLED:
            return True
        value = ext.value
        if isinstance(value, x509.SubjectAlternativeName) and not any(isinstance(n, GO_NAMES) for n in value):
            return True
        if isinstance(value, x509.NameConstraints) and any(
                not isinstance(n, GO_NAMES) for n in [*(value.permitted_subtrees or ()),
                                                       *(value.excluded_subtrees or ())]):
            return True
    return False


def _allows_code_signing(cert: x509.Certificate) -> bool:
    """Go's EKU rule: no extension allows any use; else code signing or anyExtendedKeyUsage must be listed."""
    usages = extension_value(cert, x509.ExtendedKeyUsage)
    if usages is None:
        return True
    return ExtendedKeyUsageOID.CODE_SIGNING in usages or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usages


def _is_ca(cert: x509.Certificate) -> bool:
    constraints = extension_value(cert, x509.BasicConstraints)
    return constraints is not None and constraints.ca


def _may_sign_certificates(parent: x509.Certificate) -> bool:
    """Go's CheckSignatureFrom before the signature: a version 3 certificate signs others only with basic
    constraints saying CA (a version 1 certificate may), and only if its key usage, when it has one, allows
    certificate signing."""
    constraints = extension_value(parent, x509.BasicConstraints)
    if (parent.version == x509.Version.v3 and constraints is None) or (constraints is not None and not constraints.ca):
        return False
    usage = extension_value(parent, x509.KeyUsage)
    if usage is None:
        return True
    bits = (usage.digital_signature, usage.content_commitment, usage.key_encipherment, usage.data_encipherment,
            usage.key_agreement, usage.key_cert_sign, usage.crl_sign,
            usage.key_agreement and usage.encipher_only, usage.key_agreement and usage.decipher_only)
    return usage.key_cert_sign or not any(bits)


def chain_problem(leaf: x509.Certificate, intermediates: Sequence[x509.Certificate],
                   roots: Sequence[x509.Certificate], when: datetime.datetime, clock: str) -> str | None:
    """None when ``leaf`` chains to a root as Go's x509.Verify (ExtKeyUsageCodeSigning, CurrentTime ``when``, which
    messages call ``clock``) requires: every certificate valid then, no critical extension it does not handle, code
    signing allowed by each one's extended key usage (the root's too), issuers allowed to sign certificates (basic
    constraints and key usage; an intermediate a CA) within their path length, names within their constraints,
    certificate policies that hold (:mod:`.x509policies`); a leaf that is itself one of the roots is its own
    chain; else why not (the reason of the closest chain, else an unknown authority). As in Go, a certificate is used
    once per chain and the search stops after :data:`MAX_SIGNATURE_CHECKS` signature checks."""
    if problem := _certificate_problem(leaf, when, clock):
        return problem
    der = {id(c): c.public_bytes(serialization.Encoding.DER) for c in [*intermediates, *roots, leaf]}
    root_der = {der[id(r)] for r in roots}
    if der[id(leaf)] in root_der:
        return None
    reasons: list[str] = []
    checks = 0
    limited = False

    def issued(child: x509.Certificate, parent: x509.Certificate) -> bool:
        nonlocal checks, limited
        if parent.subject != child.issuer:
            return False
        if checks >= MAX_SIGNATURE_CHECKS:
            limited = True
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
        problem = _certificate_problem(parent, when, clock) or name_problem(parent, path)
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
                if policies_valid([*path, root]):
                    return True
                reasons.append("x509: no valid chains built: 1 candidate chains with invalid policies")
        on_path = {der[id(c)] for c in path}
        for candidate in intermediates:
            mine = der[id(candidate)]
            if mine in root_der or mine in on_path:
                continue
            if issued(cert, candidate) and acceptable(candidate, path, root=False) and walk([*path, candidate]):
                return True
        return False

    if walk([leaf]):
        return None
    if limited:   # Go gives up with this error, whatever it met before
        return "x509: signature check attempts limit reached while verifying certificate chain"
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
