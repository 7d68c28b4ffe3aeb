"""A local HTTP server that plays the Kubernetes API server, for HTTP-level tests and the bench.

It speaks the wire protocol the ``kubernetes`` client and ``common.cluster.kube`` use: discovery (``/api``,
``/apis``, per group-version resource lists), CRUD on namespaced and cluster-scoped resources, the
``status`` subresource, server-side apply (``application/apply-patch+yaml`` with ``fieldManager``/``force``,
an approximation: each manager's last applied intent is remembered so fields it stops declaring are
released), JSON merge patch, JSON patch, deletes with preconditions and finalizers, label selectors, paged
lists, and chunked watch streams with resourceVersion resume, bookmarks and 410 Gone after compaction.
CustomResourceDefinitions register their kinds in discovery when created (optionally only after
``crd_discovery_delay`` seconds) and are immediately Established.

Deletion answers and announces what a real server does (kube-apiserver 1.36, see ``_delete``): an object with
finalizers is marked (``deletionTimestamp``; MODIFIED; the DELETE answers the object) and goes when the last
one is removed (DELETED only); a Namespace gets the ``kubernetes`` finalizer when created and a DELETE only
marks it ``Terminating`` until the namespace controller, played by ``finish_namespace``, has emptied it; a
Pod bound to a node is marked for its grace period until its kubelet (``delete_object(...,
grace_period_seconds=0)``) removes it; anything else goes at once, answered with a ``Status`` (a Pod: with
its last state).

Identities, as a real server with RBAC sees them (off until a test sets ``authorize``): ``POST
.../serviceaccounts/<name>/token`` (the TokenRequest API) issues tokens of existing ServiceAccounts (``issued``
lists them; ``max_token_seconds`` shortens lifetimes as ``--service-account-max-token-expiration`` does);
a request carrying such a token is made as ``system:serviceaccount:<ns>:<name>``, any other token as
``admin_user``. ``authorize(user, verb, resource, namespace, name)`` decides each request (403 in the API
server's words otherwise), and ``revoke`` makes a token answer 401.

Tests drive failures through it: ``inject`` queues error answers (409, 410, 429 with Retry-After, 500...)
for matching requests, ``drop_watches`` cuts open watch streams mid-way, ``compact`` forgets the event
history so resuming from an old resourceVersion gets 410. Every request is recorded in ``requests`` (verb,
path, query, content type, parsed body) so tests can assert exactly what a client sent.

Run standalone with ``python -m tests.support.fake_apiserver --port 8001``.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import itertools
import json
import re
import select
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jsonpatch
import yaml

from common.contract import labels as selectors
from common.contract.objects import apply_merge_patch
from common.testing.memcluster import UNTYPED_GROUPS, drop_empty

Obj = dict[str, Any]


@dataclass
class Kind:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    status_subresource: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


BUILTIN_KINDS = [
    Kind("", "v1", "Namespace", "namespaces", False, True),
    Kind("", "v1", "ConfigMap", "configmaps", True),
    Kind("", "v1", "Secret", "secrets", True),
    Kind("", "v1", "Service", "services", True, True),
    Kind("", "v1", "ServiceAccount", "serviceaccounts", True),
    Kind("", "v1", "Event", "events", True),
    Kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, True),
    Kind("", "v1", "Pod", "pods", True, True),
    Kind("", "v1", "PersistentVolume", "persistentvolumes", False, True),
    Kind("apps", "v1", "Deployment", "deployments", True, True),
    Kind("apps", "v1", "StatefulSet", "statefulsets", True, True),
    Kind("coordination.k8s.io", "v1", "Lease", "leases", True),
    Kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, True),
    Kind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    Kind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    Kind("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    Kind("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    Kind("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
         "validatingwebhookconfigurations", False),
]
COS_KIND = Kind("olm.operatorframework.io", "v1", "ClusterObjectSet", "clusterobjectsets", False, True)
# Not built in (it would change every discovery answer): ``server.register(SUBJECT_ACCESS_REVIEW)`` where needed.
SUBJECT_ACCESS_REVIEW = Kind("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False)


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: Any
    token: str = ""  # the bearer token sent: tells apart clients with different kubeconfigs
    status: int = 0  # the HTTP status answered
    user_agent: str = ""  # the User-Agent header: who sent it, as the API server's audit log records it

    @property
    def verb(self) -> str:
        """The Kubernetes verb (get, list, watch, create, update, patch, apply, delete)."""
        if self.method == "GET":
            parts = [p for p in self.path.split("/") if p]
            if parts in (["api"], ["apis"]) or (parts[:1] == ["api"] and len(parts) == 2) or \
                    (parts[:1] == ["apis"] and len(parts) == 3):
                return "discovery"
            if self.query.get("watch") in ("true", "1"):
                return "watch"
            return "get" if _is_item_path(self.path) else "list"
        if self.method == "PATCH":
            return "apply" if self.content_type.startswith("application/apply-patch") else "patch"
        return {"POST": "create", "PUT": "update", "DELETE": "delete"}.get(self.method, self.method.lower())


@dataclass
class _Fault:
    method: str
    path: re.Pattern[str]
    status: int
    body: Obj | None
    headers: dict[str, str]
    times: int
    query: dict[str, str] = field(default_factory=dict)


def _is_item_path(path: str) -> bool:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"]:
        rest = parts[3:]
    else:
        return False
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    return len(rest) >= 2


def _now(later: int = 0) -> str:
    return (datetime.now(UTC) + timedelta(seconds=later)).strftime("%Y-%m-%dT%H:%M:%SZ")


NAMESPACE_FINALIZER = "kubernetes"


def _is(kind: Kind, name: str) -> bool:
    """Whether ``kind`` is the core (group "") kind ``name``."""
    return kind.group == "" and kind.kind == name


def _held(kind: Kind, obj: Obj) -> bool:
    """Whether something keeps an object being deleted: its finalizers, a Namespace's ``spec.finalizers``, a
    Pod's grace period (its kubelet has not confirmed yet)."""
    meta = obj.get("metadata") or {}
    if meta.get("finalizers"):
        return True
    if _is(kind, "Namespace") and (obj.get("spec") or {}).get("finalizers"):
        return True
    return _is(kind, "Pod") and int(meta.get("deletionGracePeriodSeconds") or 0) > 0


def _pod_grace(pod: Obj, requested: Any) -> int:
    """The grace period a Pod's deletion gets: none when it was never bound to a node (nothing runs it)."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return 0
    if requested is not None:
        return max(0, int(requested))
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return 30 if value is None else max(0, int(value))


def status_body(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": message, "reason": reason}
    if details:
        body["details"] = details
    body["code"] = code   # last, after details, as a real API server orders them
    return body


class _HttpError(Exception):
    def __init__(self, code: int, reason: str, message: str, headers: dict[str, str] | None = None,
                 details: Obj | None = None) -> None:
        self.details = details
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.headers = headers or {}


def _release(live: Any, old_intent: Any, new_intent: Any) -> Any:
    """Remove from ``live`` the fields ``old_intent`` declared and ``new_intent`` no longer does."""
    if not isinstance(live, dict) or not isinstance(old_intent, dict):
        return live
    new_intent = new_intent if isinstance(new_intent, dict) else {}
    for k, v in old_intent.items():
        if k not in live:
            continue
        if k not in new_intent:
            if k in ("apiVersion", "kind", "metadata"):
                continue
            del live[k]
        elif isinstance(v, dict):
            live[k] = _release(live[k], v, new_intent[k])
    return live


def _overlay(live: Any, intent: Any) -> Any:
    """Apply an intent over the live object: maps merge recursively, lists and scalars replace."""
    if not isinstance(intent, dict) or not isinstance(live, dict):
        return copy.deepcopy(intent)
    out = dict(live)
    for k, v in intent.items():
        out[k] = _overlay(live.get(k), v)
    return out


def _leaves(obj: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(obj, dict) and obj:
        out: dict[tuple[str, ...], Any] = {}
        for k, v in obj.items():
            out.update(_leaves(v, (*prefix, k)))
        return out
    return {prefix: obj}


_NOT_OWNED = frozenset({("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"),
                        ("metadata", "resourceVersion"), ("metadata", "uid")})
_ABSENT = object()


def _normalize(kind: Kind, obj: Obj) -> None:
    """What a real server does to a built-in object before storing it: ``stringData`` merged into ``data``
    (base64), empty collections dropped. Custom resources keep what they were sent."""
    if kind.group in UNTYPED_GROUPS:
        return
    if kind.group == "" and kind.kind == "Secret" and "stringData" in obj:
        data = dict(obj.get("data") or {})
        for k, v in (obj.pop("stringData") or {}).items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data
    cleaned = drop_empty(obj)
    obj.clear()
    obj.update(cleaned)


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for k in path:
        if not isinstance(obj, dict) or k not in obj:
            return _ABSENT
        obj = obj[k]
    return obj


def _fields_v1(paths: list[tuple[str, ...]]) -> Obj:
    out: Obj = {}
    for p in sorted(paths):
        cur = out
        for k in p:
            cur = cur.setdefault(f"f:{k}", {})
    return out


class FakeApiServer:
    """The fake API server; use as a context manager or call ``start()``/``stop()``."""

    def __init__(self, *, with_cos_crd: bool = True, history: int = 100_000,
                 crd_discovery_delay: float = 0.0, record: bool = True, namespace_lifecycle: bool = False,
                 path_prefix: str = "") -> None:
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self.kinds: dict[tuple[str, str], Kind] = {}  # (group/version, kind) -> Kind
        for k in BUILTIN_KINDS:
            self.register(k)
        if with_cos_crd:
            self.register(COS_KIND)
        self._store: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}  # (group, plural) -> objs
        self._applied: dict[tuple[str, str, str, str, str], Obj] = {}  # (group, plural, ns, name, mgr)
        self._rv = itertools.count(1)
        self._last_rv = 0
        # (rv, group, plural, type, object, labels before the change)
        self._history: deque[tuple[int, str, str, str, Obj, dict | None]] = deque(maxlen=history)
        self._compacted_rv = 0
        self._faults: list[_Fault] = []
        self._watch_gen = 0
        self._watch_abrupt = False
        self._open_watches: set[socket.socket] = set()
        self.requests: list[Recorded] = []
        self.record = record
        self.crd_discovery_delay = crd_discovery_delay
        # NamespaceLifecycle admission: no new object in a namespace that does not exist (404, as a real
        # server answers). Off by default: most tests never create the namespaces their objects live in.
        self.namespace_lifecycle = namespace_lifecycle
        # served under a path, as behind Rancher (https://rancher/k8s/clusters/c-xyz) or `kubectl proxy
        # --api-prefix`: a request without it is a 404, and ``url`` includes it
        self.path_prefix = path_prefix.rstrip("/")
        # identities (see the module docstring)
        self.admin_user = "admin"
        self.authorize: Callable[[str, str, str, str, str], bool] | None = None
        self.max_token_seconds: int | None = None
        self.issued: list[tuple[str, str, str]] = []   # (token, namespace, name), in order
        self._token_users: dict[str, str] = {}
        self._revoked: set[str] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------------------------------- lifecycle
    def start(self, port: int = 0) -> FakeApiServer:
        server = self

        class Handler(_Handler):
            api = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="fake-apiserver",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self.drop_watches(abrupt=True)
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}{self.path_prefix}"

    def write_kubeconfig(self, path: str, token: str = "fake-token") -> str:
        """Write a kubeconfig naming this server (plain HTTP, the given bearer token) and return its path."""
        cfg = {
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        }
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(cfg, f)
        return path

    # ------------------------------------------------------------------------------------- test controls
    def register(self, kind: Kind) -> None:
        with self._lock:
            self.kinds[(kind.api_version, kind.kind)] = kind

    def unregister(self, api_version: str, kind: str) -> None:
        with self._lock:
            self.kinds.pop((api_version, kind), None)

    def inject(self, method: str, path: str, status: int, *, body: Obj | None = None,
               headers: dict[str, str] | None = None, times: int = 1,
               query: dict[str, str] | None = None) -> None:
        """Answer the next ``times`` requests whose method matches and whose path fully matches the regex
        ``path`` (and whose query includes ``query``) with ``status``; the default body is a Status."""
        with self._lock:
            self._faults.append(_Fault(method.upper(), re.compile(path), status, body, headers or {}, times,
                                       query or {}))

    def drop_watches(self, *, abrupt: bool = True) -> None:
        """End every open watch stream: ``abrupt`` cuts the connection mid-chunk, otherwise the stream
        ends cleanly as on a server-side timeout."""
        with self._lock:
            self._watch_gen += 1
            self._watch_abrupt = abrupt
            if abrupt:
                for s in list(self._open_watches):
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)
            self._changed.notify_all()

    def compact(self) -> None:
        """Forget the event history: a watch resuming from an older resourceVersion gets 410 Gone."""
        with self._lock:
            self._history.clear()
            self._compacted_rv = self._last_rv

    def user_of(self, token: str) -> str:
        """Who a request with ``token`` is made as."""
        with self._lock:
            return self._token_users.get(token, self.admin_user)

    def revoke(self, token: str) -> None:
        """Answer 401 to every later request carrying ``token`` (its ServiceAccount deleted and made again)."""
        with self._lock:
            self._revoked.add(token)

    def _authorize(self, method: str, path: str, query: dict[str, str], token: str) -> None:
        if token in self._revoked:
            raise _HttpError(401, "Unauthorized", "Unauthorized")
        if self.authorize is None:
            return
        try:
            kind, ns, name, sub, doc = self._resolve(path)
        except _HttpError:
            return
        if kind is None or doc is not None:
            return
        user = self.user_of(token)
        if method == "GET":
            verb = "watch" if query.get("watch") in ("true", "1") else ("get" if name else "list")
        else:
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        resource = f"{kind.plural}/{sub}" if sub else kind.plural
        if self.authorize(user, verb, resource, ns or "", name or ""):
            return
        qualified = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
        what = f'{qualified} "{name}"' if name else qualified
        where = f'in the namespace "{ns}"' if ns else "at the cluster scope"
        raise _HttpError(403, "Forbidden", f'{what} is forbidden: User "{user}" cannot {verb} resource '
                                           f'"{resource}" in API group "{kind.group}" {where}',
                         details={**({"name": name} if name else {}), **({"group": kind.group} if kind.group else {}),
                                  "kind": kind.plural})

    def _access_review(self, body: Any) -> Obj:
        """A SubjectAccessReview answered with ``authorize`` (register ``SUBJECT_ACCESS_REVIEW`` first); no
        ``authorize``: everything is allowed, as with no RBAC."""
        spec = dict((body or {}).get("spec") or {})
        attrs = spec.get("resourceAttributes") or {}
        resource = str(attrs.get("resource") or "") + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
        allowed = self.authorize is None or self.authorize(str(spec.get("user") or ""), str(attrs.get("verb") or ""),
                                                           resource, str(attrs.get("namespace") or ""),
                                                           str(attrs.get("name") or ""))
        return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
                "spec": spec, "status": {"allowed": bool(allowed)}}

    def _token(self, ns: str, name: str, body: Any) -> Obj:
        """The TokenRequest API: a new token of an existing ServiceAccount."""
        sa_kind = self._find_kind("v1", "ServiceAccount")
        self._get(sa_kind, ns, name)   # 404 `serviceaccounts "<name>" not found`
        spec = dict((body or {}).get("spec") or {})
        seconds = int(spec.get("expirationSeconds") or 3600)
        if seconds < 600:
            raise _HttpError(422, "Invalid", f'TokenRequest.authentication.k8s.io "{name}" is invalid: '
                                             f"spec.expirationSeconds: Invalid value: {seconds}: may not specify "
                                             "a duration less than 10 minutes")
        if self.max_token_seconds is not None:
            seconds = min(seconds, self.max_token_seconds)
        token = f"sa-token-{ns}-{name}-{len(self.issued) + 1}"
        self.issued.append((token, ns, name))
        self._token_users[token] = f"system:serviceaccount:{ns}:{name}"
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "metadata": {"name": name, "namespace": ns, "creationTimestamp": None},
                "spec": {**spec, "audiences": ["https://kubernetes.default.svc"], "expirationSeconds": seconds,
                         "boundObjectRef": None},
                "status": {"token": token, "expirationTimestamp": _now(seconds)}}

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def counts(self) -> dict[str, int]:
        """Requests received so far, by Kubernetes verb."""
        out: dict[str, int] = {}
        with self._lock:
            for r in self.requests:
                out[r.verb] = out.get(r.verb, 0) + 1
        return out

    def open_watch_count(self) -> int:
        with self._lock:
            return len(self._open_watches)

    # -------------------------------------------------------------------------------- direct object access
    def put_object(self, obj: Obj) -> Obj:
        """Create or replace an object directly (no request recorded); returns it as stored."""
        kind = self._kind_of(obj)
        with self._lock:
            meta = obj.get("metadata") or {}
            ns = meta.get("namespace") or "" if kind.namespaced else ""
            existing = self._store.get((kind.group, kind.plural), {}).get((ns, meta.get("name", "")))
            if existing is None:
                return self._create(kind, ns, copy.deepcopy(obj))
            new = copy.deepcopy(obj)
            new["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            new["metadata"]["uid"] = existing["metadata"]["uid"]
            return self._update(kind, ns, new, subresource="", ignore_status=False)

    def delete_object(self, api_version: str, kind: str, name: str, namespace: str = "", *,
                      grace_period_seconds: int | None = None) -> None:
        """Delete directly (as a user would: finalizers only mark the object). ``grace_period_seconds=0`` on a
        Pod is what its kubelet does once the containers stopped."""
        k = self._find_kind(api_version, kind)
        opts: Obj = {} if grace_period_seconds is None else {"gracePeriodSeconds": grace_period_seconds}
        with self._lock:
            self._delete(k, namespace if k.namespaced else "", name, opts, False)

    def get_object(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        k = self.kinds.get((api_version, kind)) or self._find_kind(api_version, kind)
        with self._lock:
            obj = self._store.get((k.group, k.plural), {}).get((namespace if k.namespaced else "", name))
            return copy.deepcopy(obj) if obj else None

    def objects(self, api_version: str, kind: str) -> list[Obj]:
        k = self._find_kind(api_version, kind)
        with self._lock:
            return [copy.deepcopy(o) for o in self._store.get((k.group, k.plural), {}).values()]

    def _find_kind(self, api_version: str, kind: str) -> Kind:
        k = self.kinds.get((api_version, kind))
        if k:
            return k
        group = api_version.rpartition("/")[0]
        for cand in self.kinds.values():
            if cand.group == group and cand.kind == kind:
                return cand
        raise KeyError(f"{api_version} {kind} not registered")

    def _kind_of(self, obj: Obj) -> Kind:
        return self._find_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))

    # ------------------------------------------------------------------------------------------ storage
    def _next_rv(self) -> int:
        self._last_rv = next(self._rv)
        return self._last_rv

    def _emit(self, kind: Kind, etype: str, obj: Obj, old: Obj | None = None) -> None:
        rv = int(obj["metadata"]["resourceVersion"])
        old_labels = dict((old.get("metadata") or {}).get("labels") or {}) if old is not None else None
        self._history.append((rv, kind.group, kind.plural, etype, self._render(kind, copy.deepcopy(obj)),
                              old_labels))
        self._changed.notify_all()

    def _create(self, kind: Kind, ns: str, obj: Obj, *, dry_run: bool = False) -> Obj:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name")
        if not name:
            raise _HttpError(422, "Invalid", f"{kind.kind} \"\" is invalid: metadata.name: Required value: "
                                             "name or generateName is required")
        bucket = self._store.setdefault((kind.group, kind.plural), {})
        if (ns, name) in bucket:
            raise _HttpError(409, "AlreadyExists", f'{kind.plural}{"." + kind.group if kind.group else ""} '
                                                   f'"{name}" already exists')
        if self.namespace_lifecycle and kind.namespaced and ("", ns) not in self._store.get(("", "namespaces"), {}):
            raise _HttpError(404, "NotFound", f'namespaces "{ns}" not found',
                             details={"name": ns, "kind": "namespaces"})
        obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
        if kind.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        meta.pop("deletionTimestamp", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = _now()
        meta["generation"] = 1
        if kind.status_subresource and kind.kind != "CustomResourceDefinition":
            obj.pop("status", None)
        if _is(kind, "Namespace"):   # the API server's own finalizer, owned by no manager
            spec = obj.setdefault("spec", {})
            spec["finalizers"] = [*(f for f in spec.get("finalizers") or [] if f != NAMESPACE_FINALIZER),
                                  NAMESPACE_FINALIZER]
        _normalize(kind, obj)
        meta = obj["metadata"]
        if dry_run:
            meta["resourceVersion"] = str(self._last_rv)
            return copy.deepcopy(obj)
        meta["resourceVersion"] = str(self._next_rv())
        if kind.kind == "CustomResourceDefinition":
            self._on_crd(obj)
        bucket[(ns, name)] = obj
        self._emit(kind, "ADDED", obj)
        return copy.deepcopy(obj)

    def _on_crd(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        crd["status"] = {"conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": ""},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": ""}],
            "acceptedNames": names}
        kinds = [Kind(spec.get("group", ""), v.get("name", ""), names.get("kind", ""), names.get("plural", ""),
                      spec.get("scope") == "Namespaced", bool((v.get("subresources") or {}).get("status") is not None))
                 for v in spec.get("versions") or [] if v.get("served", True)]

        def register() -> None:
            for k in kinds:
                self.register(k)

        if self.crd_discovery_delay > 0:
            # Like a real server: the CRD is first only NamesAccepted; when its kinds are served it becomes
            # Established, a status update that watchers of CRDs see as MODIFIED.
            crd["status"]["conditions"] = crd["status"]["conditions"][:1]
            name = crd["metadata"]["name"]

            def establish() -> None:
                with self._lock:
                    register()
                    kind = self.kinds[("apiextensions.k8s.io/v1", "CustomResourceDefinition")]
                    live = self._store.get((kind.group, kind.plural), {}).get(("", name))
                    if live is None:
                        return
                    new = copy.deepcopy(live)
                    new["status"]["conditions"].append({"type": "Established", "status": "True",
                                                        "reason": "InitialNamesAccepted", "message": ""})
                    self._finish(kind, "", live, new)

            threading.Timer(self.crd_discovery_delay, establish).start()
        else:
            register()

    def _finish(self, kind: Kind, ns: str, old: Obj, new: Obj) -> Obj:
        """Store an updated object. A write that takes away the last thing holding an object being deleted
        deletes it instead (only DELETED, carrying the last stored state at a new resourceVersion) and is
        answered with its result at the old resourceVersion, as kube-apiserver does."""
        meta = new["metadata"]
        bucket = self._store[(kind.group, kind.plural)]
        if meta.get("deletionTimestamp") and not _held(kind, new):
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            self._go(kind, ns, meta["name"])
            return copy.deepcopy(new)
        meta["resourceVersion"] = str(self._next_rv())
        bucket[(ns, meta["name"])] = new
        self._emit(kind, "MODIFIED", new, old)
        return copy.deepcopy(new)

    def _go(self, kind: Kind, ns: str, name: str) -> Obj:
        """Remove a stored object; DELETED (and the return value) is its last state at a new resourceVersion."""
        gone = self._store[(kind.group, kind.plural)].pop((ns, name))
        gone["metadata"]["resourceVersion"] = str(self._next_rv())
        self._forget_applied(kind, ns, name)
        if kind.kind == "CustomResourceDefinition":
            spec = gone.get("spec") or {}
            for v in spec.get("versions") or []:
                g = spec.get("group", "")
                self.unregister(f"{g}/{v.get('name')}", (spec.get("names") or {}).get("kind", ""))
        self._emit(kind, "DELETED", gone)
        return copy.deepcopy(gone)

    def _mark(self, kind: Kind, ns: str, old: Obj, new: Obj) -> Obj:
        """Store the server's own deletion bookkeeping (MODIFIED), then DELETED when nothing holds the object
        (a Pod deleted with grace 0 is announced both ways). Returns the object as it stands afterwards."""
        new["metadata"]["resourceVersion"] = str(self._next_rv())
        self._store[(kind.group, kind.plural)][(ns, new["metadata"]["name"])] = new
        self._emit(kind, "MODIFIED", new, old)
        if not _held(kind, new):
            return self._go(kind, ns, new["metadata"]["name"])
        return copy.deepcopy(new)

    def _render(self, kind: Kind, obj: Obj, override: tuple[str, Obj] | None = None) -> Obj:
        """``metadata.managedFields`` of an object: one ``Apply`` entry per manager that applied it, owning the
        leaves of its last intent (lists atomic) except those someone else has since changed (on a real server
        such a field moves to the writer's entry). ``override`` is (manager, intent) of a dry-run apply."""
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "") if kind.namespaced else ""
        applied = {k[4]: v for k, v in self._applied.items()
                   if k[:4] == (kind.group, kind.plural, ns, meta.get("name"))}
        if override is not None:
            applied[override[0]] = override[1]
        entries = []
        for manager, intent in sorted(applied.items()):
            owned = [p for p, v in _leaves(intent).items()
                     if p not in _NOT_OWNED and _at(obj, p) in (_ABSENT, v)]
            if owned:
                entries.append({"manager": manager, "operation": "Apply", "apiVersion": kind.api_version,
                                "time": _now(), "fieldsType": "FieldsV1", "fieldsV1": _fields_v1(owned)})
        if entries:
            meta["managedFields"] = entries
        else:
            meta.pop("managedFields", None)
        return obj

    def _forget_applied(self, kind: Kind, ns: str, name: str) -> None:
        for key in [k for k in self._applied if k[:4] == (kind.group, kind.plural, ns, name)]:
            del self._applied[key]

    def _get(self, kind: Kind, ns: str, name: str) -> Obj:
        obj = self._store.get((kind.group, kind.plural), {}).get((ns, name))
        if obj is None:
            gr = f'{kind.plural}{"." + kind.group if kind.group else ""}'
            raise _HttpError(404, "NotFound", f'{gr} "{name}" not found',
                             details={"name": name, **({"group": kind.group} if kind.group else {}),
                                      "kind": kind.plural})
        return obj

    @staticmethod
    def _conflict(kind: Kind, name: str) -> _HttpError:
        gr = f'{kind.plural}{"." + kind.group if kind.group else ""}'
        return _HttpError(409, "Conflict", f'Operation cannot be fulfilled on {gr} "{name}": the object has '
                                           "been modified; please apply your changes to the latest version "
                                           "and try again")

    def _update(self, kind: Kind, ns: str, new: Obj, *, subresource: str, ignore_status: bool = True,
                dry_run: bool = False, check_rv: bool = True, finalize: bool = False) -> Obj:
        meta = new.get("metadata") or {}
        old = self._get(kind, ns, meta.get("name", ""))
        rv = meta.get("resourceVersion")
        if check_rv and rv and rv != old["metadata"]["resourceVersion"]:
            raise self._conflict(kind, old["metadata"]["name"])
        if meta.get("uid") and meta["uid"] != old["metadata"]["uid"]:
            raise _HttpError(409, "Conflict", f'Precondition failed: UID in precondition: {meta["uid"]}, '
                                              f'UID in object meta: {old["metadata"]["uid"]}')
        if subresource == "status":
            out = copy.deepcopy(old)
            if "status" in new:
                out["status"] = copy.deepcopy(new["status"])
            else:
                out.pop("status", None)
        else:
            out = copy.deepcopy(new)
            out["apiVersion"], out["kind"] = kind.api_version, kind.kind
            m = out.setdefault("metadata", {})
            for keep in ("uid", "creationTimestamp", "generation", "deletionTimestamp"):
                if keep in old["metadata"]:
                    m[keep] = old["metadata"][keep]
                else:
                    m.pop(keep, None)
            m["name"] = old["metadata"]["name"]
            if kind.namespaced:
                m["namespace"] = ns
            if kind.status_subresource and ignore_status:
                if "status" in old:
                    out["status"] = copy.deepcopy(old["status"])
                else:
                    out.pop("status", None)
            if "managedFields" not in old["metadata"]:
                m.pop("managedFields", None)   # rendered from the applied intents, not stored (unless seeded)
            if _is(kind, "Namespace") and not finalize:
                # only the namespace controller changes them (the finalize subresource)
                spec = out["spec"] if isinstance(out.get("spec"), dict) else {}
                spec.pop("finalizers", None)
                if (old.get("spec") or {}).get("finalizers"):
                    spec["finalizers"] = copy.deepcopy(old["spec"]["finalizers"])
                out["spec"] = spec
            _normalize(kind, out)
            m = out["metadata"]
            spec_old = {k: v for k, v in old.items() if k not in ("metadata", "status")}
            spec_new = {k: v for k, v in out.items() if k not in ("metadata", "status")}
            if spec_old != spec_new:
                m["generation"] = int(old["metadata"].get("generation", 1)) + 1
        if out == old or (dry_run):
            if dry_run:
                return copy.deepcopy(out)
            return copy.deepcopy(old)  # no-op writes do not bump resourceVersion, as on a real server
        return self._finish(kind, ns, old, out)

    def _apply(self, kind: Kind, ns: str, name: str, intent: Obj, manager: str, force: bool,
               dry_run: bool) -> Obj:
        bucket = self._store.setdefault((kind.group, kind.plural), {})
        key = (kind.group, kind.plural, ns, name, manager)
        meta = intent.get("metadata") or {}
        if meta.get("name") not in (None, name):
            raise _HttpError(400, "BadRequest", "the name of the object ({}) does not match the name on the URL "
                                                "({})".format(meta.get("name"), name))
        intent_body = {k: v for k, v in intent.items() if not (kind.status_subresource and k == "status")}
        old = bucket.get((ns, name))
        if old is None:
            obj = copy.deepcopy(intent_body)
            obj.setdefault("metadata", {})["name"] = name
            obj["metadata"].pop("resourceVersion", None)
            created = self._create(kind, ns, obj, dry_run=dry_run)
            if not dry_run:
                self._applied[key] = copy.deepcopy(intent_body)
                return created
            return self._render(kind, created, (manager, copy.deepcopy(intent_body)))
        if meta.get("resourceVersion") and meta["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise self._conflict(kind, name)
        if not force:
            mine = _leaves(intent_body)
            for other_key, other in self._applied.items():
                if other_key[:4] != key[:4] or other_key[4] == manager:
                    continue
                for path, val in _leaves(other).items():
                    if path[:1] in (("apiVersion",), ("kind",), ("metadata",)):
                        continue
                    if path in mine and mine[path] != val:
                        raise _HttpError(409, "Conflict", f'Apply failed with 1 conflict: conflict with '
                                                          f'"{other_key[4]}": .{".".join(path)}')
        live = copy.deepcopy(old)
        live = _release(live, self._applied.get(key), intent_body)
        new = _overlay(live, dict(intent_body))
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        out = self._update(kind, ns, new, subresource="", ignore_status=True, dry_run=dry_run)
        if not dry_run:
            self._applied[key] = copy.deepcopy(intent_body)
            return out
        return self._render(kind, out, (manager, copy.deepcopy(intent_body)))

    def _delete(self, kind: Kind, ns: str, name: str, options: Obj, dry_run: bool) -> Obj:
        """Delete, as kube-apiserver 1.36 does: returns the object as stored afterwards (still there when
        something holds it) or, when it went, its last state with the deletion's resourceVersion."""
        old = self._get(kind, ns, name)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
            raise _HttpError(409, "Conflict", f'Precondition failed: UID in precondition: {pre["uid"]}, UID in '
                                              f'object meta: {old["metadata"]["uid"]}')
        if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise _HttpError(409, "Conflict", "Precondition failed: ResourceVersion in precondition: "
                                              f'{pre["resourceVersion"]}, ResourceVersion in object meta: '
                                              f'{old["metadata"]["resourceVersion"]}')
        if dry_run:
            return copy.deepcopy(old)
        meta = old["metadata"]
        if _is(kind, "Namespace") and not meta.get("deletionTimestamp"):
            new = copy.deepcopy(old)   # Terminating until the namespace controller has emptied it
            new["metadata"]["deletionTimestamp"] = _now()
            new.setdefault("status", {})["phase"] = "Terminating"
            return self._mark(kind, ns, old, new)
        if _is(kind, "Pod"):
            grace = _pod_grace(old, options.get("gracePeriodSeconds"))
            current = meta.get("deletionGracePeriodSeconds")
            if meta.get("deletionTimestamp") and current is not None and grace >= int(current):
                return copy.deepcopy(old)   # a pending deletion can only be shortened
            new = copy.deepcopy(old)   # marked first, even when deleted at once (grace 0)
            new["metadata"]["deletionTimestamp"] = _now(grace)
            new["metadata"]["deletionGracePeriodSeconds"] = grace
            return self._mark(kind, ns, old, new)
        if _held(kind, old):
            if meta.get("deletionTimestamp"):
                return copy.deepcopy(old)
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = _now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._mark(kind, ns, old, new)
        return self._go(kind, ns, name)

    def finish_namespace(self, name: str) -> list[str]:
        """Play the namespace controller once for a Terminating namespace (no request recorded): delete every
        object in it (their finalizers apply) and, once nothing is left, drop its ``kubernetes`` finalizer, so
        it goes (DELETED only, as the finalize subresource of a real server does) unless ``metadata.finalizers``
        still hold it. Returns what still holds it (``<plural> <name>``, sorted), empty once it is gone."""
        nskind = self._find_kind("v1", "Namespace")
        with self._lock:
            ns = self._store.get(("", "namespaces"), {}).get(("", name))
            if ns is None:
                return []
            if not ns["metadata"].get("deletionTimestamp"):
                raise ValueError(f"namespace {name} is not being deleted")
            kinds = {(k.group, k.plural): k for k in self.kinds.values() if k.namespaced}

            def contents() -> list[tuple[Kind, str]]:
                return [(kinds[gp], key[1]) for gp, bucket in self._store.items() if gp in kinds
                        for key in list(bucket) if key[0] == name]

            for kind, obj_name in contents():
                live = self._store[(kind.group, kind.plural)].get((name, obj_name))
                if live is not None and not live["metadata"].get("deletionTimestamp"):
                    self._delete(kind, name, obj_name, {}, False)
            left = sorted(f"{kind.plural} {obj_name}" for kind, obj_name in contents())
            if left:
                return left
            new = copy.deepcopy(ns)
            new["spec"]["finalizers"] = [f for f in new["spec"].get("finalizers") or [] if f != NAMESPACE_FINALIZER]
            self._update(nskind, "", new, subresource="", ignore_status=False, finalize=True)
            return [] if ("", name) not in self._store[("", "namespaces")] else [f"namespaces {name}"]

    def _list(self, kind: Kind, ns: str | None, sel: selectors.Selector, limit: int, cont: str) -> Obj:
        items = sorted(self._store.get((kind.group, kind.plural), {}).items())
        picked = [self._render(kind, copy.deepcopy(o)) for (ons, _), o in items
                  if (ns is None or ons == ns) and sel.matches((o.get("metadata") or {}).get("labels"))]
        start = 0
        rv = str(self._last_rv)
        if cont:
            try:
                c = json.loads(cont)
                start, rv = int(c["start"]), str(c["rv"])
            except (ValueError, KeyError, TypeError) as exc:
                raise _HttpError(400, "BadRequest", "invalid continue token") from exc
            if int(rv) < self._compacted_rv:
                raise _HttpError(410, "Expired", "The provided continue parameter is too old to display a "
                                                 "consistent list result. You can start a new list without the "
                                                 "continue parameter.")
        meta: Obj = {"resourceVersion": rv}
        if limit and start + limit < len(picked):
            meta["continue"] = json.dumps({"start": start + limit, "rv": rv})
            picked = picked[start:start + limit]
        else:
            picked = picked[start:]
        if not kind.group or kind.group.endswith(".k8s.io") or kind.group == "apps":
            for o in picked:  # built-in lists carry no per-item apiVersion/kind, as on a real server
                o.pop("apiVersion", None)
                o.pop("kind", None)
        return {"kind": f"{kind.kind}List", "apiVersion": kind.api_version, "metadata": meta, "items": picked}

    # ------------------------------------------------------------------------------------------ routing
    def _resolve(self, path: str) -> tuple[Kind | None, str | None, str | None, str, Obj | None]:
        """Map a path to (kind, namespace, name, subresource, discovery document)."""
        parts = [p for p in path.split("/") if p]
        if parts == ["api"]:
            return None, None, None, "", {"kind": "APIVersions", "versions": ["v1"]}
        if parts == ["apis"]:
            groups: dict[str, list[str]] = {}
            for k in self.kinds.values():
                if k.group:
                    groups.setdefault(k.group, [])
                    if k.version not in groups[k.group]:
                        groups[k.group].append(k.version)
            return None, None, None, "", {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                 "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
                for g, vs in sorted(groups.items())]}
        if parts[:1] == ["api"] and len(parts) >= 2:
            gv, rest = parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            raise _HttpError(404, "NotFound", "the server could not find the requested resource")
        kinds = [k for k in self.kinds.values() if k.api_version == gv]
        if not kinds:
            raise _HttpError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            resources = []
            for k in kinds:
                resources.append({"name": k.plural, "singularName": k.kind.lower(), "namespaced": k.namespaced,
                                  "kind": k.kind, "verbs": ["create", "delete", "deletecollection", "get",
                                                            "list", "patch", "update", "watch"]})
                if k.status_subresource:
                    resources.append({"name": f"{k.plural}/status", "singularName": "", "namespaced":
                                      k.namespaced, "kind": k.kind, "verbs": ["get", "patch", "update"]})
            return None, None, None, "", {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                                          "resources": resources}
        ns: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural = rest[0]
        kind = next((k for k in kinds if k.plural == plural), None)
        if kind is None or (ns is not None and not kind.namespaced):
            raise _HttpError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) >= 3 else ""
        if sub and not (sub == "status" and kind.status_subresource) and not (
                sub == "token" and kind.kind == "ServiceAccount" and not kind.group):
            raise _HttpError(404, "NotFound", "the server could not find the requested resource")
        return kind, ns, name, sub, None

    def handle(self, method: str, path: str, query: dict[str, str], content_type: str,
               raw: bytes, token: str = "", user_agent: str = "") -> tuple[int, dict[str, str], Obj | None]:
        """Answer one non-watch request: (status, headers, body)."""
        body: Any = None
        if raw:
            try:
                if content_type.startswith("application/apply-patch+yaml"):
                    body = yaml.safe_load(raw)
                else:
                    body = json.loads(raw)
            except (ValueError, yaml.YAMLError) as e:
                return 400, {}, status_body(400, "BadRequest", f"error decoding request body: {e}")
        with self._lock:
            rec = Recorded(method, path, dict(query), content_type, body, token, user_agent=user_agent)
            if self.record:
                self.requests.append(rec)
            try:
                self._authorize(method, path, query, token)
                code, headers, answer = self._answer(method, path, query, content_type, body)
            except _HttpError as e:
                code, headers, answer = e.code, {}, status_body(e.code, e.reason, e.message, e.details)
            rec.status = code
            return code, headers, answer

    def _answer(self, method: str, path: str, query: dict[str, str], content_type: str,
                body: Any) -> tuple[int, dict[str, str], Obj | None]:
        with self._lock:
            for f in self._faults:
                if f.times > 0 and f.method == method and f.path.fullmatch(path) and \
                        all(query.get(k) == v for k, v in f.query.items()):
                    f.times -= 1
                    reason = {409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError",
                              503: "ServiceUnavailable", 404: "NotFound", 403: "Forbidden"}.get(f.status, "")
                    return f.status, f.headers, f.body if f.body is not None else status_body(
                        f.status, reason, f"injected {f.status} for {method} {path}")
            try:
                out = self._dispatch(method, path, query, content_type, body)
                try:
                    kind = self._resolve(path)[0]
                except _HttpError:
                    kind = None   # e.g. a CRD deleted by this very request
                if kind is not None and isinstance(out, dict) and out.get("kind") == kind.kind and \
                        "managedFields" not in (out.get("metadata") or {}):
                    self._render(kind, out)
                return 200 if method != "POST" else 201, {}, out
            except _HttpError as e:
                return e.code, {}, status_body(e.code, e.reason, e.message, e.details)

    def _dispatch(self, method: str, path: str, query: dict[str, str], content_type: str, body: Any) -> Obj:
        kind, ns, name, sub, doc = self._resolve(path)
        if doc is not None:
            if method != "GET":
                raise _HttpError(405, "MethodNotAllowed", "method not allowed")
            return doc
        assert kind is not None
        dry_run = query.get("dryRun") == "All"
        ns_key = (ns or "") if kind.namespaced else ""
        if method == "GET" and name is None:
            try:
                sel = selectors.parse(query.get("labelSelector"))
            except ValueError as e:
                raise _HttpError(400, "BadRequest", str(e)) from e
            return self._list(kind, ns if kind.namespaced else None, sel, int(query.get("limit") or 0),
                              query.get("continue", ""))
        if method == "GET":
            return copy.deepcopy(self._get(kind, ns_key, name or ""))
        if sub == "token":
            if method != "POST" or name is None:
                raise _HttpError(405, "MethodNotAllowed", "method not allowed")
            return self._token(ns_key, name, body)
        json_patch = method == "PATCH" and content_type.startswith("application/json-patch+json")
        if json_patch and not isinstance(body, list):
            raise _HttpError(400, "BadRequest", "a JSON patch must be a list of operations")
        if not json_patch and not isinstance(body, dict) and method in ("POST", "PUT", "PATCH"):
            raise _HttpError(400, "BadRequest", "request body must be an object")
        if method == "POST" and name is None and kind.kind == "SubjectAccessReview":
            return self._access_review(body)
        if method == "POST" and name is None:
            if kind.namespaced and ns is None:
                raise _HttpError(404, "NotFound", "the server could not find the requested resource")
            bns = (body.get("metadata") or {}).get("namespace")
            if kind.namespaced and bns and bns != ns:
                raise _HttpError(400, "BadRequest", "the namespace of the provided object does not match the "
                                                    "namespace sent on the request")
            created = self._create(kind, ns_key, copy.deepcopy(body), dry_run=dry_run)
            if query.get("fieldManager") and not dry_run:
                # the creator owns what it sent (simplified: as if applied; see _render)
                self._applied[(kind.group, kind.plural, ns_key, created["metadata"]["name"], query["fieldManager"])] \
                    = {k: copy.deepcopy(v) for k, v in body.items() if not (kind.status_subresource and k == "status")}
            return created
        if name is None:
            raise _HttpError(405, "MethodNotAllowed", "method not allowed")
        if method == "PUT":
            if (body.get("metadata") or {}).get("name") != name:
                raise _HttpError(400, "BadRequest", "the name of the object does not match the name on the URL")
            if not (body.get("metadata") or {}).get("resourceVersion"):
                raise _HttpError(422, "Invalid", f'{kind.kind} "{name}" is invalid: metadata.resourceVersion: '
                                                 "Invalid value: 0x0: must be specified for an update")
            return self._update(kind, ns_key, copy.deepcopy(body), subresource=sub, dry_run=dry_run)
        if method == "PATCH":
            if content_type.startswith("application/apply-patch+yaml"):
                manager = query.get("fieldManager")
                if not manager:
                    raise _HttpError(400, "BadRequest", "PATCH, application/apply-patch+yaml: fieldManager is "
                                                        "required")
                return self._apply(kind, ns_key, name, body, manager, query.get("force") == "true", dry_run)
            old = self._get(kind, ns_key, name)
            if content_type.startswith(("application/merge-patch+json", "application/strategic-merge-patch+json")):
                new = apply_merge_patch(copy.deepcopy(old), body)
            elif content_type.startswith("application/json-patch+json"):
                try:
                    new = jsonpatch.apply_patch(old, body)
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
                    raise _HttpError(422, "Invalid", str(e)) from e
            else:
                raise _HttpError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                                                              "format - accepted media types include: "
                                                              "application/json-patch+json, "
                                                              "application/merge-patch+json, "
                                                              "application/apply-patch+yaml")
            rv = ((body.get("metadata") or {}) if isinstance(body, dict) else {}).get("resourceVersion")
            new.setdefault("metadata", {})["resourceVersion"] = rv or old["metadata"]["resourceVersion"]
            return self._update(kind, ns_key, new, subresource=sub, dry_run=dry_run)
        if method == "DELETE":
            opts = dict(body) if isinstance(body, dict) else {}
            if query.get("gracePeriodSeconds", "").isdigit():
                opts["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
            out = self._delete(kind, ns_key, name, opts, dry_run)
            if dry_run or (out.get("metadata") or {}).get("deletionTimestamp") or _is(kind, "Pod"):
                # still there (something holds it): the object, as a real server answers; a Pod deleted at
                # once: its last state (the registry's ReturnDeletedObject)
                return out
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": {"name": name, **({"group": kind.group} if kind.group else {}), "kind": kind.plural,
                                "uid": (out.get("metadata") or {}).get("uid")}}
        raise _HttpError(405, "MethodNotAllowed", "method not allowed")

    # ------------------------------------------------------------------------------------------- watches
    def watch_events(self, path: str, query: dict[str, str], token: str = "",
                     user_agent: str = "") -> tuple[Kind, str | None, selectors.Selector, int]:
        with self._lock:
            if self.record:
                self.requests.append(Recorded("GET", path, dict(query), "", None, token, 200, user_agent))
            self._authorize("GET", path, query, token)
            for f in self._faults:
                if f.times > 0 and f.method == "GET" and f.path.fullmatch(path) and \
                        all(query.get(k) == v for k, v in f.query.items()):
                    f.times -= 1
                    raise _HttpError(f.status, {410: "Expired", 429: "TooManyRequests",
                                                        503: "ServiceUnavailable"}.get(f.status, "InternalError"),
                                     f"injected {f.status} for watch {path}", f.headers)
            kind, ns, name, _sub, _doc = self._resolve(path)
            if kind is None or name is not None:
                raise _HttpError(405, "MethodNotAllowed", "watch needs a collection path")
            try:
                sel = selectors.parse(query.get("labelSelector"))
            except ValueError as e:
                raise _HttpError(400, "BadRequest", str(e)) from e
            rv = query.get("resourceVersion") or ""
            return kind, ns, sel, int(rv) if rv.isdigit() else -1

    def _since(self, since: int, kind: Kind, ns: str | None,
               sel: selectors.Selector) -> list[tuple[int, str, Obj]]:
        """Matching events after ``since``, oldest first; walks the history from its newest end so a
        waiting watch costs O(new events), not O(history)."""
        out = []
        for rv, g, p, t, o, old_labels in reversed(self._history):
            if rv <= since:
                break
            now = self._matches(kind, ns, sel, g, p, o)
            if old_labels is None:
                if now:
                    out.append((rv, t, o))
                continue
            before = self._matches(kind, ns, sel, g, p, {"metadata": {**o["metadata"], "labels": old_labels}})
            # A filtered watch sees objects enter and leave its selector, as on a real server.
            if now:
                out.append((rv, "MODIFIED" if before else "ADDED", o))
            elif before:
                out.append((rv, "DELETED", o))
        out.reverse()
        return out

    def _matches(self, kind: Kind, ns: str | None, sel: selectors.Selector, group: str, plural: str,
                 obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        return (group, plural) == (kind.group, kind.plural) and (ns is None or meta.get("namespace") == ns) \
            and sel.matches(meta.get("labels"))


def _client_gone(sock: socket.socket) -> bool:
    """Whether the client closed its end of a watch connection (so the stream can end at once)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _Handler(BaseHTTPRequestHandler):
    api: FakeApiServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without TCP_NODELAY, Nagle plus the client's delayed
        # ACK adds ~40 ms to every request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def _send(self, code: int, headers: dict[str, str], body: Obj | None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _serve(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        prefix = self.api.path_prefix
        if prefix:
            if not url.path.startswith(prefix + "/"):
                self._send(404, {}, status_body(404, "NotFound", f"the server is at {prefix}, not at {url.path}"))
                return
            url = url._replace(path=url.path[len(prefix):])
        ctype = self.headers.get("Content-Type") or ""
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        agent = self.headers.get("User-Agent") or ""
        if self.command == "GET" and query.get("watch") in ("true", "1"):
            self._watch(url.path, query, token, agent)
            return
        code, headers, body = self.api.handle(self.command, url.path, query, ctype, raw, token, agent)
        self._send(code, headers, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def _chunk(self, obj: Obj) -> None:
        data = json.dumps(obj).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, path: str, query: dict[str, str], token: str, user_agent: str = "") -> None:
        api = self.api
        try:
            kind, ns, sel, since = api.watch_events(path, query, token, user_agent)
        except _HttpError as e:
            self._send(e.code, e.headers, status_body(e.code, e.reason, e.message))
            return
        timeout = float(query.get("timeoutSeconds") or 1800)
        bookmarks = query.get("allowWatchBookmarks") == "true"
        deadline = time.monotonic() + timeout
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sock = self.connection
        with api._lock:
            api._open_watches.add(sock)
            gen = api._watch_gen
        try:
            pending: list[Obj] = []
            with api._lock:
                if since < 0:  # no resourceVersion: synthetic ADDED for the current state
                    for (g, p), bucket in api._store.items():
                        for o in bucket.values():
                            if api._matches(kind, ns, sel, g, p, o):
                                pending.append({"type": "ADDED", "object": copy.deepcopy(o)})
                    since = api._last_rv
                elif since < api._compacted_rv:
                    pending.append({"type": "ERROR", "object": status_body(
                        410, "Expired", f"too old resource version: {since} ({api._compacted_rv})")})
                    since = None  # type: ignore[assignment]
            for ev in pending:
                self._chunk(ev)
            if since is None:
                self.wfile.write(b"0\r\n\r\n")
                return
            last_bookmark = time.monotonic()
            while True:
                with api._lock:
                    events = api._since(since, kind, ns, sel)
                    while not events and api._watch_gen == gen and time.monotonic() < deadline:
                        api._changed.wait(timeout=min(0.1, max(0.0, deadline - time.monotonic())))
                        if _client_gone(sock):
                            self.close_connection = True
                            return
                        events = api._since(since, kind, ns, sel)
                        if bookmarks and time.monotonic() - last_bookmark > 1.0 and not events:
                            break
                    dropped = api._watch_gen != gen
                    abrupt = api._watch_abrupt
                    last_rv = api._last_rv
                for rv, t, o in events:
                    self._chunk({"type": t, "object": o})
                    since = rv
                if dropped:
                    if abrupt:
                        self.close_connection = True
                        return
                    break
                if time.monotonic() >= deadline:
                    break
                if bookmarks and not events and time.monotonic() - last_bookmark > 1.0:
                    self._chunk({"type": "BOOKMARK", "object": {
                        "kind": kind.kind, "apiVersion": kind.api_version,
                        "metadata": {"resourceVersion": str(last_rv)}}})
                    since = max(since, last_rv)
                    last_bookmark = time.monotonic()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        finally:
            with api._lock:
                api._open_watches.discard(sock)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    server = FakeApiServer().start(args.port)
    print(f"fake API server at {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
