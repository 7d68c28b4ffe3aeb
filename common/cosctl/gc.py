"""``cosctl gc``: recovery and retention, for one owner or for all, without publishing.

Deletes object-data Secrets left by an interrupted publish (their ClusterObjectSet was never created, or does
not refer to them), adds the ownerReference to Secrets an existing ClusterObjectSet refers to that lack it, and
deletes Archived revisions beyond the newest five. Without ``--owner`` it covers every object-data Secret of the
namespace: ``cosctl pack`` output created with ``kubectl`` has no owner label, and gets its ownerReference (so
deleting the ClusterObjectSet removes its Secrets) only this way. Without ``--owner`` no Secret is deleted: one
whose ClusterObjectSet does not exist may be such output while ``kubectl create`` is applying it (Secrets first).
"""

from __future__ import annotations

import argparse

from common.bundle.publish import RETAIN_ARCHIVED, gc
from common.cosctl._producer import EXIT_OK, Progress, add_cluster_arguments, add_namespace_argument, run


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "gc", help="clean up after interrupted publishes and trim archived revisions",
        description="Delete orphaned object-data Secrets, add missing ownerReferences, and delete archived "
                    f"revisions beyond the newest {RETAIN_ARCHIVED}. Active revisions are never deleted.")
    parser.add_argument("--owner", default=None,
                        help="only this owner's Secrets and revisions (default: every object-data Secret of the "
                             "namespace, including those of `cosctl pack` output created with kubectl, gets the "
                             "ownerReference to the ClusterObjectSet that uses it, but none is deleted; and every "
                             "owner's archived revisions are trimmed)")
    add_namespace_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="print what would be done; write nothing")
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    progress = Progress(args.dry_run)
    return run("gc", lambda: _gc(args, progress), progress=progress)


def _gc(args: argparse.Namespace, progress: Progress) -> int:
    actions = gc(args.connect(args), owner=args.owner, namespace=args.system_namespace, dry_run=args.dry_run,
                 report=progress)
    if not actions:
        print("nothing to clean up")
    return EXIT_OK
