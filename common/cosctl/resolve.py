"""``cosctl resolve``: which bundle of a package OLM v1 would install or upgrade to from a File-Based Catalog.

Why: an admin coming from OLM v1 names a package, channels and a version range, and OLM v1 picks the bundle.
``resolve`` says which one OLM v1 would pick, with its image, and every bundle that qualified, best first, without
installing anything (``publish --package`` resolves the same way and installs the pick). With ``--owner`` the
installed bundle is read from the cluster (the newest Succeeded revision), so the answer is the next upgrade the
catalog allows; ``publish --catalog`` then accepts that bundle.
"""

from __future__ import annotations

import argparse
import json
import sys

from common.bundle.catalogcheck import first_install_hint, installed_bundle, rolling_out_hint
from common.bundle.catalogsource import (
    CatalogSource,
    CatalogSourceError,
    SourceChoice,
    choose_source,
    kept_text,
    resolve_source,
)
from common.bundle.clustercatalogs import is_cluster_catalogs
from common.bundle.publish import owner_revisions
from common.bundle.registryv1.catalog import Bundle, Package
from common.bundle.registryv1.resolve import (
    POLICY_CATALOG_PROVIDED,
    UPGRADE_CONSTRAINT_POLICIES,
    VersionReleaseError,
    bundle_version,
    deprecated_bundle_names,
    deprecations,
    make_query,
)
from common.cluster.interface import Cluster
from common.cosctl._catalog import (
    CATALOG_HELP,
    CLUSTER_CATALOGS_HELP,
    catalog_argument,
    catalog_to_record,
    kept_catalog,
    read_catalogs,
    take_extension,
)
from common.cosctl._producer import (
    EXIT_OK,
    MissingArgument,
    add_cluster_arguments,
    add_namespace_argument,
    run,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "resolve", help="show which bundle of a package OLM v1 would install or upgrade to from a catalog",
        description="Resolve a package against a File-Based Catalog as OLM v1 resolves a ClusterExtension: the "
                    "bundles in the channels given and the version range, and (policy CatalogProvided) an "
                    "upgrade the catalog allows from the installed bundle, deprecated ones last, the highest "
                    "version first. Prints the bundle OLM v1 would pick, its image, and every bundle that "
                    "qualified; OLM v1's message (exit 1) when none does. With --owner, the installed bundle is "
                    "the owner's newest Succeeded revision that is not archived, on the cluster.")
    parser.add_argument("package", nargs="?", default=None,
                        help="the package name (a ClusterExtension's spec.source.catalog.packageName)")
    parser.add_argument("--extension", default=None, metavar="FILE",
                        help="instead of PACKAGE and the bounds, what an OLM v1 ClusterExtension manifest says: its "
                             "package, channels, version range and upgrade constraint policy; its name is the owner "
                             "whose installed bundle is read from the cluster; without --catalog, the ClusterCatalogs "
                             "its spec.source.catalog.selector picks (unless the owner keeps a catalog by path or "
                             "image), as publish --extension resolves it")
    parser.add_argument("--catalog", default=None, metavar="DIR|FILE", type=catalog_argument,
                        help=CATALOG_HELP + CLUSTER_CATALOGS_HELP + "; with --owner, default: the catalog its "
                                                                    "latest revision records (publish --package)")
    parser.add_argument("--channel", dest="channels", action="append", default=None, metavar="NAME",
                        help="only bundles in this channel (repeatable; default: any, or with --owner the channels "
                             "its latest revision records; '' for any)")
    parser.add_argument("--version", default=None, metavar="RANGE",
                        help="a version range, as spec.source.catalog.version (Masterminds/semver: '>=1.2, <2', "
                             "'~1.2', '1.2.x', '1.2 - 1.4'); with --owner, default: the range its latest revision "
                             "records ('' for any)")
    parser.add_argument("--upgrade-constraint-policy", choices=UPGRADE_CONSTRAINT_POLICIES,
                        default=POLICY_CATALOG_PROVIDED,
                        help="CatalogProvided (default): only upgrades the catalog allows from the installed "
                             "bundle; SelfCertified: any bundle")
    parser.add_argument("--owner", default=None,
                        help="read the installed bundle from this owner's revisions on the cluster (default: a "
                             "first install; no cluster is contacted)")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format")
    add_namespace_argument(parser, ignored=True)
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    return run("resolve", lambda: _resolve(args))


def _resolve(args: argparse.Namespace) -> int:
    if args.extension is not None:
        if args.package is not None:
            raise MissingArgument(f"{args.package} and --extension {args.extension}: the ClusterExtension names the "
                                  "package (spec.source.catalog.packageName); give one or the other")
        take_extension(args, "resolve")
    elif args.package is None:
        raise MissingArgument("give PACKAGE, or --extension FILE (a ClusterExtension manifest)")
    package = str(args.package)
    if args.catalog is None and not args.owner:
        raise MissingArgument("--catalog DIR|FILE|docker://INDEX|clustercatalogs:[SELECTOR] is required (or --owner "
                              "OWNER, whose latest revision records the catalog publish --package resolved it from)")
    if args.version:
        make_query(package, version=args.version)  # a range OLM v1 refuses: said before anything is read
    clustered = args.catalog is not None and is_cluster_catalogs(args.catalog)
    given = (read_catalogs(args.catalog, package, "resolve", lambda: args.connect(args))
             if args.catalog is not None and not clustered else None)
    connected: list[Cluster] = []

    def connect() -> Cluster:   # once, and only when something is read from the cluster
        if not connected:
            connected.append(args.connect(args))
        return connected[0]
    revisions = owner_revisions(connect(), args.owner) if args.owner else []
    installed = installed_bundle(revisions) if args.owner else None
    catalog, said_as = args.catalog, None
    if catalog is None:   # a ClusterExtension's ClusterCatalogs, unless its owner keeps a catalog
        catalog, said_as = catalog_to_record(args, package, revisions[-1] if revisions else None, "resolve")
        clustered = catalog is not None
    # with --owner, what publish --package would pick: the bounds not given are those its latest revision records
    try:
        choice = choose_source(package, catalog=catalog, channels=args.channels, version=args.version,
                               latest=revisions[-1] if revisions else None)
    except CatalogSourceError as exc:
        if args.catalog is None:
            raise
        # a record cosctl cannot read: this read-only answer goes on without it (publish --package refuses)
        print(f"cosctl resolve: warning: {exc}; resolving with the command line's bounds alone", file=sys.stderr)
        choice = SourceChoice(CatalogSource(args.catalog, package,
                                            tuple(c for c in args.channels or () if c), args.version or ""))
    if choice.kept_from:
        print(f"cosctl resolve: kept from {choice.kept_from} (as publish --package keeps them): {kept_text(choice)}",
              file=sys.stderr)
    if given is not None:
        catalogs = given
    elif clustered:
        catalogs = read_catalogs(choice.source.catalog, package, "resolve", connect, said_as=said_as)
    else:
        catalogs = kept_catalog(choice, "resolve", None, connect)
    query = choice.source.query(args.upgrade_constraint_policy)
    bundle_name = installed.bundle.name if installed else ""
    if len(catalogs) == 1 and catalogs[0].catalog is not None and catalogs[0].name is None:
        # one catalog: its deprecations are said even when nothing resolves
        _warn_deprecated(catalogs[0].catalog.package(package), query.channels, bundle_name)
    if (rolling := rolling_out_hint(installed) if installed is not None else first_install_hint(revisions)):
        print(f"cosctl resolve: warning: {rolling}", file=sys.stderr)
    chosen, resolution = resolve_source(catalogs, choice, installed, policy=args.upgrade_constraint_policy)
    if chosen.name is not None:   # across ClusterCatalogs: the deprecations of the one resolved from
        _warn_deprecated(resolution.package, query.channels, bundle_name)
    deprecated = deprecated_bundle_names(resolution.package)
    rows = [(b.name, _version_text(b), b.image) for b in resolution.candidates]
    if args.output == "json":
        print(json.dumps({
            "package": package, "catalog": chosen.source,
            **({"clusterCatalog": chosen.name} if chosen.name is not None else {}),
            "installed": None if installed is None else {"name": installed.bundle.name,
                                                         "version": installed.bundle.version,
                                                         "revision": installed.revision},
            "resolved": {"name": resolution.bundle.name, "version": str(resolution.version),
                         "image": resolution.bundle.image},
            "candidates": [{"name": n, "version": v, "image": i} for n, v, i in rows],
            "source": choice.to_json()}, indent=2))
        return EXIT_OK
    if installed is not None:
        print(f"installed: {installed.bundle.name} ({installed.bundle.version}), by ClusterObjectSet "
              f"{installed.revision}")
    elif args.owner:
        print(f"installed: none (owner {args.owner} has no Succeeded revision of a bundle)")
    print(f"resolves to: {resolution.bundle.name} {resolution.version} {resolution.bundle.image}")
    if chosen.name is not None:
        print(f"from: ClusterCatalog {chosen.name} (priority {chosen.priority}, {chosen.source})")
    print("qualified, best first:")
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    for name, version, image in rows:
        marks = [mark for mark, on in (("installed", installed is not None and name == installed.bundle.name),
                                       ("deprecated", name in deprecated)) if on]
        print(f"  {name.ljust(widths[0])}  {version.ljust(widths[1])}  {image}"
              f"{'  (' + ', '.join(marks) + ')' if marks else ''}")
    return EXIT_OK


def _warn_deprecated(package: Package, channels: tuple[str, ...], bundle_name: str) -> None:
    for message in deprecations(package, channels, bundle_name).messages():
        print(f"cosctl resolve: warning: deprecated: {message}", file=sys.stderr)


def _version_text(bundle: Bundle) -> str:
    """A qualified bundle's version as shown: OLM v1 ranks one it cannot read last, and it may still be listed."""
    try:
        return str(bundle_version(bundle))
    except VersionReleaseError:
        return "(unreadable)"
