"""``cosctl list``: every owner on the cluster, what it has installed and how its latest revision is doing; with
``--upgrades``, the bundle the next ``publish --package`` would install for each owner resolved from a catalog.

Why: OLM v1 upgrades a ClusterExtension by itself; here an upgrade happens when ``publish --package`` runs. The
admin's question "what is installed, and which of it has an upgrade waiting" would otherwise take a ``diff
--package`` per owner. Each catalog is read once, however many owners record it; nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common.bundle.catalogcheck import InstalledRevision, installed_bundle
from common.bundle.catalogsource import CatalogSource, SourceCatalog, choose_source, recorded_source, resolve_source
from common.bundle.publish import revision_of
from common.bundle.registryv1.model import BundleError
from common.bundle.registryv1.resolve import deprecations
from common.cluster.interface import Cluster
from common.contract import api, conditions
from common.contract.objects import Obj
from common.cosctl._catalog import read_catalogs
from common.cosctl._producer import (
    EXIT_FAILED,
    EXIT_OK,
    add_cluster_arguments,
    add_namespace_argument,
    print_table,
    run,
)
from common.cosctl.status import bundle_of


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "list", help="list the owners on the cluster, what each has installed and, with --upgrades, what "
                     "publish --package would upgrade it to",
        description="One line per owner of ClusterObjectSets: the package and version installed (the newest "
                    "Succeeded revision that is not archived, as OLM v1 reads it), the latest revision and its "
                    "state, and where its bundle was resolved from (the catalog, channels and range publish "
                    "--package recorded, or 'by path'). --upgrades resolves each owner that records a catalog, "
                    "as the next publish --package would, and says the bundle it would install: 'up to date', "
                    "'published in REVISION' (a newer revision carries it already: rolling out, or stuck), or the "
                    "version waiting; exit 1 when one cannot be resolved (why is said on stderr).")
    parser.add_argument("--upgrades", action="store_true",
                        help="also resolve each owner that records a catalog (reading each catalog once)")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format")
    add_namespace_argument(parser, ignored=True)
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


@dataclass(slots=True)
class Row:
    """One owner."""

    owner: str
    revisions: list[Obj]
    installed: InstalledRevision | None
    source: CatalogSource | None
    source_problem: str | None = None
    # name, version, image of what publish --package would install (and clusterCatalog: the ClusterCatalog's name)
    upgrade: dict[str, str] | None = None
    upgrade_problem: str | None = None
    # what a ClusterExtension's Deprecated conditions would say (the package, the channels asked for, the installed
    # bundle), from the catalog the upgrade resolves from
    deprecations: tuple[str, ...] = ()

    @property
    def latest(self) -> Obj:
        return self.revisions[-1]

    @property
    def installed_package(self) -> str:
        """The package of the installed revision (which may not be the latest's, when an owner changed package)."""
        if self.installed is None:
            return ""
        return next((bundle_of(c)[0] for c in self.revisions if c["metadata"]["name"] == self.installed.revision), "")

    @property
    def up_to_date(self) -> bool:
        """What publish --package would pick is what is installed."""
        return (self.upgrade is not None and self.installed is not None
                and self.upgrade["name"] == self.installed.bundle.name)

    @property
    def published(self) -> str | None:
        """The newer revision that already carries what publish --package would pick (rolling out, or stuck): the
        next publish --package would change nothing, so no upgrade is waiting."""
        if self.upgrade is None or self.up_to_date:
            return None
        latest = self.latest
        carried = ((latest.get("metadata") or {}).get("annotations") or {}).get(api.ANNOTATION_BUNDLE_NAME)
        if carried == self.upgrade["name"] and (self.installed is None
                                                or self.installed.revision != latest["metadata"]["name"]):
            return str(latest["metadata"]["name"])
        return None

    def to_json(self) -> dict[str, Any]:
        latest = self.latest
        package, version = bundle_of(latest)
        return {
            "owner": self.owner,
            "package": package or None,
            "installed": None if self.installed is None else {
                "package": self.installed_package or None, "name": self.installed.bundle.name,
                "version": self.installed.bundle.version, "revision": self.installed.revision},
            "latest": {"name": latest["metadata"]["name"], "revision": revision_of(latest), "version": version or None,
                       "lifecycleState": (latest.get("spec") or {}).get("lifecycleState", ""),
                       "state": _state(latest)},
            "source": None if self.source is None else self.source.to_json(),
            **({"sourceProblem": self.source_problem} if self.source_problem else {}),
            **({"upgrade": self.upgrade, "upToDate": self.up_to_date, "publishedIn": self.published}
               if self.upgrade is not None else {}),
            **({"upgradeProblem": self.upgrade_problem} if self.upgrade_problem else {}),
            **({"deprecations": list(self.deprecations)} if self.upgrade is not None else {}),
        }


def _state(cos: Obj) -> str:
    """The Progressing reason (what history shows), Pending before the reconciler has said anything."""
    return str(conditions.condition(cos, conditions.PROGRESSING).get("reason") or "Pending")


def owners(cluster: Cluster) -> tuple[dict[str, list[Obj]], list[str]]:
    """Every owner's revisions (by the owner-name label), oldest first, owners sorted by name; and the
    ClusterObjectSets without the label (made by hand, belonging to no owner)."""
    grouped: dict[str, list[Obj]] = {}
    unowned: list[str] = []
    for cos in cluster.list(api.API_VERSION, api.KIND):
        owner = ((cos.get("metadata") or {}).get("labels") or {}).get(api.LABEL_OWNER_NAME)
        if isinstance(owner, str) and owner:
            grouped.setdefault(owner, []).append(cos)
        else:
            unowned.append(str(cos["metadata"]["name"]))
    return ({owner: sorted(revs, key=lambda c: (revision_of(c), c["metadata"]["name"]))
             for owner, revs in sorted(grouped.items())}, sorted(unowned))


def rows_of(grouped: dict[str, list[Obj]]) -> list[Row]:
    rows = []
    for owner, revisions in grouped.items():
        try:
            source, problem = recorded_source(revisions[-1]), None
        except BundleError as exc:   # a record cosctl did not write: said on its line, the others still listed
            source, problem = None, str(exc)
        rows.append(Row(owner, revisions, installed_bundle(revisions), source, problem))
    return rows


def check_upgrades(rows: list[Row], read: Callable[[str, set[str]], tuple[SourceCatalog, ...]]) -> None:
    """What the next ``publish --package`` would pick for each row that records a source: resolved as it resolves,
    over the installed bundle, with the recorded bounds. ``read(catalog, packages)`` reads a catalog, keeping the
    packages of every owner that records it: once, however many owners do."""
    wanted: dict[str, set[str]] = {}
    for row in rows:
        if row.source is not None:
            wanted.setdefault(row.source.catalog, set()).add(row.source.package)
    catalogs: dict[str, tuple[SourceCatalog, ...] | BundleError] = {}
    for row in rows:
        if row.source is None:
            continue
        if row.source.catalog not in catalogs:
            try:
                catalogs[row.source.catalog] = read(row.source.catalog, wanted[row.source.catalog])
            except BundleError as exc:   # said on the line of every owner that records it
                catalogs[row.source.catalog] = exc
        catalog = catalogs[row.source.catalog]
        try:
            if isinstance(catalog, BundleError):
                raise catalog
            choice = choose_source(row.source.package, catalog=None, channels=None, version=None, latest=row.latest)
            chosen, resolution = resolve_source(catalog, choice, row.installed)
        except BundleError as exc:
            row.upgrade_problem = "; ".join([str(exc), *exc.hints])
            continue
        row.upgrade = {"name": resolution.bundle.name, "version": str(resolution.version),
                       "image": resolution.bundle.image,
                       **({"clusterCatalog": chosen.name} if chosen.name is not None else {})}
        installed = row.installed.bundle.name if row.installed is not None else ""
        row.deprecations = tuple(deprecations(resolution.package, choice.source.channels, installed).messages())


def _main(args: argparse.Namespace) -> int:
    return run("list", lambda: _list(args))


def _list(args: argparse.Namespace) -> int:
    cluster = args.connect(args)
    grouped, unowned = owners(cluster)
    rows = rows_of(grouped)
    if args.upgrades:
        check_upgrades(rows, lambda catalog, packages: read_catalogs(catalog, packages, "list", lambda: cluster,
                                                                           said_as=f"catalog {catalog}"))
    if args.output == "json":
        print(json.dumps([row.to_json() for row in rows], indent=2))
    else:
        _print(rows, upgrades=args.upgrades)
    if unowned:
        shown = ", ".join(unowned[:5]) + (", ..." if len(unowned) > 5 else "")
        print(f"cosctl list: {len(unowned)} ClusterObjectSet(s) without the label {api.LABEL_OWNER_NAME} belong to "
              f"no owner and are not listed: {shown}", file=sys.stderr)
    elif not rows:
        print("cosctl list: no ClusterObjectSets on the cluster", file=sys.stderr)
    for row in rows:   # the reasons, too long for the table's column (and with JSON too, for a pipeline's log)
        if problem := row.source_problem or (row.upgrade_problem if args.upgrades else None):
            print(f"cosctl list: {row.owner}: {problem}", file=sys.stderr)
        warn_deprecations(row, "list")
    failed = any(row.upgrade_problem or row.source_problem for row in rows) if args.upgrades else False
    return EXIT_FAILED if failed else EXIT_OK


def warn_deprecations(row: Row, command: str) -> None:
    """What the catalog deprecates of the owner's package, channels and installed bundle: a warning each, as OLM v1
    sets a ClusterExtension's Deprecated conditions (nothing is refused)."""
    for message in row.deprecations:
        print(f"cosctl {command}: warning: {row.owner}: deprecated: {message}", file=sys.stderr)


def _print(rows: list[Row], *, upgrades: bool) -> None:
    header = ["OWNER", "PACKAGE", "INSTALLED", "LATEST", "STATE", "SOURCE"] + (["UPGRADE"] if upgrades else [])
    table = [header]
    for row in rows:
        package, _ = bundle_of(row.latest)
        cells = [row.owner, package or "-", _installed_text(row, package), row.latest["metadata"]["name"],
                 _state(row.latest), _source_text(row)]
        if upgrades:
            cells.append(_upgrade_text(row))
        table.append(cells)
    print_table(table)


def _installed_text(row: Row, package: str) -> str:
    """The version installed; its revision when that is not the latest, its package when not the latest's."""
    if row.installed is None:
        return "-"
    text = row.installed.bundle.version or row.installed.bundle.name
    if row.installed_package and row.installed_package != package:
        text = f"{row.installed_package} {text}"
    if row.installed.revision != row.latest["metadata"]["name"]:
        text += f" ({row.installed.revision})"
    return text


def _source_text(row: Row) -> str:
    if row.source_problem:
        return "unreadable record"
    if row.source is None:
        return "by path"
    bounds = [f"channel {c}" for c in row.source.channels] + ([f"version {row.source.version}"]
                                                               if row.source.version else [])
    return row.source.catalog + (f" ({', '.join(bounds)})" if bounds else "")


def _upgrade_text(row: Row) -> str:
    if row.source_problem:
        return "cannot tell (below)"
    if row.upgrade_problem:
        return "cannot resolve (below)"
    if row.upgrade is None:
        return "-"
    if row.up_to_date:
        return "up to date"
    if (published := row.published) is not None:
        return f"published in {published}"
    return f"{row.upgrade['version']} ({row.upgrade['name']})"
