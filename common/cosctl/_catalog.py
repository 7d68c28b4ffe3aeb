"""``--catalog``, ``--channel`` and ``--upgrade-constraint-policy``: what publish and diff share to hold a bundle to
a File-Based Catalog's upgrade edges (:mod:`common.bundle.catalogcheck`); and ``--package`` with ``--version``, to
have the catalog pick the bundle as OLM v1 resolves a ClusterExtension (:mod:`common.bundle.catalogsource`). Not a
subcommand itself.

The catalog is read, and what does not depend on the cluster checked (the bundle listed, in the channels),
before the cluster is contacted; the upgrade edge from the installed bundle is checked once the owner's
revisions are read. With ``--package``, a catalog given is read before the cluster is contacted too; one kept from
the owner's latest revision is read once that revision is."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from common.bundle import clustercatalogs
from common.bundle.catalogcheck import (
    CatalogVerdict,
    check_bundle,
    first_install_hint,
    installed_bundle,
    rolling_out_hint,
)
from common.bundle.catalogsource import (
    CatalogSourceError,
    SourceCatalog,
    SourceChoice,
    check_pulled,
    choose_source,
    image_to_pull,
    recorded_source,
    resolve_source,
)
from common.bundle.clustercatalogs import ClusterCatalogsError, is_cluster_catalogs, reference_for, selector_of
from common.bundle.crdsafety import ENFORCEMENT_STRICT
from common.bundle.extension import load_extension
from common.bundle.publish import owner_revisions
from common.bundle.registryv1.catalog import Catalog, load_catalog
from common.bundle.registryv1.imageref import is_image_reference
from common.bundle.registryv1.model import BundleInputError, RegistryV1
from common.bundle.registryv1.resolve import POLICY_CATALOG_PROVIDED, UPGRADE_CONSTRAINT_POLICIES, make_query
from common.bundle.registryv1.source import load_bundle
from common.cluster.interface import ApiError, BadRequest, Cluster, Forbidden, UnknownKind
from common.contract import api
from common.contract.objects import Obj
from common.cosctl._inputs import InlineConfig
from common.cosctl._producer import MissingArgument, StoreGiven, reporter

CATALOG_HELP = ("a File-Based Catalog: a directory or file of JSON or YAML (an index image's /configs, or what `opm "
                "render` wrote), an OCI image layout of an index image (a directory or tar, as `skopeo copy "
                "docker://INDEX oci:DIR` writes it), or the index image itself, pulled: docker://REGISTRY/REPO[:TAG]"
                "[@DIGEST] (a ClusterCatalog's spec.source.image.ref)")
CLUSTER_CATALOGS_HELP = ("; or, to resolve a package, clustercatalogs:[SELECTOR]: the cluster's ClusterCatalogs (OLM "
                         "v1's catalogd), those the label selector picks, each read from the digest catalogd serves, "
                         "by priority, as OLM v1 resolves a ClusterExtension")


# How a command reads a catalog by its reference (a path, an image, or clustercatalogs:SELECTOR) for one package:
# read_catalogs, or catalogs already read.
CatalogReader = Callable[[str, str], tuple[SourceCatalog, ...]]


def _extension_argument(text: str) -> str:
    """``--extension``: an empty value names no file."""
    if not text:
        raise argparse.ArgumentTypeError("empty: give a ClusterExtension manifest file")
    return text


def catalog_argument(text: str) -> str:
    """``--catalog``: an empty value would be read as the working directory; ``clustercatalogs:SELECTOR`` is kept
    as given, its selector the API server's to parse."""
    if not text:
        raise argparse.ArgumentTypeError("empty: give a catalog directory or file, or docker://INDEX")
    if is_cluster_catalogs(text):
        return reference_for(selector_of(text))
    return text


def read_catalogs(reference: str, package: str | Collection[str] | None, command: str,
                  connect: Callable[[], Cluster], *, said_as: str | None = None,
                  every_served: bool = False) -> tuple[SourceCatalog, ...]:
    """The catalogs ``reference`` names, read for ``package`` (or several; None: every package): one path or image; or
    (``clustercatalogs:SELECTOR``) the ClusterCatalogs OLM v1 would walk, listed on the cluster ``connect`` opens,
    each that is served read from its image. When none is left to walk, one entry saying why (resolution then
    finds no bundle, as OLM v1's does); a ClusterCatalog not served, as :func:`resolve_source` meets it, alone
    (``every_served``: beside those that are, for a search, which reads what it can). A cluster without the
    ClusterCatalog API, or refusing the selector, is :class:`ClusterCatalogsError`; one that refuses or fails the
    list, :class:`~common.bundle.clustercatalogs.ClusterCatalogsUnreadable`; both name the reference as ``said_as``
    (default: the option)."""
    def load(image: str) -> Catalog:
        return load_catalog(image, package=package, report=reporter(command))
    if not is_cluster_catalogs(reference):
        return (SourceCatalog(load(reference)),)
    said = said_as or f"--catalog {reference}"
    selector = selector_of(reference)
    way_out = "name a catalog (--catalog docker://REF, a ClusterCatalog's spec.source.image.ref)"
    try:
        listed = connect().list(clustercatalogs.API_VERSION, clustercatalogs.KIND, label_selector=selector or None)
    except UnknownKind:
        raise ClusterCatalogsError(f"{said}: the cluster serves no ClusterCatalogs ({clustercatalogs.API_VERSION}, "
                                   f"OLM v1's catalogd): {way_out}") from None
    except BadRequest as exc:   # the API server's labels.Parse, in its words
        raise ClusterCatalogsError(f"{said}: the API server refused the label selector: {exc.message}") from None
    except ApiError as exc:   # refused (RBAC), unreachable: the owners recording it say so, the others go on
        needs = (f" (reading the cluster's ClusterCatalogs needs list on clustercatalogs.{api.GROUP})"
                 if isinstance(exc, Forbidden) else "")
        raise clustercatalogs.ClusterCatalogsUnreadable(
            f"{said}: listing the cluster's ClusterCatalogs: the cluster refused: {exc.reason}: {exc.message}"
            f"{needs}") from None
    walked = clustercatalogs.walked(listed)
    if not walked:
        return (SourceCatalog(None, nothing=clustercatalogs.nothing_selected(selector, listed)),)
    if not every_served and (unserved := next((c for c in walked if c.image is None), None)) is not None:
        # resolution stops there, with OLM v1's message, whatever the others hold: none is pulled
        return (SourceCatalog(None, unserved.name, unserved.priority, unserved=unserved),)
    out = []
    for catalog in walked:
        if catalog.image is None:   # every_served: the others are read all the same
            out.append(SourceCatalog(None, catalog.name, catalog.priority, unserved=catalog))
            continue
        try:
            out.append(SourceCatalog(load(catalog.image), catalog.name, catalog.priority))
        except BundleInputError as exc:
            raise type(exc)(f"ClusterCatalog {catalog.name}: {exc}", exc.hints) from None
    return tuple(out)


def add_catalog_arguments(parser: argparse.ArgumentParser, *, package: str = "", by_path: bool = True) -> None:
    """The catalog options; with ``package`` (what giving ``--package`` does, in the command's words), also
    ``--package`` and ``--version``; ``by_path`` False for a command that holds no bundle given by path to a catalog
    (``rbac``: the catalog options go with ``--package`` only)."""
    held = ("Hold a registry+v1 bundle to a File-Based Catalog, as OLM v1 does when it resolves a ClusterExtension "
            "pinned to the bundle's version: the bundle must be the catalog's, in the channels given, and an upgrade "
            "its channels allow from the installed bundle (replaces, skips, skipRange).")
    by_package = ("Name a package instead of a bundle, as a ClusterExtension does: the catalog picks the bundle "
                  "(what cosctl resolve shows), its image is pulled, and the revision records where it came from, so "
                  "that the next --package run keeps --catalog, --channel and --version unless given "
                  "(--upgrade-constraint-policy is for one run, as always).")
    group = parser.add_argument_group(   # filled: a command with a raw description formatter prints it as given
        "catalog", textwrap.fill(" ".join(part for part, on in ((held, by_path), (by_package, bool(package))) if on),
                                 width=76))
    kept = "; with --package, default: what the owner's latest revision records" if package else ""
    if package:
        group.add_argument("--extension", default=None, metavar="FILE", type=_extension_argument,
                           help=f"instead of --package and the install options, {package} what an OLM v1 "
                                "ClusterExtension manifest says (YAML or JSON, as kubectl get clusterextension NAME "
                                "-o yaml writes it): its name is the owner, and spec.namespace, serviceAccount, "
                                "source.catalog (packageName, channels, version, upgradeConstraintPolicy), "
                                "config.inline, install.preflight.crdUpgradeSafety and progressDeadlineMinutes are "
                                "the options; without --catalog, the ClusterCatalogs its source.catalog.selector "
                                "picks (unless the owner was published from a catalog by path or image, which it "
                                "keeps)")
        group.add_argument("--package", default=None, metavar="NAME",
                           help=f"instead of DIR|FILE, {package} the bundle of package NAME that OLM v1 would "
                                "install or upgrade to from the catalog (a ClusterExtension's "
                                "spec.source.catalog.packageName), pulled from the image the catalog names")
        group.add_argument("--version", default=None, metavar="RANGE",
                           help="with --package: a version range, as spec.source.catalog.version (Masterminds/semver: "
                                f"'>=1.2, <2', '~1.2', '1.2.x'); '' for any version{kept}")
    group.add_argument("--catalog", default=None, metavar="DIR|FILE", type=catalog_argument,
                       help=CATALOG_HELP + (CLUSTER_CATALOGS_HELP if package else "") + kept)
    group.add_argument("--channel", dest="channels", action="append", default=None, metavar="NAME",
                       help="a channel the bundle must be in, as a ClusterExtension's spec.source.catalog.channels "
                            "(repeatable; default: any" + ("; with --package, default: the channels the owner's latest "
                                                           "revision records, '' for any)" if package else ")"))
    group.add_argument("--upgrade-constraint-policy", choices=UPGRADE_CONSTRAINT_POLICIES,
                       default=POLICY_CATALOG_PROVIDED, action=StoreGiven,
                       help="CatalogProvided (default): only an upgrade the catalog allows from the installed bundle; "
                            "SelfCertified: any bundle of the package, downgrades included (OLM v1's "
                            "spec.source.catalog.upgradeConstraintPolicy), for this run only")


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
    if is_cluster_catalogs(args.catalog):
        raise MissingArgument(f"--catalog {args.catalog}: the cluster's ClusterCatalogs are read for --package only; "
                              "a bundle given by path is held to the one catalog named (a ClusterCatalog's "
                              "spec.source.image.ref as docker://REF)")
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


@dataclass(frozen=True, slots=True)
class PackageRun:
    """``--package``: the bundle the catalog resolved to, pulled, and what was read on the way (the owner's
    revisions, oldest first, on ``cluster``), with the annotation that records the source on the revision."""

    owner: str
    cluster: Cluster
    revisions: list[Obj]
    bundle: RegistryV1
    image: str
    catalog: CatalogRun
    choice: SourceChoice
    annotations: dict[str, str]


def check_package_arguments(args: argparse.Namespace, inputs: Sequence[str], command: str = "publish") -> bool:
    """Whether ``--package`` (or ``--extension``, which fills it and the install options in) is given; what cannot
    go with it (``inputs``: the command's DIR|FILE arguments, a ``--bundle-version``), or ``--version`` without it,
    is a usage error."""
    if getattr(args, "extension", None) is not None:
        take_extension(args, command)
    if args.package is None:
        if args.version is not None:
            raise MissingArgument("--version: only with --package (a bundle given by path is its own version)")
        return False
    if inputs:
        raise MissingArgument(f"--package {args.package} and {' '.join(inputs)}: give one or the other (with "
                              "--package the catalog picks the bundle)")
    if getattr(args, "bundle_version", None):
        raise MissingArgument("--bundle-version with --package: the bundle's own version is recorded")
    return True


def resolve_package(args: argparse.Namespace, command: str, say: Callable[[str], None], *,
                    read: CatalogReader | None = None) -> PackageRun:
    """Resolve ``--package`` as OLM v1 resolves a ClusterExtension over the owner's installed bundle, ``say`` which
    bundle and why, and pull it. Options not given are kept from the owner's latest revision's record. ``read``
    reads a kept catalog (``cosctl upgrade`` hands out the catalogs it has read already)."""
    package = str(args.package)
    owner = args.owner or package
    if args.version:
        make_query(package, version=args.version)  # a range OLM v1 refuses: said before anything is read
    given = args.catalog if args.catalog is not None and not is_cluster_catalogs(args.catalog) else None
    given_read = read_catalogs(given, package, command, lambda: args.connect(args)) if given is not None else None
    cluster = args.connect(args)
    revisions = owner_revisions(cluster, owner)
    latest = revisions[-1] if revisions else None
    catalog, said_as = catalog_to_record(args, package, latest, command)
    choice = choose_source(package, catalog=catalog, channels=args.channels, version=args.version, latest=latest)
    source = choice.source
    if given_read is not None:
        catalogs = given_read
    elif catalog is not None:   # clustercatalogs:SELECTOR, read once the cluster is open
        catalogs = read_catalogs(source.catalog, package, command, lambda: cluster, said_as=said_as)
    else:
        catalogs = kept_catalog(choice, command, read, lambda: cluster)
    installed = installed_bundle(revisions)
    if (rolling := rolling_out_hint(installed) if installed is not None else first_install_hint(revisions)):
        print(f"cosctl {command}: warning: {rolling}", file=sys.stderr)
    chosen, resolution = resolve_source(catalogs, choice, installed, policy=args.upgrade_constraint_policy)
    read_from = chosen.catalog
    assert read_from is not None   # resolution stops at a catalog not read
    kept = f" ({', '.join(choice.kept)} kept from {choice.kept_from})" if choice.kept_from else ""
    if installed is not None and installed.bundle.name == resolution.bundle.name:
        what = f"the installed bundle {resolution.bundle.name} ({resolution.version})"
    else:
        what = f"{resolution.bundle.name} ({resolution.version})" + (
            f" over {installed.bundle.name}" if installed is not None else "")
    where = chosen.label + (f" (priority {chosen.priority}, {chosen.source})" if chosen.name is not None else "")
    say(f"package {package} resolves to {what} in {where}{kept}: {resolution.bundle.image}")
    image = image_to_pull(resolution.bundle, read_from)
    bundle = load_bundle(image, reporter(command))
    check_pulled(bundle, resolution.bundle, source)
    return PackageRun(owner, cluster, revisions, bundle, image,
                      CatalogRun(read_from, bundle, source.channels, args.upgrade_constraint_policy), choice,
                      {api.ANNOTATION_BUNDLE_SOURCE: source.to_annotation()})


def catalog_to_record(args: argparse.Namespace, package: str, latest: Obj | None, command: str) -> \
        tuple[str | None, str | None]:
    """The catalog the command line (or a ClusterExtension manifest) names, as the revision records it (None: keep
    the latest revision's record), and how messages name it when a manifest's selector chose it. A manifest's
    selector not used because the owner keeps the catalog it was published from is a warning."""
    catalog = _recordable(args.catalog)
    if catalog is not None or getattr(args, "extension_catalogs", None) is None:
        return catalog, None
    catalog = _extension_catalogs(args.extension_catalogs, package, latest)
    if catalog is None:
        if args.extension_selector:
            print(f"cosctl {command}: warning: {args.extension}: spec.source.catalog.selector is not used: the "
                  "catalog the owner was published from is kept (give --catalog clustercatalogs: to resolve from "
                  "the cluster's ClusterCatalogs)", file=sys.stderr)
        return None, None
    return catalog, f"{args.extension}: spec.source.catalog.selector"


def _extension_catalogs(by_selector: str, package: str, latest: Obj | None) -> str | None:
    """Where a ClusterExtension manifest given without ``--catalog`` resolves from: the ClusterCatalogs its selector
    picks, as OLM v1 resolves it; but a catalog the owner's latest revision records by path or image (published
    with ``--catalog``) is kept, as ``--package`` keeps it (None: keep it)."""
    try:
        recorded = recorded_source(latest) if latest is not None else None
    except CatalogSourceError:
        return by_selector   # a record cosctl did not write: the manifest says where
    if recorded is not None and recorded.package == package and not is_cluster_catalogs(recorded.catalog):
        return None
    return by_selector


def _recordable(catalog: str | None) -> str | None:
    """The catalog as the revision records it: an image reference or ClusterCatalogs' selector as given, a path
    made absolute (a later run may start elsewhere)."""
    if catalog is None or is_image_reference(catalog) or is_cluster_catalogs(catalog):
        return catalog
    return os.path.abspath(os.path.expanduser(catalog))


def kept_catalog(choice: SourceChoice, command: str, read: CatalogReader | None,
                 connect: Callable[[], Cluster]) -> tuple[SourceCatalog, ...]:
    """The catalogs the owner's latest revision records, read (by ``read``, when given); a failure says where they
    were kept from."""
    try:
        if read is not None:
            return read(choice.source.catalog, choice.source.package)
        return read_catalogs(choice.source.catalog, choice.source.package, command, connect,
                             said_as=f"catalog {choice.source.catalog}")
    except BundleInputError as exc:  # not there any more, or its registry refuses: say where it came from
        raise type(exc)(f"the catalog kept from ClusterObjectSet {choice.kept_from}: {exc} (give --catalog to "
                        "resolve from another)", exc.hints) from None


# The options a ClusterExtension gives, as (attribute, flag, its default, the manifest's field): given on the command
# line as well, they are refused rather than one silently winning. Only those the command has are looked at.
_EXTENSION_OPTIONS = (
    ("package", "--package", None, "spec.source.catalog.packageName"),
    ("owner", "--owner", None, "metadata.name"),
    ("namespace", "-n/--namespace", None, "spec.namespace"),
    ("service_account", "--service-account", None, "spec.serviceAccount.name"),
    ("channels", "--channel", None, "spec.source.catalog.channels"),
    ("version", "--version", None, "spec.source.catalog.version"),
    ("upgrade_constraint_policy", "--upgrade-constraint-policy", POLICY_CATALOG_PROVIDED,
     "spec.source.catalog.upgradeConstraintPolicy"),
    ("config", "--config", None, "spec.config.inline"),
    ("crd_upgrade_safety", "--crd-upgrade-safety", ENFORCEMENT_STRICT, "spec.install.preflight.crdUpgradeSafety"),
    ("progress_deadline_minutes", "--progress-deadline-minutes", None, "spec.progressDeadlineMinutes"),
)


def take_extension(args: argparse.Namespace, command: str) -> None:
    """``--extension FILE``: the ClusterExtension's fields as the command's options (:mod:`common.bundle.extension`).
    The manifest is the whole truth, as it is for OLM v1: what it leaves out (channels, a range, a configuration)
    is none, not what the owner's latest revision recorded."""
    path = str(args.extension)
    extension = load_extension(path)
    explicit = getattr(args, "given", None) or set()   # options with a default, given (StoreGiven)
    given = [(flag, field) for attribute, flag, default, field in _EXTENSION_OPTIONS
             if hasattr(args, attribute) and (getattr(args, attribute) != default or attribute in explicit)]
    if given:
        flag, field = given[0]
        raise MissingArgument(f"{flag} and --extension {path}: the ClusterExtension says it ({field}); give one or "
                              "the other")
    for warning in extension.warnings:   # a key written twice
        print(f"cosctl {command}: warning: {warning}", file=sys.stderr)
    if args.catalog is None:   # where OLM v1 resolves it from: the ClusterCatalogs (resolve_package decides)
        args.extension_catalogs = reference_for(extension.selector)
        args.extension_selector = extension.selector
    elif extension.selector:
        print(f"cosctl {command}: warning: {path}: spec.source.catalog.selector is not used: --catalog "
              f"{args.catalog} names the catalog", file=sys.stderr)
    args.package, args.owner, args.namespace = extension.package, extension.name, extension.namespace
    args.channels, args.version = list(extension.channels), extension.version
    args.upgrade_constraint_policy = extension.policy
    if hasattr(args, "service_account"):
        args.service_account = extension.service_account
    if hasattr(args, "config"):
        args.config = InlineConfig(extension.config, f"{path}: spec.config.inline")
    if hasattr(args, "crd_upgrade_safety") and extension.crd_upgrade_safety is not None:
        args.crd_upgrade_safety = extension.crd_upgrade_safety
    if hasattr(args, "progress_deadline_minutes"):
        args.progress_deadline_minutes = extension.progress_deadline_minutes
