"""``cosctl publish``: create the next revision of an owner's ClusterObjectSet on the cluster, crash-safely.

Recovery runs first (finishing or undoing an earlier interrupted publish), then the bundle is compared with the
owner's latest revision by content: unchanged content updates only mutable fields, changed content creates
revision N+1 (after retention trims archived revisions to the newest five). ``--dry-run`` prints the plan.
"""

from __future__ import annotations

import argparse

from common.bundle.publish import publish
from common.cosctl._producer import (
    EXIT_OK,
    add_bundle_arguments,
    add_cluster_arguments,
    add_service_account_argument,
    load_phases,
    load_probes,
    run,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "publish", help="create the next revision on the cluster (or update it in place when unchanged)",
        description="Publish manifests as revision N+1 of the owner's ClusterObjectSet (named <owner>-<N+1>), "
                    "crash-safely: Secrets, then the ClusterObjectSet, then ownerReferences. Unchanged content "
                    "creates nothing. Runs recovery and retention (newest 5 archived revisions are kept).")
    add_bundle_arguments(parser)
    parser.add_argument("--owner", required=True, help="owner name: revisions are named <owner>-<N>")
    add_service_account_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    return run("publish", lambda: _publish(args))


def _publish(args: argparse.Namespace) -> int:
    # every manifest problem is reported before the cluster is contacted
    phases = load_phases(args.paths, command="publish")
    cluster = args.connect(args)
    result = publish(cluster, phases, owner=args.owner, owner_kind=args.owner_kind,
                     system_namespace=args.system_namespace, collision_protection=args.collision_protection,
                     progress_deadline_minutes=args.progress_deadline_minutes,
                     bundle_version=args.bundle_version,
                     progression_probes=load_probes(args.progression_probes),
                     service_account=args.service_account, dry_run=args.dry_run)
    prefix = "would " if args.dry_run else ""
    for action in result.actions:
        print(f"{prefix}{action}")
    print(result.summary())
    return EXIT_OK
