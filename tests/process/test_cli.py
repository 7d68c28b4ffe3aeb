"""``cos-reconciler`` flags: bad input is a clear error (exit 2); ``--once`` reconciles until settled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.helpers import cm, cos, phase
from tests.support.fake_apiserver import FakeApiServer

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("KUBECONFIG", None)
    return subprocess.run([sys.executable, "-m", "reconciler.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(("args", "message"), [
    (["--workers", "0"], "--workers must be at least 1, got 0"),
    (["--health-bind", "localhost:http"], "--health-bind: expected host:port, :port or 0, got 'localhost:http'"),
    (["--metrics-bind", ":70000"], "--metrics-bind: port out of range in ':70000'"),
    (["--kubeconfig", "/nonexistent/kc"], "cannot load Kubernetes configuration (in-cluster, then /nonexistent/kc)"),
    (["--kubeconfig", "KC", "--leader-elect", "--lease-duration", "5", "--renew-deadline", "10"],
     "leader election timings must satisfy --lease-duration > --renew-deadline > --retry-period > 0"),
])
def test_bad_flags_exit_2_with_a_clear_message(args: list[str], message: str, kubeconfig: str) -> None:
    args = [kubeconfig if a == "KC" else a for a in args]
    res = run(*args, "--health-bind" if "--health-bind" not in args else "--log-level",
              "0" if "--health-bind" not in args else "info")
    assert res.returncode == 2, res.stderr
    assert message in res.stderr
    assert "Traceback" not in res.stderr


def test_once_reconciles_until_settled_and_exits_0(server: FakeApiServer, kubeconfig: str) -> None:
    server.put_object(cos("c1", 1, phase("a", cm("x")), phase("b", cm("y"))))
    res = run("--kubeconfig", kubeconfig, "--once", "--once-timeout", "30", "--health-bind", "0",
              "--metrics-bind", "0")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "c1: settled (Progressing True/Succeeded: Revision 1 has rolled out.)\n"
    assert server.get_object("v1", "ConfigMap", "y", "ns") is not None
    # every request, watches included, names the process (the generated client's default names nobody)
    from reconciler.cli import user_agent
    assert user_agent().startswith("cos-reconciler/")
    assert {r.user_agent for r in server.requests} == {user_agent()}


def test_once_times_out_with_exit_1_when_a_cos_cannot_settle(server: FakeApiServer, kubeconfig: str) -> None:
    server.put_object(cos("c1", 1, phase("a", {"ref": {"name": "missing", "key": "k"}})))
    res = run("--kubeconfig", kubeconfig, "--once", "--once-timeout", "2", "--health-bind", "0",
              "--metrics-bind", "0")
    assert res.returncode == 1, res.stderr
    assert res.stdout.startswith("c1: not settled (Progressing True/Retrying: getting Secret olmv1-system/missing:")


def test_the_process_freezes_its_heap_and_makes_young_collections_rarer() -> None:
    """What ``cos-reconciler`` does once before it starts (a subprocess: the collector's state is process-wide)."""
    code = ("import gc; from reconciler.process import tune_collector; before = gc.get_threshold(); tune_collector(); "
            "after = gc.get_threshold(); print(before[1:] == after[1:], after[0], gc.get_freeze_count() > 0)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "10000", "True"], out.stderr
