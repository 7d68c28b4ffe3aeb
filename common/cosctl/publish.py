"""``cosctl publish``: create the next revision of an owner's ClusterObjectSet on the cluster, crash-safely.

Recovery runs first (finishing or undoing an earlier interrupted publish), then the bundle is compared with the
owner's latest revision by content: unchanged content updates only mutable fields, changed content creates
revision N+1 (after retention trims archived revisions to the newest five). ``--dry-run`` prints the plan.

A registry+v1 bundle is rendered first (:mod:`._inputs`); its owner defaults to its package name, and options
not given are kept from the owner's latest revision, so ``cosctl publish NEXT-BUNDLE`` upgrades in place.
"""

from __future__ import annotations

import argparse
import sys

from common.bundle.dependencies import declared, unmet
from common.bundle.publish import Result, owner_revisions, publish
from common.bundle.registryv1.model import RegistryV1
from common.cluster.interface import Cluster
from common.contract.objects import Obj
from common.cosctl._catalog import (
    CatalogReader,
    CatalogRun,
    add_catalog_arguments,
    check_package_arguments,
    open_catalog,
    resolve_package,
    warn_deprecated,
)
from common.cosctl._inputs import Inputs, add_input_arguments, load_inputs, peek_bundle, system_namespace
from common.cosctl._producer import (
    EXIT_OK,
    MissingArgument,
    Progress,
    UsageError,
    add_bundle_arguments,
    add_cluster_arguments,
    add_crd_upgrade_safety_argument,
    add_preflight_permissions_argument,
    add_service_account_argument,
    load_probes,
    run,
    service_account_in,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "publish", help="create the next revision on the cluster (or update it in place when unchanged)",
        description="Publish manifests as revision N+1 of the owner's ClusterObjectSet (named <owner>-<N+1>), "
                    "crash-safely: Secrets, then the ClusterObjectSet, then ownerReferences. Unchanged content "
                    "creates nothing. With --catalog, a bundle the catalog does not allow over the installed one "
                    "(OLM v1's upgrade edges) is refused. A new revision whose CustomResourceDefinitions would break "
                    "the custom "
                    "resources stored under the cluster's current ones is refused, as OLM v1 refuses it "
                    "(--crd-upgrade-safety). Runs recovery and retention (newest 5 archived revisions are kept). A "
                    "registry+v1 bundle is rendered as OLM v1 renders it; its owner defaults to its package name "
                    "and options not given are kept from the owner's latest revision.")
    add_bundle_arguments(parser, optional_paths="give --package NAME instead")
    add_input_arguments(parser)
    parser.add_argument("--owner", default=None,
                        help="owner name: revisions are named <owner>-<N> (required for plain manifests; default "
                             "for a registry+v1 bundle: its package name)")
    add_service_account_argument(parser)
    add_crd_upgrade_safety_argument(parser)
    add_preflight_permissions_argument(parser)
    add_catalog_arguments(parser, package="publish")
    parser.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    progress = Progress(args.dry_run)
    return run("publish", lambda: _publish(args, progress), progress=progress)


def _publish(args: argparse.Namespace, progress: Progress) -> int:
    if check_package_arguments(args, args.paths):  # the catalog picks the bundle, pulled from the image it names
        result = publish_package(args, progress)
    elif not args.paths:
        raise MissingArgument("give the manifests or bundle to publish (DIR|FILE), or --package NAME")
    else:
        result = _publish_paths(args, progress)
    print(result.summary())
    return EXIT_OK


def publish_package(args: argparse.Namespace, progress: Progress, *, read: CatalogReader | None = None,
                    probes: list[Obj] | None = None, command: str = "publish") -> Result:
    """``publish --package``: the bundle the catalog resolves to, pulled and published, its source recorded.
    ``cosctl upgrade`` runs it for each owner with an upgrade waiting (``read``: the catalogs it has read;
    ``probes``: the latest revision's progression probes, carried instead of ``--progression-probes``; ``command``:
    whose name its stderr lines carry)."""
    chosen = resolve_package(args, command, print, read=read)
    revisions = chosen.revisions
    inputs = load_inputs(args, command=command, paths=[chosen.image], bundle=chosen.bundle,
                         recorded=revisions[-1] if revisions else None, owner=chosen.owner)
    inputs.annotations.update(chosen.annotations)
    return _write(args, progress, inputs, owner=chosen.owner, bundle=chosen.bundle, catalog=chosen.catalog,
                  cluster=chosen.cluster, revisions=revisions, probes=probes, command=command)


def _publish_paths(args: argparse.Namespace, progress: Progress) -> Result:
    """``publish DIR|FILE``: plain manifests, or a registry+v1 bundle given by path or image."""
    bundle = peek_bundle(args.paths, "publish")  # a bundle that does not load: said before the cluster is asked
    catalog = open_catalog(args, bundle, "publish")  # what the catalog refuses whatever is installed: said first
    owner = args.owner or (bundle.package_name if bundle is not None else None)
    if not owner:
        raise UsageError("--owner is required for plain manifests (a registry+v1 bundle defaults to its package)")
    revisions: list[Obj] | None
    if bundle is None:
        inputs = load_inputs(args, command="publish")  # every manifest problem before the cluster is contacted
        service_account_in(args.service_account, None)  # a bare name needs a bundle: said before connecting
        cluster = args.connect(args)
        revisions = None
    else:
        cluster = args.connect(args)
        revisions = owner_revisions(cluster, owner)
        inputs = load_inputs(args, command="publish", bundle=bundle, recorded=revisions[-1] if revisions else None,
                             owner=owner)
    return _write(args, progress, inputs, owner=owner, bundle=bundle, catalog=catalog, cluster=cluster,
                  revisions=revisions)


def _write(args: argparse.Namespace, progress: Progress, inputs: Inputs, *, owner: str, bundle: RegistryV1 | None,
           catalog: CatalogRun | None, cluster: Cluster, revisions: list[Obj] | None,
           probes: list[Obj] | None = None, command: str = "publish") -> Result:
    """What every publish ends with: the catalog's verdict over the installed bundle, the dependency warnings, then
    the crash-safe writes."""
    if inputs.bundle is not None and inputs.options is not None:
        kept = f" (options kept from {inputs.kept_from})" if inputs.kept_from else ""
        print(f"bundle {inputs.bundle.csv_name} rendered for namespace {inputs.options.namespace}{kept}")
    if catalog is not None:
        verdict = catalog.verdict(revisions or [])
        warn_deprecated(verdict, command)
        verdict.raise_refusal()
        print(verdict.summary())
    if inputs.bundle is not None:
        _warn_unmet_dependencies(cluster, inputs.bundle, command)
    return publish(cluster, inputs.phases, owner=owner, owner_kind=args.owner_kind or inputs.owner_kind,
                   system_namespace=system_namespace(args, bundle=bundle is not None),
                   collision_protection=args.collision_protection,
                   progress_deadline_minutes=args.progress_deadline_minutes,
                   bundle_version=args.bundle_version, annotations=inputs.annotations,
                   progression_probes=load_probes(args.progression_probes) if probes is None else probes,
                   service_account=service_account_in(args.service_account,
                                                      inputs.options.namespace if inputs.options else None),
                   dry_run=args.dry_run, revisions=revisions, report=progress,
                   crd_upgrade_safety=args.crd_upgrade_safety,
                   preflight_permissions=args.preflight_permissions)


def _warn_unmet_dependencies(cluster: Cluster, bundle: RegistryV1, command: str) -> None:
    """What the bundle depends on that the cluster lacks (:mod:`common.bundle.dependencies`), as warnings: OLM v1
    would refuse the bundle for declaring dependencies at all; published by path, they are the admin's to install."""
    requirements = declared(bundle)
    if not requirements:
        return
    missing = unmet(cluster, requirements)
    if not missing:
        print(f"dependencies of {bundle.csv_name} on the cluster: {', '.join(r.text for r in requirements)}")
        return
    print(f"cosctl {command}: warning: {bundle.csv_name} depends on what the cluster lacks (OLM v1 installs no bundle "
          "that declares dependencies; published by path, they are yours to install first):", file=sys.stderr)
    for line in missing:
        print(f"cosctl {command}: warning:   {line}", file=sys.stderr)
