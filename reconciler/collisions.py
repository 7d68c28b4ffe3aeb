"""Who may write an object: the collision-protection decision table (``shared/spec/reconciler.md`` section 2.4).

Ownership is decided only by the ``controller: true`` ownerReference, compared on group, kind, name and uid,
never by labels: labels are copyable by anyone, a controller reference with a uid is not forgeable by accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.contract.api import (
    ANNOTATION_REVISION,
    COLLISION_IF_NO_CONTROLLER,
    COLLISION_NONE,
    COLLISION_PREVENT,
    GROUP,
    KIND,
)
from common.contract.objects import GVK, Obj

CREATE = "Create"
OWNED = "Owned"          # controlled by this COS: apply when a declared field differs, else idle
ADOPT = "Adopt"
PROGRESSED = "Progressed"
COLLISION = "Collision"


@dataclass(frozen=True)
class Decision:
    action: str
    # for a collision, why (the human-readable tail of the per-object report)
    detail: str = ""


def controller_ref(obj: Obj) -> Mapping[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def is_cos_ref(ref: Mapping[str, Any], name: str, uid: str) -> bool:
    """Whether an ownerReference points at the COS ``name``/``uid`` (group, kind, name and uid)."""
    return (GVK.parse(str(ref.get("apiVersion") or ""), "").group == GROUP and ref.get("kind") == KIND
            and ref.get("name") == name and ref.get("uid") == uid)


def revision_of(obj: Obj) -> int | None:
    """The object's revision annotation (``None`` when absent; unparsable counts as 0)."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_REVISION)
    if value is None:
        return None
    try:
        return int(str(value))
    except ValueError:
        return 0


def effective_protection(spec: Obj, phase: Obj, entry: Obj) -> str:
    """Object > phase > spec."""
    return str(entry.get("collisionProtection") or phase.get("collisionProtection")
               or spec.get("collisionProtection") or COLLISION_PREVENT)


def _describe(ref: Mapping[str, Any]) -> str:
    return f"{ref.get('kind')}.{ref.get('apiVersion')} {ref.get('name')} (uid {ref.get('uid')})"


def decide(live: Obj | None, *, cos_name: str, cos_uid: str, revision: int,
           siblings: Mapping[str, str], protection: str) -> Decision:
    """The action for one object. ``siblings`` maps sibling COS uid -> name (Active, not deleting, same owner)."""
    if live is None:
        return Decision(CREATE)
    ctrl = controller_ref(live)
    if ctrl is not None:
        if is_cos_ref(ctrl, cos_name, cos_uid):
            return Decision(OWNED)
        uid = str(ctrl.get("uid") or "")
        if uid in siblings and is_cos_ref(ctrl, siblings[uid], uid):
            actual = revision_of(live) or 0
            if actual < revision:
                return Decision(ADOPT)
            if actual > revision:
                return Decision(PROGRESSED)
            return Decision(COLLISION, f"controlled by {_describe(ctrl)}, which has the same revision {actual}")
        if protection == COLLISION_NONE:
            return Decision(ADOPT)
        return Decision(COLLISION, f"controlled by {_describe(ctrl)}")
    annotated = revision_of(live)
    if annotated is not None:
        return Decision(COLLISION, f'not controlled by anyone, but has revision annotation "{annotated}" '
                                   f"(orphaned by garbage collection)")
    if protection in (COLLISION_IF_NO_CONTROLLER, COLLISION_NONE):
        return Decision(ADOPT)
    return Decision(COLLISION, "exists without a controller")


def describe_object(obj: Obj) -> str:
    """``<Kind>.<group/version> <ns>/<name>``, as OLM v1 names objects in conditions (core group/version is
    just the version; a cluster-scoped object keeps the ``/``)."""
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')}.{obj.get('apiVersion')} {meta.get('namespace') or ''}/{meta.get('name')}"


def collision_report(obj: Obj, decision: Decision) -> str:
    return f"Object {describe_object(obj)}: {decision.detail}"


def collision_message(phase_index: int, reports: list[str]) -> str:
    return f"revision object collisions in phase {phase_index}\n" + "\n\n".join(reports)
