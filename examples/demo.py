"""``make demo``: what a ``kubectl apply`` user sees for each manifest in examples/, from the real webhook.

Starts ``cos-webhook --self-signed`` on a free loopback port, then for every document of every example
plays the API server's part: sends the object to the mutating route, applies the returned JSONPatch, sends
the result to the validating route, all as AdmissionReview v1 over HTTPS verified with the generated CA,
and prints what kubectl would print (warnings, then ``... created`` or the ``Error from server`` line).
``NAME.old.yaml`` next to ``NAME.yaml`` holds the live objects: documents matching one of them (same kind
and name) are sent as UPDATEs with it as ``oldObject``. Files named ``1*-bad-*`` are expected to be denied;
the demo exits 1 if any example is answered otherwise, so it doubles as a smoke test.

What it prints is what ``kubectl apply`` prints on a cluster with this project's CRD and webhooks, byte for
byte: the CRD's own rules are judged between the two webhooks, as the API server does (and with its
staging: after a structural error, nothing else is reported), and a denial is printed the way kubectl
rebuilds it from the Status's ``details.causes`` (``common.contract.kubectl``).
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
if str(ROOT) not in sys.path:  # `python examples/demo.py` from a checkout that is not installed
    sys.path.insert(0, str(ROOT))

from common.contract import kubectl, validation  # noqa: E402
from common.contract.admission import denied  # noqa: E402

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


def apply_document(hook: Webhook, filename: str, obj: dict[str, Any], old: dict[str, Any] | None,
                   out: list[str]) -> dict[str, Any] | None:
    """Play one document through the API server's admission stages, appending to ``out`` the lines
    ``kubectl apply`` prints. Returns the object as admitted (the mutating webhook's patch applied), or None
    when it is denied.

    The stages, as a cluster runs them: the mutating webhook (this process's cos-webhook); for a COS, the
    CRD's schema and CEL rules (``validation.crd_errors``, the same rule table the CRD in deploy/crd/ is
    generated from: on a cluster the API server answers these itself, stops at the first failing stage and
    never calls the validating webhook); then the validating webhook."""
    kind = obj.get("kind", "")
    name = (obj.get("metadata") or {}).get("name", "")
    verb = "configured" if old else "created"
    if kind == "ClusterObjectSet":
        route, names, shown = "clusterobjectsets", WEBHOOK_NAMES, f"clusterobjectset.olm.operatorframework.io/{name}"
    elif kind == "Secret" and obj.get("type") == OBJECT_DATA:
        route, names, shown = "secrets", SECRET_WEBHOOK_NAMES, f"secret/{name}"
    else:
        out.append(f"{kind.lower()}/{name} {verb} (not sent to the webhook)")
        return obj
    warnings: list[str] = []
    response = hook.review(f"/mutate/{route}", admission_request(obj, old))
    stage = "mutate"
    if response.get("allowed"):
        warnings += response.get("warnings") or []
        if response.get("patch"):
            ops = json.loads(base64.b64decode(response["patch"]))
            obj = jsonpatch.apply_patch(copy.deepcopy(obj), ops)
        errors = (validation.crd_errors(validation.prune_nulls(obj), validation.prune_nulls(old) if old else None)
                  if kind == "ClusterObjectSet" else [])
        if errors:
            response, stage = {"allowed": False, "status": denied(kind, name, errors).status}, "crd"
        else:
            response = hook.review(f"/validate/{route}", admission_request(obj, old))
            stage = "validate"
            warnings += [w for w in response.get("warnings") or [] if w not in warnings]
    out.extend(f"Warning: {warning}" for warning in warnings)
    if response.get("allowed"):
        out.append(f"{shown} {verb}")
        return obj
    status = dict(response.get("status") or {})
    if stage != "crd":  # the API server quotes a webhook's message after naming it
        status["message"] = (f'admission webhook "{names[stage]}" denied the request: '
                             f'{status.get("message") or "without explanation"}')
        status.setdefault("reason", "Forbidden")
    out.extend(kubectl.error_text(status, verb="patching" if old else "creating", source=filename).split("\n"))
    return None


def apply_file(hook: Webhook, path: Path, filename: str) -> tuple[list[str], list[dict[str, Any]], bool]:
    """``kubectl apply -f filename`` played through ``hook``: kubectl's lines, the admitted objects, and
    whether every document was admitted."""
    live = live_objects(path)
    lines: list[str] = []
    admitted: list[dict[str, Any]] = []
    ok = True
    for doc in yaml.safe_load_all(path.read_text()):
        if not isinstance(doc, dict):
            continue
        key = (doc.get("kind", ""), (doc.get("metadata") or {}).get("name", ""))
        result = apply_document(hook, filename, doc, live.get(key), lines)
        if result is None:
            ok = False
        else:
            admitted.append(result)
    return lines, admitted, ok


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
    admitted: list[dict[str, Any]] = []
    try:
        for path in examples:
            filename = f"examples/{path.name}"
            print(f"\n$ kubectl apply -f {filename}")
            lines, objects, ok = apply_file(hook, path, filename)
            print("\n".join(lines))
            expect_denial = path.name[:1] == "1" and "-bad-" in path.name
            if expect_denial == ok:
                surprises.append(f"{filename}: expected {'a denial' if expect_denial else 'no denial'}")
            if path.name[:1] == "0":
                admitted += objects
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
    return reconcile_on_cluster(admitted)


def reconcile_on_cluster(admitted: list[dict[str, Any]]) -> int:
    """The second half of the main job: with KUBECONFIG naming a cluster, create the good examples there as
    the webhook admitted them (defaults applied: the webhook need not be registered on that cluster) and run
    the reconciler on them until each has settled; without one, say what it would take."""
    kubeconfig = os.environ.get("KUBECONFIG")
    if not kubeconfig:
        print("# Reconciler: skipped. Set KUBECONFIG to a cluster you may create objects in (kind or minikube\n"
              "# will do) and run `make demo` again to roll the good examples out with cos-reconciler.")
        return 0
    # Imported here: the webhook half needs no cluster client.
    from reconciler.demo import cluster_problem, run_on_cluster

    problem = cluster_problem(kubeconfig)
    if problem:
        print(f"demo: cannot run the reconciler: {problem}",
              file=sys.stderr)
        return 1
    print(f"\n# Reconciler: rolling out the good examples on the cluster in KUBECONFIG={kubeconfig}")
    return run_on_cluster(kubeconfig, admitted)


if __name__ == "__main__":
    sys.exit(main())
