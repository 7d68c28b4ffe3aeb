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


def _permissions(values: Any, path: str, what: str) -> list[Permission]:
    out = []
    for i, value in enumerate(values or []):
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
    # renders from (spec.icon, spec.keywords, spec.version) still refuses the bundle when Go cannot decode it;
    # the parts the renderer reads are taken from that one decoding.
    typed = _decode("olm.ClusterServiceVersion", csv, "", what)
    metadata, spec = typed["metadata"], typed["spec"]
    install = spec["install"]["spec"]
    # The name hash needs the permissions' exact Go encoding, nulls included: decoded again from the CSV's own
    # (already checked) values.
    raw_install = ((csv.get("spec") or {}).get("install") or {}).get("spec") or {}

    return TypedBundle(
        package_name=bundle.package_name,
        csv_name=metadata.get("name", ""),
        csv_annotations=metadata.get("annotations") or {},
        install_modes=[(mode["type"], mode["supported"]) for mode in spec.get("installModes") or []],
        deployments=[DeploymentSpec(dep["name"], dep["spec"], dep.get("label") or {})
                     for dep in install.get("deployments") or []],
        permissions=_permissions(raw_install.get("permissions"), "spec.install.spec.permissions", what),
        cluster_permissions=_permissions(raw_install.get("clusterPermissions"),
                                         "spec.install.spec.clusterPermissions", what),
        webhooks=spec.get("webhookdefinitions") or [],
        owned_crd_names=[desc["name"] for desc in spec["customresourcedefinitions"].get("owned") or []],
        owned_apiservices=len(spec["apiservicedefinitions"].get("owned") or []),
        crds=[decode_crd(crd, where) for crd in bundle.crds],
        others=[copy_json(obj) for obj in bundle.others],
    )
