"""The production ``Cluster``: a thin adapter from ``common.cluster.interface.Cluster`` to a real API server.

Built on the ``kubernetes`` client's ``ApiClient`` (auth plugins, TLS, token refresh), made once with its
:class:`~common.cluster.connection.ClientOptions` from the configuration :mod:`common.cluster.connection`
loads, but with our own request layer, because the reconciler and the producer work on plain
``dict`` manifests of any kind: paths come from discovery, bodies are JSON, and every error answer becomes
the specific ``ApiError`` subclass with the server's own message (``common.cluster.interface.error_from_status``).

Retry policy, in one place so every caller gets the same: 429 waits for ``Retry-After`` (capped) and
retries; 500/502/503/504 and connection failures retry with the options' backoff (a connection failure that
outlasts them is :class:`~common.cluster.interface.Unreachable`); a 409 on server-side
apply whose body carries no ``resourceVersion`` precondition is retried after a fresh read of the object
(the server's own optimistic-concurrency retries ran out); everything else is raised at once.

Discovery is read per group-version and cached; a kind the server does not serve raises ``UnknownKind``.
A miss re-reads that group-version at most once per ``discovery_refresh_interval`` so a CR whose CRD was
just created becomes usable without hammering the server, and ``invalidate_discovery`` lets a CRD watch
refresh it at once.

Writing as another identity (:meth:`KubeCluster.with_bearer`): a ClusterObjectSet's objects are written with a
token of the ServiceAccount it names. Such a view sends its writes with that bearer token and *only* that
credential: over a second connection pool whose configuration is the process's own (server, TLS verification,
proxy, pool size, timeouts, retry policy, User-Agent) with every credential removed (client certificate, token,
token refresh hook, basic auth), as client-go's ``rest.AnonymousClientConfig`` does. Dropping the client
certificate matters: an API server authenticates a request by its client certificate before its bearer token,
so a write presenting both would still be made as the process. Reads (GET, lists, watches, discovery) keep the
process's identity and connections. A write answered 401 (the token was revoked: its ServiceAccount was
deleted and made again, say) asks the token source for a new one and is sent once more.
"""

from __future__ import annotations

import builtins  # annotations inside KubeCluster after its list() method name the type as builtins.list
import copy
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, urlencode, urlsplit

import orjson
import urllib3

from common.cluster import ownership
from common.cluster.backoff import extra_jitter
from common.cluster.connection import (
    ClientOptions,
    connect,
    in_cluster_configuration,
    kubeconfig_configuration,
    load_configuration,
)
from common.cluster.interface import (
    ApiError,
    BadRequest,
    Conflict,
    InternalError,
    Invalid,
    NotFound,
    UnknownKind,
    Unreachable,
    error_from_status,
)
from common.cluster.watch import WatchEvent
from common.contract.objects import GVK, Obj

log = logging.getLogger(__name__)

CONTENT_JSON = "application/json"
CONTENT_APPLY = "application/apply-patch+yaml"
CONTENT_MERGE = "application/merge-patch+json"
CONTENT_JSON_PATCH = "application/json-patch+json"

RETRYABLE_CODES = frozenset({500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class Resource:
    """What discovery says about one kind."""

    gvk: GVK
    plural: str
    namespaced: bool
    has_status: bool

    def collection_path(self, namespace: str | None) -> str:
        base = f"/apis/{self.gvk.group}/{self.gvk.version}" if self.gvk.group else f"/api/{self.gvk.version}"
        if self.namespaced and namespace:
            return f"{base}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{base}/{self.plural}"

    def item_path(self, name: str, namespace: str | None, subresource: str = "") -> str:
        if not name:
            raise BadRequest(f"{self.gvk.kind}: metadata.name is required")
        if self.namespaced and not namespace:
            raise BadRequest(f"{self.gvk.kind} {name}: metadata.namespace is required (the kind is namespaced)")
        path = f"{self.collection_path(namespace)}/{quote(name, safe='')}"
        return f"{path}/{subresource}" if subresource else path


@dataclass(frozen=True)
class TokenGrant:
    """A token the TokenRequest API issued: the credential and the lifetime the server granted (which may be
    shorter than asked: ``--service-account-max-token-expiration``). ``repr`` never shows the token."""

    token: str = field(repr=False)
    lifetime: float


class BearerSource(Protocol):
    """Where a :meth:`KubeCluster.with_bearer` view gets its token for each write."""

    def token(self) -> str:
        """A current token (may raise ``ApiError`` when none can be issued)."""

    def rejected(self, token: str) -> None:
        """The server answered 401 to ``token``: do not hand it out again."""


class KubeCluster:
    """``Cluster`` over HTTP. Thread-safe: one instance serves all reconcile workers and watches.

    Made once with its :class:`~common.cluster.connection.ClientOptions` and never reconfigured: a view with
    other options (:meth:`with_options`) or another identity (:meth:`with_bearer`) is a new object."""

    def __init__(self, api_client: Any, options: ClientOptions = ClientOptions()) -> None:
        """Over an ``ApiClient`` made for ``options`` (:func:`~common.cluster.connection.connect`; the factories
        below do both)."""
        self.api_client = api_client
        self.options = options
        self._lock = threading.Lock()
        self._discovering = threading.Lock()   # held while a discovery request is in flight
        self._discovery: dict[str, dict[str, Resource]] = {}  # group/version -> kind -> Resource
        self._discovered_at: dict[str, float] = {}
        self._view = False   # a with_options/with_bearer view: its clients belong to the cluster it came from
        # with_bearer views: their writes' token, and the credential-free client they are sent with
        self._bearer: BearerSource | None = None
        self._writer_client: Any = None
        self._anonymous_client: Any = None   # built once, on the first with_bearer, shared by every view
        self._pools: dict[int, tuple[Any, str]] = {}  # id(ApiClient) -> (its pool of the API server, URL path)

    # ------------------------------------------------------------------------------------ construction
    @classmethod
    def connect(cls, configuration: Any, **options: Any) -> KubeCluster:
        """A client over ``configuration`` (a ``kubernetes.client.Configuration``, which it takes over) with the
        given :class:`~common.cluster.connection.ClientOptions` fields."""
        opts = ClientOptions(**options)
        return cls(connect(configuration, opts), opts)

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, *, context: str | None = None,
                        **options: Any) -> KubeCluster:
        """Build from a kubeconfig file (``None``: ``$KUBECONFIG`` or ``~/.kube/config``)."""
        return cls.connect(kubeconfig_configuration(path, context=context), **options)

    @classmethod
    def in_cluster(cls, **options: Any) -> KubeCluster:
        """Build from the pod's service account (:class:`~common.cluster.connection.ConfigError` outside a pod)."""
        return cls.connect(in_cluster_configuration(), **options)

    @classmethod
    def auto(cls, kubeconfig: str | None = None, *, context: str | None = None, **options: Any) -> KubeCluster:
        """Build from the configuration found in the one order (:func:`~common.cluster.connection.load_configuration`):
        an explicit kubeconfig, else in-cluster, else ``$KUBECONFIG``/~/.kube."""
        return cls.connect(load_configuration(kubeconfig, context=context), **options)

    def with_options(self, **changes: Any) -> KubeCluster:
        """This cluster with other :class:`~common.cluster.connection.ClientOptions` (itself when nothing
        changes). Options that shape the connections (pool size, User-Agent) make a new client over a copy of
        this one's configuration (sharing its discovery cache), which the caller closes; any other change makes a
        view sharing this cluster's connections and discovery cache."""
        options = dataclasses.replace(self.options, **changes)
        if options == self.options:
            return self
        if (options.pool_size, options.user_agent) != (self.options.pool_size, self.options.user_agent):
            client = KubeCluster(connect(copy.deepcopy(self.api_client.configuration), options), options)
            # the same API server: what discovery found holds for both
            client._discovery, client._discovered_at, client._lock = self._discovery, self._discovered_at, self._lock
            client._discovering = self._discovering
            return client
        view = copy.copy(self)   # shallow: the same ApiClient, discovery dicts and lock
        view.options = options
        view._view = True
        return view

    @property
    def pool_size(self) -> int:
        """Connections this client keeps per host."""
        return int(self.api_client.configuration.connection_pool_maxsize or 1)

    def close(self) -> None:
        if self._view:
            return   # its clients belong to the cluster it was made from
        self.api_client.close()
        if self._anonymous_client is not None:
            self._anonymous_client.close()

    # ------------------------------------------------------------------------------------ identities
    def with_bearer(self, source: BearerSource) -> KubeCluster:
        """A view of this cluster whose writes (create, apply, patch, update, delete) carry ``source``'s token
        and no other credential; its reads, discovery and watches are this cluster's own. Views share this
        cluster's discovery cache, options, request observer and one credential-free connection pool."""
        view = copy.copy(self)   # shallow: the same ApiClient, discovery dicts and lock
        view._view = True
        view._bearer = source
        view._writer_client = self._credential_free_client()
        return view

    def _credential_free_client(self) -> Any:
        """The process's connection settings without any of its credentials (client-go's
        ``rest.AnonymousClientConfig``), built once."""
        with self._lock:
            if self._anonymous_client is None:
                cfg = copy.deepcopy(self.api_client.configuration)
                cfg.cert_file = None
                cfg.key_file = None
                cfg.api_key = {}
                cfg.api_key_prefix = {}
                cfg.refresh_api_key_hook = None
                cfg.username = None
                cfg.password = None
                cfg.access_token = None
                self._anonymous_client = connect(cfg, self.options)
            return self._anonymous_client

    def request_token(self, namespace: str, name: str, *, expiration_seconds: int) -> TokenGrant:
        """A token of ServiceAccount ``namespace/name`` from the TokenRequest API, for the API server's default
        audiences (none asked for). The lifetime is what the server granted (its answer's
        ``spec.expirationSeconds``), counted by the caller's own clock, never compared with the server's."""
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/serviceaccounts/{quote(name, safe='')}/token"
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": int(expiration_seconds)}}
        answer = self.request("token", "POST", path, body=body)
        token = str((answer.get("status") or {}).get("token") or "")
        if not token:
            raise InternalError(f"TokenRequest for ServiceAccount {namespace}/{name}: the answer holds no token")
        try:
            lifetime = float((answer.get("spec") or {}).get("expirationSeconds") or expiration_seconds)
        except (TypeError, ValueError):
            lifetime = float(expiration_seconds)
        return TokenGrant(token, lifetime)

    # ------------------------------------------------------------------------------------- HTTP layer
    def _open(self, method: str, path: str, query: dict[str, str] | None, body: Any, content_type: str,
              timeout: float | tuple[float, float] | None, token: str | None = None, *,
              stream: bool = False) -> Answer:
        """Send one request; returns its :class:`Answer` (status not checked). The body is read in full unless
        ``stream`` (a watch), whose connection the caller releases. With ``token`` it goes over the
        credential-free client carrying that bearer token alone.

        The request goes straight to urllib3's connection pool of the API server: the ``ApiClient`` still
        supplies what it owns (the User-Agent, its auth settings with their refresh hooks, the TLS and proxy
        configuration of its pool manager), but not its per-request layer, whose URL parsing, content-type
        matching and stdlib JSON encoding cost more CPU than the rest of a request together."""
        headers = {"Accept": CONTENT_JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        client = self.api_client
        if token is not None:
            client = self._writer_client
            headers["Authorization"] = f"Bearer {token}"
        # what ApiClient.param_serialize adds, in its order: its default headers, its cookie, its auth settings
        headers.update(client.default_headers)
        if client.cookie:
            headers["Cookie"] = client.cookie
        client.update_params_for_auth(headers, None, ["BearerToken"], path, method, None)
        q = [(k, v) for k, v in (query or {}).items() if v is not None]
        target = f"{path}?{urlencode(q)}" if q else path
        data = None if body is None else encode_json(body)
        resp = self._send(client, method, target, data, headers, _timeout(timeout), stream)
        return Answer(resp)

    def _send(self, client: Any, method: str, target: str, data: bytes | None, headers: dict[str, str],
              timeout: urllib3.Timeout, stream: bool) -> Any:
        """One round trip over ``client``'s pool manager. Without a proxy, over the API server's own connection
        pool, found once (and again after a ``close``): no URL parsing or pool lookup per request."""
        manager = client.rest_client.pool_manager
        if type(manager) is not urllib3.PoolManager:   # a proxy: its manager knows how to address it
            return manager.urlopen(method, client.configuration.host + target, body=data, headers=headers,
                                   timeout=timeout, preload_content=not stream)
        found = self._pools.get(id(client))
        if found is None or found[0].pool is None:   # first use, or closed since (pools are made again on demand)
            host = client.configuration.host
            # a server URL with a path (Rancher's https://rancher/k8s/clusters/c-xyz, kubectl proxy
            # --api-prefix) keeps it in front of every request, as the client library's own URLs do
            found = self._pools[id(client)] = (manager.connection_from_url(host), urlsplit(host).path.rstrip("/"))
        pool, prefix = found
        return pool.urlopen(method, prefix + target, body=data, headers=headers, timeout=timeout, redirect=False,
                            preload_content=not stream)

    def request(self, verb: str, method: str, path: str, *, query: dict[str, str] | None = None,
                body: Any = None, content_type: str = CONTENT_JSON, retry: bool = True) -> Obj:
        """One API call with the retry policy; returns the decoded JSON body or raises ``ApiError``."""
        attempt = 0
        renewed = False   # a write of a with_bearer view gets one new token after a 401
        while True:
            attempt += 1
            # the token is asked for on every attempt: a retry after a long backoff may need a fresh one
            token = self._bearer.token() if self._bearer is not None and method != "GET" else None
            try:
                resp = self._open(method, path, query, body, content_type, self.options.request_timeout, token)
                code = resp.status
                data = resp.read()
            except (urllib3.exceptions.HTTPError, OSError) as e:
                self._observe(verb, 0)
                if retry and attempt <= self.options.max_retries:
                    delay = self.options.backoff.delay(attempt)
                    log.warning("%s %s failed (%s); retrying in %.2fs", method, path, type(e).__name__, delay)
                    self.options.sleep(delay)
                    continue
                raise Unreachable(f"{method} {path}: cannot reach the API server: {e}", e) from None
            self._observe(verb, code)
            if 200 <= code < 300:
                return _decode(data) if data else {}
            status = _decode(data, lenient=True)
            retry_after = _retry_after(resp.headers.get("Retry-After"))
            err = error_from_status(code, status, retry_after=retry_after)
            if code == 401 and token is not None and self._bearer is not None and not renewed:
                renewed = True
                log.info("%s %s: token rejected (401); retrying with a new one", method, path)
                self._bearer.rejected(token)
                continue
            if retry and attempt <= self.options.max_retries:
                if code == 429:
                    delay = min(retry_after if retry_after is not None else self.options.backoff.delay(attempt),
                                self.options.retry_after_cap)
                    delay = extra_jitter(delay, self.options.retry_jitter)
                    log.info("%s %s throttled (429); retrying in %.2fs", method, path, delay)
                    self.options.sleep(delay)
                    continue
                if code in RETRYABLE_CODES:
                    delay = retry_after if retry_after is not None else self.options.backoff.delay(attempt)
                    delay = min(delay, self.options.retry_after_cap)
                    log.warning("%s %s answered %d (%s); retrying in %.2fs", method, path, code, err.message,
                                delay)
                    self.options.sleep(delay)
                    continue
            raise err

    def _observe(self, verb: str, code: int) -> None:
        if self.options.observer is not None:
            try:
                self.options.observer(verb, code)
            except Exception:  # a metrics bug must never fail an API call
                log.exception("request observer failed")

    # -------------------------------------------------------------------------------------- discovery
    def resource(self, api_version: str, kind: str) -> Resource:
        """The discovery entry of a kind; ``UnknownKind`` when the server does not serve it."""
        gvk = GVK.parse(api_version, kind)
        if not gvk.version or not kind:
            raise UnknownKind(f'no matches for kind "{kind}" in version "{api_version}"')
        gv = gvk.api_version
        with self._lock:
            res = self._discovery.get(gv, {}).get(kind)
            fetched_at = self._discovered_at.get(gv)
        if res is not None:
            return res
        if fetched_at is None or time.monotonic() - fetched_at >= self.options.discovery_refresh_interval:
            # One discovery at a time: the threads that need a group-version at once (a phase's first writes, 8
            # in flight) wait for the one asking, instead of each sending the same GET.
            with self._discovering:
                with self._lock:
                    again = self._discovered_at.get(gv)
                if again is None or again == fetched_at:   # nobody discovered it meanwhile
                    self._discover(gvk)
            with self._lock:
                res = self._discovery.get(gv, {}).get(kind)
            if res is not None:
                return res
        raise UnknownKind(f'no matches for kind "{kind}" in version "{gv}"')

    def _discover(self, gvk: GVK) -> None:
        gv = gvk.api_version
        path = f"/apis/{gv}" if gvk.group else f"/api/{gv}"
        try:
            doc = self.request("discovery", "GET", path)
        except NotFound:
            doc = {"resources": []}
        kinds: dict[str, Resource] = {}
        subs = {r.get("name", "") for r in doc.get("resources") or []}
        for r in doc.get("resources") or []:
            name = str(r.get("name", ""))
            if "/" in name:
                continue
            k = str(r.get("kind", ""))
            kinds[k] = Resource(GVK(gvk.group, gvk.version, k), name, bool(r.get("namespaced")),
                                f"{name}/status" in subs)
        with self._lock:
            self._discovery[gv] = kinds
            self._discovered_at[gv] = time.monotonic()

    def invalidate_discovery(self, group: str | None = None) -> None:
        """Forget cached discovery (of one API group, or all) so the next use re-reads it: called when a
        CustomResourceDefinition appears, changes or goes away."""
        with self._lock:
            for gv in list(self._discovery):
                if group is None or GVK.parse(gv, "x").group == group:
                    self._discovery.pop(gv, None)
                    self._discovered_at.pop(gv, None)

    def is_namespaced(self, api_version: str, kind: str) -> bool:
        return self.resource(api_version, kind).namespaced

    def resource_name(self, api_version: str, kind: str) -> str:
        return self.resource(api_version, kind).plural

    # --------------------------------------------------------------------------------------- the verbs
    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        res = self.resource(api_version, kind)
        return self.request("get", "GET", res.item_path(name, namespace))

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             label_selector: str | None = None, *, limit: int | None = None) -> list[Obj]:
        if limit is not None:  # one page of that size: the server stops there
            items, _ = self.list_with_version(api_version, kind, namespace, label_selector, page_size=limit,
                                              first_page=True)
            return items[:limit]
        items, _ = self.list_with_version(api_version, kind, namespace, label_selector)
        return items

    def list_with_version(self, api_version: str, kind: str, namespace: str | None = None,
                          label_selector: str | None = None, *, page_size: int = 500, first_page: bool = False,
                          ) -> tuple[builtins.list[Obj], str]:
        """List all pages (``first_page``: only the first); returns the items (with apiVersion/kind filled in,
        which the server omits on built-in lists) and the list's resourceVersion, the point a watch resumes from.
        An expired ``continue`` token (410) restarts the list from the beginning."""
        res = self.resource(api_version, kind)
        path = res.collection_path(namespace)
        while True:
            items: list[Obj] = []
            cont = ""
            rv = ""
            try:
                while True:
                    query = {"limit": str(page_size)}
                    if label_selector:
                        query["labelSelector"] = label_selector
                    if cont:
                        query["continue"] = cont
                    page = self.request("list", "GET", path, query=query)
                    for item in page.get("items") or []:
                        item.setdefault("apiVersion", res.gvk.api_version)
                        item.setdefault("kind", res.gvk.kind)
                        items.append(item)
                    meta = page.get("metadata") or {}
                    rv = str(meta.get("resourceVersion") or rv)
                    cont = str(meta.get("continue") or "")
                    if not cont or first_page:
                        return items, rv
            except ApiError as e:
                if e.code == 410 and cont:
                    log.info("list %s continue token expired; listing again", path)
                    continue
                raise

    def watch(self, api_version: str, kind: str, namespace: str | None = None, *,
              label_selector: str | None = None, resource_version: str = "", timeout_seconds: int = 300,
              on_open: Callable[[Any], None] | None = None) -> Iterator[WatchEvent]:
        """Stream watch events from ``resource_version``. Ends when the server closes the stream; raises
        ``ApiError`` when the watch request itself is refused (e.g. ``Gone``), and lets connection errors
        (``urllib3.exceptions.HTTPError``/``OSError``) through so the caller resumes. ``on_open`` receives
        the live response so another thread can cut the stream (``shutdown()``) to stop the watch."""
        res = self.resource(api_version, kind)
        query = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": str(timeout_seconds)}
        if resource_version:
            query["resourceVersion"] = resource_version
        if label_selector:
            query["labelSelector"] = label_selector
        path = res.collection_path(namespace)
        try:
            resp = self._open("GET", path, query, None, CONTENT_JSON, (10.0, timeout_seconds + 30.0), stream=True)
        except (urllib3.exceptions.HTTPError, OSError):
            self._observe("watch", 0)
            raise
        self._observe("watch", resp.status)
        raw = resp.response
        try:
            if resp.status != 200:
                data = raw.read()
                raise error_from_status(resp.status, _decode(data, lenient=True),
                                        retry_after=_retry_after(resp.headers.get("Retry-After")))
            if on_open is not None:
                on_open(raw)
            buf = b""
            for chunk in raw.stream(65536, decode_content=True):
                buf += chunk
                if b"\n" not in chunk:
                    continue
                *lines, buf = buf.split(b"\n")   # one split per chunk, however many events it holds
                for line in lines:
                    if line.strip():
                        yield _watch_event(line, res)
            if buf.strip():
                yield _watch_event(buf, res)
        finally:
            raw.release_conn()

    def create(self, obj: Obj, *, dry_run: bool = False, field_manager: str | None = None) -> Obj:
        res, name, ns = self._target(obj)
        if res.namespaced and not ns:
            raise BadRequest(f"{res.gvk.kind} {name}: metadata.namespace is required (the kind is namespaced)")
        query = {}
        if dry_run:
            query["dryRun"] = "All"
        if field_manager:
            query["fieldManager"] = field_manager
        return self.request("create", "POST", res.collection_path(ns), query=query or None, body=obj)

    def apply(self, obj: Obj, *, field_manager: str, force: bool = True, dry_run: bool = False) -> Obj:
        res, name, ns = self._target(obj)
        path = res.item_path(name, ns)
        query = {"fieldManager": field_manager, "force": "true" if force else "false"}
        if dry_run:
            query["dryRun"] = "All"
        live = self._apply_once(path, query, obj, force)
        if dry_run:
            return live
        for _ in range(3):
            patch = ownership.upgrade_patch(live, field_manager)
            if patch is None:
                return live
            # The first apply after our own plain create: hand the create's fields to the apply entry, then
            # apply again so fields this intent no longer declares are released (client-go's csaupgrade).
            try:
                self.request("patch", "PATCH", path, body=patch, content_type=CONTENT_JSON_PATCH)
            except (Conflict, Invalid) as e:  # written meanwhile: the resourceVersion test failed
                log.info("apply %s: ownership upgrade raced a writer (%s); retrying from a fresh read", path,
                         e.message)
                live = self.request("get", "GET", path)
                continue
            return self._apply_once(path, query, obj, force)
        raise Conflict(f"apply {path}: the object kept changing while its field ownership was upgraded")

    def _apply_once(self, path: str, query: dict[str, str], obj: Obj, force: bool) -> Obj:
        meta = obj.get("metadata") or {}
        precondition = bool(meta.get("resourceVersion"))
        for attempt in range(1, 4):
            try:
                return self.request("apply", "PATCH", path, query=query, body=obj, content_type=CONTENT_APPLY)
            except Conflict as e:
                # A body with a resourceVersion is the caller's precondition: report it. Without one, and
                # with force (no field conflicts are possible), a 409 means the server's own update retries
                # lost a race: re-read and send the same intent again, a bounded number of times.
                if precondition or not force or attempt == 3:
                    raise
                log.info("apply %s: conflict (%s); retrying from a fresh read", path, e.message)
                try:
                    fresh = self.request("get", "GET", path)
                except NotFound:
                    fresh = None
                if fresh is not None and meta.get("uid") and (fresh.get("metadata") or {}).get("uid") != meta["uid"]:
                    raise
        raise InternalError(f"apply {path}: retries exhausted")  # unreachable: the loop returns or raises

    def merge_patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Obj, *,
                    resource_version: str | None = None, subresource: str = "") -> Obj:
        res = self.resource(api_version, kind)
        if subresource == "status" and not res.has_status:
            raise NotFound(f"{res.gvk.kind} has no status subresource")
        body = dict(patch)
        if resource_version:
            body["metadata"] = dict(body.get("metadata") or {}, resourceVersion=resource_version)
        return self.request("patch", "PATCH", res.item_path(name, namespace, subresource), body=body,
                            content_type=CONTENT_MERGE)

    def update(self, obj: Obj) -> Obj:
        res, name, ns = self._target(obj)
        return self.request("update", "PUT", res.item_path(name, ns), body=obj)

    def update_status(self, obj: Obj) -> Obj:
        res, name, ns = self._target(obj)
        if not res.has_status:
            raise NotFound(f"{res.gvk.kind} has no status subresource")
        return self.request("update", "PUT", res.item_path(name, ns, "status"), body=obj)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               uid: str | None = None, resource_version: str | None = None,
               propagation_policy: str | None = None) -> Obj | None:
        res = self.resource(api_version, kind)
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        pre = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if pre:
            body["preconditions"] = pre
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        out = self.request("delete", "DELETE", res.item_path(name, namespace), body=body)
        # The server answers a Status or the object (marked, or the last state of a Pod); what it answers is
        # passed on as it is, and is never read as "gone" (see Cluster.delete).
        if isinstance(out, dict) and out.get("kind") not in (None, "", "Status"):
            out.setdefault("apiVersion", res.gvk.api_version)
            return out
        return None

    def _target(self, obj: Obj) -> tuple[Resource, str, str | None]:
        if not isinstance(obj, dict):
            raise BadRequest("object must be a mapping")
        res = self.resource(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        meta = obj.get("metadata") or {}
        return res, str(meta.get("name") or ""), (meta.get("namespace") or None) if res.namespaced else None


def decode_json(data: bytes | str) -> Any:
    """JSON text to Python data, with orjson (several times faster than the stdlib, and every answer and watch
    event of the API server is decoded). What orjson refuses but the stdlib reads (a lone surrogate escape) is
    read by the stdlib, whose ``ValueError`` is then the answer's. Integers beyond 64 bits, which no API server
    sends (it decodes numbers as Go's int64 or float64), would come back as floats."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def encode_json(value: Any) -> bytes:
    """A request body: compact UTF-8 JSON from orjson; the stdlib for what orjson refuses (integers beyond 64
    bits, non-string keys)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


def _decode(data: bytes, *, lenient: bool = False) -> Any:
    try:
        return decode_json(data)
    except ValueError:
        if lenient:
            text = data[:200].decode("utf-8", "replace").strip()
            return {"message": text} if text else None
        raise InternalError(f"the API server answered with invalid JSON: {data[:80]!r}") from None


class Answer:
    """A response as :meth:`KubeCluster._open` returns it: ``status``, ``headers``, ``read()`` (the body) and
    ``response`` (urllib3's own, for a stream)."""

    __slots__ = ("headers", "response", "status")

    def __init__(self, response: Any) -> None:
        self.response = response
        self.status: int = response.status
        self.headers: Any = response.headers

    def read(self) -> bytes:
        return bytes(self.response.data or b"")


_TIMEOUTS: dict[float | tuple[float, float] | None, urllib3.Timeout] = {}


def _timeout(value: float | tuple[float, float] | None) -> urllib3.Timeout:
    """urllib3's Timeout for a total (a number) or a (connect, read) pair, made once per value."""
    t = _TIMEOUTS.get(value)
    if t is None:
        if value is None:
            t = urllib3.Timeout(total=None)
        elif isinstance(value, tuple):
            t = urllib3.Timeout(connect=value[0], read=value[1])
        else:
            t = urllib3.Timeout(total=value)
        _TIMEOUTS[value] = t
    return t


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _watch_event(line: bytes, res: Resource) -> WatchEvent:
    try:
        ev = decode_json(line)
    except ValueError:
        raise InternalError(f"watch stream sent invalid JSON: {line[:80]!r}") from None
    etype = str(ev.get("type") or "")
    obj = ev.get("object") or {}
    if etype != "ERROR" and isinstance(obj, dict):
        obj.setdefault("apiVersion", res.gvk.api_version)
        obj.setdefault("kind", res.gvk.kind)
    return WatchEvent(etype, obj)
