"""``cosctl upgrade``: for each owner resolved from a catalog, publish the upgrade the catalog offers, as OLM v1
upgrades a ClusterExtension by itself when its catalog changes.

Why: ``cosctl list --upgrades`` says which owners have an upgrade waiting, and ``publish --package`` makes one; an
admin who wants operators to follow their catalogs (by hand, or from the CronJob of
``deploy/components/auto-upgrade``) should not need a shell pipeline between the two. Each owner is resolved as
``list --upgrades`` resolves it (each catalog read once), and only an owner with an upgrade waiting is published,
exactly as ``publish --package PACKAGE --owner OWNER`` publishes it (recovery first, the catalog's verdict, the CRD
upgrade safety and permission preflights, the recorded bounds and bundle options kept). An upgrade changes the
bundle only: the latest revision's owner kind, collision protection, progress deadline, progression probes and
Secrets namespace are carried to the next. An owner is left alone while a revision of it has not succeeded (OLM v1
resolves nothing while a revision rolls out), while it is being deleted, and when its latest revision is archived:
unattended, an upgrade never decides over a rollout, a rollback or an uninstall on its way. One owner failing does
not stop the others; the exit code says it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import dataclass
from typing import Any

from common.bundle.catalogsource import SourceCatalog
from common.bundle.publish import Result
from common.cluster.interface import Cluster
from common.contract import api, conditions
from common.contract.objects import Obj
from common.cosctl import publish
from common.cosctl._catalog import read_catalogs
from common.cosctl._producer import (
    EXIT_FAILED,
    EXIT_OK,
    MissingArgument,
    Progress,
    add_cluster_arguments,
    print_table,
    run,
)
from common.cosctl.owners import Row, check_upgrades, owners, rows_of, warn_deprecations

# What happened to each owner: the RESULT column, and "result" in JSON.
CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"   # published (Result.outcome)
UP_TO_DATE, ROLLING_OUT, BY_PATH, FAILED = "upToDate", "rollingOut", "byPath", "failed"
DELETING, ARCHIVED = "deleting", "archived"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "upgrade", help="publish, for each owner resolved from a catalog, the upgrade its catalog offers",
        description="For each owner named (or every owner with --all) whose latest revision records the catalog "
                    "publish --package resolved it from: resolve it as cosctl list --upgrades does (each catalog "
                    "read once) and, when an upgrade is waiting, publish it as 'cosctl publish --package PACKAGE "
                    "--owner OWNER' does, with the recorded catalog, channels and range and the bundle options "
                    "kept. The latest revision's owner kind, collision protection, progress deadline, "
                    "progression probes and Secrets namespace are carried: an upgrade changes the bundle only. An "
                    "owner is left alone when it is up to date, while a revision of it has not succeeded (rolling "
                    "out, or stuck: OLM v1 resolves nothing then), while it is being deleted, and when its latest "
                    "revision is archived; with --all, so is an owner published by path. One owner failing does not "
                    "stop the others: the exit code is 1 when one failed (why is said on stderr), 0 otherwise.")
    parser.add_argument("owners", nargs="*", metavar="OWNER", help="an owner to upgrade (repeatable)")
    parser.add_argument("--all", action="store_true",
                        help="every owner on the cluster whose latest revision records a catalog")
    parser.add_argument("--dry-run", action="store_true", help="resolve and print each publish's plan; write nothing")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text",
                        help="format of the summary on stdout (with json, each publish's lines go to stderr)")
    parser.add_argument("--namespace", "-n", dest="namespace", default=None, metavar="NS",
                        help="accepted as kubectl's -n habit, and ignored: each revision's Secrets go to the namespace "
                             "of the latest revision's, its bundle to the namespace it was installed in")
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


@dataclass(slots=True)
class Outcome:
    """What ``upgrade`` did for one owner."""

    row: Row
    result: str
    revision: str | None = None   # the revision published, or the one the owner was left alone for
    problem: str | None = None

    def to_json(self, dry_run: bool) -> dict[str, Any]:
        row = self.row
        return {
            "owner": row.owner,
            "package": row.source.package if row.source is not None else None,
            "installed": None if row.installed is None else {
                "name": row.installed.bundle.name, "version": row.installed.bundle.version,
                "revision": row.installed.revision},
            "upgrade": row.upgrade,
            **({"deprecations": list(row.deprecations)} if row.upgrade is not None else {}),
            "result": self.result,
            "revision": self.revision,
            "dryRun": dry_run,
            **({"problem": self.problem} if self.problem else {}),
        }


def _main(args: argparse.Namespace) -> int:
    return run("upgrade", lambda: _upgrade(args))


def _upgrade(args: argparse.Namespace) -> int:
    if bool(args.owners) == bool(args.all):
        raise MissingArgument("name the owners to upgrade, or give --all for every owner resolved from a catalog"
                              if not args.owners else "--all and OWNER: give one or the other")
    cluster = args.connect(args)
    grouped, _ = owners(cluster)
    names = list(dict.fromkeys(args.owners)) if args.owners else list(grouped)   # each once, in the order given
    done = {name: _failed(Row(name, [], None, None), f"no ClusterObjectSets of owner {name} on the cluster (cosctl "
                                                     "list shows the owners)")
            for name in names if name not in grouped}
    rows = rows_of({name: grouped[name] for name in names if name in grouped})
    catalogs: dict[str, tuple[SourceCatalog, ...]] = {}

    def read(catalog: str, packages: set[str]) -> tuple[SourceCatalog, ...]:
        catalogs[catalog] = read_catalogs(catalog, packages, "upgrade", lambda: cluster, said_as=f"catalog {catalog}")
        return catalogs[catalog]

    check_upgrades(rows, read)   # a catalog that cannot be read is the problem of each owner recording it
    for row in rows:
        warn_deprecations(row, "upgrade")
        done[row.owner] = _upgrade_one(args, cluster, row, catalogs)
    outcomes = [done[name] for name in names]
    if not grouped and args.all:
        print("cosctl upgrade: no ClusterObjectSets on the cluster", file=sys.stderr)
    if args.output == "json":
        print(json.dumps([outcome.to_json(args.dry_run) for outcome in outcomes], indent=2))
    else:
        _print(outcomes, dry_run=args.dry_run)
    return EXIT_FAILED if any(outcome.result == FAILED for outcome in outcomes) else EXIT_OK


def _failed(row: Row, problem: str) -> Outcome:
    """A failure said at once on stderr (a publish's own lines come before it), and in the summary."""
    print(f"cosctl upgrade: {row.owner}: {problem}", file=sys.stderr, flush=True)
    return Outcome(row, FAILED, problem=problem)


def _upgrade_one(args: argparse.Namespace, cluster: Cluster, row: Row,
                 catalogs: dict[str, tuple[SourceCatalog, ...]]) -> Outcome:
    """Publish the owner's waiting upgrade, if it has one."""
    if row.source_problem:
        return _failed(row, row.source_problem)
    if row.source is None:
        if args.all:
            return Outcome(row, BY_PATH)
        return _failed(row, f"its latest revision {row.latest['metadata']['name']} records no catalog (published by "
                            "path): upgrade it with cosctl publish, or publish it once with --package NAME --catalog "
                            "CATALOG to have its upgrades resolved")
    if deleted := [c["metadata"]["name"] for c in row.revisions if c["metadata"].get("deletionTimestamp")]:
        return Outcome(row, DELETING, revision=str(deleted[-1]))   # being uninstalled: never installed again
    if (row.latest.get("spec") or {}).get("lifecycleState") == api.LIFECYCLE_ARCHIVED:
        return Outcome(row, ARCHIVED, revision=str(row.latest["metadata"]["name"]))   # nothing active to upgrade
    if (pending := _not_succeeded(row)) is not None:
        return Outcome(row, ROLLING_OUT, revision=pending)
    if row.upgrade_problem:
        return _failed(row, row.upgrade_problem)
    if row.up_to_date:
        return Outcome(row, UP_TO_DATE, revision=row.installed.revision if row.installed else None)
    assert row.upgrade is not None   # a row with a source and no problem was resolved
    installed = row.installed
    what = f"{row.upgrade['version']} ({row.upgrade['name']})"
    out = sys.stderr if args.output == "json" else sys.stdout
    print(f"{row.owner}: upgrading {installed.bundle.version or installed.bundle.name} "
          f"({installed.bundle.name}) to {what}" if installed is not None else f"{row.owner}: installing {what}",
          file=out, flush=True)
    published_result: list[Result] = []
    progress = Progress(args.dry_run)

    def body() -> int:
        with contextlib.redirect_stdout(out):
            result = publish.publish_package(_publish_arguments(args, cluster, row), progress,
                                             read=lambda catalog, package: catalogs[catalog],
                                             probes=(row.latest.get("spec") or {}).get("progressionProbes"),
                                             command="upgrade")
            print(result.summary())
        published_result.append(result)
        return EXIT_OK

    said: list[str] = []

    def say(line: str) -> None:   # the failure, on stderr as it happens, and in the summary's problem
        print(f"cosctl upgrade: {row.owner}: {line}", file=sys.stderr, flush=True)
        said.append(line)

    code = run("upgrade", body, progress=progress, say=say)
    if code != EXIT_OK or not published_result:
        return Outcome(row, FAILED, problem="; ".join(said) or f"publish failed (exit {code})")
    result = published_result[0]
    return Outcome(row, result.outcome, revision=result.name)


def _not_succeeded(row: Row) -> str | None:
    """The owner's newest revision that is not archived, when it has not succeeded (rolling out, or stuck): OLM v1
    resolves nothing while a revision rolls out, and an upgrade published over it (or over a first install that
    never succeeded, or a rollback on its way) would decide for the admin what only they can."""
    active = [c for c in row.revisions if (c.get("spec") or {}).get("lifecycleState") != api.LIFECYCLE_ARCHIVED]
    if not active or conditions.succeeded(active[-1]):
        return None
    return str(active[-1]["metadata"]["name"])


def _publish_arguments(args: argparse.Namespace, cluster: Cluster, row: Row) -> argparse.Namespace:
    """The arguments of ``cosctl publish --package PACKAGE --owner OWNER`` as publish's own parser makes them (so
    every default is publish's), with what the latest revision carries that publish would not keep by itself
    (publish keeps the owner kind, the ServiceAccount and the bundle options), and the connection already open."""
    assert row.source is not None
    parser = argparse.ArgumentParser(prog="cosctl upgrade", add_help=False)
    publish.register(parser.add_subparsers())
    spec = row.latest.get("spec") or {}
    # NAME=VALUE: a value starting with "-" (a package name in a record) is a value, not an option
    argv = ["publish", f"--package={row.source.package}", f"--owner={row.owner}",
            f"--system-namespace={_secrets_namespace(row.latest)}"]
    if spec.get("collisionProtection") in api.COLLISION_PROTECTIONS:
        argv.append(f"--collision-protection={spec['collisionProtection']}")
    if isinstance(minutes := spec.get("progressDeadlineMinutes"), int) and not isinstance(minutes, bool):
        argv.append(f"--progress-deadline-minutes={minutes}")
    if args.dry_run:
        argv.append("--dry-run")
    parsed = parser.parse_args(argv)
    parsed.connect = lambda _args: cluster
    return parsed


def _secrets_namespace(cos: Obj) -> str:
    """Where the latest revision's object-data Secrets are (the namespace of its first ref): the next revision's
    go there too, as ``publish --system-namespace`` put them; the default for a revision with none."""
    for phase in (cos.get("spec") or {}).get("phases") or []:
        for entry in phase.get("objects") or []:
            if isinstance(ref := entry.get("ref"), dict) and isinstance(ref.get("namespace"), str) and ref["namespace"]:
                return str(ref["namespace"])
    return api.DEFAULT_SYSTEM_NAMESPACE


def _print(outcomes: list[Outcome], *, dry_run: bool) -> None:
    table = [["OWNER", "PACKAGE", "INSTALLED", "UPGRADE", "RESULT"]]
    for outcome in outcomes:
        row = outcome.row
        table.append([row.owner, row.source.package if row.source is not None else "-",
                      (row.installed.bundle.version or row.installed.bundle.name) if row.installed else "-",
                      row.upgrade["version"] if row.upgrade is not None and not row.up_to_date else "-",
                      _result_text(outcome, dry_run)])
    print_table(table)


def _result_text(outcome: Outcome, dry_run: bool) -> str:
    would = "would be " if dry_run else ""
    return {
        CREATED: f"{outcome.revision} {would}created",
        UPDATED: f"{outcome.revision} {would}updated in place",
        UNCHANGED: f"unchanged ({outcome.revision})",
        UP_TO_DATE: "up to date",
        ROLLING_OUT: f"left alone: {outcome.revision} has not succeeded",
        DELETING: f"left alone: {outcome.revision} is being deleted",
        ARCHIVED: f"left alone: {outcome.revision} is archived",
        BY_PATH: "by path",
        FAILED: "failed (said on stderr)",
    }[outcome.result]
