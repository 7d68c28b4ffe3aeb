"""Kubernetes' Go types as OLM v1 compiles them in: the JSON shape of every struct OLM v1's output goes through.

Why: OLM v1 never renders the CSV's deployments, the bundle's CRDs or a ``deploymentConfig`` as the YAML says.
It decodes them into Go structs, works on the structs, and its output is their ``encoding/json`` form. That
changes what the cluster receives (fields the Go types do not have are dropped, quantities come out canonical,
zero values without ``omitempty`` are printed, ``omitempty`` ones vanish), and the hash OLM v1 puts in generated
RBAC names is taken over the same encoding (:mod:`.names`), so field order and ``omitempty`` must be exact, not
just the set of fields.

This module is the one description of those types; the two decoders that read values into them are
:mod:`.gounstructured` (``runtime.DefaultUnstructuredConverter``, how OLM v1 reads the bundle's manifests) and
:mod:`.gounmarshal` (``encoding/json``'s ``Unmarshal``, how it reads a configuration). Both print what they
decoded as ``encoding/json`` does, with the rules here (:meth:`GoField.omitted`, :func:`zero_value`).

What it knows, for each struct: its fields in declaration order, each with its JSON name, its type and its
``omitempty`` / ``omitzero`` flags (embedded ``inline`` structs are flattened into their parent). The struct and
field sets are those of Kubernetes 1.36 (k8s.io/api v0.36, the version OLM v1 builds with) and equal its
published OpenAPI definitions field for field; the ``olm.*`` structs are operator-framework/api's ``v1alpha1``
ClusterServiceVersion, whole (OLM v1 decodes all of it, so a CSV with a malformed ``spec.icon`` or
``spec.version`` is refused, even though nothing renders from them; ``olm.Descriptor`` stands for the three
descriptor structs, whose fields are the same). Notation, one struct per entry:

- ``name:type``, then ``?`` when the field is ``omitempty`` and ``!`` when it is ``omitzero``;
- ``*T`` a pointer, ``[]T`` a slice, ``{}T`` a map with string keys, ``pkg.Name`` a struct;
- scalars: ``s`` string, ``b`` bool, ``i32``/``i64`` integers, ``f64`` float, ``bytes`` ([]byte: base64 text),
  ``q`` resource.Quantity, ``ios`` intstr.IntOrString, ``time`` metav1.Time, ``raw`` any JSON (apiextensions
  ``JSON``, ``FieldsV1``), ``semver`` and ``semverRelease`` (the CSV's ``version`` and ``release``: strings
  blang/semver must accept);
- apiextensions' three unions: ``schemaOrArray`` (``items``), ``schemaOrBool`` (``additionalProperties``,
  ``additionalItems``), ``schemaOrStrings`` (``dependencies``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from common.contract.objects import Obj

from .gotext import go_fold

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
meta.GroupVersionKind
    group:s version:s kind:s
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
olm.APIResourceReference
    name:s kind:s version:s
olm.APIServiceDefinitions
    owned:[]olm.APIServiceDescription? required:[]olm.APIServiceDescription?
olm.APIServiceDescription
    name:s group:s version:s kind:s deploymentName:s? containerPort:i32? displayName:s? description:s?
    resources:[]olm.APIResourceReference? statusDescriptors:[]olm.Descriptor? specDescriptors:[]olm.Descriptor?
    actionDescriptors:[]olm.Descriptor?
olm.AppLink
    name:s? url:s?
olm.CleanupSpec
    enabled:b
olm.CleanupStatus
    pendingDeletion:[]olm.ResourceList?
olm.ClusterServiceVersion
    kind:s? apiVersion:s? metadata:meta.ObjectMeta spec:olm.ClusterServiceVersionSpec
    status:olm.ClusterServiceVersionStatus
olm.ClusterServiceVersionCondition
    phase:s? message:s? reason:s? lastUpdateTime:*time? lastTransitionTime:*time?
olm.ClusterServiceVersionSpec
    install:olm.NamedInstallStrategy version:semver? release:semverRelease? maturity:s?
    customresourcedefinitions:olm.CustomResourceDefinitions? apiservicedefinitions:olm.APIServiceDefinitions?
    webhookdefinitions:[]olm.WebhookDescription? nativeAPIs:[]meta.GroupVersionKind? minKubeVersion:s?
    displayName:s description:s? keywords:[]s? maintainers:[]olm.Maintainer? provider:olm.AppLink?
    links:[]olm.AppLink? icon:[]olm.Icon? installModes:[]olm.InstallMode? replaces:s? labels:{}s?
    annotations:{}s? selector:*meta.LabelSelector? cleanup:olm.CleanupSpec? skips:[]s?
    relatedImages:[]olm.RelatedImage?
olm.ClusterServiceVersionStatus
    phase:s? message:s? reason:s? lastUpdateTime:*time? lastTransitionTime:*time?
    conditions:[]olm.ClusterServiceVersionCondition? requirementStatus:[]olm.RequirementStatus?
    certsLastUpdated:*time? certsRotateAt:*time? cleanup:olm.CleanupStatus?
olm.CRDDescription
    name:s version:s kind:s displayName:s? description:s? resources:[]olm.APIResourceReference?
    statusDescriptors:[]olm.Descriptor? specDescriptors:[]olm.Descriptor? actionDescriptors:[]olm.Descriptor?
olm.CustomResourceDefinitions
    owned:[]olm.CRDDescription? required:[]olm.CRDDescription?
olm.DependentStatus
    group:s version:s kind:s status:s uuid:s? message:s?
olm.Descriptor
    path:s displayName:s? description:s? x-descriptors:[]s? value:raw?
olm.Icon
    base64data:s mediatype:s
olm.InstallMode
    type:s supported:b
olm.Maintainer
    name:s? email:s?
olm.NamedInstallStrategy
    strategy:s spec:olm.StrategyDetailsDeployment?
olm.RelatedImage
    name:s image:s
olm.RequirementStatus
    group:s version:s kind:s name:s status:s message:s uuid:s? dependents:[]olm.DependentStatus?
olm.ResourceInstance
    name:s namespace:s?
olm.ResourceList
    group:s kind:s instances:[]olm.ResourceInstance
olm.StrategyDeploymentPermissions
    serviceAccountName:s rules:[]rbac.PolicyRule
olm.StrategyDeploymentSpec
    name:s spec:apps.DeploymentSpec label:{}s?
olm.StrategyDetailsDeployment
    deployments:[]olm.StrategyDeploymentSpec permissions:[]olm.StrategyDeploymentPermissions?
    clusterPermissions:[]olm.StrategyDeploymentPermissions?
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


# How a field's encoded value is tested by ``omitempty`` (Go's ``isEmptyValue`` on the value it encodes).
EMPTY_NEVER: Final = 0  # structs (Quantity, IntOrString, Time, unions too): never empty
EMPTY_NIL: Final = 1  # pointers: empty only when nil, even when they point to a zero value
EMPTY_FALSY: Final = 2  # slices and maps (nil or no element), strings and []byte ("")
EMPTY_FALSE: Final = 3  # bool
EMPTY_ZERO: Final = 4  # numbers


@dataclass(frozen=True, slots=True)
class GoType:
    """One node of a field's type: ``ptr``/``list``/``map`` wrap ``inner``; ``struct`` names one; ``scalar`` is a
    scalar code of the table (``s``, ``i32``, ``q``, ...). ``go_name`` is the Go name of a named type
    (``v1.TaintEffect``, a string) where :data:`GO_NAMED_TYPES` knows it."""

    kind: str
    name: str = ""
    inner: GoType | None = None
    go_name: str = ""


@dataclass(frozen=True, slots=True)
class GoField:
    """One field of a struct, with what ``encoding/json`` needs to print it."""

    name: str
    type: GoType
    omitempty: bool
    omitzero: bool
    empty: int = EMPTY_NEVER  # how omitempty tests it (EMPTY_*)

    def omitted(self, encoded: Any, nulls: bool) -> bool:
        """Whether ``encoding/json`` leaves this field out when it holds ``encoded`` (with ``nulls=False``, a
        field that would print ``null`` is left out too: the spec allows it, and the API server drops them)."""
        if self.omitzero and encoded is None:  # only metav1.Time has omitzero: its zero prints null
            return True
        if self.omitempty and _is_empty(self.empty, encoded):
            return True
        return encoded is None and not nulls


def _is_empty(rule: int, encoded: Any) -> bool:
    if rule == EMPTY_NIL:
        return encoded is None
    if rule == EMPTY_FALSY:
        return not encoded
    if rule == EMPTY_FALSE:
        return encoded is False
    if rule == EMPTY_ZERO:
        return bool(encoded == 0)
    return False


@dataclass(frozen=True, slots=True)
class GoStruct:
    """A struct: its fields in declaration order and their positions by JSON name."""

    name: str
    fields: tuple[GoField, ...]
    index: dict[str, int] = field(default_factory=dict)

    @property
    def short_name(self) -> str:
        """The struct's own Go name (``Toleration`` for ``core.Toleration``), as Go's errors name it."""
        return self.name.rsplit(".", 1)[-1]


# The Go package a struct's reflect type name starts with (``v1.Toleration``), per table prefix.
_GO_PACKAGES: Final = {"core": "v1", "meta": "v1", "apps": "v1", "rbac": "v1", "adm": "v1", "apiext": "v1",
                       "olm": "v1alpha1"}
_SCALAR_GO_NAMES: Final = {"s": "string", "b": "bool", "i32": "int32", "i64": "int64", "f64": "float64",
                           "bytes": "[]uint8", "q": "resource.Quantity", "ios": "intstr.IntOrString",
                           "time": "v1.Time", "raw": "v1.FieldsV1", "schemaOrArray": "v1.JSONSchemaPropsOrArray",
                           "schemaOrBool": "v1.JSONSchemaPropsOrBool",
                           "schemaOrStrings": "v1.JSONSchemaPropsOrStringArray", "semver": "version.OperatorVersion",
                           "semverRelease": "release.OperatorRelease"}


# Go's named types, where a field's type is one (``Effect TaintEffect``, not ``string``): Go's errors name them.
# Known for the structs ``encoding/json`` decodes here (those of olm.SubscriptionConfig and meta.ObjectMeta, see
# :mod:`.gounmarshal`), as reflect names them in k8s.io/api v0.36; ``[]`` after a field names its elements' type.
GO_NAMED_TYPES: Final = {
    "core.AzureDiskVolumeSource.cachingMode": "v1.AzureDataDiskCachingMode",
    "core.AzureDiskVolumeSource.kind": "v1.AzureDataDiskKind",
    "core.EmptyDirVolumeSource.medium": "v1.StorageMedium",
    "core.HostPathVolumeSource.type": "v1.HostPathType",
    "core.ImageVolumeSource.pullPolicy": "v1.PullPolicy",
    "core.NodeSelectorRequirement.operator": "v1.NodeSelectorOperator",
    "core.PersistentVolumeClaimSpec.accessModes[]": "v1.PersistentVolumeAccessMode",
    "core.PersistentVolumeClaimSpec.volumeMode": "v1.PersistentVolumeMode",
    "core.ResourceRequirements.limits": "v1.ResourceList",
    "core.ResourceRequirements.requests": "v1.ResourceList",
    "core.Toleration.effect": "v1.TaintEffect",
    "core.Toleration.operator": "v1.TolerationOperator",
    "core.VolumeMount.mountPropagation": "v1.MountPropagationMode",
    "core.VolumeMount.recursiveReadOnly": "v1.RecursiveReadOnlyMode",
    "core.VolumeResourceRequirements.limits": "v1.ResourceList",
    "core.VolumeResourceRequirements.requests": "v1.ResourceList",
    "meta.LabelSelectorRequirement.operator": "v1.LabelSelectorOperator",
    "meta.ManagedFieldsEntry.operation": "v1.ManagedFieldsOperationType",
    "meta.ObjectMeta.uid": "types.UID",
    "meta.OwnerReference.uid": "types.UID",
}


def go_type_name(typ: GoType) -> str:
    """The type as Go's ``reflect`` prints it in ``encoding/json``'s errors (``[]v1.Toleration``,
    ``map[string]string``, ``v1.TaintEffect``, ``int64``). A pointer prints as what it points to: Go reports the
    value it could not set. ``raw`` prints as ``v1.FieldsV1``, the one raw type ``encoding/json`` decodes here."""
    if typ.go_name:
        return typ.go_name
    if typ.kind == "ptr" and typ.inner is not None:
        return go_type_name(typ.inner)
    if typ.kind == "list" and typ.inner is not None:
        return "[]" + go_type_name(typ.inner)
    if typ.kind == "map" and typ.inner is not None:
        return "map[string]" + go_type_name(typ.inner)
    if typ.kind == "struct":
        package, _, name = typ.name.partition(".")
        return f"{_GO_PACKAGES[package]}.{name}"
    return _SCALAR_GO_NAMES[typ.name]


def _empty_rule(typ: GoType) -> int:
    if typ.kind == "ptr":
        return EMPTY_NIL
    if typ.kind in ("list", "map"):
        return EMPTY_FALSY
    if typ.kind == "struct":
        return EMPTY_NEVER
    if typ.name in ("s", "bytes"):
        return EMPTY_FALSY
    if typ.name == "b":
        return EMPTY_FALSE
    if typ.name in ("i32", "i64", "f64"):
        return EMPTY_ZERO
    return EMPTY_NEVER


def _parse_type(text: str, where: str) -> GoType:
    """The type written ``text`` of the field ``where`` (``core.Toleration.effect``), its named types attached."""
    if text.startswith("*"):
        return GoType("ptr", inner=_parse_type(text[1:], where))
    go_name = GO_NAMED_TYPES.get(where, "")
    if text.startswith("[]"):
        return GoType("list", inner=_parse_type(text[2:], where + "[]"), go_name=go_name)
    if text.startswith("{}"):
        return GoType("map", inner=_parse_type(text[2:], where + "{}"), go_name=go_name)
    if "." in text:
        return GoType("struct", name=text, go_name=go_name)
    return GoType("scalar", name=text, go_name=go_name)


def _parse_table(table: str) -> dict[str, GoStruct]:
    declared: dict[str, list[GoField]] = {}
    current: list[GoField] = []
    struct_name = ""
    for line in table.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            struct_name = line.strip()
            current = declared.setdefault(struct_name, [])
            continue
        for token in line.split():
            name, _, spec = token.partition(":")
            flags = ""
            while spec[-1] in "?!":
                flags += spec[-1]
                spec = spec[:-1]
            typ = _parse_type(spec, f"{struct_name}.{name}")
            current.append(GoField(name, typ, "?" in flags, "!" in flags, _empty_rule(typ)))
    structs = {name: GoStruct(name, tuple(fields), {f.name: i for i, f in enumerate(fields)})
               for name, fields in declared.items()}
    for struct in structs.values():  # a table error would show late, on some rare input: fail now
        folded: set[str] = set()
        for f in struct.fields:
            node: GoType | None = f.type
            while node is not None and node.kind != "struct":
                node = node.inner
            if node is not None and node.name not in structs:
                raise RuntimeError(f"gotypes: {struct.name}.{f.name} refers to unknown struct {node.name}")
            if f.omitzero and (f.type.kind, f.type.name) != ("scalar", "time"):
                raise RuntimeError(f"gotypes: {struct.name}.{f.name}: omitzero is only known for metav1.Time")
            if go_fold(f.name) in folded:  # encoding/json would match a key to the first: keep them apart
                raise RuntimeError(f"gotypes: {struct.name}.{f.name} folds like another field")
            folded.add(go_fold(f.name))
    unknown = [where for where in GO_NAMED_TYPES
               if where.rstrip("[]{}").rpartition(".")[2] not in structs.get(where.rstrip("[]{}").rpartition(".")[0],
                                                                            GoStruct("", ())).index]
    if unknown:
        raise RuntimeError(f"gotypes: GO_NAMED_TYPES names fields the table does not have: {sorted(unknown)}")
    return structs


STRUCTS: Final = _parse_table(_TABLE)


def struct_types() -> frozenset[str]:
    """The names of the Go structs this module knows (``core.Container``, ``olm.SubscriptionConfig``, ...)."""
    return frozenset(STRUCTS)


def element_type(typ: GoType) -> GoType:
    """What a field holds under its pointers, lists and maps: a struct or a scalar."""
    while typ.kind in ("ptr", "list", "map") and typ.inner is not None:
        typ = typ.inner
    return typ


def structs_within(*names: str) -> frozenset[str]:
    """The structs ``names`` and every struct their fields hold, however deep."""
    found: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name not in found:
            found.add(name)
            pending += (held.name for f in STRUCTS[name].fields if (held := element_type(f.type)).kind == "struct")
    return frozenset(found)


_SCALAR_ZEROS: Final[dict[str, Any]] = {"s": "", "b": False, "i32": 0, "i64": 0, "f64": 0, "q": "0", "ios": 0}


def zero_value(typ: GoType, nulls: bool) -> Any:
    """The ``encoding/json`` form of ``typ``'s zero value: ``None`` (``null``) for nil pointers, slices and maps,
    a zero Time, raw JSON and the unions; a struct's non-omitted zero fields; ``""``, ``0``, ``false``, ``"0"``
    (the zero Quantity) for the scalars. A new object each call (callers may change it)."""
    if typ.kind == "struct":
        out: dict[str, Any] = {}
        for f in STRUCTS[typ.name].fields:
            zero = zero_value(f.type, nulls)
            if not f.omitted(zero, nulls):
                out[f.name] = zero
        return out
    if typ.kind == "scalar":
        return _SCALAR_ZEROS.get(typ.name)
    return None


def in_go_order(type_name: str, value: Obj) -> Obj:
    """A typed value's Go encoding with its keys put back in the order ``encoding/json`` writes them: struct
    fields in declaration order, map keys sorted. For a value that is already the encoding of ``type_name``
    (decoded by :mod:`.gounstructured` or :mod:`.gounmarshal`) but was changed as dicts, as OLM v1 changes the
    typed Deployment before it prints it: nothing is decoded again, only the order changes (a key that is no
    field of the struct is left out, as Go has no place for it)."""
    ordered: Obj = _ordered(GoType("struct", type_name), value)
    return ordered


def _ordered(typ: GoType, value: Any) -> Any:
    kind = typ.kind
    if kind == "ptr":
        assert typ.inner is not None
        return _ordered(typ.inner, value)
    if kind == "struct" and isinstance(value, dict):
        return {f.name: _ordered(f.type, value[f.name]) for f in STRUCTS[typ.name].fields if f.name in value}
    if kind == "list" and isinstance(value, list):
        assert typ.inner is not None
        return [_ordered(typ.inner, item) for item in value]
    if kind == "map" and isinstance(value, dict):
        assert typ.inner is not None
        return {key: _ordered(typ.inner, value[key]) for key in sorted(value)}
    if kind == "scalar" and typ.name.startswith("schemaOr"):  # a union holds a schema or a list of them
        schema = GoType("struct", "apiext.JSONSchemaProps")
        if isinstance(value, dict):
            return _ordered(schema, value)
        if typ.name == "schemaOrArray" and isinstance(value, list):
            return [_ordered(schema, item) for item in value]
    return value
