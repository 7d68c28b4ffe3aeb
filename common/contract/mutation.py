"""Defaults the mutating webhook sets on CREATE, as JSONPatch operations.

Every function here is idempotent: run on an object it already mutated, it returns no operation, so the
API server's reinvocation of mutating webhooks changes nothing.
"""

from __future__ import annotations

from typing import Any

from common.contract import api

Obj = dict[str, Any]
Patch = list[dict[str, Any]]


def cos_defaults(obj: Obj, system_namespace: str, *, create: bool = True) -> tuple[Patch, list[str]]:
    """``lifecycleState`` Active, ``collisionProtection`` Prevent (each with a warning saying so), and the
    system namespace on refs that name none (the reconciler applies the same default when resolving).

    On an UPDATE (``create=False``) only the refs' namespace is defaulted. ``kubectl apply`` sends the file's
    phases again, refs without their namespace, and phases are immutable: without the same default on UPDATE,
    re-applying an unchanged file would be denied with ``phases is immutable``. The two state fields are not
    defaulted on UPDATE: an UPDATE that drops them is an author's mistake the CRD reports (defaulting
    ``lifecycleState`` to Active there could even look like an attempt to un-archive)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [], []  # validation reports the missing or malformed spec
    ops: Patch = []
    warnings: list[str] = []
    defaults = (("lifecycleState", api.LIFECYCLE_ACTIVE), ("collisionProtection", api.COLLISION_PREVENT))
    for field, default in defaults if create else ():
        if spec.get(field) is None:
            ops.append({"op": "add", "path": f"/spec/{field}", "value": default})
            warnings.append(f'spec.{field} was not set; defaulted to "{default}"')
    phases = spec.get("phases")
    for i, phase in enumerate(phases if isinstance(phases, list) else []):
        objects = phase.get("objects") if isinstance(phase, dict) else None
        for j, entry in enumerate(objects if isinstance(objects, list) else []):
            ref = entry.get("ref") if isinstance(entry, dict) else None
            if not isinstance(ref, dict):
                continue
            path = f"/spec/phases/{i}/objects/{j}/ref/namespace"
            if "namespace" not in ref:
                ops.append({"op": "add", "path": path, "value": system_namespace})
            elif ref["namespace"] == "":
                ops.append({"op": "replace", "path": path, "value": system_namespace})
    return ops, warnings


def secret_defaults(obj: Obj) -> tuple[Patch, list[str]]:
    """``immutable: true`` on object-data Secrets that do not say; an explicit ``false`` is left for the
    validating webhook to deny, so the author learns about it instead of having it overwritten."""
    if obj.get("type") != api.SECRET_TYPE or obj.get("immutable") is not None:
        return [], []
    return [{"op": "add", "path": "/immutable", "value": True}], []
