"""Small registry+v1 bundles built in memory for the rendering tests (no test functions here).

Each scenario exercises a group of OLM v1's rendering rules at once. The expected objects asserted in the tests
were checked against OLM v1's own renderer (operator-controller's ``registryv1.Renderer``) run on these same
bundles written out as bundle directories.
"""

from __future__ import annotations

from typing import Any

from common.bundle.registryv1.model import RegistryV1
from common.contract.objects import Obj

ALL, OWN, SINGLE, MULTI = "AllNamespaces", "OwnNamespace", "SingleNamespace", "MultiNamespace"


def install_modes(*supported: str) -> list[Obj]:
    return [{"type": mode, "supported": mode in supported} for mode in (OWN, SINGLE, MULTI, ALL)]


def container(name: str = "manager", **extra: Any) -> Obj:
    return {"name": name, "image": f"example.com/{name}:v1", **extra}


def deployment(name: str, *, label: dict[str, str] | None = None, pod: Obj | None = None,
               template_annotations: dict[str, str] | None = None, match_labels: dict[str, str] | None = None,
               **spec: Any) -> Obj:
    labels = match_labels or {"app": name}
    metadata: Obj = {"labels": dict(labels)}
    if template_annotations is not None:
        metadata["annotations"] = template_annotations
    dep: Obj = {
        "name": name,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": metadata, "spec": pod or {"containers": [container()]}},
            **spec,
        },
    }
    if label is not None:
        dep["label"] = label
    return dep


def csv(name: str, *, modes: list[Obj], deployments: list[Obj], permissions: list[Obj] | None = None,
        cluster_permissions: list[Obj] | None = None, webhooks: list[Obj] | None = None,
        owned: list[str] | None = None, annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    install: Obj = {"deployments": deployments}
    if permissions is not None:
        install["permissions"] = permissions
    if cluster_permissions is not None:
        install["clusterPermissions"] = cluster_permissions
    body: Obj = {
        "displayName": name,
        "version": "1.0.0",
        "installModes": modes,
        "install": {"strategy": "deployment", "spec": install},
        **spec,
    }
    if owned is not None:
        body["customresourcedefinitions"] = {
            "owned": [{"name": crd, "version": "v1", "kind": crd.split(".")[0].title()} for crd in owned]
        }
    if webhooks is not None:
        body["webhookdefinitions"] = webhooks
    metadata: Obj = {"name": name}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "metadata": metadata,
            "spec": body}


def crd(plural: str, group: str = "example.com", *, scope: str = "Namespaced", **spec: Any) -> Obj:
    kind = plural.rstrip("s").title()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": plural.rstrip("s")},
            "scope": scope,
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
            **spec,
        },
    }


def bundle(csv_obj: Obj, *, crds: list[Obj] | None = None, others: list[Obj] | None = None,
           package: str = "example") -> RegistryV1:
    return RegistryV1(package_name=package, csv=csv_obj, crds=crds or [], others=others or [])


def rule(groups: list[str], resources: list[str], verbs: list[str], **extra: Any) -> Obj:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs, **extra}


# --- scenario: RBAC, deployments, pass-through manifests, the typed round trip -------------------------------

def rbac_bundle(*modes: str) -> RegistryV1:
    """Permissions for two service accounts (one unnamed: ``default``), cluster permissions, a deployment with
    Go round-trip artefacts to show (unknown fields, non-canonical quantities), CRDs and other manifests."""
    pod = {
        "serviceAccountName": "ops-operator",
        "initContainers": [container("init", resources={"requests": {"cpu": "0.1"}})],
        "containers": [
            container(
                "manager",
                resources={"limits": {"cpu": "2000m", "memory": "0.5Gi"},
                           "requests": {"cpu": 0.05, "memory": "1024Mi"}},
                env=[{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}],
                ports=[{"containerPort": 8080, "name": "http"}],
                livenessProbe={"httpGet": {"path": "/healthz", "port": "http"},
                               "exec": {"failureThreshold": 3}},  # failureThreshold misplaced: not an ExecAction field
                volumeMounts=[{"name": "scratch", "mountPath": "/scratch", "readOnly": False}],
            ),
        ],
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "0.5Gi"}, "secretName": "misplaced"}],
        "priority": 0,
    }
    return bundle(
        csv(
            "ops.v1.2.3",
            modes=install_modes(*modes),
            annotations={"team": "csv", "capabilities": "Basic Install"},
            deployments=[
                deployment("ops-controller", label={"app.kubernetes.io/name": "ops"}, pod=pod,
                           template_annotations={"team": "template"}),
            ],
            permissions=[
                {"serviceAccountName": "ops-operator",
                 "rules": [rule([""], ["configmaps"], ["get", "list"]),
                           rule(["coordination.k8s.io"], ["leases"], ["*"])]},
                {"rules": [rule([""], ["events"], ["create"])]},
            ],
            cluster_permissions=[
                {"serviceAccountName": "ops-operator",
                 "rules": [rule(["example.com"], ["widgets"], ["get"], resourceNames=["one"]),
                           {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
                {"serviceAccountName": "ops-metrics",
                 "rules": [rule(["authentication.k8s.io"], ["tokenreviews"], ["create"])]},
            ],
            owned=["widgets.example.com"],
        ),
        crds=[
            {**crd("widgets"),
             "status": {"acceptedNames": {"kind": "", "plural": ""}, "conditions": [], "storedVersions": []}},
        ],
        others=[
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ops-config", "namespace": "elsewhere"},
             "data": {"a": "b"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "ops-viewer"},
             "rules": [rule(["example.com"], ["widgets"], ["get"])]},
            {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "metadata": {"name": "ops-vpa"},
             "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ops-controller"}}},
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "ops-high"},
             "value": 1000},
        ],
    )


# --- scenario: webhooks ----------------------------------------------------------------------------------------

def webhook_definition(kind: str, name: str, deployment_name: str = "wh.operator-v1", **extra: Any) -> Obj:
    wh: Obj = {"type": kind, "generateName": name, "deploymentName": deployment_name, "sideEffects": "None",
               "admissionReviewVersions": ["v1"], **extra}
    if kind != "ConversionWebhook":
        wh.setdefault("rules", [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"],
                                 "resources": ["widgets"]}])
    return wh


def webhook_bundle(*modes: str, conversion: bool = True) -> RegistryV1:
    """Validating, mutating (and conversion) webhooks served by a deployment whose name has dots, with a
    volume that collides with the certificate volumes; a second deployment serves nothing."""
    pod = {
        "containers": [
            container(volumeMounts=[
                {"name": "certs", "mountPath": "/tmp/k8s-webhook-server/serving-certs", "readOnly": True},
                {"name": "data", "mountPath": "/data"},
            ]),
            container("sidecar"),
        ],
        "volumes": [
            {"name": "certs", "secret": {"secretName": "old-certs"}},
            {"name": "webhook-cert", "emptyDir": {}},
            {"name": "data", "emptyDir": {}},
        ],
    }
    webhooks = [
        webhook_definition("ValidatingAdmissionWebhook", "vwidgets.example.com", targetPort="https",
                           failurePolicy="Fail", matchPolicy="Equivalent", timeoutSeconds=5,
                           objectSelector={"matchLabels": {"validate": "yes"}}),
        webhook_definition("MutatingAdmissionWebhook", "mwidgets.example.com", containerPort=8443, targetPort=9443,
                           webhookPath="/mutate", reinvocationPolicy="IfNeeded"),
        webhook_definition("ValidatingAdmissionWebhook", "vgadgets.example.com", targetPort="https",
                           webhookPath="/validate-gadgets"),
    ]
    if conversion:
        webhooks.append(webhook_definition("ConversionWebhook", "cwidgets.example.com", containerPort=443,
                                           targetPort=9443, conversionCRDs=["widgets.example.com"]))
    return bundle(
        csv(
            "wh-operator.v1.0.0",
            modes=install_modes(*modes),
            deployments=[deployment("wh.operator-v1", pod=pod), deployment("wh-helper")],
            permissions=[{"serviceAccountName": "wh", "rules": [rule([""], ["configmaps"], ["get"])]}],
            webhooks=webhooks,
            owned=["widgets.example.com"],
        ),
        crds=[{**crd("widgets"), "metadata": {"name": "widgets.example.com",
                                             "annotations": {"cert-manager.io/inject-ca-from": "old/cert"}}}],
    )
