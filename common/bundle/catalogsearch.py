"""What a catalog offers: its packages, and for one package its channels with their versions, newest first, and
what the catalog deprecates.

Why: an admin with no OLM on the cluster has no ``kubectl get packages`` to browse a catalog; ``cosctl resolve``
answers for a package already known by name. ``cosctl search`` shows what there is to install, and the package,
channel and version range to give ``publish --package``.

Pure functions over a loaded catalog.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .registryv1.catalog import SCHEMA_CHANNEL, SCHEMA_PACKAGE, Bundle, Catalog, Package
from .registryv1.resolve import VersionRelease, VersionReleaseError, bundle_version, deprecated_bundle_names


@dataclass(frozen=True, slots=True)
class Version:
    """One bundle as a channel lists it: its name, version (``""`` when OLM v1 cannot read it) and deprecation."""

    bundle: str
    version: str
    deprecated: bool


@dataclass(frozen=True, slots=True)
class ChannelSummary:
    name: str
    versions: tuple[Version, ...]   # newest first; unreadable versions last
    deprecated: str | None          # the catalog's message (or "deprecated" when it gives none)


@dataclass(frozen=True, slots=True)
class PackageSummary:
    name: str
    default_channel: str
    channels: tuple[ChannelSummary, ...]   # the default channel first, then by name
    latest: Version | None                 # the newest bundle that is not deprecated (else the newest)
    deprecated: str | None

    def to_json(self) -> dict[str, object]:
        def version(v: Version) -> dict[str, object]:
            return {"bundle": v.bundle, "version": v.version or None, "deprecated": v.deprecated}
        return {"package": self.name, "defaultChannel": self.default_channel or None,
                "latest": version(self.latest) if self.latest else None, "deprecated": self.deprecated,
                "channels": [{"name": c.name, "deprecated": c.deprecated,
                              "versions": [version(v) for v in c.versions]} for c in self.channels]}


def matching(catalog: Catalog, text: str) -> list[str]:
    """The catalog's package names containing ``text`` (any case), sorted."""
    folded = text.casefold()
    return [name for name in catalog.package_names() if folded in name.casefold()]


def summarize(package: Package) -> PackageSummary:
    """One package: channels with their bundles newest first, the latest bundle, and the deprecations."""
    deprecated = deprecated_bundle_names(package)
    by_name = {bundle.name: bundle for bundle in package.bundles}
    messages = {(entry.schema, entry.name): entry.message or "deprecated" for entry in package.deprecations}

    def version_of(bundle: Bundle) -> tuple[VersionRelease | None, Version]:
        try:
            parsed: VersionRelease | None = bundle_version(bundle)
        except VersionReleaseError:
            parsed = None
        return parsed, Version(bundle.name, str(parsed) if parsed is not None else "", bundle.name in deprecated)

    def newest_first(bundles: list[Bundle]) -> list[Version]:
        pairs = [version_of(bundle) for bundle in bundles]

        def compare(a: tuple[VersionRelease | None, Version], b: tuple[VersionRelease | None, Version]) -> int:
            if a[0] is None or b[0] is None:
                return (a[0] is None) - (b[0] is None)
            return b[0].compare(a[0])
        return [version for _, version in sorted(pairs, key=functools.cmp_to_key(compare))]

    channels = []
    for channel in sorted(package.channels, key=lambda c: (c.name != package.default_channel, c.name)):
        listed = [by_name[e.name] for e in channel.entries if e.name in by_name]
        channels.append(ChannelSummary(channel.name, tuple(newest_first(listed)),
                                       messages.get((SCHEMA_CHANNEL, channel.name))))
    every = newest_first(package.bundles)
    latest = next((v for v in every if not v.deprecated and v.version), every[0] if every else None)
    return PackageSummary(package.name, package.default_channel, tuple(channels), latest,
                          messages.get((SCHEMA_PACKAGE, "")))
