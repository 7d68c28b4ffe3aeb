"""cosctl rollback against the in-memory API server: what it publishes, which revision it picks, and the
errors when the target cannot be restored."""

from __future__ import annotations

import pytest

from common.bundle.publish import content_of
from common.contract import api
from common.testing.memcluster import MemCluster
from tests.producer.helpers import cosctl
from tests.producer.test_cli import set_conditions, write_bundle

NS = api.DEFAULT_SYSTEM_NAMESPACE
COS = (api.API_VERSION, api.KIND)
SUCCEEDED = {"type": "Succeeded", "status": "True", "reason": "Succeeded", "message": "Revision succeeded rolling out.",
             "lastTransitionTime": "2026-01-02T03:04:05Z"}


def succeed(mc: MemCluster, name: str) -> None:
    set_conditions(mc, name, ("True", "Succeeded", "Revision has rolled out."), SUCCEEDED)


@pytest.fixture
def three(tmp_path) -> MemCluster:
    """shop-1 (succeeded, archived), shop-2 (succeeded, archived), shop-3 (failing: deadline exceeded)."""
    mc = MemCluster()
    for n, image in ((1, "web:1"), (2, "web:2"), (3, "web:3")):
        cosctl("publish", str(write_bundle(tmp_path / f"b{n}", image=image)), "--owner", "shop",
               "--bundle-version", f"1.{n}", "--progress-deadline-minutes", "15", cluster=mc)
    for name in ("shop-1", "shop-2"):
        succeed(mc, name)
        mc.edit(*COS, name, None, lambda o: o["spec"].__setitem__("lifecycleState", "Archived"))
    set_conditions(mc, "shop-3", ("False", "ProgressDeadlineExceeded", "Revision has not rolled out."))
    return mc


def test_default_target_is_the_previous_revision_that_succeeded(three):
    mc = three
    code, out, err = cosctl("rollback", "--owner", "shop", cluster=mc)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    secret = [s for s in mc.objects("v1", "Secret") if s["metadata"]["labels"][api.LABEL_REVISION_NAME] == "shop-4"]
    assert len(secret) == 1
    name = secret[0]["metadata"]["name"]
    assert lines[0] == "rolling back owner shop to revision 2 (shop-2)"
    assert lines[1].startswith(f"create Secret {NS}/{name}: 3 object(s), ")
    assert lines[2:] == [
        "create ClusterObjectSet shop-4: revision 4, 3 phase(s), 3 object(s)",
        f"patch Secret {NS}/{name}: ownerReference to ClusterObjectSet shop-4",
        "ClusterObjectSet shop-4 (revision 4) created",
        "follow it: cosctl status shop-4 --watch",
    ]
    new, old = mc.peek(*COS, "shop-4"), mc.peek(*COS, "shop-2")
    assert content_of(new["spec"]) == content_of(old["spec"])
    assert new["spec"]["lifecycleState"] == "Active" and new["spec"]["progressDeadlineMinutes"] == 15
    assert new["metadata"]["annotations"] == {api.ANNOTATION_BUNDLE_VERSION: "1.2"}
    assert new["metadata"]["labels"] == {api.LABEL_OWNER_KIND: "ClusterExtension", api.LABEL_OWNER_NAME: "shop"}
    assert mc.peek(*COS, "shop-3")["spec"]["lifecycleState"] == "Active"  # the reconciler archives it
    # the same rollback again: the latest Active revision already has that content
    assert cosctl("rollback", "--owner", "shop", cluster=mc)[1].splitlines() == [
        "rolling back owner shop to revision 2 (shop-2)",
        "unchanged: ClusterObjectSet shop-4 (revision 4) already has this content"]


def test_to_revision_and_dry_run(three):
    mc = three
    before = mc.writes
    code, out, _ = cosctl("rollback", "--owner", "shop", "--to-revision", "1", "--dry-run", cluster=mc)
    assert code == 0 and mc.writes == before
    assert out.splitlines()[0] == "rolling back owner shop to revision 1 (shop-1)"
    assert out.splitlines()[1].startswith(f"would create Secret {NS}/shop-4-")
    assert out.splitlines()[-1] == "ClusterObjectSet shop-4 (revision 4) would be created"
    assert cosctl("rollback", "--owner", "shop", "--to-revision", "1", cluster=mc)[0] == 0
    assert content_of(mc.peek(*COS, "shop-4")["spec"]) == content_of(mc.peek(*COS, "shop-1")["spec"])


def test_per_entry_collision_protection_is_kept(three):
    mc = three

    def mark(o):
        o["spec"]["phases"][2]["collisionProtection"] = "IfNoController"
        o["spec"]["phases"][2]["objects"][0]["collisionProtection"] = "None"
    mc.edit(*COS, "shop-2", None, mark)
    assert cosctl("rollback", "--owner", "shop", cluster=mc)[0] == 0
    phase = mc.peek(*COS, "shop-4")["spec"]["phases"][2]
    assert phase["collisionProtection"] == "IfNoController" and phase["objects"][0]["collisionProtection"] == "None"


def test_a_target_removed_by_retention_or_whose_secrets_are_gone(three):
    mc = three
    before = mc.writes
    assert cosctl("rollback", "--owner", "shop", "--to-revision", "0", cluster=mc) == (
        1, "", "cosctl rollback: revision 0 of owner shop does not exist (any more: retention keeps only the "
               "newest archived revisions); revisions on the cluster: 1, 2, 3\n")
    assert cosctl("rollback", "--owner", "shop", "--to-revision", "3", cluster=mc) == (
        1, "", "cosctl rollback: revision 3 (shop-3) is already the latest revision of owner shop\n")
    secret = mc.peek(*COS, "shop-2")["spec"]["phases"][0]["objects"][0]["ref"]["name"]
    mc.remove("v1", "Secret", secret, NS)
    code, out, err = cosctl("rollback", "--owner", "shop", cluster=mc)
    assert (code, out) == (1, "")
    assert err == ("cosctl rollback: cannot roll back to revision 2: the content of ClusterObjectSet shop-2 is not "
                   f"available: phase namespaces object 0: Secret {NS}/{secret} not found; "
                   f"phase configuration object 0: Secret {NS}/{secret} not found; "
                   f"phase deploy object 0: Secret {NS}/{secret} not found\n")
    assert mc.writes == before
    assert cosctl("rollback", "--owner", "nobody", cluster=mc) == (
        1, "", "cosctl rollback: owner nobody has no revisions\n")


def test_nothing_succeeded_before_the_latest(tmp_path):
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    assert cosctl("rollback", "--owner", "shop", cluster=mc) == (
        1, "", "cosctl rollback: owner shop has no earlier revision that succeeded to roll back to (revisions "
               "on the cluster: 1); name one with --to-revision\n")


def test_rerunning_a_rollback_that_failed_part_way_finishes_it_instead_of_going_back(tmp_path):
    """shop-2 is bad but its probes passed (Succeeded latches); the rollback to shop-1 fails after creating shop-3.
    The default target of the rerun is still shop-1, not shop-2, the revision being rolled back from."""
    from common.cluster.interface import InternalError
    mc = MemCluster()
    for n in (1, 2):
        cosctl("publish", str(write_bundle(tmp_path / f"b{n}", image=f"web:{n}")), "--owner", "shop", cluster=mc)
        succeed(mc, f"shop-{n}")
    mc.edit(*COS, "shop-1", None, lambda o: o["spec"].__setitem__("lifecycleState", "Archived"))
    mc.fail("patch", InternalError("etcdserver: request timed out"), kind="Secret")
    code, out, err = cosctl("rollback", "--owner", "shop", cluster=mc)
    secret = next(s["metadata"]["name"] for s in mc.objects("v1", "Secret")
                  if s["metadata"]["labels"][api.LABEL_REVISION_NAME] == "shop-3")
    assert code == 1
    assert out.splitlines()[0] == "rolling back owner shop to revision 1 (shop-1)"
    assert out.splitlines()[1].startswith(f"create Secret {NS}/{secret}: 3 object(s), ")
    assert out.splitlines()[2:] == ["create ClusterObjectSet shop-3: revision 3, 3 phase(s), 3 object(s)"]
    assert err == ("cosctl rollback: the cluster refused: InternalError: etcdserver: request timed out\n"
                   "cosctl rollback: 2 write(s) above were made before the failure; run the same command again "
                   "to finish (it completes or undoes what an interrupted run left)\n")
    assert cosctl("rollback", "--owner", "shop", cluster=mc) == (0, (
        "rolling back owner shop to revision 1 (shop-1)\n"
        f"patch Secret {NS}/{secret}: ownerReference to ClusterObjectSet shop-3\n"
        "unchanged: ClusterObjectSet shop-3 (revision 3) already has this content\n"), "")
    assert sorted(c["metadata"]["name"] for c in mc.objects(*COS)) == ["shop-1", "shop-2", "shop-3"]
    # once the rollback succeeded, the default goes back one more successful revision, as before
    succeed(mc, "shop-3")
    assert cosctl("rollback", "--owner", "shop", "--dry-run", cluster=mc)[1].splitlines()[0] == (
        "rolling back owner shop to revision 2 (shop-2)")


def test_a_rollback_whose_revision_failed_is_not_taken_for_one_under_way(tmp_path):
    """shop-1 and shop-2 succeeded; shop-3 (shop-1's content) missed its deadline: the default rollback goes to
    shop-2, the newest earlier revision that succeeded, as it always did."""
    mc = MemCluster()
    for n in (1, 2):
        cosctl("publish", str(write_bundle(tmp_path / f"b{n}", image=f"web:{n}")), "--owner", "shop", cluster=mc)
        succeed(mc, f"shop-{n}")
    cosctl("rollback", "--owner", "shop", "--to-revision", "1", cluster=mc)
    set_conditions(mc, "shop-3", ("False", "ProgressDeadlineExceeded", "Revision has not rolled out."))
    assert cosctl("rollback", "--owner", "shop", "--dry-run", cluster=mc)[1].splitlines()[0] == (
        "rolling back owner shop to revision 2 (shop-2)")
