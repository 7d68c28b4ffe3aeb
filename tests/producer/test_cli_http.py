"""The producer commands end to end through ``cosctl`` (common.cosctl.main) and the real client adapter
(common.cluster.kube) against the fake API server over HTTP: the exact requests a publish sends."""

from __future__ import annotations

import pytest

from common.contract import api
from common.cosctl import main
from tests.support.fake_apiserver import FakeApiServer

NS = api.DEFAULT_SYSTEM_NAMESPACE


@pytest.fixture
def server():
    with FakeApiServer() as s:
        yield s


@pytest.fixture
def bundle(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\ndata: {a: b}\n")
    return str(tmp_path / "b")


def test_publish_over_http_sends_secrets_then_cos_then_merge_patches(server, bundle, tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.setenv("KUBECONFIG", server.write_kubeconfig(str(tmp_path / "kubeconfig")))
    assert main(["publish", bundle, "--owner", "shop"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "ClusterObjectSet shop-1 (revision 1) created"
    (secret,) = server.objects("v1", "Secret")
    name = secret["metadata"]["name"]
    cos = server.get_object(api.API_VERSION, api.KIND, "shop-1")
    writes = [(r.method, r.path, r.content_type) for r in server.requests if r.method != "GET"]
    assert writes == [
        ("POST", f"/api/v1/namespaces/{NS}/secrets", "application/json"),
        ("POST", "/apis/olm.operatorframework.io/v1/clusterobjectsets", "application/json"),
        ("PATCH", f"/api/v1/namespaces/{NS}/secrets/{name}", "application/merge-patch+json"),
    ]
    assert secret["metadata"]["ownerReferences"] == [api.owner_reference(cos)]
    assert secret["immutable"] is True and secret["type"] == api.SECRET_TYPE

    server.clear_requests()
    assert main(["publish", bundle, "--owner", "shop"]) == 0
    assert capsys.readouterr().out == "unchanged: ClusterObjectSet shop-1 (revision 1) already has this content\n"
    assert [r for r in server.requests if r.method != "GET"] == []

    assert main(["history", "--owner", "shop"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:4] == ["1", "shop-1", "Active", "Pending"]
    assert main(["gc", "--owner", "shop"]) == 0
    assert capsys.readouterr().out == "nothing to clean up\n"


def test_unreachable_or_missing_kubeconfig_is_a_clear_error(bundle, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["gc", "--owner", "shop"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cosctl gc: cannot load the cluster configuration: ")
    assert "Traceback" not in err
