"""Readiness probes: is a live object ready, and if not, why (in words a user can act on).

Shared by the reconciler (which gates phases on them) and `cosctl status` (which shows what holds a
rollout back), so both say the same thing.

Two sources, combined: the built-in probes for well-known kinds (run for every COS, so a producer that forgets
them still gets a safe rollout) and the COS's own ``spec.progressionProbes``. Each probe yields a status
(True / False / Unknown) and messages; combining keeps the worst status (Unknown > False > True) and the
messages of that status. Messages are OLM v1's (``shared/spec/reconciler.md`` section 3).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from common.contract import labels as labelsel
from common.contract.objects import GVK, Obj

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
_RANK = {TRUE: 0, FALSE: 1, UNKNOWN: 2}
_MISSING = object()


@dataclass
class ProbeResult:
    status: str
    messages: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == TRUE


def combine(results: Sequence[ProbeResult]) -> ProbeResult:
    """Unknown beats False beats True; the messages of the winning status are kept, in order."""
    if not results:
        return ProbeResult(TRUE)
    worst = max((r.status for r in results), key=_RANK.__getitem__)
    return ProbeResult(worst, [m for r in results if r.status == worst for m in r.messages])


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _field(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _generation(obj: Obj) -> Any:
    return (obj.get("metadata") or {}).get("generation")


# ---- assertions -------------------------------------------------------------------------------------------

def condition_equal(obj: Obj, ctype: str, status: str) -> ProbeResult:
    conditions = (obj.get("status") or {}).get("conditions") if isinstance(obj.get("status"), dict) else None
    if conditions is None:
        return ProbeResult(UNKNOWN, ["missing .status.conditions"])
    if not isinstance(conditions, list):
        return ProbeResult(UNKNOWN, ["malformed .status.conditions"])
    for cond in conditions:
        if not isinstance(cond, dict) or cond.get("type") != ctype:
            continue
        if "observedGeneration" in cond and cond["observedGeneration"] != _generation(obj):
            return ProbeResult(UNKNOWN, [f'.status.condition["{ctype}"] outdated'])
        if cond.get("status") == status:
            return ProbeResult(TRUE, [f'.status.condition["{ctype}"] is {status}'])
        return ProbeResult(FALSE, [f'.status.condition["{ctype}"] is {cond.get("status")}'])
    return ProbeResult(UNKNOWN, [f'missing .status.condition["{ctype}"]'])


def fields_equal(obj: Obj, field_a: str, field_b: str) -> ProbeResult:
    a = _field(obj, field_a)
    if a is _MISSING:
        return ProbeResult(FALSE, [f'"{field_a}" missing'])
    b = _field(obj, field_b)
    if b is _MISSING:
        return ProbeResult(FALSE, [f'"{field_b}" missing'])
    if a != b:
        return ProbeResult(FALSE, [f'"{field_a}" != "{field_b}" expected: {_json(a)} got: {_json(b)}'])
    return ProbeResult(TRUE, [f'"{field_a}" == "{field_b}"'])


def _as_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return _json(value)


def field_value(obj: Obj, path: str, value: str) -> ProbeResult:
    actual = _field(obj, path)
    if actual is _MISSING:
        return ProbeResult(FALSE, [f'missing key: "{path}"'])
    if _as_string(actual) != value:
        return ProbeResult(FALSE, [f'value at key "{path}" != "{value}"; expected: "{value}" got: {_json(actual)}'])
    return ProbeResult(TRUE, [f'value at key "{path}" == "{value}"'])


def _replicas_equal(obj: Obj, field_a: str, field_b: str) -> ProbeResult:
    """Like FieldsEqual, but a missing count is 0 (a Deployment scaled to zero has no status counts)."""
    a, b = _field(obj, field_a), _field(obj, field_b)
    a = 0 if a is _MISSING or a is None else a
    b = 0 if b is _MISSING or b is None else b
    if a != b:
        return ProbeResult(FALSE, [f'"{field_a}" != "{field_b}" expected: {_json(a)} got: {_json(b)}'])
    return ProbeResult(TRUE, [f'"{field_a}" == "{field_b}"'])


def _status_current(obj: Obj) -> ProbeResult:
    """Workload controllers report ``observedGeneration``; a missing one means nothing was observed yet."""
    observed = _field(obj, "status.observedGeneration")
    observed = 0 if observed is _MISSING or not isinstance(observed, int) else observed
    if observed < int(_generation(obj) or 0):
        return ProbeResult(UNKNOWN, [".status outdated"])
    return ProbeResult(TRUE)


# ---- built-in probes ----------------------------------------------------------------------------------------

def _deployment(obj: Obj) -> ProbeResult:
    current = _status_current(obj)
    if not current.ok:
        return current
    return combine([_replicas_equal(obj, "status.updatedReplicas", "status.replicas"),
                    condition_equal(obj, "Available", TRUE)])


def _statefulset(obj: Obj) -> ProbeResult:
    current = _status_current(obj)
    if not current.ok:
        return current
    return combine([_replicas_equal(obj, "status.updatedReplicas", "status.replicas"),
                    _replicas_equal(obj, "status.availableReplicas", "status.replicas")])


BUILTIN: dict[tuple[str, str], Callable[[Obj], ProbeResult]] = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"): lambda o: condition_equal(o, "Established", TRUE),
    ("", "Namespace"): lambda o: field_value(o, "status.phase", "Active"),
    ("", "PersistentVolumeClaim"): lambda o: field_value(o, "status.phase", "Bound"),
    ("apps", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _statefulset,
    ("cert-manager.io", "Certificate"): lambda o: condition_equal(o, "Ready", TRUE),
    ("cert-manager.io", "Issuer"): lambda o: condition_equal(o, "Ready", TRUE),
}


# ---- spec.progressionProbes ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProgressionProbe:
    """One parsed ``spec.progressionProbes`` entry."""

    group_kind: tuple[str, str] | None
    label_selector: labelsel.Selector | None
    assertions: tuple[Mapping[str, Any], ...]

    def selects(self, obj: Obj) -> bool:
        if self.group_kind is not None:
            gvk = GVK.of(obj)
            return (gvk.group, gvk.kind) == self.group_kind
        if self.label_selector is not None:
            return self.label_selector.matches((obj.get("metadata") or {}).get("labels"))
        return False

    def run(self, obj: Obj) -> ProbeResult:
        observed = _field(obj, "status.observedGeneration")
        if observed is not _MISSING and observed != _generation(obj):
            return ProbeResult(UNKNOWN, [".status outdated"])
        return combine([_assert(obj, a) for a in self.assertions])


class ProbeSpecError(ValueError):
    """A ``spec.progressionProbes`` entry the reconciler cannot evaluate (the webhook normally rejects it)."""


def _assert(obj: Obj, assertion: Mapping[str, Any]) -> ProbeResult:
    kind = assertion.get("type")
    if kind == "ConditionEqual":
        body = assertion.get("conditionEqual") or {}
        return condition_equal(obj, str(body.get("type")), str(body.get("status")))
    if kind == "FieldsEqual":
        body = assertion.get("fieldsEqual") or {}
        return fields_equal(obj, str(body.get("fieldA")), str(body.get("fieldB")))
    if kind == "FieldValue":
        body = assertion.get("fieldValue") or {}
        return field_value(obj, str(body.get("fieldPath")), str(body.get("value")))
    raise ProbeSpecError(f"unknown assertion type {kind!r}")


def parse_probes(spec_probes: Sequence[Mapping[str, Any]] | None) -> list[ProgressionProbe]:
    """Parse ``spec.progressionProbes`` once per reconcile; bad entries raise :class:`ProbeSpecError`."""
    out: list[ProgressionProbe] = []
    for i, probe in enumerate(spec_probes or []):
        selector = probe.get("selector") or {}
        stype = selector.get("type")
        gk: tuple[str, str] | None = None
        sel: labelsel.Selector | None = None
        if stype == "GroupKind":
            body = selector.get("groupKind") or {}
            gk = (str(body.get("group") or ""), str(body.get("kind") or ""))
        elif stype == "Label":
            try:
                sel = labelsel.from_label_selector(selector.get("label") or {})
            except labelsel.SelectorError as exc:
                raise ProbeSpecError(f"spec.progressionProbes[{i}].selector.label: {exc}") from None
        else:
            raise ProbeSpecError(f"spec.progressionProbes[{i}].selector.type: unsupported value {stype!r}")
        assertions = tuple(probe.get("assertions") or [])
        for j, a in enumerate(assertions):
            if a.get("type") not in ("ConditionEqual", "FieldsEqual", "FieldValue"):
                raise ProbeSpecError(f"spec.progressionProbes[{i}].assertions[{j}].type: "
                                     f"unsupported value {a.get('type')!r}")
        out.append(ProgressionProbe(gk, sel, assertions))
    return out


def probe(obj: Obj, progression: Sequence[ProgressionProbe] = ()) -> ProbeResult:
    """Run the built-in probe for the object's kind and every progression probe that selects it."""
    results: list[ProbeResult] = []
    gvk = GVK.of(obj)
    builtin = BUILTIN.get((gvk.group, gvk.kind))
    if builtin is not None:
        results.append(builtin(obj))
    for p in progression:
        if p.selects(obj):
            results.append(p.run(obj))
    return combine(results)
