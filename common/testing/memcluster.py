"""An in-memory Kubernetes API server implementing :class:`common.cluster.interface.Cluster`, for tests and benchmarks.

It behaves like the real one where the engine's and the producer's correctness depends on it:

- bookkeeping: ``uid``, ``resourceVersion`` (bumped on every real change, not on no-op writes),
  ``generation`` (bumped when anything outside ``metadata`` and ``status`` changes), ``creationTimestamp``;
- optimistic concurrency: a stale ``resourceVersion`` on update/patch, or a failed uid/resourceVersion delete
  precondition, is a ``Conflict``;
- server-side apply with field managers: fields are owned per manager; a forced apply takes conflicting fields
  over, fields the applier stops declaring are removed unless another manager also owns them, and fields owned
  only by others are left alone. Lists are atomic (one owner for the whole list), which is coarser than the
  real server's associative lists but enough for "a label someone added survives our apply";
- ``status`` subresources: main-resource writes ignore ``status``, ``update_status`` changes only ``status``;
- immutable Secrets reject data changes with the API server's message; ``stringData`` is folded into ``data``;
- deletion as kube-apiserver 1.36 answers and announces it: an object with finalizers is marked
  (``deletionTimestamp``; MODIFIED; the DELETE answers the object) until the last one goes (DELETED only); a
  Namespace gets the ``kubernetes`` finalizer when created and a DELETE marks it ``Terminating`` until the
  namespace controller, played by :meth:`MemCluster.finish_namespace`, has emptied it; a Pod bound to a node
  waits for its grace period until its kubelet (:meth:`MemCluster.remove` with ``grace_period_seconds=0``)
  removes it; anything else goes at once (the DELETE answers ``None``, a ``Status``; a Pod: its last state);
- garbage collection: when an owner disappears, dependents whose owners are all gone are deleted (their
  finalizers respected), others lose the dangling ownerReference; ``propagation_policy="Orphan"`` strips the
  owner's references from its dependents instead;
- kinds are registered as namespaced or cluster-scoped; creating a CustomResourceDefinition registers its kind
  (as soon as it is stored: mark it Established with :meth:`MemCluster.set_status` if a probe waits for it).

Every Protocol call is counted by verb in :attr:`MemCluster.requests` (``get``, ``list``, ``create``,
``apply``, ``patch``, ``update``, ``update_status``, ``delete``; dry runs as ``<verb>:dry-run``) and logged in
:attr:`MemCluster.log`, so tests can assert exactly which writes happened. The helpers for playing "another
actor" (:meth:`put`, :meth:`edit`, :meth:`set_status`, :meth:`remove`, :meth:`peek`) are not counted.
:meth:`fail` injects errors into the next matching requests. Every public method holds one lock, so worker
threads may share an instance.

Known simplifications: a plain ``create`` records its fields under ``field_manager`` (default ``"unknown"``),
a manager distinct from any applier, as on a real server where POST and apply are separate managedFields
entries. Not modelled: watches (see :attr:`listeners` for a synchronous change hook), admission (but see
``namespace_lifecycle``; finalizers admission plugins add, such as PVC protection, are put on by tests),
controllers (a Namespace's ``status.phase`` is set by tests, as any controller-written status), foreground
deletion, defaulting, field validation beyond what is listed above.
"""

from __future__ import annotations

import base64
import builtins  # annotations inside MemCluster after its list() method name the type as builtins.list
import functools
import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Concatenate, NamedTuple, ParamSpec, TypeVar

from common.cluster.interface import AlreadyExists, ApiError, BadRequest, Conflict, Invalid, NotFound, UnknownKind
from common.contract import labels as labelsel
from common.contract.objects import GVK, Obj, apply_merge_patch, copy_json

Path = tuple[str, ...]
WRITE_VERBS = frozenset({"create", "apply", "patch", "patch_status", "update", "update_status", "delete"})
ORPHAN_FINALIZER = "orphan"
_MISSING = object()
# metadata the server owns: never taken from a request body, never tracked as a managed field
_SYSTEM_META = frozenset({
    "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
    "deletionGracePeriodSeconds", "managedFields", "selfLink",
})
_IDENTITY_META = frozenset({"name", "namespace"})


@dataclass(frozen=True)
class KindInfo:
    """How the server serves one kind."""

    api_version: str
    kind: str
    namespaced: bool
    plural: str = ""
    status_subresource: bool = False

    @property
    def group(self) -> str:
        return GVK.parse(self.api_version, self.kind).group

    @property
    def resource(self) -> str:
        """``plural`` or ``plural.group``, as the API server names a resource in messages."""
        plural = self.plural or _pluralize(self.kind)
        return f"{plural}.{self.group}" if self.group else plural


def _pluralize(kind: str) -> str:
    low = kind.lower()
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return low[:-1] + "ies"
    if low.endswith(("s", "x", "ch", "sh")):
        return low + "es"
    return low + "s"


DEFAULT_KINDS: tuple[KindInfo, ...] = (
    KindInfo("v1", "Namespace", False, "namespaces", True),
    KindInfo("v1", "ConfigMap", True, "configmaps"),
    KindInfo("v1", "Secret", True, "secrets"),
    KindInfo("v1", "ServiceAccount", True, "serviceaccounts"),
    KindInfo("v1", "Service", True, "services", True),
    KindInfo("v1", "PersistentVolumeClaim", True, "persistentvolumeclaims", True),
    KindInfo("v1", "Pod", True, "pods", True),
    KindInfo("v1", "PersistentVolume", False, "persistentvolumes", True),
    KindInfo("apps/v1", "Deployment", True, "deployments", True),
    KindInfo("apps/v1", "StatefulSet", True, "statefulsets", True),
    KindInfo("apps/v1", "DaemonSet", True, "daemonsets", True),
    KindInfo("rbac.authorization.k8s.io/v1", "ClusterRole", False, "clusterroles"),
    KindInfo("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", False, "clusterrolebindings"),
    KindInfo("rbac.authorization.k8s.io/v1", "Role", True, "roles"),
    KindInfo("rbac.authorization.k8s.io/v1", "RoleBinding", True, "rolebindings"),
    KindInfo("apiextensions.k8s.io/v1", "CustomResourceDefinition", False, "customresourcedefinitions", True),
    KindInfo("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", False,
             "validatingwebhookconfigurations"),
    KindInfo("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", False,
             "mutatingwebhookconfigurations"),
    KindInfo("networking.k8s.io/v1", "NetworkPolicy", True, "networkpolicies"),
    KindInfo("policy/v1", "PodDisruptionBudget", True, "poddisruptionbudgets", True),
    KindInfo("coordination.k8s.io/v1", "Lease", True, "leases"),
    KindInfo("olm.operatorframework.io/v1", "ClusterObjectSet", False, "clusterobjectsets", True),
)


class Request(NamedTuple):
    """One counted Protocol call, as logged in :attr:`MemCluster.log`."""

    verb: str
    api_version: str
    kind: str
    namespace: str
    name: str


@dataclass
class _Fault:
    verb: str
    error: ApiError
    kind: str | None
    name: str | None
    times: int


def _flatten(obj: Obj, status_sub: bool) -> dict[Path, Any]:
    """Leaf paths of the manageable part of an object (lists and empty maps are leaves)."""
    out: dict[Path, Any] = {}

    def walk(prefix: Path, value: Any) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk((*prefix, k), v)
        else:
            out[prefix] = value

    for top, value in obj.items():
        if top in ("apiVersion", "kind") or (top == "status" and status_sub):
            continue
        if top == "metadata" and isinstance(value, dict):
            for k, v in value.items():
                if k in _SYSTEM_META or k in _IDENTITY_META:
                    continue
                walk(("metadata", k), v)
            continue
        walk((top,), value)
    return out


# Fields the server sets itself and keeps out of every manager's set: a Namespace's ``spec.finalizers`` are set
# when it is created and changed only by the namespace controller (its ``finalize`` subresource).
_SERVER_OWNED: dict[tuple[str, str], frozenset[Path]] = {("", "Namespace"): frozenset({("spec", "finalizers")})}
NAMESPACE_FINALIZER = "kubernetes"
# Kinds whose DELETE answers the object itself when it is deleted at once (the registry's ReturnDeletedObject);
# every other kind answers a ``Status``.
RETURNS_DELETED_OBJECT = frozenset({("", "Pod")})
DEFAULT_GRACE_SECONDS = 30


def _flat(info: KindInfo, obj: Obj) -> dict[Path, Any]:
    """:func:`_flatten` without the fields only the server sets (owned by no manager)."""
    out = _flatten(obj, info.status_subresource)
    for p in _SERVER_OWNED.get((info.group, info.kind), ()):
        for q in [q for q in out if q[:len(p)] == p]:
            del out[q]
    return out


def _is(info: KindInfo, kind: str) -> bool:
    """Whether ``info`` is the core (group "") ``kind``."""
    return info.group == "" and info.kind == kind


def _related(paths: set[Path], p: Path) -> set[Path]:
    """Paths in ``paths`` that are ``p``, an ancestor of ``p`` or a descendant of ``p``."""
    hit = {q for q in (p[:i] for i in range(1, len(p) + 1)) if q in paths}
    n = len(p)
    hit.update(q for q in paths if len(q) > n and q[:n] == p)
    return hit


def _get_path(obj: Obj, p: Path) -> Any:
    cur: Any = obj
    for k in p:
        if not isinstance(cur, dict) or k not in cur:
            return _MISSING
        cur = cur[k]
    return cur


def _set_path(obj: Obj, p: Path, value: Any) -> None:
    cur = obj
    for k in p[:-1]:
        nxt = cur.get(k)
        if not isinstance(nxt, dict):
            nxt = cur[k] = {}
        cur = nxt
    cur[p[-1]] = copy_json(value)


def _del_path(obj: Obj, p: Path) -> None:
    """Remove a leaf and prune maps it leaves empty (but never ``metadata`` itself)."""
    chain: list[tuple[Obj, str]] = []
    cur: Any = obj
    for k in p:
        if not isinstance(cur, dict) or k not in cur:
            return
        chain.append((cur, k))
        cur = cur[k]
    parent, key = chain.pop()
    del parent[key]
    while chain:
        parent, key = chain.pop()
        if parent[key] == {} and not (len(chain) == 0 and key == "metadata"):
            del parent[key]
        else:
            break


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(method: Callable[Concatenate[MemCluster, _P], _R]) -> Callable[Concatenate[MemCluster, _P], _R]:
    """Serialise public calls: tests may drive the cluster from worker threads (one API server, many clients)."""
    @functools.wraps(method)
    def wrapper(self: MemCluster, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)
    return wrapper


def _rendered(method: Callable[Concatenate[MemCluster, _P], _R]) -> Callable[Concatenate[MemCluster, _P], _R]:
    """Objects leave the server with ``metadata.managedFields`` rendered from the ownership it tracks."""
    @functools.wraps(method)
    def wrapper(self: MemCluster, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        out = method(self, *args, **kwargs)
        for obj in out if isinstance(out, list) else [out]:
            # a dry run's answer was rendered already, from the ownership it would have produced
            if isinstance(obj, dict) and "managedFields" not in (obj.get("metadata") or {}):
                self._render(obj)
        return out
    return wrapper


def fields_v1(paths: Iterable[Path]) -> Obj:
    """A ``fieldsV1`` set from leaf paths: ``{"f:a": {"f:b": {}}}`` for ``("a", "b")`` (lists are atomic here,
    so no ``k:``/``v:`` members; a real server's finer sets project onto the same values)."""
    out: Obj = {}
    for p in sorted(paths):
        cur = out
        for k in p:
            cur = cur.setdefault(f"f:{k}", {})
    return out


# Map-typed fields of built-in kinds that a real API server omits when empty (Go ``omitempty`` on a map); it
# also omits every empty list. Struct-typed fields (``emptyDir: {}``, ``securityContext: {}``) are kept.
OMITEMPTY_MAPS = frozenset({"data", "binaryData", "stringData", "labels", "annotations", "nodeSelector",
                             "matchLabels", "limits", "requests"})
UNTYPED_GROUPS = frozenset({"apiextensions.k8s.io", "olm.operatorframework.io"})


def drop_empty(value: Any) -> Any:
    """``value`` without empty lists and empty ``omitempty`` maps (recursively), as a built-in kind is stored.

    Shared with the fake API server of ``tests/support`` so both doubles normalize alike."""
    if isinstance(value, dict):
        out = {}
        for k, item in value.items():
            v = drop_empty(item)
            if v == [] or (v == {} and k in OMITEMPTY_MAPS):
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [drop_empty(v) for v in value]
    return value


def _items_removed(old: Any, new: Any) -> bool:
    """Whether ``new`` is the list ``old`` with some ``uid``-keyed items removed (ownerReferences): on a real
    server that list is associative, removing an item takes no ownership of the items that remain."""
    if not isinstance(old, list) or not isinstance(new, list) or len(new) >= len(old):
        return False
    if not all(isinstance(i, dict) and "uid" in i for i in old):
        return False
    return all(i in old for i in new)


def _timestamp(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class MemCluster:
    """In-memory API server; see the module docstring for what it models.

    >>> mc = MemCluster()
    >>> cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}
    >>> mc.create(cm)["metadata"]["uid"]
    '00000000-0000-4000-8000-000000000001'
    >>> mc.requests["create"], mc.writes
    (1, 1)
    """

    def __init__(self, kinds: Iterable[KindInfo] = DEFAULT_KINDS, *,
                 clock: Callable[[], datetime] | None = None, register_crds: bool = True,
                 namespace_lifecycle: bool = False) -> None:
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        self.register_crds = register_crds
        # the API server's NamespaceLifecycle admission: creating an object in a namespace that does not exist
        # is refused with 404 ``namespaces "<ns>" not found``. Off by default: most tests never create the
        # namespaces their objects live in.
        self.namespace_lifecycle = namespace_lifecycle
        self.requests: Counter[str] = Counter()
        self.log: list[Request] = []
        self.listeners: list[Callable[[str, Obj], None]] = []
        # server-side normalization to play (defaulting, canonical quantities...): each is called on every
        # object about to be stored (dry runs included) and may change it in place
        self.normalizers: list[Callable[[Obj], None]] = []
        self._lock = threading.RLock()
        self._kinds: dict[tuple[str, str], KindInfo] = {}
        self._store: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}
        self._fields: dict[tuple[str, str, str, str], dict[str, set[Path]]] = {}
        self._appliers: dict[tuple[str, str, str, str], set[str]] = {}  # managers whose last write was an apply
        self._faults: list[_Fault] = []
        self._rv = itertools.count(1)
        self._uid = itertools.count(1)
        self._last_removed: Obj | None = None   # what the last removal announced (a Pod's DELETE answers it)
        for info in kinds:
            self.register_kind(info.api_version, info.kind, namespaced=info.namespaced, plural=info.plural,
                               status_subresource=info.status_subresource)

    # ---- kinds --------------------------------------------------------------------------------------------

    @_locked
    def register_kind(self, api_version: str, kind: str, *, namespaced: bool, plural: str = "",
                      status_subresource: bool = False) -> None:
        """Serve a kind (all versions of its group share storage, as with a real CRD's stored version)."""
        gvk = GVK.parse(api_version, kind)
        self._kinds[(gvk.group, kind)] = KindInfo(api_version, kind, namespaced, plural or _pluralize(kind),
                                                  status_subresource)
        self._store.setdefault((gvk.group, kind), {})

    @_locked
    def unregister_kind(self, api_version: str, kind: str) -> None:
        """Stop serving a kind and drop its objects (what deleting a CRD does)."""
        gk = (GVK.parse(api_version, kind).group, kind)
        self._kinds.pop(gk, None)
        for (ns, name) in list(self._store.pop(gk, {})):
            self._fields.pop((gk[0], gk[1], ns, name), None)

    def _info(self, api_version: str, kind: str) -> KindInfo:
        gvk = GVK.parse(api_version, kind)
        info = self._kinds.get((gvk.group, kind))
        if info is None or not gvk.version:
            raise UnknownKind(f'no matches for kind "{kind}" in version "{api_version}"')
        return info

    # ---- request accounting and fault injection -----------------------------------------------------------

    @property
    def writes(self) -> int:
        """Number of (non-dry-run) write requests so far."""
        return sum(n for verb, n in self.requests.items() if verb in WRITE_VERBS)

    @_locked
    def reset_requests(self) -> None:
        self.requests.clear()
        self.log.clear()

    @_locked
    def write_log(self) -> list[Request]:
        """The logged write requests, in order."""
        return [r for r in self.log if r.verb in WRITE_VERBS]

    @_locked
    def fail(self, verb: str, error: ApiError, *, kind: str | None = None, name: str | None = None,
             times: int = 1) -> None:
        """Make the next ``times`` requests of ``verb`` (optionally only for ``kind``/``name``) raise ``error``."""
        self._faults.append(_Fault(verb, error, kind, name, times))

    def _request(self, verb: str, api_version: str, kind: str, namespace: str | None, name: str) -> None:
        self.requests[verb] += 1
        self.log.append(Request(verb, api_version, kind, namespace or "", name))
        base = verb.split(":", maxsplit=1)[0]
        for f in self._faults:
            if f.times > 0 and f.verb == base and f.kind in (None, kind) and f.name in (None, name):
                f.times -= 1
                if f.times == 0:
                    self._faults.remove(f)
                raise f.error

    # ---- helpers -------------------------------------------------------------------------------------------

    def _key(self, info: KindInfo, name: str, namespace: str | None) -> tuple[str, str]:
        if info.namespaced:
            if not namespace:
                raise BadRequest(f"an empty namespace may not be set when a resource name is provided "
                                 f"({info.resource} {name!r})")
            return (namespace, name)
        return ("", name)

    def _lookup(self, info: KindInfo, name: str, namespace: str | None) -> Obj | None:
        return self._store[(info.group, info.kind)].get(self._key(info, name, namespace))

    def _fkey(self, info: KindInfo, obj: Obj) -> tuple[str, str, str, str]:
        meta = obj.get("metadata") or {}
        return (info.group, info.kind, str(meta.get("namespace") or "") if info.namespaced else "",
                str(meta.get("name") or ""))

    def _render(self, obj: Obj, owners: dict[str, set[Path]] | None = None,
                appliers: set[str] | None = None) -> Obj:
        """Set ``metadata.managedFields`` from the tracked ownership (or the given one, for a dry run): one
        entry per manager, ``Apply`` when its last write was an apply, else ``Update``, sorted by manager."""
        try:
            info = self._info(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        except ApiError:
            return obj
        key = self._fkey(info, obj)
        owners = owners if owners is not None else self._fields.get(key, {})
        appliers = appliers if appliers is not None else self._appliers.get(key, set())
        meta = obj.setdefault("metadata", {})
        entries = [{"manager": m, "operation": "Apply" if m in appliers else "Update",
                    "apiVersion": obj.get("apiVersion"), "fieldsType": "FieldsV1", "fieldsV1": fields_v1(paths)}
                   for m, paths in sorted(owners.items()) if paths]
        if entries:
            meta["managedFields"] = entries
        else:
            meta.pop("managedFields", None)
        return obj

    def _not_found(self, info: KindInfo, name: str) -> NotFound:
        return NotFound(f'{info.resource} "{name}" not found')

    def _conflict(self, info: KindInfo, name: str) -> Conflict:
        return Conflict(f'Operation cannot be fulfilled on {info.resource} "{name}": the object has been '
                        f"modified; please apply your changes to the latest version and try again")

    def _notify(self, event: str, obj: Obj) -> None:
        for listener in self.listeners:
            listener(event, copy_json(obj))

    def _check_body(self, obj: Obj) -> tuple[KindInfo, str, str]:
        if not isinstance(obj, dict):
            raise BadRequest("request body must be a JSON object")
        api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
        if not api_version or not kind:
            raise BadRequest("Object 'Kind' is missing in request body" if not kind
                             else "Object 'apiVersion' is missing in request body")
        info = self._info(api_version, kind)
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name:
            raise Invalid(f"{info.kind}.{info.group or 'core'} is invalid: metadata.name: Required value: "
                          f"name or generateName is required")
        namespace = str(meta.get("namespace") or "") if info.namespaced else ""
        if info.namespaced and not namespace:
            raise BadRequest(f"the namespace of the object {info.resource} {name!r} is required")
        return info, namespace, name

    # ---- the write path every mutation goes through -------------------------------------------------------

    def _normalize_secret(self, info: KindInfo, obj: Obj) -> None:
        if info.group == "" and info.kind == "Secret" and "stringData" in obj:
            data = obj.setdefault("data", {}) or {}
            for k, v in (obj.pop("stringData") or {}).items():
                data[k] = base64.b64encode(str(v).encode()).decode()
            obj["data"] = data

    def _check_immutable(self, info: KindInfo, old: Obj, new: Obj) -> None:
        if info.group != "" or info.kind not in ("Secret", "ConfigMap") or old.get("immutable") is not True:
            return
        name = old["metadata"]["name"]
        errs = []
        for f in ("data", "binaryData") if info.kind == "ConfigMap" else ("data",):
            if (old.get(f) or {}) != (new.get(f) or {}):
                errs.append(f"{f}: Forbidden: field is immutable when `immutable` is set")
        if new.get("immutable") is not True:
            errs.append("immutable: Forbidden: field is immutable when `immutable` is set")
        if errs:
            joined = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
            raise Invalid(f'{info.kind} "{name}" is invalid: {joined}')

    def _commit(self, info: KindInfo, old: Obj | None, new: Obj, *, dry_run: bool = False,
                finalize: bool = False) -> Obj:
        """Store ``new`` (already a private copy) replacing ``old``; do bookkeeping; run GC when it went away.

        ``null`` map values are dropped, as an API server does (typed objects lose them when decoded, custom
        resources have them pruned), so code that compares what it declared with what is stored meets them
        here the way it will on a real cluster. A Namespace gets the ``kubernetes`` finalizer when created and
        keeps its ``spec.finalizers`` on every write but the namespace controller's (``finalize``). A write that
        leaves an object being deleted with nothing holding it deletes it instead of storing it (only DELETED is
        announced, as on a real server)."""
        new = _without_nulls(new)
        self._normalize_secret(info, new)
        if _is(info, "Namespace"):
            given = new.get("spec")
            spec: Obj = given if isinstance(given, dict) else {}
            if old is None:
                spec["finalizers"] = [*(f for f in spec.get("finalizers") or [] if f != NAMESPACE_FINALIZER),
                                      NAMESPACE_FINALIZER]
            elif not finalize:
                spec.pop("finalizers", None)
                if (old.get("spec") or {}).get("finalizers"):
                    spec["finalizers"] = copy_json(old["spec"]["finalizers"])
            new["spec"] = spec
        if info.group not in UNTYPED_GROUPS:
            new = drop_empty(new)
        for normalize in self.normalizers:
            normalize(new)
        meta = new.setdefault("metadata", {})
        if old is None:
            meta["uid"] = f"00000000-0000-4000-8000-{next(self._uid):012x}"
            meta["creationTimestamp"] = _timestamp(self.clock())
            meta["generation"] = 1
            if dry_run:
                meta["resourceVersion"] = str(next(self._rv))
                return copy_json(new)
        else:
            self._check_immutable(info, old, new)
            for k in _SYSTEM_META:
                if k in old["metadata"]:
                    meta[k] = old["metadata"][k]
                else:
                    meta.pop(k, None)
            if new == old:
                return copy_json(old)
            spec_old = {k: v for k, v in old.items() if k not in ("metadata", "status")}
            spec_new = {k: v for k, v in new.items() if k not in ("metadata", "status")}
            if spec_old != spec_new:
                meta["generation"] = int(old["metadata"].get("generation") or 0) + 1
            if dry_run:
                return copy_json(new)
        key = (meta.get("namespace", "") if info.namespaced else "", meta["name"])
        if not info.namespaced:
            meta.pop("namespace", None)
        if old is not None and meta.get("deletionTimestamp") and not _held(info, new):
            # The write took away the last thing holding an object being deleted: the server deletes it rather
            # than storing the write (only DELETED is announced, carrying the last stored state) and answers
            # the write's result at the version it had.
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            self._remove(info, key)
            return copy_json(new)
        meta["resourceVersion"] = str(next(self._rv))
        self._store[(info.group, info.kind)][key] = new
        self._notify("ADDED" if old is None else "MODIFIED", new)
        if info.group == "apiextensions.k8s.io" and info.kind == "CustomResourceDefinition" and self.register_crds:
            self._serve_crd(new)
        return copy_json(new)

    def _track_update(self, info: KindInfo, old: Obj | None, new: Obj, manager: str) -> None:
        """Field ownership after a non-apply write by ``manager``: it takes what it changed."""
        meta = new["metadata"]
        fkey = (info.group, info.kind, meta.get("namespace", "") if info.namespaced else "", meta["name"])
        owners = self._fields.setdefault(fkey, {})
        new_flat = _flat(info, new)
        old_flat = _flat(info, old) if old is not None else {}
        changed = {p for p, v in new_flat.items() if old_flat.get(p, _MISSING) != v
                   and not _items_removed(old_flat.get(p, _MISSING), v)}
        removed = set(old_flat) - set(new_flat)
        for paths in owners.values():
            for p in changed | removed:
                paths.difference_update(_related(paths, p))
        if changed:
            owners.setdefault(manager, set()).update(changed)
            self._appliers.get(fkey, set()).discard(manager)
        for m in [m for m, paths in owners.items() if not paths]:
            del owners[m]

    def _serve_crd(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        group, names = spec.get("group"), spec.get("names") or {}
        kind = names.get("kind")
        if not group or not kind:
            return
        versions = [v.get("name") for v in spec.get("versions") or [] if v.get("served", True) and v.get("name")]
        if not versions:
            return
        subresources = any((v.get("subresources") or {}).get("status") is not None
                           for v in spec.get("versions") or [])
        self.register_kind(f"{group}/{versions[0]}", kind, namespaced=spec.get("scope") != "Cluster",
                           plural=names.get("plural") or "", status_subresource=subresources)

    def _remove(self, info: KindInfo, key: tuple[str, str]) -> None:
        """Drop a stored object; DELETED carries its last state at a new resourceVersion (as a watch does)."""
        obj = self._store[(info.group, info.kind)].pop(key, None)
        if obj is None:
            return
        self._fields.pop((info.group, info.kind, key[0], key[1]), None)
        self._appliers.pop((info.group, info.kind, key[0], key[1]), None)
        obj["metadata"]["resourceVersion"] = str(next(self._rv))
        self._last_removed = copy_json(obj)
        self._notify("DELETED", obj)
        if info.group == "apiextensions.k8s.io" and info.kind == "CustomResourceDefinition" and self.register_crds:
            spec = obj.get("spec") or {}
            kind = (spec.get("names") or {}).get("kind")
            if spec.get("group") and kind and (spec["group"], kind) in self._kinds:
                self.unregister_kind(f"{spec['group']}/v1", kind)
        self._collect_dependents(obj["metadata"]["uid"])

    def _all_uids(self) -> set[str]:
        return {o["metadata"]["uid"] for objs in self._store.values() for o in objs.values()}

    def _collect_dependents(self, owner_uid: str) -> None:
        """Background garbage collection of what ``owner_uid`` owned."""
        live = self._all_uids()
        for gk, objs in list(self._store.items()):
            info = self._kinds.get(gk)
            if info is None:
                continue
            for key, dep in list(objs.items()):
                refs = dep["metadata"].get("ownerReferences") or []
                if not any(r.get("uid") == owner_uid for r in refs):
                    continue
                remaining = [r for r in refs if r.get("uid") != owner_uid]
                if any(r.get("uid") in live for r in remaining):
                    new = copy_json(dep)
                    new["metadata"]["ownerReferences"] = remaining
                    self._commit(info, dep, new)
                else:
                    self._delete_obj(info, key, dep, propagation_policy=None)

    def _delete_obj(self, info: KindInfo, key: tuple[str, str], obj: Obj, *, propagation_policy: str | None,
                    grace_seconds: int | None = None) -> None:
        """Delete as the API server does: a Namespace is first only marked ``Terminating`` (its ``kubernetes``
        finalizer waits for the namespace controller, :meth:`finish_namespace`); a Pod bound to a node is only
        marked for its grace period (the kubelet, not modelled, deletes it with grace 0: :meth:`remove`); an
        object with finalizers is marked until they go; anything else goes at once."""
        if propagation_policy == "Orphan":
            self._orphan_dependents(obj["metadata"]["uid"])
        meta = obj["metadata"]
        now = self.clock()
        if _is(info, "Namespace") and not meta.get("deletionTimestamp"):
            def terminating(o: Obj) -> None:
                o["metadata"]["deletionTimestamp"] = _timestamp(now)
                o.setdefault("status", {})["phase"] = "Terminating"
            self._mark(info, key, obj, terminating)
            return
        if _is(info, "Pod"):
            grace = _pod_grace(obj, grace_seconds)
            current = meta.get("deletionGracePeriodSeconds")
            if meta.get("deletionTimestamp") and current is not None and grace >= int(current):
                return   # a pending deletion can only be shortened
            def graceful(o: Obj) -> None:
                # marked first (MODIFIED), even when deleted at once (grace 0: then DELETED follows)
                o["metadata"]["deletionTimestamp"] = _timestamp(now + timedelta(seconds=grace))
                o["metadata"]["deletionGracePeriodSeconds"] = grace
            self._mark(info, key, obj, graceful)
            return
        if _held(info, obj):
            if not obj["metadata"].get("deletionTimestamp"):
                def marked(o: Obj) -> None:
                    o["metadata"]["deletionTimestamp"] = _timestamp(now)
                    o["metadata"]["deletionGracePeriodSeconds"] = 0
                self._mark(info, key, obj, marked)
            return
        self._remove(info, key)

    def _mark(self, info: KindInfo, key: tuple[str, str], obj: Obj, mutate: Callable[[Obj], None]) -> None:
        """Store a changed copy of ``obj`` as the server's own deletion bookkeeping (no manager owns it):
        MODIFIED, then DELETED when nothing holds it."""
        new = copy_json(obj)
        mutate(new)
        new["metadata"]["resourceVersion"] = str(next(self._rv))
        self._store[(info.group, info.kind)][key] = new
        self._notify("MODIFIED", new)
        if not _held(info, new):
            self._remove(info, key)

    def _orphan_dependents(self, owner_uid: str) -> None:
        """What the garbage collector's ``orphan`` finalizer does: drop references to the owner."""
        for gk, objs in list(self._store.items()):
            info = self._kinds.get(gk)
            if info is None:
                continue
            for dep in list(objs.values()):
                refs = dep["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == owner_uid for r in refs):
                    new = copy_json(dep)
                    remaining = [r for r in refs if r.get("uid") != owner_uid]
                    if remaining:
                        new["metadata"]["ownerReferences"] = remaining
                    else:
                        new["metadata"].pop("ownerReferences", None)
                    self._commit(info, dep, new)

    # ---- the Cluster Protocol -----------------------------------------------------------------------------

    @_locked
    @_rendered
    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        self._request("get", api_version, kind, namespace, name)
        info = self._info(api_version, kind)
        obj = self._lookup(info, name, namespace)
        if obj is None:
            raise self._not_found(info, name)
        return copy_json(obj)

    @_locked
    @_rendered
    def list(self, api_version: str, kind: str, namespace: str | None = None,
             label_selector: str | None = None, *, limit: int | None = None) -> list[Obj]:
        self._request("list", api_version, kind, namespace, "")
        info = self._info(api_version, kind)
        try:
            selector = labelsel.parse(label_selector)
        except labelsel.SelectorError as exc:
            raise BadRequest(f"unable to parse requirement: {exc}") from None
        out = []
        for (ns, _), obj in sorted(self._store[(info.group, info.kind)].items()):
            if namespace and info.namespaced and ns != namespace:
                continue
            if selector.matches(obj["metadata"].get("labels")):
                out.append(copy_json(obj))
                if limit is not None and len(out) >= limit:
                    break
        return out

    @_locked
    @_rendered
    def create(self, obj: Obj, *, dry_run: bool = False, field_manager: str | None = None) -> Obj:
        """POST as ``field_manager`` (``"unknown"`` when not given). Fields are recorded under that manager
        like an apply's, i.e. already folded the way ``common.cluster.kube`` folds a create into the next apply."""
        field_manager = field_manager or "unknown"
        meta = obj.get("metadata") or {} if isinstance(obj, dict) else {}
        self._request("create:dry-run" if dry_run else "create", str(obj.get("apiVersion") or ""),
                      str(obj.get("kind") or ""), meta.get("namespace"), str(meta.get("name") or ""))
        return self._create(obj, dry_run=dry_run, manager=field_manager)

    def _admit(self, info: KindInfo, namespace: str) -> None:
        """NamespaceLifecycle (when on): no new object in a namespace that does not exist."""
        if self.namespace_lifecycle and info.namespaced and \
                self._lookup(self._info("v1", "Namespace"), namespace, None) is None:
            message = f'namespaces "{namespace}" not found'
            raise NotFound(message, status={"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                            "message": message, "reason": "NotFound",
                                            "details": {"name": namespace, "kind": "namespaces"}, "code": 404})

    def _create(self, obj: Obj, *, dry_run: bool, manager: str) -> Obj:
        info, namespace, name = self._check_body(obj)
        if self._lookup(info, name, namespace) is not None:
            raise AlreadyExists(f'{info.resource} "{name}" already exists')
        self._admit(info, namespace)
        stored = self._commit(info, None, _fresh(obj, info), dry_run=dry_run)
        if not dry_run:
            self._track_update(info, None, self._lookup(info, name, namespace) or stored, manager)
        return stored

    @_locked
    @_rendered
    def apply(self, obj: Obj, *, field_manager: str, force: bool = True, dry_run: bool = False) -> Obj:
        meta = obj.get("metadata") or {} if isinstance(obj, dict) else {}
        self._request("apply:dry-run" if dry_run else "apply", str(obj.get("apiVersion") or ""),
                      str(obj.get("kind") or ""), meta.get("namespace"), str(meta.get("name") or ""))
        info, namespace, name = self._check_body(obj)
        if not field_manager:
            raise BadRequest("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                             "is required for apply patch")
        live = self._lookup(info, name, namespace)
        key = (info.group, info.kind, namespace if info.namespaced else "", name)
        if live is None:
            self._admit(info, namespace)
            stored = self._commit(info, None, _fresh(obj, info), dry_run=dry_run)
            owned = {field_manager: set(_flat(info, _without_nulls(_fresh(obj, info))))}
            if dry_run:
                return self._render(stored, owned, {field_manager})
            self._fields[key] = owned
            self._appliers[key] = {field_manager}
            return stored
        want_rv = meta.get("resourceVersion")
        if want_rv and want_rv != live["metadata"]["resourceVersion"]:
            raise self._conflict(info, name)
        fkey = (info.group, info.kind, namespace if info.namespaced else "", name)
        owners = {m: set(p) for m, p in self._fields.get(fkey, {}).items()}
        applied = _flat(info, obj)
        live_flat = _flat(info, live)
        conflicts: list[str] = []
        for p, v in applied.items():
            if live_flat.get(p, _MISSING) == v:
                continue
            for m, paths in owners.items():
                if m == field_manager:
                    continue
                hit = _related(paths, p)
                if hit:
                    if force:
                        paths.difference_update(hit)
                    else:
                        conflicts.append(f'conflict with "{m}": .{".".join(p)}')
        if conflicts:
            raise Conflict(f"Apply failed with {len(conflicts)} conflict{'s' if len(conflicts) > 1 else ''}: "
                           + "\n".join(conflicts))
        new = copy_json(live)
        released = owners.get(field_manager, set()) - set(applied)
        for p in released:
            if not any(_related(paths, p) for m, paths in owners.items() if m != field_manager):
                _del_path(new, p)
        for p, v in applied.items():
            _set_path(new, p, v)
        owners[field_manager] = set(applied)
        stored = self._commit(info, live, new, dry_run=dry_run)
        appliers = {*self._appliers.get(key, set()), field_manager}
        if dry_run:
            return self._render(stored, {m: p for m, p in owners.items() if p}, appliers)
        if self._lookup(info, name, namespace) is not None:
            self._fields[fkey] = {m: p for m, p in owners.items() if p}
            self._appliers[key] = appliers
        return stored

    @_locked
    @_rendered
    def merge_patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Obj, *,
                    resource_version: str | None = None, subresource: str = "",
                    field_manager: str = "unknown") -> Obj:
        if subresource == "status":
            self._request("patch_status", api_version, kind, namespace, name)
            return self._patch_status(api_version, kind, name, namespace, patch, resource_version=resource_version)
        if subresource:
            raise NotFound("the server could not find the requested resource")
        self._request("patch", api_version, kind, namespace, name)
        return self._patch(api_version, kind, name, namespace, patch, resource_version=resource_version,
                           manager=field_manager)

    def _patch_status(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Obj, *,
                      resource_version: str | None) -> Obj:
        """The patch applied to the whole object, of which only ``status`` is kept (the API server's status
        strategy): metadata and spec in the patch are ignored, but ``metadata.resourceVersion`` is checked."""
        info = self._info(api_version, kind)
        if not info.status_subresource:
            raise NotFound("the server could not find the requested resource")
        live = self._patch_target(info, name, namespace, patch, resource_version)
        patched = apply_merge_patch(copy_json(live), patch)
        new = copy_json(live)
        if "status" in patched:
            new["status"] = patched["status"]
        else:
            new.pop("status", None)
        return self._commit(info, live, new)

    def _patch_target(self, info: KindInfo, name: str, namespace: str | None, patch: Obj,
                      resource_version: str | None) -> Obj:
        """The live object a merge patch applies to, once the patch is a map and its resourceVersion (given, or
        in the patch's metadata) is current; NotFound, BadRequest or Conflict otherwise."""
        live = self._lookup(info, name, namespace)
        if live is None:
            raise self._not_found(info, name)
        if not isinstance(patch, dict):
            raise BadRequest("merge patch must be a JSON object")
        want_rv = resource_version or (patch.get("metadata") or {}).get("resourceVersion")
        if want_rv and want_rv != live["metadata"]["resourceVersion"]:
            raise self._conflict(info, name)
        return live

    def _patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Obj, *,
               resource_version: str | None, manager: str) -> Obj:
        info = self._info(api_version, kind)
        live = self._patch_target(info, name, namespace, patch, resource_version)
        new = apply_merge_patch(copy_json(live), patch)
        new["metadata"]["name"] = live["metadata"]["name"]
        if info.namespaced:
            new["metadata"]["namespace"] = live["metadata"]["namespace"]
        if info.status_subresource:
            if "status" in live:
                new["status"] = copy_json(live["status"])
            else:
                new.pop("status", None)
        return self._write_update(info, live, new, manager)

    def _write_update(self, info: KindInfo, live: Obj, new: Obj, manager: str) -> Obj:
        new["apiVersion"], new["kind"] = live["apiVersion"], live["kind"]
        stored = self._commit(info, live, new)
        if self._lookup(info, live["metadata"]["name"], live["metadata"].get("namespace")) is not None:
            self._track_update(info, live, stored, manager)
        return stored

    @_locked
    @_rendered
    def update(self, obj: Obj, *, field_manager: str = "unknown") -> Obj:
        meta = obj.get("metadata") or {} if isinstance(obj, dict) else {}
        self._request("update", str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""),
                      meta.get("namespace"), str(meta.get("name") or ""))
        info, namespace, name = self._check_body(obj)
        live = self._lookup(info, name, namespace)
        if live is None:
            raise self._not_found(info, name)
        if meta.get("resourceVersion") and meta["resourceVersion"] != live["metadata"]["resourceVersion"]:
            raise self._conflict(info, name)
        new = copy_json(obj)
        if info.status_subresource:
            if "status" in live:
                new["status"] = copy_json(live["status"])
            else:
                new.pop("status", None)
        return self._write_update(info, live, new, field_manager)

    @_locked
    @_rendered
    def update_status(self, obj: Obj) -> Obj:
        meta = obj.get("metadata") or {} if isinstance(obj, dict) else {}
        self._request("update_status", str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""),
                      meta.get("namespace"), str(meta.get("name") or ""))
        info, namespace, name = self._check_body(obj)
        if not info.status_subresource:
            raise NotFound("the server could not find the requested resource")
        live = self._lookup(info, name, namespace)
        if live is None:
            raise self._not_found(info, name)
        if meta.get("resourceVersion") and meta["resourceVersion"] != live["metadata"]["resourceVersion"]:
            raise self._conflict(info, name)
        new = copy_json(live)
        if "status" in obj:
            new["status"] = copy_json(obj["status"])
        else:
            new.pop("status", None)
        return self._commit(info, live, new)

    @_locked
    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               uid: str | None = None, resource_version: str | None = None,
               propagation_policy: str | None = None) -> Obj | None:
        """Answers as the API server does: the object while something still holds it (marked with
        ``metadata.deletionTimestamp``), the last state of a Pod deleted at once, ``None`` (a ``Status``) for
        anything else deleted at once."""
        self._request("delete", api_version, kind, namespace, name)
        info = self._info(api_version, kind)
        self._last_removed = None
        self._delete(api_version, kind, name, namespace, uid=uid, resource_version=resource_version,
                     propagation_policy=propagation_policy)
        marked = self._lookup(info, name, namespace)
        if marked is not None:
            return self._render(copy_json(marked))
        last = self._removed()
        return copy_json(last) if last is not None and (info.group, info.kind) in RETURNS_DELETED_OBJECT else None

    def _removed(self) -> Obj | None:
        """What the last removal announced (set by :meth:`_remove`)."""
        return self._last_removed

    def _delete(self, api_version: str, kind: str, name: str, namespace: str | None, *, uid: str | None,
                resource_version: str | None, propagation_policy: str | None,
                grace_seconds: int | None = None) -> None:
        info = self._info(api_version, kind)
        obj = self._lookup(info, name, namespace)
        if obj is None:
            raise self._not_found(info, name)
        meta = obj["metadata"]
        if uid and uid != meta["uid"]:
            raise Conflict(f'Operation cannot be fulfilled on {info.resource} "{name}": Precondition failed: '
                           f"UID in precondition: {uid}, UID in object meta: {meta['uid']}")
        if resource_version and resource_version != meta["resourceVersion"]:
            raise Conflict(f'Operation cannot be fulfilled on {info.resource} "{name}": Precondition failed: '
                           f"ResourceVersion in precondition: {resource_version}, ResourceVersion in object "
                           f"meta: {meta['resourceVersion']}")
        if propagation_policy not in (None, "Orphan", "Background", "Foreground"):
            raise BadRequest(f"unsupported propagationPolicy {propagation_policy!r}")
        self._delete_obj(info, self._key(info, name, namespace), obj, propagation_policy=propagation_policy,
                         grace_seconds=grace_seconds)

    @_locked
    def is_namespaced(self, api_version: str, kind: str) -> bool:
        return self._info(api_version, kind).namespaced

    @_locked
    def resource_name(self, api_version: str, kind: str) -> str:
        return self._info(api_version, kind).plural or _pluralize(kind)

    # ---- uncounted helpers for tests: "someone else" acting on the cluster ---------------------------------

    @_locked
    @_rendered
    def peek(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """The stored object (a copy) or ``None``; not counted."""
        info = self._info(api_version, kind)
        obj = self._lookup(info, name, namespace)
        return copy_json(obj) if obj is not None else None

    @_locked
    @_rendered
    def objects(self, api_version: str, kind: str) -> builtins.list[Obj]:
        """All stored objects of a kind (copies, sorted by namespace/name); not counted."""
        info = self._info(api_version, kind)
        return [copy_json(o) for _, o in sorted(self._store[(info.group, info.kind)].items())]

    @_locked
    @_rendered
    def put(self, obj: Obj, *, manager: str = "test") -> Obj:
        """Create ``obj``, or overwrite the stored one (status included), as ``manager``; not counted."""
        info, namespace, name = self._check_body(obj)
        live = self._lookup(info, name, namespace)
        if live is None:
            new = copy_json(obj)
            for k in _SYSTEM_META:
                new.get("metadata", {}).pop(k, None)
            stored = self._commit(info, None, new)
            self._track_update(info, None, self._lookup(info, name, namespace) or stored, manager)
            return stored
        return self._write_update(info, live, copy_json(obj), manager)

    @_locked
    @_rendered
    def edit(self, api_version: str, kind: str, name: str, namespace: str | None,
             mutate: Callable[[Obj], None], *, manager: str = "kubectl-edit") -> Obj:
        """Change an object in place like ``kubectl edit`` as ``manager`` (status included); not counted."""
        info = self._info(api_version, kind)
        live = self._lookup(info, name, namespace)
        if live is None:
            raise self._not_found(info, name)
        new = copy_json(live)
        mutate(new)
        return self._write_update(info, live, new, manager)

    @_locked
    @_rendered
    def set_status(self, api_version: str, kind: str, name: str, namespace: str | None, status: Obj) -> Obj:
        """Replace ``status`` like the object's controller would; not counted."""
        return self.edit(api_version, kind, name, namespace, lambda o: o.__setitem__("status", copy_json(status)),
                         manager="controller")

    @_locked
    def remove(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation_policy: str | None = None, grace_period_seconds: int | None = None) -> None:
        """Delete like ``kubectl delete`` (finalizers and garbage collection apply); not counted.
        ``grace_period_seconds=0`` on a Pod is what its kubelet does once the containers stopped."""
        self._delete(api_version, kind, name, namespace, uid=None, resource_version=None,
                     propagation_policy=propagation_policy, grace_seconds=grace_period_seconds)

    @_locked
    def finish_namespace(self, name: str) -> builtins.list[str]:
        """Play the namespace controller once for a Terminating namespace: delete every object in it (their
        own finalizers and the garbage collector apply) and, once nothing is left, drop its ``kubernetes``
        finalizer so the namespace goes (only DELETED is announced; ``metadata.finalizers`` may still hold it).
        Returns what still holds it (``<resource> <name>``, sorted), empty when it is gone; not counted."""
        info = self._info("v1", "Namespace")
        ns = self._lookup(info, name, None)
        if ns is None:
            return []
        if not ns["metadata"].get("deletionTimestamp"):
            raise BadRequest(f'namespace "{name}" is not being deleted')

        def contents() -> builtins.list[tuple[KindInfo, tuple[str, str], Obj]]:
            return [(k, key, o) for gk, objs in self._store.items() if (k := self._kinds.get(gk)) and k.namespaced
                    for key, o in objs.items() if key[0] == name]

        for kinfo, key, _ in contents():
            live = self._store[(kinfo.group, kinfo.kind)].get(key)   # the garbage collector may have taken it
            if live is not None and not live["metadata"].get("deletionTimestamp"):
                self._delete_obj(kinfo, key, live, propagation_policy=None)
        left = sorted(f"{kinfo.resource} {key[1]}" for kinfo, key, _ in contents())
        if left:
            return left
        new = copy_json(ns)
        new["spec"]["finalizers"] = [f for f in new["spec"].get("finalizers") or [] if f != NAMESPACE_FINALIZER]
        self._commit(info, ns, new, finalize=True)
        return [] if self._lookup(info, name, None) is None else [f"{info.resource} {name}"]

    @_locked
    def remove_finalizer(self, api_version: str, kind: str, name: str, namespace: str | None,
                         finalizer: str) -> None:
        """Drop one finalizer, as the controller owning it would; the object goes once none are left."""
        def drop(o: Obj) -> None:
            o["metadata"]["finalizers"] = [f for f in o["metadata"].get("finalizers") or [] if f != finalizer]
        self.edit(api_version, kind, name, namespace, drop, manager="controller")

    @_locked
    def managers(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, set[str]]:
        """Field ownership, as dotted paths per manager (for asserting apply semantics)."""
        info = self._info(api_version, kind)
        key = (info.group, info.kind, namespace if info.namespaced and namespace else "", name)
        return {m: {".".join(p) for p in paths} for m, paths in self._fields.get(key, {}).items()}


def _held(info: KindInfo, obj: Obj) -> bool:
    """Whether something keeps an object being deleted: its finalizers, a Namespace's ``spec.finalizers``, a
    Pod's grace period (its kubelet has not confirmed yet)."""
    meta = obj.get("metadata") or {}
    if meta.get("finalizers"):
        return True
    if _is(info, "Namespace") and (obj.get("spec") or {}).get("finalizers"):
        return True
    return _is(info, "Pod") and int(meta.get("deletionGracePeriodSeconds") or 0) > 0


def _pod_grace(pod: Obj, requested: int | None) -> int:
    """The grace period a Pod's deletion gets: none when it was never bound to a node (nothing runs it)."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return 0
    if requested is not None:
        return max(0, requested)
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return DEFAULT_GRACE_SECONDS if value is None else max(0, int(value))


def _fresh(obj: Obj, info: Any) -> Obj:
    """What a create stores: a copy without server-populated metadata, and without status where status is a
    subresource (the API server ignores both in a create body)."""
    new = copy_json(obj)
    for k in _SYSTEM_META:
        new.get("metadata", {}).pop(k, None)
    if info.status_subresource:
        new.pop("status", None)
    return new


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
