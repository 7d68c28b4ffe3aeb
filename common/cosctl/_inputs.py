"""What ``pack``, ``publish`` and ``diff`` read: plain manifests, or a registry+v1 bundle rendered as OLM v1 does.

A bundle (a directory with ``metadata/annotations.yaml``, an OCI image layout of a bundle image, or a bundle image to
pull, ``docker://REF``) is recognised wherever manifests are accepted, and must then be the only input: its objects
are OLM v1's rendering for the install namespace, configuration and certificate provider given
(shared/spec/bundles.md §4), and from there on they are phased, packed and published exactly as plain manifests are.

``-n``/``--namespace`` is the bundle's install namespace. With plain manifests it keeps the meaning it always had
in these commands, the namespace of the object-data Secrets (what ``--system-namespace`` says in both cases), so
scripts written before bundles keep working.

When a bundle is published (or diffed) for an owner whose latest revision was itself made from a bundle, every
option not given on the command line is taken from that revision (:func:`.install.recorded_options`): the next
bundle version installs where and how the previous one did. When the new bundle's schema refuses the configuration
kept that way, nothing is done and the message says where the configuration came from.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from common.bundle.packing import DEFAULT_OWNER_KIND
from common.bundle.phasing import Phase, sort_into_phases
from common.bundle.registryv1.config import load_config_file
from common.bundle.registryv1.confighints import dropped_keys
from common.bundle.registryv1.install import (
    CERT_PROVIDERS,
    InstallOptions,
    owned_objects,
    recorded_options,
    render_bundle,
    revision_annotations,
    revision_objects,
)
from common.bundle.registryv1.model import BundleInputError, ConfigurationError, RegistryV1
from common.bundle.registryv1.oci import tar_refusal
from common.bundle.registryv1.render import NO_PROVIDER
from common.bundle.registryv1.source import MANIFESTS_DIR, enclosing_bundle, is_bundle, load_bundle
from common.contract import api
from common.contract.objects import Obj
from common.cosctl._producer import MissingArgument, UsageError, load_phases, reporter


@dataclass(slots=True)
class Inputs:
    """Phased objects ready to pack, and what the revision carries besides them when they came from a bundle."""

    phases: list[Phase]
    bundle: RegistryV1 | None = None
    options: InstallOptions | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    kept_from: str | None = None  # the revision whose options completed the command line's, if any
    owner_kind: str | None = None  # a bundle's owner kind, --owner-kind else the latest revision's (on its objects)

    @property
    def default_owner(self) -> str | None:
        """A bundle's revisions belong to its package unless ``--owner`` says otherwise (OLM v1 names the
        ClusterExtension; the package name is what an admin would call it)."""
        return self.bundle.package_name if self.bundle is not None else None


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The namespace options and the bundle options (``--config``, ``--cert-provider``, ``--create-namespace``)."""
    parser.add_argument("-n", "--namespace", dest="namespace", default=None, metavar="NS",
                        help="registry+v1 bundle: the install namespace (OLM v1's ClusterExtension spec.namespace); "
                             "plain manifests: the namespace of the object-data Secrets, as --system-namespace")
    parser.add_argument("--system-namespace", dest="system_namespace", default=None, metavar="NS",
                        help=f"namespace of the object-data Secrets (default {api.DEFAULT_SYSTEM_NAMESPACE})")
    bundle = parser.add_argument_group(
        "registry+v1 bundles", "A bundle directory, OCI image layout (directory or tar) or bundle image (docker://REF, "
        "pulled as OLM v1 pulls it) is rendered as OLM v1 "
        "renders it; on publish, options not given are kept from the owner's latest revision.")
    bundle.add_argument("--config", default=None, metavar="FILE",
                        help="the configuration (watchNamespace, deploymentConfig) as YAML or JSON: what a "
                             "ClusterExtension's spec.config.inline holds; an empty file means none")
    bundle.add_argument("--cert-provider", default=None, choices=CERT_PROVIDERS,
                        help=f"certificates for the bundle's webhooks (default {NO_PROVIDER}: a bundle with webhooks "
                             "is refused, as OLM v1 refuses it)")
    bundle.add_argument("--create-namespace", action=argparse.BooleanOptionalAction, default=None,
                        help="add the install namespace to the revision as a Namespace object (on publish, kept from "
                             "the owner's latest revision unless --no-create-namespace)")


def _refuse_part_of_a_bundle(path: str) -> None:
    """Refuse what is a bundle's part or holder rather than manifests, naming the bundle to give instead: read as
    plain manifests, a bundle's ``manifests/`` would pack its ClusterServiceVersion as an object (which nothing
    acts on without OLM v0), a directory holding bundles their ``annotations.yaml`` files, a tar its bytes."""
    p = Path(path)
    if p.is_dir():
        if (shown := enclosing_bundle(p)) is not None:
            raise BundleInputError(
                f"{path}: the {MANIFESTS_DIR}/ directory of the registry+v1 bundle {shown}: give the bundle "
                "directory itself, which is rendered as OLM v1 renders it (read as plain manifests, its "
                "ClusterServiceVersion would be packed as an object that nothing acts on without OLM)")
        inner = _bundles_below(p)
        if inner:
            listed = ", ".join(inner[:_BUNDLES_LISTED]) + (", ..." if len(inner) > _BUNDLES_LISTED else "")
            raise BundleInputError(f"{path}: holds registry+v1 bundles in {listed}: give one bundle directory (a "
                                   "bundle must be the only input)")
    elif p.is_file() and (problem := tar_refusal(p)) is not None:  # a tar, and no layout (not a bundle)
        raise BundleInputError(f"{path}: {problem}")


_BUNDLES_LISTED = 5


def _bundles_below(root: Path) -> list[str]:
    """The bundle directories below ``root`` (relative, sorted), in the directories the manifest reader reads:
    hidden ones skipped, symbolic links not followed; a bundle's own subdirectories are not searched."""
    found: list[str] = []
    for current, dirs, _ in os.walk(root):
        keep = []
        for name in sorted(dirs):
            if name.startswith("."):
                continue
            child = Path(current, name)
            if is_bundle(child):
                found.append(child.relative_to(root).as_posix())
            else:
                keep.append(name)
        dirs[:] = keep
    return found


def bundle_input(paths: list[str]) -> str | None:
    """The bundle among ``paths``, or ``None`` for plain manifests; a bundle must be the only input. A path
    that is part of a bundle or holds some (its ``manifests/``, a package directory of versions, a tar that is
    no image layout) is refused (:class:`BundleInputError`) rather than read as manifests."""
    bundles = [p for p in paths if p != "-" and is_bundle(p)]
    if not bundles:
        for path in paths:
            if path != "-":
                _refuse_part_of_a_bundle(path)
        return None
    if len(paths) > 1:
        raise UsageError(f"{bundles[0]}: a registry+v1 bundle must be the only input (got {len(paths)} inputs); "
                         "publish other manifests as a revision of their own")
    return bundles[0]


def system_namespace(args: argparse.Namespace, *, bundle: bool) -> str:
    """Where the object-data Secrets go: ``--system-namespace``, else (plain manifests only) ``-n``."""
    if args.system_namespace:
        return str(args.system_namespace)
    if not bundle and args.namespace:
        return str(args.namespace)
    return api.DEFAULT_SYSTEM_NAMESPACE


def install_options(args: argparse.Namespace, recorded: InstallOptions | None = None, *,
                    command: str) -> InstallOptions:
    """The options from the command line, each one missing taken from ``recorded`` (the owner's latest revision).
    What the ``--config`` file says that OLM v1 would take without a word is printed as warnings of ``command``."""
    namespace = args.namespace or (recorded.namespace if recorded else None)
    if not namespace:
        raise MissingArgument("a registry+v1 bundle needs -n/--namespace NS: the namespace to install it in")
    if args.config is not None:
        config = load_config(args.config, command, warn=not getattr(args, "config_warned", False))
        args.config_warned = True  # `diff A B` renders two bundles with one --config: its warnings once
    else:
        config = recorded.config if recorded else None
    provider = args.cert_provider or (recorded.cert_provider if recorded else NO_PROVIDER)
    create = args.create_namespace if args.create_namespace is not None else bool(
        recorded and recorded.create_namespace)
    return InstallOptions(namespace, config, provider, create)


@dataclass(frozen=True, slots=True)
class InlineConfig:
    """A configuration given inline (a ClusterExtension's ``spec.config.inline``: ``--extension``) where ``--config``
    gives a file; ``value`` None is none. ``where`` names it in warnings."""

    value: Obj | None
    where: str


def load_config(path: str | InlineConfig, command: str, *, warn: bool = True) -> Obj | None:
    """The ``--config`` file (:func:`load_config_file`), its warnings printed as ``command``'s (with ``warn``): a
    key written twice, a key of ``deploymentConfig`` that OLM v1 drops (a typo inside a toleration or an env entry
    would otherwise change the operator without a word). An :class:`InlineConfig` is its value, with the same
    warnings about dropped keys."""
    warnings: list[str] = []
    if isinstance(path, InlineConfig):
        warnings = [f"{path.where}: {note}" for note in dropped_keys(path.value)] if path.value is not None else []
        for note in warnings if warn else ():
            print(f"cosctl {command}: warning: {note}", file=sys.stderr)
        return path.value
    config = load_config_file(path, warnings)
    for note in warnings if warn else ():
        print(f"cosctl {command}: warning: {note}", file=sys.stderr)
    return config


def _check_bundle_only_options(args: argparse.Namespace) -> None:
    given = [flag for flag, value in (("--config", args.config), ("--cert-provider", args.cert_provider),
                                      ("--create-namespace", args.create_namespace)) if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: only for a registry+v1 bundle input (a directory with "
                         "metadata/annotations.yaml, or an OCI image layout of a bundle image)")


def load_inputs(args: argparse.Namespace, *, command: str, paths: list[str] | None = None,
                recorded: Obj | None = None, bundle: RegistryV1 | None = None, owner: str | None = None,
                owner_kind: str | None = None) -> Inputs:
    """Read ``paths`` (default ``args.paths``): a bundle is rendered with the options of ``args``, completed from
    ``recorded`` (the owner's latest revision, when the caller has read it); plain manifests are loaded as ever.
    ``bundle`` is the bundle of ``paths`` when the caller has loaded it already (:func:`peek_bundle`)."""
    paths = list(args.paths if paths is None else paths)
    path = bundle_input(paths)
    if path is None:
        _check_bundle_only_options(args)
        return Inputs(load_phases(paths, command=command))
    if bundle is None:
        bundle = load_bundle(path, reporter(command))
    kept = recorded_options(recorded) if recorded is not None else None
    options = install_options(args, kept, command=command)
    try:
        objects = render_bundle(bundle, options)
    except ConfigurationError as exc:
        if args.config is None and kept is not None and kept.config is not None and recorded is not None:
            raise ConfigurationError(
                f"the configuration kept from ClusterObjectSet {recorded['metadata']['name']} does not fit "
                f"{bundle.csv_name}: {exc}\nnothing was done: give --config FILE with a configuration this bundle "
                f"accepts (cosctl render {path} --config-schema prints its schema)", exc.hints) from None
        raise
    objects, notes = revision_objects(objects)
    for note in notes:
        print(f"cosctl {command}: warning: {note}", file=sys.stderr)
    annotations = revision_annotations(bundle, options)
    if getattr(args, "bundle_version", None):
        annotations[api.ANNOTATION_BUNDLE_VERSION] = args.bundle_version
    # the owner and its kind as the revision compared with says them, unless given: the objects carry them
    labels = ((recorded or {}).get("metadata") or {}).get("labels") or {}
    owner_kind = (getattr(args, "owner_kind", None) or owner_kind or labels.get(api.LABEL_OWNER_KIND)
                  or DEFAULT_OWNER_KIND)
    objects = owned_objects(objects, owner=owner or getattr(args, "owner", None) or labels.get(api.LABEL_OWNER_NAME)
                            or bundle.package_name, owner_kind=str(owner_kind), annotations=annotations)
    given = (args.namespace, args.config, args.cert_provider, args.create_namespace)
    kept_from = str(recorded["metadata"]["name"]) if kept is not None and recorded is not None and None in given \
        else None
    return Inputs(sort_into_phases(objects), bundle, options, annotations, kept_from, str(owner_kind))


def peek_bundle(paths: list[str], command: str) -> RegistryV1 | None:
    """The bundle among ``paths``, loaded (for its package name before the owner is known), or ``None``."""
    path = bundle_input(paths)
    return load_bundle(path, reporter(command)) if path is not None else None

