"""``cos-webhook certs`` end to end: the real command and the real ``kubernetes`` client against a local HTTP
server playing the API server, and a TLS handshake that checks the result the way the API server would."""

from __future__ import annotations

import base64
import datetime as dt
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509 import DNSName
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from tests.deploy.fake_kube import FakeKube
from tests.deploy.kustomize import render
from webhook import certs
from webhook import cli as webhook_cli

ROOT = Path(__file__).resolve().parents[2]
NS = "olmv1-system"
HOST = f"cos-webhook.{NS}.svc"
SECRET_PATH = f"/api/v1/namespaces/{NS}/secrets/cos-webhook-tls"
VWC_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/cos-webhook"
MWC_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/cos-webhook"
KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[FakeKube]:
    """The API server after `kubectl apply -k deploy/`: the webhook configurations as rendered (no caBundle),
    plus one foreign webhook calling another Service, which must be left alone."""
    objs = render(ROOT / "deploy")
    with FakeKube() as fake:
        for kind in KINDS:
            config = next(o for o in objs if o["kind"] == kind)
            config["webhooks"].append({
                "name": "other.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "other", "namespace": "elsewhere"}, "caBundle": "b3RoZXI="},
                "futureField": {"kept": True}})
            fake.put(kind, config)
        fake.requests.clear()
        yield fake


def run(kube: FakeKube, tmp_path: Path, *extra: str) -> int:
    return webhook_cli.main(["certs", "--kubeconfig", kube.kubeconfig(str(tmp_path / "kubeconfig")),
                             "--namespace", NS, *extra])


def secret_bytes(kube: FakeKube) -> dict[str, bytes]:
    secret = kube.get("Secret", "cos-webhook-tls", NS)
    assert secret is not None
    return {k: base64.b64decode(v) for k, v in secret["data"].items()}


def ca_bundles(kube: FakeKube) -> list[bytes]:
    out = []
    for kind in KINDS:
        config = kube.get(kind, "cos-webhook")
        assert config is not None
        for hook in config["webhooks"]:
            if hook["clientConfig"]["service"]["name"] == "cos-webhook":
                out.append(base64.b64decode(hook["clientConfig"]["caBundle"]))
    return out


def handshake(tmp_path: Path, cert_pem: bytes, key_pem: bytes, ca_pem: bytes, server_name: str) -> str:
    """Serve cert/key on loopback; connect trusting only ca_pem, verifying server_name. Returns the peer CN."""
    (tmp_path / "srv.crt").write_bytes(cert_pem)
    (tmp_path / "srv.key").write_bytes(key_pem)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "srv.crt", tmp_path / "srv.key")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_ctx = ssl.create_default_context(cadata=ca_pem.decode())
    try:
        with (socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
              client_ctx.wrap_socket(raw, server_hostname=server_name) as tls):
            peer: Any = tls.getpeercert()
            tls.sendall(b"x")
            return dict(x[0] for x in peer["subject"])["commonName"]
    finally:
        thread.join(5)
        listener.close()


def verify_at(cert_pem: bytes, bundle_pem: bytes, at: dt.datetime) -> None:
    """Path validation for HOST at a given time (for renewals in the future, where a live TLS handshake,
    bound to the real clock, cannot go)."""
    store = Store(x509.load_pem_x509_certificates(bundle_pem))
    verifier = PolicyBuilder().store(store).time(at).build_server_verifier(DNSName(HOST))
    verifier.verify(x509.load_pem_x509_certificate(cert_pem), [])


def test_first_run_creates_ca_and_serving_cert_that_tls_clients_verify(
        kube: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(kube, tmp_path) == 0
    assert kube.requests == [("GET", SECRET_PATH), ("POST", f"/api/v1/namespaces/{NS}/secrets"),
                             ("GET", VWC_PATH), ("PUT", VWC_PATH), ("GET", MWC_PATH), ("PUT", MWC_PATH)]
    assert kube.unauthorized == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        f"Secret {NS}/cos-webhook-tls: created (no CA yet; no serving certificate yet)",
        "ValidatingWebhookConfiguration cos-webhook: caBundle updated on 2 webhook(s)",
        "MutatingWebhookConfiguration cos-webhook: caBundle updated on 2 webhook(s)",
    ]
    assert out.err == ""

    secret = kube.get("Secret", "cos-webhook-tls", NS)
    assert secret is not None
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "cos-webhook-certs"}
    data = secret_bytes(kube)
    assert set(data) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    bundles = ca_bundles(kube)
    assert bundles == [data["ca.crt"]] * 4

    # The trust the API server has (the caBundle) accepts the served certificate for the Service's DNS name...
    assert handshake(tmp_path, data["tls.crt"], data["tls.key"], bundles[0], HOST) == HOST
    assert handshake(tmp_path, data["tls.crt"], data["tls.key"], bundles[0], f"{HOST}.cluster.local") == HOST
    # ... and for no other name.
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        handshake(tmp_path, data["tls.crt"], data["tls.key"], bundles[0], "cos-webhook.other-ns.svc")
    # A certificate the CA did not sign is refused.
    other = certs.plan(None, certs.Policy("cos-webhook", NS), dt.datetime.now(dt.UTC))
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer certificate"):
        handshake(tmp_path, other.tls_crt, other.tls_key, bundles[0], HOST)

    # The foreign webhook kept its caBundle, and fields the client library does not model survived the PUT.
    for kind in KINDS:
        config = kube.get(kind, "cos-webhook")
        assert config is not None
        hooks = {h["name"]: h for h in config["webhooks"]}
        assert hooks["other.example.com"]["clientConfig"]["caBundle"] == "b3RoZXI="
        assert hooks["other.example.com"]["futureField"] == {"kept": True}
        assert any("matchConditions" in h for h in config["webhooks"])


def test_second_run_changes_nothing(kube: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(kube, tmp_path) == 0
    before = {key: kube.get(*key[:1], key[2], key[1]) for key in list(kube.objects)}
    kube.requests.clear()
    capsys.readouterr()

    assert run(kube, tmp_path) == 0
    assert kube.requests == [("GET", SECRET_PATH), ("GET", VWC_PATH), ("GET", MWC_PATH)]
    assert capsys.readouterr().out.splitlines() == [
        f"Secret {NS}/cos-webhook-tls: up to date",
        "ValidatingWebhookConfiguration cos-webhook: up to date",
        "MutatingWebhookConfiguration cos-webhook: up to date",
    ]
    assert {key: kube.get(*key[:1], key[2], key[1]) for key in list(kube.objects)} == before
    assert run(kube, tmp_path, "--check") == 0


def test_check_reports_work_without_writing(kube: FakeKube, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert run(kube, tmp_path, "--check") == certs.EXIT_CHANGES_NEEDED
    assert kube.writes() == []
    assert capsys.readouterr().out.splitlines()[0] == \
        f"Secret {NS}/cos-webhook-tls: would be created (no CA yet; no serving certificate yet)"


def test_serving_certificate_is_renewed_before_expiry_under_the_same_ca(kube: FakeKube, tmp_path: Path) -> None:
    api = certs.KubeApi(kube.kubeconfig(str(tmp_path / "kubeconfig")))
    policy = certs.Policy("cos-webhook", NS)
    now = dt.datetime.now(dt.UTC)
    certs.ensure(api, policy, "cos-webhook-tls", "cos-webhook", now=now)
    first = secret_bytes(kube)
    kube.requests.clear()

    # 334 days later the serving certificate (365 days) is within the 30-day window: just the Secret changes.
    outcome = certs.ensure(api, policy, "cos-webhook-tls", "cos-webhook", now=now + dt.timedelta(days=336))
    assert kube.writes() == [("PUT", SECRET_PATH)]
    assert outcome.actions[0].startswith(f"Secret {NS}/cos-webhook-tls: updated (serving certificate expires ")
    second = secret_bytes(kube)
    assert (second["ca.crt"], second["ca.key"]) == (first["ca.crt"], first["ca.key"])
    assert second["tls.crt"] != first["tls.crt"] and second["tls.key"] != first["tls.key"]
    leaf = x509.load_pem_x509_certificate(second["tls.crt"])
    assert leaf.not_valid_after_utc > now + dt.timedelta(days=336 + 364)
    verify_at(second["tls.crt"], ca_bundles(kube)[0], now + dt.timedelta(days=336))


def test_ca_rotation_keeps_the_old_ca_trusted_until_it_expires(kube: FakeKube, tmp_path: Path) -> None:
    api = certs.KubeApi(kube.kubeconfig(str(tmp_path / "kubeconfig")))
    policy = certs.Policy("cos-webhook", NS, ca_days=800, cert_days=365, renew_before_days=30)
    now = dt.datetime.now(dt.UTC)
    certs.ensure(api, policy, "cos-webhook-tls", "cos-webhook", now=now)
    certs.ensure(api, policy, "cos-webhook-tls", "cos-webhook", now=now + dt.timedelta(days=340))  # renewal
    old = secret_bytes(kube)

    # 420 days on, the CA (800 days) would not outlive a fresh 365-day certificate: new CA, new certificate.
    later = now + dt.timedelta(days=420)
    outcome = certs.ensure(api, policy, "cos-webhook-tls", "cos-webhook", now=later)
    assert "too soon for a new serving certificate" in outcome.actions[0]
    new = secret_bytes(kube)
    bundle = ca_bundles(kube)[0]
    assert bundle == new["ca.crt"]
    assert [c.subject for c in x509.load_pem_x509_certificates(bundle)] == [
        x509.load_pem_x509_certificates(new["ca.crt"])[0].subject,
        x509.load_pem_x509_certificate(old["ca.crt"]).subject]
    # Pods still serving the old certificate and pods already serving the new one are both trusted.
    verify_at(old["tls.crt"], bundle, later)
    verify_at(new["tls.crt"], bundle, later)
    with pytest.raises(VerificationError):
        verify_at(old["tls.crt"], new["ca.crt"].split(b"-----END CERTIFICATE-----")[0] +
                  b"-----END CERTIFICATE-----\n", later)

    # Once the old CA has expired it leaves the bundle; the current CA and certificate stay.
    kube.requests.clear()
    outcome = certs.ensure(api, policy, "cos-webhook-tls", "cos-webhook", now=now + dt.timedelta(days=801))
    assert "expired CA removed from the bundle" in outcome.actions[0]
    final = secret_bytes(kube)
    assert final["ca.key"] == new["ca.key"]
    assert x509.load_pem_x509_certificates(ca_bundles(kube)[0]) == x509.load_pem_x509_certificates(new["ca.crt"])[:1]
    verify_at(final["tls.crt"], ca_bundles(kube)[0], now + dt.timedelta(days=801))
    assert kube.writes() == [("PUT", SECRET_PATH), ("PUT", VWC_PATH), ("PUT", MWC_PATH)]


def test_conflicts_are_retried_from_a_fresh_read(kube: FakeKube, tmp_path: Path) -> None:
    kube.fail_next.append(("POST", f"/api/v1/namespaces/{NS}/secrets", 409, "AlreadyExists"))
    kube.fail_next.append(("PUT", VWC_PATH, 409, "Conflict"))
    assert run(kube, tmp_path) == 0
    assert kube.requests == [
        ("GET", SECRET_PATH), ("POST", f"/api/v1/namespaces/{NS}/secrets"),
        ("GET", SECRET_PATH), ("POST", f"/api/v1/namespaces/{NS}/secrets"),
        ("GET", VWC_PATH), ("PUT", VWC_PATH), ("GET", VWC_PATH), ("PUT", VWC_PATH),
        ("GET", MWC_PATH), ("PUT", MWC_PATH)]
    assert ca_bundles(kube) == [secret_bytes(kube)["ca.crt"]] * 4


def test_a_secret_it_did_not_create_is_left_alone(kube: FakeKube, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    kube.put("Secret", {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                        "metadata": {"name": "cos-webhook-tls", "namespace": NS,
                                     "annotations": {"cert-manager.io/certificate-name": "x"}},
                        "data": {"tls.crt": "c2VjcmV0LWNlcnQ=", "tls.key": "c2VjcmV0LWtleQ=="}})
    kube.requests.clear()
    assert run(kube, tmp_path) == 1
    assert kube.writes() == []
    err = capsys.readouterr().err
    assert err == (f"cos-webhook certs: error: Secret {NS}/cos-webhook-tls exists but was not created by "
                   "`cos-webhook certs` (no label app.kubernetes.io/managed-by=cos-webhook-certs); it is left "
                   "alone. Delete it, or use --secret to name another Secret\n")
    assert "c2VjcmV0" not in err


def test_missing_webhook_configuration_is_a_clear_error(kube: FakeKube, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    del kube.objects[("MutatingWebhookConfiguration", "", "cos-webhook")]
    assert run(kube, tmp_path) == 1
    assert capsys.readouterr().err == (
        "cos-webhook certs: error: MutatingWebhookConfiguration cos-webhook not found; apply the deploy/ "
        "manifests first (it is created without a caBundle, which this command fills in)\n")


def test_wrong_service_name_is_a_clear_error(kube: FakeKube, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert run(kube, tmp_path, "--service", "cos-hook") == 1
    assert capsys.readouterr().err == (
        "cos-webhook certs: error: ValidatingWebhookConfiguration cos-webhook has no webhook calling Service "
        f"{NS}/cos-hook; check --service and --namespace\n")


def test_api_refusal_is_reported_with_its_status(kube: FakeKube, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    kube.fail_next.append(("GET", SECRET_PATH, 403, "Forbidden"))
    assert run(kube, tmp_path) == 1
    assert capsys.readouterr().err == (
        f"cos-webhook certs: error: reading Secret {NS}/cos-webhook-tls: 403 Forbidden: injected Forbidden\n")


def test_unreachable_api_server_and_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeKube() as kube:
        path = kube.kubeconfig(str(tmp_path / "kubeconfig"))
    assert webhook_cli.main(["certs", "--kubeconfig", path]) == 1
    assert "cannot reach the API server at http://127.0.0.1:" in capsys.readouterr().err
    assert webhook_cli.main(["certs", "--kubeconfig", str(tmp_path / "missing")]) == 1
    assert "cannot load Kubernetes client configuration" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        certs.main(["--renew-before-days", "400"])
    assert exit_info.value.code == 2
    assert "--renew-before-days must be smaller than --cert-validity-days" in capsys.readouterr().err


def test_output_never_contains_key_material(kube: FakeKube, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert run(kube, tmp_path) == 0
    assert run(kube, tmp_path, "--cert-validity-days", "400", "--renew-before-days", "390") == 0  # renews
    out = capsys.readouterr()
    data = secret_bytes(kube)
    for text in (out.out, out.err):
        assert "PRIVATE KEY" not in text and "CERTIFICATE" not in text
        for value in data.values():
            assert base64.b64encode(value).decode()[:40] not in text


def test_install_job_waits_for_webhook_configurations_created_after_it(kube: FakeKube, tmp_path: Path) -> None:
    """`kubectl apply -k` creates the webhook configurations last, possibly after the Job started."""
    saved = {kind: kube.objects.pop((kind, "", "cos-webhook")) for kind in KINDS}
    timers: list[threading.Timer] = []

    def create_later(method: str, path: str) -> None:  # the first lookup misses; they appear a second later
        if (method, path) == ("GET", VWC_PATH) and not timers:
            timers.append(threading.Timer(1.0, lambda: [kube.put(kind, obj) for kind, obj in saved.items()]))
            timers[0].start()

    kube.on_request.append(create_later)
    try:
        assert run(kube, tmp_path, "--wait-for-configurations", "30") == 0
    finally:
        for timer in timers:
            timer.join()
    assert ca_bundles(kube) == [secret_bytes(kube)["ca.crt"]] * 4
    gets = [r for r in kube.requests if r == ("GET", VWC_PATH)]
    assert 2 <= len(gets) <= 10  # polled about once a second until it appeared


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get_readyz(port: int, ca_pem: bytes) -> tuple[int, str]:
    import http.client

    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    conn = http.client.HTTPSConnection(HOST, port, context=ctx, timeout=5)
    conn.sock = ctx.wrap_socket(raw, server_hostname=HOST)  # dial loopback, verify as the API server would
    try:
        conn.request("GET", "/readyz")
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


@pytest.mark.slow
def test_the_real_webhook_server_serves_the_written_certificate(kube: FakeKube, tmp_path: Path) -> None:
    """What the API server does after an install: call cos-webhook.<ns>.svc trusting only the caBundle."""
    import os
    import subprocess
    import sys
    import time

    assert run(kube, tmp_path) == 0
    data = secret_bytes(kube)
    tls_dir = tmp_path / "tls"  # what the pod's Secret volume holds: tls.crt and tls.key only
    tls_dir.mkdir()
    (tls_dir / "tls.crt").write_bytes(data["tls.crt"])
    (tls_dir / "tls.key").write_bytes(data["tls.key"])
    port = _free_port()
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "webhook.cli", "--cert-file", str(tls_dir / "tls.crt"),
                             "--key-file", str(tls_dir / "tls.key"), "--bind", f"127.0.0.1:{port}",
                             "--workers", "1"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status = _get_readyz(port, ca_bundles(kube)[0])
                break
            except (ConnectionRefusedError, ssl.SSLEOFError, ConnectionResetError):
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "webhook did not start"
                time.sleep(0.2)
        assert status == (200, "ok\n")
    finally:
        proc.terminate()
        proc.wait(15)
