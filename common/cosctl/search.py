"""``cosctl search``: the packages a catalog offers, or one package's channels and versions (:mod:`common.bundle.
catalogsearch`), with the ``publish --package`` line that installs it. Reads the catalog only; the cluster only to
list its ClusterCatalogs (``--catalog clustercatalogs:``), which are searched each, and named on each line."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from common.bundle.catalogsearch import NO_CHANNEL, PackageSummary, matching, shown_versions, summarize
from common.bundle.catalogsource import SourceCatalog
from common.bundle.clustercatalogs import is_cluster_catalogs
from common.bundle.registryv1.catalog import CatalogError
from common.bundle.registryv1.resolve import RankedPackage, ResolutionError, make_query, resolve_among
from common.cosctl._catalog import CATALOG_HELP, catalog_argument, read_catalogs
from common.cosctl._producer import EXIT_FAILED, EXIT_OK, UsageError, add_cluster_arguments, print_table, run

# How many versions a channel line shows before "...": the JSON has them all.
SHOWN_VERSIONS = 8


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "search", help="list the packages a catalog offers, or one package's channels and versions",
        description="List the packages of a catalog whose name contains TEXT (all without it): the default channel, "
                    "the latest bundle from any channel (what OLM v1 resolves with no channel and no range, so what "
                    "publish --package installs; marked when OLM v1 refuses it for declaring dependencies), the "
                    "channels, and what is deprecated. With --package, that package's channels, each with its "
                    "versions newest first, and the command that installs it. With --catalog clustercatalogs:, each "
                    "ClusterCatalog's packages, named by catalog, and for --package the ClusterCatalog OLM v1 would "
                    "resolve it from. Exit 1 when nothing matches.")
    parser.add_argument("text", nargs="?", default="", metavar="TEXT",
                        help="only packages whose name contains TEXT (any case)")
    parser.add_argument("--catalog", required=True, metavar="DIR|FILE", type=catalog_argument,
                        help=CATALOG_HELP + "; or clustercatalogs:[SELECTOR]: the cluster's ClusterCatalogs (OLM v1's "
                                            "catalogd) the label selector picks, each read from the digest catalogd "
                                            "serves")
    parser.add_argument("--package", default=None, metavar="NAME",
                        help="one package in detail: every channel and its versions")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format")
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    return run("search", lambda: _search(args))


def _search(args: argparse.Namespace) -> int:
    if args.package and args.text:
        raise UsageError(f"{args.text} and --package {args.package}: give TEXT to list the packages it matches, or "
                         "--package for one package")
    clustered = is_cluster_catalogs(args.catalog)
    found: list[tuple[SourceCatalog, PackageSummary]] = []
    blocking: list[str] = []   # what stops OLM v1 resolving --package across the ClusterCatalogs, in walk order
    read = read_catalogs(args.catalog, args.package, "search", lambda: args.connect(args), every_served=True)
    for source in read:
        if source.nothing is not None:
            print(f"cosctl search: {source.nothing}", file=sys.stderr)
            return EXIT_FAILED
        if source.catalog is None:   # not served: nothing to search in it, the others are still searched
            assert source.unserved is not None
            print(f"cosctl search: warning: ClusterCatalog {source.name} is not searched: {source.unserved.said} "
                  "(OLM v1 resolves nothing while it is not served)", file=sys.stderr)
            blocking.append(f"ClusterCatalog {source.name} is not served")
            continue
        catalog = source.catalog
        for name in [args.package] if args.package else matching(catalog, args.text):
            try:
                package = catalog.package(name)
            except CatalogError as exc:
                if args.package and not clustered:
                    raise
                # one package the catalog spoils (OLM v1 serves none of it): the others are still listed
                where = f" in ClusterCatalog {source.name}" if clustered else ""
                print(f"cosctl search: warning: package {name}{where} cannot be read: {exc}", file=sys.stderr)
                blocking.append(f"package {name} of ClusterCatalog {source.name} cannot be read")
                continue
            if package.found:
                found.append((source, summarize(package)))
    if not found:
        what = f"no package {args.package}" if args.package else (
            f"no package whose name contains {args.text!r}" if args.text else "no package")
        searched = [s.name or "" for s in read if s.catalog is not None]
        where = (f"the ClusterCatalogs searched ({', '.join(searched) or 'none'}) have" if clustered
                 else f"catalog {read[0].source} has")
        print(f"cosctl search: {where} {what}", file=sys.stderr)
        return EXIT_FAILED
    if args.output == "json":
        print(json.dumps([{**summary.to_json(), **({"clusterCatalog": source.name, "priority": source.priority}
                                                   if clustered else {})}
                          for source, summary in found], indent=2))
    elif args.package:
        for i, (source, summary) in enumerate(_by_priority(found)):
            if clustered:
                print(("\n" if i else "") + f"ClusterCatalog {source.name} (priority {source.priority}, "
                      f"{source.source}):")
            _detail(summary, args.catalog, one_of_several=clustered)
        if clustered:
            _resolved_from(args.package, [source for source, _ in found], args.catalog, blocking)
    else:
        _table(found, clustered=clustered)
    return EXIT_OK


def _by_priority(found: list[tuple[SourceCatalog, PackageSummary]]) -> list[tuple[SourceCatalog, PackageSummary]]:
    """By package, then the highest priority first (the order OLM v1 prefers them in), then by catalog name."""
    return sorted(found, key=lambda f: (f[1].name, -f[0].priority, f[0].name or ""))


def _resolved_from(package: str, offering: list[SourceCatalog], catalog: str, blocking: list[str]) -> None:
    """Across ClusterCatalogs, which one OLM v1 resolves the package from with no channel or range (or why it
    resolves nothing: a tie; ``blocking``, a ClusterCatalog not served or whose package cannot be read), and the
    install line."""
    ranked = [RankedPackage(s.name or "", s.priority, s.catalog.package(package)) for s in offering
              if s.catalog is not None]
    try:
        index, resolution = resolve_among(ranked, make_query(package), None)
        verb, what = "resolve", f"{package} from ClusterCatalog {ranked[index].catalog}: {resolution.bundle.name}"
    except ResolutionError as exc:
        verb, what = "refuse", f"to resolve {package}: {exc}"
    if blocking:
        said = (f"OLM v1 resolves nothing while {' and '.join(blocking)}; from the others, it would {verb} {what}")
    else:
        said = f"OLM v1 {verb}s {what}"
    print(f"\n{said}\ninstall: cosctl publish --package {package} --catalog {shlex.quote(catalog)} -n NAMESPACE "
          "[--channel NAME] [--version RANGE]")


def _latest(summary: PackageSummary) -> str:
    if summary.latest is None:
        return "-"
    text = shown_versions((summary.latest,))[0]
    return text + (" (refused)" if summary.refusal and not summary.latest.dependencies else "")


SHOWN_CHANNELS = 5


def _channels(summary: PackageSummary) -> str:
    names = [c.name for c in summary.channels if c.name != NO_CHANNEL]
    more = f", +{len(names) - SHOWN_CHANNELS} more" if len(names) > SHOWN_CHANNELS else ""
    return ", ".join(names[:SHOWN_CHANNELS]) + more or "-"


def _table(found: list[tuple[SourceCatalog, PackageSummary]], *, clustered: bool) -> None:
    header = ("PACKAGE", *(("CLUSTERCATALOG",) if clustered else ()), "DEFAULT CHANNEL", "LATEST (ANY CHANNEL)",
              "CHANNELS", "DEPRECATED")
    print_table([header] + [(s.name, *((source.name or "",) if clustered else ()), s.default_channel or "-",
                             _latest(s), _channels(s), s.deprecated or "-") for source, s in _by_priority(found)])


def _detail(summary: PackageSummary, catalog: str, *, one_of_several: bool = False) -> None:
    """One package of one catalog; ``one_of_several``: of one ClusterCatalog among others, whose latest is only
    that catalog's, and which the install line after them all covers."""
    print(f"package {summary.name}" + (f", default channel {summary.default_channel}" if summary.default_channel
                                       else "") + (f" (deprecated: {summary.deprecated})" if summary.deprecated
                                                   else ""))
    if summary.latest is not None:
        print(f"latest: {_latest(summary)}, "
              + (f"which OLM v1 refuses: {summary.refusal}" if summary.refusal else
                 "this catalog's best with no channel or range" if one_of_several else
                 "what publish --package installs without --channel or --version (from any channel)"))
    rows = []
    for channel in summary.channels:
        versions = shown_versions(channel.versions)
        more = f", ... ({len(versions) - SHOWN_VERSIONS} more)" if len(versions) > SHOWN_VERSIONS else ""
        name = channel.name + (f" (deprecated: {channel.deprecated})" if channel.deprecated else "")
        rows.append((name, ", ".join(versions[:SHOWN_VERSIONS]) + more or "-"))
    if rows:
        print_table([("CHANNEL", "VERSIONS (newest first)"), *rows])
    if not one_of_several:
        default = f" [--channel {summary.default_channel}]" if summary.default_channel_exists else ""
        print(f"install: cosctl publish --package {summary.name} --catalog {shlex.quote(catalog)} -n NAMESPACE"
              f"{default} [--version RANGE]")
