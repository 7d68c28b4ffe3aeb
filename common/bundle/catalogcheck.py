"""Whether a catalog allows installing a bundle over what an owner's revisions have installed (OLM v1's
upgrade edges), and what it says is deprecated.

Why: with ``--catalog``, ``cosctl publish`` and ``diff`` hold a bundle given by path to the rule a ClusterExtension
follows when it resolves from that catalog with its version pinned to the bundle's: the bundle must be the
catalog's, in the channels asked for, and (policy ``CatalogProvided``) an upgrade the catalog's channels allow
from the installed bundle, or that bundle's own version. The installed bundle is OLM v1's: the newest revision
that is not archived and has succeeded (``BoxcutterRevisionStatesGetter``), read from OLM v1's annotations.

Pure functions over plain data (the revisions are read by the caller).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from common.contract import api, conditions
from common.contract.objects import Obj

from .registryv1 import semver
from .registryv1.catalog import Catalog
from .registryv1.model import RegistryV1
from .registryv1.resolve import (
    POLICY_SELF_CERTIFIED,
    Installed,
    Query,
    ResolutionError,
    VersionReleaseError,
    bundle_version,
    candidates,
    dependencies,
    dependency_error,
    deprecations,
    resolution_error,
)

# How many of the upgrades the catalog allows a refusal lists, best first.
_SHOWN_UPGRADES = 5


@dataclass(frozen=True, slots=True)
class InstalledRevision:
    """The installed bundle and the revision that installed it, and the newer revisions not archived that have
    not succeeded yet (``rolling_out``: revision name and bundle name)."""

    bundle: Installed
    revision: str
    rolling_out: tuple[tuple[str, str], ...] = ()


def installed_bundle(revisions: Sequence[Obj]) -> InstalledRevision | None:
    """OLM v1's installed bundle: of the revisions not archived, the newest that has succeeded (``revisions``
    oldest first), when it records a bundle name (a revision of plain manifests installs no bundle)."""
    installed: tuple[Obj, Installed] | None = None
    rolling_out: list[tuple[str, str]] = []
    for cos in revisions:
        if (cos.get("spec") or {}).get("lifecycleState") == api.LIFECYCLE_ARCHIVED:
            continue
        annotations = (cos.get("metadata") or {}).get("annotations") or {}
        # as OLM v1 would have recorded it: an earlier cosctl wrote a CSV's version as the CSV spells it (v1.2),
        # where OLM v1 (from the catalog) and cosctl now write 1.2.0, the only spelling OLM v1's resolver reads;
        # what is no version even so is kept, and refused where a version is needed
        bundle = Installed(str(annotations.get(api.ANNOTATION_BUNDLE_NAME) or ""),
                           semver.printed_tolerant(str(annotations.get(api.ANNOTATION_BUNDLE_VERSION) or "")))
        if conditions.succeeded(cos):
            installed, rolling_out = (cos, bundle), []
        else:
            rolling_out.append((str(cos["metadata"]["name"]), bundle.name))
    if installed is None or not installed[1].name:
        return None
    return InstalledRevision(installed[1], str(installed[0]["metadata"]["name"]), tuple(rolling_out))


def rolling_out_hint(installed: InstalledRevision) -> str | None:
    """Why the installed bundle is not the one just published, when a newer revision has not succeeded yet."""
    if not installed.rolling_out:
        return None
    revision, bundle = installed.rolling_out[-1]
    return (f"ClusterObjectSet {revision}{f' ({bundle})' if bundle else ''} has not succeeded yet, so the installed "
            f"bundle is still {installed.bundle.name} (OLM v1 resolves nothing while a revision rolls out): wait "
            f"for it with cosctl status {revision} --watch")


def first_install_hint(revisions: Sequence[Obj]) -> str | None:
    """Why a resolution is a first install though the owner has a revision of a bundle: none has succeeded yet (OLM
    v1 resolves as a fresh install then, too: no upgrade edges hold the choice)."""
    pending = [cos for cos in revisions
               if (cos.get("spec") or {}).get("lifecycleState") != api.LIFECYCLE_ARCHIVED
               and ((cos.get("metadata") or {}).get("annotations") or {}).get(api.ANNOTATION_BUNDLE_NAME)]
    if not pending or installed_bundle(revisions) is not None:
        return None
    name = str(pending[-1]["metadata"]["name"])
    return (f"no revision of the owner has succeeded yet ({name} has not): resolving as a first install, as OLM v1 "
            f"does, with no upgrade edges from it (wait for it with cosctl status {name} --watch)")


@dataclass(frozen=True, slots=True)
class CatalogVerdict:
    """What the catalog says: ``refusal`` (OLM v1's message) and ``hints`` (ours) when it does not allow the
    bundle, and its deprecation messages either way. ``edge_only`` is true when the bundle lacks nothing but an
    upgrade edge from the installed one (``--upgrade-constraint-policy SelfCertified`` would take it);
    ``allowed`` are then the upgrades the catalog does allow, best first."""

    source: str
    bundle: str
    policy: str
    installed: InstalledRevision | None
    deprecated: tuple[str, ...] = ()
    refusal: str | None = None
    hints: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()
    edge_only: bool = False

    def summary(self) -> str:
        """One line for an accepted bundle: over what it was checked."""
        if self.installed is None:
            return f"catalog {self.source}: {self.bundle} may be installed (no bundle of the owner is installed)"
        if self.policy == POLICY_SELF_CERTIFIED:
            return (f"catalog {self.source}: {self.bundle} may replace {self.installed.bundle.name} "
                    f"(--upgrade-constraint-policy SelfCertified: upgrade edges not checked)")
        return (f"catalog {self.source}: {self.bundle} is an upgrade it allows from {self.installed.bundle.name} "
                f"(installed by ClusterObjectSet {self.installed.revision})"
                if self.bundle != self.installed.bundle.name else
                f"catalog {self.source}: {self.bundle} is the installed bundle")

    def raise_refusal(self) -> None:
        """Raise the refusal as :class:`ResolutionError` (OLM v1's message, our hints as its causes)."""
        if self.refusal is not None:
            raise ResolutionError(self.refusal, self.hints)

    def to_json(self) -> dict[str, object]:
        installed = None if self.installed is None else {
            "name": self.installed.bundle.name, "version": self.installed.bundle.version,
            "revision": self.installed.revision}
        return {"catalog": self.source, "bundle": self.bundle, "policy": self.policy, "installed": installed,
                "refusal": self.refusal, "causes": list(self.hints), "allowed": list(self.allowed),
                "deprecated": list(self.deprecated)}


def check_bundle(catalog: Catalog, bundle: RegistryV1, *, channels: Sequence[str] = (),
                 policy: str, installed: InstalledRevision | None) -> CatalogVerdict:
    """Whether ``catalog`` lets a ClusterExtension pinned to ``bundle``'s version resolve to ``bundle`` over
    ``installed``. A refusal is OLM v1's message for that ClusterExtension; the hints say why. With ``installed``
    None, only what does not depend on the cluster is checked (the bundle listed, in the channels)."""
    package = catalog.package(bundle.package_name)
    messages = tuple(deprecations(package, channels, bundle.csv_name).messages())
    on_installed = installed.bundle if installed is not None else None
    where = f"catalog {catalog.source}"

    def verdict(refusal: str | None, hints: Sequence[str] = (), allowed: Sequence[str] = (),
                edge_only: bool = False) -> CatalogVerdict:
        return CatalogVerdict(catalog.source, bundle.csv_name, policy, installed, messages, refusal, tuple(hints),
                              tuple(allowed), edge_only)

    listed = next((b for b in package.bundles if b.name == bundle.csv_name), None)
    listed_version = None
    if listed is not None:
        try:
            listed_version = bundle_version(listed)
        except VersionReleaseError as exc:
            return verdict(f"{where} lists bundle {bundle.csv_name} without a version OLM v1 can read: {exc}")
    version_text = str(listed_version.version) if listed_version is not None else bundle.version
    pinned = listed_version.version if listed_version is not None else None
    query = Query(bundle.package_name, tuple(channels), version_text,
                  lambda candidate: pinned is not None and candidate.compare(pinned) == 0, policy)
    refusal = resolution_error(query, on_installed)
    if not package.found:
        close = _close(bundle.package_name, catalog.package_names())
        return verdict(refusal, [f"{where} has no package {bundle.package_name}{close}"])
    if listed is None or listed_version is None:
        close = _close(bundle.csv_name, [b.name for b in package.bundles])
        return verdict(refusal, [f"{where} has no bundle {bundle.csv_name} in package {bundle.package_name}{close}"])
    try:
        given = semver.parse(bundle.version)
    except semver.SemverError:
        given = None
    if given is not None and given.compare(listed_version.version) != 0:
        return verdict(refusal, [f"{where} lists bundle {bundle.csv_name} as version {listed_version}, but the "
                                 f"bundle given is version {bundle.version}"])
    in_channels = sorted(channel.name for channel in package.channels
                         if any(entry.name == bundle.csv_name for entry in channel.entries))
    if channels and not set(in_channels) & set(channels):
        return verdict(refusal, [f"{bundle.csv_name} is in channel(s) {_names(in_channels)} of {where}, not in "
                                 f"{_names(list(channels))}"])
    # what operator-controller checks on the bundle it resolved: refused whatever the edges say
    refused = dependency_error(listed)
    depends = [f"{bundle.csv_name} depends on {', '.join(dependencies(listed))} ({where}): OLM v1 resolves no "
               "dependencies, and installs no bundle that declares one",
               "publish without --catalog installs it anyway; what it depends on is then yours to install first"]
    self_certified = ("--upgrade-constraint-policy SelfCertified skips the upgrade edges" if refused is None else
                      f"with --upgrade-constraint-policy SelfCertified, OLM v1 would refuse it still: {refused}")
    try:
        qualified = candidates(package, query, on_installed)
    except ResolutionError as exc:  # the installed revision's bundle-version annotation is no semantic version
        assert installed is not None
        return verdict(str(exc), [f"ClusterObjectSet {installed.revision} records bundle version "
                                  f"{installed.bundle.version!r} ({api.ANNOTATION_BUNDLE_VERSION}), which OLM v1 "
                                  f"cannot read: {self_certified}", *(depends if refused else [])],
                       edge_only=refused is None)
    if any(b.name == bundle.csv_name for b in qualified):
        return verdict(None) if refused is None else verdict(refused, depends)
    # Listed, in the channels, the right version: what is missing is an upgrade edge from the installed bundle.
    assert installed is not None and policy != POLICY_SELF_CERTIFIED
    upgrades = [b.name for b in candidates(package, Query(bundle.package_name, tuple(channels)), on_installed)
                if b.name != installed.bundle.name]
    allowed = (f"the upgrades it allows, newest first: {_names(upgrades[:_SHOWN_UPGRADES])}"
               f"{' and more' if len(upgrades) > _SHOWN_UPGRADES else ''}" if upgrades
               else "it allows no upgrade from it")
    hints = [f"{where} has no upgrade edge from {installed.bundle.name} (installed by ClusterObjectSet "
             f"{installed.revision}) to {bundle.csv_name}: {allowed}"]
    if (rolling := rolling_out_hint(installed)) is not None:
        hints.append(rolling)
    if refused is not None:
        return verdict(refusal, [*hints, self_certified, *depends], upgrades)
    hints.append("--upgrade-constraint-policy SelfCertified installs it anyway, as OLM v1's ClusterExtension "
                 "spec.source.catalog.upgradeConstraintPolicy does")
    return verdict(refusal, hints, upgrades, edge_only=True)


def _close(name: str, names: Sequence[str]) -> str:
    """``; did you mean ...`` with the names closest to ``name``, or how many there are (never a list of
    hundreds: an operator index holds every package of OperatorHub)."""
    close = difflib.get_close_matches(name, names, n=3)
    if close:
        return f"; the closest: {', '.join(close)}"
    return f" (it holds {len(names)} other{'s' if len(names) != 1 else ''})" if names else \
        " (it holds no package: is it a File-Based Catalog, with olm.package, olm.channel and olm.bundle objects?)"


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"
