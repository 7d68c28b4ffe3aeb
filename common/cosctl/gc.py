"""``cosctl gc``: recovery and retention for one owner, without publishing.

Deletes object-data Secrets left by an interrupted publish (their ClusterObjectSet was never created), adds
the ownerReference to Secrets of an existing ClusterObjectSet that lack it, and deletes the owner's Archived
revisions beyond the newest five.
"""

from __future__ import annotations

import argparse

from common.bundle.publish import RETAIN_ARCHIVED, gc
from common.cosctl._producer import EXIT_OK, add_cluster_arguments, add_namespace_argument, run


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "gc", help="clean up after interrupted publishes and trim archived revisions",
        description="Delete orphaned object-data Secrets, add missing ownerReferences, and delete archived "
                    f"revisions beyond the newest {RETAIN_ARCHIVED}. Active revisions are never deleted.")
    parser.add_argument("--owner", required=True, help="only this owner's Secrets and revisions")
    add_namespace_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="print what would be done; write nothing")
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    return run("gc", lambda: _gc(args))


def _gc(args: argparse.Namespace) -> int:
    actions = gc(args.connect(args), owner=args.owner, namespace=args.system_namespace, dry_run=args.dry_run)
    prefix = "would " if args.dry_run else ""
    for action in actions:
        print(f"{prefix}{action}")
    if not actions:
        print("nothing to clean up")
    return EXIT_OK
