"""The bundle as OLM v1's Go types see it: the CSV (checked whole, the parts the renderer reads kept) and the
CRDs, decoded.

Why a separate step: OLM v1 decodes the whole CSV into ``v1alpha1.ClusterServiceVersion`` and every CRD into
``apiextensionsv1.CustomResourceDefinition`` before rendering, and every rule downstream (validators,
generators, the RBAC name hash, the ``deploymentConfig`` merge) works on those typed values. Decoding once, here
(and once per install: :func:`.install.render_bundle` hands the result to the refusals and to the renderer),
gives the rest plain dicts already in their Go shape (:mod:`.gounstructured`), and turns a value that Go cannot
decode into a :class:`~.model.BundleInputError` that names the object and the field, as OLM v1 fails loading it.

Other manifests stay as they are: OLM v1 keeps them ``unstructured``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.contract.objects import Obj, copy_json

from .gounstructured import GoTypeError, roundtrip
from .model import BundleInputError, RegistryV1

# install mode types (v1alpha1.InstallModeType)
ALL_NAMESPACES = "AllNamespaces"
OWN_NAMESPACE = "OwnNamespace"
SINGLE_NAMESPACE = "SingleNamespace"
MULTI_NAMESPACE = "MultiNamespace"

# webhook definition types (v1alpha1.WebhookAdmissionType)
VALIDATING_WEBHOOK = "ValidatingAdmissionWebhook"
MUTATING_WEBHOOK = "MutatingAdmissionWebhook"
CONVERSION_WEBHOOK = "ConversionWebhook"


@dataclass(slots=True)
class Permission:
    """One entry of ``permissions``/``clusterPermissions``: ``go`` is the exact Go encoding (for the name hash),
    ``rules`` the PolicyRules as the renderer emits them."""

    service_account_name: str
    rules: list[Obj] | None
    go: Obj


@dataclass(slots=True)
class DeploymentSpec:
    """One install-strategy deployment: ``spec`` is the decoded ``appsv1.DeploymentSpec``."""

    name: str
    spec: Obj
    label: dict[str, str]


@dataclass(slots=True)
class TypedBundle:
    """A registry+v1 bundle after OLM v1's decoding; built by :func:`decode`."""

    package_name: str
    csv_name: str
    csv_annotations: dict[str, str]
    install_modes: list[tuple[str, bool]]
    deployments: list[DeploymentSpec]
    permissions: list[Permission]
    cluster_permissions: list[Permission]
    webhooks: list[Obj]
    owned_crd_names: list[str]
    owned_apiservices: int
    crds: list[Obj] = field(default_factory=list)
    others: list[Obj] = field(default_factory=list)

    def supported_install_modes(self) -> set[str]:
        """The install mode types marked ``supported: true`` (OLM v1's ``supportedBundleInstallModes``)."""
        return {mode for mode, supported in self.install_modes if supported}


def _decode(type_name: str, value: Any, path: str, what: str, nulls: bool = False) -> Any:
    try:
        return roundtrip(type_name, value, path, nulls=nulls)
    except GoTypeError as exc:
        raise BundleInputError(f"{what}: {exc}") from None


def _list(value: Any, path: str, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BundleInputError(f"{what}: {path}: expected an array")
    return value


def _obj(value: Any, path: str, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BundleInputError(f"{what}: {path}: expected an object")
    return value


def _permissions(values: Any, path: str, what: str) -> list[Permission]:
    out = []
    for i, value in enumerate(_list(values, path, what)):
        go = _decode("olm.StrategyDeploymentPermissions", value, f"{path}[{i}]", what, nulls=True)
        rules = None if go["rules"] is None else [_decode("rbac.PolicyRule", rule, "", what) for rule in go["rules"]]
        out.append(Permission(go["serviceAccountName"], rules, go))
    return out


def _blank(value: Any) -> bool:
    """Nothing but empty strings, zeros, ``false``, empty lists and objects made of those."""
    if isinstance(value, dict):
        return all(_blank(v) for v in value.values())
    if isinstance(value, list):
        return not value
    return value in ("", 0, False, None)


def decode_crd(crd: Obj, where: str = "") -> Obj:
    """A CRD after ``FromUnstructured`` into apiextensions/v1 and back: unknown fields (v1beta1's among them)
    dropped. Its ``status`` is left out when blank, as Go prints it for a CRD without one
    (``acceptedNames: {kind: "", plural: ""}``): the spec allows omitting an empty status."""
    name = str((crd.get("metadata") or {}).get("name") or "")
    what = f'{where}CustomResourceDefinition "{name}"'
    out: Obj = _decode("apiext.CustomResourceDefinition", crd, "", what)
    if _blank(out.get("status")):
        out.pop("status", None)
    return out


def decode(bundle: RegistryV1) -> TypedBundle:
    """Decode ``bundle`` as OLM v1 does before rendering; :class:`BundleInputError` names the bundle (its
    ``source``), the object and the field Go refuses (OLM v1 refuses such a bundle when it loads it)."""
    csv = bundle.csv
    where = f"{bundle.source}: " if bundle.source else ""
    what = f'{where}ClusterServiceVersion "{bundle.csv_name}"'
    # OLM v1 decodes the whole CSV (FromUnstructured into v1alpha1.ClusterServiceVersion), so a field nothing
    # renders from (spec.icon, spec.keywords, spec.version) still refuses the bundle when Go cannot decode it.
    _decode("olm.ClusterServiceVersion", csv, "", what)
    metadata = _decode("meta.ObjectMeta", csv.get("metadata"), "metadata", what)
    spec = _obj(csv.get("spec"), "spec", what)
    install = _obj(_obj(spec.get("install"), "spec.install", what).get("spec"), "spec.install.spec", what)

    modes = []
    for i, mode in enumerate(_list(spec.get("installModes"), "spec.installModes", what)):
        decoded = _decode("olm.InstallMode", mode, f"spec.installModes[{i}]", what)
        modes.append((decoded["type"], decoded["supported"]))

    deployments = []
    path = "spec.install.spec.deployments"
    for i, dep in enumerate(_list(install.get("deployments"), path, what)):
        decoded = _decode("olm.StrategyDeploymentSpec", dep, f"{path}[{i}]", what)
        deployments.append(DeploymentSpec(decoded["name"], decoded["spec"], decoded.get("label") or {}))

    webhooks = [
        _decode("olm.WebhookDescription", wh, f"spec.webhookdefinitions[{i}]", what)
        for i, wh in enumerate(_list(spec.get("webhookdefinitions"), "spec.webhookdefinitions", what))
    ]
    crd_defs = _obj(spec.get("customresourcedefinitions"), "spec.customresourcedefinitions", what)
    owned = _list(crd_defs.get("owned"), "spec.customresourcedefinitions.owned", what)
    owned_names = [
        _decode("olm.CRDDescription", desc, f"spec.customresourcedefinitions.owned[{i}]", what)["name"]
        for i, desc in enumerate(owned)
    ]
    api_defs = _obj(spec.get("apiservicedefinitions"), "spec.apiservicedefinitions", what)

    return TypedBundle(
        package_name=bundle.package_name,
        csv_name=metadata.get("name", ""),
        csv_annotations=metadata.get("annotations") or {},
        install_modes=modes,
        deployments=deployments,
        permissions=_permissions(install.get("permissions"), "spec.install.spec.permissions", what),
        cluster_permissions=_permissions(install.get("clusterPermissions"), "spec.install.spec.clusterPermissions",
                                         what),
        webhooks=webhooks,
        owned_crd_names=owned_names,
        owned_apiservices=len(_list(api_defs.get("owned"), "spec.apiservicedefinitions.owned", what)),
        crds=[decode_crd(crd, where) for crd in bundle.crds],
        others=[copy_json(obj) for obj in bundle.others],
    )
