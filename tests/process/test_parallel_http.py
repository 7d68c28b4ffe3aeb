"""Concurrent rollouts at the HTTP level, against the fake API server: 429 honoured with jitter, each object
written once, phases in order, the connection pool sized for the budget, the flag checked."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from common.cluster.kube import KubeCluster
from common.contract.conditions import settled
from common.runtime.parallel import DEFAULT_CONCURRENCY, WATCH_CONNECTIONS
from reconciler.process import ProcessConfig, ReconcilerProcess
from tests.engine.helpers import cm, cos, phase
from tests.support.fake_apiserver import FakeApiServer

COS_API = "olm.operatorframework.io/v1"
CM_PATH = "/api/v1/namespaces/ns/configmaps"
ROOT = Path(__file__).resolve().parents[2]


def wait_for(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def test_429s_during_a_concurrent_rollout_are_waited_out_with_jitter_and_each_object_written_once(
        server: FakeApiServer, kube: KubeCluster, sleeps: list[float]) -> None:
    first = [f"a{i}" for i in range(8)]
    second = [f"b{i}" for i in range(4)]
    server.put_object(cos("c1", 1, phase("first", *[cm(n) for n in first]),
                          phase("second", *[cm(n) for n in second])))
    # as many 429s as one request may be retried after (max_retries=5): whichever requests they land on, even all
    # on one, each is waited out and retried (a sixth on one request would end it, and the reconcile, in an error)
    server.inject("POST", CM_PATH, 429, headers={"Retry-After": "2"}, times=5)
    proc = ReconcilerProcess(kube, ProcessConfig(workers=2, rollout_concurrency=8), watch_timeout=30)
    try:
        proc.start()
        wait_for(lambda: settled(server.get_object(COS_API, "ClusterObjectSet", "c1") or {}))
    finally:
        proc.stop()
    posts = [r for r in server.requests if r.method == "POST" and r.path == CM_PATH]
    assert [r.status for r in posts].count(429) == 5
    created = [r.body["metadata"]["name"] for r in posts if r.status == 201]
    assert sorted(created) == sorted(first + second)            # each object created exactly once
    assert set(created[:8]) == set(first)                       # the second phase only after the first
    throttled = [s for s in sleeps if s >= 1.0]
    assert len(throttled) == 5
    assert all(2.0 <= s <= 3.0 for s in throttled)              # never earlier than Retry-After, at most +50%
    assert len(set(throttled)) > 1                              # not in lock-step


def test_the_process_sizes_the_connection_pool_for_its_budget_and_jitters_429s(server: FakeApiServer,
                                                                                 tmp_path: Path) -> None:
    kube = KubeCluster.from_kubeconfig(server.write_kubeconfig(str(tmp_path / "kc")))
    assert kube.options.retry_jitter == 0.0
    proc = ReconcilerProcess(kube, ProcessConfig(workers=4, rollout_concurrency=20))
    pool = proc.kube.api_client.rest_client.pool_manager
    proc.stop()
    assert pool.connection_pool_kw["maxsize"] == 4 + 20 + WATCH_CONNECTIONS
    assert proc.kube.options.retry_jitter == 0.5
    kube.close()


def test_the_flag_defaults_to_the_shared_budget_and_rejects_zero() -> None:
    from reconciler.cli import build_parser

    assert build_parser().parse_args([]).rollout_concurrency == DEFAULT_CONCURRENCY == 8
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("KUBECONFIG", None)
    out = subprocess.run([sys.executable, "-m", "reconciler.cli", "--rollout-concurrency", "0"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--rollout-concurrency must be at least 1, got 0" in out.stderr
