"""OLM v1's typed round trip: a manifest decoded into Kubernetes' Go types and encoded back, in Python.

Why: OLM v1 never renders the CSV's deployments or the bundle's CRDs as the YAML says. It decodes them into Go
structs (``runtime.DefaultUnstructuredConverter.FromUnstructured`` into ``v1alpha1.ClusterServiceVersion`` and
``apiextensionsv1.CustomResourceDefinition``), works on the structs, and its output is their ``encoding/json``
form. That round trip changes what the cluster receives, and real bundles show it (see
``tests/registryv1/test_render_gotypes.py``):

- fields the Go types do not have are dropped (community bundles carry ``volumes[].secretName``,
  ``livenessProbe.exec.failureThreshold`` and the like, which a strict API server would refuse);
- quantities come out canonical (``2000m`` -> ``"2"``, ``1024Mi`` -> ``1Gi``), int-or-strings keep their kind;
- zero values of fields without ``omitempty`` are printed (``resources: {}``, ``strategy: {}``, a
  ``resourceFieldRef``'s ``divisor: "0"``), ``omitempty`` ones vanish (``readOnly: false``, ``items: []``);
- a v1beta1 CRD loses the fields v1 does not have.

The hash OLM v1 puts in generated RBAC names is also taken over this Go encoding (:mod:`.names`), so field
order and ``omitempty`` must be exact, not just the set of fields.

What this module knows is the JSON shape of those Go types: for each struct, its fields in declaration order,
each with its JSON name, its kind and its ``omitempty`` / ``omitzero`` flags (embedded ``inline`` structs are
flattened into their parent). The struct and field sets are those of Kubernetes 1.36 (k8s.io/api v0.36, the
version OLM v1 builds with) and equal its published OpenAPI definitions field for field; the ``olm.*`` structs
are the parts of operator-framework/api's ``v1alpha1`` the renderer reads. Notation, one struct per entry:

- ``name:type``, then ``?`` when the field is ``omitempty`` and ``!`` when it is ``omitzero``;
- ``*T`` a pointer, ``[]T`` a slice, ``{}T`` a map with string keys, ``pkg.Name`` a struct;
- scalars: ``s`` string, ``b`` bool, ``i32``/``i64`` integers, ``f64`` float, ``bytes`` ([]byte: base64 text),
  ``q`` resource.Quantity, ``ios`` intstr.IntOrString, ``time`` metav1.Time, ``raw`` any JSON (apiextensions
  ``JSON``, ``FieldsV1``);
- apiextensions' three unions: ``schemaOrArray`` (``items``), ``schemaOrBool`` (``additionalProperties``,
  ``additionalItems``), ``schemaOrStrings`` (``dependencies``).

Decoding follows ``FromUnstructured``: a missing key or ``null`` is the zero value, integers narrow to int32 as Go
converts them, an integral float may fill an integer, any other mismatch is an error naming the field. Encoding
follows ``encoding/json``. With ``nulls=False`` (what the renderer emits) a field that would print ``null`` is left
out: the spec allows omitting null-valued keys, and the API server drops them anyway. Raw JSON values (a CRD
schema's ``default``, ``enum``, ``example``) are copied as they are, nulls included.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from common.contract.objects import copy_json
from common.contract.quantity import QuantityError, canonical

_TABLE: Final = """
adm.RuleWithOperations
    operations:[]s? apiGroups:[]s? apiVersions:[]s? resources:[]s? scope:*s?
apiext.CustomResourceColumnDefinition
    name:s type:s format:s? description:s? priority:i32? jsonPath:s
apiext.CustomResourceConversion
    strategy:s webhook:*apiext.WebhookConversion?
apiext.CustomResourceDefinition
    kind:s? apiVersion:s? metadata:meta.ObjectMeta? spec:apiext.CustomResourceDefinitionSpec
    status:apiext.CustomResourceDefinitionStatus?
apiext.CustomResourceDefinitionCondition
    type:s status:s lastTransitionTime:time? reason:s? message:s? observedGeneration:i64?
apiext.CustomResourceDefinitionNames
    plural:s singular:s? shortNames:[]s? kind:s listKind:s? categories:[]s?
apiext.CustomResourceDefinitionSpec
    group:s names:apiext.CustomResourceDefinitionNames scope:s versions:[]apiext.CustomResourceDefinitionVersion
    conversion:*apiext.CustomResourceConversion? preserveUnknownFields:b?
apiext.CustomResourceDefinitionStatus
    conditions:[]apiext.CustomResourceDefinitionCondition acceptedNames:apiext.CustomResourceDefinitionNames
    storedVersions:[]s observedGeneration:i64?
apiext.CustomResourceDefinitionVersion
    name:s served:b storage:b deprecated:b? deprecationWarning:*s? schema:*apiext.CustomResourceValidation?
    subresources:*apiext.CustomResourceSubresources?
    additionalPrinterColumns:[]apiext.CustomResourceColumnDefinition? selectableFields:[]apiext.SelectableField?
apiext.CustomResourceSubresourceScale
    specReplicasPath:s statusReplicasPath:s labelSelectorPath:*s?
apiext.CustomResourceSubresourceStatus
apiext.CustomResourceSubresources
    status:*apiext.CustomResourceSubresourceStatus? scale:*apiext.CustomResourceSubresourceScale?
apiext.CustomResourceValidation
    openAPIV3Schema:*apiext.JSONSchemaProps?
apiext.ExternalDocumentation
    description:s? url:s?
apiext.JSONSchemaProps
    id:s? $schema:s? $ref:*s? description:s? type:s? format:s? title:s? default:*raw? maximum:*f64?
    exclusiveMaximum:b? minimum:*f64? exclusiveMinimum:b? maxLength:*i64? minLength:*i64? pattern:s? maxItems:*i64?
    minItems:*i64? uniqueItems:b? multipleOf:*f64? enum:[]raw? maxProperties:*i64? minProperties:*i64? required:[]s?
    items:*schemaOrArray? allOf:[]apiext.JSONSchemaProps? oneOf:[]apiext.JSONSchemaProps?
    anyOf:[]apiext.JSONSchemaProps? not:*apiext.JSONSchemaProps? properties:{}apiext.JSONSchemaProps?
    additionalProperties:*schemaOrBool? patternProperties:{}apiext.JSONSchemaProps? dependencies:{}schemaOrStrings?
    additionalItems:*schemaOrBool? definitions:{}apiext.JSONSchemaProps? externalDocs:*apiext.ExternalDocumentation?
    example:*raw? nullable:b? x-kubernetes-preserve-unknown-fields:*b? x-kubernetes-embedded-resource:b?
    x-kubernetes-int-or-string:b? x-kubernetes-list-map-keys:[]s? x-kubernetes-list-type:*s?
    x-kubernetes-map-type:*s? x-kubernetes-validations:[]apiext.ValidationRule?
apiext.SelectableField
    jsonPath:s
apiext.ServiceReference
    namespace:s name:s path:*s? port:*i32?
apiext.ValidationRule
    rule:s message:s? messageExpression:s? reason:*s? fieldPath:s? optionalOldSelf:*b?
apiext.WebhookClientConfig
    url:*s? service:*apiext.ServiceReference? caBundle:bytes?
apiext.WebhookConversion
    clientConfig:*apiext.WebhookClientConfig? conversionReviewVersions:[]s
apps.DeploymentSpec
    replicas:*i32? selector:*meta.LabelSelector template:core.PodTemplateSpec strategy:apps.DeploymentStrategy?
    minReadySeconds:i32? revisionHistoryLimit:*i32? paused:b? progressDeadlineSeconds:*i32?
apps.DeploymentStrategy
    type:s? rollingUpdate:*apps.RollingUpdateDeployment?
apps.RollingUpdateDeployment
    maxUnavailable:*ios? maxSurge:*ios?
core.AWSElasticBlockStoreVolumeSource
    volumeID:s fsType:s? partition:i32? readOnly:b?
core.Affinity
    nodeAffinity:*core.NodeAffinity? podAffinity:*core.PodAffinity? podAntiAffinity:*core.PodAntiAffinity?
core.AppArmorProfile
    type:s localhostProfile:*s?
core.AzureDiskVolumeSource
    diskName:s diskURI:s cachingMode:*s? fsType:*s? readOnly:*b? kind:*s?
core.AzureFileVolumeSource
    secretName:s shareName:s readOnly:b?
core.CSIVolumeSource
    driver:s readOnly:*b? fsType:*s? volumeAttributes:{}s? nodePublishSecretRef:*core.LocalObjectReference?
core.Capabilities
    add:[]s? drop:[]s?
core.CephFSVolumeSource
    monitors:[]s path:s? user:s? secretFile:s? secretRef:*core.LocalObjectReference? readOnly:b?
core.CinderVolumeSource
    volumeID:s fsType:s? readOnly:b? secretRef:*core.LocalObjectReference?
core.ClusterTrustBundleProjection
    name:*s? signerName:*s? labelSelector:*meta.LabelSelector? optional:*b? path:s
core.ConfigMapEnvSource
    name:s? optional:*b?
core.ConfigMapKeySelector
    name:s? key:s optional:*b?
core.ConfigMapProjection
    name:s? items:[]core.KeyToPath? optional:*b?
core.ConfigMapVolumeSource
    name:s? items:[]core.KeyToPath? defaultMode:*i32? optional:*b?
core.Container
    name:s image:s? command:[]s? args:[]s? workingDir:s? ports:[]core.ContainerPort? envFrom:[]core.EnvFromSource?
    env:[]core.EnvVar? resources:core.ResourceRequirements? resizePolicy:[]core.ContainerResizePolicy?
    restartPolicy:*s? restartPolicyRules:[]core.ContainerRestartRule? volumeMounts:[]core.VolumeMount?
    volumeDevices:[]core.VolumeDevice? livenessProbe:*core.Probe? readinessProbe:*core.Probe?
    startupProbe:*core.Probe? lifecycle:*core.Lifecycle? terminationMessagePath:s? terminationMessagePolicy:s?
    imagePullPolicy:s? securityContext:*core.SecurityContext? stdin:b? stdinOnce:b? tty:b?
core.ContainerPort
    name:s? hostPort:i32? containerPort:i32 protocol:s? hostIP:s?
core.ContainerResizePolicy
    resourceName:s restartPolicy:s
core.ContainerRestartRule
    action:s? exitCodes:*core.ContainerRestartRuleOnExitCodes?
core.ContainerRestartRuleOnExitCodes
    operator:s? values:[]i32?
core.DownwardAPIProjection
    items:[]core.DownwardAPIVolumeFile?
core.DownwardAPIVolumeFile
    path:s fieldRef:*core.ObjectFieldSelector? resourceFieldRef:*core.ResourceFieldSelector? mode:*i32?
core.DownwardAPIVolumeSource
    items:[]core.DownwardAPIVolumeFile? defaultMode:*i32?
core.EmptyDirVolumeSource
    medium:s? sizeLimit:*q?
core.EnvFromSource
    prefix:s? configMapRef:*core.ConfigMapEnvSource? secretRef:*core.SecretEnvSource?
core.EnvVar
    name:s value:s? valueFrom:*core.EnvVarSource?
core.EnvVarSource
    fieldRef:*core.ObjectFieldSelector? resourceFieldRef:*core.ResourceFieldSelector?
    configMapKeyRef:*core.ConfigMapKeySelector? secretKeyRef:*core.SecretKeySelector?
    fileKeyRef:*core.FileKeySelector?
core.EphemeralContainer
    name:s image:s? command:[]s? args:[]s? workingDir:s? ports:[]core.ContainerPort? envFrom:[]core.EnvFromSource?
    env:[]core.EnvVar? resources:core.ResourceRequirements? resizePolicy:[]core.ContainerResizePolicy?
    restartPolicy:*s? restartPolicyRules:[]core.ContainerRestartRule? volumeMounts:[]core.VolumeMount?
    volumeDevices:[]core.VolumeDevice? livenessProbe:*core.Probe? readinessProbe:*core.Probe?
    startupProbe:*core.Probe? lifecycle:*core.Lifecycle? terminationMessagePath:s? terminationMessagePolicy:s?
    imagePullPolicy:s? securityContext:*core.SecurityContext? stdin:b? stdinOnce:b? tty:b? targetContainerName:s?
core.EphemeralVolumeSource
    volumeClaimTemplate:*core.PersistentVolumeClaimTemplate?
core.ExecAction
    command:[]s?
core.FCVolumeSource
    targetWWNs:[]s? lun:*i32? fsType:s? readOnly:b? wwids:[]s?
core.FileKeySelector
    volumeName:s path:s key:s optional:*b?
core.FlexVolumeSource
    driver:s fsType:s? secretRef:*core.LocalObjectReference? readOnly:b? options:{}s?
core.FlockerVolumeSource
    datasetName:s? datasetUUID:s?
core.GCEPersistentDiskVolumeSource
    pdName:s fsType:s? partition:i32? readOnly:b?
core.GRPCAction
    port:i32 service:*s
core.GitRepoVolumeSource
    repository:s revision:s? directory:s?
core.GlusterfsVolumeSource
    endpoints:s path:s readOnly:b?
core.HTTPGetAction
    path:s? port:ios host:s? scheme:s? httpHeaders:[]core.HTTPHeader?
core.HTTPHeader
    name:s value:s
core.HostAlias
    ip:s hostnames:[]s?
core.HostPathVolumeSource
    path:s type:*s?
core.ISCSIVolumeSource
    targetPortal:s iqn:s lun:i32 iscsiInterface:s? fsType:s? readOnly:b? portals:[]s? chapAuthDiscovery:b?
    chapAuthSession:b? secretRef:*core.LocalObjectReference? initiatorName:*s?
core.ImageVolumeSource
    reference:s? pullPolicy:s?
core.KeyToPath
    key:s path:s mode:*i32?
core.Lifecycle
    postStart:*core.LifecycleHandler? preStop:*core.LifecycleHandler? stopSignal:*s?
core.LifecycleHandler
    exec:*core.ExecAction? httpGet:*core.HTTPGetAction? tcpSocket:*core.TCPSocketAction? sleep:*core.SleepAction?
core.LocalObjectReference
    name:s?
core.NFSVolumeSource
    server:s path:s readOnly:b?
core.NodeAffinity
    requiredDuringSchedulingIgnoredDuringExecution:*core.NodeSelector?
    preferredDuringSchedulingIgnoredDuringExecution:[]core.PreferredSchedulingTerm?
core.NodeSelector
    nodeSelectorTerms:[]core.NodeSelectorTerm
core.NodeSelectorRequirement
    key:s operator:s values:[]s?
core.NodeSelectorTerm
    matchExpressions:[]core.NodeSelectorRequirement? matchFields:[]core.NodeSelectorRequirement?
core.ObjectFieldSelector
    apiVersion:s? fieldPath:s
core.PersistentVolumeClaimSpec
    accessModes:[]s? selector:*meta.LabelSelector? resources:core.VolumeResourceRequirements? volumeName:s?
    storageClassName:*s? volumeMode:*s? dataSource:*core.TypedLocalObjectReference?
    dataSourceRef:*core.TypedObjectReference? volumeAttributesClassName:*s?
core.PersistentVolumeClaimTemplate
    metadata:meta.ObjectMeta? spec:core.PersistentVolumeClaimSpec
core.PersistentVolumeClaimVolumeSource
    claimName:s readOnly:b?
core.PhotonPersistentDiskVolumeSource
    pdID:s fsType:s?
core.PodAffinity
    requiredDuringSchedulingIgnoredDuringExecution:[]core.PodAffinityTerm?
    preferredDuringSchedulingIgnoredDuringExecution:[]core.WeightedPodAffinityTerm?
core.PodAffinityTerm
    labelSelector:*meta.LabelSelector? namespaces:[]s? topologyKey:s namespaceSelector:*meta.LabelSelector?
    matchLabelKeys:[]s? mismatchLabelKeys:[]s?
core.PodAntiAffinity
    requiredDuringSchedulingIgnoredDuringExecution:[]core.PodAffinityTerm?
    preferredDuringSchedulingIgnoredDuringExecution:[]core.WeightedPodAffinityTerm?
core.PodCertificateProjection
    signerName:s? keyType:s? maxExpirationSeconds:*i32? credentialBundlePath:s? keyPath:s? certificateChainPath:s?
    userAnnotations:{}s?
core.PodDNSConfig
    nameservers:[]s? searches:[]s? options:[]core.PodDNSConfigOption?
core.PodDNSConfigOption
    name:s? value:*s?
core.PodOS
    name:s
core.PodReadinessGate
    conditionType:s
core.PodResourceClaim
    name:s resourceClaimName:*s? resourceClaimTemplateName:*s?
core.PodSchedulingGate
    name:s
core.PodSchedulingGroup
    podGroupName:*s?
core.PodSecurityContext
    seLinuxOptions:*core.SELinuxOptions? windowsOptions:*core.WindowsSecurityContextOptions? runAsUser:*i64?
    runAsGroup:*i64? runAsNonRoot:*b? supplementalGroups:[]i64? supplementalGroupsPolicy:*s? fsGroup:*i64?
    sysctls:[]core.Sysctl? fsGroupChangePolicy:*s? seccompProfile:*core.SeccompProfile?
    appArmorProfile:*core.AppArmorProfile? seLinuxChangePolicy:*s?
core.PodSpec
    volumes:[]core.Volume? initContainers:[]core.Container? containers:[]core.Container
    ephemeralContainers:[]core.EphemeralContainer? restartPolicy:s? terminationGracePeriodSeconds:*i64?
    activeDeadlineSeconds:*i64? dnsPolicy:s? nodeSelector:{}s? serviceAccountName:s? serviceAccount:s?
    automountServiceAccountToken:*b? nodeName:s? hostNetwork:b? hostPID:b? hostIPC:b? shareProcessNamespace:*b?
    securityContext:*core.PodSecurityContext? imagePullSecrets:[]core.LocalObjectReference? hostname:s? subdomain:s?
    affinity:*core.Affinity? schedulerName:s? tolerations:[]core.Toleration? hostAliases:[]core.HostAlias?
    priorityClassName:s? priority:*i32? dnsConfig:*core.PodDNSConfig? readinessGates:[]core.PodReadinessGate?
    runtimeClassName:*s? enableServiceLinks:*b? preemptionPolicy:*s? overhead:{}q?
    topologySpreadConstraints:[]core.TopologySpreadConstraint? setHostnameAsFQDN:*b? os:*core.PodOS? hostUsers:*b?
    schedulingGates:[]core.PodSchedulingGate? resourceClaims:[]core.PodResourceClaim?
    resources:*core.ResourceRequirements? hostnameOverride:*s? schedulingGroup:*core.PodSchedulingGroup?
core.PodTemplateSpec
    metadata:meta.ObjectMeta? spec:core.PodSpec?
core.PortworxVolumeSource
    volumeID:s fsType:s? readOnly:b?
core.PreferredSchedulingTerm
    weight:i32 preference:core.NodeSelectorTerm
core.Probe
    exec:*core.ExecAction? httpGet:*core.HTTPGetAction? tcpSocket:*core.TCPSocketAction? grpc:*core.GRPCAction?
    initialDelaySeconds:i32? timeoutSeconds:i32? periodSeconds:i32? successThreshold:i32? failureThreshold:i32?
    terminationGracePeriodSeconds:*i64?
core.ProjectedVolumeSource
    sources:[]core.VolumeProjection defaultMode:*i32?
core.QuobyteVolumeSource
    registry:s volume:s readOnly:b? user:s? group:s? tenant:s?
core.RBDVolumeSource
    monitors:[]s image:s fsType:s? pool:s? user:s? keyring:s? secretRef:*core.LocalObjectReference? readOnly:b?
core.ResourceClaim
    name:s request:s?
core.ResourceFieldSelector
    containerName:s? resource:s divisor:q?
core.ResourceRequirements
    limits:{}q? requests:{}q? claims:[]core.ResourceClaim?
core.SELinuxOptions
    user:s? role:s? type:s? level:s?
core.ScaleIOVolumeSource
    gateway:s system:s secretRef:*core.LocalObjectReference sslEnabled:b? protectionDomain:s? storagePool:s?
    storageMode:s? volumeName:s? fsType:s? readOnly:b?
core.SeccompProfile
    type:s localhostProfile:*s?
core.SecretEnvSource
    name:s? optional:*b?
core.SecretKeySelector
    name:s? key:s optional:*b?
core.SecretProjection
    name:s? items:[]core.KeyToPath? optional:*b?
core.SecretVolumeSource
    secretName:s? items:[]core.KeyToPath? defaultMode:*i32? optional:*b?
core.SecurityContext
    capabilities:*core.Capabilities? privileged:*b? seLinuxOptions:*core.SELinuxOptions?
    windowsOptions:*core.WindowsSecurityContextOptions? runAsUser:*i64? runAsGroup:*i64? runAsNonRoot:*b?
    readOnlyRootFilesystem:*b? allowPrivilegeEscalation:*b? procMount:*s? seccompProfile:*core.SeccompProfile?
    appArmorProfile:*core.AppArmorProfile?
core.ServiceAccountTokenProjection
    audience:s? expirationSeconds:*i64? path:s
core.SleepAction
    seconds:i64
core.StorageOSVolumeSource
    volumeName:s? volumeNamespace:s? fsType:s? readOnly:b? secretRef:*core.LocalObjectReference?
core.Sysctl
    name:s value:s
core.TCPSocketAction
    port:ios host:s?
core.Toleration
    key:s? operator:s? value:s? effect:s? tolerationSeconds:*i64?
core.TopologySpreadConstraint
    maxSkew:i32 topologyKey:s whenUnsatisfiable:s labelSelector:*meta.LabelSelector? minDomains:*i32?
    nodeAffinityPolicy:*s? nodeTaintsPolicy:*s? matchLabelKeys:[]s?
core.TypedLocalObjectReference
    apiGroup:*s kind:s name:s
core.TypedObjectReference
    apiGroup:*s kind:s name:s namespace:*s?
core.Volume
    name:s hostPath:*core.HostPathVolumeSource? emptyDir:*core.EmptyDirVolumeSource?
    gcePersistentDisk:*core.GCEPersistentDiskVolumeSource?
    awsElasticBlockStore:*core.AWSElasticBlockStoreVolumeSource? gitRepo:*core.GitRepoVolumeSource?
    secret:*core.SecretVolumeSource? nfs:*core.NFSVolumeSource? iscsi:*core.ISCSIVolumeSource?
    glusterfs:*core.GlusterfsVolumeSource? persistentVolumeClaim:*core.PersistentVolumeClaimVolumeSource?
    rbd:*core.RBDVolumeSource? flexVolume:*core.FlexVolumeSource? cinder:*core.CinderVolumeSource?
    cephfs:*core.CephFSVolumeSource? flocker:*core.FlockerVolumeSource? downwardAPI:*core.DownwardAPIVolumeSource?
    fc:*core.FCVolumeSource? azureFile:*core.AzureFileVolumeSource? configMap:*core.ConfigMapVolumeSource?
    vsphereVolume:*core.VsphereVirtualDiskVolumeSource? quobyte:*core.QuobyteVolumeSource?
    azureDisk:*core.AzureDiskVolumeSource? photonPersistentDisk:*core.PhotonPersistentDiskVolumeSource?
    projected:*core.ProjectedVolumeSource? portworxVolume:*core.PortworxVolumeSource?
    scaleIO:*core.ScaleIOVolumeSource? storageos:*core.StorageOSVolumeSource? csi:*core.CSIVolumeSource?
    ephemeral:*core.EphemeralVolumeSource? image:*core.ImageVolumeSource?
core.VolumeDevice
    name:s devicePath:s
core.VolumeMount
    name:s readOnly:b? recursiveReadOnly:*s? mountPath:s subPath:s? mountPropagation:*s? subPathExpr:s?
core.VolumeProjection
    secret:*core.SecretProjection? downwardAPI:*core.DownwardAPIProjection? configMap:*core.ConfigMapProjection?
    serviceAccountToken:*core.ServiceAccountTokenProjection? clusterTrustBundle:*core.ClusterTrustBundleProjection?
    podCertificate:*core.PodCertificateProjection?
core.VolumeResourceRequirements
    limits:{}q? requests:{}q?
core.VsphereVirtualDiskVolumeSource
    volumePath:s fsType:s? storagePolicyName:s? storagePolicyID:s?
core.WeightedPodAffinityTerm
    weight:i32 podAffinityTerm:core.PodAffinityTerm
core.WindowsSecurityContextOptions
    gmsaCredentialSpecName:*s? gmsaCredentialSpec:*s? runAsUserName:*s? hostProcess:*b?
meta.LabelSelector
    matchLabels:{}s? matchExpressions:[]meta.LabelSelectorRequirement?
meta.LabelSelectorRequirement
    key:s operator:s values:[]s?
meta.ManagedFieldsEntry
    manager:s? operation:s? apiVersion:s? time:*time? fieldsType:s? fieldsV1:*raw? subresource:s?
meta.ObjectMeta
    name:s? generateName:s? namespace:s? selfLink:s? uid:s? resourceVersion:s? generation:i64?
    creationTimestamp:time?! deletionTimestamp:*time? deletionGracePeriodSeconds:*i64? labels:{}s? annotations:{}s?
    ownerReferences:[]meta.OwnerReference? finalizers:[]s? managedFields:[]meta.ManagedFieldsEntry?
meta.OwnerReference
    apiVersion:s kind:s name:s uid:s controller:*b? blockOwnerDeletion:*b?
olm.CRDDescription
    name:s
olm.InstallMode
    type:s supported:b
olm.StrategyDeploymentPermissions
    serviceAccountName:s rules:[]rbac.PolicyRule
olm.StrategyDeploymentSpec
    name:s spec:apps.DeploymentSpec label:{}s?
olm.SubscriptionConfig
    selector:*meta.LabelSelector? nodeSelector:{}s? tolerations:[]core.Toleration?
    resources:*core.ResourceRequirements? envFrom:[]core.EnvFromSource? env:[]core.EnvVar? volumes:[]core.Volume?
    volumeMounts:[]core.VolumeMount? affinity:*core.Affinity? annotations:{}s?
olm.WebhookDescription
    generateName:s type:s deploymentName:s? containerPort:i32? targetPort:*ios? rules:[]adm.RuleWithOperations?
    failurePolicy:*s? matchPolicy:*s? objectSelector:*meta.LabelSelector? sideEffects:*s timeoutSeconds:*i32?
    admissionReviewVersions:[]s reinvocationPolicy:*s? webhookPath:*s? conversionCRDs:[]s?
rbac.PolicyRule
    verbs:[]s apiGroups:[]s? resources:[]s? resourceNames:[]s? nonResourceURLs:[]s?
"""


class GoTypeError(ValueError):
    """A value that does not decode into its Go type; ``path`` names the field (``spec.replicas``)."""

    def __init__(self, path: str, problem: str, *, quantity: bool = False) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem
        self.quantity = quantity  # ``problem`` is Go's own quantity parse error, which OLM v1 prints alone


@dataclass(frozen=True, slots=True)
class _Type:
    """One node of a field's type: ``ptr``/``list``/``map`` wrap ``inner``; ``struct`` names one; ``scalar``."""

    kind: str
    name: str = ""
    inner: _Type | None = None


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    type: _Type
    omitempty: bool
    omitzero: bool


def _parse_type(text: str) -> _Type:
    if text.startswith("*"):
        return _Type("ptr", inner=_parse_type(text[1:]))
    if text.startswith("[]"):
        return _Type("list", inner=_parse_type(text[2:]))
    if text.startswith("{}"):
        return _Type("map", inner=_parse_type(text[2:]))
    if "." in text:
        return _Type("struct", name=text)
    return _Type("scalar", name=text)


def _parse_table(table: str) -> dict[str, tuple[_Field, ...]]:
    structs: dict[str, list[_Field]] = {}
    current: list[_Field] = []
    for line in table.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            current = structs.setdefault(line.strip(), [])
            continue
        for token in line.split():
            name, _, spec = token.partition(":")
            flags = ""
            while spec[-1] in "?!":
                flags += spec[-1]
                spec = spec[:-1]
            current.append(_Field(name, _parse_type(spec), "?" in flags, "!" in flags))
    parsed = {name: tuple(fields) for name, fields in structs.items()}
    for name, fields in parsed.items():  # a dangling reference would fail late, on some rare input: fail now
        for f in fields:
            typ: _Type | None = f.type
            while typ is not None and typ.kind != "struct":
                typ = typ.inner
            if typ is not None and typ.name not in parsed:
                raise RuntimeError(f"gotypes: {name}.{f.name} refers to unknown struct {typ.name}")
    return parsed


_STRUCTS: Final = _parse_table(_TABLE)
_SCHEMA: Final = "apiext.JSONSchemaProps"


def struct_types() -> frozenset[str]:
    """The names of the Go structs this module knows (``core.Container``, ``olm.SubscriptionConfig``, ...)."""
    return frozenset(_STRUCTS)


def roundtrip(type_name: str, value: Any, path: str = "", *, nulls: bool = False) -> Any:
    """``value`` decoded into the Go struct ``type_name`` as OLM v1 decodes it, then encoded as Go encodes it.

    Returns a new ``dict`` (the input is not modified) with the struct's fields in Go's order. ``nulls=True``
    keeps the ``null`` of nil fields without ``omitempty`` (byte-exact Go output, what a hash needs).
    Raises :class:`GoTypeError` naming the first field that does not decode, prefixed by ``path``.
    """
    return _struct(type_name, value, path, nulls)


def _jsontype(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _struct(type_name: str, value: Any, path: str, nulls: bool) -> dict[str, Any]:
    if value is None:
        value = {}
    elif not isinstance(value, dict):
        raise GoTypeError(path, f"expected an object, got {_jsontype(value)}")
    out: dict[str, Any] = {}
    for field in _STRUCTS[type_name]:
        encoded = _value(field.type, value.get(field.name), _join(path, field.name), nulls)
        if field.omitzero and encoded is None and field.type.kind == "scalar" and field.type.name == "time":
            continue
        if field.omitempty and _empty(field.type, encoded):
            continue
        if encoded is None and not nulls:
            continue
        out[field.name] = encoded
    return out


def _empty(typ: _Type, encoded: Any) -> bool:
    """Go's ``omitempty`` test on an encoded value: false, 0, "", nil pointer, nil or empty slice/map.

    A struct (and Quantity, IntOrString, Time, which are structs) is never empty; a pointer is empty only when
    nil, even to a zero value.
    """
    if typ.kind == "ptr":
        return encoded is None
    if typ.kind in ("list", "map"):
        return encoded is None or len(encoded) == 0
    if typ.kind == "struct":
        return False
    if typ.name in ("s", "bytes"):
        return not encoded
    if typ.name == "b":
        return encoded is False
    if typ.name in ("i32", "i64", "f64"):
        return bool(encoded == 0)
    return False


def _value(typ: _Type, value: Any, path: str, nulls: bool) -> Any:
    kind = typ.kind
    if kind == "struct":
        return _struct(typ.name, value, path, nulls)
    if kind == "scalar":
        return _scalar(typ.name, value, path, nulls)
    if value is None:
        return None
    assert typ.inner is not None
    if kind == "ptr":
        return _value(typ.inner, value, path, nulls)
    if kind == "list":
        if not isinstance(value, list):
            raise GoTypeError(path, f"expected an array, got {_jsontype(value)}")
        return [_value(typ.inner, item, f"{path}[{i}]", nulls) for i, item in enumerate(value)]
    if not isinstance(value, dict):
        raise GoTypeError(path, f"expected an object, got {_jsontype(value)}")
    # encoding/json writes a map's keys sorted (by bytes; the same order as by code point)
    items = sorted((str(k), v) for k, v in value.items())
    return {k: _value(typ.inner, v, _join(path, k), nulls) for k, v in items}


_INT_BITS: Final = {"i32": 32, "i64": 64}


def _wrap(number: int, bits: int) -> int:
    """Go's integer conversion: the low ``bits`` bits, two's complement (``reflect.Value.Convert``)."""
    number &= (1 << bits) - 1
    return number - (1 << bits) if number >> (bits - 1) else number


def _scalar(code: str, value: Any, path: str, nulls: bool) -> Any:
    if code == "raw":
        return copy_json(value)
    if code == "s":
        if value is None:
            return ""
        if not isinstance(value, str):
            raise GoTypeError(path, f"expected a string, got {_jsontype(value)}")
        return value
    if code == "b":
        if value is None:
            return False
        if not isinstance(value, bool):
            raise GoTypeError(path, f"expected a boolean, got {_jsontype(value)}")
        return value
    if code in _INT_BITS:
        return _integer(value, _INT_BITS[code], path)
    if code == "f64":
        return _float(value, path)
    if code == "q":
        return _quantity(value, path)
    if code == "ios":
        return _int_or_string(value, path)
    if code == "time":
        return _time(value, path)
    if code == "bytes":
        if value is None or isinstance(value, str):
            return value
        raise GoTypeError(path, f"expected a base64 string, got {_jsontype(value)}")
    return _union(code, value, path, nulls)


def _integer(value: Any, bits: int, path: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return _wrap(value, bits)
    if isinstance(value, float) and math.isfinite(value) and value == math.trunc(value):
        return _wrap(int(value), bits)
    raise GoTypeError(path, f"expected an integer, got {_jsontype(value)} {json.dumps(value)}")


def _float(value: Any, path: str) -> int | float:
    """A float64: Go prints an integral one without a fraction, so it stays an ``int`` here when it is one."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GoTypeError(path, f"expected a number, got {_jsontype(value)}")
    number = float(value)
    if number.is_integer() and abs(number) < 1e21:
        return int(number)
    return number


def _quantity(value: Any, path: str) -> str:
    if value is None:
        return "0"  # the zero Quantity prints 0
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise GoTypeError(path, f"expected a quantity, got {_jsontype(value)}")
    try:
        return canonical(value)
    except QuantityError as exc:
        raise GoTypeError(path, str(exc), quantity=True) from None


def _int_or_string(value: Any, path: str) -> int | str:
    """IntOrString: a string stays a string (``"8080"`` too), a number must be an int32."""
    if value is None:
        return 0
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GoTypeError(path, f"expected an integer or a string, got {_jsontype(value)}")
    if isinstance(value, float) and not value.is_integer():
        raise GoTypeError(path, f"expected an integer or a string, got number {json.dumps(value)}")
    number = int(value)
    if not -(2**31) <= number < 2**31:
        raise GoTypeError(path, f"number {number} does not fit an int32")
    return number


def _time(value: Any, path: str) -> str | None:
    """metav1.Time: RFC 3339 in, UTC to the second out; ``null`` is the zero time (printed ``null``)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise GoTypeError(path, f"expected an RFC 3339 time, got {_jsontype(value)}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise GoTypeError(path, f"expected an RFC 3339 time, got {json.dumps(value)}") from None
    if parsed.tzinfo is None:
        raise GoTypeError(path, f"expected an RFC 3339 time, got {json.dumps(value)}")
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _union(code: str, value: Any, path: str, nulls: bool) -> Any:
    """apiextensions' unions, decoded by their ``UnmarshalJSON`` and encoded by their ``MarshalJSON``."""
    if code == "schemaOrBool":
        if isinstance(value, dict):
            return _struct(_SCHEMA, value, path, nulls)
        if isinstance(value, bool):
            return value
        raise GoTypeError(path, "boolean or JSON schema expected")
    if isinstance(value, dict):
        return _struct(_SCHEMA, value, path, nulls)
    if not isinstance(value, list) or not value:
        return None  # neither form: the union stays empty and prints null
    if code == "schemaOrArray":
        return [_struct(_SCHEMA, item, f"{path}[{i}]", nulls) for i, item in enumerate(value)]
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise GoTypeError(f"{path}[{i}]", f"expected a string, got {_jsontype(item)}")
    return list(value)
