"""``cosctl rollback``: publish an earlier revision's content as the owner's next revision.

History stays append-only: rolling back to revision N creates revision latest+1 holding N's content, through
the same crash-safe publish path, and the reconciler hands over and archives the latest revision as it does
for any upgrade. By default N is the newest earlier revision that succeeded.
"""

from __future__ import annotations

import argparse

from common.bundle.publish import revision_of
from common.bundle.rollback import rollback
from common.contract.objects import Obj
from common.cosctl._producer import (
    EXIT_OK,
    Progress,
    add_cluster_arguments,
    add_crd_upgrade_safety_argument,
    add_namespace_argument,
    add_preflight_permissions_argument,
    add_service_account_argument,
    run,
    service_account_in,
)

EXAMPLE = """\
example (revision 2 is the latest; revision 1 is the previous one that succeeded):
  $ cosctl rollback --owner shop
  rolling back owner shop to revision 1 (shop-1)
  create Secret olmv1-system/shop-3-fb76d4f2c285c8f8: 5 object(s), 561 bytes
  create ClusterObjectSet shop-3: revision 3, 4 phase(s), 5 object(s)
  patch Secret olmv1-system/shop-3-fb76d4f2c285c8f8: ownerReference to ClusterObjectSet shop-3
  ClusterObjectSet shop-3 (revision 3) created
  follow it: cosctl status shop-3 --watch"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "rollback", help="publish an earlier revision's content as the next revision",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        description="Publish revision latest+1 whose content is that of revision N (default: the newest "
                    "earlier revision that succeeded), crash-safely like publish; the reconciler hands over "
                    "and archives the latest revision. Fails, naming what is missing, when revision N was "
                    "deleted by retention or its Secrets are gone, and, as publish does, when the older "
                    "CustomResourceDefinitions would break custom resources stored since (--crd-upgrade-safety), "
                    "or when the ServiceAccount the new revision names may not write it (--preflight-permissions).")
    parser.add_argument("--owner", required=True, help="owner name: revisions are named <owner>-<N>")
    parser.add_argument("--to-revision", type=int, default=None, metavar="N",
                        help="the revision whose content to restore (default: the previous one that succeeded)")
    add_service_account_argument(parser)
    add_crd_upgrade_safety_argument(parser)
    add_preflight_permissions_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
    add_namespace_argument(parser)
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    progress = Progress(args.dry_run)
    return run("rollback", lambda: _rollback(args, progress), progress=progress)


def _rollback(args: argparse.Namespace, progress: Progress) -> int:
    service_account = service_account_in(args.service_account, None)  # said before connecting

    def announce(target: Obj) -> None:
        print(f"rolling back owner {args.owner} to revision {revision_of(target)} ({target['metadata']['name']})",
              flush=True)

    _target, result = rollback(args.connect(args), owner=args.owner, to_revision=args.to_revision,
                               system_namespace=args.system_namespace, service_account=service_account,
                               dry_run=args.dry_run, announce=announce, report=progress,
                               crd_upgrade_safety=args.crd_upgrade_safety,
                               preflight_permissions=args.preflight_permissions)
    print(result.summary())
    if result.outcome == "created" and not args.dry_run:
        print(f"follow it: cosctl status {result.name} --watch")
    return EXIT_OK
