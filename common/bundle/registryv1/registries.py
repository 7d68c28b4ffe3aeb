"""Where an image comes from and with which credentials and certificates: the containers configuration podman,
skopeo, CRI-O and OLM v1's operator-controller read (containers/image), so a machine set up for them pulls the
same way here, with nothing to configure twice.

- ``registries.conf``, found as containers/image v5.40 finds it (:mod:`.configfile`: the first of the user's,
  ``/etc``'s and ``/usr/share``'s file, or ``$CONTAINERS_REGISTRIES_CONF`` alone; the ``registries.conf.d`` drop-ins
  of all three, rootful or rootless ones included, in name order; ``$CONTAINERS_REGISTRIES_CONF_OVERRIDE`` last),
  a later file's ``[[registry]]`` replacing an earlier file's of the same prefix (within a file, the first
  wins): per registry or repository prefix, ``location`` (where it really is), ``insecure`` (plain HTTP, or TLS
  without verification), ``blocked``, and ``[[registry.mirror]]`` (tried first, in order, each with its
  ``pull-from-mirror``: ``all``, ``digest-only``, ``tag-only``; or all by the registry's
  ``mirror-by-digest-only``). Entries are checked and matched as containers/image v5.40's sysregistriesv2 checks
  and matches them: the longest matching prefix wins, a wildcard ``*.example.com`` (its subdomains) as long as any
  other; ``blocked`` is checked on each place tried, under the name it is tried with, so a blocked source with
  mirrors is pulled from its mirrors only (OpenShift's ``NeverContactSource``). What v5.40 refuses is refused,
  naming the file: the version 1 format (``[registries.search]``, ``.insecure``, ``.block``), and wrong
  short-name settings (``short-name-mode``, ``unqualified-search-registries``, ``[aliases]``), although cosctl
  never resolves short names (a ``docker://`` name is always qualified). Keys are matched to settings as
  BurntSushi/toml matches Go struct fields: exactly, else equal but for case (``Location``, ``[[Registry]]``).
- certificates: the first ``HOST[:PORT]`` directory of the ``certs.d`` drop-in directories (:mod:`.configfile`: the
  user's, ``/etc/containers``'s, ``/usr/share/containers``'s) or of ``/etc/docker/certs.d``: ``*.crt`` files are
  trusted CAs (beside the system's), a ``NAME.cert`` with its ``NAME.key`` is a client certificate.
- credentials, as containers/image v5.40 looks them up: from each of registries.conf's ``credential-helpers`` in
  turn (default: the auth files alone; ``containers-auth.json`` names them among external helpers, which are asked
  ``docker-credential-NAME get`` for the registry). The auth files: ``$REGISTRY_AUTH_FILE`` alone when set; else
  ``$XDG_RUNTIME_DIR/containers/auth.json`` (``/run/containers/<uid>/auth.json`` without the variable),
  ``~/.config/containers/auth.json``, ``$DOCKER_CONFIG/config.json`` (else ``~/.docker/config.json``) and
  ``~/.dockercfg``; the first file that has an entry for the repository, a namespace of it, or its registry
  (``auth`` or ``username``/``password``, and an ``identitytoken`` beside ``auth``); ``credHelpers`` and
  ``credsStore`` run ``docker-credential-NAME get``, as docker does (user ``<token>``: an identity token; a helper
  with nothing for the registry passes to the next file). Credentials are never printed: messages name where
  they came from, never their content.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import tomli

from common.bundle.registryv1.configfile import (
    ADMIN_DIR,
    CERTS_D,
    REGISTRIES_CONF,
    ConfigFileError,
    config_files,
    home_dir,
    search_paths,
    user_config_dir,
)
from common.bundle.registryv1.gotext import go_decoded_string, go_fold, go_quote
from common.bundle.registryv1.imageref import DOCKER_HUB, DOMAIN_COMPONENT, ImageReference, parse_reference
from common.bundle.registryv1.model import BundleInputError

PULL_FROM_MIRROR: Final = ("all", "digest-only", "tag-only")
DOCKER_HUB_AUTH_KEY: Final = "https://index.docker.io/v1/"  # how docker login writes Docker Hub's entry
CREDENTIAL_HELPER_TIMEOUT: Final = 60.0  # seconds; a helper may ask a keychain
AUTH_FILE_HELPER: Final = "containers-auth.json"   # registries.conf's name for the auth files among the helpers
PER_UID_AUTH: Final = "/run/containers/{uid}/auth.json"   # podman login's file without $XDG_RUNTIME_DIR


class RegistryConfigError(BundleInputError):
    """A containers configuration file that cannot be read or means nothing usable; names the file."""


class CredentialsError(BundleInputError):
    """Credentials that exist but cannot be used (a malformed entry, a helper that fails); names where they are,
    never what they are."""


def read_bounded(path: Path, limit: int, fail: Callable[[str], Exception]) -> bytes:
    """A configuration file's bytes, at most ``limit``; ``fail`` builds the error (naming the file) for one that
    cannot be read or is larger."""
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise fail(f"more than {limit} bytes")
    return data


def _config_home() -> Path:
    """Where auth.json is looked for (``$XDG_CONFIG_HOME``, else ``~/.config``), as containers/image looks."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or home_dir() / ".config")


# --- registries.conf -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One place to try: ``name`` (``host[:port]/repository``) there, over TLS unless ``insecure``; ``blocked_by``
    says which registries.conf entry forbids pulling from that name (``PREFIX is blocked in FILE``: the attempt
    fails, the next is tried)."""

    name: str
    insecure: bool
    mirror: bool = False
    blocked_by: str = ""


@dataclass(frozen=True, slots=True)
class _Mirror:
    location: str
    insecure: bool
    pull_from_mirror: str   # "" (all), "all", "digest-only" or "tag-only"


@dataclass(frozen=True, slots=True)
class _Registry:
    prefix: str
    location: str   # "" only beside a wildcard prefix: the name stays as it is
    insecure: bool = False
    blocked: bool = False
    mirrors: tuple[_Mirror, ...] = ()
    source: str = ""
    mirror_by_digest_only: bool = False


@dataclass(slots=True)
class RegistriesConf:
    """What the registries.conf files say, by prefix."""

    registries: dict[str, _Registry] = field(default_factory=dict)
    # where credentials are looked for, in order: AUTH_FILE_HELPER (the auth files) or a docker-credential-NAME
    credential_helpers: tuple[str, ...] = (AUTH_FILE_HELPER,)

    def endpoints(self, reference: ImageReference) -> list[Endpoint]:
        """Where to pull ``reference`` from, in order, as containers/image v5.40 derives them
        (``PullSourcesFromReference``): the mirrors that serve it (by its digest or tag), then its registry, each
        rewritten from the entry's prefix to its location; each marked blocked when the entry that matches the
        rewritten name says ``blocked`` (as containers/image checks each attempt). Raises
        :class:`RegistryConfigError` when a rewritten name is no image reference."""
        full = str(reference)
        entry = self.find(reference.name)
        sources: list[tuple[str, bool, bool]] = []   # (rewritten reference, insecure, mirror)
        if entry is None:
            sources.append((full, False, False))
        else:
            digested = reference.digest is not None
            for mirror in entry.mirrors:
                wanted = "digest-only" if entry.mirror_by_digest_only else mirror.pull_from_mirror
                if (wanted == "digest-only" and not digested) or (wanted == "tag-only" and digested):
                    continue
                sources.append((_rewritten(full, entry, mirror.location), mirror.insecure, True))
            sources.append((_rewritten(full, entry, entry.location), entry.insecure, False))
        found = []
        for text, insecure, from_mirror in sources:
            try:
                physical = parse_reference(text, default_tag=False)
            except BundleInputError as exc:
                raise RegistryConfigError(f"{reference}: registries.conf rewrites it to {text!r}, which is no image "
                                          f"reference: {exc}") from None
            if str(physical) != text:   # containers/image's ParseNamed takes canonical names only
                raise RegistryConfigError(f"{reference}: registries.conf rewrites it to {text!r}, which is no "
                                          f"canonical image reference (it would be {str(physical)!r})")
            blocker = self.find(physical.name)
            found.append(Endpoint(physical.name, insecure, from_mirror,
                                  f"{blocker.prefix} is blocked in {blocker.source}" if blocker and blocker.blocked
                                  else ""))
        return found

    def find(self, name: str) -> _Registry | None:
        """The entry for ``name`` (``host[:port]/repository``): the longest matching prefix, the first in prefix
        order among equally long ones (containers/image's ``FindRegistry``: a wildcard is not outranked by an
        exact prefix of its length)."""
        best: _Registry | None = None
        for prefix in sorted(self.registries):
            if _matching_prefix(name, prefix) >= 0 and (best is None or len(prefix) > len(best.prefix)):
                best = self.registries[prefix]
        return best


def _matching_prefix(ref: str, prefix: str) -> int:
    """How much of ``ref`` (a name, or a reference with its tag or digest) ``prefix`` matches, or -1
    (containers/image's ``refMatchingPrefix``, with its quirks: ``example.com`` matches ``example.com:5000/...``;
    ``*.example.com`` is looked for once, at its first occurrence, before the first slash)."""
    if prefix.startswith("*."):
        index = ref.find(prefix[1:])
        if index < 0 or "/" in ref[:index]:
            return -1
        index += len(prefix) - 1
        return index if index == len(ref) or ref[index] in ":/@" else -1
    if len(ref) < len(prefix) or not ref.startswith(prefix):
        return -1
    return len(prefix) if len(ref) == len(prefix) or ref[len(prefix)] in ":/@" else -1


def _rewritten(full: str, entry: _Registry, location: str) -> str:
    """``full`` (the reference with its tag or digest) with the entry's prefix replaced by ``location``; a
    wildcard entry without a location leaves it as it is."""
    if not location:
        return full
    return location + full[_matching_prefix(full, entry.prefix):]


def conf_files(root: Path | None = None) -> list[Path]:
    """The registries.conf files containers/image v5.40 reads, in order (:mod:`.configfile`): the first of the
    user's, ``/etc``'s and ``/usr/share``'s file (or ``$CONTAINERS_REGISTRIES_CONF`` alone, without drop-ins), the
    ``registries.conf.d`` drop-ins of all three, ``$CONTAINERS_REGISTRIES_CONF_OVERRIDE`` last."""
    try:
        return config_files(REGISTRIES_CONF, root=root)
    except ConfigFileError as exc:
        raise RegistryConfigError(str(exc)) from None


def _field(table: dict[str, Any], name: str, default: Any = None) -> Any:
    """The value of the struct field ``name`` in a TOML ``table`` as BurntSushi/toml (containers/image's decoder)
    finds it: the key written exactly, else a key equal to it but for case (strings.EqualFold: ``Location``,
    ``INSECURE``). Where both are written Go takes either, by its map order; cosctl takes the exact one."""
    if name in table:
        return table[name]
    folded = go_fold(name)
    return next((value for key, value in table.items() if go_fold(key) == folded), default)


def _bool(value: Any, where: str) -> bool:
    """A TOML boolean, or the refusal naming ``where`` (Go's decoder refuses another type)."""
    if not isinstance(value, bool):
        raise RegistryConfigError(f"{where}: must be true or false")
    return value


def _str(value: Any, where: str) -> str:
    """A TOML string, or the refusal naming ``where``."""
    if not isinstance(value, str):
        raise RegistryConfigError(f"{where}: must be a string")
    return value


def _location(value: str, where: str) -> str:
    """A location or prefix as containers/image's ``parseLocation`` takes it: trailing slashes dropped, no
    ``http://`` or ``https://``."""
    trimmed = value.rstrip("/")
    if trimmed.startswith(("http://", "https://")):
        raise RegistryConfigError(f"{where}: {value!r}: a location has no scheme (write host[:port][/path])")
    return trimmed


def _read_conf(path: Path, conf: RegistriesConf) -> None:
    """One registries.conf file into ``conf``, checked as containers/image v5.40 checks it (postProcessRegistries):
    a later file's entry replaces an earlier file's of the same prefix; within a file, the first wins."""
    try:   # TOML 1.1, as BurntSushi/toml reads it (tomllib reads 1.0); a byte order mark is skipped, as there
        document = tomli.loads(path.read_text(encoding="utf-8").removeprefix("\ufeff"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryConfigError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except tomli.TOMLDecodeError as exc:
        raise RegistryConfigError(f"{path}: not valid TOML: {exc}") from None
    helpers = _field(document, "credential-helpers")
    if helpers is not None:   # a later file's list replaces an earlier one's; [] is the default
        if not isinstance(helpers, list) or not all(isinstance(h, str) and h for h in helpers):
            raise RegistryConfigError(f"{path}: credential-helpers must be a list of helper names")
        conf.credential_helpers = tuple(helpers) or (AUTH_FILE_HELPER,)
    _refuse_v1(_field(document, "registries"), path)
    if not isinstance(_field(document, "additional-layer-store-auth-helper", ""), str):   # decoded, so type-checked
        raise RegistryConfigError(f"{path}: additional-layer-store-auth-helper must be a string")
    _check_short_names(document, path)
    entries = _field(document, "registry", [])
    if not isinstance(entries, list):
        raise RegistryConfigError(f"{path}: [[registry]] must be an array of tables")
    read: dict[str, _Registry] = {}
    by_location: dict[str, list[_Registry]] = {}
    for position, entry in enumerate(entries):
        registry = _registry(entry, f"{path}: [[registry]] #{position + 1}", str(path))
        by_location.setdefault(registry.location or registry.prefix, []).append(registry)
        read.setdefault(registry.prefix, registry)   # the first of a prefix wins, as in containers/image
    for location, same in by_location.items():
        for setting in ("insecure", "blocked"):
            if len({getattr(r, setting) for r in same}) > 1:
                raise RegistryConfigError(f"{path}: registry {location!r} is defined several times with conflicting "
                                          f"{setting!r} settings")
    conf.registries.update(read)


# containers/image's fork of reference.DomainRegexp: no bracketed IPv6 address, unlike imageref's
_DOMAIN: Final = re.compile(rf"{DOMAIN_COMPONENT}(?:\.{DOMAIN_COMPONENT})*(?::[0-9]+)?")
SHORT_NAME_MODES: Final = ("disabled", "enforcing", "permissive")


def _refuse_v1(v1: Any, path: Path) -> None:
    """containers/image v5.40 refuses the version 1 format (``[registries.search]``, ``.insecure``, ``.block``)
    outright; so does cosctl, saying how to write it now."""
    if v1 is None:
        return
    if not isinstance(v1, dict):
        raise RegistryConfigError(f"{path}: registries must be a table")
    for table in ("search", "insecure", "block"):
        listed = _field(v1, table)
        if listed is None:
            continue
        if not isinstance(listed, dict) or not isinstance(_field(listed, "registries", []), list):
            raise RegistryConfigError(f"{path}: [registries.{table}] must be a table with a list of registries")
        if _field(listed, "registries") is not None:
            raise RegistryConfigError(
                f"{path}: registries.conf must be in v2 format but is in v1 ([registries.{table}]), which "
                "containers/image v5.40 (OLM v1 v1.11, podman 5.7) refuses: write a [[registry]] table per registry "
                "instead (location, insecure = true, blocked = true; unqualified-search-registries for search), "
                "see containers-registries.conf(5)")


def _check_short_names(document: dict[str, Any], path: Path) -> None:
    """What containers/image checks of the settings for short names, which cosctl does not use (``docker://``
    names are never short) but which make every podman pull fail when wrong."""
    mode = _field(document, "short-name-mode", "")
    if not isinstance(mode, str):
        raise RegistryConfigError(f"{path}: short-name-mode must be a string")
    if mode and mode not in SHORT_NAME_MODES:
        raise RegistryConfigError(f"{path}: invalid short-name mode: {go_quote(mode)}")
    search = _field(document, "unqualified-search-registries", [])
    if not isinstance(search, list) or not all(isinstance(r, str) for r in search):
        raise RegistryConfigError(f"{path}: unqualified-search-registries must be a list of registries")
    for registry in search:
        if not _DOMAIN.fullmatch(_location(registry, str(path))):
            raise RegistryConfigError(f"{path}: Invalid unqualified-search-registries entry "
                                      f"{go_quote(registry.rstrip('/'))}")
    aliases = _field(document, "aliases", {})
    if not isinstance(aliases, dict) or not all(isinstance(v, str) for v in aliases.values()):
        raise RegistryConfigError(f"{path}: [aliases] must be a table of strings")
    for name, value in aliases.items():
        if problem := _alias_problem(name, value):
            raise RegistryConfigError(f"{path}: {problem}")


def _alias_problem(name: str, value: str) -> str:
    """Why containers/image refuses the alias ``name = value``: a short name is a repository without a registry,
    tag or digest; an alias (unless empty, which resets one) names its registry and repository, no tag or digest."""
    for text, what in ((name, "short name"), (value, "alias")):
        if what == "alias" and not value:
            break
        try:
            parsed = parse_reference(text, default_tag=False)
        except BundleInputError:
            return f"cannot parse {what}: {go_quote(text)}: invalid reference format"
        first, slash, _ = text.partition("/")
        registry = first if slash and _DOMAIN.fullmatch(first) else ""
        qualified = "." in registry or ":" in registry or registry == "localhost"
        if parsed.digest is not None:
            return f"invalid {what} {go_quote(text)}: must not contain digest"
        if parsed.tag is not None:
            return f"invalid {what} {go_quote(text)}: must not contain tag"
        if what == "short name" and qualified:
            return f"invalid short name {go_quote(text)}: must not contain registry"
        if what == "alias" and not qualified:
            return f"invalid alias {go_quote(text)}: must contain registry and repository"
    return ""


def _registry(entry: Any, where: str, source: str) -> _Registry:
    if not isinstance(entry, dict):
        raise RegistryConfigError(f"{where}: not a table")
    location = _location(_str(_field(entry, "location", ""), f"{where} location"), where)
    prefix = _location(_str(_field(entry, "prefix", ""), f"{where} prefix"), where)
    wildcard = prefix.startswith("*.")
    if not prefix:
        if not location:
            raise RegistryConfigError(f"{where}: neither prefix nor location")
        prefix = location
    elif not wildcard and not location:
        raise RegistryConfigError(f"{where}: prefix {prefix!r} without a location (only a wildcard prefix, "
                                  "*.example.com, may go without one)")
    if wildcard and any(c in prefix for c in "/@:"):
        raise RegistryConfigError(f"{where}: wildcard prefix {prefix!r} is not of the form *.example.com")
    if _str(_field(entry, "pull-from-mirror", ""), f"{where} pull-from-mirror"):
        raise RegistryConfigError(f"{where}: pull-from-mirror is a mirror's setting, not a registry's")
    by_digest = _bool(_field(entry, "mirror-by-digest-only", False), f"{where} mirror-by-digest-only")
    mirrors = []
    listed = _field(entry, "mirror", [])
    if not isinstance(listed, list):
        raise RegistryConfigError(f"{where} mirror: must be an array of tables")
    for index, mirror in enumerate(listed):
        at = f"{where} mirror #{index + 1}"
        if not isinstance(mirror, dict):
            raise RegistryConfigError(f"{at}: not a table")
        mirror_location = _location(_str(_field(mirror, "location", ""), f"{at} location"), at)
        if not mirror_location:
            raise RegistryConfigError(f"{at}: no location")
        how = _str(_field(mirror, "pull-from-mirror", ""), f"{at} pull-from-mirror")
        if how and by_digest:
            raise RegistryConfigError(f"{at}: pull-from-mirror cannot be set with the registry's "
                                      "mirror-by-digest-only")
        if how and how not in PULL_FROM_MIRROR:
            raise RegistryConfigError(f"{at} pull-from-mirror: {how!r} (one of {', '.join(PULL_FROM_MIRROR)})")
        mirrors.append(_Mirror(mirror_location, _bool(_field(mirror, "insecure", False), f"{at} insecure"), how))
    return _Registry(prefix, location, _bool(_field(entry, "insecure", False), f"{where} insecure"),
                     _bool(_field(entry, "blocked", False), f"{where} blocked"), tuple(mirrors), source, by_digest)


def registries_conf() -> RegistriesConf:
    """The registries.conf files of this machine, read (none: every registry as named, over verified TLS)."""
    conf = RegistriesConf()
    for path in conf_files():
        _read_conf(path, conf)
    return conf


# --- certificates -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Certificates:
    """The extra CA files and client certificate pairs for one host, and the directory they came from."""

    directory: str | None = None
    ca_files: tuple[str, ...] = ()
    client_pairs: tuple[tuple[str, str], ...] = ()


DOCKER_CERTS_D: Final = "/etc/docker/certs.d"


def cert_dirs(root: Path | None = None) -> tuple[Path, ...]:
    """Where a host's ``certs.d`` directory is looked for, the first that has one winning: the ``certs.d`` drop-in
    directories of :mod:`.configfile` (the user's, ``/etc/containers``'s rootful or rootless ones and its own, the
    same under ``/usr/share/containers``), then docker's ``/etc/docker/certs.d``."""
    docker = Path(DOCKER_CERTS_D) if root is None else root / DOCKER_CERTS_D.lstrip("/")
    return (*search_paths(CERTS_D, root=root).drop_in_dirs, docker)


def usual_cert_dirs() -> tuple[Path, ...]:
    """The three places people put a registry's CA (the user's, ``/etc/containers``'s and docker's ``certs.d``):
    what a message suggests, rather than all of :func:`cert_dirs`."""
    return (user_config_dir() / "certs.d", Path(ADMIN_DIR) / "certs.d", Path(DOCKER_CERTS_D))


def certificates(host: str, root: Path | None = None) -> Certificates:
    """What ``certs.d`` holds for ``host`` (``host[:port]``), from the first directory that has it, as
    containers/image v5.40 reads it: a ``*.crt`` is a CA; a ``NAME.cert`` needs its ``NAME.key`` and a ``NAME.key``
    its ``NAME.cert``. A directory that cannot be searched for lack of permission is passed over, as there."""
    for base in cert_dirs(root):
        directory = base / host
        try:
            os.stat(directory)
        except (FileNotFoundError, PermissionError):   # not there, or not searchable: the next place
            continue
        except OSError as exc:
            raise RegistryConfigError(f"{directory}: cannot read: {exc.strerror or exc}") from None
        try:
            names = sorted(os.listdir(directory))
        except (FileNotFoundError, PermissionError):
            return Certificates(str(directory))
        except OSError as exc:
            raise RegistryConfigError(f"{directory}: cannot read: {exc.strerror or exc}") from None
        pairs = []
        for name in names:
            if name.endswith(".cert") and f"{name[:-5]}.key" not in names:
                raise RegistryConfigError(f"{directory / name}: a client certificate without its key "
                                          f"{name[:-5]}.key (a CA certificate's name ends in .crt)")
            if name.endswith(".key") and f"{name[:-4]}.cert" not in names:
                raise RegistryConfigError(f"{directory / name}: a client key without its certificate "
                                          f"{name[:-4]}.cert")
            if name.endswith(".cert"):
                pairs.append((str(directory / name), str(directory / f"{name[:-5]}.key")))
        cas = tuple(str(directory / name) for name in names if name.endswith(".crt"))
        return Certificates(str(directory), cas, tuple(pairs))
    return Certificates()


# --- credentials ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Credentials:
    """A user name and password (or token) for one registry, and where they were found (for messages); or an
    identity token (an OAuth2 refresh token, which ``az acr login`` and some ``docker login`` flows write), which
    only a registry's token service takes, exchanged for a pull token as containers/image exchanges it."""

    username: str
    password: str = field(repr=False)
    source: str
    identity_token: str | None = field(default=None, repr=False)

    def basic(self) -> str:
        """The value of an ``Authorization: Basic`` header."""
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


@dataclass(frozen=True, slots=True)
class AuthFile:
    """One file credentials are read from; ``legacy``: docker's old ``~/.dockercfg``, the entries at the top."""

    path: Path
    legacy: bool = False


def auth_files() -> list[AuthFile]:
    """The auth files containers/image v5.40 reads, in order: ``$REGISTRY_AUTH_FILE`` alone when it is set (podman
    and skopeo read no other then); else podman login's ``$XDG_RUNTIME_DIR/containers/auth.json`` (or
    ``/run/containers/<uid>/auth.json`` without the variable; none when the variable names a missing directory),
    ``$XDG_CONFIG_HOME/containers/auth.json`` (``~/.config``), docker's ``$DOCKER_CONFIG/config.json``
    (``~/.docker``) and ``~/.dockercfg``."""
    named = os.environ.get("REGISTRY_AUTH_FILE")
    if named:
        return [AuthFile(Path(named))]
    files = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if not runtime:
        files.append(AuthFile(Path(PER_UID_AUTH.format(uid=os.getuid()))))
    elif _not_missing(Path(runtime)):
        files.append(AuthFile(Path(runtime) / "containers" / "auth.json"))
    files.append(AuthFile(_config_home() / "containers" / "auth.json"))
    docker = os.environ.get("DOCKER_CONFIG")
    files.append(AuthFile(Path(docker) / "config.json" if docker else home_dir() / ".docker" / "config.json"))
    files.append(AuthFile(home_dir() / ".dockercfg", legacy=True))
    return files


def _not_missing(path: Path) -> bool:
    """False only when ``path`` does not exist (a directory that cannot be searched is there: reading below it
    fails, naming the file)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def credential_sources(helpers: tuple[str, ...] = (AUTH_FILE_HELPER,)) -> str:
    """Where credentials were looked for, for a message: the auth files and the registries.conf helpers."""
    return ", ".join(", ".join(str(f.path) for f in auth_files()) if helper == AUTH_FILE_HELPER
                     else f"the credential helper docker-credential-{helper}" for helper in helpers)


def _normalised(key: str, legacy: bool = False) -> str:
    """An auth file key as containers/image compares it with a registry when no key matches exactly: without
    ``http://`` or ``https://`` (and then, or in ``~/.dockercfg``, without a path); Docker Hub's names one."""
    stripped = key.removeprefix("http://").removeprefix("https://")
    if legacy or stripped != key:
        stripped = stripped.split("/", 1)[0]
    return _hub(stripped)


def _hub(registry: str) -> str:
    """Docker Hub's names as one (containers/image's ``normalizeRegistry``)."""
    return "index.docker.io" if registry in ("registry-1.docker.io", DOCKER_HUB) else registry


def _keys(reference: ImageReference) -> Iterator[str]:
    """The keys that may hold ``reference``'s credentials, most specific first: the repository, each namespace
    above it, the registry."""
    parts = reference.repository.split("/")
    for end in range(len(parts), 0, -1):
        yield f"{reference.registry}/{'/'.join(parts[:end])}"
    yield reference.registry


def credentials(reference: ImageReference,
                helpers: tuple[str, ...] = (AUTH_FILE_HELPER,)) -> Credentials | None:
    """The credentials the containers tools would use for ``reference``, or ``None`` (anonymous): from each of
    registries.conf's ``credential-helpers`` in turn (default: the auth files alone), the first that has some. A
    helper that fails does not stop the others; when none has credentials, the failures are the answer."""
    failures: list[str] = []
    for helper in helpers:
        try:
            if helper == AUTH_FILE_HELPER:
                found = _from_auth_files(reference)
            else:
                found = _from_helper(helper, reference, f"registries.conf credential-helpers ({helper})")
        except CredentialsError as exc:
            failures.append(str(exc))
            continue
        if found is not None:
            return found
    if failures:
        raise CredentialsError("; ".join(failures))
    return None


def _from_auth_files(reference: ImageReference) -> Credentials | None:
    for auth in auth_files():
        if (found := _from_auth_file(auth, reference)) is not None:
            return found
    return None


def _from_auth_file(auth: AuthFile, reference: ImageReference) -> Credentials | None:
    """What one auth file holds for ``reference``, as containers/image reads it: the ``credHelpers`` helper of the
    registry (one without credentials for it: the next file is read); else the ``auths`` entry of the repository,
    a namespace above it or the registry, the most specific first (in ``~/.dockercfg``, the registry's), else one
    whose key names the registry as a URL; then, as docker does, a ``credsStore``."""
    path = auth.path
    document = _auth_document(path, auth.legacy)   # ~/.dockercfg: the entries at the top
    if document is None:
        return None
    auths = document["auths"]
    registry = reference.registry
    helpers = document.get("credHelpers", {})
    if registry in helpers:
        return _from_helper(helpers[registry], reference, f"{path} (credHelpers {registry})")
    key = next((k for k in ([registry] if auth.legacy else _keys(reference)) if k in auths), None)
    if key is None:
        key = next((k for k in auths if _normalised(k, auth.legacy) == _hub(registry)), None)
    if key is not None and (found := _from_entry(auths[key], f"{path} (auths {key})")) is not None:
        return found
    store = document.get("credsStore")   # docker's; an empty entry above is docker login's mark for it
    if store:
        return _from_helper(store, reference, f"{path} (credsStore)", missing_ok=True,
                            server=DOCKER_HUB_AUTH_KEY if registry == DOCKER_HUB else registry)
    return None


def _auth_document(path: Path, legacy: bool = False) -> dict[str, Any] | None:
    """The auth file at ``path`` as containers/image decodes it with encoding/json (None when it does not exist):
    ``auths`` and ``credHelpers`` (their keys matched as Go matches struct fields: exactly, else equal but for
    case), each entry's ``auth`` and ``identitytoken`` likewise; a key given twice adds to (a map) or replaces (a
    string) what came before, ``null`` empties a map; a value of the wrong type refuses the file whole, naming it
    (never its content). Docker's ``credsStore`` and an entry's ``username``/``password`` are kept beside them."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CredentialsError(f"{path}: cannot read: {exc.strerror or type(exc).__name__}") from None
    try:   # Go's decoder puts U+FFFD for bytes that are not UTF-8 (and for lone surrogate escapes), refuses NaN
        document = json.loads(data.decode("utf-8", "replace"), object_pairs_hook=_json_object,
                              parse_constant=_no_constant)
    except ValueError:
        raise CredentialsError(f"{path}: not valid JSON") from None
    if document is None:
        return {"auths": {}}
    if not isinstance(document, _JSONObject):
        raise CredentialsError(f"{path}: not a JSON object")
    if legacy:   # ~/.dockercfg: the whole document is the auths map
        return {"auths": _auths_map(path, [document]) or {}}
    fields = _go_json_fields(document, ("auths", "credHelpers", "credsStore"))
    helpers: dict[str, Any] | None = None
    for value in fields["credHelpers"]:
        if value is None:
            helpers = None
        elif not isinstance(value, _JSONObject) or not all(isinstance(v, str) or v is None for _, v in value):
            raise CredentialsError(f"{path}: \"credHelpers\" is not an object of helper names")
        else:
            helpers = (helpers or {}) | {k: "" if v is None else v for k, v in value}   # null: Go's zero, ""
    store = next((v for v in reversed(fields["credsStore"]) if isinstance(v, str)), None)
    return {"auths": _auths_map(path, fields["auths"]) or {}, "credHelpers": helpers or {},
            **({"credsStore": store} if store is not None else {})}


class _JSONObject(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs in the file's order, a key given twice kept twice (Go's decoder
    reads them all, in order)."""


def _json_object(pairs: list[tuple[str, Any]]) -> _JSONObject:
    return _JSONObject((go_decoded_string(k), go_decoded_string(v) if isinstance(v, str) else v) for k, v in pairs)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")   # NaN, Infinity: Python's extension, refused by Go


def _go_json_fields(obj: _JSONObject, names: tuple[str, ...]) -> dict[str, list[Any]]:
    """The values of each struct field ``names`` in ``obj``, in the file's order, as encoding/json assigns keys to
    fields: the exact name, else one equal to it but for case (strings.EqualFold); other keys are not read."""
    out: dict[str, list[Any]] = {name: [] for name in names}
    folded = {go_fold(name): name for name in names}
    for key, value in obj:
        name = key if key in out else folded.get(go_fold(key))
        if name is not None:
            out[name].append(value)
    return out


def _auths_map(path: Path, values: list[Any]) -> dict[str, Any] | None:
    """An ``auths`` map decoded from each of its values in turn, as Go decodes into one map field: ``null`` empties
    it, an object adds its entries (each entry decoded afresh); anything else refuses the file."""
    auths: dict[str, Any] | None = None
    for value in values:
        if value is None:
            auths = None
            continue
        if not isinstance(value, _JSONObject):
            raise CredentialsError(f"{path}: \"auths\" is not an object")
        auths = auths if auths is not None else {}
        for key, entry in value:
            auths[key] = _auth_entry(path, key, entry)
    return auths


def _auth_entry(path: Path, key: str, entry: Any) -> dict[str, Any]:
    """One ``auths`` entry as Go decodes it into dockerAuthConfig (``null``: an entry holding nothing)."""
    if entry is None:
        return {}
    if not isinstance(entry, _JSONObject):
        raise CredentialsError(f"{path} (auths {key}): not an object")
    out: dict[str, Any] = {}
    for name, values in _go_json_fields(entry, ("auth", "identitytoken", "username", "password")).items():
        for value in values:
            if name in ("auth", "identitytoken") and value is not None and not isinstance(value, str):
                raise CredentialsError(f"{path} (auths {key}): \"{name}\" is not a string")
            if isinstance(value, str):
                out[name] = value
    return out


def _from_entry(entry: Any, where: str) -> Credentials | None:
    """The credentials of one ``auths`` entry: ``auth`` (base64 of ``user:password``, the password's trailing NULs
    dropped, as containers/image decodes it), with the ``identitytoken`` beside it; docker's ``username`` and
    ``password`` without ``auth``. None for an entry that holds none (``{}``, docker login's mark for a credential
    store; an ``auth`` without a colon; a token alone): containers/image then reads the next file."""
    if not entry:   # {} or null
        return None
    token = entry.get("identitytoken")
    encoded = entry.get("auth")
    if not encoded:
        if isinstance(entry.get("username"), str) and isinstance(entry.get("password"), str):
            return Credentials(entry["username"], entry["password"], where, identity_token=token or None)
        return None
    try:
        # Go's base64 decoder skips line breaks
        decoded = base64.b64decode(encoded.replace("\r", "").replace("\n", ""), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise CredentialsError(f"{where}: \"auth\" is not base64 of user:password") from None
    user, colon, password = decoded.partition(":")
    password = password.strip("\x00")
    if not colon or not (user or password or token):   # nothing at all: as no entry
        return None
    return Credentials(user, password, where, identity_token=token or None)


def _from_helper(name: str, reference: ImageReference, where: str, *, missing_ok: bool = False,
                 server: str | None = None) -> Credentials | None:
    """``docker-credential-NAME get`` for ``server`` (the registry, as containers/image asks; docker's
    ``credsStore`` asks Docker Hub's by docker's key); None when it has nothing for it (an empty answer too)."""
    program = f"docker-credential-{name}"
    server = server or reference.registry
    try:
        done = subprocess.run([program, "get"], input=server.encode(), capture_output=True,
                              timeout=CREDENTIAL_HELPER_TIMEOUT, check=False)
    except FileNotFoundError:
        raise CredentialsError(f"{where}: credential helper {program} is not installed") from None
    except subprocess.TimeoutExpired:
        raise CredentialsError(f"{where}: credential helper {program} did not answer within "
                               f"{CREDENTIAL_HELPER_TIMEOUT:.0f} s") from None
    if done.returncode != 0:
        if missing_ok or b"credentials not found" in done.stdout + done.stderr:
            return None
        raise CredentialsError(f"{where}: credential helper {program} failed (exit {done.returncode})")
    try:
        answer = json.loads(done.stdout)
        username, secret = answer["Username"], answer["Secret"]
    except (ValueError, KeyError, TypeError):
        raise CredentialsError(f"{where}: credential helper {program} answered no Username and Secret") from None
    if not isinstance(username, str) or not isinstance(secret, str):
        raise CredentialsError(f"{where}: credential helper {program} answered no Username and Secret")
    if username == "<token>":   # docker's credential helper protocol: the secret is an identity token
        return Credentials("", "", where, identity_token=secret) if secret else None
    if not (username or secret):   # containers/image: an empty answer is no credentials, the next source is read
        return None
    return Credentials(username, secret, where)
