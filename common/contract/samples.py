"""Realistic ClusterObjectSets for tests, benchmarks and the demo: one place builds the maximal COS."""

from __future__ import annotations

import copy
from typing import Any

from common.contract import api, schema

Obj = dict[str, Any]


def deployment(name: str, namespace: str = "demo", *, image: str = "registry.example.com/app:v1.2.3") -> Obj:
    """A Deployment of about 1 KiB serialized, the size of a typical operator Deployment manifest."""
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "demo"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "serviceAccountName": name,
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "manager",
                        "image": image,
                        "args": ["--leader-elect", "--health-probe-bind-address=:8081"],
                        "ports": [{"containerPort": 8443, "name": "metrics", "protocol": "TCP"}],
                        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"},
                                      "limits": {"cpu": "500m", "memory": "256Mi"}},
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8081},
                                          "initialDelaySeconds": 15, "periodSeconds": 20},
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081},
                                           "initialDelaySeconds": 5, "periodSeconds": 10},
                        "securityContext": {"allowPrivilegeEscalation": False,
                                            "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True},
                    }],
                },
            },
        },
    }


def cos(name: str, phases: list[Obj], *, revision: int = 1, **spec: Any) -> Obj:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": name},
        "spec": {"revision": revision, "lifecycleState": api.LIFECYCLE_ACTIVE,
                 "collisionProtection": api.COLLISION_PREVENT, "phases": phases, **spec},
    }


def maximal_cos(name: str = "maximal") -> Obj:
    """20 phases x 50 inline Deployments (about 1 MiB): the largest COS the limits allow in practice."""
    phases = [
        {"name": f"phase-{p:02d}",
         "objects": [{"object": deployment(f"app-{p:02d}-{o:02d}")} for o in range(schema.MAX_OBJECTS_PER_PHASE)]}
        for p in range(schema.MAX_PHASES)
    ]
    return cos(name, phases, progressDeadlineMinutes=30, progressionProbes=[{
        "selector": {"type": "GroupKind", "groupKind": {"group": "apps", "kind": "Deployment"}},
        "assertions": [{"type": "ConditionEqual", "conditionEqual": {"type": "Available", "status": "True"}}],
    }])


def small_cos(name: str = "small") -> Obj:
    """A typical small COS: a namespace, a config map and a deployment in three phases."""
    return cos(name, [
        {"name": "namespaces", "objects": [{"object": {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": "demo"}}}]},
        {"name": "configuration", "objects": [{"object": {"apiVersion": "v1", "kind": "ConfigMap",
                                                            "metadata": {"name": "settings", "namespace": "demo"},
                                                            "data": {"mode": "production"}}}]},
        {"name": "deploy", "objects": [{"object": deployment("app")}]},
    ])


def archived_update(obj: Obj) -> tuple[Obj, Obj]:
    """(new, old) for the UPDATE that archives ``obj``: the common update of a COS's life."""
    new = copy.deepcopy(obj)
    new["spec"]["lifecycleState"] = api.LIFECYCLE_ARCHIVED
    return new, copy.deepcopy(obj)
