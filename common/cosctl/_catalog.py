"""``--catalog``, ``--channel`` and ``--upgrade-constraint-policy``: what publish and diff share to hold a bundle to
a File-Based Catalog's upgrade edges (:mod:`common.bundle.catalogcheck`). Not a subcommand itself.

The catalog is read, and what does not depend on the cluster checked (the bundle listed, in the channels),
before the cluster is contacted; the upgrade edge from the installed bundle is checked once the owner's
revisions are read."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from common.bundle.catalogcheck import CatalogVerdict, check_bundle, installed_bundle
from common.bundle.registryv1.catalog import Catalog, load_catalog
from common.bundle.registryv1.model import RegistryV1
from common.bundle.registryv1.resolve import POLICY_CATALOG_PROVIDED, UPGRADE_CONSTRAINT_POLICIES
from common.contract.objects import Obj
from common.cosctl._producer import MissingArgument, reporter

CATALOG_HELP = ("a File-Based Catalog: a directory or file of JSON or YAML (an index image's /configs, or what `opm "
                "render` wrote), an OCI image layout of an index image (a directory or tar, as `skopeo copy "
                "docker://INDEX oci:DIR` writes it), or the index image itself, pulled: docker://REGISTRY/REPO[:TAG]"
                "[@DIGEST] (a ClusterCatalog's spec.source.image.ref)")


def add_catalog_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "catalog", "Hold a registry+v1 bundle to a File-Based Catalog, as OLM v1 does when it resolves a "
        "ClusterExtension pinned to the bundle's version: the bundle must be the catalog's, in the channels given, "
        "and an upgrade its channels allow from the installed bundle (replaces, skips, skipRange).")
    group.add_argument("--catalog", default=None, metavar="DIR|FILE", help=CATALOG_HELP)
    group.add_argument("--channel", dest="channels", action="append", default=None, metavar="NAME",
                       help="a channel the bundle must be in, as a ClusterExtension's spec.source.catalog.channels "
                            "(repeatable; default: any)")
    group.add_argument("--upgrade-constraint-policy", choices=UPGRADE_CONSTRAINT_POLICIES,
                       default=POLICY_CATALOG_PROVIDED,
                       help="CatalogProvided (default): only an upgrade the catalog allows from the installed bundle; "
                            "SelfCertified: any bundle of the package, downgrades included (OLM v1's "
                            "spec.source.catalog.upgradeConstraintPolicy)")


@dataclass(frozen=True, slots=True)
class CatalogRun:
    """A catalog read for one bundle, and the options to check it with."""

    catalog: Catalog
    bundle: RegistryV1
    channels: tuple[str, ...]
    policy: str

    def verdict(self, revisions: Sequence[Obj]) -> CatalogVerdict:
        """The whole check, over the owner's ``revisions`` (oldest first)."""
        return check_bundle(self.catalog, self.bundle, channels=self.channels, policy=self.policy,
                            installed=installed_bundle(revisions))


def open_catalog(args: argparse.Namespace, bundle: RegistryV1 | None, command: str, *,
                 misuse: str = "only for a registry+v1 bundle input", precheck: bool = True) -> CatalogRun | None:
    """Read ``--catalog`` and (``precheck``) refuse what the catalog refuses whatever is installed, before the
    cluster is contacted; None without ``--catalog``. Catalog options without a bundle are a usage error
    (``misuse`` says where they belong)."""
    if args.catalog is None:
        if args.channels or args.upgrade_constraint_policy != POLICY_CATALOG_PROVIDED:
            raise MissingArgument("--channel and --upgrade-constraint-policy need --catalog")
        return None
    if bundle is None:
        raise MissingArgument(f"--catalog: {misuse}")
    if getattr(args, "bundle_version", None):
        raise MissingArgument("--bundle-version with --catalog: the catalog's upgrade edges are checked against the "
                              "bundle versions the revisions record, so a registry+v1 bundle records its own")
    catalog = load_catalog(args.catalog, package=bundle.package_name, report=reporter(command))
    run = CatalogRun(catalog, bundle, tuple(args.channels or ()), args.upgrade_constraint_policy)
    if precheck:
        check_bundle(catalog, bundle, channels=run.channels, policy=run.policy, installed=None).raise_refusal()
    return run


def warn_deprecated(verdict: CatalogVerdict | None, command: str) -> None:
    for message in verdict.deprecated if verdict is not None else ():
        print(f"cosctl {command}: warning: deprecated: {message}", file=sys.stderr)
