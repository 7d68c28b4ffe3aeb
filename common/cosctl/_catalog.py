"""``--catalog``, ``--channel`` and ``--upgrade-constraint-policy``: what publish and diff share to hold a bundle to
a File-Based Catalog's upgrade edges (:mod:`common.bundle.catalogcheck`). Not a subcommand itself."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from common.bundle.catalogcheck import CatalogVerdict, check_bundle, installed_bundle
from common.bundle.registryv1.catalog import load_catalog
from common.bundle.registryv1.model import RegistryV1
from common.bundle.registryv1.resolve import POLICY_CATALOG_PROVIDED, UPGRADE_CONSTRAINT_POLICIES
from common.contract.objects import Obj
from common.cosctl._producer import MissingArgument


def add_catalog_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "catalog", "Hold a registry+v1 bundle to a File-Based Catalog, as OLM v1 does when it resolves a "
        "ClusterExtension pinned to the bundle's version: the bundle must be the catalog's, in the channels given, "
        "and an upgrade its channels allow from the installed bundle (replaces, skips, skipRange).")
    group.add_argument("--catalog", default=None, metavar="DIR|FILE",
                       help="a File-Based Catalog: an operator index image's /configs directory, or what `opm "
                            "render` wrote (JSON or YAML files)")
    group.add_argument("--channel", dest="channels", action="append", default=None, metavar="NAME",
                       help="a channel the bundle must be in, as a ClusterExtension's spec.source.catalog.channels "
                            "(repeatable; default: any)")
    group.add_argument("--upgrade-constraint-policy", choices=UPGRADE_CONSTRAINT_POLICIES,
                       default=POLICY_CATALOG_PROVIDED,
                       help="CatalogProvided (default): only an upgrade the catalog allows from the installed bundle; "
                            "SelfCertified: any bundle of the package, downgrades included (OLM v1's "
                            "spec.source.catalog.upgradeConstraintPolicy)")


def check_catalog_arguments(args: argparse.Namespace, bundle: RegistryV1 | None) -> None:
    """Catalog options given for plain manifests are a usage error: said before the cluster is contacted."""
    if bundle is None and args.catalog is not None:
        raise MissingArgument("--catalog: only for a registry+v1 bundle input")
    if args.catalog is None and (args.channels or args.upgrade_constraint_policy != POLICY_CATALOG_PROVIDED):
        raise MissingArgument("--channel and --upgrade-constraint-policy need --catalog")


def catalog_verdict(args: argparse.Namespace, bundle: RegistryV1 | None,
                    revisions: Sequence[Obj]) -> CatalogVerdict | None:
    """What the catalog says about installing ``bundle`` over the owner's ``revisions`` (oldest first), or None
    without ``--catalog``. An unreadable catalog raises :class:`~common.bundle.registryv1.catalog.CatalogError`."""
    if args.catalog is None or bundle is None:
        return None
    return check_bundle(load_catalog(args.catalog), bundle, channels=tuple(args.channels or ()),
                        policy=args.upgrade_constraint_policy, installed=installed_bundle(revisions))


def warn_deprecated(verdict: CatalogVerdict | None, command: str) -> None:
    for message in verdict.deprecated if verdict is not None else ():
        print(f"cosctl {command}: warning: deprecated: {message}", file=sys.stderr)
