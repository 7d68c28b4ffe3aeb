"""The permission preflight through the real client adapter against the fake API server over HTTP: the reads it
sends (the ServiceAccount, every ClusterRole and ClusterRoleBinding, the Roles and RoleBindings of the revision's
namespaces: a handful of requests however large the revision), the refusal with nothing written, the grant that
lets it through, and ``cosctl diff`` saying the same ahead."""

from __future__ import annotations

import json
from pathlib import Path

from common.contract import api
from common.cosctl import main
from tests.support.fake_apiserver import FakeApiServer

COS = (api.API_VERSION, api.KIND)
RBAC = "rbac.authorization.k8s.io/v1"
SUBJECT = {"kind": "ServiceAccount", "name": "installer", "namespace": "shop"}


def manifests(tmp_path: Path, name: str, *configmaps: str) -> str:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "cms.yaml").write_text("".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {cm}, namespace: shop}}\n" for cm in configmaps))
    return str(directory)


def grant(server: FakeApiServer, names: list[str]) -> None:
    server.put_object({"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "installer", "namespace": "shop"},
                       "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
                                 {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": names,
                                  "verbs": ["patch", "delete"]}]})
    server.put_object({"apiVersion": RBAC, "kind": "RoleBinding",
                       "metadata": {"name": "installer", "namespace": "shop"}, "subjects": [SUBJECT],
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "installer"}})


def test_publish_reads_rbac_once_refuses_and_writes_nothing_then_publishes_once_granted(server, kubeconfig,
                                                                                       tmp_path, capsys):
    server.put_object({"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": "installer", "namespace": "shop"}})
    grant(server, ["a"])
    server.clear_requests()
    two = manifests(tmp_path, "two", "a", "b")
    assert main(["publish", two, "--owner", "shop", "--service-account", "shop/installer",
                 "--kubeconfig", kubeconfig]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "cosctl publish: the permission preflight refused the new revision (no revision was created):",
        "ServiceAccount shop/installer lacks, by the cluster's RBAC, to apply the new revision:",
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[b] Verbs:[delete,patch]',
        "`cosctl rbac` prints the RBAC the revision needs (with --keep-installed, also what tearing the installed "
        "revisions down needs); --preflight-permissions None skips the check, for this run only"]
    reads = [(r.method, r.path) for r in server.requests if "rbac" in r.path or "serviceaccounts" in r.path]
    assert sorted(reads) == [
        ("GET", "/api/v1/namespaces/shop/serviceaccounts/installer"),
        ("GET", "/apis/rbac.authorization.k8s.io/v1"),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/shop/rolebindings"),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/shop/roles"),
    ]
    assert [r for r in server.requests if r.method != "GET"] == []

    # cosctl diff says the same ahead, for the ServiceAccount the owner's latest revision names
    grant(server, ["a"])
    assert main(["publish", manifests(tmp_path, "one", "a"), "--owner", "shop", "--service-account",
                 "shop/installer", "--kubeconfig", kubeconfig]) == 0
    capsys.readouterr()
    assert main(["diff", two, "--owner", "shop", "--stat", "--kubeconfig", kubeconfig]) == 1
    assert capsys.readouterr().out.splitlines()[-3:] == [
        f"Permissions: publish refuses {two} (unless --preflight-permissions None):",
        "ServiceAccount shop/installer lacks, by the cluster's RBAC, to apply the new revision:",
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[b] Verbs:[delete,patch]']
    assert main(["diff", two, "--owner", "shop", "--stat", "-o", "json", "--kubeconfig", kubeconfig]) == 1
    assert json.loads(capsys.readouterr().out)["permissions"] == [
        "ServiceAccount shop/installer lacks, by the cluster's RBAC, to apply the new revision:\n"
        '  Namespace:"shop" APIGroups:[] Resources:[configmaps] ResourceNames:[b] Verbs:[delete,patch]']

    grant(server, ["a", "b"])
    assert main(["publish", two, "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ClusterObjectSet shop-2 (revision 2) created"
    assert main(["diff", two, "--owner", "shop", "--stat", "--kubeconfig", kubeconfig]) == 0


def test_rbac_that_cannot_be_read_is_no_verdict(server, kubeconfig, tmp_path, capsys):
    server.put_object({"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": "installer", "namespace": "shop"}})
    server.inject("GET", r"/apis/rbac\.authorization\.k8s\.io/v1/clusterrolebindings", 403)
    assert main(["publish", manifests(tmp_path, "one", "a"), "--owner", "shop", "--service-account",
                 "shop/installer", "--kubeconfig", kubeconfig]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cosctl publish: the permission preflight for ServiceAccount shop/installer failed: could "
                          "not list ClusterRoleBindings: Forbidden: ")
    assert err.endswith("; no revision was created (--preflight-permissions None skips the check)\n")
    assert server.objects(*COS) == []
