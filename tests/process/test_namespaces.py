"""A COS waiting for a namespace that does not exist yet is woken up by the namespace's creation.

The API server refuses the object (404 ``namespaces "<ns>" not found``, NamespaceLifecycle); the COS is
Retrying with exponential backoff, which alone could leave it waiting up to 1000 s after the namespace
appears. The process watches namespaces while a COS waits for one: the tests make the backoff an hour, so only
that watch can roll the COS out.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from common.cluster.interface import NotFound, ServiceUnavailable
from common.cluster.kube import KubeCluster
from common.contract.conditions import settled
from common.runtime.queue import ItemBackoff
from reconciler.engine import ReconcileError
from reconciler.process import ProcessConfig, ReconcilerProcess
from reconciler.rollout import ObjectError
from reconciler.watches import NAMESPACES_KEY, missing_namespace
from tests.engine.helpers import cm, cos, phase
from tests.process.test_process import get_cos, wait_for
from tests.support.fake_apiserver import FakeApiServer


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(namespace_lifecycle=True) as s:
        s.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
        yield s


def _progressing(server: FakeApiServer, name: str) -> tuple[str, str, str]:
    conds = {c["type"]: c for c in (get_cos(server, name).get("status") or {}).get("conditions") or []}
    c = conds.get("Progressing") or {}
    return c.get("status", ""), c.get("reason", ""), c.get("message", "")


def test_a_cos_waiting_for_a_namespace_rolls_out_when_it_is_created(server: FakeApiServer,
                                                                     kube: KubeCluster) -> None:
    kube.sleep = lambda s: time.sleep(min(s, 0.05))  # type: ignore[attr-defined]
    proc = ReconcilerProcess(kube, ProcessConfig(workers=2, system_namespace="sys"), watch_timeout=30)
    proc.queue.backoff = ItemBackoff(base=3600.0, cap=3600.0)   # a failed reconcile comes back in an hour
    server.put_object(cos("c1", 1, phase("a", cm("here")), phase("b", cm("early", ns="later"))))
    proc.start()
    try:
        message = 'creating Object ConfigMap.v1 later/early: namespaces "later" not found'
        wait_for(lambda: get_cos(server, "c1").get("status") and _progressing(server, "c1") ==
                 ("True", "Retrying", message))
        wait_for(lambda: (inf := proc.caches.get(NAMESPACES_KEY)) is not None and inf.synced.is_set())
        wait_for(lambda: proc.queue.backoff.failures("c1") >= 1)   # its next retry is an hour away
        server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "later"}})
        wait_for(lambda: settled(get_cos(server, "c1")))
        assert server.get_object("v1", "ConfigMap", "early", "later") is not None
        wait_for(lambda: proc.caches.get(NAMESPACES_KEY) is None)   # nobody waits: no namespace watch
    finally:
        proc.stop()


def test_missing_namespace_reads_the_status_details_only() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": 'namespaces "later" not found', "reason": "NotFound",
              "details": {"name": "later", "kind": "namespaces"}, "code": 404}
    gone = NotFound('namespaces "later" not found', status=status)
    wrapped = ReconcileError("x", ObjectError('creating Object ConfigMap.v1 later/early: ...', gone))
    assert missing_namespace(wrapped) == "later"
    assert missing_namespace(gone) == "later"
    # a NotFound of anything else, or another error, is not a missing namespace
    assert missing_namespace(NotFound('configmaps "later" not found')) is None
    assert missing_namespace(ObjectError("getting Object ...", ServiceUnavailable("down"))) is None
    assert missing_namespace(None) is None
