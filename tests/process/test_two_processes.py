"""Two real ``cos-reconciler`` processes against the fake API server, with leader election.

Each process gets its own kubeconfig token, so the fake server tells whose requests it received. Lease
timings are shortened by flags (5 s / 3 s / 0.5 s) to keep the suite fast; the defaults (15/10/2 s) are the
same code path.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from common.contract.conditions import settled
from tests.engine.helpers import cm, cos, phase
from tests.support.fake_apiserver import FakeApiServer

ROOT = Path(__file__).resolve().parents[2]
LEASE = 5.0
RENEW = 3.0
RETRY = 0.5
COS_API = "olm.operatorframework.io/v1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(cond: Callable[[], bool], timeout: float = 15.0) -> float:
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)
    return time.monotonic() - start


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return 0


class Reconciler:
    def __init__(self, server: FakeApiServer, tmp: Path, identity: str) -> None:
        self.identity = identity
        kubeconfig = server.write_kubeconfig(str(tmp / f"kc-{identity}"), token=identity)
        self.health = free_port()
        self.metrics = free_port()
        self.log = tmp / f"{identity}.log"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("KUBECONFIG", None)
        with self.log.open("w") as log:  # the child keeps its own descriptor; logs() reads the file back
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "reconciler.cli", "--kubeconfig", kubeconfig, "--leader-elect",
                 "--leader-election-id", identity, "--system-namespace", "sys", "--workers", "2",
                 "--lease-duration", str(LEASE), "--renew-deadline", str(RENEW), "--retry-period", str(RETRY),
                 "--health-bind", f"127.0.0.1:{self.health}", "--metrics-bind", f"127.0.0.1:{self.metrics}",
                 "--log-format", "json"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)

    def ready(self) -> bool:
        return http_status(f"http://127.0.0.1:{self.health}/readyz") == 200

    def scrape(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics}/metrics", timeout=5) as r:
            return r.read().decode()

    def logs(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def procs(server: FakeApiServer, tmp_path: Path) -> Iterator[Callable[[str], Reconciler]]:
    started: list[Reconciler] = []

    def start(identity: str) -> Reconciler:
        r = Reconciler(server, tmp_path, identity)
        started.append(r)
        return r

    yield start
    for r in started:
        r.stop()


def holder(server: FakeApiServer) -> str:
    lease = server.get_object("coordination.k8s.io/v1", "Lease", "cos-reconciler", "sys")
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def writers(server: FakeApiServer, path_part: str, *, succeeded_only: bool = False) -> set[str]:
    """Tokens (= process identities) that sent writes to paths containing ``path_part``."""
    return {r.token for r in list(server.requests) if r.method != "GET" and path_part in r.path
            and (not succeeded_only or r.status < 400)}


def is_settled(server: FakeApiServer, name: str) -> bool:
    obj = server.get_object(COS_API, "ClusterObjectSet", name)
    return obj is not None and settled(obj)


def test_exactly_one_reconciles_sigkill_hands_over_sigterm_releases(server: FakeApiServer, procs) -> None:
    a, b = procs("a"), procs("b")
    wait_for(lambda: a.ready() and b.ready())  # the standby is ready too
    wait_for(lambda: holder(server) in ("a", "b"))
    leader, standby = (a, b) if holder(server) == "a" else (b, a)

    server.put_object(cos("c1", 1, phase("one", cm("x")), phase("two", cm("y"))))
    wait_for(lambda: is_settled(server, "c1"))
    time.sleep(3 * RETRY)
    assert writers(server, "/clusterobjectsets") == {leader.identity}
    assert writers(server, "/configmaps") == {leader.identity}
    # the standby may have lost a race to create the Lease, but never wrote it successfully
    assert writers(server, "/leases", succeeded_only=True) == {leader.identity}

    lm, sm = leader.scrape(), standby.scrape()
    assert "cos_leader 1.0" in lm and "cos_leader 0.0" in sm
    assert 'cos_reconciles_total{result="success"}' in lm
    assert 'cos_reconciles_total{result=' not in sm
    assert 'cos_api_requests_total{code="201",verb="create"}' in lm

    # SIGKILL: no release; the standby takes over once the lease has expired on its clock.
    killed_at = time.monotonic()
    leader.proc.send_signal(signal.SIGKILL)
    leader.proc.wait(5)
    wait_for(lambda: holder(server) == standby.identity, timeout=LEASE + 10)
    took = time.monotonic() - killed_at
    assert LEASE - RETRY <= took <= LEASE + 4.0, took
    server.put_object(cos("c2", 1, phase("one", cm("z"))))
    wait_for(lambda: is_settled(server, "c2"))
    assert writers(server, "/clusterobjectsets/c2") == {standby.identity}

    # SIGTERM: the leader releases at once; a new standby acquires within a retry period, not a lease.
    c = procs("c")
    wait_for(c.ready)
    time.sleep(2 * RETRY)
    assert holder(server) == standby.identity
    termed_at = time.monotonic()
    standby.proc.send_signal(signal.SIGTERM)
    assert standby.proc.wait(10) == 0
    exited = time.monotonic() - termed_at
    wait_for(lambda: holder(server) == "c", timeout=LEASE + 10)
    took = time.monotonic() - termed_at
    # without the release the standby would wait for the lease to expire: at least LEASE - RETRY
    assert exited < 4.0 and took < LEASE - 1.0, (exited, took)
    assert any("released the lease" in rec["msg"] for rec in standby.logs())
    server.put_object(cos("c3", 1, phase("one", cm("w"))))
    wait_for(lambda: is_settled(server, "c3"))
    assert writers(server, "/clusterobjectsets/c3") == {"c"}
