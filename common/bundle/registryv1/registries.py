"""Where an image comes from and with which credentials and certificates: the containers configuration podman,
skopeo, CRI-O and OLM v1's operator-controller read (containers/image), so a machine set up for them pulls the
same way here, with nothing to configure twice.

- ``registries.conf``, found as containers/image v5.40 finds it (:mod:`.configfile`: the first of the user's,
  ``/etc``'s and ``/usr/share``'s file, or ``$CONTAINERS_REGISTRIES_CONF`` alone; the ``registries.conf.d`` drop-ins
  of all three, rootful or rootless ones included, in name order; ``$CONTAINERS_REGISTRIES_CONF_OVERRIDE`` last),
  a later ``[[registry]]`` replacing an earlier one of the same prefix: per registry or repository prefix,
  ``location`` (where it really is), ``insecure`` (plain HTTP, or TLS without verification), ``blocked``, and
  ``[[registry.mirror]]`` (tried first, in order, each with its ``pull-from-mirror``: ``all``, ``digest-only``,
  ``tag-only``). The version 1 tables ``[registries.insecure]`` and ``[registries.block]`` are read too (as
  containers/image up to v5.39 reads them; v5.40 refuses them). The longest matching prefix wins (``*.example.com``
  matches its subdomains).
- certificates: the first ``HOST[:PORT]`` directory of the ``certs.d`` drop-in directories (:mod:`.configfile`: the
  user's, ``/etc/containers``'s, ``/usr/share/containers``'s) or of ``/etc/docker/certs.d``: ``*.crt`` files are
  trusted CAs (beside the system's), a ``NAME.cert`` with its ``NAME.key`` is a client certificate.
- credentials: ``$REGISTRY_AUTH_FILE`` (else ``$XDG_RUNTIME_DIR/containers/auth.json``),
  ``~/.config/containers/auth.json``, ``$DOCKER_CONFIG/config.json`` (else ``~/.docker/config.json``), the first
  file that has an entry for the repository, a namespace of it, or its registry (``auth`` or
  ``username``/``password``, and an ``identitytoken`` beside ``auth``); ``credHelpers`` and ``credsStore`` run
  ``docker-credential-NAME get``, as docker does (user ``<token>``: an identity token). Credentials are never
  printed: messages name the file they came from, never their content.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import subprocess
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from common.bundle.registryv1.configfile import (
    ADMIN_DIR,
    CERTS_D,
    REGISTRIES_CONF,
    ConfigFileError,
    config_files,
    search_paths,
    user_config_dir,
)
from common.bundle.registryv1.imageref import DOCKER_HUB, ImageReference
from common.bundle.registryv1.model import BundleInputError

PULL_FROM_MIRROR: Final = ("all", "digest-only", "tag-only")
DOCKER_HUB_AUTH_KEY: Final = "https://index.docker.io/v1/"  # how docker login writes Docker Hub's entry
CREDENTIAL_HELPER_TIMEOUT: Final = 60.0  # seconds; a helper may ask a keychain


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


def home() -> Path:
    """``$HOME``, as the containers tools read it (the password database only without it)."""
    return Path(os.environ.get("HOME") or Path.home())


def _config_home() -> Path:
    """Where auth.json is looked for (``$XDG_CONFIG_HOME``, else ``~/.config``), as containers/image looks."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or home() / ".config")


# --- registries.conf -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One place to try: ``name`` (``host[:port]/repository``) there, over TLS unless ``insecure``."""

    name: str
    insecure: bool
    mirror: bool = False


@dataclass(frozen=True, slots=True)
class _Mirror:
    location: str
    insecure: bool
    pull_from_mirror: str


@dataclass(frozen=True, slots=True)
class _Registry:
    prefix: str
    location: str
    insecure: bool = False
    blocked: bool = False
    mirrors: tuple[_Mirror, ...] = ()
    source: str = ""
    mirror_by_digest_only: bool = False


@dataclass(slots=True)
class RegistriesConf:
    """What the registries.conf files say, by prefix."""

    registries: dict[str, _Registry] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def endpoints(self, reference: ImageReference) -> list[Endpoint]:
        """Where to pull ``reference`` from, in order: the mirrors that serve it, then its (relocated)
        registry. Raises :class:`RegistryConfigError` when its registry is blocked."""
        entry = self._match(reference.name)
        if entry is None:
            return [Endpoint(reference.name, insecure=False)]
        if entry.blocked:
            raise RegistryConfigError(f"{reference}: pulling from {entry.prefix} is blocked by {entry.source}")
        rest = _rest(reference.name, entry.prefix)
        found: list[Endpoint] = []
        for mirror in entry.mirrors:
            wanted = "digest-only" if entry.mirror_by_digest_only else mirror.pull_from_mirror
            if (wanted == "digest-only" and reference.digest is None) or (
                    wanted == "tag-only" and reference.digest is not None):
                continue
            found.append(Endpoint(mirror.location + rest, mirror.insecure, mirror=True))
        # a wildcard prefix without a location rewrites nothing: its settings apply to the name as it is
        found.append(Endpoint(entry.location + rest if entry.location else reference.name, entry.insecure))
        return found

    def _match(self, name: str) -> _Registry | None:
        best: _Registry | None = None
        for prefix, entry in self.registries.items():
            if _matches(name, prefix) and (best is None or _rank(prefix) > _rank(best.prefix)):
                best = entry
        return best


def _rank(prefix: str) -> tuple[int, int]:
    """Exact prefixes beat wildcards; longer beats shorter."""
    return (0 if prefix.startswith("*.") else 1, len(prefix))


def _matches(name: str, prefix: str) -> bool:
    if prefix.startswith("*."):
        host = name.split("/", 1)[0].split(":", 1)[0]
        return host.endswith(prefix[1:])
    return name == prefix or name.startswith(prefix + "/") or (
        "/" not in prefix and name.split("/", 1)[0] == prefix)


def _rest(name: str, prefix: str) -> str:
    """What follows ``prefix`` in ``name`` (a wildcard prefix replaces the host)."""
    if prefix.startswith("*."):
        return name[len(name.split("/", 1)[0]):]
    return name[len(prefix):]


def conf_files(root: Path | None = None) -> list[Path]:
    """The registries.conf files containers/image v5.40 reads, in order (:mod:`.configfile`): the first of the
    user's, ``/etc``'s and ``/usr/share``'s file (or ``$CONTAINERS_REGISTRIES_CONF`` alone, without drop-ins), the
    ``registries.conf.d`` drop-ins of all three, ``$CONTAINERS_REGISTRIES_CONF_OVERRIDE`` last."""
    try:
        return config_files(REGISTRIES_CONF, root=root)
    except ConfigFileError as exc:
        raise RegistryConfigError(str(exc)) from None


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise RegistryConfigError(f"{where}: must be true or false")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise RegistryConfigError(f"{where}: must be a string")
    return value


def _location(value: str, where: str) -> str:
    """A location as registries.conf allows it: no scheme, no trailing slash."""
    if "://" in value:
        raise RegistryConfigError(f"{where}: {value!r}: a location has no scheme (write host[:port][/path])")
    return value.rstrip("/")


def _read_conf(path: Path, conf: RegistriesConf) -> None:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryConfigError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RegistryConfigError(f"{path}: not valid TOML: {exc}") from None
    conf.files.append(str(path))
    v1 = document.get("registries")
    if isinstance(v1, dict):   # version 1: lists of registries per table
        for table, flag in (("insecure", "insecure"), ("block", "blocked")):
            names = v1.get(table, {}).get("registries", []) if isinstance(v1.get(table), dict) else []
            for position, name in enumerate(names if isinstance(names, list) else []):
                host = _location(_str(name, f"{path}: registries.{table}.registries[{position}]"), str(path))
                old = conf.registries.get(host, _Registry(host, host, source=str(path)))
                conf.registries[host] = _Registry(host, old.location, old.insecure or flag == "insecure",
                                                  old.blocked or flag == "blocked", old.mirrors, str(path))
    entries = document.get("registry", [])
    if not isinstance(entries, list):
        raise RegistryConfigError(f"{path}: [[registry]] must be an array of tables")
    for position, entry in enumerate(entries):
        where = f"{path}: [[registry]] #{position + 1}"
        if not isinstance(entry, dict):
            raise RegistryConfigError(f"{where}: not a table")
        location = _location(_str(entry.get("location", ""), f"{where} location"), where)
        prefix = _str(entry.get("prefix") or location, f"{where} prefix").rstrip("/")
        if not prefix:
            raise RegistryConfigError(f"{where}: neither prefix nor location")
        mirrors = []
        for index, mirror in enumerate(entry.get("mirror", []) or []):
            at = f"{where} mirror #{index + 1}"
            if not isinstance(mirror, dict):
                raise RegistryConfigError(f"{at}: not a table")
            how = _str(mirror.get("pull-from-mirror", "all") or "all", f"{at} pull-from-mirror")
            if how not in PULL_FROM_MIRROR:
                raise RegistryConfigError(f"{at} pull-from-mirror: {how!r} (one of {', '.join(PULL_FROM_MIRROR)})")
            mirrors.append(_Mirror(_location(_str(mirror.get("location"), f"{at} location"), at),
                                   _bool(mirror.get("insecure", False), f"{at} insecure"), how))
        if prefix.startswith("*.") and location:
            raise RegistryConfigError(f"{where}: a wildcard prefix {prefix!r} cannot have a location")
        conf.registries[prefix] = _Registry(
            prefix, location if location or prefix.startswith("*.") else prefix,
            _bool(entry.get("insecure", False), f"{where} insecure"), _bool(entry.get("blocked", False),
                                                                            f"{where} blocked"),
            tuple(mirrors), str(path), _bool(entry.get("mirror-by-digest-only", False),
                                             f"{where} mirror-by-digest-only"))


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


def auth_files() -> list[Path]:
    primary = os.environ.get("REGISTRY_AUTH_FILE")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    files = [Path(primary)] if primary else ([Path(runtime) / "containers" / "auth.json"] if runtime else [])
    files.append(_config_home() / "containers" / "auth.json")
    docker = os.environ.get("DOCKER_CONFIG")
    files.append(Path(docker) / "config.json" if docker else home() / ".docker" / "config.json")
    return files


def _normalised(key: str) -> str:
    """An auth file key as containers/image compares it: no scheme; a legacy key with a path keeps its host;
    Docker Hub's names are one registry."""
    if "://" in key:
        key = key.split("://", 1)[1].split("/", 1)[0]
    key = key.rstrip("/")
    return DOCKER_HUB if key in ("index.docker.io", "registry-1.docker.io") else key


def _keys(reference: ImageReference) -> Iterator[str]:
    """The keys that may hold ``reference``'s credentials, most specific first: the repository, each namespace
    above it, the registry."""
    parts = reference.repository.split("/")
    for end in range(len(parts), 0, -1):
        yield f"{reference.registry}/{'/'.join(parts[:end])}"
    yield reference.registry


def credentials(reference: ImageReference) -> Credentials | None:
    """The credentials the containers tools would use for ``reference``, or ``None`` (anonymous)."""
    for path in auth_files():
        document = _auth_document(path)
        if document is None:
            continue
        auths = document.get("auths") or {}
        if not isinstance(auths, dict):
            raise CredentialsError(f"{path}: \"auths\" is not an object")
        entries = {_normalised(k): v for k, v in auths.items() if isinstance(k, str)}
        helpers = document.get("credHelpers") or {}
        for key in _keys(reference):
            if isinstance(helpers, dict) and isinstance(helpers.get(key), str):
                return _from_helper(helpers[key], reference, f"{path} (credHelpers {key})")
            if key in entries and entries[key] != {}:   # an empty entry: docker login's mark for credsStore
                if (found := _from_entry(entries[key], f"{path} (auths {key})")) is not None:
                    return found
                break   # an identity token without "auth" is no credentials: as containers/image, read on
        store = document.get("credsStore")
        if isinstance(store, str) and store:
            found = _from_helper(store, reference, f"{path} (credsStore)", missing_ok=True)
            if found is not None:
                return found
    return None


def _auth_document(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialsError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or type(exc).__name__}") \
            from None
    try:
        document = json.loads(text) if text.strip() else {}
    except ValueError:
        raise CredentialsError(f"{path}: not valid JSON") from None
    if not isinstance(document, dict):
        raise CredentialsError(f"{path}: not a JSON object")
    return document


def _from_entry(entry: Any, where: str) -> Credentials | None:
    if not isinstance(entry, dict):
        raise CredentialsError(f"{where}: not an object")
    token = entry.get("identitytoken")
    if token is not None and not isinstance(token, str):
        raise CredentialsError(f"{where}: \"identitytoken\" is not a string")
    if token:
        # what containers/image does with one: kept beside the user and password "auth" holds (docker writes
        # "<user>:" there), for a token service; an entry whose "auth" holds none is no entry (the next file is read)
        if (pair := _decoded_auth(entry.get("auth"))) is None:
            return None
        return Credentials(pair[0], pair[1].strip("\x00"), where, identity_token=token)
    if isinstance(entry.get("username"), str) and isinstance(entry.get("password"), str):
        return Credentials(entry["username"], entry["password"], where)
    encoded = entry.get("auth")
    if not isinstance(encoded, str) or not encoded:
        raise CredentialsError(f"{where}: neither \"auth\" nor \"username\" and \"password\"")
    if (pair := _decoded_auth(encoded)) is None:
        raise CredentialsError(f"{where}: \"auth\" is not base64 of user:password")
    return Credentials(pair[0], pair[1], where)


def _decoded_auth(encoded: Any) -> tuple[str, str] | None:
    """An auth entry's ``"auth"``, base64 of ``user:password``, as (user, password); None when it is not that."""
    if not isinstance(encoded, str):
        return None
    try:
        user, colon, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, password) if colon else None


def _from_helper(name: str, reference: ImageReference, where: str, *,
                 missing_ok: bool = False) -> Credentials | None:
    program = f"docker-credential-{name}"
    server = DOCKER_HUB_AUTH_KEY if reference.registry == DOCKER_HUB else reference.registry
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
    return Credentials(username, secret, where)
