"""Where an image's signatures are kept (containers-registries.d(5)), as podman and skopeo read it: the
*lookaside* storage of simple signatures, and whether sigstore signatures are looked for as attachments.

Why: a policy that asks for signatures (:mod:`.policy`) is only as good as the place they are read from; an admin
configures that place once, for every containers tool, in ``registries.d`` (RHEL ships
``registry.redhat.io.yaml`` naming Red Hat's lookaside server). cosctl reads the same files.

- The files: every ``*.yaml`` of ``/usr/share/containers/registries.d``, ``/etc/containers/registries.d`` (each
  followed by its ``registries.rootful.d`` for root, or ``registries.rootless.d`` and ``registries.rootless.d/<uid>``
  for another user) and the user's ``$XDG_CONFIG_HOME/containers/registries.d`` (else ``~/.config/...``), a file of
  a later directory replacing the one of the same name in an earlier one (containers/image's drop-in reading, as
  operator-controller builds it; releases up to 5.36 read the user's directory alone when it exists, a subset of
  this). ``default-docker``
  may appear in one file only, and each ``docker`` namespace in one file only, as containers/image refuses
  otherwise (naming both files). Each file is decoded as containers/image decodes it, with yaml.v3 into its
  structs (:mod:`.goyaml`: YAML 1.1's ``yes``/``y`` for booleans, any scalar's text for a URL, a key given twice
  refused, only the first document read).
- For an image, the most specific ``docker`` namespace that sets it wins (the reference, the repository, its
  parent namespaces, the registry, ``*.domain`` wildcards: the policy's scopes), then ``default-docker``;
  ``lookaside`` (or its old name ``sigstore``) is the storage's base URL, ``use-sigstore-attachments`` whether
  ``sha256-<digest>.sig`` attachments are read. Without a lookaside, the built-in local one
  (``file:///var/lib/containers/sigstore``, or ``~/.local/share/containers/sigstore`` for another user than root).
- A signature's URL: ``<base>/<repository path>@<algorithm>=<hex>/signature-<n>``, n from 1 until one is missing.

Pure functions over the files; the pull (:mod:`.pull`) fetches what they name.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import yaml

from . import goyaml
from .configfile import REGISTRIES_D, ConfigFileError, drop_in_files, home_dir, search_paths
from .gourl import go_url_host
from .imageref import ImageReference
from .model import BundleInputError
from .policy import scopes
from .registries import read_bounded

ROOT_LOOKASIDE: Final = "file:///var/lib/containers/sigstore"
USER_LOOKASIDE: Final = Path(".local/share/containers/sigstore")
FILE_MAX_BYTES: Final = 1 << 20
MAX_SIGNATURES: Final = 128   # containers/image's maxLookasideSignatures: more is taken for a server error


class RegistriesDError(BundleInputError):
    """A registries.d file that cannot be read or used; names the file."""


@dataclass(frozen=True, slots=True)
class _Namespace:
    lookaside: str = ""
    attachments: bool | None = None


@dataclass(frozen=True, slots=True)
class SignatureStorage:
    """Where the signatures of one image are: the lookaside base URL (with the repository's path appended) and
    whether sigstore attachments are read."""

    lookaside: str
    attachments: bool

    def url(self, digest: str, index: int) -> str:
        """The URL of the ``index``-th signature (from 0) of the manifest ``digest``: appended to the base URL's
        path, its query kept after it (url.URL.Path as containers/image extends it)."""
        algorithm, _, hexdigest = digest.partition(":")
        parts = urllib.parse.urlsplit(self.lookaside)
        path = f"{parts.path}@{algorithm}={hexdigest}/signature-{index + 1}"
        return urllib.parse.urlunsplit(parts._replace(path=path))


@dataclass(slots=True)
class RegistriesD:
    """The merged configuration of a registries.d directory."""

    default: _Namespace | None = None
    docker: dict[str, _Namespace] = field(default_factory=dict)

    def storage(self, reference: ImageReference) -> SignatureStorage:
        """Where the signatures of ``reference`` (as pulled: a mirror's own name) are kept."""
        candidates = [self.docker[s] for s in scopes(reference) if s in self.docker]
        if self.default is not None:
            candidates.append(self.default)
        base = next((c.lookaside for c in candidates if c.lookaside), "") or _builtin_lookaside()
        attachments = next((c.attachments for c in candidates if c.attachments is not None), False)
        # the repository's path appended as containers/image appends it: url.Parse, Path + "/" + repository (the
        # path unescaped), String() (the path escaped again, as Go escapes a path)
        _host, problem = go_url_host(base)
        if problem:
            raise RegistriesDError(f"registries.d: Invalid signature storage URL {base}: {problem}")
        parts = urllib.parse.urlsplit(base)
        path = _go_path_escape(urllib.parse.unquote_to_bytes(parts.path) + b"/" + reference.repository.encode())
        return SignatureStorage(urllib.parse.urlunsplit(parts._replace(path=path)), attachments)


_PATH_SAFE: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~$&+,/:;=@")


def _go_path_escape(path: bytes) -> str:
    """Go's url escape of a path (``encodePath``): what is neither unreserved nor a reserved character a path may
    hold is %XX, upper-case; so an escaped slash in a lookaside URL is a slash again, as containers/image builds
    the URL."""
    return "".join(chr(b) if b in _PATH_SAFE else f"%{b:02X}" for b in path)


def _builtin_lookaside() -> str:
    if os.geteuid() == 0:
        return ROOT_LOOKASIDE
    return "file://" + str(home_dir() / USER_LOOKASIDE)


def registries_d_dirs(uid: int | None = None, root: Path | None = None) -> list[Path]:
    """The directories read, the lowest priority first (:mod:`.configfile`'s drop-ins of ``registries``): under
    ``/usr/share/containers`` then ``/etc/containers``, ``registries.d``, then ``registries.rootful.d`` for root or
    ``registries.rootless.d`` and its ``<uid>`` subdirectory for another user; the user's directory last."""
    return list(reversed(search_paths(REGISTRIES_D, root=root, uid=uid).drop_in_dirs))


def read_registries_d(*directories: Path) -> RegistriesD:
    """The configuration of ``directories`` (default :func:`registries_d_dirs`), none for those that do not
    exist; a file name of a later directory replaces the earlier one's."""
    try:
        files = drop_in_files(tuple(reversed(directories or registries_d_dirs())), ".yaml")
    except ConfigFileError as exc:
        raise RegistriesDError(f"registries.d: {exc}") from None
    merged = RegistriesD()
    default_from: Path | None = None
    namespace_from: dict[str, Path] = {}
    for path in files:
        default, docker = _read_file(path)
        if default is not None:
            if default_from is not None:
                raise RegistriesDError(f'registries.d: "default-docker" is defined both in {default_from} and '
                                       f"{path} (as podman and skopeo refuse it)")
            merged.default, default_from = default, path
        for name, namespace in docker.items():
            if name in namespace_from:
                raise RegistriesDError(f'registries.d: the "docker" namespace {name!r} is defined both in '
                                       f"{namespace_from[name]} and {path} (as podman and skopeo refuse it)")
            merged.docker[name], namespace_from[name] = namespace, path
    return merged


def _read_file(path: Path) -> tuple[_Namespace | None, dict[str, _Namespace]]:
    """One file as containers/image decodes it (yaml.v3 into its registryConfiguration struct: :mod:`.goyaml`):
    ``default-docker`` (None when absent or null) and the ``docker`` namespaces (a null one is there, empty)."""
    data = read_bounded(path, FILE_MAX_BYTES, lambda problem: RegistriesDError(f"registries.d {path}: {problem}"))
    try:
        node = goyaml.first_document(data)
    except RecursionError:
        raise RegistriesDError(f"registries.d {path}: not YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        raise RegistriesDError(f"registries.d {path}: not YAML: {exc}") from None
    try:
        return _decode(node)
    except RecursionError:   # a mapping merged into itself through an alias (Go: "... value contains itself")
        raise RegistriesDError(f"registries.d {path}: an alias refers to a mapping that holds it") from None
    except goyaml.GoYAMLError as exc:
        raise RegistriesDError(f"registries.d {path}: {exc}") from None


def _decode(node: yaml.Node | None) -> tuple[_Namespace | None, dict[str, _Namespace]]:
    top = goyaml.struct_fields(node, ("default-docker", "docker"), "the file", "registryConfiguration") \
        if node is not None else None
    if top is None:
        return None, {}
    default = _namespace(top["default-docker"], "default-docker") if "default-docker" in top else None
    entries = goyaml.map_entries(top["docker"], "docker", "map[string]registryNamespace") if "docker" in top else None
    return default, {name: _namespace(entry, f"docker {name!r}") or _Namespace() for name, entry in entries or []}


_FIELDS: Final = ("lookaside", "lookaside-staging", "sigstore", "sigstore-staging", "use-sigstore-attachments")


def _namespace(node: yaml.Node, where: str) -> _Namespace | None:
    """A registryNamespace (None when null); the staging URLs are type-checked as Go does, and not used."""
    fields = goyaml.struct_fields(node, _FIELDS, where, "registryNamespace")
    if fields is None:
        return None
    text = {key: goyaml.string(fields[key], f"{where}: {key}") or "" for key in _FIELDS[:4] if key in fields}
    attachments = goyaml.boolean(fields["use-sigstore-attachments"], f"{where}: use-sigstore-attachments") \
        if "use-sigstore-attachments" in fields else None
    return _Namespace(text.get("lookaside") or text.get("sigstore", ""), attachments)
