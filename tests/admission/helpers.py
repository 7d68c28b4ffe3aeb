"""Builders shared by the admission tests: a valid COS to break one field at a time, and the verdict."""

from __future__ import annotations

import copy
from typing import Any

from common.contract.admission import Decision, Request, review, validate

Obj = dict[str, Any]


def base_cos(**spec: Any) -> Obj:
    obj: Obj = {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterObjectSet",
        "metadata": {"name": "demo"},
        "spec": {
            "revision": 1,
            "lifecycleState": "Active",
            "collisionProtection": "Prevent",
            "phases": [{"name": "deploy", "objects": [
                {"object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", "namespace": "ns"}}},
            ]}],
        },
    }
    obj["spec"].update(spec)
    return obj


def probe(selector: Obj | None = None, assertions: list[Obj] | None = None) -> Obj:
    return {
        "selector": selector or {"type": "GroupKind", "groupKind": {"group": "apps", "kind": "Deployment"}},
        "assertions": assertions if assertions is not None else [
            {"type": "ConditionEqual", "conditionEqual": {"type": "Available", "status": "True"}}],
    }


def check(obj: Obj, old: Obj | None = None) -> Decision:
    op = "UPDATE" if old is not None else "CREATE"
    return validate(Request("ClusterObjectSet", op, obj, old))


def errors_of(obj: Obj, old: Obj | None = None) -> list[str]:
    """Each field error of the denial as the API server prints it (``<path>: <body>``)."""
    d = check(obj, old)
    return [str(e) for e in d.errors]


def update(old: Obj, mutate) -> tuple[Obj, Obj]:
    new = copy.deepcopy(old)
    mutate(new)
    return new, old


def reviewed(obj: Obj, old: Obj | None = None) -> Decision:
    op = "UPDATE" if old is not None else "CREATE"
    return review(Request("ClusterObjectSet", op, obj, old))
