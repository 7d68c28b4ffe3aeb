"""End-to-end admission on a real API server: ``deploy/``'s webhook configurations, matchConditions included,
registered by URL to a ``cos-webhook`` running here (opt-in: ``pytest -m e2e``).

Runs only when ``COS_E2E_KUBECONFIG`` names a reachable cluster whose API server can reach this machine's
loopback (a local control plane, kind with host networking, ...): the webhook listens on 127.0.0.1, on
``COS_E2E_WEBHOOK_PORT`` (default: a free port). The configurations are rendered from ``deploy/`` and only
their ``clientConfig`` is rewritten, so this proves the shipped rules, matchConditions, failurePolicy and
timeouts. It installs the CRD if it is missing, creates (and deletes again) the examples' objects under
their own names, and registers the webhook configurations named ``cos-webhook`` for the module's duration:
use a disposable cluster with nothing of this project installed.

What it checks, with ``kubectl`` itself:
- every ``examples/`` file: ``kubectl apply`` prints exactly what ``make demo`` prints (``examples/demo.py``);
- every admission rule of ``shared/spec/api-and-admission.md``: the cluster's answer (warnings, kubectl's
  error text, the defaults written) is ``common.contract.admission.on_cluster``'s prediction;
- the matchConditions: which requests reach the webhook (its own log), e.g. none for a metadata-only UPDATE.
"""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import importlib.util
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.contract import kubectl as kubectl_text
from common.contract import samples
from common.contract.admission import Request, on_cluster
from tests.webhook.registration import by_url, kubectl, register, shipped_configurations, unregister
from tests.webhook.support import CA, Server

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "deploy" / "crd" / "olm.operatorframework.io_clusterobjectsets.yaml"
EXAMPLES = ROOT / "examples"
RUN = uuid.uuid4().hex[:6]
SYSTEM_NAMESPACE = "olmv1-system"
Obj = dict[str, Any]


@dataclass
class Env:
    kubeconfig: str
    server: Server

    def kubectl(self, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
        done = kubectl(self.kubeconfig, *args, stdin=stdin, check=False)
        return done.returncode, done.stdout, done.stderr

    def calls(self) -> list[tuple[str, str, str]]:
        """(route, operation, name) of every review the webhook has answered so far."""
        return [(r["route"], r["operation"], r["name"]) for r in self.server.log_records()
                if r.get("event") == "admission"]


def _kubeconfig_or_skip() -> str:
    path = os.environ.get("COS_E2E_KUBECONFIG")
    if not path:
        pytest.skip("set COS_E2E_KUBECONFIG to the kubeconfig of a disposable cluster to run the e2e suite")
    if not os.path.isfile(path):
        pytest.skip(f"COS_E2E_KUBECONFIG={path}: no such file")
    done = kubectl(path, "get", "--raw", "/readyz", check=False, timeout=15)
    if done.returncode != 0:
        pytest.skip(f"COS_E2E_KUBECONFIG={path}: cluster not reachable ({done.stderr.strip()})")
    return path


def wait_for(cond: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.5)
    return value


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    kubeconfig = _kubeconfig_or_skip()
    kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", str(CRD_FILE))
    kubectl(kubeconfig, "wait", "--for=condition=Established", "crd/clusterobjectsets.olm.operatorframework.io")
    if kubectl(kubeconfig, "get", "namespace", SYSTEM_NAMESPACE, check=False).returncode != 0:
        kubectl(kubeconfig, "create", "namespace", SYSTEM_NAMESPACE)
    ca = CA(tmp_path_factory.mktemp("ca"))
    server = Server(ca, tmp_path_factory.mktemp("webhook"), args=["--workers", "2", "--log-level", "info"],
                    port=int(os.environ.get("COS_E2E_WEBHOOK_PORT", "0"))).start()
    configs = by_url(shipped_configurations(), f"https://127.0.0.1:{server.port}", ca.ca_file.read_bytes())
    e = Env(kubeconfig, server)
    try:
        register(kubeconfig, configs)
        probe = samples.cos(f"e2e-probe-{RUN}", [])
        del probe["spec"]["lifecycleState"]
        # the API server picks configurations up asynchronously: wait until the mutating webhook answers
        wait_for(lambda: "defaulted" in e.kubectl("create", "--dry-run=server", "-f", "-",
                                                  stdin=json.dumps(probe))[2], "the webhooks to be called")
        yield e
    finally:
        unregister(kubeconfig, configs)
        server.stop()


# --------------------------------------------------------------------------------------------------------
# Every example through kubectl apply: exactly what `make demo` prints
# --------------------------------------------------------------------------------------------------------

def _demo() -> Any:
    spec = importlib.util.spec_from_file_location("cos_demo", EXAMPLES / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Hook:
    """The demo's view of a webhook (``review(path, request) -> response``) over the test's server."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def review(self, path: str, request: Obj) -> Obj:
        answer = self.server.review(path, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                           "request": request})
        return dict(answer["response"])


def _example_objects() -> list[tuple[str, str, str]]:
    out = []
    for path in EXAMPLES.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict):
                meta = doc.get("metadata") or {}
                out.append((doc["kind"], meta.get("namespace", ""), meta["name"]))
    return sorted(set(out))


def _delete_examples(e: Env) -> None:
    for kind, namespace, name in _example_objects():
        args = ["delete", kind.lower() if kind != "ClusterObjectSet" else "clusterobjectsets.olm.operatorframework.io",
                name, "--ignore-not-found", "--wait=true"]
        e.kubectl(*args, *(["-n", namespace] if namespace else []))


def test_kubectl_apply_of_every_example_prints_what_make_demo_prints(env: Env) -> None:
    demo = _demo()
    hook = _Hook(env.server)
    examples = sorted(p for p in EXAMPLES.glob("*.yaml") if not p.name.endswith(".old.yaml"))
    assert len(examples) >= 11
    _delete_examples(env)
    try:
        for path in examples:
            filename = f"examples/{path.name}"
            old = path.with_name(path.name[:-len(".yaml")] + ".old.yaml")
            if old.exists():  # the live object the example updates
                done = kubectl(env.kubeconfig, "apply", "-f", str(old.relative_to(ROOT)), check=False)
                assert done.returncode == 0, done.stderr
            expected, _, ok = demo.apply_file(hook, path, filename)
            live = demo.live_objects(path)
            cel = any(cel_denial(Request(d["kind"], "UPDATE" if (d["kind"], d["metadata"]["name"]) in live
                                         else "CREATE", d, live.get((d["kind"], d["metadata"]["name"])),
                                         d["metadata"]["name"]))
                      for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
            done = subprocess.run(["kubectl", "--kubeconfig", env.kubeconfig, "apply", "-f", filename], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
            assert same_output(done.stdout.splitlines(), expected, cel_denial=cel), (filename, done.stdout)
            assert done.returncode == (0 if ok else 1), filename
    finally:
        _delete_examples(env)


# --------------------------------------------------------------------------------------------------------
# Every admission rule, as predicted by on_cluster, through kubectl with the shipped matchConditions
# --------------------------------------------------------------------------------------------------------

def cos(name: str, **spec: Any) -> Obj:
    obj = samples.cos(f"{name}-{RUN}", [{"name": "config", "objects": [
        {"object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}}]}])
    obj["spec"].update(spec)
    return obj


def phase(name: str, *objects: Obj) -> Obj:
    return {"name": name, "objects": list(objects)}


def cm(name: str, **meta: Any) -> Obj:
    return {"object": {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": name, "namespace": "default", **meta}}}


def label_probe(label: Obj) -> Obj:
    return {"selector": {"type": "Label", "label": label},
            "assertions": [{"type": "ConditionEqual", "conditionEqual": {"type": "Ready", "status": "True"}}]}


def _without(obj: Obj, *fields: str) -> Obj:
    obj = copy.deepcopy(obj)
    for field in fields:
        del obj["spec"][field]
    return obj


def _secret(name: str, values: dict[str, bytes], **extra: Any) -> Obj:
    secret: Obj = {"apiVersion": "v1", "kind": "Secret", "type": "olm.operatorframework.io/object-data",
                   "metadata": {"name": f"{name}-{RUN}", "namespace": SYSTEM_NAMESPACE,
                                "labels": {"olm.operatorframework.io/revision-name": f"owner-{RUN}"}},
                   "data": {k: base64.b64encode(v).decode() for k, v in values.items()}}
    secret.update(extra)
    return secret


MANIFEST = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}'
CONTENT_KEY = base64.urlsafe_b64encode(hashlib.sha256(MANIFEST).digest()).decode().rstrip("=")

CREATES: dict[str, Obj] = {
    "valid, nothing to default": cos("valid"),
    "defaults lifecycleState and collisionProtection": _without(cos("defaults"), "lifecycleState",
                                                                "collisionProtection"),
    "defaults ref namespaces": cos("refs", phases=[phase("a", {"ref": {"name": "s", "key": "k"}},
                                                         {"ref": {"name": "s", "key": "l", "namespace": ""}})]),
    "no spec": {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
                "metadata": {"name": f"nospec-{RUN}"}},
    "revision 0": cos("rev", revision=0),
    "enum": cos("enum", lifecycleState="Paused", collisionProtection="Always"),
    "too many phases": cos("many", phases=[phase(f"p{i}") for i in range(21)]),
    "phase name too long": cos("long", phases=[phase("a" * 64)]),
    "duplicate phase names": cos("dupphase", phases=[phase("a"), phase("a")]),
    "bad phase names (CEL)": cos("names", phases=[phase("Deploy_Apps"), phase("-crds")]),
    "object and ref, and neither (CEL)": cos("both", phases=[phase("a", {**cm("x"), "ref": {"name": "s", "key": "k"}},
                                                                  {})]),
    "probe selectors and assertions (CEL)": cos("probes", progressionProbes=[{
        "selector": {"type": "Label", "groupKind": {"group": "", "kind": "Pod"}},
        "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "a..b", "value": "1"}},
                       {"type": "ConditionEqual", "fieldsEqual": {"fieldA": "a", "fieldB": "b"}}]}]),
    "label with both matchLabels and matchExpressions (CEL)": cos("lbl", progressionProbes=[label_probe(
        {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "a", "operator": "Exists"}]})]),
    "embedded object without apiVersion and kind": cos("emb", phases=[phase("a", {"object": {"metadata": {}}})]),
    "embedded apiVersion malformed": cos("gv", phases=[phase("a", {"object": {"apiVersion": "a/b/c",
                                                                              "kind": "X"}})]),
    "same object twice (webhook)": cos("dup", phases=[phase("a", cm("x")), phase("b", cm("x"))]),
    "same ref twice (webhook)": cos("dupref", phases=[phase("a", {"ref": {"name": "s", "key": "k"}},
                                                            {"ref": {"name": "s", "key": "k",
                                                                     "namespace": SYSTEM_NAMESPACE}})]),
    "server-populated metadata (webhook)": cos("meta", phases=[phase("a", cm("x", uid="u", finalizers=["f"],
                                                                              generateName="g"))]),
    "label selector operators (webhook)": cos("ops", progressionProbes=[label_probe(
        {"matchExpressions": [{"key": "a", "operator": "Has"}, {"key": "b", "operator": "In"},
                              {"key": "c", "operator": "Exists", "values": ["x"]}]})]),
    "digit-led phase name and inline Secret (warnings)": cos("warn", phases=[phase("1st", {"object": {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}}})]),
    "over 1 MiB (warning)": samples.maximal_cos(f"maximal-{RUN}"),
}


def same_output(got: list[str], expected: list[str], *, cel_denial: bool) -> bool:
    """Equal, line for line. A denial by the CRD's CEL rules is the exception: the API server evaluates the
    rules of sibling fields in Go map order, so their errors come in a different order from one request to
    the next (we list them sorted); there the lines must be the same, in any order."""
    return got == expected or (cel_denial and sorted(got) == sorted(expected))


def cel_denial(req: Request) -> bool:
    answer = on_cluster(req)
    causes = ((answer.decision.status or {}).get("details") or {}).get("causes") or []
    return answer.stage == "crd" and len(causes) > 1


def _expected(req: Request) -> tuple[list[str], Obj | None]:
    """kubectl's stderr lines, and the object as admitted (None when denied)."""
    answer = on_cluster(req)
    lines = [f"Warning: {w}" for w in answer.decision.warnings]
    if not answer.decision.allowed:
        status = dict(answer.decision.status or {})
        if answer.stage != "crd":
            hook = f'{answer.stage[0]}{"secrets" if req.kind == "Secret" else "clusterobjectsets"}'
            status["message"] = (f'admission webhook "{hook}.olm.operatorframework.io" denied the request: '
                                 f'{status["message"]}')
        lines += kubectl_text.error_text(status).splitlines()
        return lines, None
    obj = req.object
    if answer.decision.patch:
        import jsonpatch

        obj = jsonpatch.apply_patch(copy.deepcopy(obj), list(answer.decision.patch))
    return lines, obj


def _check_create(env: Env, obj: Obj) -> None:
    kind = obj["kind"]
    meta = obj["metadata"]
    req = Request("Secret" if kind == "Secret" else kind, "CREATE", obj, None, meta["name"], meta.get("namespace", ""))
    expected_lines, admitted = _expected(req)
    rc, out, err = env.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(obj))
    assert same_output(err.splitlines(), expected_lines, cel_denial=cel_denial(req)), (err, expected_lines)
    assert rc == (0 if admitted is not None else 1)
    if admitted is not None:
        created = json.loads(out)
        for field in ("spec", "immutable"):
            if field in admitted:
                assert created[field] == admitted[field], field


@pytest.mark.parametrize("case", list(CREATES))
def test_create_is_judged_on_the_cluster_as_predicted(env: Env, case: str) -> None:
    _check_create(env, CREATES[case])


def test_the_mutating_webhook_is_called_only_when_a_default_is_missing(env: Env) -> None:
    before = len(env.calls())
    _check_create(env, CREATES["valid, nothing to default"])
    _check_create(env, CREATES["defaults ref namespaces"])
    routes = [c[0] for c in env.calls()[before:]]
    assert routes == ["/validate/clusterobjectsets", "/mutate/clusterobjectsets", "/validate/clusterobjectsets"]


def test_reapplying_an_unchanged_file_with_refs_is_allowed_and_changes_nothing(env: Env) -> None:
    """kubectl's 3-way merge sends the file's phases again, refs without the namespace the mutating webhook set on
    CREATE; phases are immutable, so the webhook defaults it on that UPDATE too and the re-apply is a no-op."""
    obj = cos("reapply", phases=[{"name": "config", "objects": [{"ref": {"name": "s", "key": "k"}}]}])
    text = yaml.safe_dump(obj)
    code, out, err = env.kubectl("apply", "-f", "-", stdin=text)
    assert code == 0, err
    before = json.loads(env.kubectl("get", "clusterobjectsets.olm.operatorframework.io", obj["metadata"]["name"],
                                    "-o", "json")[1])
    assert before["spec"]["phases"][0]["objects"][0]["ref"]["namespace"] == SYSTEM_NAMESPACE
    calls = len(env.calls())
    try:
        code, out, err = env.kubectl("apply", "-f", "-", stdin=text)
        assert (code, err) == (0, ""), err
        assert out == f'clusterobjectset.olm.operatorframework.io/{obj["metadata"]["name"]} configured\n'
        after = json.loads(env.kubectl("get", "clusterobjectsets.olm.operatorframework.io", obj["metadata"]["name"],
                                       "-o", "json")[1])
        assert after["spec"] == before["spec"]
        # defaulted, the phases are unchanged: the generation stays, so the validating webhook is not even called
        assert [c[:2] for c in env.calls()[calls:]] == [("/mutate/clusterobjectsets", "UPDATE")]
    finally:
        env.kubectl("delete", "clusterobjectsets.olm.operatorframework.io", obj["metadata"]["name"],
                    "--ignore-not-found")


SECRETS: dict[str, Obj] = {
    "object-data Secret, immutable defaulted": _secret("good", {CONTENT_KEY: MANIFEST}),
    "gzip value": _secret("gz", {"cm": gzip.compress(MANIFEST, mtime=0)}, immutable=True),
    "mutable, no label, not a manifest, key not its digest": {
        **_secret("bad", {"A" * 43: b'{"just": "data"}'}, immutable=False),
        "metadata": {"name": f"bad-{RUN}", "namespace": SYSTEM_NAMESPACE}},
}


@pytest.mark.parametrize("case", list(SECRETS))
def test_object_data_secrets_are_judged_on_the_cluster_as_predicted(env: Env, case: str) -> None:
    _check_create(env, SECRETS[case])


def test_other_secrets_never_reach_the_webhook(env: Env) -> None:
    before = len(env.calls())
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "immutable": False,
              "metadata": {"name": f"plain-{RUN}", "namespace": SYSTEM_NAMESPACE}, "data": {"a": "eA=="}}
    rc, _, err = env.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(secret))
    assert (rc, err) == (0, "")
    assert env.calls()[before:] == []


# UPDATEs: a real COS, changed in place; each change is predicted from the live object. The validating
# webhook is called (once) only where phases or probes change and the CRD found nothing.
CALLED = {"phases reordered (webhook)", "phases removed (webhook)", "bad probe on update (webhook)", "probes change"}
UPDATES: dict[str, Callable[[Obj], None]] = {
    "archive": lambda o: o["spec"].update(lifecycleState="Archived"),
    "probes change": lambda o: o["spec"].update(progressionProbes=[label_probe({"matchLabels": {"a": "b"}})]),
    "revision and collisionProtection (CEL)": lambda o: o["spec"].update(revision=2, collisionProtection="None"),
    "phases changed (CEL)": lambda o: o["spec"]["phases"].append(phase("more")),
    "phases reordered (webhook)": lambda o: o["spec"].update(phases=o["spec"]["phases"][::-1]),
    "phases removed (webhook)": lambda o: o["spec"].pop("phases"),
    "bad probe on update (webhook)": lambda o: o["spec"].update(progressionProbes=[label_probe(
        {"matchExpressions": [{"key": "a", "operator": "Has"}]})]),
}


@pytest.fixture(scope="module")
def live(env: Env) -> Iterator[Obj]:
    obj = cos("live", phases=[phase("a", cm("x")), phase("b", cm("y"))])
    rc, out, err = env.kubectl("create", "-o", "json", "-f", "-", stdin=json.dumps(obj))
    assert rc == 0, err
    yield json.loads(out)
    env.kubectl("delete", "clusterobjectsets.olm.operatorframework.io", obj["metadata"]["name"], "--ignore-not-found")


def _fresh(env: Env, name: str) -> Obj:
    rc, out, err = env.kubectl("get", "clusterobjectsets.olm.operatorframework.io", name, "-o", "json")
    assert rc == 0, err
    return dict(json.loads(out))


@pytest.mark.parametrize("case", list(UPDATES))
def test_update_is_judged_on_the_cluster_as_predicted(env: Env, live: Obj, case: str) -> None:
    old = _fresh(env, live["metadata"]["name"])
    new = copy.deepcopy(old)
    UPDATES[case](new)
    req = Request("ClusterObjectSet", "UPDATE", new, old, old["metadata"]["name"])
    expected_lines, admitted = _expected(req)
    before = len(env.calls())
    rc, _, err = env.kubectl("replace", "--dry-run=server", "-f", "-", stdin=json.dumps(new))
    assert same_output(err.splitlines(), expected_lines, cel_denial=cel_denial(req)), (err, expected_lines)
    assert rc == (0 if admitted is not None else 1)
    calls = env.calls()[before:]
    expected = [("/validate/clusterobjectsets", "UPDATE", old["metadata"]["name"])] if case in CALLED else []
    assert calls == expected


def test_a_metadata_only_update_reaches_neither_webhook_and_the_crd_still_judges(env: Env, live: Obj) -> None:
    name = live["metadata"]["name"]
    before = len(env.calls())
    for args in (["label", "clusterobjectsets.olm.operatorframework.io", name, "e2e=yes"],
                 ["annotate", "clusterobjectsets.olm.operatorframework.io", name, "e2e=yes"],
                 ["patch", "clusterobjectsets.olm.operatorframework.io", name, "--type=merge", "-p",
                  '{"metadata":{"finalizers":["example.com/e2e"]}}'],
                 ["patch", "clusterobjectsets.olm.operatorframework.io", name, "--type=merge", "-p",
                  '{"metadata":{"finalizers":null}}']):
        rc, _, err = env.kubectl(*args)
        assert rc == 0, err
    assert env.calls()[before:] == []
    # the CRD's own rules still run on UPDATEs the webhook does not see
    rc, _, err = env.kubectl("patch", "clusterobjectsets.olm.operatorframework.io", name, "--type=merge", "-p",
                             '{"spec":{"revision":9}}')
    assert (rc, err.strip()) == (1, f'The ClusterObjectSet "{name}" is invalid: spec.revision: Invalid value: 9: '
                                    "revision is immutable")
