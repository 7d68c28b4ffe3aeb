"""Containers' signature policy (``policy.json``, containers-policy.json(5)), as podman, skopeo and operator-controller
read it, held to before an image is pulled from a registry: which images may be pulled at all, and which only signed.

Why: an admin whose policy accepts some images only signed (RHEL's default for registry.redhat.io, a sigstore key
for an organisation's registry) expects every tool that pulls them to hold to it. cosctl verifies no signatures, so
it never pulls an image the policy accepts only signed: it refuses, naming the policy file, the scope that matched
and how to get the image verified (a copy made by skopeo, which verifies, into an OCI layout cosctl reads). An image
whose requirements are all ``insecureAcceptAnything`` is pulled; ``reject`` refuses it.

- The file: ``$HOME/.config/containers/policy.json`` if it exists, else ``/etc/containers/policy.json``
  (containers/image's ``DefaultPolicy``). Without either, every image is accepted, as operator-controller accepts
  it. A file that cannot be read or is not a policy refuses every pull, naming the file, as containers/image
  refuses (operator-controller would fall back to accepting everything: a silent downgrade cosctl does not make).
- The requirements of the ``docker`` transport's most specific scope apply: the reference itself
  (``name:tag`` or ``name@digest``), the repository, each parent namespace up to the registry, the registry's
  ``*.domain`` wildcards (port dropped); then the transport's ``""`` scope; then ``default``. Every requirement
  of the list must be met, as in containers/image.

Pure functions over the file's text; the pull (:mod:`.pull`) asks before it sends any request.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .imageref import ImageReference
from .model import BundleInputError
from .registries import home

SYSTEM_POLICY: Final = Path("/etc/containers/policy.json")
USER_POLICY: Final = Path(".config/containers/policy.json")  # below $HOME (not XDG_CONFIG_HOME), as containers/image
POLICY_MAX_BYTES: Final = 1 << 20

ACCEPT: Final = "insecureAcceptAnything"
REJECT: Final = "reject"
# What only a signature (or a base image's identity) can satisfy: cosctl checks none.
SIGNATURE_TYPES: Final = ("signedBy", "sigstoreSigned", "signedBaseLayer")
_TYPES: Final = (ACCEPT, REJECT, *SIGNATURE_TYPES)


class PolicyError(BundleInputError):
    """The policy refuses the image, or the policy file cannot be used; names the file, the scope and the rule."""


@dataclass(frozen=True, slots=True)
class Policy:
    """A policy file read: ``default`` and the ``docker`` transport's scopes, each a list of requirement types."""

    path: Path
    default: tuple[str, ...]
    docker: dict[str, tuple[str, ...]]

    def requirements(self, reference: ImageReference) -> tuple[str, tuple[str, ...]]:
        """The scope that applies to ``reference`` (as the message shows it) and its requirement types."""
        for scope in scopes(reference):
            if scope in self.docker:
                return f'transports.docker "{scope}"', self.docker[scope]
        if "" in self.docker:
            return 'transports.docker ""', self.docker[""]
        return "default", self.default


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


def policy_path(home_dir: Path, system: Path = SYSTEM_POLICY) -> Path | None:
    """The policy file containers/image reads: the user's if it exists, else the system's; None without either."""
    user = home_dir / USER_POLICY
    if user.exists():
        return user
    return system if system.exists() else None


def read_policy(path: Path) -> Policy:
    """The policy in ``path``; :class:`PolicyError` naming the file when it cannot be read or is no policy."""
    try:
        with path.open("rb") as handle:
            data = handle.read(POLICY_MAX_BYTES + 1)
    except OSError as exc:
        raise PolicyError(f"signature policy {path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > POLICY_MAX_BYTES:
        raise PolicyError(f"signature policy {path}: more than {POLICY_MAX_BYTES} bytes")
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
    docker: dict[str, tuple[str, ...]] = {}
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


def _requirements(value: Any, where: str, invalid: Callable[[str], PolicyError]) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise invalid(f"{where}: not a non-empty list of requirements")
    types = []
    for requirement in value:
        kind = requirement.get("type") if isinstance(requirement, dict) else None
        if kind not in _TYPES:
            raise invalid(f"{where}: unknown requirement type {kind!r}" if isinstance(kind, str)
                          else f"{where}: a requirement without a type")
        if problem := _requirement_problem(str(kind), requirement):
            raise invalid(f"{where}: a {kind} requirement {problem}")
        types.append(str(kind))
    return tuple(types)


# The fields each requirement type may have, and the key sources of which exactly one must be given (containers/
# image's UnmarshalJSON of each type). Nested objects (signedIdentity, fulcio, pki) are not checked further: a
# requirement that asks for signatures refuses the image anyway.
_FIELDS: Final = {
    ACCEPT: frozenset({"type"}),
    REJECT: frozenset({"type"}),
    "signedBy": frozenset({"type", "keyType", "keyPath", "keyPaths", "keyData", "signedIdentity"}),
    "sigstoreSigned": frozenset({"type", "keyPath", "keyPaths", "keyData", "keyDatas", "fulcio", "rekorPublicKeyPath",
                                 "rekorPublicKeyPaths", "rekorPublicKeyData", "rekorPublicKeyDatas", "pki",
                                 "signedIdentity"}),
    "signedBaseLayer": frozenset({"type", "baseLayerIdentity"}),
}
_KEY_SOURCES: Final = {
    "signedBy": ("keyPath", "keyPaths", "keyData"),
    "sigstoreSigned": ("keyPath", "keyPaths", "keyData", "keyDatas", "fulcio", "pki"),
}
_KEY_TYPES: Final = ("GPGKeys", "signedByGPGKeys", "X509Certificates", "signedByX509CAs")


def _requirement_problem(kind: str, requirement: dict[str, Any]) -> str | None:
    """Why containers/image would refuse this requirement (and with it the whole file), or None."""
    if extra := sorted(set(requirement) - _FIELDS[kind]):
        return f"has an unknown field {extra[0]!r}"
    if kind == "signedBy" and requirement.get("keyType") not in _KEY_TYPES:
        return f"needs keyType, one of {', '.join(_KEY_TYPES)}"
    if kind == "signedBaseLayer" and not isinstance(requirement.get("baseLayerIdentity"), dict):
        return "needs baseLayerIdentity"
    sources = _KEY_SOURCES.get(kind, ())
    if sources and sum(1 for key in sources if key in requirement) != 1:
        return f"needs exactly one of {', '.join(sources)}"
    return None


# Transports whose scopes are paths: containers/image refuses a scope that is not absolute and clean.
_PATH_TRANSPORTS: Final = ("dir", "oci", "oci-archive")


def _scope_problem(transport: str, scope: str) -> str | None:
    if transport in _PATH_TRANSPORTS and scope and (not scope.startswith("/")
                                                     or posixpath.normpath(scope) != scope):
        return "is not an absolute, clean path"
    return None


def _where(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno} column {exc.colno}: {exc.msg}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    return str(exc)


def check_policy(reference: ImageReference, path: Path | None = None) -> None:
    """Refuse (:class:`PolicyError`) pulling ``reference`` when the machine's policy (``path``, default the one
    containers/image reads) rejects it or accepts it only with signatures; nothing without a policy file."""
    path = path if path is not None else policy_path(home())
    if path is None:
        return
    policy = read_policy(path)
    scope, requirements = policy.requirements(reference)
    if REJECT in requirements:
        raise PolicyError(f"docker://{reference}: the signature policy {path} rejects it (scope {scope}: reject)")
    needed = sorted({r for r in requirements if r in SIGNATURE_TYPES})
    if needed:
        raise PolicyError(
            f"docker://{reference}: the signature policy {path} accepts it only with signatures ({', '.join(needed)}, "
            f"scope {scope}), and cosctl verifies none: copy it with a tool that does (skopeo copy "
            f"docker://{reference} oci:DIR) and give cosctl the layout DIR")
