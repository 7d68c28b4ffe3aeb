"""Drift: whether an object this COS controls still is what we applied, judged from what the API server says.

Why not compare the manifest with the live object: the server stores a *normalized* form of what we send.
Empty collections are dropped (``data: {}``, ``env: []``), a Secret's ``stringData`` is merged into ``data``,
defaults are filled in, quantities and int-or-string values are canonicalized, nulls vanish. Any comparison
of the manifest as written with the stored object needs a hand-written copy of that normalization, which
always lags the server; where it lags, every reconcile re-applies the object forever.

So we never compare our manifest with the server's form. We compare the server's form with the server's form:

What is remembered, and where. For every object we write (create or server-side apply) the process keeps, in
memory (:class:`AppliedMemory`, one per reconciler process), an :class:`Applied` record keyed by the object's
apiVersion, kind, namespace and name:

- ``uid``: the object the record is about (a deleted and re-created object is a new object);
- ``intent``: a digest of the exact body we sent (manifest + our labels, annotation and ownerReferences);
- ``fingerprint``: a digest of what the server *answered*: the ``metadata.managedFields`` sets of our field
  manager (``olm.operatorframework.io``, its ``Apply`` and ``Update`` entries of the main resource), and the
  answer's values at exactly those fields (the answer projected onto our field set).

At steady state the watch cache keeps our manager's managedFields entries (other managers' are stripped),
so the check is: same uid, same intent digest, and the fingerprint of the cached object equals the remembered
one. No request at all: zero writes and zero dry-runs.

Why a user's change of a field we own is caught. ``kubectl edit`` (an Update) of a field we own moves that
field to the editor's manager, so our field set shrinks *and* the value differs; ``kubectl apply
--server-side --force-conflicts`` takes the field over the same way. Either changes the fingerprint, so we
re-apply (force), which takes the field back. A field we never declared (a label a user adds, a default the
server fills in, ``status``) is in no set of ours, so it is not drift. A user applying the *same* value as ours
makes the field shared: our set and its value are unchanged, so nothing needs to be done, and nothing is.

Why server normalization is never drift. Both sides of the comparison are the server's: the answer to our
apply and a later state of the same object. Whatever the server drops, merges, defaults or canonicalizes, it
did it in both. The manifest is compared only with the manifest (``intent``): a new revision's content is a
new intent, hence an apply.

After a restart (or a leader failover) the memory is empty. For each controlled object the first reconcile
sends one server-side apply *dry run* of the intent: the answer is what our apply would make of the object.
When the answer and the live object have the same values at every field our apply would own (the answer's
field set of our manager, projected on both), the apply would change no value: the live object's fingerprint
is remembered and no write is sent. Otherwise the apply is real. One dry run per object per process
lifetime. The same dry run decides whenever the record does not match (someone else wrote one of our
fields, or the intent changed only in what it copies from the live object, such as another revision's
ownerReference that was just released): a write is sent only when the server says it would change
something. (A controlled object of which our manager owns nothing, restored from a backup say, is applied
once: we could not tell a later change otherwise.)

When the fingerprint is computed. An :class:`AppliedMemory` made with ``settled_by_watch`` (the reconciler
process's) does not fingerprint the answer of a write at once: most objects (ConfigMaps, Services, RBAC) are
never changed by anyone else, and for them "same uid at the resourceVersion our write returned" already says
unchanged. The record stays *pending* until the version it describes is replaced: the process's watch then
hands the replaced version (the cached answer) to :meth:`AppliedMemory.settle`, which fingerprints it, exactly
what fingerprinting the answer would have given (the cache keeps our manager's managedFields). The fingerprint
is then computed once for an object a controller changes (a Deployment's status) and never for the others:
a rollout's writes cost no projection at all. A pending record meeting a newer version that was never settled
(the watch was down, or the event came between the write and its record) cannot tell: :meth:`unchanged` says
no and one dry run decides, as after a restart. Without the flag (the engine driven on its own, with no watch)
every answer is fingerprinted when it is remembered.

A server that sends no ``managedFields`` for our manager (none does among conformant ones, but a proxy may
strip them) cannot be judged this way: :func:`reconciler.rollout.is_subset` on the manifest is the fallback.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from common.contract.api import FIELD_MANAGER
from common.contract.objects import Obj

ABSENT = ["\u0000absent"]   # a projected field the object does not have (no JSON value is a list like this)


def _entries(obj: Obj, manager: str) -> Iterator[Obj]:
    """``manager``'s ``managedFields`` entries on the main resource that hold a ``fieldsV1`` set."""
    return (e for e in (obj.get("metadata") or {}).get("managedFields") or []
            if isinstance(e, dict) and e.get("manager") == manager and not e.get("subresource")
            and isinstance(e.get("fieldsV1"), dict))


def our_fields(obj: Obj, manager: str = FIELD_MANAGER) -> Obj | None:
    """The union of ``manager``'s ``fieldsV1`` sets on the main resource (``None`` when it has none)."""
    entries = list(_entries(obj, manager))
    if not entries:
        return None
    union: Obj = {}
    for e in entries:
        union = _merge(union, e["fieldsV1"])
    return union


def _merge(a: Obj, b: Obj) -> Obj:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def project(value: Any, fields: Obj) -> Any:
    """``value`` reduced to the fields of a ``fieldsV1`` set: ``f:name`` (map field), ``k:{...}`` (the list
    item with these key fields), ``v:value`` (set member), ``i:n`` (list index); a node without children is
    taken whole. Fields the object lacks project to :data:`ABSENT`."""
    out: dict[str, Any] = {}
    for key, sub in fields.items():
        if key == ".":
            continue
        # ``f:`` keys are nearly all of a set: looked up inline (this runs for every object we write)
        if key.startswith("f:"):
            child = value.get(key[2:], _NONE) if isinstance(value, dict) else _NONE
        else:
            child = _child(value, key)
        if child is _NONE:
            out[key] = ABSENT
        elif isinstance(sub, dict) and (len(sub) > 1 or (sub and "." not in sub)):
            out[key] = project(child, sub)   # a node with children besides "." (which this call skips)
        else:
            out[key] = child
    return out


_NONE = object()


def _child(value: Any, key: str) -> Any:
    prefix, _, arg = key.partition(":")
    try:
        if prefix == "f":
            return value.get(arg, _NONE) if isinstance(value, dict) else _NONE
        if not isinstance(value, list):
            return _NONE
        if prefix == "k":
            want = _loads(arg)
            return next((e for e in value if isinstance(e, dict)
                         and all(e.get(k) == v for k, v in want.items())), _NONE)
        if prefix == "v":
            want = _loads(arg)
            return want if want in value else _NONE
        if prefix == "i":
            index = int(arg)
            return value[index] if 0 <= index < len(value) else _NONE
    except (ValueError, TypeError):
        return _NONE
    return _NONE


def _loads(text: str) -> Any:
    """A key's JSON (``k:{...}``, ``v:...``): orjson, or the stdlib for what orjson refuses (a lone surrogate)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def digest(value: Any) -> bytes:
    """A digest of JSON-shaped ``value`` with its keys sorted: equal values, equal digests. Only this process
    compares them (the records live in its memory), so the encoding is orjson's (several times faster than the
    stdlib's, which takes what orjson refuses: integers beyond 64 bits, non-string keys) and the digest a
    128-bit BLAKE2b kept as bytes: one is held per object and per digest, for every object the process wrote."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        text = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


def watched(obj: Obj, fields: Obj) -> Obj:
    """The fields whose values stand for ours: ``fields``, plus, for a Secret, ``data.<key>`` for every
    ``stringData.<key>`` we own. The server never stores ``stringData`` (it writes the keys into ``data``)
    but records the ownership under ``stringData``, so ``data`` is where a change of those values shows."""
    string_data = fields.get("f:stringData")
    if obj.get("apiVersion") != "v1" or obj.get("kind") != "Secret" or not isinstance(string_data, dict):
        return fields
    data = dict(fields.get("f:data") or {})
    if data and not [k for k in data if k != "."]:
        return fields    # the whole data map is ours already
    for key in string_data:
        if key.startswith("f:"):
            data.setdefault(key, {})
    return {**fields, "f:data": data}


def fingerprint(obj: Obj, manager: str = FIELD_MANAGER) -> bytes | None:
    """Digest of ``manager``'s field set and of ``obj``'s values there; ``None`` without managedFields."""
    fields = our_fields(obj, manager)
    if fields is None:
        return None
    return digest([fields, project(obj, watched(obj, fields))])


def same_at(fields: Obj, a: Obj, b: Obj) -> bool:
    """Whether ``a`` and ``b`` have the same values at every field of ``fields``."""
    return digest(project(a, watched(a, fields))) == digest(project(b, watched(b, fields)))


@dataclass(frozen=True, slots=True)
class Applied:
    uid: str
    intent: bytes
    fingerprint: bytes | None    # None: pending, that of the version at ``resource_version`` (see ``settle``)
    resource_version: str = ""   # of the object the fingerprint was last found on (see ``unchanged``)


def _key(obj: Obj) -> tuple[str, str, str, str]:
    """The record's key; apiVersion, kind and namespace interned (thousands of records share a few of each)."""
    meta = obj.get("metadata") or {}
    return (sys.intern(str(obj.get("apiVersion") or "")), sys.intern(str(obj.get("kind") or "")),
            sys.intern(str(meta.get("namespace") or "")), str(meta.get("name") or ""))


class AppliedMemory:
    """What our last write of each object returned, as :class:`Applied` records (thread-safe).

    ``settled_by_watch``: the owner promises to call :meth:`settle` with every cached version of an object that a
    newer one replaces (a watch's MODIFIED event and its previous object); the answers of writes are then
    fingerprinted only when they are replaced (see the module docstring)."""

    def __init__(self, *, settled_by_watch: bool = False) -> None:
        self._records: dict[tuple[str, str, str, str], Applied] = {}
        self._lock = threading.Lock()
        self.settled_by_watch = settled_by_watch

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def remember(self, intent: Obj, answer: Obj) -> bool:
        """Record that ``answer`` is the server's form of ``intent``; ``False`` (nothing recorded) when the
        answer carries no managedFields of ours."""
        if self.settled_by_watch:   # pending: fingerprinted by ``settle``, if ever needed
            fp, known = None, next(_entries(answer, FIELD_MANAGER), None) is not None
        else:
            fp = fingerprint(answer)
            known = fp is not None
        key = _key(intent)
        with self._lock:
            if not known:
                self._records.pop(key, None)
                return False
            meta = answer.get("metadata") or {}
            self._records[key] = Applied(str(meta.get("uid") or ""), digest(intent), fp,
                                         str(meta.get("resourceVersion") or ""))
        return True

    def settle(self, replaced: Obj) -> None:
        """``replaced``, a cached version a newer one just replaced: when it is the version a pending record
        describes (same uid and resourceVersion), fingerprint it now, the last moment it can be."""
        meta = replaced.get("metadata") or {}
        key = _key(replaced)
        with self._lock:
            rec = self._records.get(key)
        if rec is None or rec.fingerprint is not None or not rec.resource_version or \
                rec.resource_version != str(meta.get("resourceVersion") or "") or rec.uid != str(meta.get("uid") or ""):
            return
        fp = fingerprint(replaced)
        with self._lock:
            if self._records.get(key) is rec:
                if fp is None:
                    del self._records[key]
                else:
                    self._records[key] = Applied(rec.uid, rec.intent, fp, rec.resource_version)

    def seen(self, obj: Obj) -> bool:
        """Whether ``obj`` is the very version (uid and resourceVersion) our last write of it returned, or that a
        reconcile since found unchanged: nothing in it is news to the engine."""
        meta = obj.get("metadata") or {}
        rv = str(meta.get("resourceVersion") or "")
        with self._lock:
            rec = self._records.get(_key(obj))
        return bool(rv) and rec is not None and rec.resource_version == rv and rec.uid == str(meta.get("uid") or "")

    def forget(self, obj: Obj) -> None:
        """Drop the record of ``obj``, gone from the cluster; a record of another object of that name (made
        again since, so another uid) stays: a late DELETED event of the old one must not erase it."""
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        key = _key(obj)
        with self._lock:
            rec = self._records.get(key)
            if rec is not None and (not uid or rec.uid == uid):
                del self._records[key]

    def record(self, intent: Obj, live: Obj) -> Applied | None:
        """The record of our last write of this very object (same uid), if any."""
        with self._lock:
            rec = self._records.get(_key(intent))
        return rec if rec is not None and rec.uid == str((live.get("metadata") or {}).get("uid") or "") else None

    def unchanged(self, intent: Obj, live: Obj) -> bool:
        """Whether ``live`` is still exactly what our last write of ``intent`` returned, as far as our fields go.

        The fingerprint (a projection and a digest) is the bulk of a steady-state reconcile's CPU, so it is
        computed once per version of the object: the same uid at the same ``resourceVersion`` is the same
        stored object, whose fingerprint was found equal already (a controller's status write makes a new
        version: its fingerprint is computed once, and remembered with it when still equal)."""
        rec = self.record(intent, live)
        if rec is None or rec.intent != digest(intent):
            return False
        rv = str((live.get("metadata") or {}).get("resourceVersion") or "")
        if rv and rv == rec.resource_version:
            return True
        if rec.fingerprint is None or rec.fingerprint != fingerprint(live):
            return False   # (pending and never settled: what our write returned is no longer known)
        if rv:
            with self._lock:
                if self._records.get(_key(intent)) is rec:
                    self._records[_key(intent)] = Applied(rec.uid, rec.intent, rec.fingerprint, rv)
        return True
