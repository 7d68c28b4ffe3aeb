"""A realistic, deterministic operator bundle of 900 manifests (about 3 MiB, 200 CRDs) for producer tests and
``bench/bench_pack.py``.

Shaped like what big operators ship: many CRDs with long OpenAPI schemas, RBAC, config, workloads and custom
resources. Its kinds fill exactly the 20 phases a ClusterObjectSet allows (200 CRDs become ``crds`` ..
``crds-4``), and the inputs carry server-side metadata and ``status`` so cleaning is exercised.
"""

from __future__ import annotations

import hashlib
from typing import Any

Obj = dict[str, Any]

# kind -> how many (sums to 900 and to exactly 20 phases of at most 50)
COUNTS = {
    "Namespace": 5, "ServiceAccount": 45, "ConfigMap": 150, "CustomResourceDefinition": 200,
    "ClusterRole": 50, "RoleBinding": 50, "Service": 50, "Deployment": 100, "Widget": 200,
    "ServiceMonitor": 45, "ValidatingWebhookConfiguration": 5,
}
_WORDS = ("reconcile", "replica", "endpoint", "certificate", "namespace", "selector", "controller", "volume",
          "rollout", "capacity", "tolerance", "affinity", "throughput", "latency", "quorum", "snapshot")


def _text(seed: str, words: int) -> str:
    """Deterministic prose (descriptions are most of a CRD's bytes)."""
    digest = hashlib.sha256(seed.encode()).digest()
    return " ".join(_WORDS[(digest[i % 32] + i) % len(_WORDS)] for i in range(words))


def _server_meta(meta: Obj, i: int) -> Obj:
    """What an exported manifest drags along: cleaning must drop all of it."""
    return {**meta, "uid": f"00000000-0000-0000-0000-{i:012d}", "resourceVersion": str(1000 + i),
            "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [{"manager": "kubectl"}]}


def _crd(i: int) -> Obj:
    group = f"g{i % 7}.example.com"
    plural = f"things{i:03d}"
    props = {f"field{j:02d}": {"type": "string", "description": _text(f"{i}-{j}", 14)} for j in range(52)}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": _server_meta({"name": f"{plural}.{group}", "labels": {"app": "big"}}, i),
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": f"thing{i:03d}", "kind": f"Thing{i:03d}"},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                              "spec": {"type": "object", "properties": props}}}}}],
        },
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


def _deployment(i: int) -> Obj:
    env = [{"name": f"SETTING_{j}", "value": _text(f"env{i}-{j}", 3)} for j in range(25)]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": _server_meta({"name": f"worker-{i:03d}", "namespace": f"big-{i % 5}",
                                  "labels": {"app": f"worker-{i:03d}"},
                                  "annotations": {"big.example.com/tier": str(i % 3)}}, i),
        "spec": {"replicas": 1 + i % 3, "selector": {"matchLabels": {"app": f"worker-{i:03d}"}},
                 "template": {"metadata": {"labels": {"app": f"worker-{i:03d}"}},
                              "spec": {"serviceAccountName": f"sa-{i % 45:02d}",
                                       "containers": [{"name": "main", "image": f"registry.example.com/w:{i}",
                                                       "env": env,
                                                       "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}}]}}},
        "status": {"replicas": 1, "readyReplicas": 1},
    }


def _simple(kind: str, i: int) -> Obj:
    ns = f"big-{i % 5}"
    if kind == "Namespace":
        return {"apiVersion": "v1", "kind": kind, "metadata": {"name": f"big-{i}"}, "status": {"phase": "Active"}}
    if kind == "ServiceAccount":
        return {"apiVersion": "v1", "kind": kind, "metadata": {"name": f"sa-{i:02d}", "namespace": ns}}
    if kind == "ConfigMap":
        return {"apiVersion": "v1", "kind": kind,
                "metadata": _server_meta({"name": f"cfg-{i:03d}", "namespace": ns}, i),
                "data": {f"key{j}": _text(f"cm{i}-{j}", 30) for j in range(11)}}
    if kind == "ClusterRole":
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": f"big-role-{i:02d}"},
                "rules": [{"apiGroups": [f"g{j}.example.com"], "resources": [f"things{j:03d}", f"things{j:03d}/status"],
                           "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}
                          for j in range(i % 7, 200, 10)]}
    if kind == "RoleBinding":
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                "metadata": {"name": f"big-binding-{i:02d}", "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": f"big-role-{i:02d}"},
                "subjects": [{"kind": "ServiceAccount", "name": f"sa-{i % 45:02d}", "namespace": ns}]}
    if kind == "Service":
        return {"apiVersion": "v1", "kind": kind, "metadata": {"name": f"svc-{i:02d}", "namespace": ns},
                "spec": {"selector": {"app": f"worker-{i:03d}"}, "ports": [{"port": 80, "targetPort": 8080}]},
                "status": {"loadBalancer": {}}}
    if kind == "Widget":
        return {"apiVersion": "g0.example.com/v1", "kind": "Widget",
                "metadata": {"name": f"widget-{i:03d}", "namespace": ns},
                "spec": {f"field{j:02d}": _text(f"w{i}-{j}", 4) for j in range(25)}}
    if kind == "ServiceMonitor":
        return {"apiVersion": "monitoring.coreos.com/v1", "kind": kind,
                "metadata": {"name": f"mon-{i:02d}", "namespace": ns},
                "spec": {"selector": {"matchLabels": {"app": f"worker-{i:03d}"}}, "endpoints": [{"port": "metrics"}]}}
    if kind == "ValidatingWebhookConfiguration":
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": f"big-hook-{i}"},
                "webhooks": [{"name": f"v{i}.big.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                              "clientConfig": {"service": {"name": "svc-00", "namespace": "big-0",
                                                           "path": "/validate"}}}]}
    raise ValueError(kind)


def manifests() -> list[Obj]:
    """The 900 manifests, in a shuffled-looking but fixed order (the producer must sort them itself)."""
    out: list[Obj] = []
    for kind, n in COUNTS.items():
        for i in range(n):
            out.append(_crd(i) if kind == "CustomResourceDefinition"
                       else _deployment(i) if kind == "Deployment" else _simple(kind, i))
    out.sort(key=lambda o: hashlib.sha256(repr(sorted(o["metadata"].items())).encode()
                                          + o["kind"].encode()).digest())
    return out
