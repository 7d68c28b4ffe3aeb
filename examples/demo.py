"""``make demo``: what a ``kubectl apply`` user sees for each manifest in examples/, from the real webhook.

Starts ``cos-webhook --self-signed`` on a free loopback port, then for every document of every example
plays the API server's part: sends the object to the mutating route, applies the returned JSONPatch, sends
the result to the validating route, all as AdmissionReview v1 over HTTPS verified with the generated CA,
and prints what kubectl would print (warnings, then ``... created`` or the ``Error from server`` line).
``NAME.old.yaml`` next to ``NAME.yaml`` holds the live objects: documents matching one of them (same kind
and name) are sent as UPDATEs with it as ``oldObject``. Files named ``1*-bad-*`` are expected to be denied;
the demo exits 1 if any example is answered otherwise, so it doubles as a smoke test.

The denial text is the one the API server builds from the webhook's answer; on a cluster whose CRD carries
the CEL rules, violations of those rules are reported by the API server itself before the webhook is
called, without the ``admission webhook ... denied the request:`` prefix.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The names deploy/base/webhook/ gives the webhooks in its (Validating|Mutating)WebhookConfiguration.
WEBHOOK_NAMES = {
    "mutate": "mclusterobjectsets.olm.operatorframework.io",
    "validate": "vclusterobjectsets.olm.operatorframework.io",
}
SECRET_WEBHOOK_NAMES = {
    "mutate": "msecrets.olm.operatorframework.io",
    "validate": "vsecrets.olm.operatorframework.io",
}
OBJECT_DATA = "olm.operatorframework.io/object-data"


class DemoError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Webhook:
    """A ``cos-webhook --self-signed`` child process and an HTTPS client trusting its CA."""

    def __init__(self) -> None:
        self.port = free_port()
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "webhook.cli", "--self-signed", "--bind", f"127.0.0.1:{self.port}",
             "--workers", "1", "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        marker = "self-signed CA certificate: "
        if marker not in line:
            self.stop()
            raise DemoError("cos-webhook did not start: " + (line + self._stderr()).strip())
        self.ca_file = line.split(marker, 1)[1].strip()
        print(f"# cos-webhook listening on https://127.0.0.1:{self.port} (CA: {self.ca_file})")
        self.context = ssl.create_default_context(cafile=self.ca_file)
        self._wait_ready()

    def _stderr(self) -> str:
        if self.proc.poll() is None:
            return ""
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DemoError("cos-webhook exited: " + self._stderr().strip())
            try:
                status, body = self.request("GET", "/readyz")
                if status == 200:
                    return
                raise DemoError(f"cos-webhook is not ready: {body.decode(errors='replace').strip()}")
            except OSError:
                time.sleep(0.1)
        raise DemoError("cos-webhook did not become ready within 30 s")

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPSConnection("localhost", self.port, context=self.context, timeout=30)
        try:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def review(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "request": request}).encode()
        status, out = self.request("POST", path, body)
        if status != 200:
            raise DemoError(f"POST {path}: HTTP {status}: {out.decode(errors='replace').strip()}")
        response = json.loads(out)["response"]
        if response.get("uid") != request["uid"]:
            raise DemoError(f"POST {path}: response uid does not match the request")
        return dict(response)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def admission_request(obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    kind = obj.get("kind", "")
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    meta = obj.get("metadata") or {}
    resource = "clusterobjectsets" if kind == "ClusterObjectSet" else "secrets"
    req: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "name": meta.get("name", ""),
        "operation": "UPDATE" if old is not None else "CREATE",
        "userInfo": {"username": "demo-user", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions" if old else "CreateOptions"},
    }
    if meta.get("namespace"):
        req["namespace"] = meta["namespace"]
    return req


def apply_document(hook: Webhook, filename: str, obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """Play one document through mutation and validation; print kubectl's view. Returns allowed."""
    kind = obj.get("kind", "")
    name = (obj.get("metadata") or {}).get("name", "")
    if kind == "ClusterObjectSet":
        route, names, shown = "clusterobjectsets", WEBHOOK_NAMES, f"clusterobjectset.olm.operatorframework.io/{name}"
    elif kind == "Secret" and obj.get("type") == OBJECT_DATA:
        route, names, shown = "secrets", SECRET_WEBHOOK_NAMES, f"secret/{name}"
    else:
        print(f"{kind.lower()}/{name} {'configured' if old else 'created'} (not sent to the webhook)")
        return True
    warnings: list[str] = []
    mutated = hook.review(f"/mutate/{route}", admission_request(obj, old))
    response = mutated
    stage = "mutate"
    if mutated.get("allowed"):
        warnings += mutated.get("warnings") or []
        if mutated.get("patch"):
            ops = json.loads(base64.b64decode(mutated["patch"]))
            obj = jsonpatch.apply_patch(copy.deepcopy(obj), ops)
        response = hook.review(f"/validate/{route}", admission_request(obj, old))
        stage = "validate"
    warnings += [w for w in response.get("warnings") or [] if w not in warnings]
    for warning in warnings:
        print(f"Warning: {warning}")
    if response.get("allowed"):
        print(f"{shown} {'configured' if old else 'created'}")
        return True
    status = response.get("status") or {}
    reason = status.get("reason") or "Forbidden"
    verb = "patching" if old else "creating"
    message = status.get("message") or "without explanation"
    print(f'Error from server ({reason}): error when {verb} "{filename}": '
          f'admission webhook "{names[stage]}" denied the request: {message}')
    return False


def live_objects(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    old_path = path.with_name(path.name[:-len(".yaml")] + ".old.yaml")
    if not old_path.exists():
        return {}
    docs = [d for d in yaml.safe_load_all(old_path.read_text()) if isinstance(d, dict)]
    return {(d.get("kind", ""), (d.get("metadata") or {}).get("name", "")): d for d in docs}


def main() -> int:
    examples = sorted(p for p in HERE.glob("*.yaml") if not p.name.endswith(".old.yaml"))
    try:
        hook = Webhook()
    except DemoError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 1
    surprises: list[str] = []
    try:
        for path in examples:
            filename = f"examples/{path.name}"
            print(f"\n$ kubectl apply -f {filename}")
            live = live_objects(path)
            expect_denial = path.name[:1] == "1" and "-bad-" in path.name
            outcomes = []
            for doc in yaml.safe_load_all(path.read_text()):
                if not isinstance(doc, dict):
                    continue
                key = (doc.get("kind", ""), (doc.get("metadata") or {}).get("name", ""))
                outcomes.append(apply_document(hook, filename, doc, live.get(key)))
            if expect_denial == all(outcomes):
                surprises.append(f"{filename}: expected {'a denial' if expect_denial else 'no denial'}")
    except DemoError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 1
    finally:
        hook.stop()
    print()
    if surprises:
        print("demo: unexpected answers:\n  " + "\n  ".join(surprises), file=sys.stderr)
        return 1
    print(f"# {len(examples)} examples answered as expected; cos-webhook stopped")
    return reconcile_on_cluster()


def reconcile_on_cluster() -> int:
    """The second half of the main job: with KUBECONFIG naming a cluster, create the good examples there and
    run the reconciler on them until each has settled; without one, say what it would take."""
    kubeconfig = os.environ.get("KUBECONFIG")
    if not kubeconfig:
        print("# Reconciler: skipped. Set KUBECONFIG to a cluster you may create objects in (kind or minikube\n"
              "# will do) and run `make demo` again to roll the good examples out with cos-reconciler.")
        return 0
    # Imported here (the webhook half needs no cluster client), from this checkout when not installed.
    if str(HERE.parent) not in sys.path:
        sys.path.insert(0, str(HERE.parent))
    from reconciler.demo import cluster_problem, run_on_cluster

    problem = cluster_problem(kubeconfig)
    if problem:
        print(f"demo: cannot run the reconciler: {problem}",
              file=sys.stderr)
        return 1
    print(f"\n# Reconciler: rolling out the good examples on the cluster in KUBECONFIG={kubeconfig}")
    return run_on_cluster(kubeconfig, sorted(HERE.glob("0*.yaml")))


if __name__ == "__main__":
    sys.exit(main())
