"""Publishing against the in-memory API server: the crash-safe sequence, recovery, revisions, retention."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from common.bundle.packing import MAX_SECRET_BYTES
from common.bundle.phasing import Phase, sort_into_phases
from common.bundle.publish import PublishError, gc, publish, recover, retain
from common.contract import api
from common.contract.objects import Obj
from common.testing.memcluster import MemCluster

NS = api.DEFAULT_SYSTEM_NAMESPACE
COS = (api.API_VERSION, api.KIND)


class Crash(BaseException):
    """The publishing process dies (not an ApiError: nothing in publish may catch it)."""


class CrashAfter:
    """A Cluster that lets ``writes`` write requests through and dies on the next one."""

    WRITES = ("create", "apply", "merge_patch", "update", "update_status", "delete")

    def __init__(self, inner: MemCluster, writes: int) -> None:
        self.inner, self.left = inner, writes

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in self.WRITES:
            return attr

        def write(*args: Any, **kwargs: Any) -> Any:
            if self.left == 0:
                raise Crash(name)
            self.left -= 1
            return attr(*args, **kwargs)
        return write


def cm(name: str, payload: str = "v") -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "app"},
            "data": {"x": payload}}


def bundle(version: str = "1", big: bool = True) -> list[Phase]:
    """Three Secrets' worth of objects across phases (so a crash can fall between Secrets)."""
    objs: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}]
    objs += [cm(f"c{i}", ("x" * 400_000 if big else "") + version) for i in range(5)]
    objs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "app"},
                 "spec": {"replicas": 1, "template": {"metadata": {"annotations": {"v": version}}}}})
    return sort_into_phases(objs)


def secrets(mc: MemCluster) -> list[Obj]:
    return [s for s in mc.objects("v1", "Secret") if s.get("type") == api.SECRET_TYPE]


def assert_consistent(mc: MemCluster) -> None:
    """Every object-data Secret belongs to an existing COS and is owned by it; every ref resolves."""
    coses = {c["metadata"]["name"]: c for c in mc.objects(*COS)}
    names = set()
    for s in secrets(mc):
        owner = coses[s["metadata"]["labels"][api.LABEL_REVISION_NAME]]
        assert s["metadata"]["ownerReferences"] == [api.owner_reference(owner)]
        names.add((s["metadata"]["name"], owner["metadata"]["name"]))
    for cos in coses.values():
        for phase in cos["spec"]["phases"]:
            for o in phase["objects"]:
                secret = mc.peek("v1", "Secret", o["ref"]["name"], o["ref"]["namespace"])
                assert secret is not None and o["ref"]["key"] in secret["data"]
                assert (o["ref"]["name"], cos["metadata"]["name"]) in names


def full_publish_writes() -> int:
    mc = MemCluster()
    publish(mc, bundle(), owner="shop")
    return mc.writes


def test_publish_creates_secrets_then_the_cos_then_owner_references():
    mc = MemCluster()
    result = publish(mc, bundle(), owner="shop")
    assert (result.outcome, result.name, result.revision) == ("created", "shop-1", 1)
    order = [a.name for a in result.actions if a.kind == "Secret" and a.verb == "create"]
    assert sorted(order) == sorted(x["metadata"]["name"] for x in secrets(mc)) and len(order) == 3
    assert [(r.verb, r.kind, r.name) for r in mc.write_log()] == (
        [("create", "Secret", n) for n in order] + [("create", api.KIND, "shop-1")]
        + [("patch", "Secret", n) for n in order])
    assert [str(a) for a in result.actions][3] == "create ClusterObjectSet shop-1: revision 1, 3 phase(s), 7 object(s)"
    cos = mc.peek(*COS, "shop-1")
    assert cos["metadata"]["labels"] == {api.LABEL_OWNER_KIND: "ClusterExtension", api.LABEL_OWNER_NAME: "shop"}
    assert cos["spec"]["lifecycleState"] == "Active" and cos["spec"]["revision"] == 1
    assert_consistent(mc)
    for s in secrets(mc):
        assert s["immutable"] is True
        assert sum(len(base64.b64decode(v)) for v in s["data"].values()) <= MAX_SECRET_BYTES


@pytest.mark.parametrize("crash_after", range(full_publish_writes()))
def test_crash_after_each_write_then_recovery_leaves_no_orphan_and_republish_completes(crash_after):
    mc = MemCluster()
    with pytest.raises(Crash):
        publish(CrashAfter(mc, crash_after), bundle(), owner="shop")
    recover(mc, owner="shop")
    assert_consistent(mc)
    cos_left = [c["metadata"]["name"] for c in mc.objects(*COS)]
    assert cos_left == ([] if crash_after <= 3 else ["shop-1"])  # before step 2 nothing survives recovery
    if not cos_left:
        assert secrets(mc) == []
    result = publish(mc, bundle(), owner="shop")
    assert result.name == "shop-1"
    assert [c["metadata"]["name"] for c in mc.objects(*COS)] == ["shop-1"]
    assert len(secrets(mc)) == 3
    assert_consistent(mc)


@pytest.mark.parametrize("crash_after", range(full_publish_writes()))
def test_crash_then_plain_republish_recovers_too(crash_after):
    mc = MemCluster()
    with pytest.raises(Crash):
        publish(CrashAfter(mc, crash_after), bundle(), owner="shop")
    publish(mc, bundle(), owner="shop")
    assert [c["metadata"]["name"] for c in mc.objects(*COS)] == ["shop-1"]
    assert len(secrets(mc)) == 3
    assert_consistent(mc)


def test_crash_while_publishing_revision_2_keeps_revision_1_intact():
    mc = MemCluster()
    publish(mc, bundle("1"), owner="shop")
    before = {s["metadata"]["name"] for s in secrets(mc)}
    with pytest.raises(Crash):
        publish(CrashAfter(mc, 2), bundle("2"), owner="shop")
    actions = recover(mc, owner="shop")
    assert [a.verb for a in actions] == ["delete", "delete"]
    assert all(a.detail == "orphaned: its ClusterObjectSet does not exist" for a in actions)
    assert {s["metadata"]["name"] for s in secrets(mc)} == before
    assert_consistent(mc)


def test_second_publish_of_the_same_content_writes_nothing():
    mc = MemCluster()
    publish(mc, bundle(), owner="shop")
    mc.reset_requests()
    result = publish(mc, bundle(), owner="shop")
    assert (result.outcome, result.name, result.actions) == ("unchanged", "shop-1", [])
    assert mc.writes == 0
    assert result.summary() == "unchanged: ClusterObjectSet shop-1 (revision 1) already has this content"


def test_same_content_with_new_mutable_fields_is_patched_in_place():
    mc = MemCluster()
    publish(mc, bundle(), owner="shop")
    mc.reset_requests()
    result = publish(mc, bundle(), owner="shop", progress_deadline_minutes=15, bundle_version="1.2.3")
    assert result.outcome == "updated"
    assert [str(a) for a in result.actions] == [
        "patch ClusterObjectSet shop-1: mutable fields spec.progressDeadlineMinutes, "
        f"metadata.annotations[{api.ANNOTATION_BUNDLE_VERSION}]"]
    assert [(r.verb, r.name) for r in mc.write_log()] == [("patch", "shop-1")]
    cos = mc.peek(*COS, "shop-1")
    assert cos["spec"]["progressDeadlineMinutes"] == 15
    assert cos["metadata"]["annotations"] == {api.ANNOTATION_BUNDLE_VERSION: "1.2.3"}
    # and back: unset fields are removed
    assert publish(mc, bundle(), owner="shop").outcome == "updated"
    cos = mc.peek(*COS, "shop-1")
    assert "progressDeadlineMinutes" not in cos["spec"]
    assert not cos["metadata"].get("annotations")


def test_changed_bundle_creates_revision_n_plus_1_and_leaves_n_alone():
    mc = MemCluster()
    publish(mc, bundle("1", big=False), owner="shop")
    rev1 = mc.peek(*COS, "shop-1")
    result = publish(mc, bundle("2", big=False), owner="shop")
    assert (result.outcome, result.name, result.revision) == ("created", "shop-2", 2)
    assert mc.peek(*COS, "shop-1") == rev1
    assert mc.peek(*COS, "shop-2")["spec"]["revision"] == 2
    assert_consistent(mc)
    # a different collision protection is a content change too
    assert publish(mc, bundle("2", big=False), owner="shop", collision_protection="None").name == "shop-3"


def test_same_content_as_an_archived_latest_needs_a_new_revision():
    mc = MemCluster()
    publish(mc, bundle(big=False), owner="shop")
    mc.edit(*COS, "shop-1", None, lambda o: o["spec"].__setitem__("lifecycleState", "Archived"))
    assert publish(mc, bundle(big=False), owner="shop").name == "shop-2"


def test_inline_revision_with_the_same_content_counts_as_unchanged():
    from common.bundle.packing import pack
    mc = MemCluster()
    inline = pack(bundle(big=False), name="shop-1", owner="shop", inline=True)
    mc.create(inline.cos)
    assert publish(mc, bundle(big=False), owner="shop").outcome == "unchanged"


def archive(mc: MemCluster, name: str) -> None:
    mc.edit(*COS, name, None, lambda o: o["spec"].__setitem__("lifecycleState", "Archived"))


def test_retention_keeps_the_newest_5_archived_and_never_touches_active():
    mc = MemCluster()
    for i in range(1, 9):
        publish(mc, bundle(str(i), big=False), owner="shop")
    for i in range(1, 8):
        archive(mc, f"shop-{i}")
    other = mc.peek(*COS, "shop-1")
    mc.put({**other, "metadata": {"name": "other-1", "labels": {api.LABEL_OWNER_NAME: "other"}},
            "spec": {**other["spec"], "phases": []}})
    archive(mc, "other-1")
    result = publish(mc, bundle("9", big=False), owner="shop")
    assert [str(a) for a in result.actions][:2] == [
        "delete ClusterObjectSet shop-2: archived revision 2 beyond the newest 5",
        "delete ClusterObjectSet shop-1: archived revision 1 beyond the newest 5"]
    assert sorted(c["metadata"]["name"] for c in mc.objects(*COS)) == sorted(
        ["other-1"] + [f"shop-{i}" for i in range(3, 10)])
    assert_consistent(mc)  # the deleted revisions' Secrets went with them (garbage collection)
    assert not any(s["metadata"]["labels"][api.LABEL_REVISION_NAME] in ("shop-1", "shop-2") for s in secrets(mc))


def test_retention_skips_active_revisions_whatever_their_number():
    mc = MemCluster()
    for i in range(1, 11):
        publish(mc, bundle(str(i), big=False), owner="shop")
    for i in (1, 3, 4, 5, 6, 7, 8, 9):
        archive(mc, f"shop-{i}")
    actions = retain(mc, "shop")
    assert [a.name for a in actions] == ["shop-4", "shop-3", "shop-1"]
    assert sorted(c["metadata"]["name"] for c in mc.objects(*COS)) == sorted(
        ["shop-2", "shop-10"] + [f"shop-{i}" for i in range(5, 10)])


def test_recovery_adds_missing_owner_reference_and_replaces_a_stale_one():
    mc = MemCluster()
    publish(mc, bundle(big=False), owner="shop")
    (secret,) = secrets(mc)
    name = secret["metadata"]["name"]
    stale = {**api.owner_reference(mc.peek(*COS, "shop-1")), "uid": "old-uid"}
    mc.edit("v1", "Secret", name, NS, lambda o: o["metadata"].__setitem__("ownerReferences", [stale]))
    actions = gc(mc, owner="shop")
    assert [str(a) for a in actions] == [f"patch Secret {NS}/{name}: ownerReference to ClusterObjectSet shop-1"]
    assert_consistent(mc)
    assert gc(mc, owner="shop") == []


def test_dry_run_plans_without_writing():
    mc = MemCluster()
    result = publish(mc, bundle(), owner="shop", dry_run=True)
    assert mc.writes == 0
    assert result.summary() == "ClusterObjectSet shop-1 (revision 1) would be created"
    assert [a.verb for a in result.actions] == ["create"] * 4 + ["patch"] * 3


def test_a_secret_name_taken_by_other_content_is_refused():
    mc = MemCluster()
    from common.bundle.packing import pack
    packed = pack(bundle(big=False), name="shop-1", owner="shop")
    # not of the object-data type, so recovery leaves it alone; publish must not adopt it either
    forged = {**packed.secrets[0], "type": "Opaque", "data": {"k": base64.b64encode(b"{}").decode()}}
    mc.put(forged)
    with pytest.raises(PublishError) as e:
        publish(mc, bundle(big=False), owner="shop")
    assert str(e.value) == (
        f"Secret {NS}/{packed.secrets[0]['metadata']['name']} already exists with different content or labels; "
        "its name is a content address, so refusing to use it; recovery does not delete a Secret it did not "
        "pack: find out what made it, delete it, and publish again")
    assert mc.objects(*COS) == []


def test_recovery_only_touches_object_data_secrets_of_the_owner():
    mc = MemCluster()
    mine = {"apiVersion": "v1", "kind": "Secret", "type": api.SECRET_TYPE,
            "metadata": {"name": "gone-1-aa", "namespace": NS,
                         "labels": {api.LABEL_REVISION_NAME: "gone-1", api.LABEL_OWNER_NAME: "shop"}}}
    theirs = {**mine, "metadata": {**mine["metadata"], "name": "gone-1-bb",
                                   "labels": {api.LABEL_REVISION_NAME: "gone-1", api.LABEL_OWNER_NAME: "x"}}}
    opaque = {**mine, "type": "Opaque", "metadata": {**mine["metadata"], "name": "gone-1-cc"}}
    for s in (mine, theirs, opaque):
        mc.put(s)
    assert [str(a) for a in recover(mc, owner="shop")] == [
        f"delete Secret {NS}/gone-1-aa: orphaned: its ClusterObjectSet does not exist"]
    assert sorted(s["metadata"]["name"] for s in mc.objects("v1", "Secret")) == ["gone-1-bb", "gone-1-cc"]


def test_republishing_the_same_content_restores_deleted_secrets():
    mc = MemCluster()
    publish(mc, bundle(), owner="shop")
    gone = secrets(mc)[1]["metadata"]["name"]
    mc.remove("v1", "Secret", gone, NS)
    mc.reset_requests()
    result = publish(mc, bundle(), owner="shop")
    assert result.outcome == "unchanged"
    assert [str(a) for a in result.actions] == [
        f"create Secret {NS}/{gone}: missing Secret of ClusterObjectSet shop-1",
        f"patch Secret {NS}/{gone}: ownerReference to ClusterObjectSet shop-1"]
    assert len(secrets(mc)) == 3
    assert_consistent(mc)
    mc.reset_requests()
    assert publish(mc, bundle(), owner="shop").actions == [] and mc.writes == 0


# ---- races with another cosctl (a gc, or a publish of the same owner) and failures part-way ------------------

class Before:
    """A Cluster that runs ``act`` once, just before the first request ``matches(verb, args)``: another client
    acting on the same API server between two of this client's requests."""

    def __init__(self, inner: MemCluster, matches: Any, act: Any) -> None:
        self.inner, self.matches, self.act, self.done = inner, matches, act, False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if not self.done and self.matches(name, args):
                self.done = True
                self.act()
            return attr(*args, **kwargs)
        return call


def creating_the_cos(verb: str, args: tuple[Any, ...]) -> bool:
    return verb == "create" and args[0].get("kind") == api.KIND


def test_a_gc_between_steps_1_and_2_cannot_leave_the_new_revision_pointing_at_nothing():
    mc = MemCluster()
    publish(mc, bundle("1"), owner="shop")
    swept: list[str] = []
    racing = Before(mc, creating_the_cos, lambda: swept.extend(str(a) for a in gc(mc, owner="shop")))
    result = publish(racing, bundle("2"), owner="shop")
    made = [a.name for a in result.actions if a.verb == "create" and a.kind == "Secret"][:3]
    assert len(result.actions) == 7 and len(swept) == 3
    assert swept == [f"delete Secret {NS}/{n}: orphaned: its ClusterObjectSet does not exist" for n in sorted(made)]
    assert [str(a) for a in result.actions][4:] == [
        f"create Secret {NS}/{n}: deleted meanwhile (recovery run by another cosctl); made again, owned by "
        "ClusterObjectSet shop-2" for n in made]
    assert_consistent(mc)
    assert gc(mc, owner="shop") == []


def test_a_publish_that_loses_its_revision_name_to_other_content_takes_its_secrets_back():
    mc = MemCluster()
    publish(mc, bundle("1"), owner="shop")
    winner: list[Any] = []
    # the other publish runs whole after this one's recovery, before this one's first Secret
    racing = Before(mc, lambda verb, args: verb == "create",
                    lambda: winner.append(publish(mc, bundle("3"), owner="shop")))
    log: list[str] = []
    with pytest.raises(PublishError) as e:
        publish(racing, bundle("2"), owner="shop", report=lambda a: log.append(str(a)))
    assert str(e.value) == ("ClusterObjectSet shop-2 already exists with different content (another publish made "
                            "it meanwhile); publish again to make the next revision")
    assert winner[0].name == "shop-2"
    made = [line.split(": ")[0].split()[-1] for line in log if line.startswith("create Secret")]
    assert len(made) == 3
    assert log[3:] == [f"delete Secret {n}: ClusterObjectSet shop-2 was made meanwhile with other content"
                       for n in made]
    assert_consistent(mc)
    assert {s["metadata"]["labels"][api.LABEL_REVISION_NAME] for s in secrets(mc)} == {"shop-1", "shop-2"}


def test_a_publish_whose_fresh_secrets_the_winner_swept_fails_cleanly():
    mc = MemCluster()
    publish(mc, bundle("1"), owner="shop")
    racing = Before(mc, creating_the_cos, lambda: publish(mc, bundle("3"), owner="shop"))
    with pytest.raises(PublishError):
        publish(racing, bundle("2"), owner="shop")
    assert_consistent(mc)
    assert len(secrets(mc)) == 6


def test_recovery_deletes_a_secret_its_revision_does_not_refer_to_instead_of_adopting_it():
    mc = MemCluster()
    publish(mc, bundle("1", big=False), owner="shop")
    stray = {"apiVersion": "v1", "kind": "Secret", "type": api.SECRET_TYPE,
             "metadata": {"name": "shop-1-0000000000000000", "namespace": NS,
                          "labels": {api.LABEL_REVISION_NAME: "shop-1", api.LABEL_OWNER_NAME: "shop"}}}
    mc.put(stray)
    assert [str(a) for a in recover(mc, owner="shop")] == [
        f"delete Secret {NS}/shop-1-0000000000000000: orphaned: ClusterObjectSet shop-1 does not refer to it "
        "(left by a publish of other content for that revision)"]
    assert_consistent(mc)


def test_recovery_leaves_a_secret_that_a_publish_adopted_since_it_was_listed():
    mc = MemCluster()
    with pytest.raises(Crash):
        publish(CrashAfter(mc, 1), bundle("1"), owner="shop")
    (leftover,) = secrets(mc)
    name = leftover["metadata"]["name"]

    def adopted() -> None:
        mc.edit("v1", "Secret", name, NS, lambda s: s["metadata"]["labels"].__setitem__("adopted", "yes"))

    deleting = Before(mc, lambda verb, args: verb == "delete", adopted)
    assert recover(deleting, owner="shop") == []
    assert [s["metadata"]["name"] for s in secrets(mc)] == [name]


def test_an_in_place_update_is_not_refused_for_a_status_write_since_the_read():
    mc = MemCluster()
    publish(mc, bundle("1", big=False), owner="shop")

    def reconciler_writes_status() -> None:
        mc.set_status(*COS, "shop-1", None, {"conditions": []})

    patching = Before(mc, lambda verb, args: verb == "merge_patch" and args[1] == api.KIND,
                      reconciler_writes_status)
    result = publish(patching, bundle("1", big=False), owner="shop", progress_deadline_minutes=30)
    assert (result.outcome, [str(a) for a in result.actions]) == (
        "updated", ["patch ClusterObjectSet shop-1: mutable fields spec.progressDeadlineMinutes"])
    assert mc.peek(*COS, "shop-1")["spec"]["progressDeadlineMinutes"] == 30


@pytest.mark.parametrize("crash_after", range(full_publish_writes()))
def test_what_is_reported_is_exactly_what_was_written_before_a_crash(crash_after):
    mc = MemCluster()
    reported: list[Any] = []
    with pytest.raises(Crash):
        publish(CrashAfter(mc, crash_after), bundle(), owner="shop", report=reported.append)
    assert [(a.verb, a.kind, a.name) for a in reported] == [(r.verb, r.kind, r.name) for r in mc.write_log()]


def test_a_secret_changed_between_step_1_and_step_3_is_owned_once_and_reported_once():
    mc = MemCluster()

    def touched() -> None:
        for s in secrets(mc):
            mc.edit("v1", "Secret", s["metadata"]["name"], NS,
                    lambda o: o["metadata"].__setitem__("annotations", {"x": "y"}))

    racing = Before(mc, lambda verb, args: verb == "merge_patch", touched)
    result = publish(racing, bundle(big=False), owner="shop")
    assert [a.verb for a in result.actions] == ["create", "create", "patch"]
    assert_consistent(mc)


def test_gc_without_an_owner_adopts_kubectl_created_pack_output_and_trims_every_owner():
    """``cosctl pack --name web-1 | kubectl create -f -``: Secrets without owner label or ownerReference.
    Only a gc over the whole namespace finds them: it gives them their COS as owner, so deleting the COS removes
    them. It deletes none: one whose COS does not exist may be pack output kubectl is creating right now."""
    from common.bundle.packing import pack
    mc = MemCluster()
    created = pack(bundle("1", big=False), name="web-1")
    for obj in (*created.secrets, created.cos):
        mc.put(obj)
    never = pack(bundle("2", big=False), name="web-2")
    for obj in never.secrets:
        mc.put(obj)
    for n in range(1, 8):
        publish(mc, bundle(str(n), big=False), owner="shop")
        mc.edit(*COS, f"shop-{n}", None, lambda o: o["spec"].__setitem__("lifecycleState", "Archived"))
    assert gc(mc, owner="web-1") == []  # the owner label is what --owner selects by: these have none
    (kept,), (orphan,) = created.secrets, never.secrets
    assert [str(a) for a in gc(mc, owner=None)] == [
        f"patch Secret {NS}/{kept['metadata']['name']}: ownerReference to ClusterObjectSet web-1",
        "delete ClusterObjectSet shop-2: archived revision 2 beyond the newest 5"]  # shop-7's publish took shop-1
    assert mc.peek("v1", "Secret", orphan["metadata"]["name"], NS) is not None
    mc.remove(*COS, "web-1")
    assert mc.peek("v1", "Secret", kept["metadata"]["name"], NS) is None
    assert gc(mc, owner=None) == []


def test_recovery_leaves_a_secret_another_revision_refers_to():
    """A hand-made object-data Secret shared by two revisions: labelled for app-1 (deleted since), used by app-2.
    Recovery neither deletes it nor, while app-1 lives, makes app-1 its controller (deleting app-1 would take it
    from app-2)."""
    from common.bundle.packing import pack
    mc = MemCluster()
    first = pack(bundle("1", big=False), name="app-1", owner="app")
    (shared,) = first.secrets
    second = pack(bundle("1", big=False), name="app-2", owner="app")
    second.cos["spec"] = first.cos["spec"] | {"revision": 2}
    for obj in (shared, first.cos, second.cos):
        mc.put(obj)
    assert recover(mc, owner="app") == []
    mc.remove(*COS, "app-1")
    assert recover(mc, owner="app") == [] and gc(mc, owner=None) == []
    assert mc.peek("v1", "Secret", shared["metadata"]["name"], NS)["metadata"].get("ownerReferences") is None


def test_an_in_place_update_decides_again_when_its_revision_was_replaced_meanwhile():
    """Between the read and the in-place patch, another publish made shop-2 (other content) and the reconciler
    archived shop-1: the patch must not land on the archived revision and report success."""
    mc = MemCluster()
    publish(mc, bundle("1", big=False), owner="shop")

    def replaced() -> None:
        publish(mc, bundle("2", big=False), owner="shop")
        archive(mc, "shop-1")

    patching = Before(mc, lambda verb, args: verb == "merge_patch" and args[1] == api.KIND, replaced)
    result = publish(patching, bundle("1", big=False), owner="shop", progress_deadline_minutes=30)
    assert (result.outcome, result.name) == ("created", "shop-3")
    assert "progressDeadlineMinutes" not in mc.peek(*COS, "shop-1")["spec"]
    assert mc.peek(*COS, "shop-3")["spec"]["progressDeadlineMinutes"] == 30
    assert_consistent(mc)


def test_a_squatted_name_stops_the_publish_and_takes_back_what_it_made():
    """The second of three Secret names is taken by an unrelated Secret: the first one, made already, is deleted
    again (rerunning cannot help until someone deals with the squatter, so nothing may be left to pile up)."""
    from common.bundle.packing import pack
    mc = MemCluster()
    names = [s["metadata"]["name"] for s in pack(bundle(), name="shop-1", owner="shop").secrets]
    squatter = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": names[1], "namespace": NS}}
    mc.put(squatter)
    log: list[str] = []
    with pytest.raises(PublishError):
        publish(mc, bundle(), owner="shop", report=lambda a: log.append(str(a)))
    assert [line.split(":")[0] for line in log] == [f"create Secret {NS}/{names[0]}", f"delete Secret {NS}/{names[0]}"]
    assert log[1].endswith(": this publish cannot go on (below)")
    assert [s["metadata"]["name"] for s in mc.objects("v1", "Secret")] == [names[1]]


def test_a_revision_cannot_drop_a_namespace_its_objects_are_in() -> None:
    """Archiving the revision that holds the Namespace would delete it, with the new revision's objects in it."""
    mc = MemCluster()
    publish(mc, bundle("1", big=False), owner="shop")
    writes = mc.writes
    without = sort_into_phases([cm("c0", "2")])
    with pytest.raises(PublishError) as caught:
        publish(mc, without, owner="shop")
    assert str(caught.value) == (
        "ClusterObjectSet shop-1 holds Namespace app, which the new revision does not though objects of it are in it: "
        "archiving shop-1 would delete the namespace and everything in it, the new revision's objects included; no "
        "revision was created. Keep the Namespace in the revision (for a bundle: --create-namespace), or put the "
        "objects in another namespace")
    assert mc.writes == writes
    moved = sort_into_phases([{**cm("c0", "2"), "metadata": {"name": "c0", "namespace": "elsewhere"}}])
    assert publish(mc, moved, owner="shop").outcome == "created"  # the old namespace goes with the old install
