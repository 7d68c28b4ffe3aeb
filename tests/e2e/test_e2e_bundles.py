"""End-to-end: real OperatorHub registry+v1 bundles installed, upgraded and rolled back on a real API server
through ``cosctl`` and the real reconciler process (issue 15; shared/spec/bundles.md §4).

Opt-in twice over: ``pytest -m e2e`` with ``COS_E2E_KUBECONFIG`` (tests/e2e/conftest.py), and
``COS_E2E_BUNDLES`` naming a directory of bundles laid out as ``PACKAGE/VERSION/{manifests,metadata}``. Third-party
bundles are never committed; without the variable, or without the bundles a case needs, the case is skipped with
the reason. ``COS_E2E_OLM_CRDS`` (operator-controller's CRD directory) opts in to the ClusterExtension manifest
test.

Three upgrade pairs of different shapes, each published, rolled out, upgraded with ``cosctl publish NEXT`` (no
``-n``, no ``--config``: the options recorded on revision 1 are kept) and rolled back:

- ``koku-metrics-operator`` 0.9.0 -> 0.9.1: OwnNamespace (``watchNamespace`` required, the install namespace)
  with a ``deploymentConfig``; the generated Roles, RoleBindings, ClusterRole and ClusterRoleBinding carry the CSV
  name, so an upgrade replaces some of them. Also the refusal: a copy of 0.9.1 that supports SingleNamespace only
  rejects the kept ``watchNamespace``, and nothing is published.
- ``flux`` 0.16.0 -> 0.16.1: SingleNamespace (watches another namespace), six Deployments and twelve CRDs, the
  bundle's own RBAC, ServiceAccounts and Services, with a ``deploymentConfig`` every Deployment must carry.
- ``sap-btp-operator`` 0.1.5 -> 0.1.6: validating and mutating webhooks with ``--cert-provider cert-manager``
  (an Issuer and a Certificate), AllNamespaces; the next version is published from an OCI image layout (tar).

The cluster has no nodes and no cert-manager: :class:`StandIns` plays the kubelet (Pods of the test's
namespaces become Running and Ready, so the real deployment controller marks the Deployments Available; the Pods
are never bound to a node, so a scaled-down ReplicaSet's Pods go at once, as a kubelet would finish them) and
cert-manager (Issuers and Certificates get ``Ready=True``), and the test installs minimal stand-in CRDs for
cert-manager's kinds when the cluster has none. Revisions are named after the packages (the default owner), so
two runs cannot share a cluster at the same time, as the bundles' CRDs and webhook configurations could not
either.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.bundle.contents import cluster_reader, resolve_phases
from common.cluster.interface import ApiError
from common.cluster.kube import KubeCluster
from common.contract import api
from common.contract.objects import GVK
from tests.e2e.conftest import (
    COS_API,
    KIND,
    OWNER_LABEL,
    controller_of,
    crd_established,
    get_cos,
    gone,
    kubectl,
    wait_brief,
    wait_for,
    wait_succeeded,
)
from tests.registryv1.bundles import bundle_image_layout, tar_of
from tests.registryv1.pulling import push_bundle, push_index, trust
from tests.support.registry_server import Registry
from tests.webhook.support import CA

pytestmark = pytest.mark.e2e

CORPUS_VARIABLE = "COS_E2E_BUNDLES"
BIN = Path(sys.executable).parent
RUN = uuid.uuid4().hex[:6]
OPTIONS = api.ANNOTATION_BUNDLE_OPTIONS
CRD_API = "apiextensions.k8s.io/v1"
CERT_MANAGER = "cert-manager.io/v1"
Ref = tuple[str, str, str, str | None]  # apiVersion, kind, name, namespace


# ------------------------------------------------------------------------------------------------- the cases

@dataclass(frozen=True)
class Case:
    """One upgrade pair and how it is installed. ``{ns}`` and ``{watch}`` in ``config`` are the install and the
    watched namespace of this run."""

    package: str
    first: str                           # versions, directories under $COS_E2E_BUNDLES/<package>/
    second: str
    namespace: str                       # install namespace, suffixed with the run
    config: str | None = None
    watch: str | None = None             # a watched namespace other than the install namespace (the test makes it)
    cert_provider: str | None = None
    second_as_oci: bool = False          # publish the next version from an OCI image layout (tar)
    refusal: bool = False                # also: a next version supporting SingleNamespace only refuses the config
    diff_summary: str = ""               # the last line of `cosctl diff NEXT` against revision 1
    moved: tuple[tuple[str, str, str], ...] = ()  # (kind, name in the first version, name in the next)
    check_deployment: Callable[[dict[str, Any]], None] | None = None

    @property
    def dirs(self) -> tuple[str, str]:
        return f"{self.package}/{self.first}", f"{self.package}/{self.second}"

    @property
    def csv_names(self) -> tuple[str, str]:
        prefix = {"koku-metrics-operator": "koku-metrics-operator.v", "flux": "flux.v",
                  "sap-btp-operator": "sap-btp-operator.v"}[self.package]
        return prefix + self.first, prefix + self.second


KOKU_CONFIG = """\
watchNamespace: {ns}
deploymentConfig:
  env:
  - {{name: GOMAXPROCS, value: "2"}}
  resources:
    requests: {{cpu: 100m, memory: 64Mi}}
    limits: {{cpu: 500m, memory: 0.5Gi}}
  nodeSelector: {{kubernetes.io/os: linux}}
  annotations: {{example.com/owner: platform-team}}
"""

FLUX_CONFIG = """\
watchNamespace: {watch}
deploymentConfig:
  env:
  - {{name: HTTPS_PROXY, value: "http://proxy.example.com:3128"}}
  - {{name: NO_PROXY, value: ".cluster.local,.svc"}}
  tolerations:
  - {{key: dedicated, operator: Equal, value: gitops, effect: NoSchedule}}
"""


def _containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    return list(deployment["spec"]["template"]["spec"]["containers"])


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def _koku_deployment(deployment: dict[str, Any]) -> None:
    """deploymentConfig reaches every container (OLM v0's Subscription config rules), quantities canonical."""
    template = deployment["spec"]["template"]
    assert template["metadata"]["annotations"]["example.com/owner"] == "platform-team"
    assert template["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    for container in _containers(deployment):
        assert _env(container) == {"GOMAXPROCS": "2"}, container["name"]
        assert container["resources"] == {"requests": {"cpu": "100m", "memory": "64Mi"},
                                          "limits": {"cpu": "500m", "memory": "512Mi"}}, container["name"]


def _flux_deployment(deployment: dict[str, Any]) -> None:
    """The proxy variables added after the bundle's own, the toleration on the pod."""
    template = deployment["spec"]["template"]
    assert template["spec"]["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "gitops", "effect": "NoSchedule"}]
    for container in _containers(deployment):
        env = _env(container)
        assert (env["HTTPS_PROXY"], env["NO_PROXY"]) == ("http://proxy.example.com:3128", ".cluster.local,.svc")


KOKU = Case(
    package="koku-metrics-operator", first="0.9.0", second="0.9.1", namespace="koku", config=KOKU_CONFIG, refusal=True,
    diff_summary="4 added, 4 removed, 7 changed, 0 moved, 0 unchanged",
    moved=(("Role", "koku-metrics-opera-1r8d4demh6u26ge69p0k8wlitu8j6m0tb6syvjkcjtug",
            "koku-metrics-opera-2k3ug4m09auuf9o1mdcpjl0vp1nscnrx6uwvxbvfaz2b"),
           ("RoleBinding", "koku-metrics-opera-1r8d4demh6u26ge69p0k8wlitu8j6m0tb6syvjkcjtug",
            "koku-metrics-opera-2k3ug4m09auuf9o1mdcpjl0vp1nscnrx6uwvxbvfaz2b"),
           ("ClusterRole", "koku-metrics-operat-byhse8mdgtvm37x0b0fq3pu6qx7g4scis33xls07cf1",
            "koku-metrics-operat-7z4u618vzjmv9mcgta8hat86wf5739mhpeddn3ydfie"),
           ("ClusterRoleBinding", "koku-metrics-operat-byhse8mdgtvm37x0b0fq3pu6qx7g4scis33xls07cf1",
            "koku-metrics-operat-7z4u618vzjmv9mcgta8hat86wf5739mhpeddn3ydfie")),
    check_deployment=_koku_deployment)

FLUX = Case(
    package="flux", first="0.16.0", second="0.16.1", namespace="flux-system", watch="flux-apps",
    config=FLUX_CONFIG, diff_summary="2 added, 2 removed, 31 changed, 0 moved, 0 unchanged",
    moved=(("ClusterRole", "flux.v0.16.0-defau-2m7vkzry09ksbf4rnu5vhwccueic9lg27dmqdu0wazuq",
            "flux.v0.16.1-defau-2m7vkzry09ksbf4rnu5vhwccueic9lg27dmqdu0wazuq"),
           ("ClusterRoleBinding", "flux.v0.16.0-defau-2m7vkzry09ksbf4rnu5vhwccueic9lg27dmqdu0wazuq",
            "flux.v0.16.1-defau-2m7vkzry09ksbf4rnu5vhwccueic9lg27dmqdu0wazuq")),
    check_deployment=_flux_deployment)

SAP = Case(
    package="sap-btp-operator", first="0.1.5", second="0.1.6", namespace="sap-btp", cert_provider="cert-manager",
    second_as_oci=True, diff_summary="0 added, 0 removed, 14 changed, 0 moved, 0 unchanged")

CASES = {"koku-own-namespace": KOKU, "flux-single-namespace": FLUX, "sap-webhooks-cert-manager": SAP}


# ----------------------------------------------------------------------------------------- the cluster's help

class StandIns(threading.Thread):
    """What a real cluster's other parts do for these bundles, done by hand: the kubelet (every Pod of the
    watched namespaces is reported Running and Ready) and cert-manager (every Issuer and Certificate there is
    Ready for its current generation). A daemon thread with its own client, polling twice a second."""

    def __init__(self, kubeconfig: str) -> None:
        super().__init__(name="e2e-stand-ins", daemon=True)
        self.kube = KubeCluster.from_kubeconfig(kubeconfig, max_retries=1, request_timeout=10)
        self.namespaces: set[str] = set()
        self.cert_manager = False
        self.halt = threading.Event()
        self.problems: list[str] = []   # the last few errors, for a failure's report

    def run(self) -> None:
        while not self.halt.wait(0.5):
            for ns in sorted(self.namespaces):
                try:
                    self._kubelet(ns)
                    if self.cert_manager:
                        self._cert_manager(ns)
                except (ApiError, OSError) as exc:   # an object deleted under us, a slow API server: next round
                    self.problems = [*self.problems[-4:], f"{ns}: {type(exc).__name__}: {exc}"]

    def _kubelet(self, ns: str) -> None:
        for pod in self.kube.list("v1", "Pod", ns):
            status = pod.get("status") or {}
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
            if pod["metadata"].get("deletionTimestamp") or ready:
                continue
            self.kube.request("patch", "PATCH", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}/status",
                              content_type="application/merge-patch+json",
                              body={"status": {"phase": "Running",
                                               "conditions": [{"type": "Ready", "status": "True"}]}})

    def _cert_manager(self, ns: str) -> None:
        for kind, plural in (("Issuer", "issuers"), ("Certificate", "certificates")):
            for obj in self.kube.list(CERT_MANAGER, kind, ns):
                generation = obj["metadata"].get("generation", 1)
                conditions = (obj.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Ready" and c.get("status") == "True"
                       and c.get("observedGeneration") == generation for c in conditions):
                    continue
                self.kube.request(
                    "patch", "PATCH",
                    f"/apis/{CERT_MANAGER}/namespaces/{ns}/{plural}/{obj['metadata']['name']}/status",
                    content_type="application/merge-patch+json",
                    body={"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "StandIn",
                                                     "message": "made ready by the e2e test",
                                                     "observedGeneration": generation}]}})


def _stand_in_crd(kind: str, plural: str) -> dict[str, Any]:
    """A cert-manager kind as far as the API server needs it: any spec, a status subresource."""
    return {"apiVersion": CRD_API, "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.cert-manager.io"},
            "spec": {"group": "cert-manager.io", "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


@dataclass
class Ctx:
    """The module's state: the cluster, where bundles are, the stand-ins, and what to clean up."""

    env: dict[str, Any]
    corpus: Path
    tmp: Path
    stand_ins: StandIns
    namespaces: list[str] = field(default_factory=list)   # made by the test (watched namespaces)
    # package -> (revision 3's annotations, revision 1's): what a rollback recorded, and what it restored
    rolled_back: dict[str, tuple[dict[str, str], dict[str, str]]] = field(default_factory=dict)

    @property
    def kube(self) -> KubeCluster:
        return self.env["kube"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def corpus() -> Path:
    """The bundle corpus named by $COS_E2E_BUNDLES, checked before anything touches a cluster."""
    value = os.environ.get(CORPUS_VARIABLE)
    if not value:
        pytest.skip(f"set {CORPUS_VARIABLE} to a directory of registry+v1 bundles (PACKAGE/VERSION/) to run the "
                    "OperatorHub bundle e2e tests; third-party bundles are not part of the repository")
    path = Path(value)
    if not path.is_dir():
        pytest.skip(f"{CORPUS_VARIABLE}={value}: not a directory")
    if not (BIN / "cosctl").exists():
        pytest.skip("needs cosctl installed next to this Python (pip install -e .)")
    return path


@pytest.fixture(scope="module")
def ctx(corpus: Path, env: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ctx]:
    kube: KubeCluster = env["kube"]
    for case in CASES.values():
        left = kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={case.package}")
        if left:
            pytest.fail(f"ClusterObjectSets of owner {case.package} are already on this cluster "
                        f"({', '.join(c['metadata']['name'] for c in left)}): an earlier run's? Use a fresh cluster")
    made_crds = []
    for kind, plural in (("Issuer", "issuers"), ("Certificate", "certificates")):
        name = f"{plural}.cert-manager.io"
        if gone(kube, CRD_API, "CustomResourceDefinition", name):
            kube.create(_stand_in_crd(kind, plural))
            made_crds.append(name)
    for name in made_crds:
        wait_for(lambda n=name: crd_established(kube, n), 60, f"the stand-in CRD {name} to be established")
    stand_ins = StandIns(env["kubeconfig"])
    stand_ins.cert_manager = True
    stand_ins.start()
    state = Ctx(env, corpus, tmp_path_factory.mktemp("bundles"), stand_ins)
    try:
        yield state
    finally:
        try:
            for case in CASES.values():
                selector = f"{OWNER_LABEL}={case.package}"
                for cos in kube.list(COS_API, KIND, label_selector=selector):
                    with contextlib.suppress(ApiError):
                        kube.delete(COS_API, KIND, cos["metadata"]["name"])
            wait_for(lambda: not any(kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={c.package}")
                                     for c in CASES.values()), 300, "the bundles' revisions to be torn down")
        finally:
            stand_ins.halt.set()
            stand_ins.join(10)
            for ns in state.namespaces:
                with contextlib.suppress(ApiError):
                    kube.delete("v1", "Namespace", ns)
            for name in made_crds:
                with contextlib.suppress(ApiError):
                    kube.delete(CRD_API, "CustomResourceDefinition", name)


# ------------------------------------------------------------------------------------------------- commands

def cosctl(ctx: Ctx, *argv: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``cosctl`` as an admin runs it, against the session's cluster; the object-data Secrets go where the
    session's reconciler reads them (``--system-namespace``: for a bundle, ``-n`` is the install namespace; not
    for ``upgrade``, which keeps the latest revision's). ``home``: the admin's HOME (containers configuration, cache)
    for a command that pulls."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    if home is not None:
        env.update(HOME=str(home), COSCTL_CACHE_DIR=str(home / "cache"),
                   CONTAINERS_REGISTRIES_CONF=str(home / "registries.conf"))
    command = [str(BIN / "cosctl"), *argv, "--kubeconfig", ctx.env["kubeconfig"],
               *(("--system-namespace", ctx.env["system_ns"]) if argv[0] != "upgrade" else ())]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=360)


def watch(ctx: Ctx, name: str) -> subprocess.CompletedProcess[str]:
    return cosctl(ctx, "status", name, "--watch", "--timeout", "300")


def ok(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The output lines of a command that must have succeeded (the failure shows what it said)."""
    assert (done.returncode, done.stderr) == (0, ""), f"{done.args}: exit {done.returncode}\n{done.stdout}" \
                                                      f"{done.stderr}"
    return done.stdout.splitlines()


def rolled_out(ctx: Ctx, name: str, version: str) -> None:
    """``cosctl status --watch`` follows the rollout to its end while the stand-ins make things ready."""
    done = watch(ctx, name)
    assert done.returncode == 0, f"{done.stdout}{done.stderr}\nstand-ins: {ctx.stand_ins.problems}"
    assert done.stdout.splitlines()[-1] == f"{name}: rollout succeeded: Revision {version} has rolled out."
    wait_succeeded(ctx.env, name, version)


def archived_and_torn_down(ctx: Ctx, name: str) -> None:
    wait_brief(ctx.env, name, ("False", "Archived", "revision is archived"), timeout=180)
    wait_for(lambda: api.FINALIZER_TEARDOWN not in (get_cos(ctx.env, name)["metadata"].get("finalizers") or []),
             180, f"{name} to finish its teardown")


def content(ctx: Ctx, name: str) -> dict[Ref, dict[str, Any]]:
    """Every object a revision holds, read back from the cluster (its object-data Secrets)."""
    phases = resolve_phases(get_cos(ctx.env, name), cluster_reader(ctx.kube), system_namespace=ctx.env["system_ns"])
    out: dict[Ref, dict[str, Any]] = {}
    for phase in phases:
        for obj in phase.objects:
            meta = obj["metadata"]
            out[(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))] = obj
    return out


def live(ctx: Ctx, ref: Ref) -> dict[str, Any]:
    return ctx.kube.get(*ref)


def all_controlled_by(ctx: Ctx, refs: list[Ref], name: str) -> None:
    """Each object is live and its controller is the revision ``name``."""
    wrong = {f"{kind} {ns or ''}/{n}": controller_of(live(ctx, (av, kind, n, ns))) for av, kind, n, ns in refs}
    assert {k: v for k, v in wrong.items() if v != [name]} == {}


def deployments(objects: dict[Ref, dict[str, Any]]) -> list[Ref]:
    return [ref for ref in objects if GVK.of(objects[ref]).group == "apps" and ref[1] == "Deployment"]


def copy_bundle(ctx: Ctx, case: Case, version: str) -> Path:
    """A copy of a corpus bundle under the test's tmp directory (the corpus is read-only to the test)."""
    target = ctx.tmp / f"{case.package}-{version}"
    if not target.exists():
        shutil.copytree(ctx.corpus / case.package / version, target)
    return target


def single_namespace_only(ctx: Ctx, case: Case) -> Path:
    """The next version, changed as a maintainer might: OwnNamespace no longer supported (SingleNamespace only)."""
    bundle = ctx.tmp / f"{case.package}-{case.second}-single-only"
    shutil.copytree(ctx.corpus / case.package / case.second, bundle)
    (csv,) = (bundle / "manifests").glob("*.clusterserviceversion.yaml")
    text = csv.read_text()
    own = "  - supported: true\n    type: OwnNamespace\n"
    assert text.count(own) == 1, "the CSV's installModes are not laid out as this test expects"
    csv.write_text(text.replace(own, "  - supported: false\n    type: OwnNamespace\n"))
    return bundle


# ------------------------------------------------------------------------------------------------ the tests

@pytest.mark.parametrize("case_id", list(CASES))
def test_install_upgrade_keep_configuration_and_roll_back(ctx: Ctx, case_id: str) -> None:
    case = CASES[case_id]
    missing = [d for d in case.dirs if not (ctx.corpus / d / "metadata" / "annotations.yaml").is_file()]
    if missing:
        pytest.skip(f"{CORPUS_VARIABLE}={ctx.corpus}: no bundle {', '.join(missing)}")
    pkg, (csv1, csv2) = case.package, case.csv_names
    ns = f"{case.namespace}-{RUN}"
    watched = f"{case.watch}-{RUN}" if case.watch else ns
    ctx.stand_ins.namespaces.add(ns)
    if case.watch:
        ctx.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": watched}})
        ctx.namespaces.append(watched)
    first = copy_bundle(ctx, case, case.first)
    second = copy_bundle(ctx, case, case.second)
    if case.second_as_oci:   # what `skopeo copy docker://... oci-archive:F` or `podman save --format oci-archive` give
        second = tar_of(bundle_image_layout(ctx.tmp / f"{pkg}-{case.second}-oci", second),
                        ctx.tmp / f"{pkg}-{case.second}.oci.tar")
    options: list[str] = []
    expected_options: dict[str, Any] = {"namespace": ns, "createNamespace": True}
    if case.config is not None:
        config = ctx.tmp / f"{pkg}-config.yaml"
        config.write_text(case.config.format(ns=ns, watch=watched))
        options += ["--config", str(config)]
        expected_options["config"] = yaml.safe_load(config.read_text())
    if case.cert_provider:
        options += ["--cert-provider", case.cert_provider]
        expected_options["certProvider"] = case.cert_provider

    # 1. install: the owner is the package; the options are recorded on the revision
    out = ok(cosctl(ctx, "publish", str(first), "-n", ns, "--create-namespace", *options))
    assert (out[0], out[-1]) == (f"bundle {csv1} rendered for namespace {ns}",
                                 f"ClusterObjectSet {pkg}-1 (revision 1) created")
    rolled_out(ctx, f"{pkg}-1", case.first)
    one = get_cos(ctx.env, f"{pkg}-1")
    assert one["metadata"]["labels"][OWNER_LABEL] == pkg
    annotations = one["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if k != OPTIONS} == {
        api.ANNOTATION_PACKAGE_NAME: pkg, api.ANNOTATION_BUNDLE_NAME: csv1, api.ANNOTATION_BUNDLE_VERSION: case.first}
    assert json.loads(annotations[OPTIONS]) == expected_options
    v1 = content(ctx, f"{pkg}-1")
    assert ("v1", "Namespace", ns, None) in v1
    all_controlled_by(ctx, list(v1), f"{pkg}-1")
    if case.check_deployment:
        for ref in deployments(v1):
            case.check_deployment(live(ctx, ref))
    for ref in deployments(v1):
        target = live(ctx, ref)["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"]
        assert target == ("" if case.config is None else watched)

    # 2. what the upgrade would change, with the kept options
    done = cosctl(ctx, "diff", str(second))
    assert (done.returncode, done.stderr) == (
        1, f"cosctl diff: bundle {csv2} rendered for namespace {ns} (options kept from {pkg}-1)\n"), \
        done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [f"--- {pkg}-1", f"+++ {second}"]
    assert lines[-1] == case.diff_summary
    for kind, old, new in case.moved:
        assert any(line.startswith(f"added    {kind}.rbac.authorization.k8s.io ") and new in line for line in lines)
        assert any(line.startswith(f"removed  {kind}.rbac.authorization.k8s.io ") and old in line for line in lines)

    # 3. a next version whose schema refuses the kept configuration publishes nothing
    if case.refusal:
        refusing = single_namespace_only(ctx, case)
        secrets = len(ctx.kube.list("v1", "Secret", ctx.env["system_ns"]))
        done = cosctl(ctx, "publish", str(refusing))
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == (
            f"cosctl publish: the configuration kept from ClusterObjectSet {pkg}-1 does not fit {csv2}: invalid "
            "ClusterExtension configuration: invalid configuration: invalid format for field \"watchNamespace\": "
            f"'{ns}' is not valid singleNamespaceInstallMode: invalid value \"{ns}\": must be different from "
            f"\"{ns}\" (the install namespace) because this operator uses SingleNamespace install mode to watch a "
            "different namespace\nnothing was done: give --config FILE with a configuration this bundle accepts "
            f"(cosctl render {refusing} --config-schema prints its schema)\n"
            "cosctl publish: cause: this bundle supports SingleNamespace: give an existing namespace other than "
            f"\"{ns}\" (the install namespace)\n")
        assert [c["metadata"]["name"] for c in ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={pkg}")] \
            == [f"{pkg}-1"]
        assert len(ctx.kube.list("v1", "Secret", ctx.env["system_ns"])) == secrets

    # 4. the upgrade: no -n, no --config, no --cert-provider: everything kept from revision 1
    out = ok(cosctl(ctx, "publish", str(second)))
    assert (out[0], out[-1]) == (f"bundle {csv2} rendered for namespace {ns} (options kept from {pkg}-1)",
                                 f"ClusterObjectSet {pkg}-2 (revision 2) created")
    two = get_cos(ctx.env, f"{pkg}-2")
    assert two["metadata"]["annotations"] == {
        api.ANNOTATION_PACKAGE_NAME: pkg, api.ANNOTATION_BUNDLE_NAME: csv2, api.ANNOTATION_BUNDLE_VERSION: case.second,
        OPTIONS: annotations[OPTIONS]}
    rolled_out(ctx, f"{pkg}-2", case.second)
    archived_and_torn_down(ctx, f"{pkg}-1")
    v2 = content(ctx, f"{pkg}-2")
    all_controlled_by(ctx, list(v2), f"{pkg}-2")       # the shared objects were handed over, the new ones made
    only_v1 = sorted(set(v1) - set(v2), key=str)
    assert [ref[1:3] for ref in only_v1] == sorted([(kind, old) for kind, old, _ in case.moved], key=str)
    assert [ref for ref in only_v1 if not gone(ctx.kube, *ref)] == []   # what moved is gone with revision 1
    assert sorted((ref[1], ref[2]) for ref in set(v2) - set(v1)) == sorted((kind, new) for kind, _, new in case.moved)
    for ref in deployments(v2):
        deployment = live(ctx, ref)
        assert _images(deployment) == _images(v2[ref])
        if case.check_deployment:
            case.check_deployment(deployment)

    # 5. what status and history say
    out = ok(cosctl(ctx, "history", "--owner", pkg))
    assert [line.split()[:7] for line in out[1:]] == [
        ["1", f"{pkg}-1", "Archived", "Archived", "yes", pkg, case.first],
        ["2", f"{pkg}-2", "Active", "Succeeded", "yes", pkg, case.second]]
    out = ok(cosctl(ctx, "status", "--owner", pkg))
    assert out[0] == f"owner {pkg}: 2 revision(s)"
    assert out[1].split() == ["1", f"{pkg}-1", "Archived", "Archived", "package", pkg, case.first]
    assert out[2].split() == ["2", f"{pkg}-2", "Active", "Succeeded", "package", pkg, case.second]
    assert f"ClusterObjectSet {pkg}-2: revision 2, Active, owner {pkg}, package {pkg} {case.second}" in out

    # 6. back to revision 1's content, as revision 3
    out = ok(cosctl(ctx, "rollback", "--owner", pkg))
    assert (out[0], out[-2]) == (f"rolling back owner {pkg} to revision 1 ({pkg}-1)",
                                 f"ClusterObjectSet {pkg}-3 (revision 3) created")
    rolled_out(ctx, f"{pkg}-3", case.first)
    archived_and_torn_down(ctx, f"{pkg}-2")
    assert content(ctx, f"{pkg}-3") == v1
    all_controlled_by(ctx, list(v1), f"{pkg}-3")
    assert [ref for ref in set(v2) - set(v1) if not gone(ctx.kube, *ref)] == []
    for ref in deployments(v1):
        assert _images(live(ctx, ref)) == _images(v1[ref])
        if case.check_deployment:
            case.check_deployment(live(ctx, ref))
    ctx.rolled_back[pkg] = (dict(get_cos(ctx.env, f"{pkg}-3")["metadata"].get("annotations") or {}),
                            dict(annotations))

    # 7. uninstall as docs/bundles.md says: refused while a custom resource exists (the CSV's first example of its
    #    own CRDs, in the install namespace), then with it deleted first; the reconciler tears the active revision
    #    down before its finalizer goes, and nothing it held is left (the namespace and the CRDs included)
    #    (not with webhooks: they intercept the custom resources, and no operator answers them here)
    choice: tuple[str, ...] = ()
    if not case.cert_provider:
        example = _example(first, v1, ns)
        ctx.kube.create(example)
        label = f"{example['kind']} {ns}/{example['metadata']['name']}"
        done = cosctl(ctx, "uninstall", "--owner", pkg)
        assert done.returncode == 1 and f"custom resources exist: {label}" in done.stdout, done.stdout + done.stderr
        assert [c["metadata"]["name"] for c in ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={pkg}")] \
            == [f"{pkg}-1", f"{pkg}-2", f"{pkg}-3"]
        choice = ("--delete-custom-resources",)
    out = ok(cosctl(ctx, "uninstall", "--owner", pkg, *choice, "--timeout", "300"))
    if choice:
        assert f"delete {label}: custom resource of CustomResourceDefinition " in "\n".join(out)
    assert out[-1] == f"owner {pkg} uninstalled: 3 revision(s) deleted, their objects removed in reverse phase order"
    assert not ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={pkg}")
    assert [ref for ref in v1 if not gone(ctx.kube, *ref)] == []
    assert ("v1", "Namespace", ns, None) in v1


def _example(bundle: Path, objects: dict[Ref, dict[str, Any]], namespace: str) -> dict[str, Any]:
    """The first of the CSV's ``alm-examples`` (what the bundle offers an admin to create) whose kind is a
    namespaced CRD of the revision, in ``namespace``."""
    csv = next(yaml.safe_load(p.read_text()) for p in sorted((bundle / "manifests").iterdir())
               if "ClusterServiceVersion" in p.read_text())
    kinds = {(o["spec"]["group"], o["spec"]["names"]["kind"]) for (_, kind, _, _), o in objects.items()
             if kind == "CustomResourceDefinition" and o["spec"]["scope"] == "Namespaced"}
    for example in json.loads(csv["metadata"]["annotations"]["alm-examples"]):
        if (example["apiVersion"].split("/")[0], example["kind"]) in kinds:
            return {**example, "metadata": {**example["metadata"], "namespace": namespace}}
    raise AssertionError(f"{bundle}: no example of a namespaced CRD of the bundle in its CSV's alm-examples")


def _images(deployment: dict[str, Any]) -> list[str]:
    return [c["image"] for c in _containers(deployment)]


def test_a_rollback_records_the_bundle_and_options_it_restores(ctx: Ctx) -> None:
    """Revision 3 (revision 1's content) says what revision 1 said: package, bundle, version and options."""
    if not ctx.rolled_back:
        pytest.skip("no bundle was rolled back in this run")
    assert {pkg: got for pkg, (got, _) in ctx.rolled_back.items()} == {
        pkg: restored for pkg, (_, restored) in ctx.rolled_back.items()}


def test_what_olm_v1_refuses_is_never_published(ctx: Ctx) -> None:
    """What OLM v1 refuses is refused before anything is written: a bundle with webhooks and no certificate
    provider, and a bundle with API service definitions (when the corpus has one)."""
    sap = ctx.corpus / "sap-btp-operator" / "0.1.5"
    if not (sap / "metadata").is_dir():
        pytest.skip(f"{CORPUS_VARIABLE}={ctx.corpus}: no bundle sap-btp-operator/0.1.5")
    owner = f"refused-{RUN}"
    done = cosctl(ctx, "publish", str(sap), "-n", f"sap-refused-{RUN}", "--owner", owner)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", "cosctl publish: unsupported bundle: webhookDefinitions are not supported\n"
               "cosctl publish: cause: the bundle defines 3 webhook(s), whose serving certificates come from a "
               "provider the cluster runs: give --cert-provider cert-manager or openshift-serviceca\n")
    enmasse = ctx.corpus / "enmasse" / "0.30.2"
    if (enmasse / "metadata").is_dir():
        done = cosctl(ctx, "publish", str(enmasse), "-n", f"enmasse-{RUN}", "--owner", owner)
        assert (done.returncode, done.stdout, done.stderr) == (
            1, "", "cosctl publish: unsupported bundle: apiServiceDefintions are not supported\n")
    assert ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}") == []


def _koku_owner(ctx: Ctx, name: str) -> tuple[Case, str, Path]:
    """koku (skipped without its bundles), owner and install namespace ``koku-NAME-RUN`` (its Deployments' pods
    stood in for), and a configuration watching that namespace."""
    case = KOKU
    if any(not (ctx.corpus / d / "metadata").is_dir() for d in case.dirs):
        pytest.skip(f"{CORPUS_VARIABLE}={ctx.corpus}: no bundles {case.dirs}")
    owner = f"koku-{name}-{RUN}"
    ctx.stand_ins.namespaces.add(owner)
    config = ctx.tmp / f"koku-{name}-config.yaml"
    config.write_text(f"watchNamespace: {owner}\n")
    return case, owner, config


def _koku_catalog(path: Path, *, edge: bool, images: dict[str, str] | None = None) -> Path:
    """koku-metrics-operator's channel alpha as community-operators-prod's catalog has it (0.9.1 replaces 0.9.0),
    or, with ``edge`` false, a catalog whose 0.9.1 is no upgrade from 0.9.0; ``images``: each version's image, in
    place of quay.io's."""
    entries: list[dict[str, Any]] = [{"name": "koku-metrics-operator.v0.9.0"},
                                     {"name": "koku-metrics-operator.v0.9.1",
                                      **({"replaces": "koku-metrics-operator.v0.9.0"} if edge else {})}]
    objects = [{"schema": "olm.package", "name": "koku-metrics-operator", "defaultChannel": "alpha"},
               {"schema": "olm.channel", "package": "koku-metrics-operator", "name": "alpha", "entries": entries},
               *({"schema": "olm.bundle", "package": "koku-metrics-operator", "name": f"koku-metrics-operator.v{v}",
                  "image": (images or {}).get(v, f"quay.io/project-koku/koku-metrics-operator-bundle:v{v}"),
                  "properties": [{"type": "olm.package",
                                  "value": {"packageName": "koku-metrics-operator", "version": v}}]}
                 for v in ("0.9.0", "0.9.1"))]
    path.mkdir(parents=True)
    (path / "catalog.json").write_text("\n".join(json.dumps(o) for o in objects))
    return path


def test_a_catalog_holds_upgrades_to_its_edges(ctx: Ctx) -> None:
    """With --catalog, publish installs what the catalog lists and upgrades only along its edges, from the bundle
    the reconciler reports Succeeded (OLM v1's installed bundle); a refusal writes nothing."""
    case, owner, config = _koku_owner(ctx, "catalog")
    ns = owner
    edge, no_edge = _koku_catalog(ctx.tmp / "catalog", edge=True), _koku_catalog(ctx.tmp / "no-edge", edge=False)
    first, second = copy_bundle(ctx, case, case.first), copy_bundle(ctx, case, case.second)
    try:
        out = ok(cosctl(ctx, "publish", str(first), "-n", ns, "--create-namespace", "--config", str(config),
                        "--owner", owner, "--catalog", str(edge)))
        assert out[1] == (f"catalog {edge}: koku-metrics-operator.v0.9.0 may be installed (no bundle of the owner is "
                          "installed)")
        rolled_out(ctx, f"{owner}-1", case.first)
        out = ok(cosctl(ctx, "resolve", "koku-metrics-operator", "--catalog", str(edge), "--owner", owner))
        assert out == [f"installed: koku-metrics-operator.v0.9.0 (0.9.0), by ClusterObjectSet {owner}-1",
                       "resolves to: koku-metrics-operator.v0.9.1 0.9.1 "
                       "quay.io/project-koku/koku-metrics-operator-bundle:v0.9.1",
                       "qualified, best first:",
                       "  koku-metrics-operator.v0.9.1  0.9.1  "
                       "quay.io/project-koku/koku-metrics-operator-bundle:v0.9.1",
                       "  koku-metrics-operator.v0.9.0  0.9.0  quay.io/project-koku/koku-metrics-operator-bundle:v0.9.0"
                       "  (installed)"]

        done = cosctl(ctx, "publish", str(second), "--owner", owner, "--catalog", str(no_edge))
        assert (done.returncode, done.stderr) == (1, (
            'cosctl publish: error upgrading from currently installed version "0.9.0": no bundles found for package '
            '"koku-metrics-operator" matching version "0.9.1"\n'
            f"cosctl publish: cause: catalog {no_edge} has no upgrade edge from koku-metrics-operator.v0.9.0 "
            f"(installed by ClusterObjectSet {owner}-1) to koku-metrics-operator.v0.9.1: it allows no upgrade from "
            "it\n"
            "cosctl publish: cause: --upgrade-constraint-policy SelfCertified installs it anyway, as OLM v1's "
            "ClusterExtension spec.source.catalog.upgradeConstraintPolicy does\n"))
        assert [c["metadata"]["name"] for c in ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}")] \
            == [f"{owner}-1"]

        out = ok(cosctl(ctx, "publish", str(second), "--owner", owner, "--catalog", str(edge), "--channel", "alpha"))
        assert (out[1], out[-1]) == (
            f"catalog {edge}: koku-metrics-operator.v0.9.1 is an upgrade it allows from koku-metrics-operator.v0.9.0 "
            f"(installed by ClusterObjectSet {owner}-1)", f"ClusterObjectSet {owner}-2 (revision 2) created")
        rolled_out(ctx, f"{owner}-2", case.second)
    finally:  # a failure leaves nothing that would collide with the next run's koku revisions
        kubectl(ctx.env, "delete", "clusterobjectsets", "-l", f"{OWNER_LABEL}={owner}", "--wait=false")
        wait_for(lambda: not ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}"), 300,
                 f"the revisions of {owner} to be torn down")


@contextlib.contextmanager
def koku_served(ctx: Ctx, name: str) -> Iterator[tuple[Path, dict[str, str], Path, Registry]]:
    """koku's two versions pushed to a registry of the test's own over TLS (tests/support/registry_server.py), with
    a catalog naming them and the edge between them: the admin's HOME (which trusts the registry), the images by
    version, the catalog, and the registry. ``name`` keeps each test's files apart."""
    case = KOKU
    home = ctx.tmp / f"{name}-home"
    (home / ".config" / "containers").mkdir(parents=True)
    (home / "registries.conf").write_text("")
    (ctx.tmp / f"{name}-ca").mkdir()
    ca = CA(ctx.tmp / f"{name}-ca")
    with Registry(ca) as registry:
        trust(home, ca, registry)
        images = {v: registry.ref("koku/bundle", push_bundle(registry, copy_bundle(ctx, case, v), ctx.tmp,
                                                             repo="koku/bundle", tag=f"v{v}"))
                  for v in (case.first, case.second)}
        yield home, images, _koku_catalog(ctx.tmp / f"{name}-catalog", edge=True, images=images), registry


def test_a_package_is_installed_and_upgraded_from_its_catalog_and_registry(ctx: Ctx) -> None:
    """``publish --package``: the catalog picks the bundle, its image is pulled from a registry over TLS (the test's
    own: tests/support/registry_server.py), and the revision records the source; the next run keeps the version
    range it was installed with, and widening it upgrades along the catalog's edge."""
    case, owner, config = _koku_owner(ctx, "package")
    ns = owner
    with koku_served(ctx, "package") as (home, images, catalog, _):
        try:
            done = cosctl(ctx, "publish", "--package", case.package, "--owner", owner, "-n", ns,
                          "--create-namespace", "--config", str(config), "--catalog", str(catalog), "--version",
                          "<0.9.1", home=home)
            assert (done.returncode, done.stderr) == (0, f"cosctl publish: pulled docker://{images['0.9.0']}\n"), \
                done.stdout + done.stderr
            out = done.stdout.splitlines()
            assert (out[0], out[-1]) == (
                f"package {case.package} resolves to koku-metrics-operator.v0.9.0 (0.9.0) in catalog {catalog}: "
                f"{images['0.9.0']}", f"ClusterObjectSet {owner}-1 (revision 1) created")
            rolled_out(ctx, f"{owner}-1", case.first)
            annotations = get_cos(ctx.env, f"{owner}-1")["metadata"]["annotations"]
            assert (json.loads(annotations[api.ANNOTATION_BUNDLE_SOURCE]),
                    annotations[api.ANNOTATION_BUNDLE_REFERENCE]) == (
                {"catalog": str(catalog), "packageName": case.package, "version": "<0.9.1"}, images["0.9.0"])

            done = cosctl(ctx, "publish", "--package", case.package, "--owner", owner, home=home)
            out = ok_but_pulled(done, images["0.9.0"])
            assert (out[0], out[-1]) == (
                f"package {case.package} resolves to the installed bundle koku-metrics-operator.v0.9.0 (0.9.0) in "
                f"catalog {catalog} (--catalog, --version kept from {owner}-1): {images['0.9.0']}",
                f"unchanged: ClusterObjectSet {owner}-1 (revision 1) already has this content")

            out = ok_but_pulled(cosctl(ctx, "publish", "--package", case.package, "--owner", owner, "--version", "",
                                       home=home), images["0.9.1"])
            assert (out[0], out[-1]) == (
                f"package {case.package} resolves to koku-metrics-operator.v0.9.1 (0.9.1) over "
                f"koku-metrics-operator.v0.9.0 in catalog {catalog} (--catalog kept from {owner}-1): "
                f"{images['0.9.1']}", f"ClusterObjectSet {owner}-2 (revision 2) created")
            rolled_out(ctx, f"{owner}-2", case.second)
            archived_and_torn_down(ctx, f"{owner}-1")
            assert json.loads(get_cos(ctx.env, f"{owner}-2")["metadata"]["annotations"][
                api.ANNOTATION_BUNDLE_SOURCE]) == {"catalog": str(catalog), "packageName": case.package}
            done = cosctl(ctx, "list", "--upgrades", "-o", "json", home=home)
            # the shared cluster may hold other tests' revisions (some made by hand, without an owner: said on stderr)
            assert done.returncode == 0 and f"cosctl list: {owner}:" not in done.stderr, done.stderr
            listed = {row["owner"]: row for row in json.loads(done.stdout)}
            assert (listed[owner]["installed"]["revision"], listed[owner]["latest"]["state"],
                    listed[owner]["upToDate"]) == (f"{owner}-2", "Succeeded", True)
        finally:  # a failure leaves nothing that would collide with the next run's koku revisions
            kubectl(ctx.env, "delete", "clusterobjectsets", "-l", f"{OWNER_LABEL}={owner}", "--wait=false")
            wait_for(lambda: not ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}"), 300,
                     f"the revisions of {owner} to be torn down")


def test_cos_upgrade_follows_the_catalog_with_the_rights_of_the_auto_upgrade_component(ctx: Ctx) -> None:
    """``cosctl upgrade``, run as deploy/components/auto-upgrade's ServiceAccount with exactly the rights the
    component grants (its CronJob accepted by the API server, dry run): within the range the owner records it does
    nothing; once the range is dropped it publishes the catalog's next version, which the reconciler rolls out."""
    case, owner, config = _koku_owner(ctx, "upgrade")
    ns = owner
    system_ns = ctx.env["system_ns"]
    component = Path(__file__).resolve().parents[2] / "deploy" / "components" / "auto-upgrade"
    rights = "---\n".join((component / f"{name}.yaml").read_text().replace("namespace: olmv1-system",
                                                                          f"namespace: {system_ns}")
                          for name in ("serviceaccount", "clusterrole", "clusterrolebinding", "role", "rolebinding"))
    cronjob = (component / "cronjob.yaml").read_text().replace("namespace: olmv1-system", f"namespace: {system_ns}")
    with koku_served(ctx, "upgrade") as (home, images, catalog, _):
        try:
            kubectl(ctx.env, "apply", "-f", "-", stdin=rights)
            assert "cronjob.batch/cos-upgrade created (server dry run)" in kubectl(
                ctx.env, "apply", "--dry-run=server", "-f", "-", stdin=cronjob)
            token = kubectl(ctx.env, "create", "token", "cos-upgrade", "-n", system_ns, "--duration", "1h").strip()
            kubeconfig = yaml.safe_load(Path(ctx.env["kubeconfig"]).read_text())
            context = next(c for c in kubeconfig["contexts"] if c["name"] == kubeconfig["current-context"])
            context["context"]["user"] = "cos-upgrade"
            kubeconfig["contexts"], kubeconfig["users"] = [context], [{"name": "cos-upgrade",
                                                                       "user": {"token": token}}]
            as_component = ctx.tmp / "cos-upgrade.kubeconfig"
            as_component.write_text(yaml.safe_dump(kubeconfig))

            def upgrade() -> subprocess.CompletedProcess[str]:
                env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
                env.update(HOME=str(home), COSCTL_CACHE_DIR=str(home / "cache"),
                           CONTAINERS_REGISTRIES_CONF=str(home / "registries.conf"))
                return subprocess.run([str(BIN / "cosctl"), "upgrade", owner, "--kubeconfig", str(as_component)],
                                      env=env, capture_output=True, text=True, timeout=360)

            done = cosctl(ctx, "publish", "--package", case.package, "--owner", owner, "-n", ns,
                          "--create-namespace", "--config", str(config), "--catalog", str(catalog), "--version",
                          "<0.9.1", home=home)
            assert done.returncode == 0, done.stdout + done.stderr
            rolled_out(ctx, f"{owner}-1", case.first)

            done = upgrade()
            assert (done.returncode, done.stderr, done.stdout.splitlines()[-1].split()) == (
                0, "", [owner, case.package, case.first, "-", "up", "to", "date"]), done.stdout + done.stderr

            kubectl(ctx.env, "annotate", "--overwrite", "clusterobjectset", f"{owner}-1",
                    f"{api.ANNOTATION_BUNDLE_SOURCE}=" + json.dumps({"catalog": str(catalog),
                                                                     "packageName": case.package}))
            done = upgrade()
            out = done.stdout.splitlines()
            assert (done.returncode, done.stderr) == (0, f"cosctl upgrade: pulled docker://{images[case.second]}\n"), \
                done.stdout + done.stderr
            assert out[0] == (f"{owner}: upgrading {case.first} (koku-metrics-operator.v{case.first}) to "
                              f"{case.second} (koku-metrics-operator.v{case.second})")
            assert f"ClusterObjectSet {owner}-2 (revision 2) created" in out
            assert out[-1].split() == [owner, case.package, case.first, case.second, f"{owner}-2", "created"]
            rolled_out(ctx, f"{owner}-2", case.second)
            archived_and_torn_down(ctx, f"{owner}-1")
            cos = get_cos(ctx.env, f"{owner}-2")
            assert json.loads(cos["metadata"]["annotations"][api.ANNOTATION_BUNDLE_SOURCE]) == {
                "catalog": str(catalog), "packageName": case.package}
            assert {entry["ref"]["namespace"] for phase in cos["spec"]["phases"] for entry in phase["objects"]
                    if "ref" in entry} == {system_ns}
            done = upgrade()
            assert (done.returncode, done.stderr, done.stdout.splitlines()[-1].split()) == (
                0, "", [owner, case.package, case.second, "-", "up", "to", "date"]), done.stdout + done.stderr
        finally:
            kubectl(ctx.env, "delete", "clusterobjectsets", "-l", f"{OWNER_LABEL}={owner}", "--wait=false")
            wait_for(lambda: not ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}"), 300,
                     f"the revisions of {owner} to be torn down")
            kubectl(ctx.env, "delete", "--ignore-not-found", "-f", "-", stdin=rights)


OLM_CRDS_VARIABLE = "COS_E2E_OLM_CRDS"


def test_a_cluster_extension_manifest_as_the_api_server_stores_it_is_installed_and_upgraded(ctx: Ctx) -> None:
    """``publish --extension``: a ClusterExtension written as an OLM v1 user writes it, admitted, validated and
    defaulted by the real API server under OLM v1's own CRD (``$COS_E2E_OLM_CRDS``: the directory holding
    operator-controller's experimental ``olm.operatorframework.io_clusterextensions.yaml``, which has spec.config),
    read back with ``kubectl get -o yaml`` and published; nothing reconciles the ClusterExtension itself. Editing the
    manifest (its range dropped, as in a GitOps repository) upgrades along the catalog's edge."""
    crds = os.environ.get(OLM_CRDS_VARIABLE)
    if not crds:
        pytest.skip(f"{OLM_CRDS_VARIABLE} is not set: no ClusterExtension CRD to admit the manifest with")
    case = KOKU
    if any(not (ctx.corpus / d / "metadata").is_dir() for d in case.dirs):
        pytest.skip(f"{CORPUS_VARIABLE}={ctx.corpus}: no bundles {case.dirs}")
    owner = ns = f"koku-ce-{RUN}"
    kubectl(ctx.env, "create", "namespace", ns)
    ctx.namespaces.append(ns)
    ctx.stand_ins.namespaces.add(ns)
    kubectl(ctx.env, "create", "serviceaccount", "installer", "-n", ns)
    binding = f"{owner}-installer"
    kubectl(ctx.env, "create", "clusterrolebinding", binding, "--clusterrole", "cluster-admin",
            f"--serviceaccount={ns}:installer")
    crd = "clusterextensions.olm.operatorframework.io"
    made_crd = gone(ctx.kube, CRD_API, "CustomResourceDefinition", crd)
    with koku_served(ctx, "ce") as (home, images, catalog, _):
        try:
            if made_crd:
                kubectl(ctx.env, "apply", "--server-side", "-f",
                        str(Path(crds) / "olm.operatorframework.io_clusterextensions.yaml"))
                wait_for(lambda: crd_established(ctx.kube, crd), 60, f"CRD {crd}")
            kubectl(ctx.env, "apply", "-f", "-", stdin=yaml.safe_dump({
                "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension", "metadata": {"name": owner},
                "spec": {"namespace": ns, "serviceAccount": {"name": "installer"},
                         "source": {"sourceType": "Catalog", "catalog": {"packageName": case.package,
                                                                         "version": f"<{case.second}"}},
                         "config": {"configType": "Inline", "inline": {"watchNamespace": ns}}}}))
            stored = kubectl(ctx.env, "get", "clusterextension", owner, "-o", "yaml")
            kubectl(ctx.env, "delete", "clusterextension", owner)   # nothing reconciles it; the manifest remains
            assert yaml.safe_load(stored)["spec"]["source"]["catalog"]["upgradeConstraintPolicy"] == \
                "CatalogProvided"   # the API server's default, under OLM v1's CRD
            manifest = ctx.tmp / "ce.yaml"
            manifest.write_text(stored)
            done = cosctl(ctx, "publish", "--extension", str(manifest), "--catalog", str(catalog), home=home)
            out = ok_but_pulled(done, images[case.first])
            assert (out[0], out[1], out[-1]) == (
                f"package {case.package} resolves to koku-metrics-operator.v{case.first} ({case.first}) in catalog "
                f"{catalog}: {images[case.first]}", f"bundle koku-metrics-operator.v{case.first} rendered for "
                f"namespace {ns}", f"ClusterObjectSet {owner}-1 (revision 1) created")
            rolled_out(ctx, f"{owner}-1", case.first)
            annotations = get_cos(ctx.env, f"{owner}-1")["metadata"]["annotations"]
            assert json.loads(annotations[api.ANNOTATION_BUNDLE_SOURCE]) == {
                "catalog": str(catalog), "packageName": case.package, "version": f"<{case.second}"}
            assert json.loads(annotations[OPTIONS]) == {"namespace": ns, "config": {"watchNamespace": ns}}
            assert (annotations[api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE],
                    annotations[api.ANNOTATION_SERVICE_ACCOUNT_NAME]) == (ns, "installer")

            edited = yaml.safe_load(stored)
            del edited["spec"]["source"]["catalog"]["version"]
            manifest.write_text(yaml.safe_dump(edited))
            out = ok_but_pulled(cosctl(ctx, "publish", "--extension", str(manifest), home=home), images[case.second])
            assert (out[0], out[-1]) == (
                f"package {case.package} resolves to koku-metrics-operator.v{case.second} ({case.second}) over "
                f"koku-metrics-operator.v{case.first} in catalog {catalog} (--catalog kept from {owner}-1): "
                f"{images[case.second]}", f"ClusterObjectSet {owner}-2 (revision 2) created")
            rolled_out(ctx, f"{owner}-2", case.second)
            archived_and_torn_down(ctx, f"{owner}-1")
        finally:
            kubectl(ctx.env, "delete", "clusterobjectsets", "-l", f"{OWNER_LABEL}={owner}", "--wait=false")
            wait_for(lambda: not ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}"), 300,
                     f"the revisions of {owner} to be torn down")
            kubectl(ctx.env, "delete", "clusterrolebinding", binding)
            if made_crd:
                kubectl(ctx.env, "delete", "--ignore-not-found", "customresourcedefinition", crd)


def _clustercatalogs_crd(crds: str) -> Path:
    """catalogd's ClusterCatalog CRD beside operator-controller's in an OLM v1 checkout (``$COS_E2E_OLM_CRDS`` names
    operator-controller's CRD directory: helm/olmv1/base/operator-controller/crd/experimental)."""
    name = "olm.operatorframework.io_clustercatalogs.yaml"
    for directory in (Path(crds), Path(crds).parents[2] / "catalogd" / "crd" / Path(crds).name):
        if (directory / name).is_file():
            return directory / name
    pytest.skip(f"{OLM_CRDS_VARIABLE}={crds}: no {name} in it or in catalogd's CRD directory beside it")


def _without(catalog_text: str, version: str) -> str:
    """A File-Based Catalog (one object per line) without the bundle of ``version``, nor its channel entries."""
    kept = []
    for line in catalog_text.splitlines():
        obj = json.loads(line)
        if obj["schema"] == "olm.bundle" and obj["name"].endswith(f".v{version}"):
            continue
        if obj["schema"] == "olm.channel":
            obj["entries"] = [e for e in obj["entries"] if not e["name"].endswith(f".v{version}")]
        kept.append(json.dumps(obj))
    return "\n".join(kept)


def _serve_cluster_catalog(ctx: Ctx, name: str, ref: str, *, priority: int, labels: dict[str, str]) -> None:
    """A ClusterCatalog, and the status catalogd writes once it serves ``ref`` (nothing runs catalogd here)."""
    kubectl(ctx.env, "apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
        "metadata": {"name": name, "labels": labels},
        "spec": {"priority": priority,
                 "source": {"type": "Image", "image": {"ref": ref.split("@", maxsplit=1)[0] + ":latest"}}}}))
    kubectl(ctx.env, "patch", "clustercatalog", name, "--subresource=status", "--type=merge", "-p", json.dumps({
        "status": {"conditions": [{"type": "Serving", "status": "True", "reason": "Available",
                                   "message": "Serving desired content from resolved source",
                                   "lastTransitionTime": "2026-11-27T00:00:00Z", "observedGeneration": 1}],
                   "resolvedSource": {"type": "Image", "image": {"ref": ref}},
                   "urls": {"base": f"https://catalogd-service.olmv1-system.svc/catalogs/{name}"}}}))


def test_a_package_is_resolved_across_the_cluster_catalogs_by_priority_and_upgraded_from_them(ctx: Ctx) -> None:
    """``--catalog clustercatalogs:SELECTOR``: ClusterCatalogs as catalogd leaves them, admitted under catalogd's own
    CRD (``$COS_E2E_OLM_CRDS``), each read from the digest its status names. The higher priority wins (0.9.0 only);
    made Unavailable, the other one offers 0.9.1, and ``cosctl upgrade`` rolls it out; two at the same priority are
    refused in OLM v1's words."""
    crds = os.environ.get(OLM_CRDS_VARIABLE)
    if not crds:
        pytest.skip(f"{OLM_CRDS_VARIABLE} is not set: no ClusterCatalog CRD")
    crd_file = _clustercatalogs_crd(crds)
    case, owner, config = _koku_owner(ctx, "cc")
    ns = owner
    crd = "clustercatalogs.olm.operatorframework.io"
    made_crd = gone(ctx.kube, CRD_API, "CustomResourceDefinition", crd)
    full, pinned = f"koku-full-{RUN}", f"koku-pinned-{RUN}"
    selector = f"clustercatalogs:cos-e2e={RUN}"
    with koku_served(ctx, "cc") as (home, images, catalog, registry):
        try:
            if made_crd:
                kubectl(ctx.env, "apply", "--server-side", "-f", str(crd_file))
                wait_for(lambda: crd_established(ctx.kube, crd), 60, f"CRD {crd}")
            text = (catalog / "catalog.json").read_text()
            full_ref = push_index(registry, ctx.tmp, "koku/catalog-full", text, package=case.package)
            pinned_ref = push_index(registry, ctx.tmp, "koku/catalog-pinned", _without(text, case.second),
                                    package=case.package)
            _serve_cluster_catalog(ctx, full, full_ref, priority=0, labels={"cos-e2e": RUN})
            _serve_cluster_catalog(ctx, pinned, pinned_ref, priority=10, labels={"cos-e2e": RUN})
            _serve_cluster_catalog(ctx, f"koku-other-{RUN}", full_ref, priority=99, labels={"cos-e2e": "other"})

            done = cosctl(ctx, "publish", "--package", case.package, "--owner", owner, "-n", ns,
                          "--create-namespace", "--config", str(config), "--catalog", selector, home=home)
            assert done.returncode == 0, done.stdout + done.stderr
            assert done.stdout.splitlines()[0] == (
                f"package {case.package} resolves to koku-metrics-operator.v{case.first} ({case.first}) in "
                f"ClusterCatalog {pinned} (priority 10, docker://{pinned_ref}): {images[case.first]}")
            rolled_out(ctx, f"{owner}-1", case.first)
            assert json.loads(get_cos(ctx.env, f"{owner}-1")["metadata"]["annotations"][
                api.ANNOTATION_BUNDLE_SOURCE]) == {"catalog": selector, "packageName": case.package}

            kubectl(ctx.env, "patch", "clustercatalog", pinned, "--type=merge", "-p",
                    '{"spec": {"availabilityMode": "Unavailable"}}')
            done = cosctl(ctx, "upgrade", owner, home=home)
            assert done.returncode == 0, done.stdout + done.stderr
            assert (f"package {case.package} resolves to koku-metrics-operator.v{case.second} ({case.second}) over "
                    f"koku-metrics-operator.v{case.first} in ClusterCatalog {full} (priority 0, docker://{full_ref}) "
                    f"(--catalog kept from {owner}-1): {images[case.second]}") in done.stdout.splitlines()
            rolled_out(ctx, f"{owner}-2", case.second)
            archived_and_torn_down(ctx, f"{owner}-1")

            # a selector the API server refuses: its words (labels.Parse), naming the option
            done = cosctl(ctx, "resolve", case.package, "--catalog", "clustercatalogs:tier=a/b", home=home)
            assert (done.returncode, done.stderr) == (2, (
                "cosctl resolve: --catalog clustercatalogs:tier=a/b: the API server refused the label selector: "
                'unable to parse requirement: values[0][tier]: Invalid value: "a/b": a valid label must be an '
                "empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
                "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')\n")), done.stderr
            kubectl(ctx.env, "patch", "clustercatalog", pinned, "--type=merge", "-p",
                    '{"spec": {"availabilityMode": "Available", "priority": 0}}')
            done = cosctl(ctx, "resolve", case.package, "--catalog", selector, home=home)
            assert (done.returncode, done.stderr.splitlines()[-2]) == (1, (
                f'cosctl resolve: found bundles for package "{case.package}" in multiple catalogs with the same '
                f"priority [{full} {pinned}]")), done.stdout + done.stderr
        finally:
            kubectl(ctx.env, "delete", "clusterobjectsets", "-l", f"{OWNER_LABEL}={owner}", "--wait=false")
            wait_for(lambda: not ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}"), 300,
                     f"the revisions of {owner} to be torn down")
            if made_crd:
                kubectl(ctx.env, "delete", "--ignore-not-found", "customresourcedefinition", crd)
            else:
                kubectl(ctx.env, "delete", "--ignore-not-found", "clustercatalogs", full, pinned, f"koku-other-{RUN}")


def ok_but_pulled(done: subprocess.CompletedProcess[str], image: str) -> list[str]:
    """The output lines of a command that succeeded and said only that it pulled ``image`` (by digest)."""
    assert (done.returncode, done.stderr) == (0, f"cosctl publish: pulled docker://{image}\n"), \
        f"{done.args}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout.splitlines()


def test_cosctl_rbac_grants_what_a_least_privilege_install_and_upgrade_need(ctx: Ctx) -> None:
    """``publish --service-account`` refuses, listing what the ServiceAccount lacks (OLM v1's preflight), and writes
    nothing; ``cosctl rbac`` grants exactly that, and the real reconciler installs the bundle with nothing else (the
    API server's escalation check of the bundle's Roles included). An upgrade whose RBAC replaced the installed
    version's is refused, naming what the installed revision's teardown would lack, until ``--keep-installed`` keeps
    it; the old revision is then torn down with the ServiceAccount's token."""
    case, owner, config = _koku_owner(ctx, "rbac")
    ns = owner
    kubectl(ctx.env, "create", "namespace", ns)   # the ServiceAccount lives there: it must exist first
    ctx.namespaces.append(ns)
    first, second = copy_bundle(ctx, case, case.first), copy_bundle(ctx, case, case.second)
    installer = ("--owner", owner, "--service-account", "installer")
    old_role, new_role = case.moved[2][1], case.moved[2][2]   # the ClusterRoles the CSV names (0.9.0, 0.9.1)
    try:
        done = cosctl(ctx, "publish", str(first), "-n", ns, "--config", str(config), *installer)
        lines = done.stderr.splitlines()
        assert (done.returncode, lines[:3]) == (1, [
            "cosctl publish: the permission preflight refused the new revision (no revision was created):",
            f"ServiceAccount {ns}/installer does not exist: the reconciler could not write as it (service account "
            f'"installer" not found in namespace "{ns}")',
            f"ServiceAccount {ns}/installer lacks, by the cluster's RBAC, to apply the new revision:"]), done.stderr
        for line in (f'  Namespace:"{ns}" APIGroups:[apps] Resources:[deployments] Verbs:[create]',
                     f'  Namespace:"" APIGroups:[rbac.authorization.k8s.io] Resources:[clusterroles] '
                     f"ResourceNames:[{old_role}] Verbs:[delete,patch]",
                     '  Namespace:"" APIGroups:[config.openshift.io] Resources:[clusterversions] '
                     "Verbs:[get,list,watch]"):   # what the bundle's ClusterRole grants
            assert line in lines
        assert ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}") == []

        rbac = cosctl(ctx, "rbac", str(first), "-n", ns, "--config", str(config), *installer)
        assert (rbac.returncode, rbac.stderr) == (0, "")
        kubectl(ctx.env, "apply", "-f", "-", stdin=rbac.stdout)
        out = ok(cosctl(ctx, "publish", str(first), "-n", ns, "--config", str(config), *installer))
        assert out[-1] == f"ClusterObjectSet {owner}-1 (revision 1) created"
        rolled_out(ctx, f"{owner}-1", case.first)

        # the next version's RBAC alone: revision 1 could not delete the ClusterRole 0.9.1 no longer has
        rbac = cosctl(ctx, "rbac", str(second), "-n", ns, "--config", str(config), *installer)
        kubectl(ctx.env, "apply", "-f", "-", stdin=rbac.stdout)
        done = cosctl(ctx, "publish", str(second), "--owner", owner)
        lines = done.stderr.splitlines()
        assert (done.returncode, lines[1]) == (1, (
            f"ServiceAccount {ns}/installer lacks, to tear ClusterObjectSet {owner}-1 down once the new revision "
            "succeeds (deleting what the new revision drops, releasing what it keeps):")), done.stderr
        assert (f'  Namespace:"" APIGroups:[rbac.authorization.k8s.io] Resources:[clusterroles] '
                f"ResourceNames:[{old_role}] Verbs:[delete]") in lines   # it is dropped: deleted, never patched
        assert len(ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}")) == 1

        rbac = cosctl(ctx, "rbac", str(second), "--keep-installed", "--owner", owner)
        assert (rbac.returncode, rbac.stderr) == (
            0, f"cosctl rbac: options kept from {owner}-1\ncosctl rbac: keeping patch and delete on the objects of "
               f"{owner}-1\n")
        kubectl(ctx.env, "apply", "-f", "-", stdin=rbac.stdout)
        out = ok(cosctl(ctx, "publish", str(second), "--owner", owner))
        assert out[-1] == f"ClusterObjectSet {owner}-2 (revision 2) created"
        rolled_out(ctx, f"{owner}-2", case.second)
        archived_and_torn_down(ctx, f"{owner}-1")
        assert (gone(ctx.kube, "rbac.authorization.k8s.io/v1", "ClusterRole", old_role),
                gone(ctx.kube, "rbac.authorization.k8s.io/v1", "ClusterRole", new_role)) == (True, False)

        # uninstall: the teardown's deletes are checked against the ServiceAccount's RBAC first; with the grant's
        # cluster-wide half gone, nothing is deleted; granted again, the reconciler tears it down with the token
        kubectl(ctx.env, "delete", "clusterrolebinding", f"{owner}-installer")
        done = cosctl(ctx, "uninstall", "--owner", owner)
        lines = done.stderr.splitlines()
        assert (done.returncode, lines[:2]) == (1, [
            "cosctl uninstall: the permission preflight refused the uninstall (nothing was deleted):",
            f"ServiceAccount {ns}/installer lacks, by the cluster's RBAC, to tear ClusterObjectSet {owner}-2 down:"]), \
            done.stderr
        assert (f'  Namespace:"" APIGroups:[rbac.authorization.k8s.io] Resources:[clusterroles] '
                f"ResourceNames:[{new_role}] Verbs:[delete]") in lines
        assert len(ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}")) == 2
        kubectl(ctx.env, "apply", "-f", "-", stdin=rbac.stdout)
        out = ok(cosctl(ctx, "uninstall", "--owner", owner, "--timeout", "300"))
        assert out[-1] == (f"owner {owner} uninstalled: 2 revision(s) deleted, their objects removed in reverse "
                           "phase order")
        assert gone(ctx.kube, "rbac.authorization.k8s.io/v1", "ClusterRole", new_role)
    finally:   # teardown with the ServiceAccount's rights, which are still granted; then the grant itself
        kubectl(ctx.env, "delete", "clusterobjectsets", "-l", f"{OWNER_LABEL}={owner}", "--wait=false")
        wait_for(lambda: not ctx.kube.list(COS_API, KIND, label_selector=f"{OWNER_LABEL}={owner}"), 300,
                 f"the revisions of {owner} to be torn down")
        kubectl(ctx.env, "delete", "clusterrole,clusterrolebinding", f"{owner}-installer", "--ignore-not-found")
