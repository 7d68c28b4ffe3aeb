"""Lease leader election in-process against the fake API server (short timings keep it fast)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from common.cluster.kube import KubeCluster
from common.runtime.leader import LeaderConfig, LeaderElector
from tests.support.fake_apiserver import FakeApiServer

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/sys/leases/cos-reconciler"


def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> float:
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)
    return time.monotonic() - start


class Candidate:
    def __init__(self, kube: KubeCluster, identity: str, **timings: float) -> None:
        cfg = LeaderConfig(namespace="sys", identity=identity, **(timings or
                           {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}))
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.elector = LeaderElector(kube, cfg, on_started_leading=self.started.set,
                                     on_stopped_leading=self.stopped.set)
        self.thread = threading.Thread(target=self.elector.run, daemon=True)

    def start(self) -> Candidate:
        self.thread.start()
        return self


def holder(server: FakeApiServer) -> str:
    lease = server.get_object("coordination.k8s.io/v1", "Lease", "cos-reconciler", "sys")
    return (lease or {}).get("spec", {}).get("holderIdentity", "") if lease else ""


def test_exactly_one_of_two_candidates_leads(kube: KubeCluster, server: FakeApiServer) -> None:
    a, b = Candidate(kube, "a").start(), Candidate(kube, "b").start()
    wait_for(lambda: a.started.is_set() or b.started.is_set())
    time.sleep(1.0)  # several retry periods: the other one must still be waiting
    assert a.started.is_set() != b.started.is_set()
    leader = a if a.started.is_set() else b
    lease = server.get_object("coordination.k8s.io/v1", "Lease", "cos-reconciler", "sys")
    assert lease["spec"]["holderIdentity"] == leader.elector.config.identity
    assert lease["spec"]["leaseDurationSeconds"] == 2  # 1.5 s rounded up, never down
    assert lease["spec"]["renewTime"].endswith("Z") and "." in lease["spec"]["renewTime"]
    for c in (a, b):
        c.elector.stop()


def test_clean_stop_releases_and_the_standby_takes_over_at_once(kube: KubeCluster, server: FakeApiServer) -> None:
    a = Candidate(kube, "a", lease_duration=30, renew_deadline=20, retry_period=0.2).start()
    wait_for(a.started.is_set)
    b = Candidate(kube, "b", lease_duration=30, renew_deadline=20, retry_period=0.2).start()
    time.sleep(0.5)
    assert not b.started.is_set()
    a.elector.stop()
    a.thread.join(2)
    took = wait_for(b.started.is_set, timeout=5)
    assert took < 1.0  # not the 30 s lease duration
    assert holder(server) == "b"
    lease = server.get_object("coordination.k8s.io/v1", "Lease", "cos-reconciler", "sys")
    assert lease["spec"]["leaseTransitions"] == 0  # a released (empty holder): b's acquisition is no "transition"
    b.elector.stop()


def test_a_dead_leader_is_replaced_after_the_lease_duration(kube: KubeCluster, server: FakeApiServer) -> None:
    a = Candidate(kube, "a").start()
    wait_for(a.started.is_set)
    # "kill" a: its thread stops renewing without releasing
    a.elector._stop.set()
    a.elector.release = lambda: False  # type: ignore[method-assign]
    b = Candidate(kube, "b").start()
    took = wait_for(b.started.is_set, timeout=10)
    assert 1.5 <= took <= 2.0 + 0.2 + 2.0  # the Lease says 2 s (1.5 rounded up), judged from b's first look
    lease = server.get_object("coordination.k8s.io/v1", "Lease", "cos-reconciler", "sys")
    assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1
    b.elector.stop()


def test_leader_that_cannot_renew_stops_leading_after_the_renew_deadline(
        kube: KubeCluster, server: FakeApiServer) -> None:
    a = Candidate(kube.with_options(max_retries=0), "a").start()
    wait_for(a.started.is_set)
    server.inject("GET", LEASE_PATH, 500, times=10_000)
    took = wait_for(a.stopped.is_set, timeout=5)
    assert took <= 1.0 + 0.2 + 1.5
    assert not a.elector.leading.is_set()


def test_bad_timings_are_refused(kube: KubeCluster) -> None:
    with pytest.raises(ValueError, match="lease duration > renew deadline > retry period"):
        LeaderElector(kube, LeaderConfig(identity="x", lease_duration=5, renew_deadline=10),
                      on_started_leading=lambda: None, on_stopped_leading=lambda: None)
