"""OLM v1's registry+v1 resource generators: each turns part of the decoded bundle into objects.

:data:`RESOURCE_GENERATORS` is OLM v1's list, in its order; the renderer concatenates their output, which is
the order ``cosctl render`` prints. Objects are built in their Go encoding (fields OLM sets, nothing else), with
two of the artefacts the spec lets us drop left out: ``null``-valued keys and a Deployment's ``status: {}``. A
Service keeps Go's ``status: {loadBalancer: {}}``, which is not ``{}``. ``metadata.namespace`` is not set on the
cluster-scoped webhook configurations (OLM v1 sets the install namespace there; the API server drops it).

Where OLM v1 iterates a Go set or map (random order), this module uses a stable order instead:

- ServiceAccounts: in the order the CSV first names them (``permissions`` first, then ``clusterPermissions``);
- cert-manager Issuers/Certificates: in the order ``webhookdefinitions`` first names each deployment;
- a webhook Service's ports with the same port and the same numeric target: in ``webhookdefinitions`` order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from common.contract.objects import Obj, copy_json

from .certproviders import CERT_KEY, CERT_VOLUMES, PRIVATE_KEY_KEY, provisioner_for
from .deploymentconfig import DeploymentConfig, apply_deployment_config
from .gotypes import in_go_order
from .model import RenderError
from .names import unique_name
from .typed import CONVERSION_WEBHOOK, MUTATING_WEBHOOK, VALIDATING_WEBHOOK, Permission, TypedBundle
from .validators import SUPPORTED_KINDS

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
# The rule OLM adds when it lifts Roles to ClusterRoles for AllNamespaces (as OLM v0 did): the operator may
# need to discover namespaces once it watches them all.
NAMESPACES_RULE: Final[Obj] = {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]}


@dataclass(frozen=True, slots=True)
class Options:
    """OLM v1's render options, resolved: target namespaces (``[""]`` = all), provider, decoded config."""

    install_namespace: str
    target_namespaces: list[str]
    cert_provider: str | None = None
    deployment_config: DeploymentConfig | None = None

    @property
    def all_namespaces(self) -> bool:
        return self.target_namespaces == [""]


def _meta(name: str, namespace: str = "") -> Obj:
    return {"name": name, "namespace": namespace} if namespace else {"name": name}


def _sa_name(permission: Permission) -> str:
    return permission.service_account_name or "default"


def _subject(sa_name: str, namespace: str) -> Obj:
    return {"kind": "ServiceAccount", "name": sa_name, **({"namespace": namespace} if namespace else {})}


def service_accounts(b: TypedBundle, opts: Options) -> list[Obj]:
    """One ServiceAccount per service account the permissions name, except ``default`` (the namespace's own)."""
    names = dict.fromkeys(_sa_name(p) for p in b.permissions + b.cluster_permissions)
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, opts.install_namespace)}
        for name in names
        if name != "default"
    ]


def _rules(rules: list[Obj] | None) -> Obj:
    """``rules`` as Go prints a Role's: ``[]`` kept, nil (``null``) left out."""
    return {} if rules is None else {"rules": copy_json(rules)}


def permissions(b: TypedBundle, opts: Options) -> list[Obj]:
    """A Role and RoleBinding per permission and target namespace; none in AllNamespaces mode (see below)."""
    if opts.all_namespaces:
        return []
    objs: list[Obj] = []
    for namespace in opts.target_namespaces:
        for permission in b.permissions:
            sa_name = _sa_name(permission)
            name = unique_name(f"{b.csv_name}-{sa_name}", permission.go)
            objs.append({
                "apiVersion": f"{RBAC_GROUP}/v1", "kind": "Role", "metadata": _meta(name, namespace),
                **_rules(permission.rules),
            })
            objs.append({
                "apiVersion": f"{RBAC_GROUP}/v1", "kind": "RoleBinding", "metadata": _meta(name, namespace),
                "subjects": [_subject(sa_name, opts.install_namespace)],
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
            })
    return objs


def cluster_permissions(b: TypedBundle, opts: Options) -> list[Obj]:
    """A ClusterRole and ClusterRoleBinding per cluster permission; in AllNamespaces mode the permissions too,
    each with the namespaces rule added (and hashed with it)."""
    granted = list(b.cluster_permissions)
    if opts.all_namespaces:
        for p in b.permissions:
            go = {**p.go, "rules": [*(p.go["rules"] or []), NAMESPACES_RULE]}
            granted.append(Permission(p.service_account_name, [*(p.rules or []), NAMESPACES_RULE], go))
    objs: list[Obj] = []
    for permission in granted:
        sa_name = _sa_name(permission)
        name = unique_name(f"{b.csv_name}-{sa_name}", permission.go)
        objs.append({
            "apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": _meta(name),
            **_rules(permission.rules),
        })
        objs.append({
            "apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name),
            "subjects": [_subject(sa_name, opts.install_namespace)],
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        })
    return objs


def crds(b: TypedBundle, opts: Options) -> list[Obj]:
    """The bundle's CRDs; those a conversion webhook serves get its conversion config and the provider's CA."""
    conversion: dict[str, Obj] = {}
    for wh in b.webhooks:
        if wh["type"] != CONVERSION_WEBHOOK:
            continue
        for crd_name in wh.get("conversionCRDs", []):
            if crd_name in conversion:
                raise RenderError(
                    f"custom resource definition '{crd_name}' is referenced by multiple conversion webhook definitions"
                )
            conversion[crd_name] = wh
    objs = []
    for crd in b.crds:
        out = copy_json(crd)
        name = crd.get("metadata", {}).get("name", "")
        served_by = conversion.get(name)
        if served_by is not None:
            if crd["spec"].get("preserveUnknownFields"):
                raise RenderError(
                    f"custom resource definition '{name}' must have .spec.preserveUnknownFields set to false to let "
                    "API Server call webhook to do the conversion"
                )
            prov = provisioner_for(served_by.get("deploymentName", ""), opts.install_namespace, opts.cert_provider)
            service = {
                **({"namespace": opts.install_namespace} if opts.install_namespace else {}),
                "name": prov.service_name,
                "path": served_by.get("webhookPath", "/"),
                "port": served_by.get("containerPort", 0),
            }
            webhook: Obj = {"clientConfig": {"service": service}}
            if "admissionReviewVersions" in served_by:
                webhook["conversionReviewVersions"] = copy_json(served_by["admissionReviewVersions"])
            out["spec"]["conversion"] = {"strategy": "Webhook", "webhook": webhook}
            prov.inject_ca_bundle(out)
        objs.append(out)
    return objs


def additional_resources(b: TypedBundle, opts: Options) -> list[Obj]:
    """The bundle's other manifests as they are; namespaced kinds (per operator-registry) get the install
    namespace."""
    objs = []
    for res in b.others:
        kind = res.get("kind")
        if kind not in SUPPORTED_KINDS:
            name = (res.get("metadata") or {}).get("name", "")
            raise RenderError(f"bundle contains unsupported resource: Name: {name}, Kind: {kind or ''}")
        obj = copy_json(res)
        if SUPPORTED_KINDS[kind]:
            metadata = obj.get("metadata")
            if not isinstance(metadata, dict):
                metadata = obj["metadata"] = {}
            if opts.install_namespace:
                metadata["namespace"] = opts.install_namespace
            else:
                metadata.pop("namespace", None)
        objs.append(obj)
    return objs


def deployments(b: TypedBundle, opts: Options) -> list[Obj]:
    """One Deployment per install-strategy deployment (OLM v0's parity rules; see :mod:`.render`)."""
    webhook_deployments = {wh.get("deploymentName", "") for wh in b.webhooks}
    objs = []
    for dep in b.deployments:
        spec = copy_json(dep.spec)
        template = spec["template"]
        template_meta = template.setdefault("metadata", {})
        annotations = {**b.csv_annotations, **(template_meta.get("annotations") or {})}
        annotations["olm.targetNamespaces"] = ",".join(opts.target_namespaces)
        # OLM v0 put both OperatorGroup annotations on the CSV, and operators read them through the downward
        # API; OLM v1 sets this one too since operator-controller v1.11.0 (#2803)
        annotations["olm.operatorNamespace"] = opts.install_namespace
        template_meta["annotations"] = annotations
        spec["revisionHistoryLimit"] = 1
        metadata = _meta(dep.name, opts.install_namespace)
        if dep.label:
            metadata["labels"] = dict(dep.label)
        deployment: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": spec}
        secret = provisioner_for(dep.name, opts.install_namespace, opts.cert_provider).cert_secret_name()
        if dep.name in webhook_deployments and secret is not None:
            _ensure_cert_volumes(template.setdefault("spec", {}), secret)
        apply_deployment_config(deployment, opts.deployment_config)
        objs.append(_ordered_deployment(deployment))
    return objs


def _ordered_deployment(deployment: Obj) -> Obj:
    """The Deployment's spec with its fields back in Go's order (merges appended some at the end); its values
    are typed already (decoded from the CSV, or from the configuration), so nothing is decoded again."""
    deployment["spec"] = in_go_order("apps.DeploymentSpec", deployment["spec"])
    return deployment


def _ensure_cert_volumes(pod: Obj, secret: str) -> None:
    """Mount the provider's Secret where OLM v0 did, replacing any volume with the same names or paths."""
    names = {name for name, *_ in CERT_VOLUMES}
    paths = {path for _, path, *_ in CERT_VOLUMES}
    containers = pod.get("containers") or []
    for container in containers:
        names.update(m.get("name", "") for m in container.get("volumeMounts") or [] if m.get("mountPath") in paths)
    pod["volumes"] = [v for v in pod.get("volumes") or [] if v.get("name", "") not in names] + [
        {"name": name, "secret": {"secretName": secret, "items": [
            {"key": CERT_KEY, "path": cert_file}, {"key": PRIVATE_KEY_KEY, "path": key_file},
        ]}}
        for name, _, cert_file, key_file in CERT_VOLUMES
    ]
    for container in containers:
        container["volumeMounts"] = [
            m for m in container.get("volumeMounts") or [] if m.get("name", "") not in names
        ] + [{"name": name, "mountPath": path} for name, path, *_ in CERT_VOLUMES]


def _namespace_selector(opts: Options) -> Obj | None:
    targets = opts.target_namespaces
    if targets and "" not in targets:
        return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(targets)}]}
    return None


def _webhook_configurations(b: TypedBundle, opts: Options, wh_type: str, kind: str) -> list[Obj]:
    objs = []
    for wh in b.webhooks:
        if wh["type"] != wh_type:
            continue
        prov = provisioner_for(wh.get("deploymentName", ""), opts.install_namespace, opts.cert_provider)
        name = wh["generateName"].removesuffix("-")
        service: Obj = {
            **({"namespace": opts.install_namespace} if opts.install_namespace else {}),
            "name": prov.service_name,
            **({"path": wh["webhookPath"]} if "webhookPath" in wh else {}),
            "port": wh.get("containerPort", 0),
        }
        webhook: Obj = {"name": name, "clientConfig": {"service": service}}
        for key in ("rules", "failurePolicy", "matchPolicy"):
            if key in wh:
                webhook[key] = copy_json(wh[key])
        selector = _namespace_selector(opts)
        if selector is not None:
            webhook["namespaceSelector"] = selector
        for key in ("objectSelector", "sideEffects", "timeoutSeconds", "admissionReviewVersions"):
            if key in wh:
                webhook[key] = copy_json(wh[key])
        if wh_type == MUTATING_WEBHOOK and "reinvocationPolicy" in wh:
            webhook["reinvocationPolicy"] = wh["reinvocationPolicy"]
        obj: Obj = {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [webhook],
        }
        prov.inject_ca_bundle(obj)
        objs.append(obj)
    return objs


def validating_webhooks(b: TypedBundle, opts: Options) -> list[Obj]:
    """A ValidatingWebhookConfiguration per validating webhook definition."""
    return _webhook_configurations(b, opts, VALIDATING_WEBHOOK, "ValidatingWebhookConfiguration")


def mutating_webhooks(b: TypedBundle, opts: Options) -> list[Obj]:
    """A MutatingWebhookConfiguration per mutating webhook definition."""
    return _webhook_configurations(b, opts, MUTATING_WEBHOOK, "MutatingWebhookConfiguration")


def _service_port(wh: Obj) -> Obj:
    port = wh.get("containerPort", 0)
    if port <= 0:
        port = 443
    return {"name": str(port), "port": port, "targetPort": wh.get("targetPort", port)}


_ATOI: Final = re.compile(r"[+-]?[0-9]+")
_INT64: Final = 2**63


def _int_value(target: int | str) -> int:
    """Go's ``IntOrString.IntValue``: a string counts as ``strconv.Atoi`` reads it (0 when it is no number,
    clamped to int64 when it is too large)."""
    if isinstance(target, int):
        return target
    if not _ATOI.fullmatch(target):
        return 0
    return max(-_INT64, min(_INT64 - 1, int(target)))


def webhook_services(b: TypedBundle, opts: Options) -> list[Obj]:
    """A Service per webhook deployment, one port per distinct webhook port, selecting the deployment's pods."""
    ports: dict[str, list[Obj]] = {}
    for wh in b.webhooks:
        listed = ports.setdefault(wh.get("deploymentName", ""), [])
        port = _service_port(wh)
        if port not in listed:
            listed.append(port)
    objs = []
    for dep in b.deployments:
        if dep.name not in ports:
            continue
        sorted_ports = sorted(ports[dep.name], key=lambda p: (p["port"], _int_value(p["targetPort"])))
        prov = provisioner_for(dep.name, opts.install_namespace, opts.cert_provider)
        spec: Obj = {"ports": sorted_ports}
        match_labels = (dep.spec.get("selector") or {}).get("matchLabels")
        if match_labels:
            spec["selector"] = dict(match_labels)
        service: Obj = {
            "apiVersion": "v1", "kind": "Service", "metadata": _meta(prov.service_name, opts.install_namespace),
            "spec": spec,
            "status": {"loadBalancer": {}},  # the zero ServiceStatus, as Go prints it
        }
        prov.inject_ca_bundle(service)
        objs.append(service)
    return objs


def cert_provider_resources(b: TypedBundle, opts: Options) -> list[Obj]:
    """The provider's own objects (cert-manager: an Issuer and a Certificate) per webhook deployment."""
    deployments = dict.fromkeys(wh.get("deploymentName", "") for wh in b.webhooks)
    return [
        obj
        for name in deployments
        for obj in provisioner_for(name, opts.install_namespace, opts.cert_provider).additional_objects()
    ]


# OLM v1's ResourceGenerators, in its order.
RESOURCE_GENERATORS: Final[tuple[Callable[[TypedBundle, Options], list[Obj]], ...]] = (
    service_accounts,
    permissions,
    cluster_permissions,
    crds,
    additional_resources,
    deployments,
    validating_webhooks,
    mutating_webhooks,
    webhook_services,
    cert_provider_resources,
)
