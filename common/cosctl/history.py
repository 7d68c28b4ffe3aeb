"""``cosctl history``: an owner's revisions, their states and when they last changed.

"Changed" is the newest ``lastTransitionTime`` among the revision's conditions (the reconciler only moves it
when a condition's status flips), so the list reads like a rollout log: created, rolled out, archived.
"""

from __future__ import annotations

import argparse
import json
import sys

from common.bundle.publish import owner_revisions, revision_of
from common.contract import conditions
from common.contract.objects import Obj
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
        "history", help="list an owner's revisions with their states and when they changed",
        description="List every revision of an owner, oldest first: lifecycle state, rollout state "
                    "(the Progressing reason), creation time and the time of the last condition change.")
    parser.add_argument("--owner", required=True, help="owner name")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="output format")
    add_namespace_argument(parser, ignored=True)
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def entry(cos: Obj) -> Obj:
    """One row of the history."""
    changed = max((c.get("lastTransitionTime") or "" for c in conditions.of(cos)), default="")
    progressing = conditions.condition(cos, conditions.PROGRESSING)
    return {
        "revision": revision_of(cos),
        "name": cos["metadata"]["name"],
        "lifecycleState": (cos.get("spec") or {}).get("lifecycleState", ""),
        "state": progressing.get("reason") or "Pending",
        "succeeded": conditions.succeeded(cos),
        "package": bundle_of(cos)[0],
        "bundleVersion": bundle_of(cos)[1],
        "created": cos["metadata"].get("creationTimestamp", ""),
        "changed": changed,
    }


def _main(args: argparse.Namespace) -> int:
    return run("history", lambda: _history(args))


def _history(args: argparse.Namespace) -> int:
    revisions = owner_revisions(args.connect(args), args.owner)
    if not revisions:
        print(f"cosctl history: owner {args.owner} has no revisions", file=sys.stderr)
        return EXIT_FAILED
    rows = [entry(c) for c in revisions]
    if args.output == "json":
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    header = ("REVISION", "NAME", "LIFECYCLE", "STATE", "ROLLED OUT", "PACKAGE", "VERSION", "CREATED", "CHANGED")
    table = [header] + [(str(r["revision"]), r["name"], r["lifecycleState"], r["state"],
                         "yes" if r["succeeded"] else "no", r["package"] or "-", r["bundleVersion"] or "-",
                         r["created"] or "-", r["changed"] or "-") for r in rows]
    print_table(table)
    return EXIT_OK
