"""What the producer subcommands (pack, diff, publish, rollback, status, history, gc) share: arguments, bundle loading,
YAML rendering, cluster connection and error reporting. Not a subcommand itself (not in ``COMMANDS``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import yaml

from common.bundle import k8syaml
from common.bundle.contents import ContentUnavailable
from common.bundle.crdsafety import ENFORCEMENT_STRICT, ENFORCEMENTS
from common.bundle.manifests import Manifest, ManifestError, load
from common.bundle.packing import NotAdmissible, PackingError, check_probes, probe_problems
from common.bundle.phasing import Phase, PhasingError, sort_into_phases
from common.bundle.publish import Action, PublishError
from common.bundle.registryv1.model import BundleError, BundleInputError, ConfigurationError, RenderError
from common.bundle.registryv1.resolve import ResolutionError
from common.cluster.interface import ApiError, Cluster
from common.contract import api, useragent
from common.contract.objects import Obj
from common.contract.serviceaccount import ServiceAccountRef

# Exit codes shared by the producer subcommands.
EXIT_OK = 0
EXIT_FAILED = 1  # bad input (manifests, names, sizes) or the cluster refused
EXIT_USAGE = 2  # argparse's own code for usage errors



def add_bundle_arguments(parser: argparse.ArgumentParser, *, optional_paths: str = "") -> None:
    """Inputs and the COS fields a producer chooses; ``optional_paths``: what giving no path means, for a command
    that can do without (its help says it)."""
    parser.add_argument("paths", nargs="*" if optional_paths else "+", metavar="DIR|FILE",
                        help="manifest files (YAML multi-document or JSON), directories (recursive), - for stdin; "
                             "or one registry+v1 bundle (a directory, an OCI image layout directory or tar, or a "
                             "bundle image to pull: docker://REGISTRY/REPO[:TAG][@DIGEST])"
                             + (f"; none: {optional_paths}" if optional_paths else ""))
    parser.add_argument("--owner-kind", default=None,
                        help="value of the owner-kind label when --owner is given (default ClusterExtension)")
    parser.add_argument("--collision-protection", default=api.COLLISION_PREVENT,
                        choices=api.COLLISION_PROTECTIONS, help="spec.collisionProtection (default Prevent)")
    parser.add_argument("--progress-deadline-minutes", type=int, default=None, metavar="MIN",
                        help="spec.progressDeadlineMinutes (10..720)")
    parser.add_argument("--progression-probes", default=None, metavar="FILE",
                        help="YAML or JSON file holding the spec.progressionProbes list")
    parser.add_argument("--bundle-version", default=None,
                        help=f"annotation {api.ANNOTATION_BUNDLE_VERSION} (shown in rollout messages)")


class StoreGiven(argparse.Action):
    """Stores the value as ``store`` does, and the destination in the namespace's ``given`` set: whether an option
    with a default was given at all (its default value included), which ``--extension`` must know to refuse saying
    a field twice."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        given: set[str] = getattr(namespace, "given", None) or set()
        given.add(self.dest)
        namespace.given = given


def add_crd_upgrade_safety_argument(parser: argparse.ArgumentParser) -> None:
    """``--crd-upgrade-safety``: OLM v1's ``spec.install.preflight.crdUpgradeSafety.enforcement``, for this run."""
    parser.add_argument("--crd-upgrade-safety", choices=ENFORCEMENTS, default=ENFORCEMENT_STRICT, action=StoreGiven,
                        help="OLM v1's CRD upgrade safety check before a revision is created: Strict (default) "
                             "refuses CustomResourceDefinitions that would break the custom resources stored "
                             "under the cluster's current ones (a removed field or stored version, a removed enum "
                             "value, a new required field, a tighter bound, a changed type or default...) and a "
                             "revision dropping a CRD whose custom resources exist; None skips both, for this run "
                             "only")


def add_preflight_permissions_argument(parser: argparse.ArgumentParser) -> None:
    """``--preflight-permissions``: OLM v1's preflight permission check of the revision's ServiceAccount."""
    parser.add_argument("--preflight-permissions", choices=ENFORCEMENTS, default=ENFORCEMENT_STRICT,
                        help="before a revision naming a ServiceAccount is created, check by the cluster's RBAC that "
                             "the ServiceAccount may make every write the reconciler makes for it (create, patch, "
                             "delete of each object, and holding what its Roles grant), as OLM v1's preflight does: "
                             "Strict (default) refuses and lists every missing rule; None skips the check, for this "
                             "run only")


def service_account_argument(text: str) -> ServiceAccountRef | str:
    """``--service-account NAMESPACE/NAME``, or a bare ``NAME`` (a ServiceAccount of a registry+v1 bundle's install
    namespace, as OLM v1's ClusterExtension names it; :func:`service_account_in`). Argparse reports a bad value
    as a usage error, exit 2."""
    if "/" not in text and text:
        return text
    try:
        return ServiceAccountRef.parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAMESPACE/NAME (or NAME, for a bundle)") from None


def service_account_in(value: ServiceAccountRef | str | None,
                       install_namespace: str | None) -> ServiceAccountRef | None:
    """``--service-account`` made whole: a bare name is a ServiceAccount of the bundle's install namespace."""
    if value is None or isinstance(value, ServiceAccountRef):
        return value
    if not install_namespace:
        raise MissingArgument(f"--service-account {value}: give NAMESPACE/NAME (a bare name means a ServiceAccount "
                              "of a registry+v1 bundle's install namespace)")
    try:
        return ServiceAccountRef.parse(f"{install_namespace}/{value}")
    except ValueError:
        raise MissingArgument(f"--service-account {value}: not a ServiceAccount name") from None


def add_service_account_argument(parser: argparse.ArgumentParser) -> None:
    """``--service-account``: whose rights the revision is applied with (publish, rollback)."""
    parser.add_argument("--service-account", type=service_account_argument, default=None, metavar="[NS/]NAME",
                        help=f"the ServiceAccount the reconciler applies the revision with (annotations "
                             f"{api.ANNOTATION_SERVICE_ACCOUNT_NAME} and {api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE}); "
                             "a bare NAME is one of a registry+v1 bundle's install namespace, as OLM v1's "
                             "ClusterExtension names it; default: the latest revision's")


def add_namespace_argument(parser: argparse.ArgumentParser, *, ignored: bool = False) -> None:
    """``-n``: the namespace of the object-data Secrets; ``ignored`` for a command that reads none (it is accepted
    so that kubectl's habit of ``-n`` does not fail the command, and says so)."""
    parser.add_argument("--system-namespace", "-n", "--namespace", dest="system_namespace",
                        default=api.DEFAULT_SYSTEM_NAMESPACE, metavar="NS",
                        help="accepted as kubectl's -n habit, and ignored: revisions are cluster-scoped and this "
                             "command reads no Secrets" if ignored else
                             f"namespace of the object-data Secrets (default {api.DEFAULT_SYSTEM_NAMESPACE}); "
                             "-n/--namespace as kubectl spells it")


def load_phases(paths: Iterable[str], *, command: str) -> list[Phase]:
    """Load, clean and phase the bundle (raises ManifestError / PhasingError, reported by ``run``); what
    kubectl reads without a word but a reader should hear about is printed as a warning."""
    warnings: list[str] = []
    try:
        manifests = load(list(paths), warnings=warnings)
    finally:
        for warning in warnings:
            print(f"cosctl {command}: warning: {warning}", file=sys.stderr)
    refused = [problem for m in manifests if (problem := _not_a_bundle_object(m)) is not None]
    if refused:
        raise ManifestError(refused)
    return sort_into_phases(m.obj for m in manifests)


def _not_a_bundle_object(manifest: Manifest) -> str | None:
    """Why a manifest is a mistake in a bundle to pack, or None. A ClusterObjectSet would be wrapped in a new
    one (its author wants ``kubectl apply`` or ``cosctl validate``). An object-data Secret is ``cosctl pack``'s
    own output: packed again, it would become an object the reconciler owns, while its revision-name label
    makes publish recovery and ``cosctl gc`` treat it as the leftover of that revision (to delete it when that
    revision is gone, or to give it that revision as owner), so the two would fight over it."""
    obj, source = manifest.obj, manifest.source
    name = (obj.get("metadata") or {}).get("name")
    path = "-" if source.path == "<stdin>" else source.path
    if obj.get("kind") == api.KIND and str(obj.get("apiVersion", "")).startswith(api.GROUP + "/"):
        return (f"{source} {api.KIND}/{name}: a ClusterObjectSet cannot be packed into another one; to create it "
                f"as it is, use `kubectl apply -f {path}` (`cosctl validate {path}` checks it first)")
    if obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1" and obj.get("type") == api.SECRET_TYPE:
        return (f"{source} Secret/{name}: an object-data Secret ({api.SECRET_TYPE}) is what `cosctl pack` "
                "writes, not a manifest to pack: pack the manifests it came from (or apply it with its "
                "ClusterObjectSet as it is)")
    return None


PROBES_FILE_MAX_BYTES = 1 << 20
"""A progression probes file longer than this is refused (the probes go into the COS, itself at most 1.5 MiB)."""


def load_probes(path: str | None) -> list[Obj] | None:
    """The ``spec.progressionProbes`` list from a YAML/JSON file (shape errors are PackingError), read as
    kubectl reads YAML, like the manifests. Every refusal names the file: judged later, inside the packed
    revision, the same probes were refused naming only a COS field."""
    if path is None:
        return None
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(PROBES_FILE_MAX_BYTES + 1)   # bounded: a stream (/dev/zero) may never end
    except OSError as exc:
        raise PackingError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > PROBES_FILE_MAX_BYTES:
        raise PackingError(f"{path}: more than {PROBES_FILE_MAX_BYTES} bytes")
    try:
        probes = k8syaml.load(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise PackingError(f"{path}: not UTF-8 text") from None
    except k8syaml.YAMLReadError as exc:
        raise PackingError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(probes, list):
        raise PackingError(f"{path}: progression probes must be a list")
    try:
        check_probes(probes)
    except PackingError as exc:
        raise PackingError(f"{path}: {exc}") from None
    problems = probe_problems(probes)
    if problems:
        raise NotAdmissible([f"{path}: {problem}" for problem in problems])
    return probes


def to_yaml(documents: Iterable[Obj]) -> str:
    """Multi-document YAML in the order given, keys in insertion order (apiVersion, kind, metadata first), that
    ``kubectl apply -f`` reads back as the same objects (:class:`~common.bundle.k8syaml.SafeDumper`)."""
    return yaml.dump_all(list(documents), Dumper=k8syaml.SafeDumper, sort_keys=False, explicit_start=True,
                         default_flow_style=False, allow_unicode=True)


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """Which cluster to talk to; ``connect`` is the factory tests replace with an in-memory one."""
    parser.add_argument("--kubeconfig", default=None, metavar="FILE",
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then the pod's "
                             "ServiceAccount when run in a pod)")
    parser.add_argument("--context", default=None, help="kubeconfig context (default: the current one)")
    parser.set_defaults(connect=connect)


class ConnectError(Exception):
    """No usable cluster configuration."""


class UsageError(Exception):
    """Arguments that parse but do not make sense together (argparse cannot say so itself)."""


class MissingArgument(Exception):
    """An argument the input makes required is missing (a bundle's ``-n``): exit 2, as argparse's own."""


def user_agent() -> str:
    """``cosctl/<version>``: how the API server's audit log and request metrics name cosctl's requests (those of
    deploy/components/auto-upgrade's CronJob among them), rather than the generated client's default."""
    return useragent.user_agent("cosctl")


def connect(args: argparse.Namespace) -> Cluster:
    """The cluster named by ``--kubeconfig``/``KUBECONFIG``, else ~/.kube/config, through the project's client
    adapter; in a pod with none of them (a CronJob running ``cosctl upgrade``), the pod's ServiceAccount, as
    kubectl falls back to it."""
    from common.cluster.connection import ConfigError  # imported late: pack needs no Kubernetes client
    from common.cluster.kube import KubeCluster

    # $KUBECONFIG is read here, not left to the client: it reads the variable once, at import time.
    path = args.kubeconfig or os.environ.get("KUBECONFIG") or None
    agent = user_agent()
    try:
        if path is None and args.context is None and not os.path.exists(os.path.expanduser("~/.kube/config")):
            if not os.environ.get("KUBERNETES_SERVICE_HOST"):
                raise ConnectError("cannot load the cluster configuration: no kubeconfig (--kubeconfig, $KUBECONFIG, "
                                   "~/.kube/config), and not in a pod ($KUBERNETES_SERVICE_HOST is not set)")
            try:
                return KubeCluster.in_cluster(user_agent=agent)
            except ConfigError as exc:
                raise ConnectError("cannot load the cluster configuration: no kubeconfig (--kubeconfig, $KUBECONFIG, "
                                   f"~/.kube/config), and the pod's ServiceAccount: {exc}") from None
        return KubeCluster.from_kubeconfig(path, context=args.context, user_agent=agent)
    except (ConfigError, OSError) as exc:
        raise ConnectError(f"cannot load the cluster configuration: {exc}") from None


class Progress:
    """Prints each write of a publish, rollback or gc as the cluster accepts it (``would ...`` in a dry run), so a
    run that fails part-way has already shown what it wrote; :meth:`hint` then says how to finish it."""

    def __init__(self, dry_run: bool) -> None:
        self.prefix = "would " if dry_run else ""
        self.dry_run = dry_run
        self.written = 0

    def __call__(self, action: Action) -> None:
        print(f"{self.prefix}{action}", flush=True)
        self.written += 1

    def hint(self) -> str | None:
        """After a failure: what the writes above mean, or None when there were none."""
        if self.dry_run or not self.written:
            return None
        return (f"{self.written} write(s) above were made before the failure; run the same command again to "
                "finish (it completes or undoes what an interrupted run left)")


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """Rows (the header first) in columns two spaces apart, each as wide as its widest cell, as kubectl prints."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def reporter(command: str) -> Callable[[str], None]:
    """How a long read (an image pulled, a large catalog) reports progress: a line on stderr, so that stdout stays
    the command's output."""
    return lambda line: print(f"cosctl {command}: {line}", file=sys.stderr)


def run(command: str, body: Callable[[], int], *, failure: int = EXIT_FAILED,
        progress: Progress | None = None, say: Callable[[str], None] | None = None) -> int:
    """Run a subcommand body, turning every expected failure into a clear message and exit code ``failure``
    (1; ``diff`` uses 2, as diff(1) does, since 1 means "different"). With ``progress``, a refusal by the
    cluster after some writes also says that rerunning finishes the job (a :class:`PublishError` says itself
    what to do). ``say`` hears each line of the failure instead of stderr (``cosctl upgrade`` prefixes the owner
    and keeps them for its summary)."""
    def tell(line: str) -> None:
        if say is not None:
            say(line)
        else:
            print(f"cosctl {command}: {line}", file=sys.stderr)

    try:
        return body()
    except ManifestError as exc:
        for problem in exc.problems:
            tell(str(problem))
        tell(f"{len(exc.problems)} problem(s) in the manifests; nothing was done")
    except ContentUnavailable as exc:
        tell(str(exc))
    except (PhasingError, PackingError, PublishError, ConnectError, UsageError) as exc:
        tell(str(exc))
    except (BundleInputError, MissingArgument) as exc:  # not a usable bundle, or no way to use it (bundles.md §4)
        tell(str(exc))
        return EXIT_USAGE
    except (ConfigurationError, RenderError, ResolutionError) as exc:  # OLM v1's refusal, in its words
        tell(str(exc))
        for cause in exc.hints:  # ours: what OLM's message leaves unnamed (the field, the file, the flag)
            tell(f"cause: {cause}")
    except BundleError as exc:   # any other refusal of the bundle tooling (the cluster's ClusterCatalogs unreadable)
        tell(str(exc))
        for cause in exc.hints:
            tell(f"cause: {cause}")
    except ApiError as exc:
        tell(f"the cluster refused: {exc.reason}: {exc.message}")
        if progress is not None and (hint := progress.hint()) is not None:
            tell(hint)
    except BrokenPipeError:
        raise  # the reader went away (| head): main exits quietly
    except OSError as exc:
        tell(str(exc))
    return failure
