"""Which bundle of a package to install from a catalog, as OLM v1 resolves a ClusterExtension, and the record of
where and how it was resolved, so that the next upgrade resolves within the same bounds.

Why: a ClusterExtension names a package, a catalog's channels, a version range and an upgrade constraint policy, and
OLM v1 keeps installing the best bundle they allow. ``cosctl publish --package NAME`` does the same in one step:
resolve (:func:`.registryv1.resolve.resolve`) over the installed bundle, pull the image the catalog names, publish.
The catalog, channels and range are recorded on the revision (annotation ``olm.operatorframework.io/bundle-source``);
a later ``publish --package`` takes from it whatever the command line leaves out, as the bundle's options are taken
from ``bundle-options``. An admin who installed with ``--version '~1.2'`` is not moved to 2.0 by an upgrade that
forgot to say it again. The policy is not recorded: ``SelfCertified`` stays a one-run override.

Pure functions over plain data (the revisions and the catalog are read by the caller).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from common.contract import api
from common.contract.objects import Obj

from .catalogcheck import InstalledRevision
from .clustercatalogs import WalkedCatalog, unserved_error
from .registryv1.catalog import Bundle, Catalog, Package
from .registryv1.gotext import go_quote
from .registryv1.imageref import DOCKER_TRANSPORT, ImageReferenceError, parse_reference
from .registryv1.model import BundleError, BundleInputError, RegistryV1
from .registryv1.resolve import (
    POLICY_CATALOG_PROVIDED,
    AmbiguousResolution,
    Installed,
    Query,
    RankedPackage,
    Resolution,
    ResolutionError,
    candidates,
    dependencies,
    dependency_error,
    make_query,
    resolve_among,
)


class CatalogSourceError(BundleInputError):
    """No catalog to resolve from, or a recorded source cosctl cannot read: nothing to install, said before any
    image is pulled."""


@dataclass(frozen=True, slots=True)
class CatalogSource:
    """Where a package is resolved from and within which bounds: a ClusterExtension's ``spec.source.catalog``,
    with the catalog itself (a path or ``docker://`` index image) in place of its catalog selector. The upgrade
    constraint policy is not part of it: ``SelfCertified`` is for one run, as everywhere else in cosctl, so that an
    upgrade run later never skips the catalog's edges because an earlier one did."""

    catalog: str
    package: str
    channels: tuple[str, ...] = ()
    version: str = ""

    def query(self, policy: str = POLICY_CATALOG_PROVIDED) -> Query:
        """The resolution query (:class:`ResolutionError`, in OLM v1's words, for a version range it refuses)."""
        return make_query(self.package, channels=self.channels, version=self.version, policy=policy)

    def to_json(self) -> dict[str, Any]:
        """The source as ``-o json`` shows it: every field, defaults included."""
        return {"catalog": self.catalog, "packageName": self.package, "channels": list(self.channels),
                "version": self.version}

    def to_annotation(self) -> str:
        """Compact JSON with sorted keys and OLM v1's field names; what is left at its default is left out."""
        value: dict[str, Any] = {"catalog": self.catalog, "packageName": self.package}
        if self.channels:
            value["channels"] = list(self.channels)
        if self.version:
            value["version"] = self.version
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_annotation(cls, text: str, *, where: str) -> CatalogSource:
        """The source recorded by :meth:`to_annotation`; ``where`` names the revision in the error, which says how
        to go on without it."""
        problem = f"{where}: annotation {api.ANNOTATION_BUNDLE_SOURCE} is not what cosctl records"
        way_out = "give --catalog, --channel and --version, which replace it (--channel '' and --version '' for any)"
        try:
            value = json.loads(text)
        except ValueError:
            raise CatalogSourceError(f"{problem} (not JSON): {way_out}") from None
        if not isinstance(value, dict):
            raise CatalogSourceError(f"{problem} (not an object): {way_out}")
        catalog, package = value.get("catalog"), value.get("packageName")
        channels = value.get("channels", [])
        version = value.get("version", "")
        if not (isinstance(catalog, str) and catalog and isinstance(package, str) and package):
            raise CatalogSourceError(f"{problem} (no catalog or packageName): {way_out}")
        if not (isinstance(channels, list) and all(isinstance(c, str) and c for c in channels)
                and isinstance(version, str)):
            raise CatalogSourceError(f"{problem} (channels or version malformed): {way_out}")
        return cls(catalog, package, tuple(channels), version)


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

    def to_json(self) -> dict[str, Any]:
        """The bounds resolved within, and which were kept from which revision (``-o json`` of diff and resolve)."""
        return {**self.source.to_json(), "kept": list(self.kept), "keptFrom": self.kept_from}


def choose_source(package: str, *, catalog: str | None, channels: Sequence[str] | None, version: str | None,
                  latest: Obj | None) -> SourceChoice:
    """The command line's source (``None``: not given; ``channels`` of ``""`` only: any channel), completed from
    the ``latest`` revision's record when that was resolved for the same package. The record is read only when
    something is missing, so a damaged one can be replaced by giving everything. Without a catalog either way,
    :class:`CatalogSourceError`."""
    given_channels = None if channels is None else tuple(c for c in channels if c)
    recorded = None
    if latest is not None and None in (catalog, given_channels, version):
        recorded = recorded_source(latest)
    if recorded is not None and recorded.package != package:
        other, recorded = recorded.package, None
    else:
        other = None
    if catalog is None and recorded is None:
        name = latest["metadata"]["name"] if latest is not None else None
        why = (f" (ClusterObjectSet {name} records the source of package {other}, not {package})" if other
               else f" (ClusterObjectSet {name} records none to keep)" if name else "")
        raise CatalogSourceError(f"no catalog to resolve package {package} from: give --catalog{why}")
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
        pick("--channel", given_channels, recorded.channels if recorded else (), ()),
        pick("--version", version, recorded.version if recorded else "", ""))
    kept_from = str(latest["metadata"]["name"]) if kept and latest is not None else None
    return SourceChoice(source, tuple(kept), kept_from)


@dataclass(frozen=True, slots=True)
class SourceCatalog:
    """A catalog read for resolution: the one a path or image names (``name`` None), or one of the cluster's
    ClusterCatalogs, with its name and ``spec.priority`` (:mod:`.clustercatalogs`); one that is not served is not
    read (``catalog`` None) and stops resolution on reaching it, as it stops OLM v1's (``unserved``)."""

    catalog: Catalog | None
    name: str | None = None
    priority: int = 0
    unserved: WalkedCatalog | None = None
    nothing: str | None = None   # no ClusterCatalog to read, and why (the only entry then)

    @property
    def label(self) -> str:
        """How messages name it: ``catalog PATH`` or ``ClusterCatalog NAME``."""
        return f"ClusterCatalog {self.name}" if self.name is not None else f"catalog {self.source}"

    @property
    def source(self) -> str:
        """Where its content was read from (a path, or the image, by digest for a ClusterCatalog)."""
        return self.catalog.source if self.catalog is not None else ""


def resolve_source(catalogs: Catalog | Sequence[SourceCatalog], choice: SourceChoice,
                   installed: InstalledRevision | None, *,
                   policy: str = POLICY_CATALOG_PROVIDED) -> tuple[SourceCatalog, Resolution]:
    """OLM v1's pick for ``choice`` over ``installed``, from one catalog or across ClusterCatalogs (by priority,
    :func:`.registryv1.resolve.resolve_among`): the catalog it comes from and the resolution. A refusal
    (:class:`ResolutionError`) carries our hints (:func:`resolution_hints`, and where a kept bound came from). A
    bundle the catalog lists with no image is refused: there is nothing to pull."""
    among = [SourceCatalog(catalogs)] if isinstance(catalogs, Catalog) else list(catalogs)
    source = choice.source
    kept = kept_hints(choice)
    try:
        query = source.query(policy)
    except ResolutionError as exc:
        raise ResolutionError(str(exc), kept) from None
    packages, readable = [], []
    why_none = [read.nothing for read in among if read.nothing is not None]
    for read in among:
        if read.nothing is not None:
            continue
        if read.catalog is None:
            assert read.unserved is not None
            raise unserved_error(read.unserved, source.package)
        readable.append((read, read.catalog))
        try:
            packages.append(RankedPackage(read.name or "", read.priority, read.catalog.package(source.package)))
        except BundleError as exc:   # one of its objects cannot be read
            if read.name is None:
                raise
            raise ResolutionError(f"error walking catalogs: error getting package {go_quote(source.package)} from "
                                  f"catalog {go_quote(read.name)}: {exc}") from None
    on = installed.bundle if installed is not None else None
    try:
        index, resolution = resolve_among(packages, query, on)
    except ResolutionError as exc:
        hints = why_none or _among_hints(readable, packages, query, on, tied=isinstance(exc, AmbiguousResolution))
        raise ResolutionError(str(exc), [*hints, *kept]) from None
    chosen = readable[index][0]
    if not resolution.bundle.image:
        raise ResolutionError(f"bundle {resolution.bundle.name} of {chosen.label} names no image")
    return chosen, resolution


def _among_hints(readable: Sequence[tuple[SourceCatalog, Catalog]], packages: Sequence[RankedPackage], query: Query,
                 installed: Installed | None, *, tied: bool) -> list[str]:
    """:func:`resolution_hints` of each catalog read; across ClusterCatalogs, each prefixed with its name, a package
    none has said once, and a tie said with its way out."""
    if len(readable) == 1 and readable[0][0].name is None:
        return resolution_hints(readable[0][1], packages[0].package, query, installed)
    if not any(ranked.package.found for ranked in packages):
        names = sorted({name for _, catalog in readable for name in catalog.package_names()})
        close = difflib.get_close_matches(query.package, names, n=3)
        return [f"no ClusterCatalog read ({', '.join(read.name or '' for read, _ in readable)}) has package "
                f"{query.package}" + (f"; the closest: {', '.join(close)}" if close else "")]
    if tied:
        return ["OLM v1 does not choose between catalogs of the same priority: give one ClusterCatalog a higher "
                "spec.priority, or leave the others out with a selector (--catalog clustercatalogs:SELECTOR, a "
                "ClusterExtension's spec.source.catalog.selector)"]
    return [f"ClusterCatalog {read.name}: {hint}" for (read, catalog), ranked in zip(readable, packages, strict=True)
            if ranked.package.found for hint in resolution_hints(catalog, ranked.package, query, installed)]


def kept_text(choice: SourceChoice) -> str:
    """The kept bounds with their values: ``--catalog C, --version '<1.2'``."""
    return ", ".join(f"{flag} {_shown(flag, choice.source)}" for flag in choice.kept)


def kept_hints(choice: SourceChoice) -> list[str]:
    """Beside a refusal: each bound kept from the owner's revision, which the command line may replace."""
    return [f"{flag} {_shown(flag, choice.source)} was kept from ClusterObjectSet {choice.kept_from}: give {flag} to "
            "replace it" for flag in choice.kept if flag != "--catalog"]


def _shown(flag: str, source: CatalogSource) -> str:
    if flag == "--channel":
        return " --channel ".join(source.channels)
    return repr(source.version) if flag == "--version" else source.catalog


def resolution_hints(catalog: Catalog, package: Package, query: Query, installed: Installed | None) -> list[str]:
    """Ours, beside OLM v1's message when nothing qualifies: a package or channel the catalog does not have, the
    upgrades a version range leaves out, or a best bundle refused for declaring dependencies."""
    return (_why_none(catalog, package, query.channels) + _why_out_of_range(package, query, installed)
            + _why_dependency(package, query, installed))


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


_SHOWN_UPGRADES = 5


def _why_out_of_range(package: Package, query: Query, installed: Installed | None) -> list[str]:
    """When a version range leaves out every upgrade the catalog allows from the installed bundle: those upgrades
    (OLM v1 steps along its edges; a range naming a later version cannot skip them)."""
    if installed is None or not query.version or not package.found:
        return []
    wider = [b for b in candidates(package, replace(query, version="", version_range=None), installed)
             if b.name != installed.name]
    if not wider:
        return []
    shown = ", ".join(b.name for b in wider[:_SHOWN_UPGRADES]) + (", ..." if len(wider) > _SHOWN_UPGRADES else "")
    return [f"the upgrades the catalog allows from {installed.name}, best first: {shown}; none is in the version "
            f"range {query.version}"]


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


def image_to_pull(bundle: Bundle, catalog: Catalog) -> str:
    """The catalog's image reference as cosctl pulls it; one that does not parse is refused naming the bundle and
    the catalog, which the admin must fix (or mirror), not the image."""
    reference = bundle.image if bundle.image.startswith(DOCKER_TRANSPORT) else f"{DOCKER_TRANSPORT}{bundle.image}"
    try:
        parse_reference(reference)
    except ImageReferenceError as exc:
        raise BundleInputError(f"catalog {catalog.source}: bundle {bundle.name} names an image cosctl cannot pull: "
                               f"{exc}") from None
    return reference


def check_pulled(pulled: RegistryV1, chosen: Bundle, source: CatalogSource) -> None:
    """The image the catalog names holds the bundle the catalog says it does: the installed bundle is recorded by
    its ClusterServiceVersion's name, and the next upgrade's edges are looked up by that name."""
    if pulled.csv_name != chosen.name or pulled.package_name != source.package:
        raise BundleInputError(
            f"image {chosen.image}: holds bundle {pulled.csv_name} of package {pulled.package_name}, but catalog "
            f"{source.catalog} lists it as bundle {chosen.name} of package {source.package}: the catalog and the "
            "image disagree; nothing was done")
