"""The engine's identity rule on the in-memory cluster: which cluster the objects are written through.

The process's HTTP tests (tests/process/test_serviceaccount_process.py) prove the tokens on the wire; here the
rule itself: a COS naming a ServiceAccount has its objects written through ``EngineConfig.writer`` for it
(rollout and teardown), its own status and finalizer through the process's cluster, and is refused when the
engine has no writer or when one is required and the COS names none.
"""

from __future__ import annotations

from typing import Any

from common.cluster.interface import Cluster
from common.contract import api
from common.contract.serviceaccount import ServiceAccountRef
from common.testing.memcluster import MemCluster
from reconciler.engine import EngineConfig
from tests.engine.helpers import brief, cluster, cm, cos, get_cos, phase, run, writes

SHOP = ServiceAccountRef("shop", "installer")


def named(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["annotations"] = {api.ANNOTATION_SERVICE_ACCOUNT_NAME: SHOP.name,
                                      api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE: SHOP.namespace}
    return obj


class View:
    """The base cluster, recording the writes made through it (what a token-carrying view would send)."""

    def __init__(self, base: MemCluster) -> None:
        self.base = base
        self.writes: list[tuple[str, str, str]] = []

    def __getattr__(self, verb: str) -> Any:
        call = getattr(self.base, verb)
        if verb not in ("create", "apply", "merge_patch", "update", "update_status", "delete"):
            return call

        def write(*args: Any, **kwargs: Any) -> Any:
            obj = args[0] if verb in ("create", "apply", "update", "update_status") else None
            kind = obj["kind"] if obj is not None else args[1]
            name = obj["metadata"]["name"] if obj is not None else args[2]
            if not kwargs.get("dry_run"):
                self.writes.append((verb, kind, name))
            return call(*args, **kwargs)
        return write


class Writers:
    """An ``EngineConfig.writer`` that records whom it was asked for and the writes made through each view."""

    def __init__(self) -> None:
        self.asked: list[ServiceAccountRef] = []
        self.views: list[View] = []

    def __call__(self, base: Cluster, ref: ServiceAccountRef) -> Cluster:
        assert isinstance(base, MemCluster)
        self.asked.append(ref)
        view = View(base)
        self.views.append(view)
        return view  # type: ignore[return-value]


def test_a_named_account_writes_the_objects_and_the_process_writes_the_cos() -> None:
    mc = cluster()
    mc.create(named(cos("c1", 1, phase("one", cm("x"), cm("y")))))
    mc.reset_requests()
    writers = Writers()
    config = EngineConfig(writer=writers)
    assert run(mc, "c1", config=config).error is None
    assert brief(mc, "c1", "Progressing") == ("True", "Succeeded", "Revision 1 has rolled out.")
    assert writers.asked == [SHOP]
    assert sorted(writers.views[0].writes) == [("create", "ConfigMap", "x"), ("create", "ConfigMap", "y")]
    # the COS's finalizer and status are written, but not through the account's view
    assert sorted(w for w in writes(mc) if w[1] != "ConfigMap") == [
        ("patch", "ClusterObjectSet", "c1"), ("patch_status", "ClusterObjectSet", "c1")]

    # teardown: the archived revision removes its objects with its own account
    mc.merge_patch(api.API_VERSION, api.KIND, "c1", None, {"spec": {"lifecycleState": "Archived"}})
    mc.reset_requests()
    run(mc, "c1", config=config)
    assert writers.asked == [SHOP, SHOP]
    assert sorted(writers.views[1].writes) == [("delete", "ConfigMap", "x"), ("delete", "ConfigMap", "y")]


def test_without_a_writer_a_named_account_is_refused_not_borrowed() -> None:
    mc = cluster()
    mc.create(named(cos("c1", 1, phase("one", cm("x")))))
    mc.reset_requests()
    result = run(mc, "c1")
    assert result.error is not None
    assert brief(mc, "c1", "Progressing") == (
        "True", "Retrying", 'revision "c1" names ServiceAccount shop/installer, but this reconciler cannot write as '
                            "a ServiceAccount")
    assert writes(mc) == [("patch_status", "ClusterObjectSet", "c1")]
    assert not get_cos(mc, "c1")["metadata"].get("finalizers")


def test_required_and_missing_is_olm_v1s_refusal_for_rollout_and_teardown() -> None:
    mc = cluster()
    mc.create(cos("c1", 1, phase("one", cm("x"))))
    config = EngineConfig(require_service_account=True, writer=Writers())
    run(mc, "c1", config=config)
    assert brief(mc, "c1", "Progressing") == ("True", "Retrying", 'revision "c1" is missing required annotations')
    assert mc.peek("v1", "ConfigMap", "x", "ns") is None
    # rolled out before the switch was turned on, then archived: its teardown is refused the same way until an
    # admin names an account (kubectl annotate), never done with the process's own rights
    run(mc, "c1")
    assert mc.peek("v1", "ConfigMap", "x", "ns") is not None
    mc.merge_patch(api.API_VERSION, api.KIND, "c1", None, {"spec": {"lifecycleState": "Archived"}})
    run(mc, "c1", config=config)
    assert brief(mc, "c1", "Progressing") == ("True", "Retrying", 'revision "c1" is missing required annotations')
    assert mc.peek("v1", "ConfigMap", "x", "ns") is not None
    mc.merge_patch(api.API_VERSION, api.KIND, "c1", None, {"metadata": {"annotations": {
        api.ANNOTATION_SERVICE_ACCOUNT_NAME: "installer", api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE: "shop"}}})
    run(mc, "c1", config=config)
    assert mc.peek("v1", "ConfigMap", "x", "ns") is None
