"""A local OCI registry (the pull side of the OCI Distribution API v2) for HTTP-level tests of registry clients.

Why a double and not a real registry: the tests run offline, and what they need to pin is how a client copes
with what real registries do to it, on demand and deterministically: token auth with challenges and scopes,
tokens that expire, blob downloads redirected to storage that rejects forwarded credentials, ``Accept``
negotiation that hides a manifest, rate limits, bodies that are cut short or do not match their digest.

``Registry`` serves, on ``127.0.0.1`` and a free port, over HTTPS with a certificate from a test CA
(``tests.webhook.support.CA``) or over plain HTTP:

* ``GET /v2/``: ``200 {}``, or 401 with the challenge of the auth mode.
* ``GET|HEAD /v2/<name>/manifests/<tag or digest>``: the stored bytes exactly, with ``Content-Type`` (the
  manifest's media type), ``Docker-Content-Digest`` and ``Content-Length``; ``404 MANIFEST_UNKNOWN`` when
  missing, and also (``strict_accept``, the default) when the request has an ``Accept`` header that does not
  list the manifest's media type, as distribution does. No wildcard is honoured: ``Accept: */*`` (what
  ``requests`` sends by default) hides every manifest.
* ``GET|HEAD /v2/<name>/blobs/<digest>``: the bytes with ``Docker-Content-Digest`` and ``Content-Length``;
  ``404 BLOB_UNKNOWN`` when missing (blobs belong to a repository: one pushed to A is unknown in B), ``400
  DIGEST_INVALID`` for a malformed digest. With ``redirect_blobs`` the answer is a 307 to
  ``/storage/<digest>?sig=...`` on this server (host ``redirect_host``), which plays an S3 presigned URL:
  no credentials needed, a wrong ``sig`` is 403, and any ``Authorization`` header is 400, so a client that
  carries its registry credentials across the redirect fails as it would against S3.
* ``GET /v2/<name>/tags/list``: the repository's tags, sorted.
* ``GET /token`` (bearer mode only): the token service, see ``Registry``; ``POST /token``: its OAuth2 side, which
  exchanges an identity (refresh) token for a pull token.

Everything else is 404 (405 for methods other than GET/HEAD: this registry cannot be pushed to over HTTP;
tests fill it with ``push_layout``, ``put_blob`` and ``put_manifest``). Every request is recorded in
``requests`` with the status answered.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import re
import secrets
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, quote, urlsplit

from tests.registryv1.bundles import MANIFEST
from tests.webhook.support import CA

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
SERVICE = "test-registry"  # the ``service`` of bearer challenges, which the token request must echo
OCTET_STREAM = "application/octet-stream"

AuthMode = Literal["basic", "bearer"] | None
TokenField = Literal["token", "access_token", "both"]

# The distribution spec's grammar: path components of lowercase alphanumerics joined by separators.
_NAME = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*")
_DIGEST = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+")
_TAG = re.compile(r"[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}")
# Greedy name: ``/v2/a/b/manifests/x`` is repository ``a/b``, as the spec's routing reads it.
_ROUTE = re.compile(r"/v2/(?P<name>.+)/(?P<kind>manifests|blobs)/(?P<ref>[^/]+)")
_TAGS = re.compile(r"/v2/(?P<name>.+)/tags/list")
_SIGNATURES = re.compile(r"/extensions/v2/(?P<name>.+)/signatures/(?P<digest>[^/]+)")


def sha256_digest(data: bytes) -> str:
    """The ``sha256:<hex>`` digest of ``data``, as registries name content."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class Recorded:
    """One request as the server received it: header names lower-cased (repeated headers joined with
    ``", "``), the query as ``parse_qs`` reads it (every value of a repeated parameter, such as ``scope``)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    status: int = 0  # the status answered (0 while the answer is being written)
    form: dict[str, list[str]] = field(default_factory=dict)  # a form body (a POST to /token), as parse_qs reads it


@dataclass
class IssuedToken:
    """A token the token service issued: who asked (``None``: anonymously), for which scopes, what it grants."""

    token: str
    user: str | None
    scopes: list[str]
    repositories: frozenset[str]  # repositories it may pull
    expires_at: float  # time.monotonic() after which it is invalid
    uses: int = 0  # requests it authorised


@dataclass
class _Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    truncate: bool = False  # send half the body, then drop the connection


@dataclass
class _Fault:
    remaining: int
    status: int
    retry_after: int | str | None
    path: re.Pattern[str] | None


@dataclass
class _Damage:
    corrupt: int | None = None  # answers left to corrupt (-1: every one)
    truncate: int | None = None


def _json(status: int, body: object, headers: dict[str, str] | None = None) -> _Answer:
    return _Answer(status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode())


def _error(status: int, code: str, message: str, detail: object = None,
           headers: dict[str, str] | None = None) -> _Answer:
    """An error in the distribution spec's shape, which clients parse to tell what went wrong."""
    return _json(status, {"errors": [{"code": code, "message": message, "detail": detail}]}, headers)


def _s3_error(status: int, code: str, message: str) -> _Answer:
    """An error as S3 words it (XML), so the storage redirect target looks like what clients really meet."""
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
            f"</Error>").encode()
    return _Answer(status, {"Content-Type": "application/xml"}, body)


def _accepted(header: str) -> set[str]:
    """The media types an ``Accept`` header lists, parameters (``;q=``) dropped."""
    return {part.split(";", 1)[0].strip().lower() for part in header.split(",") if part.strip()}


def _parse_scope(scope: str) -> tuple[str, str, set[str]] | None:
    """``repository:a/b:pull,push`` as (type, name, actions); the name may not hold a colon, the type may."""
    kind, _, rest = scope.partition(":")
    name, _, actions = rest.rpartition(":")
    if not kind or not name:
        return None
    return kind, name, set(actions.split(","))


class Registry:
    """The registry; a context manager that starts it in a thread and stops it on exit.

    ``ca`` signs the serving certificate (for ``localhost`` and ``127.0.0.1``); ``plain_http=True`` serves
    plain HTTP instead and needs no CA. The certificate files go to a fresh directory under ``ca.directory``.

    Auth modes, as real registries implement them:

    * ``auth=None``: anonymous access to everything.
    * ``auth="basic"``: every ``/v2/`` request needs ``Authorization: Basic`` with a pair from ``users``;
      otherwise ``401`` with ``WWW-Authenticate: Basic realm="test-registry"``.
    * ``auth="bearer"``: the registry takes only tokens from its token service at ``<url>/token``. Without a
      valid token ``/v2/`` answers ``401`` with ``WWW-Authenticate: Bearer realm="<url>/token",
      service="test-registry"``, and the repository endpoints add ``scope="repository:<name>:pull"``. A token
      that is unknown, past ``token_expires_in`` seconds or already used ``token_ttl_requests`` times gets
      the challenge with ``error="invalid_token"``; a valid token without that repository's pull right
      (issued for another one) gets it with ``error="insufficient_scope"``: the client must fetch a new
      token. Basic credentials sent to the registry itself are refused like no credentials.
      ``GET /token?service=test-registry&scope=...`` (``scope`` repeatable, or space-separated) answers 200
      with a fresh opaque token: granted pull on every requested repository when the request carries valid
      Basic credentials, on those in ``public_repos`` only when anonymous (a private repository is silently
      left out, as Docker Hub does, so the registry then answers 401). Wrong credentials, or any other
      ``Authorization`` scheme, are 401; a missing or wrong ``service`` is 400. The JSON holds the token under
      ``token``, ``access_token`` or both (``token_field``) with ``expires_in`` and ``issued_at``.

    ``identity_tokens`` (refresh token -> user, bearer mode): ``POST /token`` with a form body
    (``application/x-www-form-urlencoded``: ``grant_type=refresh_token``, ``refresh_token``, ``client_id``,
    ``service``, ``scope``), as Azure Container Registry and distribution's OAuth2 flow take it, answers 200 with
    ``access_token`` for that user; an unknown refresh token is 400 ``invalid_grant``, a missing field 400
    ``invalid_request``.

    ``supports_signatures=True`` is OpenShift's integrated registry's signature API: ``/v2/`` says
    ``X-Registry-Supports-Signatures: 1``, and ``GET /extensions/v2/<name>/signatures/<digest>`` (authorised as the
    repository is) lists :attr:`signatures` of that manifest (schema version 2, type ``atomic``, base64 content).

    ``strict_accept=False`` serves a manifest whatever the ``Accept`` header says (some registries do).
    ``redirect_blobs`` sends blob downloads to the storage endpoint on ``redirect_host`` (by default this
    server's own address; ``"localhost"`` makes it another origin for clients that strip credentials only
    there, while the storage still rejects them).
    """

    def __init__(self, ca: CA | None = None, *, plain_http: bool = False, auth: AuthMode = None,
                 users: dict[str, str] | None = None, public_repos: Iterable[str] = (),
                 token_field: TokenField = "token", token_expires_in: int = 300,
                 token_ttl_requests: int | None = None, strict_accept: bool = True,
                 redirect_blobs: bool = False, redirect_host: str = "127.0.0.1",
                 identity_tokens: dict[str, str] | None = None, supports_signatures: bool = False) -> None:
        if ca is None and not plain_http:
            raise ValueError("HTTPS needs a CA to issue the serving certificate: pass ca, or plain_http=True")
        if auth not in (None, "basic", "bearer"):
            raise ValueError(f"unknown auth mode {auth!r}")
        self.ca = ca
        self.plain_http = plain_http
        self.auth = auth
        self.users = dict(users or {})
        self.identity_tokens = dict(identity_tokens or {})   # refresh token -> the user it stands for
        self.public_repos = set(public_repos)
        self.token_field = token_field
        self.token_expires_in = token_expires_in
        self.token_ttl_requests = token_ttl_requests
        self.strict_accept = strict_accept
        self.redirect_blobs = redirect_blobs
        self.redirect_host = redirect_host
        self.supports_signatures = supports_signatures
        self.signatures: dict[tuple[str, str], list[bytes]] = {}   # (repository, manifest digest) -> blobs
        self.host = ""  # "127.0.0.1:PORT" once started
        self.port = 0
        self.requests: list[Recorded] = []
        self.tokens: list[IssuedToken] = []  # in the order issued
        self._lock = threading.Lock()
        self._blobs: dict[str, dict[str, bytes]] = {}  # repository -> digest -> bytes
        self._manifests: dict[str, dict[str, tuple[bytes, str]]] = {}  # repository -> digest -> (bytes, type)
        self._tags: dict[str, dict[str, str]] = {}  # repository -> tag -> digest
        self._token_index: dict[str, IssuedToken] = {}
        self._faults: list[_Fault] = []
        self._damage: dict[str, _Damage] = {}
        self._secret = secrets.token_bytes(32)  # signs storage URLs
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> Registry:
        """Bind a free loopback port and serve from a daemon thread."""
        context: ssl.SSLContext | None = None
        if not self.plain_http:
            assert self.ca is not None
            directory = Path(tempfile.mkdtemp(prefix="registry-", dir=self.ca.directory))
            self.cert_file, self.key_file = directory / "tls.crt", directory / "tls.key"
            self.ca.issue(self.cert_file, self.key_file)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certfile=str(self.cert_file), keyfile=str(self.key_file))
            context.set_alpn_protocols(["http/1.1"])
        registry = self

        class Handler(_Handler):
            server_registry = registry

        self._httpd = _Server(("127.0.0.1", 0), Handler, context)
        self.port = int(self._httpd.server_address[1])
        self.host = f"127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="test-registry",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop the connections clients keep alive, so none of them hangs on a dead server."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            # the plain socket's shutdown: SSLSocket.shutdown would tear its TLS state from this thread
            with contextlib.suppress(OSError):
                socket.socket.shutdown(conn, socket.SHUT_RDWR)
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._httpd = None

    def __enter__(self) -> Registry:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def scheme(self) -> str:
        return "http" if self.plain_http else "https"

    @property
    def url(self) -> str:
        """``https://127.0.0.1:PORT`` (``http://`` in plain mode)."""
        return f"{self.scheme}://{self.host}"

    def ref(self, repo: str, reference: str = "latest") -> str:
        """An image reference into this registry: ``HOST/repo:tag``, or ``HOST/repo@digest``."""
        sep = "@" if ":" in reference else ":"
        return f"{self.host}/{repo}{sep}{reference}"

    # -------------------------------------------------------------------------------------- content store
    def put_blob(self, repo: str, data: bytes) -> str:
        """Store ``data`` as a blob of ``repo``; returns its digest."""
        digest = sha256_digest(data)
        with self._lock:
            self._blobs.setdefault(repo, {})[digest] = bytes(data)
        return digest

    def put_manifest(self, repo: str, data: bytes, media_type: str, tag: str | None = None) -> str:
        """Store ``data`` (served byte for byte) as a manifest of ``repo`` with ``media_type``, optionally
        under ``tag``; returns its digest."""
        digest = sha256_digest(data)
        with self._lock:
            self._manifests.setdefault(repo, {})[digest] = (bytes(data), media_type)
            if tag is not None:
                self._tags.setdefault(repo, {})[tag] = digest
        return digest

    def remove_blob(self, repo: str, digest: str) -> None:
        """Forget a blob (a manifest that names it then points at nothing, as after a bad garbage collection)."""
        with self._lock:
            self._blobs.get(repo, {}).pop(digest, None)

    def push_layout(self, repo: str, tag: str | None, layout_dir: Path) -> str:
        """Store what ``layout_dir`` (an OCI image layout, e.g. from ``tests.registryv1.bundles.Layout``)
        holds: every manifest and index reachable from ``index.json`` as manifests, their configs and layers
        as blobs, each under the digest its descriptor declares and with the bytes of the file that digest
        names (a layout with wrong digests is served as it is). Blob files missing from the layout are
        skipped, so a test can leave one out on purpose. The first manifest of ``index.json`` is tagged
        ``tag`` (when not ``None``); its digest is returned."""
        index = json.loads((layout_dir / "index.json").read_bytes())
        descriptors = [d for d in index.get("manifests") or [] if isinstance(d, dict)]
        if not descriptors:
            raise ValueError(f"{layout_dir}/index.json lists no manifests")
        seen: set[str] = set()
        for descriptor in descriptors:
            self._push_manifest(repo, layout_dir, descriptor, seen)
        top = str(descriptors[0]["digest"])
        if tag is not None:
            with self._lock:
                self._tags.setdefault(repo, {})[tag] = top
        return top

    def _push_manifest(self, repo: str, root: Path, descriptor: dict[str, Any], seen: set[str]) -> None:
        digest = descriptor.get("digest")
        data = _layout_blob(root, digest)
        if data is None or not isinstance(digest, str) or digest in seen:
            return
        seen.add(digest)
        try:
            document = json.loads(data)
        except ValueError:
            document = None
        document = document if isinstance(document, dict) else {}
        # What a pusher sends as Content-Type: the descriptor's media type, else the manifest's own field.
        media_type = descriptor.get("mediaType") or document.get("mediaType") or MANIFEST
        with self._lock:
            self._manifests.setdefault(repo, {})[digest] = (data, str(media_type))
        for child in document.get("manifests") or []:
            if isinstance(child, dict):
                self._push_manifest(repo, root, child, seen)
        for blob in [document.get("config"), *(document.get("layers") or []), *(document.get("blobs") or [])]:
            if isinstance(blob, dict):
                content = _layout_blob(root, blob.get("digest"))
                if content is not None:
                    with self._lock:
                        self._blobs.setdefault(repo, {})[str(blob["digest"])] = content

    # ----------------------------------------------------------------------------------- fault injection
    def corrupt_blob(self, digest: str, times: int | None = None) -> None:
        """Serve other bytes of the same length for ``digest`` (blob, storage or manifest answers), with the
        right ``Docker-Content-Digest``: only a client that verifies what it read notices. ``times``: for
        the next that many answers only (``None``: until ``clear_faults``). Empty content cannot be
        corrupted at the same length and is served as it is."""
        with self._lock:
            self._damage.setdefault(digest, _Damage()).corrupt = -1 if times is None else times

    def truncate_blob(self, digest: str, times: int | None = None) -> None:
        """Declare the full ``Content-Length`` for ``digest`` but send half the bytes, then drop the
        connection (a reset mid-download). ``times`` as for ``corrupt_blob``."""
        with self._lock:
            self._damage.setdefault(digest, _Damage()).truncate = -1 if times is None else times

    def fail_next(self, n: int = 1, status: int = 500, retry_after: int | str | None = None,
                  path: str | None = None) -> None:
        """Answer the next ``n`` requests (those whose path matches the regex ``path``, when given) with
        ``status`` and an error body, before any auth or lookup; ``retry_after`` is sent as ``Retry-After``
        (seconds, or an HTTP date). Several calls queue up in order."""
        with self._lock:
            self._faults.append(_Fault(n, status, retry_after, re.compile(path) if path is not None else None))

    def clear_faults(self) -> None:
        """Drop every pending fault and damaged digest."""
        with self._lock:
            self._faults.clear()
            self._damage.clear()

    # -------------------------------------------------------------------------------------------- serving
    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def _answer(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str],
                form: dict[str, list[str]] | None = None) -> _Answer:
        fault = self._take_fault(path)
        if fault is not None:
            return fault
        if path == "/token" and method == "POST" and self.auth == "bearer":
            return self._oauth2_token(headers, form or {})
        if path == "/token":
            return self._token(method, query, headers)
        if path.startswith("/storage/"):
            return self._storage(method, path, query, headers)
        signatures = _SIGNATURES.fullmatch(path) if self.supports_signatures else None
        if signatures is not None:
            return self._authorize(headers, signatures["name"]) or _json(200, {"signatures": [
                {"schemaVersion": 2, "name": f"{signatures['digest']}@sig-{i}", "type": "atomic",
                 "content": base64.b64encode(blob).decode()}
                for i, blob in enumerate(self.signatures.get((signatures["name"], signatures["digest"]), []))]})
        if path not in ("/v2", "/v2/") and not path.startswith("/v2/"):
            return _error(404, "NOT_FOUND", "not found", path)
        if method not in ("GET", "HEAD"):
            return _error(405, "UNSUPPORTED", "the operation is unsupported", f"{method} on a pull-only registry")
        if path in ("/v2", "/v2/"):
            answer = self._authorize(headers, None) or _json(200, {})
            if self.supports_signatures:
                answer.headers["X-Registry-Supports-Signatures"] = "1"
            return answer
        route = _ROUTE.fullmatch(path)
        tags = _TAGS.fullmatch(path)
        name = route["name"] if route else tags["name"] if tags else None
        if name is None:
            return _error(404, "UNSUPPORTED", "the operation is unsupported", path)
        if not _NAME.fullmatch(name):
            return _error(400, "NAME_INVALID", "invalid repository name", name)
        denied = self._authorize(headers, name)
        if denied is not None:
            return denied
        if tags is not None:
            with self._lock:
                names = sorted(self._tags.get(name, {}))
            return _json(200, {"name": name, "tags": names})
        assert route is not None
        if route["kind"] == "manifests":
            return self._manifest(method, name, route["ref"], headers)
        return self._blob(method, name, route["ref"])

    def _take_fault(self, path: str) -> _Answer | None:
        with self._lock:
            for fault in self._faults:
                if fault.remaining > 0 and (fault.path is None or fault.path.search(path)):
                    fault.remaining -= 1
                    break
            else:
                return None
            self._faults = [f for f in self._faults if f.remaining > 0]
        code, message = {429: ("TOOMANYREQUESTS", "too many requests"),
                         503: ("UNAVAILABLE", "service unavailable")}.get(fault.status, ("UNKNOWN", "unknown error"))
        extra = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
        return _error(fault.status, code, message, "injected by fail_next", extra)

    def _basic_user(self, authorization: str) -> str | None:
        """The user whose valid Basic credentials ``authorization`` carries, else ``None``."""
        scheme, _, credential = authorization.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, sep, password = base64.b64decode(credential.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        expected = self.users.get(user)
        if not sep or expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            return None
        return user

    def _authorize(self, headers: dict[str, str], repo: str | None) -> _Answer | None:
        """``None`` when the request may go on, else the 401 to answer (see the class docstring)."""
        if self.auth is None:
            return None
        detail = [{"Type": "repository", "Name": repo, "Action": "pull"}] if repo else None
        authorization = headers.get("authorization", "")
        if self.auth == "basic":
            if self._basic_user(authorization) is not None:
                return None
            return _error(401, "UNAUTHORIZED", "authentication required", detail,
                          {"WWW-Authenticate": f'Basic realm="{SERVICE}"'})
        scheme, _, credential = authorization.partition(" ")
        error = ""
        if scheme.lower() == "bearer" and credential.strip():
            with self._lock:
                issued = self._token_index.get(credential.strip())
                if issued is None or time.monotonic() > issued.expires_at or (
                        self.token_ttl_requests is not None and issued.uses >= self.token_ttl_requests):
                    error = "invalid_token"
                elif repo is not None and repo not in issued.repositories:
                    error = "insufficient_scope"
                else:
                    issued.uses += 1
                    return None
        challenge = f'Bearer realm="{self.url}/token",service="{SERVICE}"'
        if repo is not None:
            challenge += f',scope="repository:{repo}:pull"'
        if error:
            challenge += f',error="{error}"'
        code = "DENIED" if error == "insufficient_scope" else "UNAUTHORIZED"
        message = "requested access to the resource is denied" if code == "DENIED" else "authentication required"
        return _error(401, code, message, detail, {"WWW-Authenticate": challenge})

    def _token(self, method: str, query: dict[str, list[str]], headers: dict[str, str]) -> _Answer:
        if self.auth != "bearer":
            return _error(404, "NOT_FOUND", "no token service: the registry is not in bearer mode")
        if method != "GET":
            return _json(405, {"details": f"{method} is not supported by this token service"})
        service = query.get("service", [""])[-1]
        if service != SERVICE:
            return _json(400, {"details": f"invalid service {service!r}: expected {SERVICE!r}"})
        authorization = headers.get("authorization", "")
        user = None
        if authorization:
            user = self._basic_user(authorization)
            if user is None:
                return _json(401, {"details": "incorrect username or password"})
        scopes = [s for value in query.get("scope", []) for s in value.split(" ") if s]
        granted = set()
        for scope in scopes:
            parsed = _parse_scope(scope)
            if parsed is None:
                continue
            kind, name, actions = parsed
            if kind == "repository" and actions & {"pull", "*"} and (user is not None or name in self.public_repos):
                granted.add(name)
        token = secrets.token_urlsafe(32)
        issued = IssuedToken(token, user, scopes, frozenset(granted), time.monotonic() + self.token_expires_in)
        with self._lock:
            self.tokens.append(issued)
            self._token_index[token] = issued
        body: dict[str, object] = {}
        if self.token_field in ("token", "both"):
            body["token"] = token
        if self.token_field in ("access_token", "both"):
            body["access_token"] = token
        body["expires_in"] = self.token_expires_in
        body["issued_at"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        return _json(200, body)

    def _oauth2_token(self, headers: dict[str, str], form: dict[str, list[str]]) -> _Answer:
        if not headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return _json(400, {"error": "invalid_request", "error_description": "expected a form body"})
        fields = {key: values[-1] for key, values in form.items()}
        if fields.get("grant_type") != "refresh_token" or not fields.get("client_id"):
            return _json(400, {"error": "unsupported_grant_type" if fields.get("grant_type") else "invalid_request",
                               "error_description": "grant_type refresh_token and a client_id are required"})
        if fields.get("service") != SERVICE:
            return _json(400, {"error": "invalid_request", "error_description": "invalid service"})
        user = self.identity_tokens.get(fields.get("refresh_token", ""))
        if user is None:
            return _json(400, {"error": "invalid_grant", "error_description": "the refresh token is not valid"})
        scopes = [s for value in form.get("scope", []) for s in value.split(" ") if s]
        granted = {parsed[1] for scope in scopes if (parsed := _parse_scope(scope)) is not None
                   and parsed[0] == "repository" and parsed[2] & {"pull", "*"}}
        token = secrets.token_urlsafe(32)
        issued = IssuedToken(token, user, scopes, frozenset(granted), time.monotonic() + self.token_expires_in)
        with self._lock:
            self.tokens.append(issued)
            self._token_index[token] = issued
        return _json(200, {"access_token": token, "expires_in": self.token_expires_in, "scope": " ".join(scopes)})

    def _manifest(self, method: str, repo: str, reference: str, headers: dict[str, str]) -> _Answer:
        if ":" not in reference and not _TAG.fullmatch(reference):
            return _error(400, "TAG_INVALID", "manifest tag did not match URI", reference)
        with self._lock:
            digest = reference if ":" in reference else self._tags.get(repo, {}).get(reference)
            entry = self._manifests.get(repo, {}).get(digest) if digest is not None else None
        if digest is None or entry is None:
            return _error(404, "MANIFEST_UNKNOWN", "manifest unknown", {"Name": repo, "Reference": reference})
        data, media_type = entry
        accept = _accepted(headers.get("accept", ""))
        if self.strict_accept and accept and media_type.lower() not in accept:
            return _error(404, "MANIFEST_UNKNOWN", "manifest unknown",
                          f"{media_type} manifest found, but the Accept header does not list it")
        return self._content(method, digest, data, media_type, {"Docker-Content-Digest": digest})

    def _blob(self, method: str, repo: str, digest: str) -> _Answer:
        if not _DIGEST.fullmatch(digest):
            return _error(400, "DIGEST_INVALID", "provided digest did not match uploaded content", digest)
        with self._lock:
            data = self._blobs.get(repo, {}).get(digest)
        if data is None:
            return _error(404, "BLOB_UNKNOWN", "blob unknown to registry", digest)
        if self.redirect_blobs:
            location = (f"{self.scheme}://{self.redirect_host}:{self.port}/storage/{quote(digest, safe=':')}"
                        f"?sig={self._sign(digest)}")
            return _Answer(307, {"Location": location, "Docker-Content-Digest": digest})
        return self._content(method, digest, data, OCTET_STREAM, {"Docker-Content-Digest": digest})

    def _sign(self, digest: str) -> str:
        return hmac.new(self._secret, digest.encode(), hashlib.sha256).hexdigest()

    def _storage(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str]) -> _Answer:
        """The presigned-URL target: authorised by ``sig`` alone, and refusing a second auth mechanism."""
        if method not in ("GET", "HEAD"):
            return _s3_error(405, "MethodNotAllowed", "The specified method is not allowed against this resource.")
        if "authorization" in headers:
            return _s3_error(400, "InvalidArgument", "Only one auth mechanism allowed; only the X-Amz-Algorithm "
                             "query parameter, Signature query string parameter or the Authorization header "
                             "should be specified")
        digest = path.removeprefix("/storage/")
        if not hmac.compare_digest(query.get("sig", [""])[-1], self._sign(digest)):
            return _s3_error(403, "SignatureDoesNotMatch", "The request signature we calculated does not match "
                             "the signature you provided.")
        with self._lock:
            data = next((blobs[digest] for blobs in self._blobs.values() if digest in blobs), None)
        if data is None:
            return _s3_error(404, "NoSuchKey", "The specified key does not exist.")
        return self._content(method, digest, data, OCTET_STREAM, {})

    def _content(self, method: str, digest: str, data: bytes, media_type: str,
                 headers: dict[str, str]) -> _Answer:
        """A 200 with ``data``, damaged as ``corrupt_blob``/``truncate_blob`` asked for ``digest`` (a HEAD
        sends no body, so it neither shows nor uses up the damage)."""
        truncate = False
        with self._lock:
            damage = self._damage.get(digest)
            if damage is not None and method != "HEAD":
                if damage.corrupt:
                    data = bytes(b ^ 0xFF for b in data)
                    damage.corrupt = _used(damage.corrupt)
                if damage.truncate:
                    truncate = True
                    damage.truncate = _used(damage.truncate)
        return _Answer(200, {"Content-Type": media_type, "ETag": f'"{digest}"', **headers}, data, truncate)


def _used(remaining: int) -> int:
    """A damage counter after one damaged answer: ``-1`` (every answer) stays, a count goes down by one."""
    return remaining if remaining < 0 else remaining - 1


def _layout_blob(root: Path, digest: object) -> bytes | None:
    """The file of ``digest`` in the layout at ``root``, or ``None`` (missing, or a digest that is not one)."""
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return None
    algorithm, _, encoded = digest.partition(":")
    path = root / "blobs" / algorithm / encoded
    return path.read_bytes() if path.is_file() else None


class _Server(ThreadingHTTPServer):
    """A threading server that wraps accepted connections in TLS; the handshake runs in the handler's thread
    (on its first read), so a client stuck in it never blocks the accept loop."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[_Handler], context: ssl.SSLContext | None) -> None:
        self.context = context
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.context is not None:
            sock = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request: object, client_address: object) -> None:
        """Quiet: clients that reject the certificate or hang up mid-answer are what the tests provoke."""


class _Handler(BaseHTTPRequestHandler):
    server_registry: Registry
    protocol_version = "HTTP/1.1"  # keep-alive, as real registries and the clients that reuse connections
    server_version = "test-registry/1"
    timeout = 30  # an idle kept-alive connection does not hold its thread forever

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without TCP_NODELAY, Nagle plus the client's delayed
        # ACK adds ~40 ms to every request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server_registry._lock:
            self.server_registry._connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server_registry._lock:
                self.server_registry._connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def _serve(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        form = (parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
                if headers.get("content-type", "").startswith("application/x-www-form-urlencoded") else {})
        if self.command not in ("GET", "HEAD"):
            # A push (always refused) may stream a chunked body this server does not read: end the connection
            # rather than parse the rest of it as the next request.
            self.close_connection = True
        recorded = Recorded(self.command, url.path, query, headers, form=form)
        self.server_registry._record(recorded)
        answer = self.server_registry._answer(self.command, url.path, query, headers, form)
        recorded.status = answer.status
        self.send_response(answer.status)
        answer.headers.setdefault("Docker-Distribution-API-Version", "registry/2.0")
        answer.headers["Content-Length"] = str(len(answer.body))
        for key, value in answer.headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        if not answer.truncate:
            self.wfile.write(answer.body)
            return
        self.wfile.write(answer.body[: len(answer.body) // 2])
        self.wfile.flush()
        self.close_connection = True
        # a reset mid-body, not a clean TLS close: the client sees fewer bytes than declared
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.connection, socket.SHUT_RDWR)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _serve
