"""Containers' signature policy (``policy.json``, containers-policy.json(5)), as podman, skopeo and operator-controller
read it, held to when an image is pulled from a registry: which images may be pulled at all, and which only signed
by whom.

Why: an admin whose policy accepts some images only signed (RHEL's default for registry.redhat.io, a sigstore key
for an organisation's registry) expects every tool that pulls them to hold to it. What is read here is the file;
:mod:`.signatures` verifies the signatures the requirements ask for, as containers/image verifies them.

- The file: ``$CONTAINERS_POLICY_JSON`` when set; else ``$XDG_CONFIG_HOME/containers/policy.json`` (``~/.config``
  when the variable is not set) if it exists, else ``/etc/containers/policy.json``, else
  ``/usr/share/containers/policy.json`` (containers/image's ``DefaultPolicy``, through :mod:`.configfile`).
  Without any, every image is accepted, as operator-controller accepts it. A file that cannot be read or is not a
  policy refuses every pull, naming the file, as containers/image refuses (operator-controller would fall back to
  accepting everything: a silent downgrade cosctl does not make).
- The requirements of the ``docker`` transport's most specific scope apply: the reference itself
  (``name:tag`` or ``name@digest``), the repository, each parent namespace up to the registry, the registry's
  ``*.domain`` wildcards (port dropped); then the transport's ``""`` scope; then ``default``. Every requirement
  of the list must be met, as in containers/image.
- What the policy refuses without looking at signatures is refused before any request: ``reject``, and the
  requirements no containers tool can check (``signedBaseLayer``, which containers/image does not implement
  either; a ``signedBy`` of another ``keyType`` than ``GPGKeys``, likewise).

Pure functions over the file's text; the pull (:mod:`.pull`) asks before it sends any request.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .configfile import POLICY_JSON, ConfigFileError, config_files
from .imageref import ImageReference, parse_named, remapping_prefix_valid
from .model import BundleInputError
from .registries import read_bounded

POLICY_MAX_BYTES: Final = 1 << 20

ACCEPT: Final = "insecureAcceptAnything"
REJECT: Final = "reject"
SIGNED_BY: Final = "signedBy"
SIGSTORE_SIGNED: Final = "sigstoreSigned"
SIGNED_BASE_LAYER: Final = "signedBaseLayer"
SIGNATURE_TYPES: Final = (SIGNED_BY, SIGSTORE_SIGNED, SIGNED_BASE_LAYER)
_TYPES: Final = (ACCEPT, REJECT, *SIGNATURE_TYPES)
GPG_KEYS: Final = "GPGKeys"   # the one signedBy keyType containers/image implements

# signedIdentity: which identity a signature must claim (containers/image's PolicyReferenceMatch types)
MATCH_EXACT: Final = "matchExact"
MATCH_REPO_DIGEST_OR_EXACT: Final = "matchRepoDigestOrExact"
MATCH_REPOSITORY: Final = "matchRepository"
EXACT_REFERENCE: Final = "exactReference"
EXACT_REPOSITORY: Final = "exactRepository"
REMAP_IDENTITY: Final = "remapIdentity"
_IDENTITY_FIELDS: Final = {
    MATCH_EXACT: frozenset({"type"}),
    MATCH_REPO_DIGEST_OR_EXACT: frozenset({"type"}),
    MATCH_REPOSITORY: frozenset({"type"}),
    EXACT_REFERENCE: frozenset({"type", "dockerReference"}),
    EXACT_REPOSITORY: frozenset({"type", "dockerRepository"}),
    REMAP_IDENTITY: frozenset({"type", "prefix", "signedPrefix"}),
}


class PolicyError(BundleInputError):
    """The policy refuses the image, or the policy file cannot be used; names the file, the scope and the rule."""


@dataclass(frozen=True, slots=True)
class SignedIdentity:
    """A requirement's ``signedIdentity``: ``reference`` is exactReference's ``dockerReference`` or
    exactRepository's ``dockerRepository``; ``prefix`` and ``signed_prefix`` are remapIdentity's."""

    type: str = MATCH_REPO_DIGEST_OR_EXACT
    reference: str = ""
    prefix: str = ""
    signed_prefix: str = ""


@dataclass(frozen=True, slots=True)
class Fulcio:
    """A ``sigstoreSigned``'s ``fulcio``: the CA certificates (a file, or inline) and the identity the signing
    certificate must carry."""

    ca_path: str
    ca_data: bytes
    oidc_issuer: str
    subject_email: str


@dataclass(frozen=True, slots=True)
class Pki:
    """A ``sigstoreSigned``'s ``pki``: the CA roots (a file, or inline), trusted intermediates (optional, likewise),
    and the subject the signing certificate must name (an e-mail address, a hostname, or both). ``None`` data is
    data not given (JSON's absent or ``null``), unlike empty data."""

    roots_path: str = ""
    roots_data: bytes | None = None
    intermediates_path: str = ""
    intermediates_data: bytes | None = None
    subject_email: str = ""
    subject_hostname: str = ""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement of a scope. For ``signedBy`` and ``sigstoreSigned``: the keys (files named, or given inline,
    decoded from base64), the identity a signature must claim; for ``sigstoreSigned`` also ``fulcio`` (keyless
    signing certificates) or ``pki`` (certificates of the admin's own CA), and the Rekor public keys
    (``rekor_paths``, ``rekor_datas``) whose signed entry timestamp a signature must carry."""

    type: str
    key_type: str = ""
    key_paths: tuple[str, ...] = ()
    key_datas: tuple[bytes, ...] = ()
    identity: SignedIdentity = SignedIdentity()
    fulcio: Fulcio | None = None
    pki: Pki | None = None
    rekor_paths: tuple[str, ...] = ()
    rekor_datas: tuple[bytes, ...] = ()

    def unverifiable(self) -> str | None:
        """Why this requirement refuses every image before its signatures are looked at, or None."""
        if self.type == SIGNED_BASE_LAYER:
            return "signedBaseLayer, which containers/image does not implement either (signedBaseLayer not " \
                   "implemented yet!)"
        if self.type == SIGNED_BY and self.key_type != GPG_KEYS:
            return f'signedBy with keyType {self.key_type}, which containers/image does not implement either ' \
                   f'(Unimplemented "keyType" value "{self.key_type}")'
        return None


@dataclass(frozen=True, slots=True)
class Policy:
    """A policy file read: ``default`` and the ``docker`` transport's scopes, each a list of requirements."""

    path: Path
    default: tuple[Requirement, ...]
    docker: dict[str, tuple[Requirement, ...]]

    def requirements(self, reference: ImageReference) -> tuple[str, tuple[Requirement, ...]]:
        """The scope that applies to ``reference`` (as the message shows it) and its requirements."""
        for scope in scopes(reference):
            if scope in self.docker:
                return f'transports.docker "{scope}"', self.docker[scope]
        if "" in self.docker:
            return 'transports.docker ""', self.docker[""]
        return "default", self.default


@dataclass(frozen=True, slots=True)
class SignatureCheck:
    """What the policy asks of an image's signatures: the file, the scope that matched and its requirements (each
    ``signedBy`` or ``sigstoreSigned``; every one must accept one signature at least)."""

    path: Path
    scope: str
    requirements: tuple[Requirement, ...]

    def refusal(self, reference: ImageReference, reason: str) -> PolicyError:
        """The image refused, in containers/image's words (``reason``) after where the refusal comes from."""
        kinds = ", ".join(sorted({r.type for r in self.requirements}))
        return PolicyError(f"docker://{reference}: rejected by the signature policy {self.path} ({kinds}, scope "
                           f"{self.scope}): {reason}")


def scopes(reference: ImageReference) -> list[str]:
    """The ``docker`` scopes that may name ``reference``, most specific first (containers/image's
    ``PolicyConfigurationIdentity`` then ``PolicyConfigurationNamespaces``)."""
    identity = reference.name + (f"@{reference.digest}" if reference.digest else f":{reference.tag or 'latest'}")
    found = [identity]
    name = reference.name
    while True:
        found.append(name)
        if "/" not in name:
            break
        name = name.rsplit("/", 1)[0]
    host = name.split(":", 1)[0]
    while "." in host:
        host = host.split(".", 1)[1]
        found.append(f"*.{host}")
    return found


def policy_path(root: Path | None = None) -> Path | None:
    """The policy file containers/image v5.40 reads (:mod:`.configfile`): ``$CONTAINERS_POLICY_JSON`` when set (it
    must exist), else the first of the user's (``$XDG_CONFIG_HOME/containers``, else ``~/.config/containers``),
    ``/etc/containers``'s and ``/usr/share/containers``'s; None without any."""
    try:
        found = config_files(POLICY_JSON, root=root)
    except ConfigFileError as exc:
        raise PolicyError(f"signature policy {exc}") from None
    return found[0] if found else None


def read_policy(path: Path) -> Policy:
    """The policy in ``path``; :class:`PolicyError` naming the file when it cannot be read or is no policy."""
    data = read_bounded(path, POLICY_MAX_BYTES, lambda problem: PolicyError(f"signature policy {path}: {problem}"))
    try:
        # strictly as Go reads it: UTF-8 without a byte order mark, no NaN or Infinity, no key given twice
        text = data.decode("utf-8")
        if text.startswith("\ufeff"):
            raise ValueError("a byte order mark before the JSON")
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except _Duplicate as exc:
        raise PolicyError(f"signature policy {path}: the key {exc} is given twice: no image is pulled until it is "
                          "fixed, as podman and skopeo pull none") from None
    except RecursionError:
        raise PolicyError(f"signature policy {path}: not JSON (nested too deeply): no image is pulled until it is "
                          "fixed, as podman and skopeo pull none") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise PolicyError(f"signature policy {path}: not JSON ({_where(exc)}): no image is pulled until it is "
                          "fixed, as podman and skopeo pull none") from None
    return parse_policy(value, path)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Duplicate(Exception):
    """A key given twice in one object (containers/image refuses the file; JSON would keep the last)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, item in pairs:
        if key in seen:
            raise _Duplicate(repr(key))
        seen[key] = item
    return seen


def parse_policy(value: Any, path: Path) -> Policy:
    """A policy from its decoded JSON, as strictly as containers/image reads it: unknown fields, an empty or missing
    ``default`` and an unknown requirement type refuse the whole file."""
    def invalid(problem: str) -> PolicyError:
        return PolicyError(f"signature policy {path}: {problem}: no image is pulled until it is fixed, as podman "
                           "and skopeo pull none")

    if not isinstance(value, dict):
        raise invalid("not a JSON object")
    unknown = sorted(set(value) - {"default", "transports"})
    if unknown:
        raise invalid(f"unknown field {unknown[0]!r}")
    if "default" not in value:
        raise invalid('no "default" requirements')
    default = _requirements(value["default"], "default", invalid)
    transports = value.get("transports", {})
    if not isinstance(transports, dict):
        raise invalid('"transports" is not an object')
    docker: dict[str, tuple[Requirement, ...]] = {}
    for transport, scoped in transports.items():
        if not isinstance(scoped, dict):
            raise invalid(f"transports.{transport} is not an object")
        for scope, requirements in scoped.items():
            if problem := _scope_problem(transport, scope):
                raise invalid(f'transports.{transport} "{scope}": the scope {problem}')
            checked = _requirements(requirements, f'transports.{transport} "{scope}"', invalid)
            if transport == "docker":
                docker[scope] = checked
    return Policy(path, default, docker)


def _requirements(value: Any, where: str, invalid: Callable[[str], PolicyError]) -> tuple[Requirement, ...]:
    if not isinstance(value, list) or not value:
        raise invalid(f"{where}: not a non-empty list of requirements")
    found = []
    for item in value:
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str) or kind not in _TYPES:
            raise invalid(f"{where}: unknown requirement type {kind!r}" if isinstance(kind, str)
                          else f"{where}: a requirement without a type")
        assert isinstance(item, dict) and isinstance(kind, str)
        try:
            found.append(_requirement(kind, item))
        except _Invalid as exc:
            raise invalid(f"{where}: a {kind} requirement {exc}") from None
    return tuple(found)


class _Invalid(Exception):
    """Why containers/image refuses a requirement (and with it the whole file)."""


# The fields each requirement type may have, and the key sources of which exactly one must be given (containers/
# image's UnmarshalJSON of each type).
_FIELDS: Final = {
    ACCEPT: frozenset({"type"}),
    REJECT: frozenset({"type"}),
    SIGNED_BY: frozenset({"type", "keyType", "keyPath", "keyPaths", "keyData", "signedIdentity"}),
    SIGSTORE_SIGNED: frozenset({"type", "keyPath", "keyPaths", "keyData", "keyDatas", "fulcio", "rekorPublicKeyPath",
                                "rekorPublicKeyPaths", "rekorPublicKeyData", "rekorPublicKeyDatas", "pki",
                                "signedIdentity"}),
    SIGNED_BASE_LAYER: frozenset({"type", "baseLayerIdentity"}),
}
_KEY_SOURCES: Final = {
    SIGNED_BY: ("keyPath", "keyPaths", "keyData"),
    SIGSTORE_SIGNED: ("keyPath", "keyPaths", "keyData", "keyDatas", "fulcio", "pki"),
}
_KEY_TYPES: Final = (GPG_KEYS, "signedByGPGKeys", "X509Certificates", "signedByX509CAs")
_REKOR: Final = ("rekorPublicKeyPath", "rekorPublicKeyPaths", "rekorPublicKeyData", "rekorPublicKeyDatas")


def _requirement(kind: str, item: dict[str, Any]) -> Requirement:
    """``item`` read as containers/image reads a requirement of type ``kind``; :class:`_Invalid` says why not."""
    if extra := sorted(set(item) - _FIELDS[kind]):
        raise _Invalid(f"has an unknown field {extra[0]!r}")
    if kind == SIGNED_BASE_LAYER:
        if not isinstance(item.get("baseLayerIdentity"), dict):
            raise _Invalid("needs baseLayerIdentity")
        _identity(item["baseLayerIdentity"])   # read as strictly as a signedIdentity, as containers/image reads it
        return Requirement(kind)
    if kind not in _KEY_SOURCES:
        return Requirement(kind)
    if kind == SIGNED_BY and item.get("keyType") not in _KEY_TYPES:
        raise _Invalid(f"needs keyType, one of {', '.join(_KEY_TYPES)}")
    # a source counts when its Go value is not the zero one: a keyPath not "", a list or data not null (an empty
    # keyData is data: no key, refused when a signature is checked); signedBy takes an empty keyPaths (its keyring
    # then holds no key: "No public keys imported"), sigstoreSigned refuses it. signedBy also wants exactly one of
    # its sources written at all, whatever its value.
    sources = _KEY_SOURCES[kind]
    for key in ("fulcio", "pki"):   # Go's decoder hands a null to their UnmarshalJSON, which wants an object
        if key in sources and key in item and item[key] is None:
            raise _Invalid(f"has a {key} that is not an object")
    if kind == SIGNED_BY and len([key for key in sources if key in item]) != 1:
        raise _Invalid(f"needs exactly one of {', '.join(sources)}")
    given = [key for key in sources if key in item and item[key] is not None and (key != "keyPath" or item[key])]
    if len(given) != 1:
        raise _Invalid(f"needs exactly one of {', '.join(sources)}")
    paths: tuple[str, ...] = ()
    datas: tuple[bytes, ...] = ()
    source = given[0]
    if source == "keyPath":
        paths = (_text(item["keyPath"], "keyPath"),)
    elif source == "keyPaths":
        paths = tuple(_text(p, "keyPaths") for p in _entries(item["keyPaths"], "keyPaths", empty=kind == SIGNED_BY))
    elif source == "keyData":
        datas = (_base64(item["keyData"], "keyData"),)
    elif source == "keyDatas":
        datas = tuple(_base64(d, "keyDatas") for d in _entries(item["keyDatas"], "keyDatas"))
    # a Rekor key source counts when given at all but an empty path (Go's zero string): an empty list or data is
    # then refused or finds no key, never taken for no Rekor
    rekor = [key for key in _REKOR
             if item.get(key) is not None and not (key == "rekorPublicKeyPath" and item[key] == "")]
    if len(rekor) > 1:
        raise _Invalid(f"has more than one of {', '.join(_REKOR)}")
    if source == "fulcio" and not rekor:
        raise _Invalid(f"has fulcio without one of {', '.join(_REKOR)}")
    if source == "pki" and rekor:
        raise _Invalid(f"has pki with {rekor[0]}, which pki does not take")
    rekor_paths: tuple[str, ...] = ()
    rekor_datas: tuple[bytes, ...] = ()
    if rekor == ["rekorPublicKeyPath"]:
        rekor_paths = (_text(item["rekorPublicKeyPath"], "rekorPublicKeyPath"),)
    elif rekor == ["rekorPublicKeyPaths"]:
        rekor_paths = tuple(_text(p, "rekorPublicKeyPaths") for p in _entries(item["rekorPublicKeyPaths"],
                                                                              "rekorPublicKeyPaths"))
    elif rekor == ["rekorPublicKeyData"]:
        rekor_datas = (_base64(item["rekorPublicKeyData"], "rekorPublicKeyData"),)
    elif rekor == ["rekorPublicKeyDatas"]:
        rekor_datas = tuple(_base64(d, "rekorPublicKeyDatas") for d in _entries(item["rekorPublicKeyDatas"],
                                                                                "rekorPublicKeyDatas"))
    identity = _identity(item["signedIdentity"]) if "signedIdentity" in item else SignedIdentity()
    return Requirement(kind, str(item.get("keyType", "")), paths, datas, identity,
                       fulcio=_fulcio(item["fulcio"]) if source == "fulcio" else None,
                       pki=_pki(item["pki"]) if source == "pki" else None,
                       rekor_paths=rekor_paths, rekor_datas=rekor_datas)


_FULCIO_FIELDS: Final = frozenset({"caPath", "caData", "oidcIssuer", "subjectEmail"})


def _fulcio(value: Any) -> Fulcio:
    """A ``fulcio`` object as containers/image's prSigstoreSignedFulcio reads it."""
    if not isinstance(value, dict):
        raise _Invalid("has a fulcio that is not an object")
    if extra := sorted(set(value) - _FULCIO_FIELDS):
        raise _Invalid(f"has a fulcio with an unknown field {extra[0]!r}")
    path = _text(value.get("caPath", ""), "fulcio.caPath")
    data = _base64(value.get("caData", ""), "fulcio.caData")
    if path and "caData" in value:
        raise _Invalid("has a fulcio with both caPath and caData")
    if not path and "caData" not in value:
        raise _Invalid("has a fulcio with neither caPath nor caData")
    issuer = _text(value.get("oidcIssuer", ""), "fulcio.oidcIssuer")
    email = _text(value.get("subjectEmail", ""), "fulcio.subjectEmail")
    if not issuer:
        raise _Invalid("has a fulcio without oidcIssuer")
    if not email:
        raise _Invalid("has a fulcio without subjectEmail")
    return Fulcio(path, data, issuer, email)


_PKI_FIELDS: Final = frozenset({"caRootsPath", "caRootsData", "caIntermediatesPath", "caIntermediatesData",
                                "subjectEmail", "subjectHostname"})


def _pki(value: Any) -> Pki:
    """A ``pki`` object as containers/image's prSigstoreSignedPKI reads it: ``null`` is as good as absent, as Go's
    JSON decoder leaves a field alone for it; data given empty is data (no certificate in it, refused on use)."""
    if not isinstance(value, dict):
        raise _Invalid("has a pki that is not an object")
    if extra := sorted(set(value) - _PKI_FIELDS):
        raise _Invalid(f"has a pki with an unknown field {extra[0]!r}")

    def text(field: str) -> str:
        return "" if value.get(field) is None else _text(value[field], f"pki.{field}")

    def data(field: str) -> bytes | None:
        return None if value.get(field) is None else _base64(value[field], f"pki.{field}")

    pki = Pki(text("caRootsPath"), data("caRootsData"), text("caIntermediatesPath"), data("caIntermediatesData"),
              text("subjectEmail"), text("subjectHostname"))
    if pki.roots_path and pki.roots_data is not None:
        raise _Invalid("has a pki with both caRootsPath and caRootsData")
    if not pki.roots_path and pki.roots_data is None:
        raise _Invalid("has a pki with neither caRootsPath nor caRootsData")
    if pki.intermediates_path and pki.intermediates_data is not None:
        raise _Invalid("has a pki with both caIntermediatesPath and caIntermediatesData")
    if not pki.subject_email and not pki.subject_hostname:
        raise _Invalid("has a pki with neither subjectEmail nor subjectHostname")
    return pki


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"has a {field} that is not a string")
    return value


def _entries(value: Any, field: str, *, empty: bool = False) -> list[Any]:
    if not isinstance(value, list) or not (value or empty):
        raise _Invalid(f"has a {field} that is not a non-empty list")
    return value


def _base64(value: Any, field: str) -> bytes:
    """A ``[]byte`` field of Go's JSON: standard base64 with padding, or (as Go's decoder also takes it) an array
    of numbers from 0 to 255."""
    if isinstance(value, list):
        if not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in value):
            raise _Invalid(f"has a {field} array that is not of bytes (0 to 255)")
        return bytes(value)
    try:   # Go's decoder skips line breaks
        return base64.b64decode(_text(value, field).replace("\r", "").replace("\n", ""), validate=True)
    except binascii.Error:
        raise _Invalid(f"has a {field} that is not base64") from None


def _identity(value: Any) -> SignedIdentity:
    """A ``signedIdentity`` as containers/image's newPolicyReferenceMatchFromJSON reads it."""
    kind = value.get("type") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(kind, str) or kind not in _IDENTITY_FIELDS:
        raise _Invalid(f"has an unknown signedIdentity type {kind!r}" if isinstance(kind, str)
                       else "has a signedIdentity without a type")
    assert isinstance(kind, str)
    if extra := sorted(set(value) - _IDENTITY_FIELDS[kind]):
        raise _Invalid(f"has a signedIdentity with an unknown field {extra[0]!r}")
    if kind == EXACT_REFERENCE:
        reference = _text(value.get("dockerReference"), "signedIdentity.dockerReference")
        parsed = parse_named(reference)
        if parsed is None:
            raise _Invalid(f"has an invalid signedIdentity.dockerReference {reference!r}")
        if parsed.tag is None and parsed.digest is None:
            raise _Invalid(f"has a signedIdentity.dockerReference {reference!r} with neither a tag nor a digest")
        return SignedIdentity(kind, reference)
    if kind == EXACT_REPOSITORY:
        repository = _text(value.get("dockerRepository"), "signedIdentity.dockerRepository")
        if parse_named(repository) is None:
            raise _Invalid(f"has an invalid signedIdentity.dockerRepository {repository!r}")
        return SignedIdentity(kind, repository)
    if kind == REMAP_IDENTITY:
        prefix = _text(value.get("prefix"), "signedIdentity.prefix")
        signed = _text(value.get("signedPrefix"), "signedIdentity.signedPrefix")
        for shown in (prefix, signed):
            if not remapping_prefix_valid(shown):
                raise _Invalid(f"has a signedIdentity prefix {shown!r} that is not valid")
        return SignedIdentity(kind, prefix=prefix, signed_prefix=signed)
    return SignedIdentity(kind)


# Transports whose scopes are paths: containers/image refuses a scope that is not absolute and clean; and those
# that take no scope but "" (each transport's ValidatePolicyConfigurationScope, as skopeo and podman register them;
# containers-storage, docker-daemon, atomic and ostree scopes are not checked).
_PATH_TRANSPORTS: Final = ("dir", "oci", "oci-archive", "sif")
_NO_SCOPE_TRANSPORTS: Final = ("docker-archive", "tarball")


def _scope_problem(transport: str, scope: str) -> str | None:
    if transport in _PATH_TRANSPORTS and scope and (not scope.startswith("/")
                                                     or posixpath.normpath(scope) != scope):
        return "is not an absolute, clean path"
    if transport in _NO_SCOPE_TRANSPORTS and scope:
        return f'is not "" (the only scope {transport} takes)'
    return None


def _where(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno} column {exc.colno}: {exc.msg}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    return str(exc)


def check_policy(reference: ImageReference, path: Path | None = None) -> SignatureCheck | None:
    """What the machine's policy (``path``, default the one containers/image reads) asks before ``reference`` is
    pulled: None when it accepts the image as it is (or there is no policy file), else the signatures to verify.
    Refuses (:class:`PolicyError`) what it rejects outright or asks for in a way cosctl cannot check."""
    path = path if path is not None else policy_path()
    if path is None:
        return None
    policy = read_policy(path)
    scope, requirements = policy.requirements(reference)
    if any(r.type == REJECT for r in requirements):
        raise PolicyError(f"docker://{reference}: the signature policy {path} rejects it (scope {scope}: reject)")
    for requirement in requirements:
        if why := requirement.unverifiable():
            raise PolicyError(
                f"docker://{reference}: the signature policy {path} accepts it only with signatures cosctl cannot "
                f"check (scope {scope}: {why}): podman and skopeo refuse it as well; give the image's scope a "
                "requirement containers/image implements")
    signed = tuple(r for r in requirements if r.type in SIGNATURE_TYPES)
    return SignatureCheck(path, scope, signed) if signed else None
