"""What a catalog offers: its packages, and for one package its channels with their versions, newest first, and
what the catalog deprecates.

Why: an admin with no OLM on the cluster has no ``kubectl get packages`` to browse a catalog; ``cosctl resolve``
answers for a package already known by name. ``cosctl search`` shows what there is to install, and the package,
channel and version range to give ``publish --package``. Its "latest" is what OLM v1 resolves for the package with
no channel and no range (:func:`.registryv1.resolve.resolve`, from every channel), so it is what ``publish
--package NAME`` installs, or that resolution's refusal; bundles OLM v1 refuses to install for declaring dependencies
are marked.

Pure functions over a loaded catalog.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass

from .registryv1.catalog import SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE, Bundle, Catalog, Package
from .registryv1.resolve import (
    ResolutionError,
    VersionRelease,
    VersionReleaseError,
    bundle_version,
    candidates,
    dependency_error,
    make_query,
    resolve,
)

NO_CHANNEL = "(in no channel)"


@dataclass(frozen=True, slots=True)
class Version:
    """One bundle: its name, version (``""`` when OLM v1 cannot read it), the catalog's deprecation message (None:
    not deprecated) and whether it declares dependencies (which OLM v1 refuses to install)."""

    bundle: str
    version: str
    deprecated: str | None
    dependencies: bool

    def to_json(self) -> dict[str, object]:
        return {"bundle": self.bundle, "version": self.version or None, "deprecated": self.deprecated is not None,
                "deprecationMessage": self.deprecated, "declaresDependencies": self.dependencies}


@dataclass(frozen=True, slots=True)
class ChannelSummary:
    name: str
    versions: tuple[Version, ...]   # newest first; unreadable versions last
    deprecated: str | None          # the catalog's message


@dataclass(frozen=True, slots=True)
class PackageSummary:
    name: str
    default_channel: str
    channels: tuple[ChannelSummary, ...]   # the default channel first, then by name; bundles in none last
    latest: Version | None                 # what OLM v1 resolves with no channel or range (or refuses: see refusal)
    refusal: str | None                    # OLM v1's message when it refuses that resolution
    deprecated: str | None

    @property
    def default_channel_exists(self) -> bool:
        return any(channel.name == self.default_channel for channel in self.channels)

    def to_json(self) -> dict[str, object]:
        return {"package": self.name, "defaultChannel": self.default_channel or None,
                "latest": self.latest.to_json() if self.latest else None, "refusal": self.refusal,
                "deprecated": self.deprecated,
                "channels": [{"name": c.name, "deprecated": c.deprecated, "versions": [v.to_json() for v in c.versions]}
                             for c in self.channels if c.name != NO_CHANNEL],
                "inNoChannel": [v.to_json() for c in self.channels if c.name == NO_CHANNEL for v in c.versions]}


def matching(catalog: Catalog, text: str) -> list[str]:
    """The catalog's package names containing ``text`` (any case), sorted."""
    folded = text.casefold()
    return [name for name in catalog.package_names() if folded in name.casefold()]


def one_line(message: str) -> str:
    """A deprecation message as one line (catalogs write some as YAML blocks)."""
    return " ".join(message.split())


def summarize(package: Package) -> PackageSummary:
    """One package: channels with their bundles newest first (each once), the bundles in no channel, what OLM v1
    resolves with no bounds, and the deprecations."""
    messages = {(entry.schema, entry.name): one_line(entry.message) or "deprecated" for entry in package.deprecations}
    by_name = {bundle.name: bundle for bundle in package.bundles}

    def read(bundle: Bundle) -> VersionRelease | None:
        try:
            return bundle_version(bundle)
        except VersionReleaseError:
            return None
    versions = {bundle.name: read(bundle) for bundle in package.bundles}   # each read once, not per comparison

    def version(bundle: Bundle) -> Version:
        found = versions[bundle.name]
        return Version(bundle.name, str(found) if found is not None else "", messages.get((SCHEMA_BUNDLE, bundle.name)),
                       dependency_error(bundle) is not None)

    def newest_first(bundles: list[Bundle]) -> tuple[Version, ...]:
        def compare(a: Bundle, b: Bundle) -> int:
            va, vb = versions[a.name], versions[b.name]
            if va is None or vb is None:
                return (va is None) - (vb is None)
            return vb.compare(va)
        unique = list({bundle.name: bundle for bundle in bundles}.values())   # a channel may list one twice
        return tuple(version(bundle) for bundle in sorted(unique, key=functools.cmp_to_key(compare)))

    channels = []
    listed: set[str] = set()
    for channel in sorted(package.channels, key=lambda c: (c.name != package.default_channel, c.name)):
        bundles = [by_name[e.name] for e in channel.entries if e.name in by_name]
        listed.update(bundle.name for bundle in bundles)
        channels.append(ChannelSummary(channel.name, newest_first(bundles),
                                       messages.get((SCHEMA_CHANNEL, channel.name))))
    unlisted = [bundle for bundle in package.bundles if bundle.name not in listed]
    if unlisted:
        channels.append(ChannelSummary(NO_CHANNEL, newest_first(unlisted), None))
    latest, refusal = None, None
    if package.bundles:
        try:
            latest = version(resolve(package, make_query(package.name), None).bundle)
        except ResolutionError as exc:
            refusal = str(exc)
            best = _best(package)
            latest = version(best) if best is not None else None
    return PackageSummary(package.name, package.default_channel, tuple(channels), latest, refusal,
                          messages.get((SCHEMA_PACKAGE, "")))


def _best(package: Package) -> Bundle | None:
    """The bundle OLM v1 ranks first with no bounds (the one its refusal is about)."""
    ranked = candidates(package, make_query(package.name), None)
    return ranked[0] if ranked else None


def shown_versions(versions: tuple[Version, ...]) -> list[str]:
    """Each version as text: marked when deprecated or declaring dependencies, named when two share a version."""
    counts = Counter(v.version for v in versions)
    shown = []
    for v in versions:
        text = v.version or f"{v.bundle} (version unreadable)"
        if v.version and counts[v.version] > 1:
            text += f" ({v.bundle})"
        marks = [mark for mark, on in (("deprecated", v.deprecated is not None),
                                       ("declares dependencies", v.dependencies)) if on]
        shown.append(text + (f" ({', '.join(marks)})" if marks else ""))
    return shown
