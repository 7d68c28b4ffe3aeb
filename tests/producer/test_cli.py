"""cosctl publish, gc, status (and --watch) and history against the in-memory API server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.contract import api
from common.contract.objects import Obj
from common.testing.memcluster import MemCluster
from tests.producer.helpers import cosctl

COS = (api.API_VERSION, api.KIND)
NS = api.DEFAULT_SYSTEM_NAMESPACE


def write_bundle(root: Path, image: str = "web:1") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "all.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\ndata: {a: b}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
        f"spec: {{replicas: 1, template: {{spec: {{containers: [{{name: w, image: '{image}'}}]}}}}}}\n")
    return root


class Untouchable:
    """A cluster no request may reach."""

    def __getattr__(self, name: str):
        raise AssertionError(f"the cluster was contacted ({name})")


def test_publish_prints_each_write_and_the_outcome(tmp_path):
    mc = MemCluster()
    code, out, err = cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    secret = mc.objects("v1", "Secret")[0]["metadata"]["name"]
    assert lines[0].startswith(f"create Secret {NS}/{secret}: 3 object(s), ")
    assert lines[1:] == [
        "create ClusterObjectSet shop-1: revision 1, 3 phase(s), 3 object(s)",
        f"patch Secret {NS}/{secret}: ownerReference to ClusterObjectSet shop-1",
        "ClusterObjectSet shop-1 (revision 1) created",
    ]
    code, out, err = cosctl("publish", str(tmp_path / "b"), "--owner", "shop", cluster=mc)
    assert (code, out, err) == (0, "unchanged: ClusterObjectSet shop-1 (revision 1) already has this content\n", "")


def test_publish_dry_run_prints_the_plan_and_writes_nothing(tmp_path):
    mc = MemCluster()
    code, out, _err = cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", "--dry-run",
                            cluster=mc)
    assert code == 0 and mc.writes == 0
    assert out.splitlines()[0].startswith("would create Secret ")
    assert out.splitlines()[-1] == "ClusterObjectSet shop-1 (revision 1) would be created"


def test_publish_with_bad_manifests_never_contacts_the_cluster(tmp_path):
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    code, out, err = cosctl("publish", str(tmp_path / "bad.yaml"), "--owner", "shop", cluster=Untouchable())
    assert (code, out) == (1, "")
    assert err == (f"cosctl publish: {tmp_path / 'bad.yaml'}:0 ConfigMap: missing metadata.name\n"
                   "cosctl publish: 1 problem(s) in the manifests; nothing was done\n")


def test_publish_reports_api_errors_without_a_traceback(tmp_path):
    from common.cluster.interface import Forbidden
    mc = MemCluster()
    mc.fail("create", Forbidden('secrets is forbidden: User "ci" cannot create resource "secrets"'))
    code, _out, err = cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    assert code == 1
    assert err == ('cosctl publish: the cluster refused: Forbidden: secrets is forbidden: User "ci" cannot '
                   'create resource "secrets"\n')


def test_publish_that_fails_part_way_has_shown_what_it_wrote_and_says_how_to_finish(tmp_path):
    from common.cluster.interface import Forbidden
    mc = MemCluster()
    mc.fail("patch", Forbidden('secrets "x" is forbidden: User "ci" cannot patch resource "secrets"'), kind="Secret")
    code, out, err = cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    secret = mc.objects("v1", "Secret")[0]["metadata"]["name"]
    assert code == 1
    assert out.splitlines()[0].startswith(f"create Secret {NS}/{secret}: 3 object(s), ")
    assert out.splitlines()[1:] == ["create ClusterObjectSet shop-1: revision 1, 3 phase(s), 3 object(s)"]
    assert err == ('cosctl publish: the cluster refused: Forbidden: secrets "x" is forbidden: User "ci" cannot patch '
                   'resource "secrets"\n'
                   "cosctl publish: 2 write(s) above were made before the failure; run the same command again to "
                   "finish (it completes or undoes what an interrupted run left)\n")
    assert cosctl("publish", str(tmp_path / "b"), "--owner", "shop", cluster=mc) == (0, (
        f"patch Secret {NS}/{secret}: ownerReference to ClusterObjectSet shop-1\n"
        "unchanged: ClusterObjectSet shop-1 (revision 1) already has this content\n"), "")


def test_a_refusal_that_needs_someone_to_act_gets_no_rerun_hint(tmp_path):
    """The second Secret's name is taken by a Secret publish cannot use: the first, made already, is deleted
    again, and the message says what to do; rerunning would fail the same way, so no hint says it finishes."""
    import yaml

    from common.bundle.packing import pack
    from common.cosctl._producer import load_phases
    manifests = tmp_path / "big"
    manifests.mkdir()
    (manifests / "all.yaml").write_text(yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "shop"},
          "data": {"x": str(i) * 500_000}} for i in range(3)]))
    names = [s["metadata"]["name"] for s in pack(load_phases([str(manifests)], command="t"), name="shop-1",
                                                 owner="shop").secrets]
    assert len(names) == 3
    mc = MemCluster()
    mc.put({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": names[1], "namespace": NS}})
    code, out, err = cosctl("publish", str(manifests), "--owner", "shop", cluster=mc)
    assert code == 1
    assert [line.split(":")[0] for line in out.splitlines()] == [f"create Secret {NS}/{names[0]}",
                                                                 f"delete Secret {NS}/{names[0]}"]
    assert err == (f"cosctl publish: Secret {NS}/{names[1]} already exists with different content or labels; its "
                   "name is a content address, so refusing to use it; recovery does not delete a Secret it did not "
                   "pack: find out what made it, delete it, and publish again\n")


def test_gc_cleans_orphans_and_says_when_there_is_nothing(tmp_path):
    mc = MemCluster()
    mc.put({"apiVersion": "v1", "kind": "Secret", "type": api.SECRET_TYPE,
            "metadata": {"name": "shop-9-00", "namespace": NS,
                         "labels": {api.LABEL_REVISION_NAME: "shop-9", api.LABEL_OWNER_NAME: "shop"}}})
    assert cosctl("gc", "--owner", "shop", "--dry-run", cluster=mc)[1] == (
        f"would delete Secret {NS}/shop-9-00: orphaned: its ClusterObjectSet does not exist\n")
    assert cosctl("gc", "--owner", "shop", cluster=mc)[1] == (
        f"delete Secret {NS}/shop-9-00: orphaned: its ClusterObjectSet does not exist\n")
    assert cosctl("gc", "--owner", "shop", cluster=mc) == (0, "nothing to clean up\n", "")
    mc.put({"apiVersion": "v1", "kind": "Secret", "type": api.SECRET_TYPE,
            "metadata": {"name": "web-1-00", "namespace": NS, "labels": {api.LABEL_REVISION_NAME: "web-1"}}})
    assert cosctl("gc", "--owner", "shop", cluster=mc) == (0, "nothing to clean up\n", "")
    # without --owner nothing is deleted: it may be pack output kubectl is creating, its COS still to come
    assert cosctl("gc", cluster=mc) == (0, "nothing to clean up\n", "")
    assert mc.peek("v1", "Secret", "web-1-00", NS) is not None


# ---- a stand-in reconciler, to give status something to show -----------------------------------------------

def roll_out(mc: MemCluster, name: str, *, ready: bool = True) -> None:
    """Create the COS's objects owned by it (what the reconciler would), ready or not."""
    from common.bundle import refs
    cos = mc.peek(*COS, name)
    for phase in cos["spec"]["phases"]:
        for entry in phase["objects"]:
            obj, _ = refs.resolve(mc, entry["ref"])
            obj["metadata"]["ownerReferences"] = [api.owner_reference(cos)]
            live = mc.put(obj)
            if obj["kind"] == "Namespace" and ready:
                mc.set_status("v1", "Namespace", "shop", None, {"phase": "Active"})
            if obj["kind"] == "Deployment":
                mc.set_status("apps/v1", "Deployment", "web", "shop", {
                    "observedGeneration": live["metadata"]["generation"], "replicas": 1,
                    "updatedReplicas": 1 if ready else 0,
                    "conditions": [{"type": "Available", "status": "True" if ready else "False"}]})


def set_conditions(mc: MemCluster, name: str, progressing: tuple[str, str, str], *extra: Obj) -> None:
    status, reason, message = progressing
    conditions = [{"type": "Progressing", "status": status, "reason": reason, "message": message,
                   "lastTransitionTime": "2026-01-02T03:04:05Z"}, *extra]
    mc.set_status(*COS, name, None, {"conditions": conditions})


def test_status_shows_conditions_and_each_object_applied_and_ready(tmp_path):
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    roll_out(mc, "shop-1", ready=False)
    set_conditions(mc, "shop-1", ("True", "RollingOut", "Revision 1 is rolling out."))
    code, out, err = cosctl("status", "shop-1", cluster=mc)
    assert (code, err) == (0, "")
    assert out == (
        "ClusterObjectSet shop-1: revision 1, Active, owner shop\n"
        "  Progressing  True     RollingOut                Revision 1 is rolling out.\n"
        "phase 1/3 namespaces: incomplete (0/1 ready)\n"
        '  Namespace shop: applied, not ready: missing key: "status.phase"\n'
        "phase 2/3 configuration: complete (1/1 ready)\n"
        "  ConfigMap shop/cfg: applied, ready\n"
        "phase 3/3 deploy: incomplete (0/1 ready)\n"
        '  Deployment.apps shop/web: applied, not ready: "status.updatedReplicas" != "status.replicas" '
        'expected: 0 got: 1 and .status.condition["Available"] is False\n')


def test_status_tells_objects_of_others_and_handed_over_ones(tmp_path):
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    cosctl("publish", str(write_bundle(tmp_path / "b", image="web:2")), "--owner", "shop", cluster=mc)
    roll_out(mc, "shop-2")
    mc.edit("v1", "ConfigMap", "cfg", "shop", lambda o: o["metadata"].__setitem__(
        "ownerReferences", [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "uid": "u",
                             "controller": True}]))
    assert cosctl("status", "shop-1", cluster=mc)[1] == (
        "ClusterObjectSet shop-1: revision 1, Active, owner shop\n"
        "phase 1/3 namespaces: complete (1/1 ready)\n"
        "  Namespace shop: handed over to shop-2, ready\n"
        "phase 2/3 configuration: incomplete (0/1 ready)\n"
        "  ConfigMap shop/cfg: controlled by Deployment x, ready\n"
        "phase 3/3 deploy: complete (1/1 ready)\n"
        "  Deployment.apps shop/web: handed over to shop-2, ready\n")


def test_status_json_and_unresolvable_refs(tmp_path):
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    roll_out(mc, "shop-1")
    data = json.loads(cosctl("status", "shop-1", "--output", "json", cluster=mc)[1])
    assert [(p["name"], p["complete"]) for p in data["phases"]] == [
        ("namespaces", True), ("configuration", True), ("deploy", True)]
    assert data["phases"][2]["objects"] == [
        {"object": "Deployment.apps shop/web", "state": "applied", "ready": True, "messages": [], "complete": True}]
    assert data["conditions"] == [] and data["name"] == "shop-1" and data["owner"] == "shop"
    secret = mc.objects("v1", "Secret")[0]["metadata"]["name"]
    mc.remove("v1", "Secret", secret, NS)
    out = cosctl("status", "shop-1", cluster=mc)[1]
    key = mc.peek(*COS, "shop-1")["spec"]["phases"][0]["objects"][0]["ref"]["key"]
    assert out.splitlines()[1:3] == [
        "phase 1/3 namespaces: incomplete (0/1 ready)",
        f'  ref {NS}/{secret}[{key}]: unresolved: getting Secret {NS}/{secret}: secrets "{secret}" not found']


def test_status_of_a_missing_cos():
    assert cosctl("status", "nope", cluster=MemCluster()) == (
        1, "", "cosctl status: ClusterObjectSet nope not found\n")


class Reconciler:
    """Advances the stand-in rollout one step per poll (the watch's sleep)."""

    def __init__(self, mc: MemCluster, name: str, steps: list) -> None:
        self.mc, self.name, self.steps, self.polls = mc, name, steps, 0

    def __call__(self, _seconds: float) -> None:
        self.polls += 1
        if self.steps:
            self.steps.pop(0)(self.mc, self.name)


@pytest.mark.parametrize("final,code,last", [
    (("True", "Succeeded", "Revision 1 has rolled out."), 0,
     "shop-1: rollout succeeded: Revision 1 has rolled out."),
    (("False", "Blocked", "the following secrets are not immutable (referenced secrets must have immutable "
      "set to true): olmv1-system/x"), 3,
     "shop-1: rollout blocked: the following secrets are not immutable (referenced secrets must have "
     "immutable set to true): olmv1-system/x"),
    (("False", "ProgressDeadlineExceeded", "Revision has not rolled out for 10 minute(s). Last status: x"), 4,
     "shop-1: progress deadline exceeded: Revision has not rolled out for 10 minute(s). Last status: x"),
])
def test_watch_follows_the_rollout_and_exits_with_its_outcome(tmp_path, final, code, last):
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    steps = [
        lambda m, n: set_conditions(m, n, ("True", "RollingOut", "Revision 1 is rolling out.")),
        lambda m, n: roll_out(m, n, ready=False),
        lambda m, n: roll_out(m, n, ready=True),
        lambda m, n: set_conditions(m, n, final),
    ]
    sleeper = Reconciler(mc, "shop-1", steps)
    got, out, err = cosctl("status", "shop-1", "--watch", cluster=mc, sleep=sleeper)
    lines = [line.split(" ", 1)[1] for line in out.splitlines()[:-1]]  # drop the time stamps
    assert (got, err) == (code, "")
    assert out.splitlines()[-1] == last
    assert lines[0] == ("shop-1: 0/3 phases complete, 0/3 objects ready; phase namespaces waits for "
                        "Namespace shop (absent)")
    assert lines[1] == lines[0] + "; Progressing True RollingOut"
    assert lines[2:] == [
        'shop-1: 0/3 phases complete, 1/3 objects ready; phase namespaces waits for Namespace shop '
        '(missing key: "status.phase"); Progressing True RollingOut',
        "shop-1: 3/3 phases complete, 3/3 objects ready; Progressing True RollingOut",
        f"shop-1: 3/3 phases complete, 3/3 objects ready; Progressing {final[0]} {final[1]}",
    ]
    assert sleeper.polls == 4


def test_watch_gives_up_at_the_timeout_and_follows_the_owners_active_revision(tmp_path):
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    ticks = iter(range(100))
    got, out, _err = cosctl("status", "--owner", "shop", "--watch", "--timeout", "5", "--interval", "1",
                           cluster=mc, sleep=lambda s: None, clock=lambda: next(ticks))
    assert got == 6
    assert out.splitlines()[-1] == "shop-1: still rolling out after 5 s (timeout)"
    assert len(out.splitlines()) == 2  # progress printed once: nothing changed


def test_watch_of_an_archived_revision(tmp_path):
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    mc.edit(*COS, "shop-1", None, lambda o: o["spec"].__setitem__("lifecycleState", "Archived"))
    got, out, _ = cosctl("status", "shop-1", "--watch", cluster=mc)
    assert (got, out.splitlines()[-1]) == (5, "shop-1: revision archived")


def test_history_and_owner_status(tmp_path):
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    cosctl("publish", str(write_bundle(tmp_path / "b", image="web:2")), "--owner", "shop",
           "--bundle-version", "2.0.0", cluster=mc)
    set_conditions(mc, "shop-1", ("False", "Archived", "revision is archived"))
    mc.edit(*COS, "shop-1", None, lambda o: o["spec"].__setitem__("lifecycleState", "Archived"))
    code, out, err = cosctl("history", "--owner", "shop", cluster=mc)
    assert (code, err) == (0, "")
    created = [c["metadata"]["creationTimestamp"] for c in mc.objects(*COS)]
    w = len(created[0])
    assert out.splitlines() == [
        "REVISION  NAME    LIFECYCLE  STATE     ROLLED OUT  PACKAGE  VERSION  " + "CREATED".ljust(w) + "  CHANGED",
        f"1         shop-1  Archived   Archived  no          -        -        {created[0]}  2026-01-02T03:04:05Z",
        f"2         shop-2  Active     Pending   no          -        2.0.0    {created[1]}  -",
    ]
    rows = json.loads(cosctl("history", "--owner", "shop", "--output", "json", cluster=mc)[1])
    assert [(r["revision"], r["lifecycleState"]) for r in rows] == [(1, "Archived"), (2, "Active")]
    code, out, err = cosctl("status", "--owner", "shop", cluster=mc)
    assert out.splitlines()[:3] == ["owner shop: 2 revision(s)",
                                    "     1  shop-1                         Archived  Archived",
                                    "     2  shop-2                         Active    -  version 2.0.0"]
    assert "ClusterObjectSet shop-2: revision 2, Active, owner shop, version 2.0.0" in out
    assert cosctl("history", "--owner", "nobody", cluster=mc) == (
        1, "", "cosctl history: owner nobody has no revisions\n")


def test_progression_probes_from_a_file_are_a_mutable_field(tmp_path):
    probes = tmp_path / "probes.yaml"
    probes.write_text("- selector: {type: GroupKind, groupKind: {group: apps, kind: Deployment}}\n"
                      "  assertions:\n"
                      "  - {type: ConditionEqual, conditionEqual: {type: Available, status: 'True'}}\n")
    mc = MemCluster()
    bundle = str(write_bundle(tmp_path / "b"))
    cosctl("publish", bundle, "--owner", "shop", cluster=mc)
    code, out, err = cosctl("publish", bundle, "--owner", "shop", "--progression-probes", str(probes), cluster=mc)
    assert (code, err) == (0, "")
    assert out == ("patch ClusterObjectSet shop-1: mutable fields spec.progressionProbes\n"
                   "unchanged content: ClusterObjectSet shop-1 (revision 1) updated in place (mutable fields only)\n")
    assert mc.peek(*COS, "shop-1")["spec"]["progressionProbes"][0]["selector"]["type"] == "GroupKind"
    probes.write_text("selector: {}\n")
    code, out, err = cosctl("pack", bundle, "--name", "x", "--progression-probes", str(probes))
    assert (code, out, err) == (1, "", f"cosctl pack: {probes}: progression probes must be a list\n")


@pytest.mark.parametrize(("given", "problem"), [
    ("dir", "cannot read: Is a directory"),
    ("/dev/zero", "more than 1048576 bytes"),   # a stream that never ends: refused past the limit
    ("latin1", "not UTF-8 text"),
])
def test_an_unusable_progression_probes_file_is_named(tmp_path, given, problem):
    path = {"dir": str(tmp_path), "/dev/zero": "/dev/zero", "latin1": str(tmp_path / "p.yaml")}[given]
    (tmp_path / "p.yaml").write_bytes(b"- selector: \xff\n")
    bundle = str(write_bundle(tmp_path / "b"))
    code, out, err = cosctl("pack", bundle, "--name", "x", "--progression-probes", path)
    assert (code, out, err) == (1, "", f"cosctl pack: {path}: {problem}\n")


DENIED = "the admission webhook would deny the revision as rendered (nothing was written):"


@pytest.mark.parametrize(("content", "problem"), [
    ("- 1\n- 2\n", "{path}: invalid progression probes: must be a list of 1..20 probe objects"),
    ("[]\n", "{path}: invalid progression probes: must be a list of 1..20 probe objects"),
    ("- selector: {type: GroupKind, groupKind: {group: apps, kind: Deployment}}\n",
     DENIED + "\n  {path}: spec.progressionProbes[0].assertions: Required value"),
    ("- {}\n", DENIED + "\n  {path}: spec.progressionProbes[0].assertions: Required value"
                       "\n  {path}: spec.progressionProbes[0].selector: Required value"),
], ids=["numbers", "empty", "no-assertions", "empty-probe"])
def test_progression_probes_of_the_wrong_shape_are_refused_naming_the_file(tmp_path, content, problem):
    """Refused as the other problems of the file are (the webhook's own words, by the file instead of the COS)."""
    path = tmp_path / "p.yaml"
    path.write_text(content)
    bundle = str(write_bundle(tmp_path / "b"))
    code, out, err = cosctl("pack", bundle, "--name", "x", "--progression-probes", str(path))
    assert (code, out, err) == (1, "", f"cosctl pack: {problem.format(path=path)}\n")


def test_status_notes_progression_probes_it_cannot_evaluate(tmp_path):
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b")), "--owner", "shop", cluster=mc)
    mc.edit(*COS, "shop-1", None, lambda o: o["spec"].__setitem__(
        "progressionProbes", [{"selector": {"type": "Nope"}, "assertions": []}]))
    out = cosctl("status", "shop-1", cluster=mc)[1]
    assert out.splitlines()[1] == ("  note: progressionProbes not evaluated (built-in probes only): "
                                   "spec.progressionProbes[0].selector.type: unsupported value 'Nope'")
