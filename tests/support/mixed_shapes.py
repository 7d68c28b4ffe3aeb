"""A COS body of many object shapes a real API server normalizes (for the e2e steady-state test and the
steady-state bench): empty maps and lists, Secret ``stringData``, defaulted fields, int-or-string ports,
non-canonical quantities, declared nulls. Kinds need no kubelet and no controller to settle."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def objects(ns: str, count: int = 210) -> list[Obj]:
    makers = [_cm_empty, _cm_nulls, _secret_string_data, _secret_mixed, _service_account, _service, _deployment,
              _role, _role_binding, _cm_binary]
    return [makers[i % len(makers)](ns, f"shape-{i:03d}") for i in range(count)]


def phases(ns: str, count: int = 210, per_phase: int = 42) -> list[Obj]:
    objs = objects(ns, count)
    return [{"name": f"p{i // per_phase}", "objects": [{"object": o} for o in objs[i:i + per_phase]]}
            for i in range(0, len(objs), per_phase)]


def _meta(ns: str, name: str, **extra: Any) -> Obj:
    return {"name": name, "namespace": ns, **extra}


def _cm_empty(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(ns, name, labels={}, annotations={}),
            "data": {}}


def _cm_nulls(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _meta(ns, name, creationTimestamp=None, annotations=None), "data": {"cpu": "1000m"}}


def _cm_binary(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(ns, name), "binaryData": {"b": "AAE="},
            "data": {"k": "v"}, "immutable": False}


def _secret_string_data(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(ns, name), "stringData": {"password": "pw"},
            "data": {}}


def _secret_mixed(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(ns, name), "type": "Opaque",
            "data": {"a": "YQ=="}, "stringData": {"b": "b"}}


def _service_account(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(ns, name), "secrets": [],
            "imagePullSecrets": []}


def _service(ns: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(ns, name),
            "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": "http"},
                                                          {"name": "x", "port": 81, "targetPort": 8081}]}}


def _deployment(ns: str, name: str) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(ns, name),
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}},
                     "template": {"metadata": {"labels": {"app": name}, "annotations": {}},
                                  "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                                           "env": [], "args": [],
                                                           "resources": {"limits": {"cpu": "1000m",
                                                                                    "memory": "1024Mi"},
                                                                         "requests": {"cpu": "0.1"}},
                                                           "ports": [{"containerPort": 8080}]}],
                                           "volumes": [{"name": "v", "emptyDir": {}}], "nodeSelector": {},
                                           "tolerations": []}}}}


def _role(ns: str, name: str) -> Obj:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(ns, name),
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": []}]}


def _role_binding(ns: str, name: str) -> Obj:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta(ns, name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]}


def apiserver_writes(metrics_text: str, resources: set[str]) -> dict[str, float]:
    """Mutating and dry-run requests per (verb, resource, dry_run) from ``apiserver_request_total`` for the
    given resources (main resource only; status subresource writes are controllers')."""
    out: dict[str, float] = {}
    for line in metrics_text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_part, _, value = line.rpartition(" ")
        fields = dict(kv.split("=", 1) for kv in labels_part[len("apiserver_request_total{"):-1].split(",")
                      if "=" in kv)
        fields = {k: v.strip('"') for k, v in fields.items()}
        if fields.get("resource") not in resources or fields.get("subresource"):
            continue
        if fields.get("verb") in ("GET", "LIST", "WATCH") and not fields.get("dry_run"):
            continue
        key = f'{fields.get("verb")} {fields.get("resource")}{" dry-run" if fields.get("dry_run") else ""}'
        out[key] = out.get(key, 0.0) + float(value)
    return out


RESOURCES = {"configmaps", "secrets", "serviceaccounts", "services", "deployments", "roles", "rolebindings"}
