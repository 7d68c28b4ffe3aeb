"""Certificate rotation on disk is served from the next connection on, without a restart and without
failing requests already in flight; a broken pair never replaces a working one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from tests.webhook.support import CA, Server, admission_review, valid_cos
from webhook import tls


@pytest.fixture
def server(ca: CA, tmp_path: Path) -> Iterator[Server]:
    srv = Server(ca, tmp_path, args=["--workers", "1", "--threads", "4"]).start()
    yield srv
    srv.stop()


def served_serial(server: Server) -> int:
    conn = server.connection()
    conn.connect()
    serial = int(conn.sock.getpeercert()["serialNumber"], 16)
    conn.close()
    return serial


def reloads(server: Server, result: str) -> float:
    _, _, body = server.request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(f'cos_webhook_tls_reloads_total{{result="{result}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_rotation_is_picked_up_without_restart_or_failed_requests(server: Server, ca: CA) -> None:
    pid = server.proc.pid
    assert served_serial(server) == int(server.serial, 16)

    kept = server.connection()  # a keep-alive connection established before the rotation
    kept.request("GET", "/healthz")
    assert kept.getresponse().read() == b"ok\n"

    body = json.dumps(admission_review(valid_cos())).encode()
    inflight = server.connection()  # a request whose body is still arriving during the rotation
    inflight.putrequest("POST", "/validate/clusterobjectsets")
    inflight.putheader("Content-Type", "application/json")
    inflight.putheader("Content-Length", str(len(body)))
    inflight.endheaders()
    inflight.send(body[:100])

    rotated = ca.issue(server.cert_file, server.key_file)
    assert served_serial(server) == int(rotated, 16)

    inflight.send(body[100:])
    resp = inflight.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["response"]["allowed"] is True
    kept.request("GET", "/healthz")
    assert kept.getresponse().read() == b"ok\n"
    assert int(kept.sock.getpeercert()["serialNumber"], 16) == int(server.serial, 16)
    kept.close()
    inflight.close()
    assert server.proc.pid == pid and server.proc.poll() is None  # no restart
    assert reloads(server, "ok") == 1


def test_a_broken_pair_keeps_the_previous_certificate_until_fixed(server: Server, ca: CA) -> None:
    # A certificate whose key is not the one on disk (a half-finished rotation).
    other = tls.issue_serving(ca.key, ca.cert, ["localhost", "127.0.0.1"])
    tls.write_private(server.cert_file, other.cert_pem)
    assert served_serial(server) == int(server.serial, 16)
    assert reloads(server, "error") == 1
    assert served_serial(server) == int(server.serial, 16)  # the same broken pair is not retried
    assert reloads(server, "error") == 1
    failed = [r for r in server.log_records() if r.get("event") == "tls_reload"]
    assert failed and failed[-1]["ok"] is False and failed[-1]["level"] == "warning"

    fixed = ca.issue(server.cert_file, server.key_file)
    deadline = time.monotonic() + 5
    while served_serial(server) != int(fixed, 16) and time.monotonic() < deadline:
        time.sleep(0.05)  # issue() writes key then certificate: a connection in between sees a mismatch
    assert served_serial(server) == int(fixed, 16)
    assert reloads(server, "ok") == 1


def test_reloading_context_refuses_to_start_without_a_usable_pair(tmp_path: Path, ca: CA) -> None:
    with pytest.raises(tls.CertificateError) as err:
        tls.ReloadingContext(str(tmp_path / "missing.crt"), str(tmp_path / "missing.key"))
    assert str(err.value) == f"cannot read certificate files: No such file or directory: {tmp_path / 'missing.crt'}"
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    ca.issue(cert, key)
    key.write_bytes(tls.issue_serving(ca.key, ca.cert, ["localhost"]).key_pem)
    with pytest.raises(tls.CertificateError) as err:
        tls.ReloadingContext(str(cert), str(key))
    assert str(err.value).startswith(f"cannot load certificate {cert} with key {key}: ")


EXPIRY = "cos_webhook_serving_certificate_expiry_timestamp_seconds"


def not_after(cert_file: Path) -> float:
    return x509.load_pem_x509_certificate(cert_file.read_bytes()).not_valid_after_utc.timestamp()


def expiry_samples(server: Server) -> list[tuple[str, float]]:
    """The gauge's samples on /metrics, (series, value) (one scrape: a new connection, so also a reload)."""
    _, _, body = server.request("GET", "/metrics")
    return [(line.split()[0], float(line.split()[1])) for line in body.decode().splitlines()
            if line.startswith(EXPIRY)]


def test_the_served_certificate_expiry_is_exported_and_follows_rotation(server: Server, ca: CA) -> None:
    assert expiry_samples(server) == [(EXPIRY, not_after(server.cert_file))]
    started = not_after(server.cert_file)

    later = ca.issue(server.cert_file, server.key_file, days=60)  # not a minimum over time: the current one
    assert served_serial(server) == int(later, 16)
    served = not_after(server.cert_file)
    assert served > started
    assert expiry_samples(server) == [(EXPIRY, served)]

    # A pair that does not load leaves the served certificate, and so its expiry, in place.
    tls.write_private(server.cert_file, tls.issue_serving(ca.key, ca.cert, ["localhost"], days=5).cert_pem)
    assert served_serial(server) == int(later, 16)
    assert reloads(server, "error") == 1
    assert expiry_samples(server) == [(EXPIRY, served)]


def test_with_several_workers_the_expiry_is_the_minimum_over_live_workers(ca: CA, tmp_path: Path) -> None:
    srv = Server(ca, tmp_path, args=["--workers", "2"]).start()
    try:
        first = not_after(srv.cert_file)
        # Both workers report the same certificate; the master (which serves nothing) is not among them.
        assert expiry_samples(srv) == [(EXPIRY, first)]
        sooner = ca.issue(srv.cert_file, srv.key_file, days=10)
        # The next connection, on whichever worker, loads the sooner-expiring certificate: it is the minimum.
        assert served_serial(srv) == int(sooner, 16)
        assert not_after(srv.cert_file) < first
        assert expiry_samples(srv) == [(EXPIRY, not_after(srv.cert_file))]
    finally:
        srv.stop()
