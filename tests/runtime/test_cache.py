"""Informers against the fake API server: list then watch, resume after drops, re-list on 410, no spin."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from common.cluster.backoff import Backoff
from common.cluster.kube import KubeCluster
from common.runtime.cache import Caches, Informer, InformerKey
from tests.support.fake_apiserver import FakeApiServer

KEY = InformerKey("v1", "ConfigMap", "ns1")


def cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns1"},
            "data": data or {"k": "v"}}


def wait_for(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, key: InformerKey, etype: str, obj: dict, prev: dict | None) -> None:
        with self.lock:
            self.events.append((etype, obj["metadata"]["name"]))


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture
def informer(kube: KubeCluster, rec: Recorder):
    inf = Informer(kube, KEY, rec, watch_timeout=30, backoff=Backoff(0.05, 30.0, jitter=0.5))
    yield inf
    inf.stop()


def watch_requests(server: FakeApiServer) -> list:
    return [r for r in server.requests if r.verb == "watch"]


def test_lists_then_watches_from_the_list_resource_version(server: FakeApiServer, informer: Informer,
                                                           rec: Recorder) -> None:
    server.put_object(cm("a"))
    informer.start()
    assert informer.synced.wait(5)
    wait_for(lambda: len(watch_requests(server)) == 1)
    (lst,) = [r for r in server.requests if r.verb == "list"]
    assert lst.path == "/api/v1/namespaces/ns1/configmaps"
    assert watch_requests(server)[0].query["resourceVersion"] == "1"
    server.put_object(cm("b"))
    server.put_object(cm("a", k="2"))
    obj = server.get_object("v1", "ConfigMap", "b", "ns1")
    wait_for(lambda: len(rec.events) == 3)
    assert rec.events == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a")]
    assert informer.get("ns1", "a")["data"] == {"k": "2"}
    assert informer.get("ns1", "b") == obj


def test_watch_dropped_mid_stream_resumes_from_the_last_resource_version(
        server: FakeApiServer, informer: Informer, rec: Recorder) -> None:
    informer.start()
    assert informer.synced.wait(5)
    wait_for(lambda: server.open_watch_count() == 1)
    server.put_object(cm("a"))
    wait_for(lambda: rec.events == [("ADDED", "a")])
    last_rv = server.get_object("v1", "ConfigMap", "a", "ns1")["metadata"]["resourceVersion"]
    server.drop_watches(abrupt=True)
    server.put_object(cm("b"))          # happens while no watch is open
    wait_for(lambda: ("ADDED", "b") in rec.events)
    watches = watch_requests(server)
    assert len(watches) == 2
    assert watches[1].query["resourceVersion"] == last_rv
    assert informer.lists == 1          # resumed, not re-listed
    assert rec.events == [("ADDED", "a"), ("ADDED", "b")]


def test_clean_end_of_stream_rewatches_without_relisting(server: FakeApiServer, informer: Informer,
                                                        rec: Recorder) -> None:
    informer.start()
    wait_for(lambda: server.open_watch_count() == 1)
    for i in range(3):
        server.drop_watches(abrupt=False)
        wait_for(lambda n=i + 2: informer.watches == n and server.open_watch_count() == 1)
    server.put_object(cm("a"))
    wait_for(lambda: rec.events == [("ADDED", "a")])
    assert informer.lists == 1 and informer.watches >= 4


def test_410_gone_forces_a_relist_that_reports_what_changed_meanwhile(
        server: FakeApiServer, informer: Informer, rec: Recorder) -> None:
    server.put_object(cm("a"))
    server.put_object(cm("b"))
    informer.start()
    wait_for(lambda: server.open_watch_count() == 1)
    assert sorted(rec.events) == [("ADDED", "a"), ("ADDED", "b")]
    rec.events.clear()
    server.drop_watches(abrupt=True)
    wait_for(lambda: server.open_watch_count() == 1)
    # while "disconnected" again: b deleted, c created, a changed; then history compacted -> 410 on resume
    server.record = True
    with server._lock:
        server.drop_watches(abrupt=True)
        server.delete_object("v1", "ConfigMap", "b", "ns1")
        server.put_object(cm("c"))
        server.put_object(cm("a", k="2"))
        server.compact()
    wait_for(lambda: informer.lists == 2)
    wait_for(lambda: len(rec.events) == 3)
    assert sorted(rec.events) == [("ADDED", "c"), ("DELETED", "b"), ("MODIFIED", "a")]
    keys = informer.keys()  # a snapshot list: an Informer is not a mapping
    assert sorted(k[1] for k in keys) == ["a", "c"]


def test_410_on_the_watch_request_itself_relists(server: FakeApiServer, informer: Informer) -> None:
    server.inject("GET", "/api/v1/namespaces/ns1/configmaps", 410, query={"watch": "true"})
    informer.start()
    wait_for(lambda: informer.lists == 2 and server.open_watch_count() == 1)


def test_failing_watches_back_off_instead_of_spinning(server: FakeApiServer, informer: Informer) -> None:
    server.inject("GET", "/api/v1/namespaces/ns1/configmaps", 500, query={"watch": "true"}, times=1000)
    informer.start()
    time.sleep(1.0)
    n = len(watch_requests(server))
    # backoff 50 ms doubling (jittered down to half): at most ~6 attempts in the first second
    assert 2 <= n <= 7, n


def test_write_through_is_not_undone_by_an_older_watch_event(kube: KubeCluster, server: FakeApiServer,
                                                             informer: Informer) -> None:
    informer.start()
    assert informer.synced.wait(5)
    first = kube.create(cm("a"))
    second = kube.merge_patch("v1", "ConfigMap", "a", "ns1", {"data": {"k": "2"}})
    informer.write_through(second)
    informer._apply_event("MODIFIED", first)  # a late event for the older version
    assert informer.get("ns1", "a")["data"] == {"k": "2"}


def test_a_late_deleted_event_of_an_older_object_leaves_the_one_made_again_since(
        kube: KubeCluster, server: FakeApiServer, informer: Informer) -> None:
    events: list[tuple[str, str, str | None]] = []
    informer.handler = lambda key, etype, obj, prev: events.append(
        (etype, obj["metadata"]["uid"], prev and prev["metadata"]["uid"]))
    informer.start()
    assert informer.synced.wait(5)
    old = kube.create(cm("a"))
    wait_for(lambda: informer.get("ns1", "a") is not None)
    kube.delete("v1", "ConfigMap", "a", "ns1")
    new = kube.create(cm("a", k="new"))
    informer.write_through(new)                     # our create's answer, before the watch's DELETED of the old
    gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(int(new["metadata"]["resourceVersion"]) - 1)}}
    informer._apply_event("DELETED", gone)
    assert informer.get("ns1", "a")["data"] == {"k": "new"}   # not "NotFound" until the ADDED event
    assert ("DELETED", old["metadata"]["uid"], new["metadata"]["uid"]) not in events
    informer._apply_event("DELETED", {**new, "metadata": {**new["metadata"], "resourceVersion": "999"}})
    assert informer.get("ns1", "a") is None          # its own DELETED: gone


def test_caches_start_on_demand_and_stop_when_unwanted(kube: KubeCluster, server: FakeApiServer) -> None:
    caches = Caches(kube, None, watch_timeout=30)
    try:
        a = InformerKey("v1", "ConfigMap", None, "x=y")
        b = InformerKey("v1", "Secret", "ns1")
        caches.retain({a, b})
        wait_for(lambda: server.open_watch_count() == 2)
        assert caches.wait_synced(5)
        caches.retain({a})
        wait_for(lambda: server.open_watch_count() == 1)
        assert [i.key for i in caches.informers()] == [a]
        assert caches.find("v1", "ConfigMap", "ns1") is None              # filtered: cannot answer everything
        from common.contract import labels
        assert caches.find("v1", "ConfigMap", "ns1", labels.parse("x=y,z")) is not None
    finally:
        caches.stop_all()
    wait_for(lambda: server.open_watch_count() == 0)


def test_a_late_write_result_does_not_resurrect_a_deleted_object(kube: KubeCluster, server: FakeApiServer,
                                                                 informer: Informer) -> None:
    informer.start()
    assert informer.synced.wait(5)
    live = kube.create(cm("a"))
    informer._apply_event("DELETED", {**live, "metadata": {**live["metadata"], "resourceVersion": "99"}})
    informer.write_through(live)
    assert informer.get("ns1", "a") is None
    # The write that removed the last finalizer: kube-apiserver 1.36 deletes instead of storing it and answers
    # at the version the object had, older than its DELETED event's: the answer does not bring it back.
    finalized = {**live, "metadata": {**live["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    informer.write_through(finalized)
    assert informer.get("ns1", "a") is None


def test_an_object_shown_being_deleted_stays_cached_until_the_watch_says_it_is_gone(
        kube: KubeCluster, server: FakeApiServer, informer: Informer) -> None:
    """Issue 16: a marked object without metadata.finalizers (a Namespace held by spec.finalizers, a Pod in its
    grace period) is not gone; the cache keeps what the DELETE answered until the DELETED event."""
    informer.start()
    assert informer.synced.wait(5)
    live = kube.create(cm("a"))
    wait_for(lambda: informer.get("ns1", "a") is not None)
    rv = int(live["metadata"]["resourceVersion"])
    marked = {**live, "metadata": {**live["metadata"], "resourceVersion": str(rv + 1),
                                   "deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}}
    informer.write_through(marked)
    assert informer.get("ns1", "a")["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"
    informer._apply_event("DELETED", {**marked, "metadata": {**marked["metadata"], "resourceVersion": str(rv + 2)}})
    assert informer.get("ns1", "a") is None


def test_filtered_watch_sees_objects_enter_and_leave_its_selector(kube: KubeCluster, server: FakeApiServer,
                                                                  rec: Recorder) -> None:
    inf = Informer(kube, InformerKey("v1", "ConfigMap", None, "team=a"), rec, watch_timeout=30).start()
    try:
        assert inf.synced.wait(5)
        wait_for(lambda: server.open_watch_count() == 1)
        obj = server.put_object(cm("x"))
        obj["metadata"]["labels"] = {"team": "a"}
        obj = server.put_object(obj)
        wait_for(lambda: rec.events == [("ADDED", "x")])
        obj["metadata"]["labels"] = {"team": "b"}
        server.put_object(obj)
        wait_for(lambda: rec.events == [("ADDED", "x"), ("DELETED", "x")])
        assert inf.get("ns1", "x") is None
        assert inf.left("ns1", "x")  # it exists: readers must ask the API server
        obj["metadata"]["labels"] = {"team": "a"}
        server.put_object(obj)
        wait_for(lambda: inf.get("ns1", "x") is not None)
        assert not inf.left("ns1", "x")
    finally:
        inf.stop()


def test_watch_throttled_with_retry_after_waits_that_long(server: FakeApiServer, informer: Informer) -> None:
    server.inject("GET", "/api/v1/namespaces/ns1/configmaps", 429, query={"watch": "true"},
                  headers={"Retry-After": "1"})
    informer.start()
    wait_for(lambda: len(watch_requests(server)) == 1)
    time.sleep(0.6)
    assert len(watch_requests(server)) == 1  # the 50 ms backoff alone would have retried already
    wait_for(lambda: len(watch_requests(server)) == 2, timeout=3)


def test_the_store_keeps_each_object_in_memory_of_its_own_size(kube: KubeCluster) -> None:
    """The store's compact JSON costs what it holds: orjson's own result keeps its output buffer (at least 4 KiB
    for any object), so 1,000 small cached objects took 4-8 MiB instead of about one."""
    import tracemalloc

    informer = Informer(kube, InformerKey("v1", "ConfigMap"))
    objs = [{"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": f"c{i}", "namespace": "ns", "resourceVersion": str(i + 1)},
             "data": {"k": "v" * 800}} for i in range(1000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for obj in objs:
            informer.write_through(obj)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(informer) == 1000
    assert held < 1000 * 1300, f"{held / 1000:.0f} bytes per cached object of ~1 KiB"   # JSON ~950 bytes each
    assert informer.get("ns", "c7") == objs[7]
