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
from common.bundle.catalogsource import CatalogSource, choose_source, recorded_source, resolve_source
from common.bundle.publish import revision_of
from common.bundle.registryv1.catalog import Catalog, load_catalog
from common.bundle.registryv1.model import BundleError
from common.cluster.interface import Cluster
from common.contract import api, conditions
from common.contract.objects import Obj
from common.cosctl._producer import EXIT_FAILED, EXIT_OK, add_cluster_arguments, add_namespace_argument, reporter, run
from common.cosctl.status import bundle_of


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "list", help="list the owners on the cluster, what each has installed and, with --upgrades, what "
                     "publish --package would upgrade it to",
        description="One line per owner of ClusterObjectSets: the package and version installed (the newest "
                    "Succeeded revision that is not archived, as OLM v1 reads it), the latest revision and its "
                    "state, and where its bundle was resolved from (the catalog, channels and range publish "
                    "--package recorded, or 'by path'). --upgrades resolves each owner that records a catalog, "
                    "as the next publish --package would, and says the bundle it would install; exit 1 when one "
                    "cannot be resolved (its line says why).")
    parser.add_argument("--upgrades", action="store_true",
                        help="also resolve each owner that records a catalog (reading each catalog once)")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format")
    add_namespace_argument(parser)  # unused (revisions are cluster-scoped), accepted as kubectl's -n habit
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
    upgrade: dict[str, str] | None = None   # name, version, image of what publish --package would install
    upgrade_problem: str | None = None

    @property
    def latest(self) -> Obj:
        return self.revisions[-1]

    def to_json(self) -> dict[str, Any]:
        latest = self.latest
        package, version = bundle_of(latest)
        return {
            "owner": self.owner,
            "package": package or None,
            "installed": None if self.installed is None else {
                "name": self.installed.bundle.name, "version": self.installed.bundle.version,
                "revision": self.installed.revision},
            "latest": {"name": latest["metadata"]["name"], "revision": revision_of(latest), "version": version or None,
                       "lifecycleState": (latest.get("spec") or {}).get("lifecycleState", ""),
                       "state": _state(latest)},
            "source": None if self.source is None else {
                "catalog": self.source.catalog, "packageName": self.source.package,
                "channels": list(self.source.channels), "version": self.source.version},
            **({"sourceProblem": self.source_problem} if self.source_problem else {}),
            **({"upgrade": self.upgrade, "upToDate": self.installed is not None
                and self.upgrade["name"] == self.installed.bundle.name} if self.upgrade is not None else {}),
            **({"upgradeProblem": self.upgrade_problem} if self.upgrade_problem else {}),
        }


def _state(cos: Obj) -> str:
    """The Progressing reason (what history shows), Pending before the reconciler has said anything."""
    return str(conditions.condition(cos, conditions.PROGRESSING).get("reason") or "Pending")


def owners(cluster: Cluster) -> dict[str, list[Obj]]:
    """Every owner's revisions (by the owner-name label), oldest first; owners sorted by name."""
    grouped: dict[str, list[Obj]] = {}
    for cos in cluster.list(api.API_VERSION, api.KIND):
        owner = ((cos.get("metadata") or {}).get("labels") or {}).get(api.LABEL_OWNER_NAME)
        if isinstance(owner, str) and owner:
            grouped.setdefault(owner, []).append(cos)
    return {owner: sorted(revs, key=lambda c: (revision_of(c), c["metadata"]["name"]))
            for owner, revs in sorted(grouped.items())}


def rows_of(grouped: dict[str, list[Obj]]) -> list[Row]:
    rows = []
    for owner, revisions in grouped.items():
        try:
            source, problem = recorded_source(revisions[-1]), None
        except BundleError as exc:   # a record cosctl did not write: said on its line, the others still listed
            source, problem = None, str(exc)
        rows.append(Row(owner, revisions, installed_bundle(revisions), source, problem))
    return rows


def check_upgrades(rows: list[Row], read: Callable[[str, set[str]], Catalog]) -> None:
    """What the next ``publish --package`` would pick for each row that records a source: resolved as it resolves,
    over the installed bundle, with the recorded bounds. ``read(catalog, packages)`` reads a catalog, keeping the
    packages of every owner that records it: once, however many owners do."""
    wanted: dict[str, set[str]] = {}
    for row in rows:
        if row.source is not None:
            wanted.setdefault(row.source.catalog, set()).add(row.source.package)
    catalogs: dict[str, Catalog | BundleError] = {}
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
            resolution = resolve_source(catalog, choice, row.installed)
        except BundleError as exc:
            row.upgrade_problem = "; ".join([str(exc), *exc.hints])
            continue
        row.upgrade = {"name": resolution.bundle.name, "version": str(resolution.version),
                       "image": resolution.bundle.image}


def _main(args: argparse.Namespace) -> int:
    return run("list", lambda: _list(args))


def _list(args: argparse.Namespace) -> int:
    rows = rows_of(owners(args.connect(args)))
    if args.upgrades:
        check_upgrades(rows, lambda catalog, packages: load_catalog(catalog, package=packages,
                                                                    report=reporter("list")))
    if args.output == "json":
        print(json.dumps([row.to_json() for row in rows], indent=2))
    else:
        _print(rows, upgrades=args.upgrades)
    if not rows:
        print("cosctl list: no ClusterObjectSets on the cluster", file=sys.stderr)
    failed = any(row.upgrade_problem or row.source_problem for row in rows) if args.upgrades else False
    return EXIT_FAILED if failed else EXIT_OK


def _print(rows: list[Row], *, upgrades: bool) -> None:
    header = ["OWNER", "PACKAGE", "INSTALLED", "LATEST", "STATE", "SOURCE"] + (["UPGRADE"] if upgrades else [])
    table = [header]
    for row in rows:
        package, _ = bundle_of(row.latest)
        installed = row.installed.bundle.version or row.installed.bundle.name if row.installed else "-"
        cells = [row.owner, package or "-", installed, row.latest["metadata"]["name"], _state(row.latest),
                 _source_text(row)]
        if upgrades:
            cells.append(_upgrade_text(row))
        table.append(cells)
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


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
        return f"cannot tell: {row.source_problem}"
    if row.upgrade_problem:
        return f"cannot resolve: {row.upgrade_problem}"
    if row.upgrade is None:
        return "-"
    if row.installed is not None and row.upgrade["name"] == row.installed.bundle.name:
        return "up to date"
    return f"{row.upgrade['version']} ({row.upgrade['name']})"
