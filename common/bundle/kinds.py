"""Which resource a kind is, without a cluster: Kubernetes' built-in kinds, the kinds a revision's own
CustomResourceDefinitions serve, and Kubernetes' guess for the rest.

Why: RBAC rules name resources (``deployments``), manifests name kinds (``Deployment``); the permissions a revision
needs (:mod:`.permissions`) are worked out offline by ``cosctl rbac`` as well as against a cluster. The table is
the discovery of a Kubernetes 1.36 API server (``kubectl api-resources``), the kinds that are created as objects,
plus OpenShift's ``SecurityContextConstraints``, whose resource Kubernetes' guess gets wrong. A cluster's own
discovery, where there is one, is preferred (:mod:`.permcheck`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from common.bundle.permissions import ResourceLookup, ResourceType, crd_resources
from common.contract.objects import GVK, Obj

# (group, kind) -> (resource, namespaced)
BUILTIN: Final[dict[tuple[str, str], tuple[str, bool]]] = {
    ("", "ConfigMap"): ("configmaps", True),
    ("", "Endpoints"): ("endpoints", True),
    ("", "Event"): ("events", True),
    ("", "LimitRange"): ("limitranges", True),
    ("", "Namespace"): ("namespaces", False),
    ("", "Node"): ("nodes", False),
    ("", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("", "PersistentVolume"): ("persistentvolumes", False),
    ("", "Pod"): ("pods", True),
    ("", "PodTemplate"): ("podtemplates", True),
    ("", "ReplicationController"): ("replicationcontrollers", True),
    ("", "ResourceQuota"): ("resourcequotas", True),
    ("", "Secret"): ("secrets", True),
    ("", "ServiceAccount"): ("serviceaccounts", True),
    ("", "Service"): ("services", True),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"): ("mutatingadmissionpolicies", False),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"): ("mutatingadmissionpolicybindings", False),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): ("mutatingwebhookconfigurations", False),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): ("validatingadmissionpolicies", False),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): ("validatingadmissionpolicybindings",
                                                                           False),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): ("validatingwebhookconfigurations", False),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("customresourcedefinitions", False),
    ("apiregistration.k8s.io", "APIService"): ("apiservices", False),
    ("apps", "ControllerRevision"): ("controllerrevisions", True),
    ("apps", "DaemonSet"): ("daemonsets", True),
    ("apps", "Deployment"): ("deployments", True),
    ("apps", "ReplicaSet"): ("replicasets", True),
    ("apps", "StatefulSet"): ("statefulsets", True),
    ("autoscaling", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", True),
    ("batch", "CronJob"): ("cronjobs", True),
    ("batch", "Job"): ("jobs", True),
    ("certificates.k8s.io", "CertificateSigningRequest"): ("certificatesigningrequests", False),
    ("coordination.k8s.io", "Lease"): ("leases", True),
    ("discovery.k8s.io", "EndpointSlice"): ("endpointslices", True),
    ("events.k8s.io", "Event"): ("events", True),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): ("flowschemas", False),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): ("prioritylevelconfigurations", False),
    ("networking.k8s.io", "IngressClass"): ("ingressclasses", False),
    ("networking.k8s.io", "Ingress"): ("ingresses", True),
    ("networking.k8s.io", "IPAddress"): ("ipaddresses", False),
    ("networking.k8s.io", "NetworkPolicy"): ("networkpolicies", True),
    ("networking.k8s.io", "ServiceCIDR"): ("servicecidrs", False),
    ("node.k8s.io", "RuntimeClass"): ("runtimeclasses", False),
    ("olm.operatorframework.io", "ClusterObjectSet"): ("clusterobjectsets", False),
    ("policy", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("rolebindings", True),
    ("rbac.authorization.k8s.io", "Role"): ("roles", True),
    ("resource.k8s.io", "DeviceClass"): ("deviceclasses", False),
    ("resource.k8s.io", "ResourceClaim"): ("resourceclaims", True),
    ("resource.k8s.io", "ResourceClaimTemplate"): ("resourceclaimtemplates", True),
    ("resource.k8s.io", "ResourceSlice"): ("resourceslices", False),
    ("scheduling.k8s.io", "PriorityClass"): ("priorityclasses", False),
    ("storage.k8s.io", "CSIDriver"): ("csidrivers", False),
    ("storage.k8s.io", "CSINode"): ("csinodes", False),
    ("storage.k8s.io", "CSIStorageCapacity"): ("csistoragecapacities", True),
    ("storage.k8s.io", "StorageClass"): ("storageclasses", False),
    ("storage.k8s.io", "VolumeAttachment"): ("volumeattachments", False),
    ("storage.k8s.io", "VolumeAttributesClass"): ("volumeattributesclasses", False),
    ("security.openshift.io", "SecurityContextConstraints"): ("securitycontextconstraints", False),
}


def guess_resource(kind: str) -> str:
    """Kubernetes' ``UnsafeGuessKindToResource``: the lower-cased kind, plural by English's simplest rules."""
    low = kind.lower()
    if not low or low.endswith("endpoints"):
        return low
    if low.endswith("s"):
        return low + "es"
    if low.endswith("y"):
        return low[:-1] + "ies"
    return low + "s"


def builtin(api_version: str, kind: str) -> ResourceType | None:
    group = GVK.parse(api_version, kind).group
    known = BUILTIN.get((group, kind))
    return ResourceType(group, *known) if known is not None else None


def offline_lookup(objects: Iterable[Obj], guessed: dict[str, ResourceType]) -> ResourceLookup:
    """The resource of a kind from the revision's CRDs, then the built-in table, then Kubernetes' guess (namespaced
    when the objects of that kind name a namespace); each guess is recorded in ``guessed`` (``Kind.group`` ->
    type) so the caller can say what it assumed."""
    objects = list(objects)
    crds = crd_resources(objects)
    has_namespace = {(str(o.get("apiVersion") or ""), str(o.get("kind") or ""))
                     for o in objects if isinstance(o.get("metadata"), dict) and o["metadata"].get("namespace")}

    def lookup(api_version: str, kind: str) -> ResourceType | None:
        group = GVK.parse(api_version, kind).group
        found = crds.get((group, kind)) or builtin(api_version, kind)
        if found is None and kind:
            found = ResourceType(group, guess_resource(kind), (api_version, kind) in has_namespace)
            guessed[f"{kind}.{group}" if group else kind] = found
        return found

    return lookup
