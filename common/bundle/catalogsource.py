"""Which bundle of a package to install from a catalog, as OLM v1 resolves a ClusterExtension, and the record of
where and how it was resolved, so that the next upgrade resolves within the same bounds.

Why: a ClusterExtension names a package, a catalog's channels, a version range and an upgrade constraint policy, and
OLM v1 keeps installing the best bundle they allow. ``cosctl publish --package NAME`` does the same in one step:
resolve (:func:`.registryv1.resolve.resolve`) over the installed bundle, pull the image the catalog names, publish.
The query is recorded on the revision (annotation ``olm.operatorframework.io/bundle-source``); a later ``publish
--package`` takes from it whatever the command line leaves out, as the bundle's options are taken from
``bundle-options``. An admin who installed with ``--version '~1.2'`` is not moved to 2.0 by an upgrade that
forgot to say it again.

Pure functions over plain data (the revisions and the catalog are read by the caller).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from common.contract import api
from common.contract.objects import Obj

from .catalogcheck import InstalledRevision
from .registryv1.catalog import Bundle, Catalog, Package
from .registryv1.model import BundleInputError, RegistryV1
from .registryv1.resolve import (
    POLICY_CATALOG_PROVIDED,
    UPGRADE_CONSTRAINT_POLICIES,
    Installed,
    Query,
    Resolution,
    ResolutionError,
    candidates,
    dependencies,
    dependency_error,
    make_query,
    resolve,
)


class CatalogSourceError(BundleInputError):
    """No catalog to resolve from, or a recorded source cosctl cannot read: nothing to install, said before any
    image is pulled."""


@dataclass(frozen=True, slots=True)
class CatalogSource:
    """Where a package is resolved from and within which bounds: a ClusterExtension's ``spec.source.catalog``,
    with the catalog itself (a path or ``docker://`` index image) in place of its catalog selector."""

    catalog: str
    package: str
    channels: tuple[str, ...] = ()
    version: str = ""
    policy: str = POLICY_CATALOG_PROVIDED

    def query(self) -> Query:
        """The resolution query (:class:`ResolutionError`, in OLM v1's words, for a version range it refuses)."""
        return make_query(self.package, channels=self.channels, version=self.version, policy=self.policy)

    def to_annotation(self) -> str:
        """Compact JSON with sorted keys and OLM v1's field names; what is left at its default is left out."""
        value: dict[str, Any] = {"catalog": self.catalog, "packageName": self.package}
        if self.channels:
            value["channels"] = list(self.channels)
        if self.version:
            value["version"] = self.version
        if self.policy != POLICY_CATALOG_PROVIDED:
            value["upgradeConstraintPolicy"] = self.policy
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_annotation(cls, text: str, *, where: str) -> CatalogSource:
        """The source recorded by :meth:`to_annotation`; ``where`` names the revision in the error."""
        problem = f"{where}: annotation {api.ANNOTATION_BUNDLE_SOURCE} is not what cosctl records"
        try:
            value = json.loads(text)
        except ValueError:
            raise CatalogSourceError(f"{problem} (not JSON)") from None
        if not isinstance(value, dict):
            raise CatalogSourceError(f"{problem} (not an object)")
        catalog, package = value.get("catalog"), value.get("packageName")
        channels = value.get("channels", [])
        version = value.get("version", "")
        policy = value.get("upgradeConstraintPolicy", POLICY_CATALOG_PROVIDED)
        if not (isinstance(catalog, str) and catalog and isinstance(package, str) and package):
            raise CatalogSourceError(f"{problem} (no catalog or packageName)")
        if not (isinstance(channels, list) and all(isinstance(c, str) for c in channels)
                and isinstance(version, str) and policy in UPGRADE_CONSTRAINT_POLICIES):
            raise CatalogSourceError(f"{problem} (channels, version or upgradeConstraintPolicy malformed)")
        return cls(catalog, package, tuple(channels), version, policy)


def recorded_source(cos: Obj) -> CatalogSource | None:
    """The source a revision's bundle was resolved from, or ``None`` when it was published by path."""
    annotations = (cos.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(api.ANNOTATION_BUNDLE_SOURCE)
    if not isinstance(text, str):
        return None
    return CatalogSource.from_annotation(text, where=f"ClusterObjectSet {cos['metadata'].get('name')}")


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """The source to resolve from, and which of its parts came from the owner's latest revision (``kept``, as the
    flags that would have said them) rather than from the command line."""

    source: CatalogSource
    kept: tuple[str, ...] = ()
    kept_from: str | None = None


def choose_source(package: str, *, catalog: str | None, channels: Sequence[str] | None, version: str | None,
                  policy: str | None, latest: Obj | None) -> SourceChoice:
    """The command line's source (``None``: not given), completed from the ``latest`` revision's record when that
    was resolved for the same package. Without a catalog either way, :class:`CatalogSourceError`."""
    recorded = recorded_source(latest) if latest is not None else None
    if recorded is not None and recorded.package != package:
        recorded = None
    if catalog is None and recorded is None:
        raise CatalogSourceError(
            f"--package {package} needs --catalog: the catalog to resolve it from"
            + (f" (ClusterObjectSet {latest['metadata']['name']} records none to keep)" if latest is not None else ""))
    kept: list[str] = []

    def pick(flag: str, given: Any, recorded_value: Any, default: Any) -> Any:
        if given is not None:
            return given
        if recorded is not None:
            if recorded_value != default:
                kept.append(flag)
            return recorded_value
        return default

    source = CatalogSource(
        pick("--catalog", catalog, recorded.catalog if recorded else None, None),
        package,
        tuple(pick("--channel", tuple(channels) if channels else None, recorded.channels if recorded else (), ())),
        pick("--version", version, recorded.version if recorded else "", ""),
        pick("--upgrade-constraint-policy", policy, recorded.policy if recorded else POLICY_CATALOG_PROVIDED,
             POLICY_CATALOG_PROVIDED))
    kept_from = str(latest["metadata"]["name"]) if kept and latest is not None else None
    return SourceChoice(source, tuple(kept), kept_from)


def resolve_source(catalog: Catalog, source: CatalogSource, installed: InstalledRevision | None) -> Resolution:
    """OLM v1's pick for ``source`` over ``installed``; its refusal (:class:`ResolutionError`) carries our hints
    (:func:`resolution_hints`). A bundle the catalog lists with no image is refused: there is nothing to pull."""
    query = source.query()
    package = catalog.package(source.package)
    on = installed.bundle if installed is not None else None
    try:
        resolution = resolve(package, query, on)
    except ResolutionError as exc:
        raise ResolutionError(str(exc), resolution_hints(catalog, package, query, on)) from None
    if not resolution.bundle.image:
        raise ResolutionError(f"bundle {resolution.bundle.name} of catalog {catalog.source} names no image")
    return resolution


def resolution_hints(catalog: Catalog, package: Package, query: Query, installed: Installed | None) -> list[str]:
    """Ours, beside OLM v1's message when nothing qualifies: a package or channel the catalog does not have, or a
    best bundle refused for declaring dependencies."""
    return _why_none(catalog, package, query.channels) + _why_dependency(package, query, installed)


def _why_none(catalog: Catalog, package: Package, channels: tuple[str, ...]) -> list[str]:
    if not package.found:
        close = difflib.get_close_matches(package.name, catalog.package_names(), n=3)
        return [f"catalog {catalog.source} has no package {package.name}"
                + (f"; the closest: {', '.join(close)}" if close else "")]
    missing = [c for c in channels if c not in {channel.name for channel in package.channels}]
    if missing:
        return [f"package {package.name} has no channel {', '.join(missing)}; its channels: "
                f"{', '.join(sorted(channel.name for channel in package.channels)) or 'none'}"]
    return []


def _why_dependency(package: Package, query: Query, installed: Installed | None) -> list[str]:
    """When OLM v1 refused the bundle it resolved for declaring dependencies: what it depends on, and the best
    bundle that qualifies and declares none (OLM v1 never picks it by itself: a query that excludes the other does)."""
    chosen = candidates(package, query, installed)
    if not chosen or dependency_error(chosen[0]) is None:
        return []
    hints = [f"{chosen[0].name} depends on {', '.join(dependencies(chosen[0]))}: OLM v1 resolves no dependencies, "
             "and installs no bundle that declares one"]
    free = next((b for b in chosen if dependency_error(b) is None), None)
    if free is not None:
        hints.append(f"the best bundle that qualifies and declares none is {free.name}: a --version range or "
                     "--channel that leaves the others out resolves to it")
    return hints


def image_to_pull(bundle: Bundle) -> str:
    """The catalog's image reference as cosctl pulls it."""
    return bundle.image if bundle.image.startswith("docker://") else f"docker://{bundle.image}"


def check_pulled(pulled: RegistryV1, chosen: Bundle, source: CatalogSource) -> None:
    """The image the catalog names holds the bundle the catalog says it does: the installed bundle is recorded by
    its ClusterServiceVersion's name, and the next upgrade's edges are looked up by that name."""
    if pulled.csv_name != chosen.name or pulled.package_name != source.package:
        raise BundleInputError(
            f"image {chosen.image}: holds bundle {pulled.csv_name} of package {pulled.package_name}, but catalog "
            f"{source.catalog} lists it as bundle {chosen.name} of package {source.package}: the catalog and the "
            "image disagree; nothing was done")
