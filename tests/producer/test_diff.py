"""cosctl diff: the comparison itself (common.bundle.diff), offline between directories and pack outputs,
and against revisions on the in-memory API server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.bundle.diff import diff, mask_secrets
from common.bundle.phasing import Phase
from common.contract import api
from common.cosctl._producer import ConnectError
from common.testing.memcluster import MemCluster
from tests.producer.helpers import cosctl
from tests.producer.test_cli import Untouchable, write_bundle

NS = api.DEFAULT_SYSTEM_NAMESPACE
COS = (api.API_VERSION, api.KIND)


def cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop"}, "data": data}


def secret(**data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "shop"},
            "stringData": data}


def test_objects_added_removed_changed_moved_and_unchanged():
    a = [Phase("one", [cm("same", a="1"), cm("edit", a="1"), cm("gone")]), Phase("two", [cm("move")])]
    b = [Phase("one", [cm("same", a="1"), cm("edit", a="2"), cm("move"), cm("new")]), Phase("two", [])]
    result = diff(a, b, a_name="A", b_name="B")
    assert [(c.object, c.change, c.from_phase, c.to_phase) for c in result.changes] == [
        ("ConfigMap shop/edit", "changed", "one", "one"),
        ("ConfigMap shop/move", "moved", "two", "one"),
        ("ConfigMap shop/new", "added", None, "one"),
        ("ConfigMap shop/gone", "removed", "one", None),
    ]
    assert result.unchanged == 1 and result.different
    assert result.changes[0].diff == (
        "--- A ConfigMap shop/edit\n+++ B ConfigMap shop/edit\n@@ -1,6 +1,6 @@\n apiVersion: v1\n data:\n"
        "-  a: '1'\n+  a: '2'\n kind: ConfigMap\n metadata:\n   name: edit\n")
    assert result.changes[1].diff == ""
    assert result.summary() == "1 added, 1 removed, 1 changed, 1 moved, 1 unchanged"
    assert result.render().splitlines()[:3] == ["--- A", "+++ B", "changed  ConfigMap shop/edit (phase one)"]
    assert "moved    ConfigMap shop/move (phase two -> one)" in result.render().splitlines()
    assert not diff(a, a).different


def test_objects_are_cleaned_as_publish_cleans_them():
    live = cm("x", a="1")
    exported = {**cm("x", a="1"), "status": {"x": 1}}
    exported["metadata"] = {**exported["metadata"], "uid": "u", "resourceVersion": "7", "managedFields": []}
    assert not diff([Phase("p", [live])], [Phase("p", [exported])]).different


def test_secret_values_never_appear_only_that_they_changed():
    a = [Phase("configuration", [secret(password="hunter2", user="admin", old="zzz-old")])]
    b = [Phase("configuration", [secret(password="s3cret-new", user="admin", extra="x-new-value")])]
    result = diff(a, b)
    text = result.render() + json.dumps(result.to_json())
    for value in ("hunter2", "s3cret-new", "admin", "zzz-old", "x-new-value"):
        assert value not in text
    assert result.changes[0].diff.splitlines()[-6:] == [
        " stringData:", "-  old: <hidden>", "-  password: <hidden>", "+  extra: <hidden>", "+  password: <changed>",
        "   user: <hidden>"]
    added = diff([], b).changes[0].diff
    assert "+  password: <hidden>" in added and "s3cret-new" not in added
    # a non-Secret keeps its values; a Secret's data (base64) is masked like stringData
    assert mask_secrets(cm("x", a="1"), None)[0] == cm("x", a="1")
    masked = mask_secrets({"apiVersion": "v1", "kind": "Secret", "data": {"k": "aGk="}}, None)[0]
    assert masked == {"apiVersion": "v1", "kind": "Secret", "data": {"k": "<hidden>"}}


def test_an_exported_secrets_last_applied_annotation_is_masked_too():
    def exported(password: str) -> dict:
        s = secret(password=password)
        s["metadata"]["annotations"] = {"team": "shop", "kubectl.kubernetes.io/last-applied-configuration":
                                        json.dumps({"stringData": {"password": password}})}
        return s
    result = diff([Phase("p", [exported("hunter2")])], [Phase("p", [exported("s3cret")])])
    text = result.render()
    assert "hunter2" not in text and "s3cret" not in text
    assert "-    kubectl.kubernetes.io/last-applied-configuration: <hidden>" in text.replace("    -", "-").splitlines()
    assert "+    kubectl.kubernetes.io/last-applied-configuration: <changed>" in text.replace("    +", "+").splitlines()
    assert "team: shop" in text
    a, b = exported("same"), exported("same")
    assert mask_secrets(a, b)[1]["metadata"]["annotations"] == {
        "team": "shop", "kubectl.kubernetes.io/last-applied-configuration": "<hidden>"}
    assert a == exported("same")  # the inputs are not changed
    # a Secret whose data is not a mapping (invalid, but it must not leak either)
    odd_a = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}, "data": "plain-text-1"}
    odd_b = {**odd_a, "data": "plain-text-2"}
    assert [o["data"] for o in mask_secrets(odd_a, odd_b)] == ["<hidden>", "<changed>"]


def test_offline_between_directories_and_pack_outputs(tmp_path):
    a, b = write_bundle(tmp_path / "a"), write_bundle(tmp_path / "b", image="web:2")
    code, out, err = cosctl("diff", str(a), str(b), cluster=Untouchable())
    assert (code, err) == (1, "")
    assert out.splitlines()[2] == "changed  Deployment.apps shop/web (phase deploy)"
    assert "    -      - image: web:1" in out.splitlines() and "    +      - image: web:2" in out.splitlines()
    assert out.splitlines()[-1] == "0 added, 0 removed, 1 changed, 0 moved, 2 unchanged"
    assert cosctl("diff", str(a), str(a), cluster=Untouchable()) == (
        0, f"--- {a}\n+++ {a}\n0 added, 0 removed, 0 changed, 0 moved, 3 unchanged\n", "")
    # rendered by cosctl pack (refs resolved against the Secrets beside the COS) compares the same
    cosctl("pack", str(a), "--owner", "shop", "--revision", "1", "-o", str(tmp_path / "ra"))
    (tmp_path / "rb.yaml").write_text(cosctl("pack", str(b), "--owner", "shop", "--revision", "2")[1])
    code, out, _ = cosctl("diff", str(tmp_path / "ra"), str(tmp_path / "rb.yaml"), "-o", "json",
                          cluster=Untouchable())
    data = json.loads(out)
    assert code == 1 and data["counts"] == {"added": 0, "removed": 0, "changed": 1, "moved": 0}
    assert data["changes"][0]["object"] == "Deployment.apps shop/web" and data["unchanged"] == 2
    assert cosctl("diff", str(tmp_path / "ra"), str(a), cluster=Untouchable())[0] == 0


def test_trouble_exits_2_with_a_message(tmp_path):
    a = write_bundle(tmp_path / "a")
    cosctl("pack", str(a), "--owner", "shop", "-o", str(tmp_path / "r"))
    for f in (tmp_path / "r").glob("secret-*.yaml"):
        f.unlink()
    code, out, err = cosctl("diff", str(tmp_path / "r"), str(a), cluster=Untouchable())
    assert (code, out) == (2, "")
    assert err.startswith("cosctl diff: the content of ClusterObjectSet shop-1 is not available: "
                          f"phase namespaces object 0: Secret {NS}/shop-1-")
    assert err.rstrip().endswith("not found")
    assert cosctl("diff", str(a), cluster=Untouchable()) == (
        2, "", "cosctl diff: give two revisions to compare (A B), or manifests with --owner OWNER\n")
    (tmp_path / "bad.yaml").write_text("kind: ConfigMap\n")
    code, _, err = cosctl("diff", str(a), str(tmp_path / "bad.yaml"), cluster=Untouchable())
    assert code == 2 and "missing apiVersion" in err


@pytest.fixture
def published(tmp_path) -> tuple[MemCluster, Path]:
    mc = MemCluster()
    cosctl("publish", str(write_bundle(tmp_path / "b1")), "--owner", "shop", cluster=mc)
    cosctl("publish", str(write_bundle(tmp_path / "b2", image="web:2")), "--owner", "shop", cluster=mc)
    return mc, tmp_path


def test_what_publish_would_change_against_the_latest_active_revision(published):
    mc, tmp = published
    code, out, _ = cosctl("diff", str(tmp / "b1"), "--owner", "shop", cluster=mc)
    assert code == 1
    assert out.splitlines()[:2] == ["--- shop-2", f"+++ {tmp / 'b1'}"]
    assert "    -      - image: web:2" in out.splitlines() and "    +      - image: web:1" in out.splitlines()
    assert cosctl("diff", str(tmp / "b2"), "--owner", "shop", cluster=mc)[0] == 0
    assert mc.writes == 2 * 3  # the two publishes only: diff never writes
    assert cosctl("diff", str(tmp / "absent"), "--owner", "shop", cluster=mc) == (
        2, "", f"cosctl diff: {tmp / 'absent'}: no such file or directory\n")
    code, out, _ = cosctl("diff", str(tmp / "b1"), "--owner", "nobody", cluster=mc)
    assert code == 1 and out.splitlines()[0] == "--- (owner nobody has no Active revision)"
    assert out.splitlines()[-1] == "3 added, 0 removed, 0 changed, 0 moved, 0 unchanged"


def test_two_revisions_on_the_cluster_by_name_or_number(published):
    mc, _ = published
    by_name = cosctl("diff", "shop-1", "shop-2", cluster=mc)
    by_number = cosctl("diff", "1", "2", "--owner", "shop", cluster=mc)
    assert by_name == by_number and by_name[0] == 1
    assert by_name[1].splitlines()[:3] == [
        "--- shop-1", "+++ shop-2", "changed  Deployment.apps shop/web (phase deploy)"]
    assert cosctl("diff", "shop-1", "shop-9", cluster=mc) == (
        2, "", "cosctl diff: shop-9: neither a file or directory nor a ClusterObjectSet on the cluster\n")
    assert cosctl("diff", "1", "7", "--owner", "shop", cluster=mc) == (
        2, "", "cosctl diff: owner shop has no revision 7\n")
    secret = mc.peek(*COS, "shop-1")["spec"]["phases"][0]["objects"][0]["ref"]["name"]
    mc.remove("v1", "Secret", secret, NS)
    code, _, err = cosctl("diff", "shop-1", "shop-2", cluster=mc)
    assert code == 2
    assert err == ("cosctl diff: the content of ClusterObjectSet shop-1 is not available: "
                   f"phase namespaces object 0: Secret {NS}/{secret} not found; "
                   f"phase configuration object 0: Secret {NS}/{secret} not found; "
                   f"phase deploy object 0: Secret {NS}/{secret} not found\n")


# Issue 17: paths and revision names, multi-line strings, --stat.

def _no_cluster(_args):
    raise ConnectError("cannot load the cluster configuration: no kubeconfig here")


@pytest.mark.parametrize("missing", ["/nonexistent", "missing/dir", "v2.yaml", "v2.yml", "v2.json", "./v2", "../v2",
                                     ".v2", "~/no-such-cosctl-dir"])
def test_a_missing_path_is_reported_as_missing_before_any_cluster_is_asked(tmp_path, monkeypatch, missing):
    monkeypatch.chdir(tmp_path)
    write_bundle(tmp_path / "v1")
    expected = (2, "", f"cosctl diff: {missing}: no such file or directory\n")
    assert cosctl("diff", "v1", missing, cluster=Untouchable()) == expected
    assert cosctl("diff", missing, "v1", cluster=Untouchable()) == expected
    assert cosctl("diff", missing, "--owner", "shop", cluster=Untouchable()) == expected
    # a bare name is a revision name: not even a mistyped one is looked up before the path is found missing
    assert cosctl("diff", "v9", missing, cluster=Untouchable()) == expected


def test_a_bare_name_that_is_neither_a_file_nor_reachable_on_a_cluster_says_both(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_bundle(tmp_path / "v1")
    assert cosctl("diff", "v1", "v9", connect=_no_cluster) == (
        2, "", "cosctl diff: v9: no such file or directory, nor could a ClusterObjectSet v9 be looked up on a "
               "cluster: cannot load the cluster configuration: no kubeconfig here\n")
    assert cosctl("diff", "1", "v1", "--owner", "shop", connect=_no_cluster) == (
        2, "", "cosctl diff: 1: no such file or directory, nor could revision 1 of owner shop be looked up on a "
               "cluster: cannot load the cluster configuration: no kubeconfig here\n")
    # found neither on disk nor on a reachable cluster
    assert cosctl("diff", "v1", "v9", cluster=MemCluster()) == (
        2, "", "cosctl diff: v9: neither a file or directory nor a ClusterObjectSet on the cluster\n")
    # an existing directory with a bare name is read from disk, and a quoted ~ is the home directory
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cosctl("diff", "v1", "~/v1", cluster=Untouchable()) == (
        0, "--- v1\n+++ ~/v1\n0 added, 0 removed, 0 changed, 0 moved, 3 unchanged\n", "")


def _conf(lines: list[str]) -> dict:
    return {**cm("conf"), "data": {"app.conf": "\n".join(lines) + "\n", "tail": "no newline\nat the end"}}


def test_multi_line_strings_are_block_scalars_so_one_changed_line_is_one_changed_line():
    lines = [f"line {i}: value" for i in range(50)]
    changed = [*lines[:25], "line 25: changed", *lines[26:]]
    result = diff([Phase("configuration", [_conf(lines)])], [Phase("configuration", [_conf(changed)])],
                  a_name="A", b_name="B")
    assert result.changes[0].diff == (
        "--- A ConfigMap shop/conf\n+++ B ConfigMap shop/conf\n@@ -26,7 +26,7 @@\n"
        "     line 22: value\n     line 23: value\n     line 24: value\n"
        "-    line 25: value\n+    line 25: changed\n"
        "     line 26: value\n     line 27: value\n     line 28: value\n")
    added = diff([], [Phase("configuration", [_conf(lines[:2])])], a_name="A", b_name="B").changes[0].diff
    assert added.splitlines()[3:] == [
        "+apiVersion: v1", "+data:", "+  app.conf: |", "+    line 0: value", "+    line 1: value",
        "+  tail: |-", "+    no newline", "+    at the end", "+kind: ConfigMap", "+metadata:", "+  name: conf",
        "+  namespace: shop"]
    # where a block scalar cannot hold the string exactly (trailing spaces), the emitter quotes it
    spaced = diff([], [Phase("c", [{**cm("s"), "data": {"k": "a  \nb"}}])]).changes[0].diff
    assert "+  k: \"a  \\nb\"" in spaced.splitlines()


def _example(v2: bool) -> list[Phase]:
    settings = {**cm("settings"), "data": {"currency": "EUR", "page-size": "50" if v2 else "20"}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
               "spec": {"ports": [{"port": 80, "targetPort": 9090 if v2 else 8080}], "selector": {"app": "web"}}}
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "web", "namespace": "shop"},
              "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress"]}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "bigs.example.com"}, "spec": {"versions": [f"v{i}" for i in range(120)]}}
    return [*([Phase("policies", [policy])] if v2 else []),
            Phase("configuration", [settings, secret(password="s3cret-2" if v2 else "s3cret-1")]),
            *([] if v2 else [Phase("crds", [crd])]),
            Phase("infrastructure", [service]),
            Phase("deploy", [cm("unchanged")])]


def test_stat_is_one_line_per_object_with_line_counts_and_the_totals():
    result = diff(_example(False), _example(True), a_name="shop-1", b_name="v2")
    assert result.render_stat() == (
        "--- shop-1\n+++ v2\n"
        "added    NetworkPolicy.networking.k8s.io shop/web (phase policies)                   |  11 ++++\n"
        "changed  ConfigMap shop/settings (phase configuration)                               |   2 +-\n"
        "changed  Secret shop/creds (phase configuration)                                     |   2 +-\n"
        "changed  Service shop/web (phase infrastructure)                                     |   2 +-\n"
        "removed  CustomResourceDefinition.apiextensions.k8s.io bigs.example.com (phase crds) | 126 "
        + "-" * 50 + "\n"  # the longest bar is scaled to 50 characters, the others with it
        "1 added, 1 removed, 3 changed, 0 moved, 1 unchanged; 14 insertions(+), 129 deletions(-)\n")
    assert "s3cret" not in result.render_stat()
    moved = diff([Phase("a", [cm("x")])], [Phase("b", [cm("x")])]).render_stat()
    assert moved.splitlines()[2:] == ["moved    ConfigMap shop/x (phase a -> b) | 0",
                                      "0 added, 0 removed, 0 changed, 1 moved, 0 unchanged; 0 insertions(+), "
                                      "0 deletions(-)"]
    assert diff([], []).render_stat() == ("--- a\n+++ b\n0 added, 0 removed, 0 changed, 0 moved, 0 unchanged; "
                                          "0 insertions(+), 0 deletions(-)\n")


def test_stat_on_the_command_line_and_in_json(tmp_path):
    a, b = write_bundle(tmp_path / "a"), write_bundle(tmp_path / "b", image="web:2")
    assert cosctl("diff", str(a), str(b), "--stat", cluster=Untouchable()) == (
        1, f"--- {a}\n+++ {b}\nchanged  Deployment.apps shop/web (phase deploy) | 2 +-\n"
           "0 added, 0 removed, 1 changed, 0 moved, 2 unchanged; 1 insertion(+), 1 deletion(-)\n", "")
    code, out, _ = cosctl("diff", str(a), str(b), "--stat", "-o", "json", cluster=Untouchable())
    assert code == 1 and json.loads(out) == {
        "from": str(a), "to": str(b), "different": True,
        "counts": {"added": 0, "removed": 0, "changed": 1, "moved": 0}, "unchanged": 2,
        "insertions": 1, "deletions": 1,
        "changes": [{"object": "Deployment.apps shop/web", "change": "changed", "fromPhase": "deploy",
                     "toPhase": "deploy", "insertions": 1, "deletions": 1}],
        "crdUpgradeSafety": [], "permissions": [], "dependencies": []}
    code, out, _ = cosctl("diff", str(a), str(b), "-o", "json", cluster=Untouchable())
    assert json.loads(out)["changes"][0]["diff"].startswith(f"--- {a} Deployment.apps shop/web\n")
    assert cosctl("diff", str(a), str(a), "--stat", cluster=Untouchable()) == (
        0, f"--- {a}\n+++ {a}\n0 added, 0 removed, 0 changed, 0 moved, 3 unchanged; 0 insertions(+), "
           "0 deletions(-)\n", "")
