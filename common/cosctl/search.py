"""``cosctl search``: the packages a catalog offers, or one package's channels and versions (:mod:`common.bundle.
catalogsearch`), with the ``publish --package`` line that installs it. Reads the catalog only; no cluster."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from common.bundle.catalogsearch import NO_CHANNEL, PackageSummary, matching, shown_versions, summarize
from common.bundle.registryv1.catalog import CatalogError, load_catalog
from common.cosctl._catalog import CATALOG_HELP, one_catalog_argument
from common.cosctl._producer import EXIT_FAILED, EXIT_OK, UsageError, print_table, reporter, run

# How many versions a channel line shows before "...": the JSON has them all.
SHOWN_VERSIONS = 8


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "search", help="list the packages a catalog offers, or one package's channels and versions",
        description="List the packages of a catalog whose name contains TEXT (all without it): the default channel, "
                    "the latest bundle from any channel (what OLM v1 resolves with no channel and no range, so what "
                    "publish --package installs; marked when OLM v1 refuses it for declaring dependencies), the "
                    "channels, and what is deprecated. With --package, that package's channels, each with its "
                    "versions newest first, and the command that installs it. Exit 1 when nothing matches.")
    parser.add_argument("text", nargs="?", default="", metavar="TEXT",
                        help="only packages whose name contains TEXT (any case)")
    parser.add_argument("--catalog", required=True, metavar="DIR|FILE", type=one_catalog_argument, help=CATALOG_HELP)
    parser.add_argument("--package", default=None, metavar="NAME",
                        help="one package in detail: every channel and its versions")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format")
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    return run("search", lambda: _search(args))


def _search(args: argparse.Namespace) -> int:
    if args.package and args.text:
        raise UsageError(f"{args.text} and --package {args.package}: give TEXT to list the packages it matches, or "
                         "--package for one package")
    catalog = load_catalog(args.catalog, package=args.package, report=reporter("search"))
    summaries = []
    for name in [args.package] if args.package else matching(catalog, args.text):
        try:
            package = catalog.package(name)
        except CatalogError as exc:
            if args.package:
                raise
            # one package the catalog spoils (OLM v1 serves none of it): the others are still listed
            print(f"cosctl search: warning: package {name} cannot be read: {exc}", file=sys.stderr)
            continue
        if package.found:
            summaries.append(summarize(package))
    if not summaries:
        what = f"no package {args.package}" if args.package else (
            f"no package whose name contains {args.text!r}" if args.text else "no package")
        print(f"cosctl search: catalog {catalog.source} has {what}", file=sys.stderr)
        return EXIT_FAILED
    if args.output == "json":
        print(json.dumps([s.to_json() for s in summaries], indent=2))
    elif args.package:
        _detail(summaries[0], args.catalog)
    else:
        _table(summaries)
    return EXIT_OK


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


def _table(summaries: list[PackageSummary]) -> None:
    header = ("PACKAGE", "DEFAULT CHANNEL", "LATEST (ANY CHANNEL)", "CHANNELS", "DEPRECATED")
    print_table([header] + [(s.name, s.default_channel or "-", _latest(s), _channels(s), s.deprecated or "-")
                            for s in summaries])


def _detail(summary: PackageSummary, catalog: str) -> None:
    print(f"package {summary.name}" + (f", default channel {summary.default_channel}" if summary.default_channel
                                       else "") + (f" (deprecated: {summary.deprecated})" if summary.deprecated
                                                   else ""))
    if summary.latest is not None:
        print(f"latest: {_latest(summary)}, "
              + (f"which OLM v1 refuses: {summary.refusal}" if summary.refusal else
                 "what publish --package installs without --channel or --version (from any channel)"))
    rows = []
    for channel in summary.channels:
        versions = shown_versions(channel.versions)
        more = f", ... ({len(versions) - SHOWN_VERSIONS} more)" if len(versions) > SHOWN_VERSIONS else ""
        name = channel.name + (f" (deprecated: {channel.deprecated})" if channel.deprecated else "")
        rows.append((name, ", ".join(versions[:SHOWN_VERSIONS]) + more or "-"))
    if rows:
        print_table([("CHANNEL", "VERSIONS (newest first)"), *rows])
    default = f" [--channel {summary.default_channel}]" if summary.default_channel_exists else ""
    print(f"install: cosctl publish --package {summary.name} --catalog {shlex.quote(catalog)} -n NAMESPACE{default} "
          "[--version RANGE]")
