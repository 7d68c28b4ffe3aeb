"""``cosctl diff``: what publishing would change, or what differs between two revisions, object by object.

Each side is a revision's content: manifests on disk (plain manifests, or the output of ``cosctl pack``, whose
refs are resolved against the Secrets rendered with it), a ClusterObjectSet on the cluster (refs resolved by
reading its Secrets), or, with ``--owner``, a revision number of that owner. ``cosctl diff DIR --owner shop``
compares the owner's latest Active revision with DIR: exactly what ``publish`` would change. Exit codes follow
diff(1): 0 no difference, 1 different, 2 trouble (unreadable input, missing Secrets, no cluster).

A source that exists on disk is read from disk. One that looks like a path (``-``, a ``/`` in it, a ``.yaml``,
``.yml`` or ``.json`` ending, a leading ``.`` or ``~``; no ClusterObjectSet name has any of these but the
endings) and does not exist is a mistyped path, reported as such before any cluster is asked; any other
source names a revision, and when neither the disk nor the cluster has it the message says both.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from common.bundle.catalogcheck import CatalogVerdict
from common.bundle.contents import ContentUnavailable, cluster_reader, documents_reader, is_cos, resolve_phases
from common.bundle.crdcheck import CRDCheckError, controllers, dropped_crds_in_use, unsafe_crd_upgrades
from common.bundle.crdsafety import CRDDecodeError, assume_stored_versions, is_crd, preflight
from common.bundle.dependencies import declared as declared_dependencies
from common.bundle.dependencies import unmet
from common.bundle.diff import diff
from common.bundle.manifests import STDIN, load
from common.bundle.permcheck import PermissionCheckError
from common.bundle.phasing import Phase, sort_into_phases
from common.bundle.publish import active_revisions, owner_revisions, permission_findings, revision_of
from common.bundle.registryv1.imageref import is_image_reference
from common.bundle.registryv1.model import RegistryV1
from common.cluster.interface import Cluster, NotFound
from common.contract import api
from common.contract.objects import Obj
from common.contract.serviceaccount import declared
from common.cosctl._catalog import (
    CatalogRun,
    add_catalog_arguments,
    check_package_arguments,
    open_catalog,
    resolve_package,
    warn_deprecated,
)
from common.cosctl._inputs import add_input_arguments, bundle_input, load_inputs, peek_bundle, system_namespace
from common.cosctl._producer import ConnectError, UsageError, add_cluster_arguments, run

EXIT_SAME = 0
EXIT_DIFFERENT = 1
EXIT_TROUBLE = 2

EXAMPLE = """\
example (a page size, a Secret value and a Service port changed, a NetworkPolicy added):
  $ cosctl diff v2 --owner shop
  --- shop-1
  +++ v2
  added    NetworkPolicy.networking.k8s.io shop/web (phase policies)
      --- shop-1 NetworkPolicy.networking.k8s.io shop/web
      +++ v2 NetworkPolicy.networking.k8s.io shop/web
      @@ -0,0 +1,11 @@
      +apiVersion: networking.k8s.io/v1
      +kind: NetworkPolicy
      ...
  changed  ConfigMap shop/settings (phase configuration)
      --- shop-1 ConfigMap shop/settings
      +++ v2 ConfigMap shop/settings
      @@ -1,7 +1,7 @@
       apiVersion: v1
       data:
         currency: EUR
      -  page-size: '20'
      +  page-size: '50'
       kind: ConfigMap
       metadata:
         name: settings
  changed  Secret shop/db (phase configuration)
      --- shop-1 Secret shop/db
      +++ v2 Secret shop/db
      @@ -4,4 +4,4 @@
         name: db
         namespace: shop
       stringData:
      -  password: <hidden>
      +  password: <changed>
  changed  Service shop/web (phase infrastructure)
      ...
  1 added, 0 removed, 3 changed, 0 moved, 2 unchanged

--stat: one line per object, its inserted and deleted lines counted as in git diff --stat:
  $ cosctl diff v2 --owner shop --stat
  --- shop-1
  +++ v2
  added    NetworkPolicy.networking.k8s.io shop/web (phase policies) | 11 +++++++++++
  changed  ConfigMap shop/settings (phase configuration)             |  2 +-
  changed  Secret shop/db (phase configuration)                      |  2 +-
  changed  Service shop/web (phase infrastructure)                   |  2 +-
  1 added, 0 removed, 3 changed, 0 moved, 2 unchanged; 14 insertions(+), 3 deletions(-)

Multi-line strings (scripts, files in ConfigMaps) are shown in YAML block style (|), one line per line.
A source that looks like a path (a / in it, a .yaml/.yml/.json ending, a leading . or ~) must exist;
any other source that is not a file or directory is a ClusterObjectSet name on the cluster.
exit codes: 0 no difference, 1 different, 2 trouble"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "diff", help="show what publish would change, or compare two revisions, object by object",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        description="cosctl diff DIR|FILE... --owner OWNER: the owner's latest Active revision against the "
                    "manifests (what publish would change, its CRD upgrade safety check and permission preflight "
                    "included). cosctl diff A "
                    "B: two revisions, each a directory or "
                    "file (plain manifests, cosctl pack output, or a registry+v1 bundle, rendered with the same -n, "
                    "--config and --cert-provider on both sides: an upgrade's changes, offline), a ClusterObjectSet "
                    "name on the cluster, or with --owner a revision number. Objects added, removed, changed (with "
                    "a unified diff of the cleaned manifests; Secret values masked) and moved to another phase. "
                    "When B's CustomResourceDefinitions would break custom resources stored under A's (or, with "
                    "--owner, under the cluster's), the refusal publish would give follows the summary; so does "
                    "the refusal of --catalog, for a bundle the catalog does not allow over the installed one.")
    parser.add_argument("sources", nargs="*", metavar="DIR|FILE|REV",
                        help="manifests, pack output or bundles on disk, ClusterObjectSet names, or revision numbers "
                             "(none with --package)")
    parser.add_argument("--owner", default=None,
                        help="compare with this owner's latest Active revision; REV numbers are its revisions")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("--stat", action="store_true",
                        help="a summary: one line per object with its inserted/deleted line counts, and the totals "
                             "(with -o json: every record without its diff)")
    add_input_arguments(parser)
    add_catalog_arguments(parser, package="compare the owner's latest Active revision with")
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    return run("diff", lambda: _diff(args), failure=EXIT_TROUBLE)


PATH_ENDINGS = (".yaml", ".yml", ".json")


def _expanded(source: str) -> str:
    """``~`` expanded, for a path the shell left alone (quoted, or after ``=``)."""
    return source if source == STDIN or is_image_reference(source) else str(Path(source).expanduser())


def _is_path(source: str) -> bool:
    """An existing file or directory (or standard input), or a bundle image to pull: a local side."""
    return source == STDIN or is_image_reference(source) or Path(_expanded(source)).exists()


def looks_like_path(source: str) -> bool:
    """A source no one would mean as a ClusterObjectSet name: a mistyped path, never to be looked up."""
    return (source == STDIN or "/" in source or os.sep in source or source.endswith(PATH_ENDINGS)
            or source.startswith((".", "~")))


def check_paths(sources: list[str]) -> None:
    """Every source that looks like a path exists: said before anything else (the cluster) is tried."""
    for source in sources:
        if looks_like_path(source) and not _is_path(source):
            raise UsageError(f"{source}: no such file or directory")


def local_phases(paths: list[str], args: argparse.Namespace | None = None, *,
                 recorded: Obj | None = None, bundle: RegistryV1 | None = None,
                 owned_by: Obj | None = None) -> list[Phase]:
    """Phases from files: a registry+v1 bundle rendered with the options of ``args`` (completed from the
    ``recorded`` revision, as publish completes them; its objects labelled with the owner of ``owned_by``, the
    revision it is compared with, unless ``--owner`` says), ``cosctl pack`` output (one ClusterObjectSet, its
    Secrets beside it) or plain manifests, sorted and cleaned as ``publish`` does."""
    if args is not None and len(paths) == 1 and bundle_input(paths) is not None:
        labels = ((owned_by or {}).get("metadata") or {}).get("labels") or {}
        inputs = load_inputs(args, command="diff", paths=paths, recorded=recorded, bundle=bundle,
                             owner=getattr(args, "owner", None) or labels.get(api.LABEL_OWNER_NAME),
                             owner_kind=labels.get(api.LABEL_OWNER_KIND))
        if inputs.bundle is not None and inputs.options is not None:  # stdout stays a diff: say it on stderr
            kept = f" (options kept from {inputs.kept_from})" if inputs.kept_from else ""
            print(f"cosctl diff: bundle {inputs.bundle.csv_name} rendered for namespace {inputs.options.namespace}"
                  f"{kept}", file=sys.stderr)
        return inputs.phases
    documents = [m.obj for m in load(paths)]
    revisions = [d for d in documents if is_cos(d)]
    if not revisions:
        return sort_into_phases(documents)
    if len(revisions) > 1:
        names = ", ".join(str(d["metadata"]["name"]) for d in revisions)
        raise UsageError(f"{' '.join(paths)}: holds {len(revisions)} ClusterObjectSets ({names}); "
                         "compare one revision at a time")
    return resolve_phases(revisions[0], documents_reader(documents))


class _Sides:
    """Lazily connected cluster, shared by both sides."""

    def __init__(self, args: argparse.Namespace, cluster: Cluster | None = None) -> None:
        self.args = args
        self._cluster = cluster

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            self._cluster = self.args.connect(self.args)
        return self._cluster

    def remote(self, cos: Obj) -> list[Phase]:
        # -n is a bundle's install namespace when a side is a bundle, else the Secrets' namespace (as ever)
        bundles = any(_is_path(s) and bundle_input([s]) is not None for s in self.args.sources)
        return resolve_phases(cos, cluster_reader(self.cluster),
                              system_namespace=system_namespace(self.args, bundle=bundles))

    def side(self, source: str, other: Obj | None = None) -> tuple[str, list[Phase], Obj | None]:
        """A source's name, phases and revision (None for files); a bundle compared with the revision ``other`` is
        labelled with its owner."""
        if _is_path(source):
            return source, local_phases([_expanded(source)], self.args, owned_by=other), None
        owner = self.args.owner
        if owner and source.isdigit():
            wanted = int(source)
            for cos in owner_revisions(self._cluster_for(source, f"revision {wanted} of owner {owner}"), owner):
                if revision_of(cos) == wanted:
                    return str(cos["metadata"]["name"]), self.remote(cos), cos
            raise UsageError(f"owner {owner} has no revision {wanted}")
        try:
            cos = self._cluster_for(source, f"a ClusterObjectSet {source}").get(api.API_VERSION, api.KIND, source)
        except NotFound:
            raise UsageError(f"{source}: neither a file or directory nor a ClusterObjectSet on the cluster") from None
        return source, self.remote(cos), cos

    def _cluster_for(self, source: str, what: str) -> Cluster:
        """The cluster, to look ``source`` up on since it is no file; without one, a message saying both."""
        try:
            return self.cluster
        except ConnectError as exc:
            raise UsageError(f"{source}: no such file or directory, nor could {what} be looked up on a cluster: "
                             f"{exc}") from None


def latest_active(revisions: list[Obj]) -> Obj | None:
    active = active_revisions(revisions)
    return active[-1] if active else None


def _diff(args: argparse.Namespace) -> int:
    chosen = None
    if check_package_arguments(args, args.sources, "diff"):  # what publish --package would change
        chosen = resolve_package(args, "diff", lambda line: print(f"cosctl diff: {line}", file=sys.stderr))
        args.sources = [chosen.image]
    elif not args.sources:
        raise UsageError("give two revisions to compare (A B), manifests with --owner OWNER, or --package NAME")
    check_paths(args.sources)
    sides = _Sides(args, chosen.cluster if chosen is not None else None)
    local = all(_is_path(s) for s in args.sources)
    paths = [_expanded(s) for s in args.sources]
    bundle: RegistryV1 | None
    catalog: CatalogRun | None
    owner: str | None
    if chosen is not None:
        bundle, owner, catalog = chosen.bundle, chosen.owner, chosen.catalog
    else:
        bundle = peek_bundle(paths, "diff") if local and len(paths) == 1 else None
        owner = args.owner or (bundle.package_name if bundle is not None else None)
        catalog = open_catalog(args, bundle if owner and local else None, "diff",
                               misuse="only for `cosctl diff BUNDLE` against the owner's revisions", precheck=False)
    verdict: CatalogVerdict | None = None
    if owner and local:
        if bundle is None:
            b = local_phases(paths, args)  # input problems before the cluster
            revisions = owner_revisions(sides.cluster, owner)
        else:  # the bundle renders with the options publish would keep from the owner's latest revision
            revisions = chosen.revisions if chosen is not None else owner_revisions(sides.cluster, owner)
            b = local_phases(paths, args, recorded=revisions[-1] if revisions else None, bundle=bundle)
            verdict = catalog.verdict(revisions) if catalog is not None else None
            warn_deprecated(verdict, "diff")
        b_name = " ".join(args.sources)
        latest = latest_active(revisions)
        a_name, a = (str(latest["metadata"]["name"]), sides.remote(latest)) if latest else (
            f"(owner {owner} has no Active revision)", [])
        cluster, active = sides.cluster, active_revisions(revisions)

        read: dict[str, list[Phase] | None] = {}

        def content(cos: Obj) -> list[Phase] | None:
            """An Active revision's content, each read once for both checks; None when it cannot be read (the
            reconciler reports that revision anyway)."""
            name = str(cos["metadata"]["name"])
            if name not in read:
                try:
                    read[name] = a if cos is latest else sides.remote(cos)
                except ContentUnavailable:
                    read[name] = None
            return read[name]

        def check() -> list[str]:  # what publish's check would say
            try:
                lines = unsafe_crd_upgrades(cluster, b)
            except CRDCheckError as exc:
                return [f"cannot be checked: {exc}"]
            contents = [content(cos) for cos in active]
            if any(c is None for c in contents):   # an older Active revision's content cannot be read
                return lines
            try:
                dropped = dropped_crds_in_use(cluster, [c for c in contents if c is not None], controllers(active), b)
            except CRDCheckError as exc:
                return [*lines, f"cannot be checked: {exc}"]
            return [*lines, *(f"CustomResourceDefinition {crd} is dropped: archiving {crd.controller} would "
                              "delete it and every custom resource of it" for crd in dropped)]

        account = declared(revisions[-1]) if revisions else None

        def permissions() -> list[str]:  # what publish's permission preflight would say, for the kept account
            if account is None:
                return []
            try:
                return permission_findings(cluster, b, account, active, content)
            except PermissionCheckError as exc:
                return [f"cannot be checked: {exc}"]

        def dependencies() -> list[str]:  # what publish warns the cluster lacks of what the bundle depends on
            return unmet(cluster, declared_dependencies(bundle)) if bundle is not None else []
    elif args.owner and len(args.sources) == 1:
        raise UsageError(f"{args.sources[0]}: no such file or directory")
    elif len(args.sources) == 2:
        # a revision side first: a bundle compared with it carries its owner's labels, as publish would give them
        first = 1 if _is_path(args.sources[0]) and not _is_path(args.sources[1]) else 0
        got = {first: sides.side(args.sources[first])}
        got[1 - first] = sides.side(args.sources[1 - first], got[first][2])
        (a_name, a, _), (b_name, b, _) = got[0], got[1]
        held = {str(o["metadata"]["name"]): assume_stored_versions(o) for p in a for o in p.objects if is_crd(o)}

        def check() -> list[str]:  # B's CRDs replacing A's: the upgrade from A to B
            try:
                return preflight((o for p in b for o in p.objects), held.get)
            except CRDDecodeError as exc:
                return [f"cannot be checked: {exc}"]

        def permissions() -> list[str]:  # no cluster to read RBAC from
            return []

        def dependencies() -> list[str]:  # nor to look for what a bundle depends on
            return []
    else:
        raise UsageError("give two revisions to compare (A B), or manifests with --owner OWNER")
    result = diff(a, b, a_name=a_name, b_name=b_name)
    safety = check() if result.different else []  # the same content is no upgrade (publish creates nothing)
    lacking = permissions() if result.different else []
    missing = dependencies()   # publish warns whether or not the content changed
    if args.output == "json":
        checked: dict[str, object] = {} if verdict is None else {"catalog": verdict.to_json()}
        if chosen is not None:  # --package: the bounds it resolved within, and which were kept from which revision
            checked["source"] = chosen.choice.to_json()
        print(json.dumps({**result.to_json(with_diff=not args.stat), "crdUpgradeSafety": safety,
                          "permissions": lacking, "dependencies": missing, **checked}, indent=2))
    else:
        sys.stdout.write(result.render_stat() if args.stat else result.render())
        if safety:
            print(f"CRD upgrade safety: publish refuses {b_name} over {a_name} (unless --crd-upgrade-safety None):")
            print("\n".join(safety))
        if lacking:
            print(f"Permissions: publish refuses {b_name} (unless --preflight-permissions None):")
            print("\n".join(lacking))
        if missing:
            print(f"Dependencies: publish warns that {b_name} depends on what the cluster lacks:")
            print("\n".join(missing))
        if verdict is not None and verdict.refusal is not None:
            unless = " (unless --upgrade-constraint-policy SelfCertified)" if verdict.edge_only else ""
            print(f"Catalog: publish refuses {verdict.bundle}{unless}:")
            print("\n".join([verdict.refusal, *(h for h in verdict.hints if not h.startswith("--"))]))
    return EXIT_DIFFERENT if result.different else EXIT_SAME

