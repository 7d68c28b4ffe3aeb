"""Handing objects from revision to revision, archival (ordered teardown) and deletion of a COS."""

from __future__ import annotations

from common.contract.api import FINALIZER_TEARDOWN, KIND, owner_reference
from common.testing.memcluster import MemCluster
from tests.engine.helpers import brief, cluster, cm, cos, deployment, get_cos, phase, ready_deployment, run, writes


def _refs(mc: MemCluster, kind: str, name: str) -> list[tuple[str, bool]]:
    api = "apps/v1" if kind == "Deployment" else "v1"
    obj = mc.peek(api, kind, name, "ns")
    assert obj is not None, f"{kind} {name} is gone"
    return [(r["name"], r["controller"]) for r in obj["metadata"].get("ownerReferences") or []]


def _archive(mc: MemCluster, name: str) -> None:
    mc.edit("olm.operatorframework.io/v1", KIND, name, None,
            lambda o: o["spec"].update({"lifecycleState": "Archived"}))


def test_two_revision_handover() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("a", cm("moves"), cm("old-only"))))
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Succeeded")[0] == "True"

    mc.put(cos("ext-2", 2, phase("a", cm("new-only")), phase("b", cm("moves", k="v2"))))
    mc.reset_requests()
    result = run(mc, "ext-2")
    assert writes(mc) == [("patch", KIND, "ext-2"), ("create", "ConfigMap", "new-only"),
                          ("apply", "ConfigMap", "moves"), ("patch", KIND, "ext-1"),
                          ("patch_status", KIND, "ext-2")]
    assert _refs(mc, "ConfigMap", "moves") == [("ext-1", False), ("ext-2", True)]
    assert mc.peek("v1", "ConfigMap", "moves", "ns")["data"] == {"k": "v2"}
    assert get_cos(mc, "ext-1")["spec"]["lifecycleState"] == "Archived"
    assert ("Normal", "Archived", "Archived revision 1 (ext-1): revision 2 has rolled out") in [
        (e.type, e.reason, e.message) for e in result.events]
    assert result.changed == {"ext-1"}   # the process queues the archived revision: its teardown is due

    mc.reset_requests()
    result = run(mc, "ext-1")
    assert result.changed == set()
    assert writes(mc) == [("patch", "ConfigMap", "moves"), ("delete", "ConfigMap", "old-only"),
                          ("patch_status", KIND, "ext-1"), ("patch", KIND, "ext-1")]
    assert _refs(mc, "ConfigMap", "moves") == [("ext-2", True)]
    assert mc.peek("v1", "ConfigMap", "old-only", "ns") is None
    assert mc.peek("v1", "ConfigMap", "new-only", "ns") is not None
    assert brief(mc, "ext-1", "Progressing") == ("False", "Archived", "revision is archived")
    assert brief(mc, "ext-1", "Available") == ("Unknown", "Archived", "revision is archived")
    assert brief(mc, "ext-1", "Succeeded") == ("True", "Succeeded", "Revision succeeded rolling out.")  # unchanged
    assert "finalizers" not in get_cos(mc, "ext-1")["metadata"]
    assert [e.reason for e in result.events] == ["TeardownComplete"]

    # both settled: nothing to write; an archived, torn-down COS is not even resolved again
    mc.reset_requests()
    run(mc, "ext-1")
    run(mc, "ext-2")
    assert mc.writes == 0
    # ext-2's intent for "moves" changed when ext-1 released its ownerReference: one dry run says that
    # applying it would change nothing; from then on the object costs nothing
    assert [r for r in mc.log if r.name in ("moves", "old-only")] == [
        ("get", "v1", "ConfigMap", "ns", "moves"), ("apply:dry-run", "v1", "ConfigMap", "ns", "moves")]
    mc.reset_requests()
    run(mc, "ext-2")
    assert [r for r in mc.log if r.name in ("moves", "old-only")] == [("get", "v1", "ConfigMap", "ns", "moves")]


def test_revision_three_supersedes_unfinished_revision_two() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p1", cm("a"), deployment("dep")), phase("p3", cm("z"))))
    run(mc, "ext-1")
    ready_deployment(mc, "dep")
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Succeeded")[0] == "True"

    mc.put(cos("ext-2", 2, phase("p1", cm("a"), deployment("dep")), phase("p2", deployment("b2")),
               phase("p3", cm("z"))))
    run(mc, "ext-2")
    assert brief(mc, "ext-2", "Available")[2] == "Object Deployment.apps/v1 ns/b2: .status outdated"
    assert _refs(mc, "ConfigMap", "a") == [("ext-1", False), ("ext-2", True)]
    assert _refs(mc, "ConfigMap", "z") == [("ext-1", True)]   # rev 2 never reached phase p3

    mc.put(cos("ext-3", 3, phase("p1", cm("a"), deployment("dep"), cm("z"))))
    mc.reset_requests()
    run(mc, "ext-3")
    assert writes(mc) == [("patch", KIND, "ext-3"), ("apply", "ConfigMap", "a"), ("apply", "Deployment", "dep"),
                          ("apply", "ConfigMap", "z"), ("patch", KIND, "ext-1"), ("patch", KIND, "ext-2"),
                          ("patch_status", KIND, "ext-3")]
    assert _refs(mc, "ConfigMap", "a") == [("ext-1", False), ("ext-2", False), ("ext-3", True)]
    assert _refs(mc, "ConfigMap", "z") == [("ext-1", False), ("ext-3", True)]

    mc.reset_requests()
    run(mc, "ext-2")
    assert writes(mc) == [("delete", "Deployment", "b2"), ("patch", "ConfigMap", "a"),
                          ("patch", "Deployment", "dep"), ("patch_status", KIND, "ext-2"), ("patch", KIND, "ext-2")]
    run(mc, "ext-1")
    for kind, name in (("ConfigMap", "a"), ("Deployment", "dep"), ("ConfigMap", "z")):
        assert _refs(mc, kind, name) == [("ext-3", True)]
    assert mc.peek("apps/v1", "Deployment", "b2", "ns") is None
    mc.reset_requests()
    run(mc, "ext-3")
    assert mc.writes == 0


def test_progressed_objects_count_as_handed_over() -> None:
    """Rev 1 reconciled after rev 2 took an object over must not take it back."""
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a"))))
    run(mc, "ext-1")
    mc.put(cos("ext-2", 2, phase("p", cm("a"), deployment("slow"))))
    run(mc, "ext-2")   # adopts a, waits for slow
    mc.reset_requests()
    run(mc, "ext-1")
    assert mc.writes == 0
    assert _refs(mc, "ConfigMap", "a") == [("ext-1", False), ("ext-2", True)]


def test_archival_tears_down_later_phases_first_and_waits_for_finalizers() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("base", cm("first")), phase("top", cm("second"), cm("third"))))
    run(mc, "ext-1")
    mc.edit("v1", "ConfigMap", "second", "ns", lambda o: o["metadata"].update({"finalizers": ["example.com/hold"]}))
    _archive(mc, "ext-1")

    mc.reset_requests()
    result = run(mc, "ext-1")
    assert writes(mc) == [("delete", "ConfigMap", "second"), ("delete", "ConfigMap", "third"),
                          ("patch_status", KIND, "ext-1")]
    assert result.requeue_after == 5.0 and result.error is None
    assert mc.peek("v1", "ConfigMap", "first", "ns") is not None          # earlier phase untouched
    assert brief(mc, "ext-1", "Progressing") == (
        "True", "Retrying", "removing revision resources that are not owned by another revision")
    assert brief(mc, "ext-1", "Available") == (   # what it waits for (issue 16)
        "Unknown", "Reconciling", "Object ConfigMap.v1 ns/second: being deleted, waiting for finalizers: "
        "example.com/hold")

    mc.reset_requests()
    result = run(mc, "ext-1")   # still waiting: no second delete, no status change
    assert mc.writes == 0 and result.requeue_after == 5.0

    mc.remove_finalizer("v1", "ConfigMap", "second", "ns", "example.com/hold")
    mc.reset_requests()
    result = run(mc, "ext-1")
    assert writes(mc) == [("delete", "ConfigMap", "first"), ("patch_status", KIND, "ext-1"),
                          ("patch", KIND, "ext-1")]
    assert result.requeue_after is None
    assert brief(mc, "ext-1", "Progressing") == ("False", "Archived", "revision is archived")
    assert get_cos(mc, "ext-1")["metadata"].get("finalizers") is None


def test_archived_cos_is_never_rolled_out_again() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a")), state="Archived"))
    run(mc, "ext-1")
    assert mc.peek("v1", "ConfigMap", "a", "ns") is None
    assert brief(mc, "ext-1", "Progressing") == ("False", "Archived", "revision is archived")


def test_teardown_delete_uses_preconditions_and_conflict_is_retried() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a"))))
    run(mc, "ext-1")
    _archive(mc, "ext-1")
    from common.cluster.interface import Conflict
    mc.fail("delete", Conflict('Operation cannot be fulfilled on configmaps "a": Precondition failed'))
    result = run(mc, "ext-1")
    assert str(result.error) == ('deleting Object ConfigMap.v1 ns/a: Operation cannot be fulfilled on '
                                 'configmaps "a": Precondition failed')
    assert mc.peek("v1", "ConfigMap", "a", "ns") is not None
    run(mc, "ext-1")
    assert mc.peek("v1", "ConfigMap", "a", "ns") is None


def test_a_deleted_cos_whose_teardown_is_refused_says_why_on_its_conditions() -> None:
    """A COS in Terminating that the reconciler cannot tear down (here a 403) says so on Progressing, as an Archived
    one does: otherwise only the reconciler's log could tell an admin why the uninstall hangs."""
    from common.cluster.interface import Forbidden

    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a"))))
    run(mc, "ext-1")
    mc.remove("olm.operatorframework.io/v1", KIND, "ext-1")
    mc.fail("delete", Forbidden('configmaps "a" is forbidden: User "someone" cannot delete resource "configmaps" '
                                'in API group "" in the namespace "ns"'))
    result = run(mc, "ext-1")
    message = ('deleting Object ConfigMap.v1 ns/a: configmaps "a" is forbidden: User "someone" cannot delete resource '
               '"configmaps" in API group "" in the namespace "ns"')
    assert str(result.error) == message
    assert brief(mc, "ext-1", "Progressing") == ("True", "Retrying", message)
    assert get_cos(mc, "ext-1")["metadata"]["finalizers"] == [FINALIZER_TEARDOWN]
    run(mc, "ext-1")   # allowed again: torn down, the finalizer goes, and the COS with it
    assert mc.peek("v1", "ConfigMap", "a", "ns") is None
    assert mc.peek("olm.operatorframework.io/v1", KIND, "ext-1") is None


def test_deleted_cos_tears_down_in_reverse_order_and_releases_adopted_objects() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("base", cm("crd-like")), phase("top", deployment("web"), cm("shared"))))
    run(mc, "ext-1")
    ready_deployment(mc, "web")
    run(mc, "ext-1")
    mc.edit("apps/v1", "Deployment", "web", "ns", lambda o: o["metadata"].update({"finalizers": ["x/hold"]}))
    mc.put(cos("other-1", 5, phase("p", cm("shared")), owner="ext"))
    run(mc, "other-1")   # a newer revision adopts "shared" (and archives ext-1, which we delete anyway)
    assert _refs(mc, "ConfigMap", "shared") == [("ext-1", False), ("other-1", True)]

    mc.remove("olm.operatorframework.io/v1", KIND, "ext-1")
    assert get_cos(mc, "ext-1")["metadata"]["deletionTimestamp"]
    mc.reset_requests()
    result = run(mc, "ext-1")
    assert writes(mc) == [("delete", "Deployment", "web"), ("patch", "ConfigMap", "shared"),
                          ("patch_status", KIND, "ext-1")]   # the condition names what it waits for
    assert result.requeue_after == 5.0
    assert mc.peek("v1", "ConfigMap", "crd-like", "ns") is not None
    assert brief(mc, "ext-1", "Available") == (
        "Unknown", "Reconciling", "Object Deployment.apps/v1 ns/web: being deleted, waiting for finalizers: x/hold")

    mc.remove_finalizer("apps/v1", "Deployment", "web", "ns", "x/hold")
    mc.reset_requests()
    result = run(mc, "ext-1")
    assert writes(mc) == [("delete", "ConfigMap", "crd-like"), ("patch", KIND, "ext-1")]
    assert [e.reason for e in result.events] == ["TeardownComplete"]
    assert mc.peek("olm.operatorframework.io/v1", KIND, "ext-1") is None
    assert _refs(mc, "ConfigMap", "shared") == [("other-1", True)]


def test_orphan_deletion_leaves_objects_in_place() -> None:
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a"))))
    run(mc, "ext-1")
    mc.remove("olm.operatorframework.io/v1", KIND, "ext-1", propagation_policy="Orphan")
    mc.reset_requests()
    result = run(mc, "ext-1")
    assert writes(mc) == [("patch", KIND, "ext-1")]
    assert mc.peek("olm.operatorframework.io/v1", KIND, "ext-1") is None
    a = mc.peek("v1", "ConfigMap", "a", "ns")
    assert a is not None and "ownerReferences" not in a["metadata"]
    assert [e.message for e in result.events] == ["objects removed in reverse phase order"]


def test_orphan_finalizer_seen_before_the_garbage_collector_skips_teardown() -> None:
    """On a real server the engine may see the ``orphan`` finalizer before the GC has processed it."""
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("p", cm("a"))))
    run(mc, "ext-1")
    mc.edit("olm.operatorframework.io/v1", KIND, "ext-1", None,
            lambda o: o["metadata"].update({"finalizers": ["orphan", FINALIZER_TEARDOWN]}))
    mc.remove("olm.operatorframework.io/v1", KIND, "ext-1")
    mc.reset_requests()
    result = run(mc, "ext-1")
    assert writes(mc) == [("patch", KIND, "ext-1")]
    assert get_cos(mc, "ext-1")["metadata"]["finalizers"] == ["orphan"]
    assert mc.peek("v1", "ConfigMap", "a", "ns") is not None
    assert [e.message for e in result.events] == ["objects orphaned (propagationPolicy Orphan)"]


def test_deleted_cos_without_finalizer_or_missing_is_nothing_to_do() -> None:
    mc = cluster()
    assert run(mc, "absent").error is None
    assert mc.writes == 0


def test_owner_reference_shape() -> None:
    assert owner_reference({"metadata": {"name": "n", "uid": "u"}}) == {
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": "n", "uid": "u",
        "controller": True, "blockOwnerDeletion": True}


def test_fields_a_new_revision_stops_declaring_are_removed_at_handover() -> None:
    """Revision 1 *created* the object (a plain POST); revision 2 must still be able to drop a field of it."""
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("a", cm("settings", mode="v1", legacy="remove-me"))))
    run(mc, "ext-1")
    mc.edit("v1", "ConfigMap", "settings", "ns", lambda o: o["metadata"]["labels"].update(team="a"),
            manager="kubectl-label")
    mc.put(cos("ext-2", 2, phase("a", cm("settings", mode="v2"))))
    run(mc, "ext-2")
    live = mc.peek("v1", "ConfigMap", "settings", "ns")
    assert live["data"] == {"mode": "v2"}
    assert live["metadata"]["labels"]["team"] == "a"  # another manager's field is left alone


def test_archived_revision_that_never_resolved_is_archived_at_once() -> None:
    """rev 2 pointed at a Secret that never existed, so it created nothing; archiving it must settle."""
    from tests.engine.helpers import at

    mc = cluster()
    missing = {"ref": {"name": "typo", "namespace": "olmv1-system", "key": "k"}}
    mc.put(cos("ext-2", 2, phase("a", missing), state="Archived", progressDeadlineMinutes=10))
    mc.reset_requests()
    result = run(mc, "ext-2", now=at(20))  # past the deadline too: it does not apply to an Archived COS
    assert result.error is None and result.requeue_after is None
    assert brief(mc, "ext-2", "Progressing") == ("False", "Archived", "revision is archived")
    assert brief(mc, "ext-2", "Available") == ("Unknown", "Archived", "revision is archived")
    assert writes(mc) == [("patch_status", KIND, "ext-2")]
    mc.reset_requests()
    run(mc, "ext-2", now=at(21))
    assert mc.writes == 0


def test_archival_tears_down_what_resolves_and_reports_a_vanished_secret() -> None:
    from tests.engine.helpers import as_json, secret

    mc = cluster()
    mc.put(secret("objs", {"k": as_json(cm("from-ref"))}))
    ref = {"ref": {"name": "objs", "namespace": "olmv1-system", "key": "k"}}
    mc.put(cos("ext-1", 1, phase("a", cm("inline"), ref)))
    run(mc, "ext-1")
    assert mc.peek("v1", "ConfigMap", "from-ref", "ns") is not None
    mc.remove("v1", "Secret", "objs", "olmv1-system")
    _archive(mc, "ext-1")
    result = run(mc, "ext-1")
    assert result.error is None
    assert mc.peek("v1", "ConfigMap", "inline", "ns") is None
    assert mc.peek("v1", "ConfigMap", "from-ref", "ns") is not None  # left to the garbage collector
    assert next((e.type, e.reason, e.message) for e in result.events) == (
        "Warning", "TeardownSkipped", "getting Secret olmv1-system/objs: secrets \"objs\" not found; the garbage "
        "collector removes what this revision still owns once it is gone")
    assert brief(mc, "ext-1", "Progressing") == ("False", "Archived", "revision is archived")


def test_transient_secret_errors_retry_teardown_instead_of_skipping() -> None:
    from common.cluster.interface import InternalError
    from tests.engine.helpers import as_json, secret

    mc = cluster()
    mc.put(secret("objs", {"k": as_json(cm("from-ref"))}))
    mc.put(cos("ext-1", 1, phase("a", {"ref": {"name": "objs", "namespace": "olmv1-system", "key": "k"}})))
    run(mc, "ext-1")
    _archive(mc, "ext-1")
    mc.fail("get", InternalError("etcd is having a moment"), kind="Secret")
    result = run(mc, "ext-1")
    assert result.error is not None and "etcd is having a moment" in str(result.error)
    assert mc.peek("v1", "ConfigMap", "from-ref", "ns") is not None  # not skipped: retried
    assert "TeardownSkipped" not in [e.reason for e in result.events]


def test_deleting_a_cos_with_a_crd_and_its_cr_completes_once_the_crd_is_gone() -> None:
    """Found on a real API server: the CR (later phase) goes first, then the CRD, which waits for its own
    cleanup finalizer; once the CRD is gone its kind is no longer served, and the next pass must count the CR
    as gone (a kind that is not served has no objects) rather than fail reading it forever."""
    crd_api, cleanup = "apiextensions.k8s.io/v1", "customresourcecleanup.apiextensions.k8s.io"
    crd = {"apiVersion": crd_api, "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
              "spec": {"size": 1}}
    mc = cluster()
    mc.put(cos("ext-1", 1, phase("crds", crd), phase("crs", widget)))
    run(mc, "ext-1")
    mc.set_status(crd_api, "CustomResourceDefinition", "widgets.example.com", None,
                  {"conditions": [{"type": "Established", "status": "True"}]})
    run(mc, "ext-1")
    assert brief(mc, "ext-1", "Succeeded")[0] == "True"
    mc.edit(crd_api, "CustomResourceDefinition", "widgets.example.com", None,
            lambda o: o["metadata"].update(finalizers=[cleanup]))

    mc.remove("olm.operatorframework.io/v1", KIND, "ext-1")
    result = run(mc, "ext-1")
    assert result.error is None and result.requeue_after == 5.0
    assert mc.peek("example.com/v1", "Widget", "w", "ns") is None
    assert mc.peek(crd_api, "CustomResourceDefinition", "widgets.example.com")["metadata"]["deletionTimestamp"]
    mc.remove_finalizer(crd_api, "CustomResourceDefinition", "widgets.example.com", None, cleanup)
    result = run(mc, "ext-1")
    assert result.error is None
    assert mc.peek("olm.operatorframework.io/v1", KIND, "ext-1") is None
