"""The reconciler writing each COS's objects as the ServiceAccount it names, against the fake API server with RBAC.

The fake plays a real server's identities: TokenRequests issue tokens of existing ServiceAccounts, each request
is made as the token's owner and judged by ``server.authorize``. What is checked here, request by request:
who wrote what (the COS's objects by its ServiceAccount, the COS itself and Events by the process), how many
TokenRequests (one per ServiceAccount for everything), that a refusal becomes the COS's condition in the
API server's words and is retried as soon as RBAC changes (the backoff is an hour: only that watch can do it),
that a missing ServiceAccount is waited for the same way, OLM v1's refusal with ``require_service_account``,
teardown and handover with each revision's own identity, and a steady state of zero requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from common.cluster.kube import KubeCluster
from common.contract import api
from common.contract.conditions import settled
from common.contract.serviceaccount import ServiceAccountRef
from common.runtime.cache import InformerKey
from common.runtime.queue import ItemBackoff
from reconciler.process import ProcessConfig, ReconcilerProcess
from reconciler.watches import RBAC_KEYS
from tests.engine.helpers import cm, cos, phase
from tests.process import test_process
from tests.process.test_process import condition, get_cos
from tests.support.fake_apiserver import FakeApiServer

INSTALLER = "system:serviceaccount:shop:installer"
OTHER = "system:serviceaccount:shop:other"
ADMIN = "admin"   # the process's own identity on the fake


def wait_for(cond: Callable[[], Any], timeout: float = 30.0) -> None:
    """test_process's wait, with room for a loaded machine (a readiness wait, not a timed assertion)."""
    test_process.wait_for(cond, timeout)


class Rbac:
    """``server.authorize``: the process may do anything; a ServiceAccount what ``grants`` lists."""

    def __init__(self) -> None:
        self.grants: set[tuple[str, str, str]] = set()   # (user, resource, namespace)

    def __call__(self, user: str, verb: str, resource: str, namespace: str, name: str) -> bool:
        return user == ADMIN or (user, resource, namespace) in self.grants


@pytest.fixture
def rbac(server: FakeApiServer) -> Rbac:
    rbac = Rbac()
    server.authorize = rbac
    for name in ("installer", "other"):
        server.put_object({"apiVersion": "v1", "kind": "ServiceAccount",
                           "metadata": {"name": name, "namespace": "shop"}})
    rbac.grants |= {(INSTALLER, "configmaps", "a"), (OTHER, "configmaps", "a")}
    return rbac


def start(kube: KubeCluster, **config: Any) -> ReconcilerProcess:
    kube.sleep = lambda s: time.sleep(min(s, 0.05))  # type: ignore[attr-defined]
    proc = ReconcilerProcess(kube, ProcessConfig(workers=2, system_namespace="sys", **config), watch_timeout=30)
    proc.queue.backoff = ItemBackoff(base=3600.0, cap=3600.0)   # a failed reconcile comes back in an hour
    proc.start()
    return proc


@pytest.fixture
def procs() -> Iterator[list[ReconcilerProcess]]:
    started: list[ReconcilerProcess] = []
    yield started
    for p in started:
        p.stop()


def named(obj: dict[str, Any], sa: str | None = "installer") -> dict[str, Any]:
    if sa is not None:
        obj["metadata"]["annotations"] = {api.ANNOTATION_SERVICE_ACCOUNT_NAME: sa,
                                          api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE: "shop"}
    return obj


def progressing(server: FakeApiServer, name: str) -> tuple[str, str, str]:
    c = condition(get_cos(server, name), "Progressing")
    return c.get("status", ""), c.get("reason", ""), c.get("message", "")


def who(server: FakeApiServer, keep: Callable[[Any], bool]) -> list[tuple[str, str, str]]:
    """(verb, last path segment, user) of the recorded requests ``keep`` selects, in order."""
    return [(r.verb, r.path.rsplit("/", 1)[-1], server.user_of(r.token)) for r in server.requests if keep(r)]


def settle_quietly(proc: ReconcilerProcess) -> None:
    wait_for(proc.queue.idle)
    time.sleep(0.3)


def test_objects_are_written_as_the_service_account_and_everything_else_as_the_process(
        server: FakeApiServer, kube: KubeCluster, rbac: Rbac, procs: list[ReconcilerProcess]) -> None:
    server.put_object(named(cos("c1", 1, phase("one", cm("x", ns="a")),
                                phase("two", cm("y", ns="a"), cm("z", ns="a")))))
    procs.append(proc := start(kube))
    wait_for(lambda: settled(get_cos(server, "c1")))
    settle_quietly(proc)
    writes = [r for r in server.requests if r.method != "GET"]
    assert {(r.verb, server.user_of(r.token)) for r in writes if "/configmaps" in r.path} == {("create", INSTALLER)}
    assert sorted(r.path.rsplit("/", 1)[-1] for r in writes if "/configmaps" in r.path) == ["configmaps"] * 3
    # the COS (finalizer, status) and its Events are the process's own writes; reads are all the process's
    assert {server.user_of(r.token) for r in writes if "/clusterobjectsets" in r.path or "/events" in r.path} == {ADMIN}
    assert {server.user_of(r.token) for r in server.requests if r.method == "GET"} == {ADMIN}
    assert [(t, ns, n) for t, ns, n in server.issued] == [("sa-token-shop-installer-1", "shop", "installer")]
    assert proc.tokens.issued == {ServiceAccountRef("shop", "installer"): 1}

    # steady state: nothing at all, no TokenRequest either
    server.clear_requests()
    count = proc.reconcile_count
    for _ in range(3):
        proc.queue.add("c1")
        wait_for(proc.queue.idle)
    wait_for(lambda: proc.reconcile_count > count)
    settle_quietly(proc)
    assert server.requests == []


def test_a_403_is_the_condition_and_a_grant_retries_at_once(server: FakeApiServer, kube: KubeCluster,
                                                             rbac: Rbac, procs: list[ReconcilerProcess]) -> None:
    server.put_object(named(cos("c1", 1, phase("one", cm("x", ns="a"), cm("elsewhere", ns="b")),
                                phase("two", cm("y", ns="a")))))
    procs.append(proc := start(kube))
    message = ('creating Object ConfigMap.v1 b/elsewhere: configmaps is forbidden: User '
               '"system:serviceaccount:shop:installer" cannot create resource "configmaps" in API group "" in the '
               'namespace "b"')
    wait_for(lambda: get_cos(server, "c1").get("status") and progressing(server, "c1") == ("True", "Retrying", message))
    assert server.get_object("v1", "ConfigMap", "y", "a") is None   # the later phase is not touched
    wait_for(lambda: all((inf := proc.caches.get(k)) is not None and inf.synced.is_set() for k in RBAC_KEYS))
    wait_for(lambda: proc.queue.backoff.failures("c1") >= 1)   # its next retry is an hour away
    # the admin grants the right: a RoleBinding appears (its watch event is what retries the COS)
    rbac.grants.add((INSTALLER, "configmaps", "b"))
    server.put_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                       "metadata": {"name": "installer", "namespace": "b"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "writer"},
                       "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": "shop"}]})
    wait_for(lambda: settled(get_cos(server, "c1")))
    assert server.get_object("v1", "ConfigMap", "y", "a") is not None
    wait_for(lambda: all(proc.caches.get(k) is None for k in RBAC_KEYS))   # nobody waits: no RBAC watches
    assert len(server.issued) == 1


def test_an_admission_403_names_the_service_account(server: FakeApiServer, kube: KubeCluster, rbac: Rbac,
                                                     procs: list[ReconcilerProcess]) -> None:
    """A 403 whose words do not name the writer (admission, not RBAC) gets the identity added."""
    server.inject("POST", r"/api/v1/namespaces/a/configmaps", 403, times=100, body={
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
        "message": 'configmaps "x" is forbidden: unable to create new content in namespace a because it is being '
                   "terminated"})
    server.put_object(named(cos("c1", 1, phase("one", cm("x", ns="a")))))
    procs.append(start(kube))
    wait_for(lambda: get_cos(server, "c1").get("status") and progressing(server, "c1")[1] == "Retrying")
    assert progressing(server, "c1")[2] == (
        'creating Object ConfigMap.v1 a/x: configmaps "x" is forbidden: unable to create new content in namespace a '
        "because it is being terminated (writing as ServiceAccount shop/installer)")


def test_a_missing_service_account_is_waited_for(server: FakeApiServer, kube: KubeCluster, rbac: Rbac,
                                                 procs: list[ReconcilerProcess]) -> None:
    server.put_object(named(cos("c1", 1, phase("one", cm("x", ns="a"))), sa="later"))
    procs.append(proc := start(kube))
    message = ('service account "later" not found in namespace "shop": unable to authenticate with the Kubernetes '
               "cluster.")
    wait_for(lambda: get_cos(server, "c1").get("status") and progressing(server, "c1") == ("True", "Retrying", message))
    assert server.objects("v1", "ConfigMap") == []
    key = InformerKey("v1", "ServiceAccount", "shop", None)
    wait_for(lambda: (inf := proc.caches.get(key)) is not None and inf.synced.is_set())
    wait_for(lambda: proc.queue.backoff.failures("c1") >= 1)
    rbac.grants.add(("system:serviceaccount:shop:later", "configmaps", "a"))
    server.put_object({"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": "later", "namespace": "shop"}})
    wait_for(lambda: settled(get_cos(server, "c1")))
    assert who(server, lambda r: "/configmaps" in r.path and r.method != "GET") == [
        ("create", "configmaps", "system:serviceaccount:shop:later")]
    wait_for(lambda: proc.caches.get(key) is None)


def test_require_service_account_refuses_a_cos_naming_nobody_with_olm_v1s_words(
        server: FakeApiServer, kube: KubeCluster, rbac: Rbac, procs: list[ReconcilerProcess]) -> None:
    server.put_object(cos("bare", 1, phase("one", cm("x", ns="a"))))
    half = cos("half", 1, phase("one", cm("h", ns="a")))
    half["metadata"]["annotations"] = {api.ANNOTATION_SERVICE_ACCOUNT_NAME: "installer", "note": "x"}
    server.put_object(half)
    server.put_object(named(cos("named", 1, phase("one", cm("n", ns="a")))))
    procs.append(start(kube, require_service_account=True))
    wait_for(lambda: settled(get_cos(server, "named")))
    wait_for(lambda: get_cos(server, "bare").get("status") and get_cos(server, "half").get("status"))
    assert progressing(server, "bare") == ("True", "Retrying", 'revision "bare" is missing required annotations')
    assert progressing(server, "half") == ("True", "Retrying",
                                           'revision "half" is missing ServiceAccount namespace annotation')
    for name in ("bare", "half"):   # not rolled out: no object, not even the finalizer
        assert not get_cos(server, name)["metadata"].get("finalizers")
    assert sorted(o["metadata"]["name"] for o in server.objects("v1", "ConfigMap")) == ["n"]


def test_without_the_switch_a_cos_naming_nobody_rolls_out_as_today(
        server: FakeApiServer, kube: KubeCluster, rbac: Rbac, procs: list[ReconcilerProcess]) -> None:
    server.put_object(cos("bare", 1, phase("one", cm("x", ns="a"))))
    half = cos("half", 1, phase("one", cm("h", ns="a")))
    half["metadata"]["annotations"] = {api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE: "shop"}
    server.put_object(half)
    procs.append(start(kube))
    wait_for(lambda: settled(get_cos(server, "bare")))
    assert who(server, lambda r: "/configmaps" in r.path and r.method != "GET") == [("create", "configmaps", ADMIN)]
    assert server.issued == []
    # half an identity never falls back to the process's own
    wait_for(lambda: get_cos(server, "half").get("status"))
    assert progressing(server, "half") == ("True", "Retrying",
                                           'revision "half" is missing ServiceAccount name annotation')


def test_handover_and_teardown_use_each_revisions_own_identity(server: FakeApiServer, kube: KubeCluster,
                                                              rbac: Rbac, procs: list[ReconcilerProcess]) -> None:
    server.put_object(named(cos("c1", 1, phase("one", cm("kept", ns="a"), cm("dropped", ns="a")), owner="shop")))
    procs.append(start(kube))
    wait_for(lambda: settled(get_cos(server, "c1")))
    server.clear_requests()
    # revision 2, written by another ServiceAccount, keeps one object and drops the other
    server.put_object(named(cos("c2", 2, phase("one", cm("kept", ns="a")), owner="shop"), sa="other"))
    wait_for(lambda: settled(get_cos(server, "c2")))
    wait_for(lambda: progressing(server, "c1")[1] == "Archived")
    object_writes = who(server, lambda r: "/configmaps" in r.path and r.method != "GET")
    assert ("apply", "kept", OTHER) in object_writes                  # adopted by revision 2's account
    assert ("delete", "dropped", INSTALLER) in object_writes          # torn down by revision 1's own
    assert ("patch", "kept", INSTALLER) in object_writes              # released by revision 1's own
    assert {u for _, _, u in object_writes} == {INSTALLER, OTHER}
    # archiving revision 1 is the process's write on a COS
    assert ("patch", "c1", ADMIN) in who(server, lambda r: "/clusterobjectsets/" in r.path and r.method == "PATCH")
    assert sorted((ns, n) for _, ns, n in server.issued) == [("shop", "installer"), ("shop", "other")]


def test_a_restart_judges_drift_with_one_dry_run_per_object_as_the_service_account(
        server: FakeApiServer, kube: KubeCluster, rbac: Rbac, procs: list[ReconcilerProcess],
        kubeconfig: str) -> None:
    server.put_object(named(cos("c1", 1, phase("one", cm("x", ns="a"), cm("y", ns="a")))))
    procs.append(first := start(kube))
    wait_for(lambda: settled(get_cos(server, "c1")))
    first.stop()
    server.clear_requests()
    again = KubeCluster.from_kubeconfig(kubeconfig)
    try:
        procs.append(second := start(again))
        wait_for(lambda: second.reconcile_count >= 1)
        settle_quietly(second)
        object_writes = [r for r in server.requests if "/configmaps" in r.path and r.method != "GET"]
        assert sorted((r.verb, r.query.get("dryRun"), server.user_of(r.token)) for r in object_writes) == [
            ("apply", "All", INSTALLER), ("apply", "All", INSTALLER)]
        assert len([r for r in server.requests if r.path.endswith("/token")]) == 1
    finally:
        again.close()
