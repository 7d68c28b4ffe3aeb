"""``cosctl publish`` and ``rollback`` run OLM v1's CRD upgrade safety check through the real client adapter
against the fake API server over HTTP: the CRD reads they send, the refusal (nothing written), the override, and
what is never checked."""

from __future__ import annotations

import json
from pathlib import Path

from common.contract import api
from common.cosctl import main
from tests.support.fake_apiserver import FakeApiServer, Kind

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
COS = (api.API_VERSION, api.KIND)


def widget_crd(props: dict) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": {"type": "object", "properties": props}}}}}]}}


def manifests(tmp_path: Path, name: str, props: dict) -> str:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "crd.json").write_text(json.dumps(widget_crd(props)))
    (directory / "cm.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: "
                                       "default}\n")
    return str(directory)


def on_cluster(server: FakeApiServer, props: dict) -> None:
    """The CRD as the cluster holds it once applied: with its stored version recorded."""
    server.put_object({**widget_crd(props), "status": {"storedVersions": ["v1"]}})


UNSAFE = {"size": {"type": "string", "enum": ["small", "large"]}}
NARROWER = {"size": {"type": "string", "enum": ["small"]}}


def test_publish_refuses_a_crd_that_would_break_stored_resources_and_writes_nothing(server, kubeconfig, tmp_path,
                                                                                   capsys):
    on_cluster(server, UNSAFE)
    server.clear_requests()
    assert main(["publish", manifests(tmp_path, "two", NARROWER), "--owner", "shop",
                 "--kubeconfig", kubeconfig]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "cosctl publish: the CRD upgrade safety check refused the new revision (no revision was created): its "
        "CustomResourceDefinitions would break custom resources the cluster may already store:",
        'validating upgrade for CRD "widgets.example.com": v1: ^.spec.size: enum: allowed enum values removed : '
        '["large"]',
        "Publish again with --crd-upgrade-safety None only if the stored custom resources are known to fit the new "
        "schemas (OLM v1: spec.install.preflight.crdUpgradeSafety.enforcement: None)",
    ]
    assert [r for r in server.requests if r.method != "GET"] == []
    assert ("GET", CRD_PATH) in [(r.method, r.path) for r in server.requests]
    assert server.objects(*COS) == []

    # --dry-run says the same without writing either
    assert main(["publish", manifests(tmp_path, "dry", NARROWER), "--owner", "shop", "--dry-run",
                 "--kubeconfig", kubeconfig]) == 1
    assert "allowed enum values removed" in capsys.readouterr().err

    # the admin's override, for this run only
    server.clear_requests()
    assert main(["publish", manifests(tmp_path, "three", NARROWER), "--owner", "shop",
                 "--crd-upgrade-safety", "None", "--kubeconfig", kubeconfig]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ClusterObjectSet shop-1 (revision 1) created"
    assert ("GET", CRD_PATH) not in [(r.method, r.path) for r in server.requests]


def test_a_safe_change_and_a_crd_the_cluster_lacks_are_published(server, kubeconfig, tmp_path, capsys):
    server.clear_requests()
    assert main(["publish", manifests(tmp_path, "one", UNSAFE), "--owner", "shop",
                 "--kubeconfig", kubeconfig]) == 0  # no such CRD yet: nothing stored to break (a 404 read)
    assert ("GET", CRD_PATH) in [(r.method, r.path) for r in server.requests]
    on_cluster(server, UNSAFE)
    wider = {"size": {"type": "string", "enum": ["small", "large", "huge"], "description": "how big"},
             "colour": {"type": "string"}}
    two = manifests(tmp_path, "two", wider)
    assert main(["publish", two, "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ClusterObjectSet shop-2 (revision 2) created"

    # unchanged content creates nothing and is not checked again, even when the cluster's CRD has moved on
    on_cluster(server, {**wider, "extra": {"type": "string"}})
    server.clear_requests()
    assert main(["publish", two, "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == ("unchanged: ClusterObjectSet shop-2 (revision 2) already "
                                                        "has this content")
    assert ("GET", CRD_PATH) not in [(r.method, r.path) for r in server.requests]


def test_a_crd_that_cannot_be_read_refuses_the_publish_naming_it(server, kubeconfig, tmp_path, capsys):
    server.inject("GET", CRD_PATH, 403, body={
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
        "message": 'customresourcedefinitions.apiextensions.k8s.io "widgets.example.com" is forbidden'})
    assert main(["publish", manifests(tmp_path, "one", UNSAFE), "--owner", "shop",
                 "--kubeconfig", kubeconfig]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "cosctl publish: the CRD upgrade safety check failed: could not read CustomResourceDefinition "
        'widgets.example.com: Forbidden: customresourcedefinitions.apiextensions.k8s.io "widgets.example.com" is '
        "forbidden; no revision was created (--crd-upgrade-safety None skips the check)"]
    assert server.objects(*COS) == []


def test_rollback_to_an_older_crd_is_checked_too(server, kubeconfig, tmp_path, capsys):
    assert main(["publish", manifests(tmp_path, "one", NARROWER), "--owner", "shop",
                 "--kubeconfig", kubeconfig]) == 0
    cos = server.get_object(*COS, "shop-1")
    cos["status"] = {"conditions": [
        {"type": "Progressing", "status": "True", "reason": "Succeeded", "message": "Revision 1 has rolled out.",
         "lastTransitionTime": "2026-01-02T03:04:05Z"},
        {"type": "Succeeded", "status": "True", "reason": "Succeeded", "message": "Revision 1 has rolled out.",
         "lastTransitionTime": "2026-01-02T03:04:05Z"}]}
    server.put_object(cos)
    on_cluster(server, NARROWER)
    assert main(["publish", manifests(tmp_path, "two", UNSAFE), "--owner", "shop",
                 "--kubeconfig", kubeconfig]) == 0  # adding an enum value is safe
    on_cluster(server, UNSAFE)
    capsys.readouterr()
    server.clear_requests()
    assert main(["rollback", "--owner", "shop", "--kubeconfig", kubeconfig]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[1] == ('validating upgrade for CRD "widgets.example.com": v1: ^.spec.size: enum: allowed enum values '
                      'removed : ["large"]')
    assert [r for r in server.requests if r.method != "GET"] == []
    assert main(["rollback", "--owner", "shop", "--crd-upgrade-safety", "None", "--kubeconfig", kubeconfig]) == 0
    assert "ClusterObjectSet shop-3 (revision 3) created" in capsys.readouterr().out


def test_diff_shows_the_refusal_publish_would_give_against_the_cluster(server, kubeconfig, tmp_path, capsys):
    assert main(["publish", manifests(tmp_path, "one", UNSAFE), "--owner", "shop",
                 "--kubeconfig", kubeconfig]) == 0
    on_cluster(server, UNSAFE)
    two = manifests(tmp_path, "two", NARROWER)
    capsys.readouterr()
    assert main(["diff", two, "--owner", "shop", "--kubeconfig", kubeconfig, "--stat"]) == 1
    assert capsys.readouterr().out.splitlines()[-3:] == [
        "1 added, 1 removed, 1 changed, 0 moved, 0 unchanged; 5 insertions(+), 6 deletions(-)",
        f"CRD upgrade safety: publish refuses {two} over shop-1 (unless --crd-upgrade-safety None):",
        'validating upgrade for CRD "widgets.example.com": v1: ^.spec.size: enum: allowed enum values removed : '
        '["large"]',
    ]
    assert main(["diff", two, "--owner", "shop", "--kubeconfig", kubeconfig, "-o", "json", "--stat"]) == 1
    assert json.loads(capsys.readouterr().out)["crdUpgradeSafety"] == [
        'validating upgrade for CRD "widgets.example.com": v1: ^.spec.size: enum: allowed enum values removed : '
        '["large"]']


def test_diff_of_two_revisions_offline_checks_the_second_crds_against_the_first(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))  # no cluster is asked
    one = manifests(tmp_path, "one", {"size": {"type": "string"}, "colour": {"type": "string"}})
    two = manifests(tmp_path, "two", {"size": {"type": "integer"}})
    assert main(["diff", one, two, "--stat"]) == 1
    assert capsys.readouterr().out.splitlines()[-4:] == [
        f"CRD upgrade safety: publish refuses {two} over {one} (unless --crd-upgrade-safety None):",
        'validating upgrade for CRD "widgets.example.com": existingFieldRemoval: removed field : v1.^.spec.colour',
        'v1: ^.spec.colour: type: type changed : "string" -> ""',
        'v1: ^.spec.size: type: type changed : "string" -> "integer"',
    ]
    assert main(["diff", one, one, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["crdUpgradeSafety"] == []


def controlled_by(server: FakeApiServer, props: dict, cos_name: str | None) -> None:
    """The CRD on the cluster as the reconciler leaves it: controlled by the revision that applied it."""
    crd = {**widget_crd(props), "status": {"storedVersions": ["v1"]}}
    if cos_name is not None:
        cos = server.get_object(*COS, cos_name)
        crd["metadata"]["ownerReferences"] = [api.owner_reference(cos)]
    server.put_object(crd)


def test_a_revision_dropping_a_crd_whose_custom_resources_exist_is_refused(server, kubeconfig, tmp_path, capsys):
    """Archiving the revision that controls the CRD would delete it, and the API server deletes every custom
    resource of a deleted CRD: OLM v1's per-CRD check cannot see that; ours refuses while custom resources exist."""
    with_crd = manifests(tmp_path, "one", UNSAFE)
    assert main(["publish", with_crd, "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    controlled_by(server, UNSAFE, "shop-1")
    server.register(Kind("example.com", "v1", "Widget", "widgets", True, False))
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, namespace: default}\n")
    capsys.readouterr()
    server.clear_requests()
    assert main(["publish", str(plain), "--owner", "shop", "--dry-run", "--kubeconfig", kubeconfig]) == 0  # none yet
    assert ("GET", "/apis/example.com/v1/widgets") in [(r.method, r.path) for r in server.requests]
    server.put_object({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": "small"}})
    capsys.readouterr()
    server.clear_requests()
    assert main(["publish", str(plain), "--owner", "shop", "--kubeconfig", kubeconfig]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "cosctl publish: the new revision drops CustomResourceDefinition widgets.example.com (controlled by shop-1; "
        "custom resources of it exist): archiving the revision that controls it would delete the "
        "CustomResourceDefinition and, with it, every custom resource of it; no revision was created. Keep the "
        "CustomResourceDefinition in the revision, delete its custom resources first, or publish with "
        "--crd-upgrade-safety None to let them go"]
    assert [r for r in server.requests if r.method != "GET"] == []
    # one object read to know whether any exists, however many there are
    assert [r.query.get("limit") for r in server.requests if r.path == "/apis/example.com/v1/widgets"] == ["1"]

    # diff says it ahead
    assert main(["diff", str(plain), "--owner", "shop", "--kubeconfig", kubeconfig, "-o", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["crdUpgradeSafety"] == [
        "CustomResourceDefinition widgets.example.com (controlled by shop-1; custom resources of it exist) is "
        "dropped: archiving shop-1 would delete it and every custom resource of it"]

    # a CRD another owner controls is only released by the archive, never deleted: nothing to refuse
    assert main(["publish", with_crd, "--owner", "other", "--collision-protection", "None",
                 "--kubeconfig", kubeconfig]) == 0
    controlled_by(server, UNSAFE, "other-1")
    assert main(["publish", str(plain), "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ClusterObjectSet shop-2 (revision 2) created"
    controlled_by(server, UNSAFE, "shop-1")

    # every Active revision counts: shop-1 still controls the CRD while shop-2 rolls out
    assert main(["publish", manifests(tmp_path, "three", {}), "--owner", "shop", "--crd-upgrade-safety", "None",
                 "--kubeconfig", kubeconfig]) == 0
    assert main(["publish", str(plain), "--owner", "shop", "--kubeconfig", kubeconfig]) == 1
    assert "widgets.example.com (controlled by shop-1; custom resources of it exist)" in capsys.readouterr().err
    assert main(["publish", str(plain), "--owner", "shop", "--crd-upgrade-safety", "None",
                 "--kubeconfig", kubeconfig]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ClusterObjectSet shop-4 (revision 4) created"


def test_what_cannot_be_checked_is_said_by_diff_not_a_traceback(server, kubeconfig, tmp_path, capsys, monkeypatch):
    # a CRD of revision A that does not decode (versions: a number): a line naming the field
    one, two = manifests(tmp_path, "one", UNSAFE), manifests(tmp_path, "two", NARROWER)
    broken = widget_crd(UNSAFE)
    broken["spec"]["versions"] = 5
    Path(one, "crd.json").write_text(json.dumps(broken))
    assert main(["diff", one, two, "-o", "json", "--kubeconfig", kubeconfig]) == 1
    assert json.loads(capsys.readouterr().out)["crdUpgradeSafety"] == [
        "cannot be checked: CustomResourceDefinition widgets.example.com: the existing CustomResourceDefinition "
        "does not decode: spec.versions: expected an array, got number"]
    # the cluster's CRD cannot be read: diff says so and still shows the differences
    assert main(["publish", manifests(tmp_path, "three", UNSAFE), "--owner", "shop",
                 "--kubeconfig", kubeconfig]) == 0
    server.inject("GET", CRD_PATH, 403, body={
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
        "message": "crd forbidden"})
    capsys.readouterr()
    assert main(["diff", two, "--owner", "shop", "--stat", "--kubeconfig", kubeconfig]) == 1
    assert capsys.readouterr().out.splitlines()[-2:] == [
        f"CRD upgrade safety: publish refuses {two} over shop-1 (unless --crd-upgrade-safety None):",
        "cannot be checked: could not read CustomResourceDefinition widgets.example.com: Forbidden: crd forbidden"]
