"""End-to-end: taking ClusterObjectSets over from OLM v1's operator-controller, and refusing to run beside it.

Opt-in twice: ``COS_E2E_KUBECONFIG`` (the suite's cluster) and ``COS_E2E_OPERATOR_CONTROLLER``, the path of an
``operator-controller`` binary built from source (operator-framework/operator-controller or OpenShift's copy,
``cmd/operator-controller``, the default build: the ``standard`` tag would leave its COS controller out). Skipped
with the reason otherwise. It runs outside any Pod as a real deployment runs it (``--leader-elect``,
``--feature-gates=BoxcutterRuntime=true``), except for two files it insists on reading from
``/var/run/secrets/kubernetes.io/serviceaccount/``: a token (it parses its subject) and the namespace (its
leader election namespace). They are put there in a private mount namespace (``unshare``; as root, or with
unprivileged user namespaces) so nothing on the host changes. Its caches need the ClusterExtension and
ClusterCatalog kinds: when the cluster does not serve them, stand-in CRDs (any content) are created for the
run and deleted after; no such objects are ever created.

``COS_E2E_AUDIT_LOG`` (optional) names the API server's audit log (any level, Metadata is enough): the writes
are then also counted per request, by the reconciler's User-Agent.

The test: the session's reconciler is stopped; operator-controller rolls out a COS of 34 objects (a
ServiceAccount, Role and RoleBinding; 29 ConfigMaps; a Deployment with 0 replicas and a Service) to its own
Succeeded state (its message, ``Revision  has rolled out.`` with an empty version, proves whose it is). While it
runs, a second ``cos-reconciler`` refuses to start (exit 3, the message naming operator-controller's Lease).
operator-controller is stopped (it releases its Lease), the session's reconciler starts again and takes the COS
over: our own Succeeded condition, with not one write to the 34 objects (their resourceVersions and
managedFields are unchanged, the API server's ``apiserver_request_total`` counts no non-dry-run write to their
resources, and with the audit log no write by cos-reconciler). Then ``cosctl publish`` creates revision 2,
which ours rolls out, adopting every object, and archives revision 1.

Like every other COS controller, operator-controller reconciles every COS on the cluster while it runs: the COSs
that earlier modules of the session left behind get its status for that minute (ours rewrites them when it
is back). Run this module on its own for a clean cluster log.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.cluster.interface import ApiError, NotFound
from tests.e2e.conftest import (
    COS_API,
    KIND,
    ROOT,
    Reconciler,
    brief,
    conditions,
    controller_of,
    cos_name,
    crd_established,
    get_cos,
    metrics,
    wait_brief,
    wait_for,
    wait_succeeded,
)

pytestmark = pytest.mark.e2e

LEASE_NAME = "9c4404e7.operatorframework.io"
LEASE = ("coordination.k8s.io/v1", "Lease")
OC_SA = "operator-controller-controller-manager"
MANAGED = [("v1", "ServiceAccount", "serviceaccounts"), ("rbac.authorization.k8s.io/v1", "Role", "roles"),
           ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"), ("v1", "ConfigMap", "configmaps"),
           ("apps/v1", "Deployment", "deployments"), ("v1", "Service", "services")]
WRITE_VERBS = {"POST", "PUT", "PATCH", "APPLY", "DELETE"}
CONFIGMAPS = 29

# Inside the private mount namespace: a tmpfs over /var/run (only this process sees it) holding the two
# service-account files, then operator-controller itself in place of the shell.
LAUNCH = r"""
set -e
run=$(readlink -f /var/run)
mount -t tmpfs -o mode=0755 tmpfs "$run"
mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
cp "$1" /var/run/secrets/kubernetes.io/serviceaccount/token
printf %s "$2" > /var/run/secrets/kubernetes.io/serviceaccount/namespace
shift 2
exec "$@"
"""


def _binary_or_skip() -> str:
    path = os.environ.get("COS_E2E_OPERATOR_CONTROLLER")
    if not path:
        pytest.skip("set COS_E2E_OPERATOR_CONTROLLER to an operator-controller binary built from source "
                    "(cmd/operator-controller) to run the OLM v1 takeover test")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.skip(f"COS_E2E_OPERATOR_CONTROLLER={path}: not an executable file")
    if shutil.which("unshare") is None:
        pytest.skip("the OLM v1 takeover test needs util-linux `unshare` (operator-controller reads a service "
                    "account token from /var/run/secrets, provided in a private mount namespace)")
    return path


class OperatorController:
    """operator-controller as a subprocess (logs to a file), reconciling ClusterObjectSets with a Lease."""

    def __init__(self, binary: str, kubeconfig: str, namespace: str, token_file: Path, workdir: Path) -> None:
        self.log_path = workdir / "operator-controller.log"
        cache = workdir / "oc-cache"
        cache.mkdir()
        userns = [] if os.geteuid() == 0 else ["--map-root-user"]
        self.argv = ["unshare", "--mount", "--propagation", "private", *userns, "sh", "-c", LAUNCH, "sh",
                     str(token_file), namespace, binary, "--kubeconfig", kubeconfig, "--system-namespace",
                     namespace, "--feature-gates=BoxcutterRuntime=true", "--leader-elect",
                     "--health-probe-bind-address=0", "--pprof-bind-address=0", "--cache-path", str(cache)]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        """SIGTERM: it releases its Lease and exits (its exit code is not ours to judge)."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)
        self.proc = None

    def tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""


def _standin_crd(kind: str, plural: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.olm.operatorframework.io"},
            "spec": {"group": "olm.operatorframework.io", "scope": "Cluster",
                     "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _objects(ns: str) -> list[dict[str, Any]]:
    def obj(api_version: str, kind: str, name: str, **rest: Any) -> dict[str, Any]:
        return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": ns}, **rest}
    return [
        obj("v1", "ServiceAccount", "demo-op"),
        obj("rbac.authorization.k8s.io/v1", "Role", "demo-op",
            rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]),
        obj("rbac.authorization.k8s.io/v1", "RoleBinding", "demo-op",
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "demo-op"},
            subjects=[{"kind": "ServiceAccount", "name": "demo-op", "namespace": ns}]),
        *[obj("v1", "ConfigMap", f"demo-cm-{i:02d}", data={"index": str(i), "rev": "1"}) for i in range(CONFIGMAPS)],
        obj("apps/v1", "Deployment", "demo-op", spec={
            "replicas": 0, "selector": {"matchLabels": {"app": "demo-op"}},
            "template": {"metadata": {"labels": {"app": "demo-op"}},
                         "spec": {"serviceAccountName": "demo-op",
                                  "containers": [{"name": "op", "image": "registry.example/demo-op:1"}]}}}),
        obj("v1", "Service", "demo-op",
            spec={"selector": {"app": "demo-op"}, "ports": [{"port": 8443, "targetPort": 8443}]}),
    ]


def _snapshot(env: dict[str, Any], ns: str) -> dict[tuple[str, str], tuple[str, Any, Any]]:
    """Every managed object of the namespace: (kind, name) -> (resourceVersion, managedFields, ownerReferences)."""
    out = {}
    for api_version, kind, _ in MANAGED:
        for o in env["kube"].list(api_version, kind, ns, label_selector="app.kubernetes.io/managed-by"):
            m = o["metadata"]
            out[(kind, m["name"])] = (m["resourceVersion"], m.get("managedFields"), m.get("ownerReferences"))
    return out


_SAMPLE = re.compile(r'^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$')


def _writes_by_clients(env: dict[str, Any]) -> dict[tuple[str, str, str], float]:
    """``apiserver_request_total`` for the managed resources, writes by non-system clients (kube-controller-
    manager and the API server itself are labelled ``system_client``): (resource, verb, dry_run) -> count."""
    resources = {r for _, _, r in MANAGED}
    out: dict[tuple[str, str, str], float] = {}
    for line in metrics(env).splitlines():
        m = _SAMPLE.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
        if labels.get("resource") in resources and labels.get("verb") in WRITE_VERBS and \
                not labels.get("subresource") and not labels.get("system_client"):
            key = (labels["resource"], labels["verb"], labels.get("dry_run", ""))
            out[key] = out.get(key, 0.0) + float(m["value"])
    return out


def _delta(before: dict[tuple[str, str, str], float],
           after: dict[tuple[str, str, str], float]) -> dict[tuple[str, str, str], float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


def _audit_writes(path: str, offset: int, ns: str) -> tuple[int, int]:
    """(writes, dry-run writes) by cos-reconciler to objects of ``ns`` in the audit log after ``offset``. A
    TokenRequest (``create`` on ``serviceaccounts/token``, for the ServiceAccount the COS names) stores nothing and
    is not a write to an object."""
    writes = dry = 0
    with open(path, "rb") as f:
        f.seek(offset)
        for line in f:
            with contextlib.suppress(ValueError):
                e = json.loads(line)
                ref = e.get("objectRef") or {}
                if e.get("stage") != "ResponseComplete" or ref.get("namespace") != ns or \
                        not str(e.get("userAgent", "")).startswith("cos-reconciler/") or \
                        e.get("verb") not in ("create", "update", "patch", "delete", "deletecollection") or \
                        ref.get("subresource") == "token":
                    continue
                if "dryRun=All" in str(e.get("requestURI", "")):
                    dry += 1
                else:
                    writes += 1
    return writes, dry


@pytest.fixture
def olm(env: dict[str, Any], tmp_path: Path) -> Iterator[dict[str, Any]]:
    """operator-controller's namespace, identity and CRDs; stops it and brings the session's reconciler back,
    whatever happens."""
    binary = _binary_or_skip()
    kube = env["kube"]
    run = env["run"]
    oc_ns, app_ns = f"cos-e2e-olm-{run}", f"cos-e2e-olmapp-{run}"
    for ns in (oc_ns, app_ns):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        env["namespaces"].append(ns)
    for kind, plural in (("ClusterExtension", "clusterextensions"), ("ClusterCatalog", "clustercatalogs")):
        name = f"{plural}.olm.operatorframework.io"
        try:
            kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        except NotFound:
            kube.create(_standin_crd(kind, plural))
            env["crds"].append(name)
            wait_for(functools.partial(crd_established, kube, name), 60, f"the stand-in CRD {name}")
    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": OC_SA, "namespace": oc_ns}})
    token = kube.request("create", "POST", f"/api/v1/namespaces/{oc_ns}/serviceaccounts/{OC_SA}/token",
                         body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                               "spec": {"expirationSeconds": 3600}})["status"]["token"]
    token_file = tmp_path / "token"
    token_file.touch(mode=0o600)
    token_file.write_text(token)
    # the identity operator-controller applies a COS's objects as (the COS's service-account annotations)
    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": app_ns}})
    binding = f"cos-e2e-olm-installer-{run}"
    kube.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": binding},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                 "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": app_ns}]})
    env["cleanup"].append(("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding, None))
    oc = OperatorController(binary, env["kubeconfig"], oc_ns, token_file, tmp_path)
    session: Reconciler = env["reconciler"]
    try:
        yield {"oc": oc, "oc_ns": oc_ns, "app_ns": app_ns, "tmp": tmp_path}
    finally:
        oc.stop()
        with contextlib.suppress(ApiError):   # released already on a clean stop; never leave a held one behind
            kube.delete(*LEASE, LEASE_NAME, oc_ns)
        if not session.alive():
            session.start()
        sys.stderr.write(f"--- operator-controller log (tail)\n{oc.tail()}\n")


def test_a_cos_rolled_out_by_operator_controller_is_taken_over_without_writes(
        env: dict[str, Any], olm: dict[str, Any]) -> None:
    kube, oc, app_ns, oc_ns = env["kube"], olm["oc"], olm["app_ns"], olm["oc_ns"]
    owner = cos_name(env, "olm")
    rev1, rev2 = f"{owner}-1", f"{owner}-2"
    session: Reconciler = env["reconciler"]
    session.stop()

    # --- operator-controller rolls revision 1 out
    oc.start()
    objects = _objects(app_ns)
    env["cos"].append(rev1)
    kube.create({"apiVersion": COS_API, "kind": KIND,
                 "metadata": {"name": rev1, "labels": {"olm.operatorframework.io/owner-name": owner},
                              "annotations": {"olm.operatorframework.io/service-account-name": "installer",
                                              "olm.operatorframework.io/service-account-namespace": app_ns}},
                 "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent",
                          "phases": [{"name": "rbac", "objects": [{"object": o} for o in objects[:3]]},
                                     {"name": "config", "objects": [{"object": o} for o in objects[3:-2]]},
                                     {"name": "deploy", "objects": [{"object": o} for o in objects[-2:]]}]}})
    # upstream's own words (its version is empty for a COS without a bundle-version annotation): it rolled out
    wait_brief(env, rev1, ("True", "Succeeded", "Revision  has rolled out."), timeout=180)
    assert brief(env, rev1, "Succeeded") == ("True", "Succeeded", "Revision succeeded rolling out.")
    managers = {(m["manager"], m.get("subresource", "")) for m in get_cos(env, rev1)["metadata"]["managedFields"]}
    assert ("operator-controller", "status") in managers
    before = _snapshot(env, app_ns)
    assert len(before) == len(objects) == 34
    assert all(refs and [r["name"] for r in refs if r.get("controller")] == [rev1]
               for _, _, refs in before.values())

    # --- while it runs, ours refuses to start
    lease = kube.get(*LEASE, LEASE_NAME, oc_ns)["spec"]
    assert lease["holderIdentity"] and lease["leaseDurationSeconds"] == 137
    second = Reconciler(env["kubeconfig"], env["system_ns"], olm["tmp"] / "refused.log").start()
    assert second.proc is not None
    assert second.proc.wait(60) == 3
    messages = [json.loads(line)["msg"] for line in (olm["tmp"] / "refused.log").read_text().splitlines()
                if line.startswith("{")]
    assert len(messages) == 1, messages
    assert re.fullmatch(
        rf"refusing to start: OLM v1's operator-controller is running \(Lease {oc_ns}/{re.escape(LEASE_NAME)} is "
        r"held by '[^']+', last renewed at \S+Z, valid until \S+Z\)\. It reconciles the same ClusterObjectSets, "
        r"and two controllers would fight over every object\. Stop it first .* start with "
        r"--skip-operator-controller-check\.", messages[0]), messages[0]
    assert _snapshot(env, app_ns) == before

    # --- stopped, it releases its Lease; ours takes over without one write to the objects
    oc.stop()
    assert kube.get(*LEASE, LEASE_NAME, oc_ns)["spec"]["holderIdentity"] in ("", None)
    before = _snapshot(env, app_ns)   # after its last request
    counted = _writes_by_clients(env)
    audit = os.environ.get("COS_E2E_AUDIT_LOG", "")
    offset = os.path.getsize(audit) if audit else 0
    session.start()
    wait_succeeded(env, rev1)   # ours: "Revision 1 has rolled out."
    assert brief(env, rev1, "Available") == ("True", "ProbesSucceeded", "Objects are available and pass all probes.")
    assert _snapshot(env, app_ns) == before
    delta = _delta(counted, _writes_by_clients(env))
    writes = {k: v for k, v in delta.items() if k[2] != "All"}
    assert writes == {}, f"writes to the managed resources during the takeover: {writes}"
    print(f"\ntakeover of {len(before)} objects: apiserver_request_total writes {sum(writes.values()):.0f}, "
          f"dry-run {sum(v for k, v in delta.items() if k[2] == 'All'):.0f} ({delta})")
    if audit:
        audit_writes, audit_dry = _audit_writes(audit, offset, app_ns)
        print(f"audit log: {audit_writes} writes and {audit_dry} dry-run requests by cos-reconciler to {app_ns}")
        assert audit_writes == 0

    # --- the next revision, published with cosctl, hands over from the taken-over one
    changed = list(objects)
    changed[3] = {**objects[3], "data": {"index": "0", "rev": "2"}}
    manifests = olm["tmp"] / "rev2.yaml"
    manifests.write_text(yaml.safe_dump_all(changed))
    env["cos"].append(rev2)
    started = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "common.cosctl", "publish", str(manifests), "--owner", owner,
                          "--system-namespace", env["system_ns"], "--kubeconfig", env["kubeconfig"]],
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                         timeout=120, check=False)
    published = time.monotonic()
    assert res.returncode == 0, res.stderr
    assert f"ClusterObjectSet {rev2} (revision 2) created" in res.stdout
    done = ("True", "Succeeded", "Revision 2 has rolled out.")
    while brief(env, rev2) != done and time.monotonic() < published + 120:   # a figure to print, not a test
        time.sleep(0.05)
    print(f"revision 2 rolled out {time.monotonic() - started:.2f}s after cosctl publish started, "
          f"{time.monotonic() - published:.2f}s after it returned")
    wait_succeeded(env, rev2)
    wait_brief(env, rev1, ("False", "Archived", "revision is archived"))
    assert conditions(env, rev1)["Succeeded"]["status"] == "True"
    for api_version, kind, _ in MANAGED:
        for o in kube.list(api_version, kind, app_ns, label_selector="app.kubernetes.io/managed-by"):
            assert controller_of(o) == [rev2], (kind, o["metadata"]["name"])
            assert o["metadata"]["annotations"]["olm.operatorframework.io/revision"] == "2"
    assert kube.get("v1", "ConfigMap", "demo-cm-00", app_ns)["data"] == {"index": "0", "rev": "2"}
