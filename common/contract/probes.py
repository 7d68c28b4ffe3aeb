"""Readiness probes: is a live object ready, and if not, why (in words a user can act on).

Shared by the reconciler (which gates phases on them) and `cosctl status` (which shows what holds a
rollout back), so both say the same thing.

Two sources, combined: the built-in probes for well-known kinds (run for every COS, so a producer that forgets
them still gets a safe rollout) and the COS's own ``spec.progressionProbes``. Each probe yields a status
(True / False / Unknown) and messages; combining keeps the worst status (Unknown > False > True) and the
messages of that status, each distinct message once (a built-in probe and a user probe checking the same field
say the same thing). Messages are OLM v1's (``shared/spec/reconciler.md`` section 3); the built-in probes for
DaemonSets, ReplicaSets, Pods, Jobs, APIServices, LoadBalancer Services and PodDisruptionBudgets are ours, in
the same style (the README's readiness-probe table).
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
    """Unknown beats False beats True; the messages of the winning status are kept, in order, each once.

    Duplicates are dropped because the reconciler joins the messages into one condition message, where
    ``... got: "Pending" and value at key ... got: "Pending"`` only repeats itself (issue 9).
    """
    if not results:
        return ProbeResult(TRUE)
    worst = max((r.status for r in results), key=_RANK.__getitem__)
    messages = dict.fromkeys(m for r in results if r.status == worst for m in r.messages)
    return ProbeResult(worst, list(messages))


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


def _condition(obj: Obj, ctype: str) -> Mapping[str, Any] | None:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for cond in conditions if isinstance(conditions, list) else ():
        if isinstance(cond, dict) and cond.get("type") == ctype:
            return cond
    return None


def _explained(message: str, cond: Mapping[str, Any]) -> str:
    """``message (Reason): condition message``: the controller's own words say what to fix."""
    reason, text = cond.get("reason"), cond.get("message")
    if isinstance(reason, str) and reason:
        message += f" ({reason})"
    if isinstance(text, str) and text:
        message += f": {text}"
    return message


def _condition_explained(obj: Obj, ctype: str) -> ProbeResult:
    """ConditionEqual {ctype, True}, with the condition's reason and message added when it is not True."""
    result = condition_equal(obj, ctype, TRUE)
    cond = _condition(obj, ctype)
    if result.status == FALSE and cond is not None:
        return ProbeResult(FALSE, [_explained(result.messages[0], cond)])
    return result


# ---- built-in probes ----------------------------------------------------------------------------------------

def _deployment(obj: Obj) -> ProbeResult:
    current = _status_current(obj)
    if not current.ok:
        return current
    return combine([_replicas_equal(obj, "status.updatedReplicas", "status.replicas"),
                    condition_equal(obj, "Available", TRUE)])


def _statefulset(obj: Obj) -> ProbeResult:
    """The spec's two comparisons of status counts, plus **(ours)** ``status.replicas`` equal to
    ``spec.replicas`` (defaulted to 1 as the API server does): a StatefulSet controller's first status, written
    before any Pod exists, is ``{observedGeneration: 1, replicas: 0, availableReplicas: 0}``, which the status
    counts alone call ready (seen on kube-apiserver 1.36), and the next phase would start too early."""
    current = _status_current(obj)
    if not current.ok:
        return current
    full = _spec_replicas(obj)
    return combine([_replicas_equal(full, "spec.replicas", "status.replicas"),
                    _replicas_equal(obj, "status.updatedReplicas", "status.replicas"),
                    _replicas_equal(obj, "status.availableReplicas", "status.replicas")])


def _daemonset(obj: Obj) -> ProbeResult:
    """Every node that should run a pod runs the current template, and those pods are available.

    The desired count comes first so the message reads ``expected: <desired> got: <actual>``; no eligible node
    (desired 0) is ready.
    """
    current = _status_current(obj)
    if not current.ok:
        return current
    return combine([_replicas_equal(obj, "status.desiredNumberScheduled", "status.updatedNumberScheduled"),
                    _replicas_equal(obj, "status.desiredNumberScheduled", "status.numberAvailable")])


def _spec_replicas(obj: Obj) -> Obj:
    """The object with ``spec.replicas`` filled in as the API server defaults it (1), for the comparisons."""
    spec = obj.get("spec")
    spec = dict(spec) if isinstance(spec, dict) else {}
    spec.setdefault("replicas", 1)
    return {**obj, "spec": spec}


def _replicaset(obj: Obj) -> ProbeResult:
    """As many pods as asked for exist (a scale-down has finished) and are available (a scale-up has)."""
    current = _status_current(obj)
    if not current.ok:
        return current
    full = _spec_replicas(obj)
    return combine([_replicas_equal(full, "spec.replicas", "status.replicas"),
                    _replicas_equal(full, "spec.replicas", "status.availableReplicas")])


def _pod(obj: Obj) -> ProbeResult:
    """Ready, or run to completion (a one-shot pod); a Failed pod says why, in the kubelet's words."""
    phase = _field(obj, "status.phase")
    if phase == "Succeeded":
        return ProbeResult(TRUE, [".status.phase is Succeeded"])
    if phase == "Failed":
        status = obj.get("status") or {}
        return ProbeResult(FALSE, [_explained(".status.phase is Failed", status)])
    return condition_equal(obj, "Ready", TRUE)


def _job(obj: Obj) -> ProbeResult:
    """Complete; a Failed Job is a probe failure with the Job controller's reason and message, so a migration
    Job that failed holds later phases back and says why."""
    failed = _condition(obj, "Failed")
    if failed is not None and failed.get("status") == TRUE:
        return ProbeResult(FALSE, [_explained('.status.condition["Failed"] is True', failed)])
    complete = condition_equal(obj, "Complete", TRUE)
    suspended = _condition(obj, "Suspended")
    if not complete.ok and suspended is not None and suspended.get("status") == TRUE:
        # it will not complete until someone sets spec.suspend to false: say so rather than "missing"
        return ProbeResult(FALSE, [_explained('.status.condition["Suspended"] is True', suspended)])
    return complete


def _load_balancer(obj: Obj) -> ProbeResult:
    """A Service of type LoadBalancer is ready once the load balancer has an address; other Services always."""
    if _field(obj, "spec.type") != "LoadBalancer":
        return ProbeResult(TRUE)
    ingress = _field(obj, "status.loadBalancer.ingress")
    if isinstance(ingress, list):
        for entry in ingress:
            if isinstance(entry, dict) and (entry.get("ip") or entry.get("hostname")):
                address = entry.get("ip") or entry.get("hostname")
                return ProbeResult(TRUE, [f'.status.loadBalancer.ingress has address {_json(address)}'])
    return ProbeResult(FALSE, [".status.loadBalancer.ingress has no address yet"])


BUILTIN: dict[tuple[str, str], Callable[[Obj], ProbeResult]] = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"): lambda o: condition_equal(o, "Established", TRUE),
    ("", "Namespace"): lambda o: field_value(o, "status.phase", "Active"),
    ("", "PersistentVolumeClaim"): lambda o: field_value(o, "status.phase", "Bound"),
    ("", "Pod"): _pod,
    ("", "Service"): _load_balancer,
    ("apps", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("apps", "ReplicaSet"): _replicaset,
    ("batch", "Job"): _job,
    ("apiregistration.k8s.io", "APIService"): lambda o: _condition_explained(o, "Available"),
    ("policy", "PodDisruptionBudget"): _status_current,
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
