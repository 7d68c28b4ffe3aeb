"""What a registry+v1 bundle says it depends on, and whether the cluster has it.

Why: an operator may need APIs another operator serves (an ``EtcdCluster`` kind, a package). OLM v0 installed those
dependencies itself; OLM v1 resolves none and refuses to install a bundle that declares one (its catalog resolver's
``NoDependencyValidation``, which ``publish --catalog`` and ``resolve`` apply too). Without ``--catalog``, ``cosctl``
installs such a bundle, since the admin chose it by path; the dependencies are then the admin's to install first,
and when one is missing the operator fails at run time, far from the cause. So the requirements are read here, as
opm turns them into a catalog's ``olm.gvk.required``, ``olm.package.required`` and ``olm.constraint`` properties:

- the CSV's ``spec.customresourcedefinitions.required`` (a kind, its group the CRD name after the first dot) and
  ``spec.apiservicedefinitions.required``;
- the dependencies file (``metadata/dependencies.yaml``, or whichever file of ``metadata/`` opm finds holding a
  ``dependencies`` list first: ``olm.gvk``, ``olm.package`` with a semver range, ``olm.constraint``);
- those property types in the CSV's ``olm.properties`` annotation (``metadata/properties.yaml`` folded in);

and :func:`unmet` checks each against the cluster: a kind must be served (discovery), a package must have a
Succeeded Active revision whose bundle version is in the range. A constraint (CEL, compound) cannot be judged here.
A kind the bundle's own CRDs serve is no requirement.

Plain functions over :class:`~common.bundle.registryv1.model.RegistryV1` and the
:class:`~common.cluster.interface.Cluster` protocol; reads only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from common.bundle.registryv1 import semver
from common.bundle.registryv1.gotext import printable
from common.bundle.registryv1.model import RegistryV1
from common.cluster.interface import ApiError, Cluster, UnknownKind
from common.contract import api
from common.contract.conditions import succeeded
from common.contract.objects import Obj


@dataclass(frozen=True, slots=True)
class Requirement:
    """One thing a bundle depends on."""

    kind: str            # "gvk" | "package" | "constraint"
    text: str            # in words: "kind EtcdCluster.etcd.database.coreos.com/v1beta2", "package etcd >=0.9.0"
    api_version: str = ""
    gvk_kind: str = ""
    package: str = ""
    version_range: str = ""


def declared(bundle: RegistryV1) -> list[Requirement]:
    """Every requirement ``bundle`` declares, each once, in the order found (values of an unexpected shape are
    skipped: the bundle's author meant nothing that can be checked)."""
    found: list[Requirement] = []
    spec = _mapping(bundle.csv.get("spec"))
    for crd in _items(_mapping(spec.get("customresourcedefinitions")).get("required")):
        name, version, kind = printable(crd.get("name")), printable(crd.get("version")), printable(crd.get("kind"))
        if kind and version and "." in name:
            found.append(_gvk(name.split(".", 1)[1], version, kind))
    for service in _items(_mapping(spec.get("apiservicedefinitions")).get("required")):
        version, kind = printable(service.get("version")), printable(service.get("kind"))
        if kind and version:
            found.append(_gvk(printable(service.get("group")), version, kind))
    for entry in _items(bundle.dependencies):
        found.extend(_requirement(entry.get("type"), entry.get("value"), legacy=True))
    for entry in _annotated_properties(bundle.csv):
        found.extend(_requirement(entry.get("type"), entry.get("value"), legacy=False))
    own = _own_kinds(bundle)   # a CSV that lists its own CRD as required is met by its own install
    unique: dict[str, Requirement] = {}
    for requirement in found:
        if (requirement.api_version, requirement.gvk_kind) not in own:
            unique.setdefault(requirement.text, requirement)
    return list(unique.values())


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _own_kinds(bundle: RegistryV1) -> set[tuple[str, str]]:
    """(apiVersion, kind) of every version the bundle's own CRDs serve (``spec.version`` of an old v1beta1 CRD
    included)."""
    kinds: set[tuple[str, str]] = set()
    for crd in bundle.crds:
        spec = _mapping(crd.get("spec"))
        kind, group = printable(_mapping(spec.get("names")).get("kind")), printable(spec.get("group"))
        versions = [printable(v.get("name")) for v in _items(spec.get("versions")) if v.get("served")]
        versions += [printable(spec.get("version"))] if spec.get("version") else []
        kinds.update((f"{group}/{version}", kind) for version in versions)
    return kinds


def _annotated_properties(csv: Obj) -> list[dict[str, Any]]:
    text = ((csv.get("metadata") or {}).get("annotations") or {}).get("olm.properties")
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    return [p for p in value if isinstance(p, dict)] if isinstance(value, list) else []


def _requirement(kind: Any, value: Any, *, legacy: bool) -> list[Requirement]:
    """A dependencies file entry (``legacy``: ``olm.gvk``, ``olm.package``, which opm turns into the ``.required``
    properties; those it passes through as they are) or a property (``olm.gvk.required``, ``olm.package.required``),
    each ``olm.constraint`` either way; nothing for anything else."""
    if not isinstance(value, dict):
        return []
    if kind == "olm.gvk.required" or (legacy and kind == "olm.gvk"):
        version, gvk_kind = printable(value.get("version")), printable(value.get("kind"))
        return [_gvk(printable(value.get("group")), version, gvk_kind)] if version and gvk_kind else []
    if kind == "olm.package.required" or (legacy and kind == "olm.package"):
        package = printable(value.get("packageName"))
        version_range = printable(value.get("version" if kind == "olm.package" else "versionRange"))
        return [Requirement("package", f"package {package} {version_range}".rstrip(), package=package,
                            version_range=version_range)] if package else []
    if kind == "olm.constraint":
        message = printable(value.get("failureMessage"))
        return [Requirement("constraint", f"a constraint ({message})" if message else "a constraint")]
    return []


def _gvk(group: str, version: str, kind: str) -> Requirement:
    api_version = f"{group}/{version}" if group else version
    return Requirement("gvk", f"kind {kind}{'.' + group if group else ''}/{version}", api_version=api_version,
                       gvk_kind=kind)


def unmet(cluster: Cluster, requirements: Sequence[Requirement]) -> list[str]:
    """Each requirement the cluster does not meet, or cannot be said to, with why (``kind ...: not served by the
    cluster``). Every COS is listed once when a package is required."""
    said: list[str] = []
    revisions: list[Obj] | None = None
    for requirement in requirements:
        if requirement.kind == "gvk":
            try:
                cluster.resource_name(requirement.api_version, requirement.gvk_kind)
            except UnknownKind:
                said.append(f"{requirement.text}: not served by the cluster")
            except ApiError as exc:
                said.append(f"{requirement.text}: cannot be checked ({exc.reason}: {exc.message})")
        elif requirement.kind == "package":
            if revisions is None:
                try:
                    revisions = cluster.list(api.API_VERSION, api.KIND)
                except ApiError as exc:
                    said.append(f"{requirement.text}: cannot be checked ({exc.reason}: {exc.message})")
                    revisions = []
                    continue
            problem = _package_problem(requirement, revisions)
            if problem:
                said.append(f"{requirement.text}: {problem}")
        else:
            said.append(f"{requirement.text}: cannot be checked by cosctl")
    return said


def _package_problem(requirement: Requirement, revisions: Sequence[Obj]) -> str:
    """Why no revision installs the package in the range, or ``""`` when one does."""
    versions = []
    for cos in revisions:
        annotations = (cos.get("metadata") or {}).get("annotations") or {}
        if (annotations.get(api.ANNOTATION_PACKAGE_NAME) == requirement.package
                and (cos.get("spec") or {}).get("lifecycleState") == api.LIFECYCLE_ACTIVE and succeeded(cos)):
            versions.append(str(annotations.get(api.ANNOTATION_BUNDLE_VERSION) or ""))
    if not versions:
        return ("not installed by a revision on this cluster (no Active revision of the package has succeeded; one "
                "installed another way, such as with Helm, is not seen)")
    if not requirement.version_range:
        return ""
    try:
        in_range = semver.parse_range(requirement.version_range)
    except semver.SemverError:
        return f"the range cannot be read; installed: {', '.join(versions)}"
    for text in versions:
        try:
            if in_range(semver.parse_tolerant(text)):   # as the CSV's version was read when it was published
                return ""
        except semver.SemverError:
            continue
    return f"installed versions {', '.join(versions)} are not in the range"
