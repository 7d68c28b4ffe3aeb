"""Which bundle of a package OLM v1 installs or upgrades to, from a catalog: its resolver, for one catalog.

Why: OLM v1 never upgrades an operator to just any version. A ClusterExtension names a package (and optionally
channels and a version range); operator-controller picks, among the catalog's bundles of that package, those in
the channels, in the range and, once a bundle is installed, those the catalog says may follow it: a channel
entry that ``replaces`` it, ``skips`` it or whose ``skipRange`` holds its version (the ``CatalogProvided``
upgrade constraint policy; ``SelfCertified`` lifts that last rule). The installed bundle itself always
qualifies. Deprecated bundles sort last, then the highest version wins. An operator author uses these edges
to make every installation pass through the versions that migrate its data, so skipping them can break it.

With several catalogs (a cluster's ClusterCatalogs), each catalog's best bundle is a candidate: a deprecated one
only when every catalog's best is deprecated, and the catalog of highest ``spec.priority`` wins; two at the same
priority are ambiguous, and OLM v1 refuses rather than guess (:func:`resolve_among`).

This is operator-controller's ``resolve.CatalogResolver`` with ``catalogmetadata/filter``, ``compare`` and
``bundleutil`` (feature gates at their defaults), with its error messages word for word.
Versions are read with blang/semver (:mod:`.semver`), as OLM v1 reads them.

Pure functions over :class:`~.catalog.Package`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from . import semver
from .catalog import PROPERTY_PACKAGE, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE, Bundle, Channel, Package, field_of
from .constraints import ConstraintError, parse_constraints
from .gotext import go_list, go_quote, printable
from .gounmarshal import go_word
from .model import BundleError

POLICY_CATALOG_PROVIDED: Final = "CatalogProvided"
POLICY_SELF_CERTIFIED: Final = "SelfCertified"
UPGRADE_CONSTRAINT_POLICIES: Final = (POLICY_CATALOG_PROVIDED, POLICY_SELF_CERTIFIED)
_RELEASE_MAX_LENGTH: Final = 20


class ResolutionError(BundleError):
    """No bundle qualifies, or the catalog or installed version cannot be read; ``str(exc)`` is OLM v1's
    message (what a ClusterExtension reports after ``failed to resolve bundle:``)."""


class AmbiguousResolution(ResolutionError):
    """Catalogs of the same priority each offer a bundle: OLM v1 does not choose between them."""


class VersionReleaseError(ValueError):
    """A version (and release) OLM v1 cannot read; the message is its own."""


@dataclass(frozen=True, slots=True)
class VersionRelease:
    """``declcfg.VersionRelease``: a semantic version and the bundle's release (registry+v1 keeps it in the
    version's build metadata, ``1.2.0+3``)."""

    version: semver.Version
    release: tuple[semver.PRVersion, ...] = ()

    def compare(self, other: VersionRelease) -> int:
        if (comparison := self.version.compare(other.version)) != 0:
            return comparison
        if not self.release or not other.release:
            return bool(self.release) - bool(other.release)
        return semver.compare_prereleases(self.release, other.release)

    def __str__(self) -> str:
        """As OLM v1 records it (``bundleutil.MetadataFor`` without release support): the release as build
        metadata."""
        if not self.release:
            return str(self.version)
        plain = semver.Version(self.version.major, self.version.minor, self.version.patch, self.version.pre)
        return f"{plain}+{'.'.join(str(identifier) for identifier in self.release)}"


def _new_release(text: str) -> tuple[semver.PRVersion, ...]:
    """``declcfg.NewRelease``."""
    if not text:
        return ()
    if len(text) > _RELEASE_MAX_LENGTH:
        raise VersionReleaseError(f"invalid release {go_quote(text)}: exceeds maximum length of "
                                  f"{_RELEASE_MAX_LENGTH} characters")
    identifiers, problems = [], []
    for i, segment in enumerate(text.split(".")):
        try:
            identifiers.append(semver.parse_prerelease(segment))
        except semver.SemverError as exc:
            problems.append(f"segment {i}: {exc}")
    if problems:
        raise VersionReleaseError(f"invalid release {go_quote(text)}: {chr(10).join(problems)}")
    return tuple(identifiers)


def parse_legacy_version_release(text: str) -> VersionRelease:
    """``bundleutil.ParseLegacyVersionRelease``: build metadata that reads as a release is the release."""
    try:
        version = semver.parse(text)
    except semver.SemverError as exc:
        raise VersionReleaseError(str(exc)) from None
    try:
        release = _new_release(".".join(version.build))
    except VersionReleaseError:
        release = ()
    if release:
        version = semver.Version(version.major, version.minor, version.patch, version.pre)
    return VersionRelease(version, release)


def bundle_version(bundle: Bundle) -> VersionRelease:
    """``bundleutil.GetVersionAndRelease``: from the bundle's first ``olm.package`` property."""
    for prop in bundle.properties:
        if field_of(prop, "type") == PROPERTY_PACKAGE:
            value = field_of(prop, "value")
            if not isinstance(value, dict):
                raise VersionReleaseError(f"error unmarshalling package property: json: cannot unmarshal "
                                          f"{go_word(value)} into Go value of type property.Package")
            version = field_of(value, "version")
            if version is not None and not isinstance(version, str):
                raise VersionReleaseError(f"error unmarshalling package property: json: cannot unmarshal "
                                          f"{go_word(version)} into Go struct field Package.version of type "
                                          f"string")
            return parse_legacy_version_release(version or "")
    raise VersionReleaseError(f"no package property found in bundle {go_quote(bundle.name)}")


def _version_or_none(bundle: Bundle) -> VersionRelease | None:
    try:
        return bundle_version(bundle)
    except VersionReleaseError:
        return None


@dataclass(frozen=True, slots=True)
class Installed:
    """The installed bundle as a revision records it (``bundle-name`` and ``bundle-version`` annotations)."""

    name: str
    version: str


def _is_successor(entry_replaces: str, entry_skips: Sequence[str], entry_skip_range: str,
                  installed: Installed, installed_version: semver.Version) -> bool:
    if entry_replaces == installed.name or installed.name in entry_skips:
        return True
    if entry_skip_range:
        try:
            in_range = semver.parse_range(entry_skip_range)
        except semver.SemverError:
            return False  # OLM v1 ignores a skipRange it cannot read
        return in_range(installed_version)
    return False


def successors_of(installed: Installed, channels: Sequence[Channel]) -> Callable[[Bundle], bool]:
    """``filter.SuccessorsOf``: bundles some channel entry makes an upgrade from ``installed``, or the installed
    version itself (no upgrade). Raises :class:`VersionReleaseError` for an installed version it cannot read."""
    try:
        installed_release = parse_legacy_version_release(installed.version)
    except VersionReleaseError as exc:
        raise VersionReleaseError(f"failed to get version and release of installed bundle: {exc}") from None
    installed_version = semver.parse(installed.version)
    upgrades = {entry.name for channel in channels for entry in channel.entries
                if _is_successor(entry.replaces, entry.skips, entry.skip_range, installed, installed_version)}

    def qualifies(bundle: Bundle) -> bool:
        if bundle.name in upgrades:
            return True
        version = _version_or_none(bundle)
        return version is not None and installed_release.compare(version) == 0
    return qualifies


def in_any_channel(channels: Sequence[Channel]) -> Callable[[Bundle], bool]:
    names = {entry.name for channel in channels for entry in channel.entries}
    return lambda bundle: bundle.name in names


def deprecated_bundle_names(package: Package) -> set[str]:
    return {entry.name for entry in package.deprecations if entry.schema == SCHEMA_BUNDLE}


def _by_deprecation_then_version(deprecated: set[str]) -> Callable[[Bundle, Bundle], int]:
    """``compare.ByDeprecationFunc`` then ``compare.ByVersionAndRelease``: not deprecated first, then the
    highest version; bundles whose version cannot be read last."""
    def compare(a: Bundle, b: Bundle) -> int:
        a_deprecated, b_deprecated = a.name in deprecated, b.name in deprecated
        if a_deprecated != b_deprecated:
            return 1 if a_deprecated else -1
        va, vb = _version_or_none(a), _version_or_none(b)
        if va is None or vb is None:
            return (va is None) - (vb is None)
        return vb.compare(va)
    return compare


@dataclass(frozen=True, slots=True)
class Query:
    """What a ClusterExtension's ``spec.source.catalog`` asks for."""

    package: str
    channels: tuple[str, ...] = ()
    version: str = ""  # the range's text, for messages
    version_range: Callable[[semver.Version], bool] | None = None
    policy: str = POLICY_CATALOG_PROVIDED


def make_query(package: str, *, channels: Sequence[str] = (), version: str = "",
               policy: str = POLICY_CATALOG_PROVIDED) -> Query:
    """A :class:`Query` from a ClusterExtension's fields: ``version`` is a Masterminds/semver range, refused
    with OLM v1's message when invalid."""
    version_range = None
    if version:
        try:
            version_range = parse_constraints(version)
        except ConstraintError as exc:
            raise ResolutionError(f"desired version range {go_quote(version)} is invalid: {exc}") from None
    return Query(package, tuple(channels), version, version_range, policy)


@dataclass(frozen=True, slots=True)
class Resolution:
    """The bundle OLM v1 would install, its version, every bundle that qualified, best first, and the package (of the
    catalog resolved from) they are of: its deprecations are what a ClusterExtension's conditions say."""

    bundle: Bundle
    version: VersionRelease
    candidates: tuple[Bundle, ...]
    package: Package


def candidates(package: Package, query: Query, installed: Installed | None) -> list[Bundle]:
    """The bundles that qualify for ``query``, in OLM v1's order of preference. Raises :class:`ResolutionError`
    when the installed version cannot be read."""
    if not package.found:
        return []
    predicates: list[Callable[[Bundle], bool]] = []
    channels = package.channels
    if query.channels:
        wanted = set(query.channels)
        # OLM v1 filters the package's channels in place (slices.DeleteFunc), so the upgrade edges below come from
        # the channels asked for only, not from every channel of the package
        channels = [channel for channel in package.channels if channel.name in wanted]
        predicates.append(in_any_channel(channels))
    if query.version_range is not None:
        version_range = query.version_range

        def in_range(bundle: Bundle) -> bool:
            version = _version_or_none(bundle)
            return version is not None and version_range(version.version)
        predicates.append(in_range)
    if query.policy != POLICY_SELF_CERTIFIED and installed is not None:
        try:
            predicates.append(successors_of(installed, channels))
        except VersionReleaseError as exc:
            raise ResolutionError(f"error walking catalogs: error finding upgrade edges: {exc}") from None
    chosen = [bundle for bundle in package.bundles if all(predicate(bundle) for predicate in predicates)]
    chosen.sort(key=functools.cmp_to_key(_by_deprecation_then_version(deprecated_bundle_names(package))))
    return chosen


def resolution_error(query: Query, installed: Installed | None, matched: Sequence[str] = ()) -> str:
    """``resolutionError.Error()``: nothing qualified, or (``matched``: the catalogs whose best bundles tie) more
    than one catalog offers a bundle at the same priority."""
    text = ""
    if installed is not None:
        text += f"error upgrading from currently installed version {go_quote(installed.version)}: "
    if len(matched) > 1:
        text += f"found bundles for package {go_quote(query.package)} "
    else:
        text += f"no bundles found for package {go_quote(query.package)} "
    if query.version:
        text += f"matching version {go_quote(query.version)} "
    if query.channels:
        text += f"in channels {go_list(list(query.channels))} "
    if len(matched) > 1:
        text += f"in multiple catalogs with the same priority {go_list(sorted(matched))} "
    return text.strip()


@dataclass(frozen=True, slots=True)
class RankedPackage:
    """One catalog's view of the package, for :func:`resolve_among`: the catalog's name (a ClusterCatalog's
    ``metadata.name``) and ``spec.priority``."""

    catalog: str
    priority: int
    package: Package


def resolve_among(packages: Sequence[RankedPackage], query: Query, installed: Installed | None) -> \
        tuple[int, Resolution]:
    """``CatalogResolver.Resolve`` over several catalogs, in the order they are walked: the index of the catalog
    the bundle comes from, and the :class:`Resolution` within it (its ``candidates`` are that catalog's).

    Each catalog offers its best bundle. A deprecated offer is dropped while another catalog offers one that is
    not, and drops every deprecated offer before it. Among what is left, the highest priority wins; two offers
    at that priority are refused, naming every catalog still offering (OLM v1 lists them all)."""
    offers: list[tuple[int, list[Bundle]]] = []
    prior_deprecated = False
    for index, ranked in enumerate(packages):
        chosen = candidates(ranked.package, query, installed)
        if not chosen:
            continue
        deprecated = chosen[0].name in deprecated_bundle_names(ranked.package)
        if offers and deprecated and not prior_deprecated:
            continue
        if offers and prior_deprecated and not deprecated:
            offers = []
        offers.append((index, chosen))
        prior_deprecated = deprecated
    if len(offers) > 1:
        offers.sort(key=lambda offer: -packages[offer[0]].priority)   # stable: the walk's order among equals
        if packages[offers[0][0]].priority != packages[offers[1][0]].priority:
            offers = offers[:1]
    if len(offers) != 1:
        error = AmbiguousResolution if offers else ResolutionError
        raise error(resolution_error(query, installed, [packages[i].catalog for i, _ in offers]))
    index, chosen = offers[0]
    try:
        version = bundle_version(chosen[0])
    except VersionReleaseError as exc:
        raise ResolutionError(f"error getting resolved bundle version for bundle {go_quote(chosen[0].name)}: "
                              f"{exc}") from None
    if (refused := dependency_error(chosen[0])) is not None:
        raise ResolutionError(refused)
    return index, Resolution(chosen[0], version, tuple(chosen), packages[index].package)


def resolve(package: Package, query: Query, installed: Installed | None) -> Resolution:
    """``CatalogResolver.Resolve`` over one catalog, with the validation operator-controller runs on the bundle it
    resolved (:func:`dependency_error`): the bundle to install, or :class:`ResolutionError`."""
    return resolve_among([RankedPackage("", 0, package)], query, installed)[1]


# The properties declaring a dependency, which operator-controller refuses (it resolves none).
DEPENDENCY_PROPERTIES: Final = ("olm.package.required", "olm.gvk.required", "olm.constraint")


def dependency_error(bundle: Bundle) -> str | None:
    """``resolve.NoDependencyValidation``, which operator-controller runs on every bundle it resolved (its
    ``main.go`` wires it in): a bundle declaring a dependency (the first such property) is refused, with
    ``validating bundle`` before the message as ``Resolve`` wraps it. None when it declares none."""
    for prop in bundle.properties:
        kind = field_of(prop, "type") if isinstance(prop, dict) else None
        if kind in DEPENDENCY_PROPERTIES:
            return (f"validating bundle {go_quote(bundle.name)}: bundle {go_quote(bundle.name)} has a dependency "
                    f"declared via property {go_quote(str(kind))} which is currently not supported")
    return None


def dependencies(bundle: Bundle) -> list[str]:
    """What ``bundle`` declares it depends on, in words (``package etcd 0.9.x``, ``kind EtcdCluster.etcd.database
    .coreos.com/v1beta2``, ``a constraint: ...``), for the hint of a refusal; the catalog's properties are data, so
    a value of an unexpected shape is named by its type only."""
    said = []
    for prop in bundle.properties:
        kind = field_of(prop, "type") if isinstance(prop, dict) else None
        value = field_of(prop, "value") if isinstance(prop, dict) else None
        if kind not in DEPENDENCY_PROPERTIES:
            continue
        fields = {key: printable(field_of(value, key)) for key in (
            "packageName", "versionRange", "group", "kind", "version", "failureMessage")} if isinstance(value, dict) \
            else {}
        if kind == "olm.package.required" and fields.get("packageName"):
            said.append(f"package {fields['packageName']} {fields['versionRange']}".rstrip())
        elif kind == "olm.gvk.required" and fields.get("kind"):
            group = f".{fields['group']}" if fields["group"] else ""
            said.append(f"kind {fields['kind']}{group}/{fields['version']}".rstrip("/"))
        elif kind == "olm.constraint" and fields.get("failureMessage"):
            said.append(f"a constraint ({fields['failureMessage']})")
        else:
            said.append(f"a property {kind}")
    return said


@dataclass(frozen=True, slots=True)
class Deprecations:
    """What a ClusterExtension's deprecation conditions would say: messages for the package, the channels asked
    for (all of them when none is) and the installed bundle."""

    package: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    bundle: tuple[str, ...] = ()

    def messages(self) -> list[str]:
        return [*self.package, *self.channels, *self.bundle]


def deprecations(package: Package, channels: Sequence[str], bundle_name: str) -> Deprecations:
    """``buildDeprecationInfo``: entries without a message say nothing."""
    wanted = set(channels)
    found: dict[str, list[str]] = {SCHEMA_PACKAGE: [], SCHEMA_CHANNEL: [], SCHEMA_BUNDLE: []}
    for entry in package.deprecations:
        if entry.schema == SCHEMA_CHANNEL and wanted and entry.name not in wanted:
            continue
        if entry.schema == SCHEMA_BUNDLE and (not bundle_name or entry.name != bundle_name):
            continue
        if entry.schema in found and entry.message:
            found[entry.schema].append(entry.message)
    return Deprecations(tuple(found[SCHEMA_PACKAGE]), tuple(found[SCHEMA_CHANNEL]), tuple(found[SCHEMA_BUNDLE]))
