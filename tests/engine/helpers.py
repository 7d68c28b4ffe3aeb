"""Builders for engine tests: COS manifests, object manifests, "the workload controller made it ready"."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from common.contract.api import API_VERSION, KIND, LABEL_OWNER_NAME
from common.contract.objects import Obj
from common.testing.memcluster import MemCluster
from reconciler.engine import Result, reconcile

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def cluster() -> MemCluster:
    return MemCluster(clock=lambda: T0)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def cm(name: str, ns: str = "ns", **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": dict(data) or {"k": "v"}}


def deployment(name: str, ns: str = "ns", replicas: int | None = 1) -> Obj:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}},
                                         "spec": {"containers": [{"name": "c", "image": "img:1"}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": spec}


def phase(name: str, *objs: Obj, **extra: Any) -> Obj:
    entries = [o if ("object" in o or "ref" in o) else {"object": o} for o in objs]
    return {"name": name, "objects": entries, **extra}


def cos(name: str, revision: int, *phases: Obj, owner: str = "ext", protection: str = "Prevent",
        state: str = "Active", **spec: Any) -> Obj:
    meta: dict[str, Any] = {"name": name}
    if owner:
        meta["labels"] = {LABEL_OWNER_NAME: owner}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta,
            "spec": {"revision": revision, "lifecycleState": state, "collisionProtection": protection,
                     "phases": list(phases), **spec}}


def get_cos(mc: MemCluster, name: str) -> Obj:
    obj = mc.peek(API_VERSION, KIND, name)
    assert obj is not None, f"COS {name} is gone"
    return obj


def cond(mc: MemCluster, name: str, ctype: str) -> Obj | None:
    for c in (get_cos(mc, name).get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return c
    return None


def brief(mc: MemCluster, name: str, ctype: str) -> tuple[str, str, str] | None:
    c = cond(mc, name, ctype)
    return None if c is None else (c["status"], c["reason"], c["message"])


def ready_deployment(mc: MemCluster, name: str, ns: str = "ns") -> None:
    d = mc.peek("apps/v1", "Deployment", name, ns)
    assert d is not None
    n = (d.get("spec") or {}).get("replicas", 1)
    mc.set_status("apps/v1", "Deployment", name, ns, {
        "observedGeneration": d["metadata"]["generation"], "replicas": n, "updatedReplicas": n,
        "availableReplicas": n, "conditions": [{"type": "Available", "status": "True"}]})


def secret(name: str, data: dict[str, bytes], ns: str = "olmv1-system", immutable: bool | None = True) -> Obj:
    obj: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
                "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
    if immutable is not None:
        obj["immutable"] = immutable
    return obj


def as_json(obj: Obj) -> bytes:
    return json.dumps(obj).encode()


def as_gzip(obj: Obj) -> bytes:
    return gzip.compress(as_json(obj))


def run(mc: MemCluster, name: str, now: datetime | None = None, **kw: Any) -> Result:
    return reconcile(mc, name, now=now or at(1), **kw)


def writes(mc: MemCluster) -> list[tuple[str, str, str]]:
    """(verb, kind, name) of every write since the last reset."""
    return [(r.verb, r.kind, r.name) for r in mc.write_log()]
