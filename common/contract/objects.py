"""Kubernetes objects as plain data: the ``dict`` manifest, its group/version/kind, its identity.

Every layer passes objects as the JSON-shaped ``dict`` the API server serves (``Obj``), never as generated
model classes, so the same functions run over a manifest read from a file, a webhook's AdmissionReview and a
watch event. ``GVK`` and ``ObjectRef`` are the two ways the spec names an object: by type, and by identity
(what collides across phases and revisions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar, cast

Obj = dict[str, Any]

_J = TypeVar("_J")


def copy_json(value: _J) -> _J:
    """Deep copy of JSON-shaped data (dicts, lists, scalars); several times faster than ``copy.deepcopy``.

    The copy has the type of ``value``: a ``dict`` copies to a ``dict``, a ``list`` to a ``list``.
    """
    return cast(_J, _copy(value))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def merge_patch_between(old: Obj, new: Obj) -> Obj:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new``: changed and added keys with their new
    value, removed keys as ``null``, maps compared key by key, lists and scalars replaced whole.

    ``new`` must hold no ``null`` map values (a merge patch cannot set one: ``null`` removes the key), which
    an API server never stores anyway."""
    patch: Obj = {k: None for k in old if k not in new}
    for k, v in new.items():
        before = old.get(k, _ABSENT)
        if before == v:
            continue
        patch[k] = merge_patch_between(before, v) if isinstance(v, dict) and isinstance(before, dict) else v
    return patch


_ABSENT = object()


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with the JSON merge patch ``patch`` applied (RFC 7386, section 2), as a new value: ``target``
    is not modified (the maps along the patch's paths are new; what the patch does not touch is shared with
    ``target``), and the patch's values are copied."""
    if not isinstance(patch, dict):
        return _copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = apply_merge_patch(result.get(k), v)
    return result


@dataclass(frozen=True, slots=True)
class GVK:
    """Group, version and kind of an object; ``group`` is ``""`` for the core group."""

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @classmethod
    def of(cls, obj: Obj) -> GVK:
        return cls.parse(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))

    @classmethod
    def parse(cls, api_version: str, kind: str) -> GVK:
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Identity of one object: what collides across phases and revisions (group, kind, namespace, name)."""

    group: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Obj) -> ObjectRef:
        gvk = GVK.of(obj)
        meta = obj.get("metadata") or {}
        return cls(gvk.group, gvk.kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def __str__(self) -> str:
        gk = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{gk} {self.namespace}/{self.name}" if self.namespace else f"{gk} {self.name}"
