"""Sorting plain manifests into the ordered phases of a ClusterObjectSet.

The phase table is the OLM v1 producer's (``shared/spec/producer.md`` section 1): objects go where the things
they need already exist (namespaces and CRDs before what lives in them, RBAC before workloads, webhooks last so
they cannot block their own backends). Matching is by GroupKind, so a ``Service`` of another API group is not a
core Service. Everything is sorted, so the same manifests always give the same phases byte for byte.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from common.contract.objects import GVK, Obj, copy_json

MAX_PHASES = 20
MAX_OBJECTS_PER_PHASE = 50

# (phase name, GroupKinds) in rollout order. Any GroupKind not listed goes to DEFAULT_PHASE.
PHASE_TABLE: tuple[tuple[str, frozenset[tuple[str, str]]], ...] = (
    ("namespaces", frozenset({("", "Namespace")})),
    ("policies", frozenset({
        ("networking.k8s.io", "NetworkPolicy"),
        ("policy", "PodDisruptionBudget"),
        ("scheduling.k8s.io", "PriorityClass"),
    })),
    ("identity", frozenset({("", "ServiceAccount")})),
    ("configuration", frozenset({("", "Secret"), ("", "ConfigMap")})),
    ("storage", frozenset({
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("storage.k8s.io", "StorageClass"),
    })),
    ("crds", frozenset({("apiextensions.k8s.io", "CustomResourceDefinition")})),
    ("roles", frozenset({
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "Role"),
    })),
    ("bindings", frozenset({
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
    })),
    ("infrastructure", frozenset({("", "Service"), ("cert-manager.io", "Issuer")})),
    ("deploy", frozenset({("cert-manager.io", "Certificate"), ("apps", "Deployment")})),
    ("scaling", frozenset({("autoscaling.k8s.io", "VerticalPodAutoscaler")})),
    ("publish", frozenset({
        ("monitoring.coreos.com", "PrometheusRule"),
        ("monitoring.coreos.com", "ServiceMonitor"),
        ("monitoring.coreos.com", "PodMonitor"),
        ("networking.k8s.io", "Ingress"),
        ("route.openshift.io", "Route"),
        ("console.openshift.io", "ConsoleYAMLSample"),
        ("console.openshift.io", "ConsoleQuickStart"),
        ("console.openshift.io", "ConsoleCLIDownload"),
        ("console.openshift.io", "ConsoleLink"),
        ("console.openshift.io", "ConsolePlugin"),
    })),
    ("admission", frozenset({
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    })),
)
DEFAULT_PHASE = "deploy"
PHASE_ORDER: tuple[str, ...] = tuple(name for name, _ in PHASE_TABLE)
_PHASE_OF: dict[tuple[str, str], str] = {gk: name for name, gks in PHASE_TABLE for gk in gks}

# What cleaning keeps of metadata: everything else is server-assigned or would be refused by admission.
KEPT_METADATA = ("name", "namespace", "labels", "annotations")


class PhasingError(ValueError):
    """The manifests cannot be arranged into a valid ClusterObjectSet."""


@dataclass(slots=True)
class Phase:
    name: str
    objects: list[Obj] = field(default_factory=list)


def phase_of(obj: Obj) -> str:
    """The phase an object belongs to by its GroupKind (unlisted kinds deploy with the workloads)."""
    gvk = GVK.of(obj)
    return _PHASE_OF.get((gvk.group, gvk.kind), DEFAULT_PHASE)


def clean(obj: Obj) -> Obj:
    """A copy fit to embed in a COS: no ``status``, metadata reduced to name, namespace, labels, annotations.

    Server-assigned fields (uid, resourceVersion, managedFields...) in an exported manifest would be refused
    by admission or fight the API server on every apply.
    """
    out = {k: copy_json(v) for k, v in obj.items() if k not in ("status", "metadata")}
    meta = obj.get("metadata") or {}
    out["metadata"] = {k: copy_json(meta[k]) for k in KEPT_METADATA if meta.get(k) is not None}
    return out


def _sort_key(obj: Obj) -> tuple[str, str, str, str, str]:
    gvk = GVK.of(obj)
    meta = obj.get("metadata") or {}
    return gvk.group, gvk.version, gvk.kind, str(meta.get("namespace") or ""), str(meta.get("name") or "")


def sort_into_phases(objects: Iterable[Obj], *, clean_objects: bool = True) -> list[Phase]:
    """Cleaned objects grouped into phases in table order, sorted within each phase, phases over 50 objects
    split into ``<phase>``, ``<phase>-2``, ...; raises :class:`PhasingError` when more than 20 phases result.
    """
    buckets: dict[str, list[Obj]] = {name: [] for name in PHASE_ORDER}
    for obj in objects:
        buckets[phase_of(obj)].append(clean(obj) if clean_objects else obj)
    phases: list[Phase] = []
    for name in PHASE_ORDER:
        members = sorted(buckets[name], key=_sort_key)
        for start in range(0, len(members), MAX_OBJECTS_PER_PHASE):
            part = start // MAX_OBJECTS_PER_PHASE + 1
            phases.append(Phase(name if part == 1 else f"{name}-{part}",
                                members[start:start + MAX_OBJECTS_PER_PHASE]))
    if len(phases) > MAX_PHASES:
        raise PhasingError(_too_many_phases(phases))
    return phases


def _too_many_phases(phases: list[Phase]) -> str:
    overflow = phases[MAX_PHASES:]
    counts = Counter(_kind_label(obj) for phase in overflow for obj in phase.objects)
    total = sum(counts.values())
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    names = ", ".join(p.name for p in overflow)
    return (f"the manifests need {len(phases)} phases but a ClusterObjectSet holds at most {MAX_PHASES} "
            f"(of at most {MAX_OBJECTS_PER_PHASE} objects each): {total} object(s) would not fit "
            f"({kinds}) in phase(s) {names}")


def _kind_label(obj: Obj) -> str:
    gvk = GVK.of(obj)
    return f"{gvk.kind}.{gvk.group}" if gvk.group else gvk.kind
