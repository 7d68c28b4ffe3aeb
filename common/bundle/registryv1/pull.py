"""Pulling a bundle image or an index image from a registry (``docker://REF``) into an OCI image layout, as
OLM v1 pulls the image a catalog names: over the OCI distribution API, with the machine's containers
configuration (:mod:`.registries`: mirrors, insecure registries, certificates, credentials).

The one module of this package that talks to the network; what it writes is read by :mod:`.oci` exactly as a
layout ``skopeo copy`` wrote, so an image is checked the same way whichever way it came.

- Manifests are asked for in the OCI and Docker v2 media types; an image index (a multi-platform image) is
  narrowed to one image: this machine's platform, else ``linux/amd64``, else the first Linux one (a bundle's or
  a catalog's content is the same for every platform). Docker's schema 1 is refused.
- Every manifest and blob is checked against its digest (and its descriptor's size) before it is kept; a
  reference by digest is checked against that digest. The digest pulled is the one OLM v1 records:
  ``registry/repository@digest`` of the manifest the reference names.
- Blobs are kept in a content-addressed cache (``$COSCTL_CACHE_DIR``, else ``$XDG_CACHE_HOME/cosctl``, else
  ``~/.cache/cosctl``; deleting it is always safe), so a second pull of the same content downloads nothing, and a
  reference by digest is read offline once cached.
- Authentication as the registries ask for it: anonymous or with the machine's credentials, a bearer token from
  the registry's token service (Docker's token protocol; an identity token exchanged there by OAuth2's refresh
  token grant) or HTTP Basic. A redirect to another place (blob storage
  behind presigned URLs) never carries the credentials.
- Transient failures (connection errors, 429, 5xx) are retried up to :data:`ATTEMPTS` times, honouring
  ``Retry-After``; ``HTTPS_PROXY``/``NO_PROXY`` are honoured.
- Large downloads report progress through the caller's ``report``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import math
import os
import platform
import re
import shutil
import ssl
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import urllib3

from common.bundle.registryv1.configfile import home_dir
from common.bundle.registryv1.imageref import ImageReference, parse_reference
from common.bundle.registryv1.model import BundleInputError
from common.bundle.registryv1.oci import INDEX_TYPES, MANIFEST_TYPES, OCI_LAYOUT, Limits, digest_parts
from common.bundle.registryv1.policy import SignatureCheck, check_policy
from common.bundle.registryv1.registries import (
    AUTH_FILE_HELPER,
    Certificates,
    Credentials,
    CredentialsError,
    Endpoint,
    RegistryConfigError,
    certificates,
    credential_sources,
    credentials,
    registries_conf,
    usual_cert_dirs,
)
from common.bundle.registryv1.registriesd import MAX_SIGNATURES, RegistriesDError, read_registries_d
from common.bundle.registryv1.signatures import (
    MAX_SIGNATURE_BYTES,
    Signature,
    SignatureFormatError,
    SigstoreSignature,
    SimpleSignature,
    from_blob,
    verify,
)
from common.bundle.registryv1.x509chain import pem_decode
from common.contract.useragent import user_agent

Report = Callable[[str], None]

OCI_MANIFEST: Final = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX: Final = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST: Final = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST: Final = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_SCHEMA1: Final = ("application/vnd.docker.distribution.manifest.v1+json",
                         "application/vnd.docker.distribution.manifest.v1+prettyjws")
ACCEPT: Final = ", ".join((OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST))
ATTEMPTS: Final = 4
MAX_RETRY_AFTER: Final = 30.0  # seconds: a longer Retry-After is not waited for: the pull fails, saying so
MAX_TOKEN_BYTES: Final = 1 << 20  # a token service's answer (a JWT is a few KiB)
MAX_REDIRECTS: Final = 5
USER_AGENT: Final = user_agent("cosctl")   # what registries and token services log
TIMEOUT: Final = urllib3.Timeout(connect=30.0, read=120.0)
PROGRESS_EVERY: Final = 5.0  # seconds between progress lines of one download
PROGRESS_FROM: Final = 8 << 20  # bytes: smaller downloads report nothing while they run
_CHUNK: Final = 1 << 16
_RETRIED_STATUS: Final = frozenset({429, 500, 502, 503, 504})
_ARCHES: Final = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le",
                  "s390x": "s390x", "armv7l": "arm"}


def _backoff(attempt: int) -> float:
    """Seconds to wait before attempt ``attempt + 1``: 0.25, 0.5, 1, ... at most 4."""
    return float(min(0.25 * 2 ** (attempt - 1), 4.0))


class ImagePullError(BundleInputError):
    """The image cannot be pulled; the message names the reference, the registry and why (never a credential)."""


class _Malformed(Exception):
    """What a registry sent cannot be meant (a malformed digest or size, a document that is no JSON object): said
    as an :class:`ImagePullError` naming the reference and the registry."""


@dataclass(frozen=True, slots=True)
class PulledImage:
    """An image pulled into ``layout`` (an OCI image layout holding exactly the chosen image); ``canonical`` is the
    reference by the digest of the manifest ``reference`` named (an image index's for a multi-platform image),
    ``platform`` the platform chosen from an index (``None`` for a single image)."""

    reference: ImageReference
    canonical: ImageReference
    layout: Path
    platform: str | None = None


def described(image: PulledImage) -> str:
    """What a progress line adds after the reference: the digest pulled (unless the reference gave it alone) and
    the platform chosen, in parentheses; ``""`` when there is nothing to add."""
    parts = [] if image.reference.tag is None else [str(image.canonical)]
    if image.platform:
        parts.append(image.platform)
    return f" ({', '.join(parts)})" if parts else ""


def cache_dir() -> Path:
    explicit = os.environ.get("COSCTL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or home_dir() / ".cache") / "cosctl"


def _digest_parts(digest: Any, what: str) -> tuple[str, str]:
    parts = digest_parts(digest)
    if parts is None:
        raise _Malformed(f"{what}: unsupported or malformed digest {json.dumps(digest)[:150]}")
    return parts


def _size(descriptor: dict[str, Any], what: str) -> int:
    size = descriptor.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise _Malformed(f"{what}: a descriptor without a valid size ({json.dumps(size)[:80]})")
    return size


def _megabytes(count: int) -> str:
    return f"{count / (1 << 20):.1f} MiB"


# --- the blob cache ---------------------------------------------------------------------------------------------


class _Cache:
    """Blobs by digest under ``root/blobs/ALG/HEX``, each written whole and checked before it is renamed into
    place; a scratch layout directory per pull beside them. Without a writable cache directory, a temporary one
    serves this run only."""

    def __init__(self, root: Path) -> None:
        try:
            (root / "blobs").mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=root / "blobs", delete=True)  # noqa: SIM115
            probe.close()
            self.root, self.scratch = root, None
        except OSError:
            self.scratch = tempfile.TemporaryDirectory(prefix="cosctl-pull-")
            self.root = Path(self.scratch.name)
            (self.root / "blobs").mkdir()

    def path(self, digest: str) -> Path:
        algorithm, hexdigest = _digest_parts(digest, "blob")
        return self.root / "blobs" / algorithm / hexdigest

    def read(self, digest: str, limit: int) -> bytes | None:
        """The cached blob, if present, whole and matching its digest (a damaged one is removed)."""
        path = self.path(digest)
        try:
            if path.stat().st_size > limit:
                return None
            data = path.read_bytes()
        except OSError:
            return None
        algorithm, hexdigest = _digest_parts(digest, "blob")
        if hashlib.new(algorithm, data).hexdigest() != hexdigest:
            path.unlink(missing_ok=True)
            return None
        return data

    def has(self, digest: str, size: int) -> bool:
        """Whether the blob is cached whole and matches its digest; a damaged one is removed (downloaded again)."""
        path = self.path(digest)
        try:
            if not path.is_file() or path.stat().st_size != size:
                return False
            algorithm, hexdigest = _digest_parts(digest, "blob")
            hasher = hashlib.new(algorithm)
            with path.open("rb") as handle:
                while chunk := handle.read(_CHUNK):
                    hasher.update(chunk)
            if hasher.hexdigest() == hexdigest:
                return True
            path.unlink(missing_ok=True)
            return False
        except OSError:
            return False

    def put(self, digest: str, data: bytes) -> None:
        with self.writer(digest) as handle:
            handle.write(data)

    @contextlib.contextmanager
    def writer(self, digest: str) -> Iterator[Any]:
        """A file to write the blob into; renamed into place when the block ends without an error."""
        path = self.path(digest)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=".part-", delete=False)  # noqa: SIM115
        try:
            with handle:
                yield handle
            os.replace(handle.name, path)
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise

    def layout(self, manifest: dict[str, Any]) -> Path:
        """A scratch OCI layout listing only ``manifest`` (a descriptor), its blobs those of the cache; the caller
        removes it. Raises ``OSError`` when the cache cannot hold it."""
        (self.root / "layouts").mkdir(exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix="pull-", dir=self.root / "layouts"))
        try:
            (directory / OCI_LAYOUT).write_text('{"imageLayoutVersion":"1.0.0"}')
            (directory / "index.json").write_text(json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX,
                                                              "manifests": [manifest]}))
            (directory / "blobs").symlink_to(self.root / "blobs", target_is_directory=True)
        except OSError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return directory

    def close(self) -> None:
        if self.scratch is not None:
            self.scratch.cleanup()


# --- one registry endpoint --------------------------------------------------------------------------------------


def _proxy_url(scheme: str, host: str) -> str | None:
    proxies = urllib.request.getproxies_environment()
    if not proxies or urllib.request.proxy_bypass(host.split(":", 1)[0]):
        return None
    return proxies.get(scheme)


def _challenge(header: str) -> tuple[str, dict[str, str]]:
    """An RFC 7235 challenge: its scheme and auth-params (quoted strings unescaped)."""
    scheme, _, rest = header.strip().partition(" ")
    params: dict[str, str] = {}
    for match in re.finditer(r'([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))', rest):
        value = match.group(2) if match.group(2) is not None else match.group(3)
        params[match.group(1).lower()] = re.sub(r"\\(.)", r"\1", value)
    return scheme.lower(), params


def _error_document(body: bytes) -> dict[str, Any]:
    """An error answer's JSON object (its first 64 KiB), or an empty one when it is not one."""
    try:
        document = json.loads(body[:65536])
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def _shown(text: str) -> str:
    """A server's words as a message carries them: printable, at most 300 characters."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:300]


def _registry_errors(body: bytes) -> str:
    """The registry's error codes and messages from an error body (distribution's ``errors`` list)."""
    errors = _error_document(body).get("errors")
    try:
        found = [f"{e.get('code', '')}: {e.get('message', '')}".strip(": ") for e in errors or []
                 if isinstance(e, dict)]
    except TypeError:   # an "errors" that is not a list
        found = []
    return _shown("; ".join(f for f in found if f))


def _trust_pem_certificates(context: ssl.SSLContext, path: Path) -> None:
    """The CA certificates of a certs.d ``*.crt`` file trusted, as Go's ``AppendCertsFromPEM`` takes them: each
    ``CERTIFICATE`` block without headers that parses; anything else in the file (a DER file, a key, text) is passed
    over, not refused. A file gone since the directory was listed is none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    while True:
        block, data = pem_decode(data)
        if block is None:
            return
        if block.label != "CERTIFICATE" or block.headers:
            continue
        try:
            context.load_verify_locations(cadata=block.der)
        except ssl.SSLError:
            continue


def _attempt_error(asked: ImageReference, endpoint: Endpoint, problem: str) -> ImagePullError:
    """Why pulling ``asked`` from ``endpoint`` failed, naming the mirror when it was one."""
    where = f" (mirror {endpoint.name})" if endpoint.mirror else ""
    return ImagePullError(f"docker://{asked}{where}: {problem}")


@dataclass
class _Session:
    """Requests to one registry endpoint for one repository, with the authentication it asks for."""

    endpoint: Endpoint
    asked: ImageReference
    host: str = ""
    repository: str = ""
    scheme: str = "https"
    authorization: str | None = None
    credentials: Credentials | None = None
    credentials_read: bool = False
    credential_helpers: tuple[str, ...] = (AUTH_FILE_HELPER,)   # registries.conf's credential-helpers
    certs: Certificates = field(default_factory=Certificates)
    pools: dict[str, urllib3.PoolManager] = field(default_factory=dict)

    def __post_init__(self) -> None:
        named = parse_reference(self.endpoint.name)
        self.host, self.repository = named.api_host, named.repository   # Docker Hub answers elsewhere
        self.certs = certificates(named.registry)

    @property
    def shown(self) -> str:
        return f"{self.host}/{self.repository}"

    def fail(self, problem: str) -> ImagePullError:
        return _attempt_error(self.asked, self.endpoint, problem)

    def _context(self, verify: bool) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if not verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        try:
            for ca in self.certs.ca_files:
                _trust_pem_certificates(context, Path(ca))
            for cert, key in self.certs.client_pairs:
                context.load_cert_chain(cert, key)
        except (ssl.SSLError, OSError) as exc:
            raise self.fail(f"cannot use the certificates of {self.certs.directory}: {exc}") from None
        return context

    def _pool(self, scheme: str, host: str) -> urllib3.PoolManager:
        key = f"{scheme}://{host}"
        if key not in self.pools:
            options: dict[str, Any] = {"timeout": TIMEOUT, "retries": False}
            if scheme == "https":
                options["ssl_context"] = self._context(verify=not self.endpoint.insecure)
            proxy = _proxy_url(scheme, host)
            self.pools[key] = (urllib3.ProxyManager(proxy, **options) if proxy
                               else urllib3.PoolManager(**options))
        return self.pools[key]

    def _credentials(self) -> Credentials | None:
        if not self.credentials_read:
            self.credentials = credentials(parse_reference(self.endpoint.name), self.credential_helpers)
            self.credentials_read = True
        return self.credentials

    # -- requests --

    def get(self, path: str, *, accept: str | None = None) -> urllib3.BaseHTTPResponse:
        """GET ``path`` of the API (``/v2/...``), authenticating, retrying and following redirects; the response
        is 200, its body unread (the caller reads it, bounded), or an :class:`ImagePullError` is raised."""
        response = self._get(path, accept, missing_ok=False)
        assert response is not None
        return response

    def get_or_missing(self, path: str, *, accept: str | None = None) -> urllib3.BaseHTTPResponse | None:
        """:meth:`get` of a manifest, with None when the registry says it is unknown (what it answers for a
        sigstore attachment that is not there)."""
        return self._get(path, accept, missing_ok=True)

    def _get(self, path: str, accept: str | None, *, missing_ok: bool) -> urllib3.BaseHTTPResponse | None:
        url = f"{self.scheme}://{self.host}{path}"
        authenticated = False
        attempt = 0
        redirects = 0
        while True:
            attempt += 1
            headers = {"User-Agent": USER_AGENT}
            if accept:
                headers["Accept"] = accept
            same = urllib.parse.urlsplit(url)
            if (self.authorization and same.scheme == self.scheme and same.netloc == self.host
                    and same.path.startswith(("/v2/", "/extensions/v2/"))):
                headers["Authorization"] = self.authorization   # never to another place, never over a downgrade
            response = self._send(url, headers, attempt)
            if response is None:
                if redirects == 0:   # the scheme may have changed (an insecure registry speaking plain HTTP)
                    url = f"{self.scheme}://{self.host}{path}"
                continue
            if response.status in (301, 302, 303, 307, 308):
                location = response.headers.get("Location")
                _discard(response)
                redirects += 1
                if not location or redirects > MAX_REDIRECTS:
                    raise self.fail(f"{self.host} redirected {path} too often or nowhere")
                try:
                    url = _redirect_target(url, location)
                except ValueError as exc:
                    raise self.fail(f"{self.host} redirected {path} {exc}") from None
                continue
            if response.status == 401 and not authenticated:
                challenge = response.headers.get("WWW-Authenticate", "")
                _discard(response)
                self._authenticate(challenge)
                authenticated = True
                attempt = 0
                continue
            if response.status in _RETRIED_STATUS:
                wait = self._retry_after(response, attempt)
                if wait is None:
                    body = _discard(response)
                    detail = _registry_errors(body)
                    raise self.fail(f"{self.host} answered HTTP {response.status} to GET {path}"
                                    + (f": {detail}" if detail else "")
                                    + f"; it asks to wait {response.headers.get('Retry-After')} s before trying again "
                                    "(a rate limit: try later, or log in to the registry, which usually allows "
                                    "more)")
                if attempt < ATTEMPTS:
                    _discard(response)
                    time.sleep(wait)
                    continue
            if response.status == 200:
                return response
            body = _discard(response)
            if missing_ok and _manifest_unknown(response.status, body):
                return None
            raise self._status_error(response.status, path, body)

    def supports_signatures(self) -> bool:
        """Whether the registry serves signatures itself (OpenShift's integrated registry): its ``/v2/`` ping,
        unauthenticated, says ``X-Registry-Supports-Signatures: 1`` (containers/image's detectProperties)."""
        for attempt in range(1, ATTEMPTS + 1):
            response = self._send(f"{self.scheme}://{self.host}/v2/", {"User-Agent": USER_AGENT}, attempt)
            if response is None:
                continue
            _discard(response)
            if response.status not in (200, 401):
                raise self.fail(f"pinging container registry {self.host}: HTTP {response.status}")
            return bool(response.headers.get("X-Registry-Supports-Signatures") == "1")
        raise self.fail(f"pinging container registry {self.host}: no answer after {ATTEMPTS} attempts")

    def lookaside(self, url: str) -> bytes | None:
        """One signature from lookaside storage over HTTP(S) (no credentials: it is not the registry's API), or
        None when the server says there is none (404, the end of the list); at most
        :data:`~.signatures.MAX_SIGNATURE_BYTES`."""
        shown = _redacted(url)
        for attempt in range(1, ATTEMPTS + 1):
            for _ in range(MAX_REDIRECTS + 1):
                response = self._send(url, {"User-Agent": USER_AGENT}, attempt)
                if response is None or response.status not in (301, 302, 303, 307, 308):
                    break
                location = response.headers.get("Location")
                _discard(response)
                if not location:
                    raise self.fail(f"reading signature from {shown}: redirected nowhere")
                try:
                    url = _redirect_target(url, location)
                except ValueError as exc:
                    raise self.fail(f"reading signature from {shown}: redirected {exc}") from None
            else:
                raise self.fail(f"reading signature from {shown}: redirected too often")
            if response is None:
                continue
            if response.status == 404:
                _discard(response)
                return None
            if response.status in _RETRIED_STATUS and attempt < ATTEMPTS:
                _discard(response)
                time.sleep(_backoff(attempt))
                continue
            if response.status != 200:
                _discard(response)
                raise self.fail(f"reading signature from {shown}: HTTP {response.status}")
            try:
                data = response.read(MAX_SIGNATURE_BYTES + 1)
            except urllib3.exceptions.HTTPError as exc:
                raise self.fail(f"reading signature from {shown}: {_reason(exc)}") from None
            finally:
                response.release_conn()
            if len(data) > MAX_SIGNATURE_BYTES:
                raise self.fail(f"reading signature from {shown}: more than {MAX_SIGNATURE_BYTES} bytes")
            return data
        raise self.fail(f"reading signature from {shown}: no answer after {ATTEMPTS} attempts")

    def _send(self, url: str, headers: dict[str, str], attempt: int) -> urllib3.BaseHTTPResponse | None:
        scheme, netloc = urllib.parse.urlsplit(url)[:2]
        try:
            return self._pool(scheme, netloc).request("GET", url, headers=headers, preload_content=False,
                                                      redirect=False)
        except urllib3.exceptions.SSLError as exc:
            if self.endpoint.insecure and scheme == "https" and netloc == self.host and self.scheme == "https":
                self.scheme = "http"   # an insecure registry that speaks plain HTTP
                return None
            raise self.fail(self._tls_problem(netloc, exc)) from None
        except urllib3.exceptions.HTTPError as exc:
            if attempt < ATTEMPTS:
                time.sleep(_backoff(attempt))
                return None
            raise self.fail(f"cannot reach {netloc}: {_reason(exc)} (after {ATTEMPTS} attempts)") from None

    def _tls_problem(self, netloc: str, exc: Exception) -> str:
        text = _reason(exc)
        if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
            where = self.certs.directory or ", ".join(str(d / self.host) for d in usual_cert_dirs())
            return (f"cannot verify the TLS certificate of {netloc} ({text}): trust its CA with a file ending in "
                    f".crt in {'' if self.certs.directory else 'one of '}{where} (as podman and skopeo read it), or "
                    "mark the registry insecure in registries.conf")
        return f"TLS with {netloc} failed: {text}"

    @staticmethod
    def _retry_after(response: urllib3.BaseHTTPResponse, attempt: int) -> float | None:
        """Seconds to wait before trying again: the registry's ``Retry-After`` (in seconds; ``None`` when it asks
        for more than :data:`MAX_RETRY_AFTER`), else the backoff."""
        value = response.headers.get("Retry-After", "")
        try:
            seconds = float(value)
        except ValueError:
            return _backoff(attempt)
        if not math.isfinite(seconds):
            return _backoff(attempt)
        return None if seconds > MAX_RETRY_AFTER else max(seconds, 0.0)

    def _status_error(self, status: int, path: str, body: bytes) -> ImagePullError:
        detail = _registry_errors(body)
        if status == 404:
            what = "manifest" if "/manifests/" in path else "blob"
            return self.fail(f"not found: {self.host} has no {what} {path.rsplit('/', 1)[-1]} in repository "
                             f"{self.repository}" + (f" ({detail})" if detail else ""))
        detail = f": {detail}" if detail else ""
        if status in (401, 403):
            creds = self._credentials()
            used = (f"with the credentials of {creds.source}" if creds else
                    "anonymously (no credentials for it in " + credential_sources(self.credential_helpers) + ")")
            return self.fail(f"access denied by {self.host} (HTTP {status}{detail}), asked {used}")
        return self.fail(f"{self.host} answered HTTP {status} to GET {path}{detail}")

    # -- authentication --

    def _authenticate(self, header: str) -> None:
        scheme, params = _challenge(header)
        creds = self._credentials()
        if scheme == "basic":
            if creds is not None and not (creds.username or creds.password):   # an identity token alone
                raise self.fail(f"{self.host} asks for a user name and password, and the credentials of "
                                f"{creds.source} are an identity token (OAuth2 refresh token), which only a token "
                                "service takes: log in with a user name and password (podman login, docker login "
                                "-u)")
            if creds is None:
                raise self.fail(f"{self.host} asks for a user name and password, and no credentials for it are in "
                                + credential_sources(self.credential_helpers) + " (podman login or docker login "
                                "writes them)")
            if self.scheme != "https" and not self.endpoint.insecure:   # pragma: no cover - https unless insecure
                raise self.fail("credentials are never sent over plain HTTP")
            self.authorization = creds.basic()
            return
        if scheme != "bearer" or "realm" not in params:
            raise self.fail(f"{self.host} asks for authentication this client does not speak "
                            f"({(scheme or 'none')!r}; Bearer and Basic are supported)")
        realm = params["realm"]
        try:
            split = urllib.parse.urlsplit(realm)
            split.port   # noqa: B018 - a malformed port or IPv6 host raises here
        except ValueError:
            raise self.fail(f"{self.host}'s token service {realm[:200]!r} is not a well-formed URL") from None
        if split.scheme not in ("https", "http") or not split.netloc:
            raise self.fail(f"{self.host}'s token service {realm!r} is not an HTTP(S) URL")
        query = {"scope": f"repository:{self.repository}:pull"}
        if params.get("service"):
            query["service"] = params["service"]
        if creds is not None and creds.username and creds.identity_token is None:
            query["account"] = creds.username   # as containers/image asks: some token services key on it
        headers = {"User-Agent": USER_AGENT}
        if creds is not None and split.scheme != "https" and not self.endpoint.insecure:
            raise self.fail(f"{self.host}'s token service {realm} is plain HTTP: credentials are not sent "
                            "there (mark the registry insecure in registries.conf to allow it)")
        method, url, body = "GET", realm + ("&" if split.query else "?") + urllib.parse.urlencode(query), None
        if creds is not None and creds.identity_token is not None:
            # containers/image's OAuth2 exchange: the refresh token POSTed as a form, to the realm as it is
            form = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
            if params.get("service"):
                form.append(("service", params["service"]))
            form += [("scope", query["scope"]), ("grant_type", "refresh_token"),
                     ("refresh_token", creds.identity_token), ("client_id", "containers/image")]
            method, url, body = "POST", realm, urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif creds is not None and creds.username and creds.password:
            headers["Authorization"] = creds.basic()
        response = None
        for attempt in range(1, ATTEMPTS + 1):
            try:
                response = self._pool(split.scheme, split.netloc).request(method, url, body=body, headers=headers,
                                                                          redirect=False, preload_content=False)
            except urllib3.exceptions.SSLError as exc:
                raise self.fail(self._tls_problem(split.netloc, exc)) from None
            except urllib3.exceptions.HTTPError as exc:
                if attempt == ATTEMPTS:
                    raise self.fail(f"cannot reach the token service {split.netloc}: {_reason(exc)}") from None
                time.sleep(_backoff(attempt))
                continue
            wait = self._retry_after(response, attempt) if response.status in _RETRIED_STATUS else None
            if wait is None or attempt == ATTEMPTS:
                break
            _discard(response)
            time.sleep(wait)
        assert response is not None
        answered = _discard(response, MAX_TOKEN_BYTES + 1)
        if response.status != 200:
            detail = _registry_errors(answered) or _oauth_error(answered)
            for secret in (creds.password, creds.identity_token) if creds is not None else ():
                if secret:   # a token service that echoes what it was sent does not put it in our message
                    detail = detail.replace(secret, "(redacted)")
            used = ("no credentials (anonymous)" if creds is None else f"the identity token of {creds.source}"
                    if creds.identity_token is not None else f"the credentials of {creds.source}")
            raise self.fail(f"the token service {split.netloc} refused a pull token for {self.repository} with "
                            f"{used} (HTTP {response.status}{': ' + detail if detail else ''})")
        try:
            answer = json.loads(answered) if len(answered) <= MAX_TOKEN_BYTES else None
            token = answer.get("token") or answer.get("access_token") if isinstance(answer, dict) else None
        except ValueError:
            token = None
        if not isinstance(token, str) or not token:
            raise self.fail(f"the token service {split.netloc} answered no token")
        self.authorization = f"Bearer {token}"


def _redirect_target(url: str, location: str) -> str:
    """Where a redirect from ``url`` to ``location`` leads; ValueError saying why it cannot be followed (a
    malformed URL, or one that is not HTTP(S))."""
    try:
        target = urllib.parse.urljoin(url, location)
        urllib.parse.urlsplit(target).port   # noqa: B018 - a malformed port or IPv6 host raises here
    except ValueError:
        raise ValueError("to a malformed URL") from None
    if urllib.parse.urlsplit(target).scheme not in ("https", "http"):
        raise ValueError("to a URL that is not HTTP(S)")
    return target


def _attachment_tag(digest: str) -> str:
    """The tag cosign pushes a manifest's sigstore attachments under: ``sha256-<hex>.sig``."""
    algorithm, _, hexdigest = digest.partition(":")
    return f"{algorithm}-{hexdigest}.sig"


def _manifest_unknown(status: int, body: bytes) -> bool:
    """Whether an error answer says the manifest does not exist, as containers/image's isManifestUnknownError
    takes it for a sigstore attachment that is not there: MANIFEST_UNKNOWN (any status), and for a 404 also
    NOT_FOUND, registry.redhat.io's UNKNOWN "Not Found", a message saying "not found" (Harbor), or no error list."""
    errors = _error_document(body).get("errors")
    listed = [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []
    if any(e.get("code") == "MANIFEST_UNKNOWN" for e in listed):
        return True
    if status != 404:
        return False
    return not listed or any(e.get("code") == "NOT_FOUND" or "not found" in str(e.get("message", "")).lower()
                             for e in listed)


def _oauth_error(body: bytes) -> str:
    """An OAuth2 token endpoint's error (``error``, ``error_description``: RFC 6749, section 5.2)."""
    document = _error_document(body)
    return _shown(": ".join(document[k] for k in ("error", "error_description") if isinstance(document.get(k), str)))


def _discard(response: urllib3.BaseHTTPResponse, limit: int = 65536) -> bytes:
    """Read at most ``limit`` bytes of a body that is not kept (an error's, a redirect's, a challenge's) and let
    the connection go: back to the pool when the body ended, closed when there is more (an endless body must not
    hold the pull)."""
    try:
        data = response.read(limit)
        ended = response.read(1) == b""
    except urllib3.exceptions.HTTPError:
        data, ended = b"", False
    if ended:
        response.release_conn()
    else:
        response.close()
    return data


def _reason(exc: Exception) -> str:
    """What went wrong, without urllib3's connection object repr (``HTTPSConnection(host=...): ...``) or the
    wrapped exception repeated."""
    reason = getattr(exc, "reason", None)
    text = exc.args[0] if not reason and exc.args and isinstance(exc.args[0], str) else str(reason or exc)
    text = re.sub(r"^<?\w*HTTPS?Connection(?:Pool)?\(host=[^)]*\)>?: ", "", text)
    text = re.sub(r"^\w*HTTPS?Connection object at 0x[0-9a-f]+>?: ", "", text)
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:300]


# --- the pull ---------------------------------------------------------------------------------------------------


def host_platform() -> tuple[str, str]:
    """This machine's platform as image indexes name it (``linux``, ``amd64``)."""
    return "linux", _ARCHES.get(platform.machine().lower(), platform.machine().lower())


def choose_platform(index: dict[str, Any], what: str) -> dict[str, Any]:
    """The descriptor of the one image of ``index`` to pull (see the module's docstring)."""
    manifests = index.get("manifests")
    if not isinstance(manifests, list):
        raise _Malformed(f"{what}: an image index without a \"manifests\" list")
    images = [m for m in manifests if isinstance(m, dict) and not (
        isinstance(m.get("annotations"), dict) and m["annotations"].get("vnd.docker.reference.type")
        == "attestation-manifest")]
    if not images:
        raise _Malformed(f"{what}: lists no image")

    def platform_of(descriptor: dict[str, Any]) -> tuple[str, str]:
        found = descriptor.get("platform")
        return (str(found.get("os", "")), str(found.get("architecture", ""))) if isinstance(found, dict) else ("", "")

    for wanted in (host_platform(), ("linux", "amd64")):
        for descriptor in images:
            if platform_of(descriptor) == wanted:
                return descriptor
    for descriptor in images:
        if platform_of(descriptor)[0] == "linux":
            return descriptor
    return images[0]


@dataclass
class _Pull:
    session: _Session
    cache: _Cache
    limits: Limits
    report: Report | None
    downloaded: int = 0

    def manifest(self, reference: str, what: str, *, digest: str | None = None) -> tuple[bytes, str, str]:
        """The manifest ``reference`` (a tag or a digest) names: its bytes, media type and digest (checked
        against ``digest`` when known); from the cache when it is known by digest."""
        if digest is not None:
            cached = self.cache.read(digest, self.limits.max_json_bytes)
            if cached is not None:
                return cached, _media_type(cached, None), digest
        path = f"/v2/{self.session.repository}/manifests/{reference}"
        response = self.session.get(path, accept=ACCEPT)
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > self.limits.max_json_bytes:
            response.release_conn()
            raise self.session.fail(f"{what}: {declared} bytes, more than the limit of {self.limits.max_json_bytes} "
                                    "for a manifest")
        data = self._read_capped(response, self.limits.max_json_bytes, what)
        media_type = _media_type(data, response.headers.get("Content-Type"))
        if media_type in DOCKER_SCHEMA1:
            raise self.session.fail(f"{what}: a Docker schema 1 manifest, which is no longer supported (push the "
                                    "image again with a current tool)")
        if digest is None:
            header = response.headers.get("Docker-Content-Digest")
            digest = header if header and digest_parts(header) else "sha256:" + hashlib.sha256(data).hexdigest()
        algorithm, hexdigest = _digest_parts(digest, what)
        actual = hashlib.new(algorithm, data).hexdigest()
        if actual != hexdigest:
            raise self.session.fail(f"{what}: the manifest {self.session.host} sent does not match its digest "
                                    f"{digest} (it hashes to {algorithm}:{actual})")
        self.cache.put(digest, data)
        return data, media_type, digest

    def _read_capped(self, response: urllib3.BaseHTTPResponse, limit: int, what: str) -> bytes:
        chunks: list[bytes] = []
        total = 0
        try:
            for chunk in response.stream(_CHUNK):
                total += len(chunk)
                if total > limit:
                    raise self.session.fail(f"{what}: more than the limit of {limit} bytes for a manifest")
                chunks.append(chunk)
        except urllib3.exceptions.HTTPError as exc:
            raise self.session.fail(f"{what}: the download broke off: {_reason(exc)}") from None
        finally:
            response.release_conn()
        return b"".join(chunks)

    def blob(self, descriptor: dict[str, Any], what: str, position: str) -> None:
        """Download the blob (one the cache lacks) into the cache, checked."""
        digest = descriptor.get("digest")
        algorithm, hexdigest = _digest_parts(digest, what)
        size = _size(descriptor, what)
        assert isinstance(digest, str)
        if self.downloaded + size > self.limits.max_stream_bytes:
            raise self.session.fail(f"{what}: the image's blobs come to more than the limit of "
                                    f"{self.limits.max_stream_bytes} bytes")
        for attempt in range(1, ATTEMPTS + 1):
            try:
                self._download(digest, algorithm, hexdigest, size, what, position)
                self.downloaded += size
                return
            except _Broken as exc:
                if attempt == ATTEMPTS:
                    raise self.session.fail(f"{what}: {exc} (after {ATTEMPTS} attempts)") from None
                time.sleep(_backoff(attempt))

    def _download(self, digest: str, algorithm: str, hexdigest: str, size: int, what: str, position: str) -> None:
        response = self.session.get(f"/v2/{self.session.repository}/blobs/{digest}")
        hasher = hashlib.new(algorithm)
        received = 0
        started = last = time.monotonic()
        try:
            with self.cache.writer(digest) as handle:
                try:
                    for chunk in response.stream(_CHUNK):
                        received += len(chunk)
                        if received > size:
                            raise self.session.fail(f"{what}: {self.session.host} sent more than the {size} bytes "
                                                    f"its descriptor says for blob {digest}")
                        hasher.update(chunk)
                        handle.write(chunk)
                        now = time.monotonic()
                        if self.report is not None and size >= PROGRESS_FROM and now - last >= PROGRESS_EVERY:
                            last = now
                            self.report(f"pulling docker://{self.session.asked}: {position}, {_megabytes(received)}"
                                        f" of {_megabytes(size)}")
                except urllib3.exceptions.HTTPError as exc:
                    raise _Broken(f"the download of blob {digest} ({size} bytes) broke off: {_reason(exc)}") \
                        from None
                if received < size:
                    raise _Broken(f"the download of blob {digest} ended after {received} of {size} bytes")
                if hasher.hexdigest() != hexdigest:
                    raise self.session.fail(f"{what}: blob {digest} from {self.session.host} does not match its "
                                            f"digest (its content hashes to {algorithm}:{hasher.hexdigest()})")
        finally:
            response.release_conn()
        if self.report is not None and size >= PROGRESS_FROM:
            seconds = max(time.monotonic() - started, 0.001)
            self.report(f"pulled docker://{self.session.asked}: {position}, {_megabytes(size)} in {seconds:.1f} s")


    def signatures(self, digest: str, physical: ImageReference) -> tuple[list[Signature], str]:
        """The signatures of the manifest ``digest`` as containers/image gathers them for the image pulled as
        ``physical`` (a mirror's own name): from the registry's own signature API where it has one, else from its
        lookaside storage (registries.d), then its sigstore attachments when registries.d asks for them; and
        where they were looked for, as a refusal for want of any says it."""
        try:
            storage = read_registries_d().storage(physical)
        except RegistriesDError as exc:
            raise self.session.fail(str(exc)) from None
        attachments = (f"sigstore attachments read from {self.session.shown}:{_attachment_tag(digest)}"
                       if storage.attachments else
                       "sigstore attachments not read: registries.d does not set use-sigstore-attachments")
        found: list[Signature] = []
        if self.session.supports_signatures():   # the registry's own signatures, instead of lookaside storage
            found.extend(self._extension_signatures(digest))
            if storage.attachments:
                found.extend(self._attachments(digest))
            return found, f"looked in {self.session.host}'s signature API; {attachments}"
        for index in range(MAX_SIGNATURES + 1):
            if index == MAX_SIGNATURES:
                raise self.session.fail(f"the signature storage gave {MAX_SIGNATURES} signatures, assuming that's "
                                        "unreasonable and a server error")
            url = storage.url(digest, index)
            blob = self._lookaside(url)
            if blob is None:
                break
            try:
                found.append(from_blob(blob))
            except SignatureFormatError as exc:
                raise self.session.fail(f"parsing signature {_redacted(url)}: {exc}") from None
        if storage.attachments:
            found.extend(self._attachments(digest))
        where = _redacted(storage.url(digest, 0)).rsplit("/", 1)[0]
        return found, f"looked in lookaside storage {where}; {attachments}"

    def _extension_signatures(self, digest: str) -> list[Signature]:
        """The simple signatures the registry lists for ``digest`` (``/extensions/v2/<repository>/signatures/
        <digest>``, schema version 2, type ``atomic``; others skipped, as containers/image skips them)."""
        what = f"the signatures {self.session.host} lists for {digest}"
        response = self.session.get(f"/extensions/v2/{self.session.repository}/signatures/{digest}")
        data = self._read_capped(response, MAX_SIGNATURE_BYTES, what)
        try:
            listed = _document(data, what).get("signatures") or []
        except _Malformed as exc:
            raise self.session.fail(str(exc)) from None
        if not isinstance(listed, list):
            raise self.session.fail(f"{what}: \"signatures\" is not a list")
        found: list[Signature] = []
        for entry in listed:
            if not isinstance(entry, dict) or entry.get("schemaVersion") != 2 or entry.get("type") != "atomic":
                continue
            content = entry.get("content")
            try:
                found.append(SimpleSignature(base64.b64decode(content if isinstance(content, str) else "",
                                                              validate=True)))
            except binascii.Error:
                raise self.session.fail(f"{what}: a signature whose content is not base64") from None
        return found

    def _lookaside(self, url: str) -> bytes | None:
        try:
            parts = urllib.parse.urlsplit(url)
        except ValueError:
            raise self.session.fail(f"Invalid signature storage URL {_redacted(url)}") from None
        scheme = parts.scheme
        if scheme == "file":
            path = Path(urllib.parse.unquote(parts.path))
            try:
                with path.open("rb") as handle:
                    data = handle.read(MAX_SIGNATURE_BYTES + 1)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise self.session.fail(f"reading signature {path}: {exc.strerror or exc}") from None
            if len(data) > MAX_SIGNATURE_BYTES:
                raise self.session.fail(f"reading signature {path}: more than {MAX_SIGNATURE_BYTES} bytes")
            return data
        if scheme in ("http", "https"):
            return self.session.lookaside(url)
        raise self.session.fail(f"Unsupported scheme when reading signature from {_redacted(url)}")

    def _attachments(self, digest: str) -> list[Signature]:
        """The layers of the ``sha256-<hex>.sig`` attachment manifest (none when it does not exist)."""
        _digest_parts(digest, "manifest")   # a digest that names no file or path
        tag = _attachment_tag(digest)
        what = f"the sigstore attachment manifest {self.session.host}/{self.session.repository}:{tag}"
        response = self.session.get_or_missing(f"/v2/{self.session.repository}/manifests/{tag}", accept=OCI_MANIFEST)
        if response is None:
            return []
        data = self._read_capped(response, self.limits.max_json_bytes, what)
        media_type = _media_type(data, response.headers.get("Content-Type"))
        if media_type != OCI_MANIFEST:
            raise self.session.fail(f"unexpected MIME type for {what}: {json.dumps(media_type)}")
        try:
            layers = _document(data, what).get("layers")
        except _Malformed as exc:
            raise self.session.fail(str(exc)) from None
        if not isinstance(layers, list):
            raise self.session.fail(f"{what}: no layers")
        found: list[Signature] = []
        for index, layer in enumerate(layers):
            where = f"{what}: layer {index}"
            if not isinstance(layer, dict):
                raise self.session.fail(f"{where}: not a descriptor")
            layer_digest = layer.get("digest")
            layer_algorithm, layer_hex = _digest_parts(layer_digest, where)
            if _size(layer, where) > MAX_SIGNATURE_BYTES:
                raise self.session.fail(f"{where}: more than {MAX_SIGNATURE_BYTES} bytes")
            blob = self.session.get(f"/v2/{self.session.repository}/blobs/{layer_digest}")
            payload = self._read_capped(blob, MAX_SIGNATURE_BYTES, where)
            if hashlib.new(layer_algorithm, payload).hexdigest() != layer_hex:
                raise self.session.fail(f"{where}: its content does not match its digest {layer_digest}")
            annotations = layer.get("annotations")
            found.append(SigstoreSignature(
                str(layer.get("mediaType", "")), payload,
                {str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {}))
        return found


def _redacted(url: str) -> str:
    """A URL as a message shows it: without a password it may carry (Go's url.Redacted)."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port   # noqa: B018 - a malformed port raises here
    except ValueError:
        return "(a malformed URL)"
    if parts.password is None:
        return url
    netloc = f"{parts.username}:xxxxx@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class _Broken(Exception):
    """A download that broke off or came short: tried again."""


def _media_type(data: bytes, header: str | None) -> str:
    """A manifest's media type: its own ``mediaType`` field, else the Content-Type the registry sent."""
    try:
        document = json.loads(data)
        own = document.get("mediaType") if isinstance(document, dict) else None
    except ValueError:
        own = None
    if isinstance(own, str) and own:
        return own
    return (header or "").split(";", 1)[0].strip()


def _document(data: bytes, what: str) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise _Malformed(f"{what}: not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise _Malformed(f"{what}: not a JSON object")
    return document


@contextlib.contextmanager
def pulled(text: str, limits: Limits, report: Report | None = None) -> Iterator[PulledImage]:
    """Pull the image ``text`` (``docker://REF``) into a scratch OCI layout that exists while the block runs.

    The registries.conf endpoints are tried in order (mirrors first); the error of the last one is raised, naming
    the others' when every one failed."""
    reference = parse_reference(text)
    if reference.tag is not None and reference.digest is not None:   # containers/image's docker transport refuses it
        raise ImagePullError(f"docker://{reference}: a reference with both a tag and a digest cannot be pulled (as "
                             "skopeo and OLM v1 cannot pull it): give the digest alone")
    check = check_policy(reference)   # an image the policy rejects, or asks of what cosctl cannot check: no request
    conf = registries_conf()
    endpoints = conf.endpoints(reference)
    cache = _Cache(cache_dir())
    try:
        failures: list[str] = []
        for endpoint in endpoints:
            try:
                # each place tried stands alone, as in containers/image: its certificates, its credentials and its
                # blocked setting failing is that attempt failing, and the next place is tried
                try:
                    session = _Session(endpoint, reference, credential_helpers=conf.credential_helpers)
                except (RegistryConfigError, CredentialsError) as exc:
                    raise _attempt_error(reference, endpoint, str(exc)) from None
                if endpoint.blocked_by:
                    raise session.fail(f"registry {endpoint.blocked_by}")
                try:
                    chosen, canonical, choice = _fetch(session, cache, reference, limits, report, check)
                except (RegistryConfigError, CredentialsError) as exc:
                    raise session.fail(str(exc)) from None
            except ImagePullError as exc:
                if endpoint is endpoints[-1]:
                    if failures:
                        raise ImagePullError(f"{exc}; before it: {'; '.join(failures)}") from None
                    raise
                failures.append(str(exc))
                continue
            try:
                layout = cache.layout(chosen)
            except OSError as exc:
                raise _cache_failure(session, cache, exc) from None
            try:
                yield PulledImage(reference, canonical, layout, choice)
            finally:
                shutil.rmtree(layout, ignore_errors=True)
            return
    finally:
        cache.close()


def _fetch(session: _Session, cache: _Cache, reference: ImageReference, limits: Limits, report: Report | None,
           check: SignatureCheck | None) -> tuple[dict[str, Any], ImageReference, str | None]:
    """Pull ``reference`` through ``session`` into the cache: the chosen image's descriptor, the reference by
    the digest of what ``reference`` names, the platform chosen (an index)."""
    try:
        return _fetch_checked(session, cache, reference, limits, report, check)
    except _Malformed as exc:
        raise session.fail(str(exc)) from None
    except OSError as exc:
        raise _cache_failure(session, cache, exc) from None


def _cache_failure(session: _Session, cache: _Cache, exc: OSError) -> ImagePullError:
    return session.fail(f"the image cache {cache.root}: {exc.strerror or exc} (set COSCTL_CACHE_DIR to a writable "
                        "directory, or delete this one: it only holds downloads)")


def _fetch_checked(session: _Session, cache: _Cache, reference: ImageReference, limits: Limits,
                   report: Report | None, check: SignatureCheck | None
                   ) -> tuple[dict[str, Any], ImageReference, str | None]:
    pull = _Pull(session, cache, limits, report)
    what = "manifest"
    data, media_type, digest = pull.manifest(reference.digest or reference.tag or "latest", what,
                                             digest=reference.digest)
    canonical = reference.pinned(digest)
    document = _document(data, what)
    choice = None
    if media_type in INDEX_TYPES or (not media_type and "manifests" in document):
        descriptor = choose_platform(document, "the image index")
        found = descriptor.get("platform")
        choice = (f"{found.get('os', '?')}/{found.get('architecture', '?')}" if isinstance(found, dict)
                  else "no platform")
        what = f"the {choice} image's manifest"
        child_digest = descriptor.get("digest")
        _digest_parts(child_digest, what)
        assert isinstance(child_digest, str)
        data, media_type, digest = pull.manifest(child_digest, what, digest=child_digest)
        document = _document(data, what)
    if check is not None:
        # the image pulled (for several platforms: the one chosen, under its own digest, as containers/image checks
        # the instance it copies), before any blob; the identity is the reference asked for
        named = parse_reference(session.endpoint.name)
        physical = ImageReference(named.registry, named.repository, reference.tag, reference.digest)
        # signatures are kept under the sha256 digest (containers/image's manifest.Digest), but for an instance
        # of an index, under the digest the index names
        stored = digest if choice is not None or digest.startswith("sha256:") else \
            "sha256:" + hashlib.sha256(data).hexdigest()
        signatures, looked = pull.signatures(stored, physical)
        verify(check, reference, data, signatures, looked)
        if report is not None:
            kinds = ", ".join(sorted({r.type for r in check.requirements}))
            report(f"docker://{reference}: signatures verified as the signature policy {check.path} asks ({kinds}, "
                   f"scope {check.scope}{'' if choice is None else ', the ' + choice + ' image'})")
    if media_type not in MANIFEST_TYPES and not (not media_type and "layers" in document):
        raise session.fail(f"{what}: unsupported manifest media type {json.dumps(media_type)} (expected an OCI or "
                           "Docker v2 image manifest or index)")
    layers = document.get("layers")
    config = document.get("config")
    if not isinstance(layers, list) or not isinstance(config, dict):
        raise session.fail(f"{what}: an image manifest without \"config\" and \"layers\"")
    if len(layers) > limits.max_layers:
        raise session.fail(f"{what}: {len(layers)} layers, more than the limit of {limits.max_layers}")
    blobs = [(config, "config", "its config")] + [
        (layer, f"layer {i}", f"layer {i + 1} of {len(layers)}") for i, layer in enumerate(layers)]
    for descriptor, where, _ in blobs:
        if not isinstance(descriptor, dict):
            raise session.fail(f"{what}: {where}: not a descriptor")
        _digest_parts(descriptor.get("digest"), where)   # names no file before it is checked
        _size(descriptor, where)
    missing: dict[str, tuple[dict[str, Any], str, str]] = {}   # by digest: a blob listed twice is fetched once
    for blob in blobs:
        blob_digest = str(blob[0]["digest"])
        if blob_digest not in missing and not cache.has(blob_digest, _size(blob[0], blob[1])):
            missing[blob_digest] = blob
    total = sum(_size(b[0], b[1]) for b in missing.values())
    if report is not None and total >= PROGRESS_FROM:
        report(f"pulling docker://{reference} from {session.host}: {len(missing)} blob(s), {_megabytes(total)}")
    for descriptor, where, position in missing.values():
        pull.blob(descriptor, where, position)
    chosen = {"mediaType": media_type or OCI_MANIFEST, "digest": digest, "size": len(data)}
    return chosen, canonical, choice
