"""Shared fixtures of the end-to-end suite: the real reconciler process against a real cluster.

Runs only when ``COS_E2E_KUBECONFIG`` names the kubeconfig of a reachable cluster; skipped otherwise with
the reason. The session fixture ``env`` installs the ClusterObjectSet CRD if it is missing (and leaves it:
other things may use it), starts ``cos-reconciler`` as a subprocess with a per-run system namespace, and the
tests work only in namespaces and COS names carrying a per-run random suffix, deleted at the end (with the
CRDs in ``env["crds"]`` and the other objects a test lists in ``env["cleanup"]``), so the suite runs against
any conformant cluster repeatedly. Only ONE reconciler may act on a cluster at a time (two
without a shared Lease would both act on these COSs), so the process is session scoped; a test that needs
other processes (leader failover) stops it with ``env["reconciler"].stop()`` and starts it again after.

``COS_E2E_RECONCILER_CMD``, when set, is the command (shell words) that starts the reconciler instead of this
checkout's ``python -m reconciler.cli``; the suite appends the same flags. It is how the suite runs against the
container image, e.g. ``podman run --rm --network host --read-only --user 65532:65532 -v K:K:ro IMAGE
cos-reconciler`` with K the kubeconfig (readable by 65532). Stopping sends SIGTERM to that command, which
``podman run``/``docker run`` pass on to the container; a SIGKILL stops only the client, so the leader
failover test (``_process``) is meant for the default command.

The helpers below are plain functions over ``env`` (the test modules import them from here); the run's
suffix lives in ``env["run"]``, since pytest's importlib mode may load this module twice.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.cluster.interface import ApiError, NotFound
from common.cluster.kube import KubeCluster

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "deploy" / "crd" / "olm.operatorframework.io_clusterobjectsets.yaml"
COS_API = "olm.operatorframework.io/v1"
KIND = "ClusterObjectSet"
CM = ("v1", "ConfigMap")
OWNER_LABEL = "olm.operatorframework.io/owner-name"
REVISION_ANNOTATION = "olm.operatorframework.io/revision"
MANAGED_BY = "app.kubernetes.io/managed-by"
COS_REF = "ClusterObjectSet.olm.operatorframework.io/v1"


def _cluster_or_skip() -> tuple[str, KubeCluster]:
    path = os.environ.get("COS_E2E_KUBECONFIG")
    if not path:
        pytest.skip("set COS_E2E_KUBECONFIG to the kubeconfig of a disposable cluster to run the e2e suite")
    if not os.path.isfile(path):
        pytest.skip(f"COS_E2E_KUBECONFIG={path}: no such file")
    try:
        kube = KubeCluster.from_kubeconfig(path, max_retries=1, request_timeout=10)
        kube.list("v1", "Namespace", label_selector="cos-e2e-reachability-probe")
    except Exception as e:  # unreachable, bad credentials, broken file
        pytest.skip(f"COS_E2E_KUBECONFIG={path}: cluster not reachable ({type(e).__name__}: {e})")
    return path, kube


def wait_for(cond: Callable[[], Any], timeout: float = 120.0, what: str = "condition") -> Any:
    """Poll ``cond`` every second until it is truthy (a readiness wait, not a timed assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(ApiError, OSError):   # an API server restart makes reads fail for a while
            value = cond()
            if value:
                return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(1.0)


class Reconciler:
    """A ``cos-reconciler`` subprocess writing JSON logs to a file (the fixture prints its tail at the end)."""

    def __init__(self, kubeconfig: str, system_ns: str, log_path: Path, *extra: str) -> None:
        self.kubeconfig, self.system_ns, self.log_path, self.extra = kubeconfig, system_ns, log_path, extra
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Reconciler:
        with self.log_path.open("a") as log:   # the child keeps its own descriptor
            command = shlex.split(os.environ.get("COS_E2E_RECONCILER_CMD", "")) or [
                sys.executable, "-m", "reconciler.cli"]
            self.proc = subprocess.Popen(
                [*command, "--kubeconfig", self.kubeconfig,
                 "--system-namespace", self.system_ns, "--workers", "4", "--health-bind", "0",
                 "--metrics-bind", "0", "--log-format", "json", *self.extra],
                cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=log, stderr=subprocess.STDOUT)
        return self

    def stop(self, sig_kill: bool = False) -> int | None:
        if self.proc is None:
            return None
        if sig_kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        code = self.proc.wait(60)
        self.proc = None
        return code

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@pytest.fixture(scope="session")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    path, kube = _cluster_or_skip()
    try:
        kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "clusterobjectsets.olm.operatorframework.io")
    except NotFound:
        kube.create(yaml.safe_load(CRD_FILE.read_text()))
        wait_for(lambda: crd_established(kube, "clusterobjectsets.olm.operatorframework.io"), 60,
                 "the CRD to be established")
    run = uuid.uuid4().hex[:6]
    system_ns = f"cos-e2e-sys-{run}"
    work_ns = f"cos-e2e-{run}"
    for ns in (system_ns, work_ns):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    log_path = tmp_path_factory.mktemp("e2e") / "reconciler.log"
    reconciler = Reconciler(path, system_ns, log_path).start()
    state: dict[str, Any] = {"kube": kube, "ns": work_ns, "system_ns": system_ns, "cos": [], "run": run,
                             "kubeconfig": path, "reconciler": reconciler, "log": log_path,
                             "namespaces": [], "crds": [], "cleanup": []}
    try:
        yield state
    finally:
        if not reconciler.alive():
            reconciler.start()
        for name in state["cos"]:
            with contextlib.suppress(ApiError):
                kube.delete(COS_API, KIND, name)
        try:
            wait_for(lambda: all(gone(kube, COS_API, KIND, n) for n in state["cos"]), 300,
                     "the test COSs to be deleted")
        finally:
            reconciler.stop()
            for ns in (work_ns, system_ns, *state["namespaces"]):
                with contextlib.suppress(ApiError):
                    kube.delete("v1", "Namespace", ns)
            for crd in state["crds"]:
                with contextlib.suppress(ApiError):
                    kube.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd)
            for api_version, kind, name, ns in state["cleanup"]:   # (apiVersion, kind, name, namespace or None)
                with contextlib.suppress(ApiError):
                    kube.delete(api_version, kind, name, ns)
            sys.stderr.write(log_path.read_text()[-4000:])


def crd_established(kube: KubeCluster, name: str) -> bool:
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def gone(kube: KubeCluster, api_version: str, kind: str, name: str, ns: str | None = None) -> bool:
    try:
        kube.get(api_version, kind, name, ns)
        return False
    except NotFound:
        return True


def cm(ns: str, name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": "v"}}


def cos_name(env: dict[str, Any], name: str) -> str:
    return f"{name}-{env['run']}"


def cos_body(env: dict[str, Any], name: str, revision: int, phases: list[dict[str, Any]],
             owner: str | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": cos_name(env, name)}
    if owner:
        meta["labels"] = {OWNER_LABEL: cos_name(env, owner)}
    spec = {"revision": revision, "lifecycleState": "Active", "collisionProtection": "Prevent",
            "phases": phases, **spec}
    return {"apiVersion": COS_API, "kind": KIND, "metadata": meta, "spec": spec}


def make_cos(env: dict[str, Any], name: str, revision: int, phases: list[dict[str, Any]],
             owner: str | None = None, **spec: Any) -> dict[str, Any]:
    """Create a COS named ``<name>-<run>`` (registered for deletion at the end of the session)."""
    obj = cos_body(env, name, revision, phases, owner, **spec)
    env["cos"].append(obj["metadata"]["name"])
    return env["kube"].create(obj)


def get_cos(env: dict[str, Any], name: str) -> dict[str, Any]:
    return env["kube"].get(COS_API, KIND, name)


def conditions(env: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    obj = get_cos(env, name)
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def reason(env: dict[str, Any], name: str, ctype: str = "Progressing") -> str:
    return str(conditions(env, name).get(ctype, {}).get("reason", ""))


def brief(env: dict[str, Any], name: str, ctype: str = "Progressing") -> tuple[str, str, str]:
    """(status, reason, message) of one condition, as the unit tests compare them."""
    c = conditions(env, name).get(ctype) or {}
    return str(c.get("status", "")), str(c.get("reason", "")), str(c.get("message", ""))


def wait_brief(env: dict[str, Any], name: str, expected: tuple[str, str, str], ctype: str = "Progressing",
               timeout: float = 120.0) -> None:
    """Wait for one condition to read exactly ``expected``; on timeout, say what it read last."""
    try:
        wait_for(lambda: brief(env, name, ctype) == expected, timeout, f"{ctype} {expected}")
    except AssertionError:
        assert brief(env, name, ctype) == expected  # shows the difference


def wait_succeeded(env: dict[str, Any], name: str, version: str = "", timeout: float = 120.0) -> None:
    rev = version or str(get_cos(env, name)["spec"]["revision"])
    wait_brief(env, name, ("True", "Succeeded", f"Revision {rev} has rolled out."), timeout=timeout)


def exists(env: dict[str, Any], kind_av: tuple[str, str], name: str, ns: str | None) -> bool:
    return not gone(env["kube"], kind_av[0], kind_av[1], name, ns)


def uid(env: dict[str, Any], name: str) -> str:
    return str(get_cos(env, name)["metadata"]["uid"])


def controller_of(obj: dict[str, Any]) -> list[str]:
    return [r["name"] for r in (obj["metadata"].get("ownerReferences") or []) if r.get("controller")]


def kubectl(env: dict[str, Any], *args: str, editor: str | None = None, stdin: str | None = None) -> str:
    """Run the real ``kubectl`` (skips when none is installed): what a user does, with kubectl's managers."""
    exe = shutil.which("kubectl")
    if exe is None:
        pytest.skip("kubectl not found on PATH")
    extra = {"KUBE_EDITOR": editor} if editor else {}
    out = subprocess.run([exe, "--kubeconfig", env["kubeconfig"], *args], input=stdin, capture_output=True,
                         text=True, env=dict(os.environ, **extra), timeout=120, check=False)
    assert out.returncode == 0, f"kubectl {' '.join(args)}: {out.stderr}"
    return out.stdout


def metrics(env: dict[str, Any]) -> str:
    resp = env["kube"]._open("GET", "/metrics", None, None, "", 30)
    return str(resp.read().decode() if hasattr(resp, "read") else resp.data.decode())
