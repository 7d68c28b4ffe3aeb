"""Server-side-apply field ownership after a plain create: folding a manager's Update entry into its Apply entry.

The reconciler creates absent objects with a plain POST (so a stale cache can never overwrite an object
someone else created meanwhile), and applies them afterwards. On an API server those are two separate
``managedFields`` entries, ``{manager, operation: Update}`` and ``{manager, operation: Apply}``, and a server-side
apply only releases fields its own *Apply* entry owned. Left alone, every field of the creating revision's
manifest would therefore stay owned by the Update entry forever: a field that revision N+1 stops declaring
(an environment variable dropped from a Deployment, say) would silently survive the upgrade.

The fix is the one client-go ships as ``csaupgrade``: merge the manager's Update entries into its Apply entry,
so the next apply owns, and can release, everything the create set. This module is the pure part: from a
``managedFields`` list to the upgraded list. The Kubernetes adapter sends it (guarded by a resourceVersion test)
the first time it applies an object that still carries such an entry; after that no Update entry is left, and
applies cost one request as usual.
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

APPLY, UPDATE = "Apply", "Update"


def merge_fields(a: Obj, b: Obj) -> Obj:
    """The union of two ``fieldsV1`` sets (nested ``{"f:name": {...}, "k:{...}": {...}, ".": {}}`` trees)."""
    out = copy.deepcopy(a)
    for key, sub in b.items():
        if key in out and isinstance(out[key], dict) and isinstance(sub, dict):
            out[key] = merge_fields(out[key], sub)
        else:
            out[key] = copy.deepcopy(sub)
    return out


def _is_update_by(entry: Any, manager: str) -> bool:
    return (isinstance(entry, dict) and entry.get("manager") == manager and entry.get("operation") == UPDATE
            and not entry.get("subresource") and entry.get("fieldsType", "FieldsV1") == "FieldsV1")


def upgrade_managed_fields(managed_fields: list[Obj], manager: str) -> list[Obj] | None:
    """``managed_fields`` with ``manager``'s Update entries folded into its Apply entry (created when missing,
    with the newest Update entry's apiVersion and time); ``None`` when there is nothing to fold."""
    updates = [e for e in managed_fields if _is_update_by(e, manager)]
    if not updates:
        return None
    others = [e for e in managed_fields if not _is_update_by(e, manager)]
    applies = [i for i, e in enumerate(others)
               if e.get("manager") == manager and e.get("operation") == APPLY and not e.get("subresource")]
    if applies:
        target = copy.deepcopy(others[applies[0]])
    else:
        newest = updates[-1]
        target = {"manager": manager, "operation": APPLY, "apiVersion": newest.get("apiVersion"),
                  "time": newest.get("time"), "fieldsType": "FieldsV1", "fieldsV1": {}}
    fields = target.get("fieldsV1") or {}
    for entry in updates:
        fields = merge_fields(fields, entry.get("fieldsV1") or {})
    target["fieldsV1"] = fields
    if applies:
        others[applies[0]] = target
        return others
    return [*others, target]


def upgrade_patch(obj: Obj, manager: str) -> list[Obj] | None:
    """The JSON patch that performs the upgrade on ``obj`` only if it is still at the same resourceVersion
    (so a concurrent writer's ownership is never overwritten), or ``None`` when nothing needs folding."""
    meta = obj.get("metadata") or {}
    upgraded = upgrade_managed_fields(meta.get("managedFields") or [], manager)
    if upgraded is None:
        return None
    return [
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion")},
        {"op": "replace", "path": "/metadata/managedFields", "value": upgraded},
    ]
