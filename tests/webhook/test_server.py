"""The webhook as the API server meets it: HTTPS to a real gunicorn process, verified with the test's CA."""

from __future__ import annotations

import base64
import copy
import json
import os
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from common.contract.admission import Config
from tests.webhook.conftest import BODY_LIMIT
from tests.webhook.support import CA, ROOT, Server, admission_review, valid_cos
from tests.webhook.test_review import MALFORMED
from webhook.app import create_app

EXAMPLES = ROOT / "examples"


def example_documents() -> list[tuple[str, int, dict[str, Any], dict[str, Any] | None]]:
    """(file, index, document, old document) for every example a user would apply."""
    out = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        if path.name.endswith(".old.yaml"):
            continue
        old_path = path.with_name(path.name[:-5] + ".old.yaml")
        olds = {}
        if old_path.exists():
            olds = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(old_path.read_text())}
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            out.append((f"examples/{path.name}", index, doc, olds.get((doc["kind"], doc["metadata"]["name"]))))
    return out


DOCS = example_documents()


def route_of(doc: dict[str, Any]) -> str:
    return "clusterobjectsets" if doc["kind"] == "ClusterObjectSet" else "secrets"


def review_for(doc: dict[str, Any], old: dict[str, Any] | None, uid: str = "uid-1",
               dry_run: bool = False) -> dict[str, Any]:
    return admission_review(doc, operation="UPDATE" if old else "CREATE", old=old, uid=uid, dry_run=dry_run)


# ---- TLS, health, basic routes ----

def test_tls_is_served_with_the_certificate_the_test_issued(server: Server, tmp_path: Path) -> None:
    status, _, body = server.request("GET", "/healthz")
    assert (status, body) == (200, b"ok\n")
    other = CA(tmp_path)
    import http.client
    conn = http.client.HTTPSConnection("localhost", server.port, context=other.context(), timeout=10)
    with pytest.raises(ssl.SSLCertVerificationError):
        conn.request("GET", "/healthz")
    conn.close()


def test_plain_http_is_not_served(server: Server) -> None:
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        status = conn.getresponse().status
    except (ConnectionError, http.client.HTTPException):
        status = None
    finally:
        conn.close()
    assert status != 200


def test_readyz_reports_ready_once_the_rules_compiled(server: Server) -> None:
    assert server.request("GET", "/readyz")[::2] == (200, b"ok\n")


# ---- same answer everywhere ----

@pytest.mark.parametrize("file,index,doc,old", DOCS, ids=[f"{f}:{i}" for f, i, _, _ in DOCS])
def test_https_and_flask_test_client_give_identical_answers(server: Server, file: str, index: int,
                                                            doc: dict[str, Any], old: dict[str, Any] | None) -> None:
    client = create_app(Config(), max_body_bytes=BODY_LIMIT).test_client()
    for stage in ("mutate", "validate"):
        path = f"/{stage}/{route_of(doc)}"
        raw = json.dumps(review_for(doc, old)).encode()
        status, headers, body = server.request("POST", path, raw)
        local = client.post(path, data=raw, content_type="application/json")
        assert status == local.status_code == 200
        assert headers["content-type"] == "application/json"
        assert json.loads(body) == local.get_json()


def webhook_verdict(post: Any, doc: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """What the API server ends up with: mutate, apply the patch, validate the result."""
    mutated = post(f"/mutate/{route_of(doc)}", review_for(doc, old))["response"]
    assert mutated["allowed"] is True
    patch = json.loads(base64.b64decode(mutated["patch"])) if "patch" in mutated else []
    patched = jsonpatch.apply_patch(copy.deepcopy(doc), patch)
    checked = post(f"/validate/{route_of(doc)}", review_for(patched, old))["response"]
    warnings = list(mutated.get("warnings", []))
    warnings += [w for w in checked.get("warnings", []) if w not in warnings]
    status = checked.get("status") or {}
    return {"allowed": checked["allowed"], "code": status.get("code"), "message": status.get("message", ""),
            "causes": (status.get("details") or {}).get("causes", []), "warnings": warnings, "patch": patch}


def test_https_gives_the_same_verdicts_as_cosctl_validate(server: Server) -> None:
    files = sorted({f for f, _, _, old in DOCS if old is None})
    out = subprocess.run([sys.executable, "-m", "common.cosctl", "validate", "--output", "json", *files],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr  # some examples are denied
    offline = {(v["file"], v["index"]): v for v in map(json.loads, out.stdout.splitlines())}
    updates = [f for f, _, _, old in DOCS if old is not None]
    for update in sorted(set(updates)):
        old_file = update[:-5] + ".old.yaml"
        out = subprocess.run([sys.executable, "-m", "common.cosctl", "validate", "--output", "json", "--old", old_file,
                              update], cwd=ROOT, capture_output=True, text=True, timeout=120)
        offline.update({(v["file"], v["index"]): v for v in map(json.loads, out.stdout.splitlines())})
    assert len(offline) == len(DOCS)
    for file, index, doc, old in DOCS:
        expected = offline[(file, index)]
        got = webhook_verdict(server.review, doc, old)
        assert got == {k: expected[k] for k in got}, f"{file}:{index}"


def test_dry_run_is_judged_exactly_like_a_real_request(server: Server) -> None:
    for _, _, doc, old in DOCS:
        for stage in ("mutate", "validate"):
            path = f"/{stage}/{route_of(doc)}"
            real = server.review(path, review_for(doc, old, dry_run=False))
            dry = server.review(path, review_for(doc, old, dry_run=True))
            assert dry == real


# ---- malformed input ----

@pytest.mark.parametrize("case,raw,reason", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_reviews_get_a_plain_400_over_https(server: Server, case: str, raw: bytes, reason: str) -> None:
    status, headers, body = server.request("POST", "/validate/clusterobjectsets", raw)
    assert (status, body) == (400, reason.encode() + b"\n")
    assert headers["content-type"].startswith("text/plain")


def wrong_types() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for where, value in [("spec", "x"), ("spec", []), ("spec", None), ("metadata", "x"), ("spec.phases", "x"),
                         ("spec.phases", [1]), ("spec.revision", "1"), ("spec.revision", 1.5),
                         ("spec.lifecycleState", 1), ("spec.phases.0.objects", {}),
                         ("spec.phases.0.objects.0.object", "x"), ("spec.phases.0.objects.0.object.metadata", 1),
                         ("spec.progressionProbes", "x"), ("spec.progressionProbes.0.assertions", [None])]:
        cos = valid_cos()
        *parents, last = where.split(".")
        node: Any = cos
        for step in parents:
            node = node[int(step)] if isinstance(node, list) else node[step]
        node[int(last) if isinstance(node, list) else last] = value
        cases.append((f"{where}={json.dumps(value)}", cos))
    return cases


@pytest.mark.parametrize("case,cos", wrong_types(), ids=[c for c, _ in wrong_types()])
def test_wrong_types_inside_the_object_are_denied_as_invalid(server: Server, case: str, cos: dict) -> None:
    for stage in ("mutate", "validate"):
        answer = server.review(f"/{stage}/clusterobjectsets", admission_review(cos))["response"]
        if stage == "validate" or not answer["allowed"]:
            assert answer["allowed"] is False, case
            assert answer["status"]["code"] == 422 and answer["status"]["reason"] == "Invalid", answer["status"]
            assert answer["status"]["details"]["causes"]


def test_update_without_old_object_is_refused_not_crashed(server: Server) -> None:
    answer = server.review("/validate/clusterobjectsets", admission_review(valid_cos(), operation="UPDATE"))
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["code"] == 400
    assert answer["response"]["status"]["message"] == "UPDATE request without request.oldObject"


def test_a_body_over_the_limit_is_refused_without_reading_it(server: Server) -> None:
    conn = server.connection()
    conn.putrequest("POST", "/validate/clusterobjectsets")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(BODY_LIMIT + 1))
    conn.endheaders()
    conn.send(b"{" * 1000)  # the rest never comes: the answer must not wait for it
    resp = conn.getresponse()
    assert (resp.status, resp.read()) == (400, f"request body exceeds {BODY_LIMIT} bytes\n".encode())
    conn.close()


def test_a_chunked_body_over_the_limit_is_refused(server: Server) -> None:
    doc = admission_review(valid_cos())
    doc["request"]["object"]["metadata"]["annotations"] = {"pad": "x" * BODY_LIMIT}
    raw = json.dumps(doc).encode()
    conn = server.connection()
    chunks = [raw[i:i + 65536] for i in range(0, len(raw), 65536)]
    conn.request("POST", "/validate/clusterobjectsets", body=iter(chunks),
                 headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
                 encode_chunked=True)
    resp = conn.getresponse()
    assert (resp.status, resp.read()) == (400, f"request body exceeds {BODY_LIMIT} bytes\n".encode())
    conn.close()


def test_a_body_cut_short_does_not_hang_the_server(server: Server) -> None:
    conn = server.connection(timeout=10)
    conn.putrequest("POST", "/validate/clusterobjectsets")
    conn.putheader("Content-Length", "5000")
    conn.endheaders()
    conn.send(b'{"apiVersion":')
    conn.close()  # the client goes away mid-body
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        cut = [r for r in server.log_records() if r.get("reason") == "request body ended before Content-Length "
                                                                     "bytes arrived"]
        if cut:
            break
        time.sleep(0.05)
    assert cut and cut[-1]["status"] == 400
    assert server.request("GET", "/healthz")[0] == 200


def test_a_body_that_stops_arriving_gets_a_400_instead_of_holding_a_worker(server: Server) -> None:
    conn = server.connection(timeout=20)
    conn.putrequest("POST", "/validate/clusterobjectsets")
    conn.putheader("Content-Length", "5000")
    conn.endheaders()
    conn.send(b'{"apiVersion":')  # ...and nothing more, connection kept open
    started = time.monotonic()
    resp = conn.getresponse()
    assert (resp.status, resp.read()) == (400, b"request body did not arrive within 1.5 s\n")
    assert 1.4 < time.monotonic() - started < 10
    conn.close()


# ---- logs, metrics, secrets ----

def admission_lines(server: Server, uid: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 5
    while True:
        lines = [r for r in server.log_records() if r.get("event") == "admission" and r.get("uid") == uid]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def test_one_structured_log_line_per_request_without_object_contents(server: Server) -> None:
    cos = valid_cos("logged-1")
    cos["spec"]["lifecycleState"] = "Paused"
    server.review("/validate/clusterobjectsets", admission_review(cos, uid="log-uid-1"))
    [line] = admission_lines(server, "log-uid-1")
    assert {k: line[k] for k in ("level", "route", "kind", "operation", "name", "dry_run", "allowed", "code")} == {
        "level": "info", "route": "/validate/clusterobjectsets", "kind": "ClusterObjectSet",
        "operation": "CREATE", "name": "logged-1", "dry_run": False, "allowed": False, "code": 422}
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] > 0
    assert "Paused" not in json.dumps(line) and "hello" not in json.dumps(line)


def scrape(server: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    _, _, body = server.request("GET", "/metrics")
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def requests_total(metrics: dict, result: str) -> float:
    key = ("cos_webhook_admission_requests_total",
           (("kind", "ClusterObjectSet"), ("operation", "CREATE"), ("result", result), ("route", "validate")))
    return metrics.get(key, 0.0)


def test_metrics_add_up_across_workers_and_survive_a_worker_restart(server: Server) -> None:
    before = requests_total(scrape(server), "allowed")
    pids: set[int] = set()
    sent = 0
    while len(pids) < 2 and sent < 300:
        uid = f"metrics-{sent}"
        assert server.review("/validate/clusterobjectsets", admission_review(valid_cos(), uid=uid))[
            "response"]["allowed"]
        sent += 1
        pids.update(line["pid"] for line in admission_lines(server, uid))
    assert len(pids) == 2, f"both workers should have served requests ({sent} sent)"
    for _ in range(6):  # each scrape may land on either worker: every one sees the total of both
        assert requests_total(scrape(server), "allowed") == before + sent
    os.kill(pids.pop(), signal.SIGTERM)  # gunicorn replaces the worker; its counts must not be lost
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if requests_total(scrape(server), "allowed") == before + sent:
                break
        except OSError:
            pass
        time.sleep(0.2)
    for _ in range(4):
        assert requests_total(scrape(server), "allowed") == before + sent
    hist = scrape(server)
    assert hist[("cos_webhook_admission_duration_seconds_count", (("route", "validate"),))] >= sent


MARKER = "s3cr3t-MARKER-7f3a9c"


def secret_with_marker(**changes: Any) -> dict[str, Any]:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
                "data": {"password": MARKER}}
    raw = json.dumps(manifest).encode()
    secret: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Secret", "type": "olm.operatorframework.io/object-data",
        "metadata": {"name": "objects-1", "namespace": "olmv1-system",
                     "labels": {"olm.operatorframework.io/revision-name": "podinfo-1"}},
        "immutable": True,
        "data": {"deployment": base64.b64encode(raw).decode(),
                 "not-a-manifest": base64.b64encode(MARKER.encode()).decode(),
                 "not-json-object": base64.b64encode(json.dumps([MARKER]).encode()).decode(),
                 "gzip-garbage": base64.b64encode(b"\x1f\x8b" + MARKER.encode()).decode()},
        "stringData": {"plain": MARKER},
    }
    secret.update(changes)
    return secret


def test_secret_data_never_appears_in_responses_or_logs(server: Server) -> None:
    encoded = [base64.b64encode(MARKER.encode()).decode(), MARKER]
    cases = [
        admission_review(secret_with_marker(), uid="secret-1"),
        admission_review(secret_with_marker(immutable=False), uid="secret-2"),
        admission_review(secret_with_marker(metadata={"name": "objects-1", "namespace": "olmv1-system"}),
                         uid="secret-3"),
        admission_review(secret_with_marker(), operation="UPDATE", old=secret_with_marker(metadata={
            "name": "objects-1", "namespace": "olmv1-system", "labels": {"olm.operatorframework.io/revision-name":
                                                                        "other"}}), uid="secret-4"),
    ]
    answers = []
    for review in cases:
        for stage in ("mutate", "validate"):
            status, _, body = server.request("POST", f"/{stage}/secrets", json.dumps(review).encode())
            assert status == 200
            answers.append(body.decode())
    denied = [json.loads(a)["response"] for a in answers if not json.loads(a)["response"]["allowed"]]
    assert denied, "the broken Secrets must be denied"
    assert any("not-a-manifest" in d["status"]["message"] for d in denied)  # names the key...
    for text in [*answers, server.logs()]:
        for needle in encoded:
            assert needle not in text  # ...never the content


def test_every_log_line_of_server_and_gunicorn_is_one_json_object(server: Server) -> None:
    server.request("POST", "/validate/clusterobjectsets", b"garbage")
    lines = server.stderr.read_text().splitlines()
    assert lines and server.stdout.read_text() == ""
    records = [json.loads(line) for line in lines]  # fails on any line that is not JSON
    admission_pids = {r["pid"] for r in records if r.get("event") == "admission"}
    assert {f"Booting worker with pid: {pid}" for pid in admission_pids} <= {
        r["msg"] for r in records if r["logger"] == "gunicorn.error"}
