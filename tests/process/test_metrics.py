"""cos_revision_state and cos_rollout_duration_seconds, exported by the process with the real engine against
the fake API server: exact samples, series removed on a state change and on deletion, the histogram observed
once per revision and not again by a restarted process, nothing exported by a replica that does not lead."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from common.cluster.kube import KubeCluster
from reconciler.metrics import ROLLOUT_BUCKETS
from reconciler.process import ProcessConfig, ReconcilerProcess
from tests.engine.helpers import as_json, cm, cos, deployment, phase, secret
from tests.process.test_process import COS_API, get_cos, wait_for
from tests.support.fake_apiserver import FakeApiServer


def new_process(kube: KubeCluster) -> ReconcilerProcess:
    kube.sleep = lambda s: time.sleep(min(s, 0.05))  # type: ignore[attr-defined]
    return ReconcilerProcess(kube, ProcessConfig(workers=2, system_namespace="sys"), watch_timeout=30)


@pytest.fixture
def proc(kube: KubeCluster) -> Iterator[ReconcilerProcess]:
    p = new_process(kube)
    yield p
    p.stop()


def states(p: ReconcilerProcess) -> list[str]:
    """Every cos_revision_state sample line of a scrape."""
    return sorted(line for line in p.metrics.render().decode().splitlines() if line.startswith("cos_revision_state{"))


def line(name: str, state: str, owner: str = "ext") -> str:
    return f'cos_revision_state{{name="{name}",owner="{owner}",state="{state}"}} 1.0'


def rollouts(p: ReconcilerProcess) -> float | None:
    return p.metrics.registry.get_sample_value("cos_rollout_duration_seconds_count")


def test_rolling_out_then_succeeded_then_archived_then_gone(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("p", deployment("d"))))
    proc.start()
    wait_for(lambda: states(proc) == [line("c1", "RollingOut")])
    assert rollouts(proc) == 0.0
    d = server.get_object("apps/v1", "Deployment", "d", "ns")
    assert d is not None
    d["status"] = {"observedGeneration": d["metadata"].get("generation", 1), "replicas": 1, "updatedReplicas": 1,
                   "availableReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
    server.put_object(d)
    wait_for(lambda: states(proc) == [line("c1", "Succeeded")])   # the RollingOut series is gone
    assert rollouts(proc) == 1.0
    reg = proc.metrics.registry
    seconds = reg.get_sample_value("cos_rollout_duration_seconds_sum")
    assert seconds is not None and 0.0 <= seconds < 10.0   # creationTimestamp has whole seconds
    assert reg.get_sample_value("cos_rollout_duration_seconds_bucket", {"le": "10.0"}) == 1.0
    assert reg.get_sample_value("cos_rollout_duration_seconds_bucket", {"le": "+Inf"}) == 1.0
    assert [float(b) for b in ROLLOUT_BUCKETS] == [10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200]
    count = proc.reconcile_count
    proc.queue.add("c1")   # reconciled again: still Succeeded, not observed again
    wait_for(lambda: proc.reconcile_count > count and proc.queue.idle())
    assert states(proc) == [line("c1", "Succeeded")] and rollouts(proc) == 1.0

    obj = get_cos(server, "c1")
    obj["spec"]["lifecycleState"] = "Archived"
    server.put_object(obj)
    wait_for(lambda: states(proc) == [line("c1", "Archived")])
    assert rollouts(proc) == 1.0

    server.delete_object(COS_API, "ClusterObjectSet", "c1")
    wait_for(lambda: server.get_object(COS_API, "ClusterObjectSet", "c1") is None, timeout=15)
    wait_for(lambda: states(proc) == [])


def test_a_restarted_process_does_not_observe_a_rollout_again(kube: KubeCluster, server: FakeApiServer) -> None:
    server.put_object(cos("c1", 1, phase("p", cm("x")), owner=""))
    first = new_process(kube)
    try:
        first.start()
        wait_for(lambda: states(first) == [line("c1", "Succeeded", owner="")])
        assert rollouts(first) == 1.0
    finally:
        first.stop()
    assert states(first) == []   # a stopped replica exports no state
    second = new_process(kube)
    try:
        second.start()
        wait_for(lambda: states(second) == [line("c1", "Succeeded", owner="")])
        wait_for(second.queue.idle)
        assert rollouts(second) == 0.0
        assert second.metrics.registry.get_sample_value("cos_rollout_duration_seconds_bucket",
                                                        {"le": "+Inf"}) == 0.0
    finally:
        second.stop()


def test_blocked_and_one_series_per_cos(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    server.put_object(secret("mutable", {"k": as_json(cm("b"))}, ns="sys", immutable=False))
    server.put_object(cos("blocked", 1, phase("p", {"ref": {"name": "mutable", "key": "k"}}), owner="app"))
    server.put_object(cos("fine", 1, phase("p", cm("a"))))
    proc.start()
    wait_for(lambda: states(proc) == [line("blocked", "Blocked", owner="app"), line("fine", "Succeeded")])
    assert rollouts(proc) == 1.0   # the blocked one never succeeded


def test_a_replica_that_loses_the_lease_exports_no_state(server: FakeApiServer, proc: ReconcilerProcess) -> None:
    server.put_object(cos("c1", 1, phase("p", cm("x"))))
    proc.start()
    wait_for(lambda: states(proc) == [line("c1", "Succeeded")])
    proc._lost_lease()
    assert states(proc) == []
    assert proc.metrics.registry.get_sample_value("cos_leader") == 0.0
    proc._report_state("c1", type("R", (), {"state": "Succeeded", "owner": "ext", "rollout_seconds": 5.0})())
    assert states(proc) == [] and rollouts(proc) == 1.0   # a reconcile finishing late exports nothing


def test_a_standby_exports_no_state(kube: KubeCluster, server: FakeApiServer) -> None:
    from common.runtime.leader import LeaderConfig
    server.put_object(cos("c1", 1, phase("p", cm("x"))))
    server.put_object({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                       "metadata": {"name": "cos-reconciler", "namespace": "sys"},
                       "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 3600,
                                "renewTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())}})
    p = ReconcilerProcess(kube, ProcessConfig(workers=1, system_namespace="sys", leader_elect=True,
                                              leader=LeaderConfig("cos-reconciler", "sys", "me", 15, 10, 2)),
                          watch_timeout=30)
    try:
        p.start()
        time.sleep(1.0)
        assert states(p) == [] and p.reconcile_count == 0
        assert p.metrics.registry.get_sample_value("cos_leader") == 0.0
    finally:
        p.stop()
