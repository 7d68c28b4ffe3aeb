"""``cosctl rbac``: the ServiceAccount, Roles and ClusterRole that let the reconciler apply a revision with that
ServiceAccount's rights, and nothing the revision does not need.

Why: OLM v1 up to v1.10 installed a bundle with the rights of the ServiceAccount its ClusterExtension names (v1.11.0
gave that up for its own cluster-admin rights), and so does the reconciler for a revision that names one
(``cosctl publish --service-account``). Writing that ServiceAccount's RBAC
by hand means reading every object of the rendered bundle and every rule of its Roles (the API server lets a
ServiceAccount grant only what it holds itself); OLM v1's documentation spends a page on deriving it. This prints
it from the same rendering ``publish`` makes (:func:`common.bundle.permissions.grant`), offline, for review and for
``kubectl apply -f -``; ``publish`` then checks the result against the cluster before it creates the revision
(``--preflight-permissions``).

Upgrades: applying the next version's RBAC replaces the installed version's, and the installed revision is torn
down, after the new one succeeds, with the same ServiceAccount: the objects the new version drops must still be
deletable then. ``--keep-installed`` reads the owner's Active revisions from the cluster and keeps ``patch`` and
``delete`` on their objects (and takes the install options and the ServiceAccount from the latest revision, as
``publish`` does); run it again once the old revision is gone to drop them.

Without manifests, ``--owner`` names an installation whose installed revision's content, read from the cluster, is
granted for: how an installation made with the reconciler's own rights moves to a ServiceAccount.
"""

from __future__ import annotations

import argparse
import sys

from common.bundle.contents import ContentUnavailable, cluster_reader, resolve_phases
from common.bundle.kinds import offline_lookup
from common.bundle.permcheck import PermissionCheckError, cluster_lookup
from common.bundle.permissions import PermissionsError, ResourceLookup, ResourceType, grant
from common.bundle.publish import CREATE_FIRST, PublishError, active_revisions, owner_revisions
from common.bundle.rbac import aggregates
from common.bundle.registryv1.install import recorded_options
from common.bundle.registryv1.model import RegistryV1
from common.bundle.registryv1.resolve import POLICY_CATALOG_PROVIDED
from common.cluster.interface import Cluster
from common.contract.names import is_dns1123_subdomain
from common.contract.objects import Obj
from common.contract.serviceaccount import ServiceAccountRef, declared
from common.cosctl._catalog import add_catalog_arguments, check_package_arguments, resolve_package
from common.cosctl._inputs import add_input_arguments, load_inputs, peek_bundle, system_namespace
from common.cosctl._producer import (
    EXIT_OK,
    MissingArgument,
    UsageError,
    add_bundle_arguments,
    add_cluster_arguments,
    add_service_account_argument,
    run,
    service_account_in,
    to_yaml,
)

EXAMPLE = """\
examples:
  cosctl rbac ./argocd-operator.v0.6.0 -n argocd --service-account installer | kubectl apply -f -
  cosctl publish ./argocd-operator.v0.6.0 -n argocd --service-account installer
  cosctl rbac ./manifests --owner shop --service-account shop/installer > installer-rbac.yaml
  cosctl rbac ./argocd-operator.v0.7.0 --keep-installed | kubectl apply -f -     # before the upgrade
  cosctl rbac --package argocd-operator --catalog docker://INDEX -n argocd --service-account installer"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "rbac", help="print the RBAC a ServiceAccount needs to have a revision applied with its rights (YAML)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        description="Print the ServiceAccount, a ClusterRole and ClusterRoleBinding, and a Role and RoleBinding in "
                    "each namespace the revision writes to, that let the reconciler create, apply and delete every "
                    "object of the revision with that ServiceAccount's token (what publish --service-account "
                    "asks of it, and what its preflight checks): create on each resource, patch and delete on each "
                    "object by name, every rule of the revision's own Roles and ClusterRoles (the API server lets a "
                    "ServiceAccount grant only what it holds), bind on roles the revision binds without carrying "
                    "them, and update on clusterobjectsets/finalizers (needed where the "
                    "OwnerReferencesPermissionEnforcement admission plugin is on, as on OpenShift). Nothing "
                    "touches a cluster unless --keep-installed, or no manifests are given (with --owner: the "
                    "installed revision's RBAC, read from the cluster; with --package: the RBAC of the bundle the "
                    "catalog resolves to over the owner's installed one, rendered with the options publish would "
                    "keep).")
    add_bundle_arguments(parser, optional_paths="with --owner, the RBAC of the owner's installed revisions, read from "
                                                "the cluster (to move an installation to a ServiceAccount); with "
                                                "--package, the RBAC of the bundle publish --package would install")
    add_input_arguments(parser)
    parser.add_argument("--owner", default=None,
                        help="owner name, for the default --name (default for a registry+v1 bundle: its package)")
    add_service_account_argument(parser)
    add_catalog_arguments(parser, package="print the RBAC for", by_path=False)
    parser.add_argument("--name", default=None,
                        help="name of the ClusterRole, Roles and bindings (default <owner>-<ServiceAccount name>)")
    parser.add_argument("--keep-installed", action="store_true",
                        help="read the owner's Active revisions from the cluster and also grant patch and delete on "
                             "their objects, which the same ServiceAccount releases or deletes once the new revision "
                             "succeeds (for an upgrade); install options and --service-account default to the "
                             "latest revision's, as publish takes them")
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    return run("rbac", lambda: _rbac(args))


def _rbac(args: argparse.Namespace) -> int:
    revisions: list[Obj] = []
    cluster: Cluster | None = None
    bundle: RegistryV1 | None
    owner: str | None
    paths: list[str] = args.paths
    if check_package_arguments(args, args.paths, "rbac"):  # the bundle publish --package would install
        chosen = resolve_package(args, "rbac", lambda line: print(f"cosctl rbac: {line}", file=sys.stderr))
        bundle, owner, cluster, paths = chosen.bundle, chosen.owner, chosen.cluster, [chosen.image]
        recorded = chosen.revisions[-1] if chosen.revisions else None
        revisions = chosen.revisions if args.keep_installed else []
    else:
        if args.catalog or args.channels or args.upgrade_constraint_policy != POLICY_CATALOG_PROVIDED:
            raise MissingArgument("--catalog, --channel and --upgrade-constraint-policy: only with --package (cosctl "
                                  "rbac grants for the bundle it is given, whichever the catalog allows)")
        if not args.paths:
            return _rbac_installed(args)
        bundle = peek_bundle(args.paths, "rbac")
        owner = args.owner or (bundle.package_name if bundle is not None else None)
        if args.keep_installed:
            if not owner:
                raise UsageError("--keep-installed needs --owner for plain manifests: whose installed revisions to "
                                 "keep")
            cluster = args.connect(args)
            revisions = owner_revisions(cluster, owner)
        recorded = revisions[-1] if revisions else None
    inputs = load_inputs(args, command="rbac", paths=paths, bundle=bundle, recorded=recorded)
    account = service_account_in(args.service_account, inputs.options.namespace if inputs.options else None) or (
        declared(recorded) if recorded is not None else None)
    if account is None:
        raise MissingArgument("--service-account [NS/]NAME is required: the ServiceAccount to grant the rights to"
                              + (f" (the latest revision of {owner} names none)" if recorded is not None else ""))
    name = _name(args, owner, account)
    if inputs.kept_from:
        print(f"cosctl rbac: options kept from {inputs.kept_from}", file=sys.stderr)
    objects = [o for p in inputs.phases for o in p.objects]
    teardown = [] if cluster is None else _installed(
        cluster, active_revisions(revisions), account, system_namespace(args, bundle=bundle is not None))
    return _print(objects, teardown, account, name, owner, cluster)


def _rbac_installed(args: argparse.Namespace) -> int:
    """No manifests: the RBAC that lets ``--service-account`` take the owner's installed revision over (the newest
    Active one, with every right it needs to keep it applied) and tear down the older Active ones it would archive,
    for an installation made with the reconciler's own rights that is to move to a ServiceAccount."""
    owner = args.owner
    if not owner:
        raise UsageError("give the manifests or the bundle to grant for, or --owner OWNER for the RBAC of the "
                         "owner's installed revisions")
    cluster = args.connect(args)
    active = active_revisions(owner_revisions(cluster, owner))
    if not active:
        raise UsageError(f"owner {owner} has no Active revision on the cluster")
    latest = active[-1]
    kept = recorded_options(latest)   # made from a bundle: -n is its install namespace, as for publish BUNDLE
    install_namespace = (args.namespace or kept.namespace) if kept is not None else None
    account = service_account_in(args.service_account, install_namespace) or declared(latest)
    if account is None:
        raise MissingArgument(f"--service-account [NS/]NAME is required: {latest['metadata']['name']} names none")
    name = _name(args, owner, account)
    secrets_namespace = system_namespace(args, bundle=kept is not None)
    try:
        phases = resolve_phases(latest, cluster_reader(cluster), system_namespace=secrets_namespace)
    except ContentUnavailable as exc:
        raise PublishError(str(exc)) from None
    print(f"cosctl rbac: for the objects of {latest['metadata']['name']}", file=sys.stderr)
    teardown = _installed(cluster, active[:-1], account, secrets_namespace)
    return _print([o for p in phases for o in p.objects], teardown, account, name, owner, cluster)


def _name(args: argparse.Namespace, owner: str | None, account: ServiceAccountRef) -> str:
    """``--name``, else ``<owner>-<ServiceAccount>``: named after the account too, so the RBAC of another
    ServiceAccount of the owner (one that tears an installed revision down) is never re-bound by applying this."""
    name = args.name or (f"{owner}-{account.name}" if owner else None)
    if not name:
        raise UsageError("give --name (or --owner) for plain manifests: the name of the roles and bindings")
    if problems := is_dns1123_subdomain(name):
        raise UsageError(f"invalid name {name!r} for the roles and bindings (--name, or <owner>-<ServiceAccount>): "
                         f"{'; '.join(problems)}")
    return name


def _print(objects: list[Obj], teardown: list[Obj], account: ServiceAccountRef, name: str, owner: str | None,
           cluster: Cluster | None) -> int:
    """Work the RBAC out and print it, with what a reader must know (guessed kinds, aggregation, namespaces the
    revision creates) on stderr."""
    guessed: dict[str, ResourceType] = {}
    lookup = offline_lookup([*objects, *teardown], guessed)
    if cluster is not None:   # connected anyway: the cluster's discovery first, the offline answers for the rest
        lookup = _first(cluster_lookup(cluster, [*objects, *teardown]), lookup)
    try:
        rbac = grant(objects, lookup, account.namespace, account.name, name=name, teardown=teardown)
    except (PermissionsError, PermissionCheckError) as exc:  # a namespaced object without a namespace (the revision
        raise UsageError(str(exc)) from None                 # could never be applied), or discovery failed
    for kind, found in sorted(guessed.items()):
        scope = "namespaced" if found.namespaced else "cluster-scoped"
        print(f"cosctl rbac: warning: kind {kind} is neither built in nor served by a CustomResourceDefinition of "
              f"the revision: assumed to be the {scope} resource {found.resource!r} (check with kubectl "
              "api-resources)", file=sys.stderr)
    for role in objects:
        if role.get("kind") == "ClusterRole" and aggregates(role):
            print(f"cosctl rbac: warning: ClusterRole {role['metadata'].get('name')} has an aggregationRule: creating "
                  "it takes escalate on every ClusterRole (or every right), which is as much as cluster-admin",
                  file=sys.stderr)
    created = {str(o["metadata"]["name"]) for o in objects if o.get("apiVersion") == "v1" and o.get("kind") ==
               "Namespace" and isinstance(o.get("metadata"), dict)}
    needed = sorted(({account.namespace} | {str(o["metadata"]["namespace"]) for o in rbac
                                             if o["metadata"].get("namespace")}) & created)
    if needed:
        print(f"cosctl rbac: warning: the revision creates Namespace {', '.join(needed)}, where this ServiceAccount "
              f"or its Roles must exist before it: {CREATE_FIRST}", file=sys.stderr)
    service_account = {"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": account.name, "namespace": account.namespace}}
    sys.stdout.write(f"# RBAC for ServiceAccount {account} to have {owner or name}'s revisions applied with its "
                     "rights (cosctl rbac)\n")
    sys.stdout.write(to_yaml([service_account, *rbac]))
    return EXIT_OK


def _first(*lookups: ResourceLookup) -> ResourceLookup:
    def lookup(api_version: str, kind: str) -> ResourceType | None:
        for each in lookups:
            if (found := each(api_version, kind)) is not None:
                return found
        return None
    return lookup


def _installed(cluster: Cluster, revisions: list[Obj], account: ServiceAccountRef, secrets_namespace: str) -> list[Obj]:
    """The objects of the Active ``revisions`` that ``account`` tears down (those naming it); a revision torn down by
    another ServiceAccount keeps that account's own RBAC, which this does not touch (it is said)."""
    out: list[Obj] = []
    for cos in revisions:
        other = declared(cos)
        if other != account:
            whose = f"ServiceAccount {other}" if other is not None else "the reconciler's own rights"
            print(f"cosctl rbac: {cos['metadata']['name']} is torn down with {whose}, not {account}: keep what that "
                  "grants until it is gone", file=sys.stderr)
            continue
        try:
            phases = resolve_phases(cos, cluster_reader(cluster), system_namespace=secrets_namespace)
        except ContentUnavailable as exc:
            raise PublishError(f"--keep-installed: {exc}") from None
        print(f"cosctl rbac: keeping patch and delete on the objects of {cos['metadata']['name']}", file=sys.stderr)
        out += [o for p in phases for o in p.objects]
    return out
