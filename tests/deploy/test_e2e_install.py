"""Opt-in checks of a live installation (``pytest -m e2e`` with ``COS_E2E_KUBECONFIG`` naming a kubeconfig of a
cluster where ``kubectl apply -k deploy/`` has run): docs/admin.md's "Verify" section, automated."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from common.cluster.interface import ApiError
from webhook import certs

ROOT = Path(__file__).resolve().parents[2]
KUBECONFIG = os.environ.get("COS_E2E_KUBECONFIG")
NAMESPACE = os.environ.get("COS_E2E_SYSTEM_NAMESPACE", "olmv1-system")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not KUBECONFIG, reason="COS_E2E_KUBECONFIG is not set: no cluster to check"),
]


def test_certificates_and_ca_bundle_are_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert KUBECONFIG
    code = certs.main(["--kubeconfig", KUBECONFIG, "--namespace", NAMESPACE, "--check"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines() == [
        f"Secret {NAMESPACE}/cos-webhook-tls: up to date",
        "ValidatingWebhookConfiguration cos-webhook: up to date",
        "MutatingWebhookConfiguration cos-webhook: up to date",
    ]


def test_a_bad_cluster_object_set_is_denied_by_the_webhook() -> None:
    assert KUBECONFIG
    api = certs.KubeApi(KUBECONFIG)
    cos = yaml.safe_load((ROOT / "examples" / "14-bad-duplicate-object.yaml").read_text())
    status = None
    try:
        api.request("dry-run create", "POST",
                     "/apis/olm.operatorframework.io/v1/clusterobjectsets?dryRun=All", cos)
    except ApiError as exc:
        status = exc.status
    assert status is not None, "the bad ClusterObjectSet was admitted"
    assert (status["code"], status["reason"]) == (422, "Invalid"), json.dumps(status)
    assert 'admission webhook "vclusterobjectsets.olm.operatorframework.io" denied the request' in status["message"]
    assert "spec.phases[1].objects[0]: Duplicate value:" in status["message"]
