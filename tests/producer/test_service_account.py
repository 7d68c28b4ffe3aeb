"""``cosctl publish`` and ``rollback --service-account NS/NAME``: the annotations a revision is applied with,
kept across revisions, changed in place when only they change, never dropped."""

from __future__ import annotations

import pytest

from common.bundle.publish import publish
from common.contract import api
from common.contract.serviceaccount import ServiceAccountRef
from common.testing.memcluster import MemCluster
from tests.producer.helpers import allow_service_accounts, cosctl
from tests.producer.test_cli import set_conditions, write_bundle
from tests.producer.test_publish import bundle

COS = (api.API_VERSION, api.KIND)
NAME, NAMESPACE = api.ANNOTATION_SERVICE_ACCOUNT_NAME, api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE


def annotations(mc: MemCluster, name: str) -> dict[str, str]:
    return dict(mc.peek(*COS, name)["metadata"].get("annotations") or {})


def test_publish_names_the_service_account_and_later_revisions_keep_it(tmp_path) -> None:
    mc = MemCluster()
    allow_service_accounts(mc, "shop/installer")
    code, _, err = cosctl("publish", str(write_bundle(tmp_path / "b1", image="web:1")), "--owner", "shop",
                          "--service-account", "shop/installer", "--bundle-version", "1.0", cluster=mc)
    assert (code, err) == (0, "")
    assert annotations(mc, "shop-1") == {api.ANNOTATION_BUNDLE_VERSION: "1.0", NAME: "installer", NAMESPACE: "shop"}
    # the next revision, published without the option, keeps it
    cosctl("publish", str(write_bundle(tmp_path / "b2", image="web:2")), "--owner", "shop", cluster=mc)
    assert annotations(mc, "shop-2") == {NAME: "installer", NAMESPACE: "shop"}


def test_a_new_service_account_for_unchanged_content_updates_the_revision_in_place() -> None:
    mc = MemCluster()
    allow_service_accounts(mc, "shop/installer", "shop/v2-installer")
    publish(mc, bundle(big=False), owner="shop", service_account=ServiceAccountRef("shop", "installer"))
    mc.reset_requests()
    result = publish(mc, bundle(big=False), owner="shop", service_account=ServiceAccountRef("shop", "v2-installer"))
    assert (result.outcome, result.name) == ("updated", "shop-1")
    assert [str(a) for a in result.actions] == [
        f"patch ClusterObjectSet shop-1: mutable fields metadata.annotations[{NAME}]"]
    assert annotations(mc, "shop-1") == {NAME: "v2-installer", NAMESPACE: "shop"}
    # publishing the same content without naming one keeps it: nothing to write
    mc.reset_requests()
    assert publish(mc, bundle(big=False), owner="shop").outcome == "unchanged"
    assert mc.writes == 0


def test_an_identity_is_never_removed_by_a_publish() -> None:
    mc = MemCluster()
    allow_service_accounts(mc, "shop/installer")
    publish(mc, bundle(big=False), owner="shop")
    half = {NAME: "installer"}   # someone annotated half an identity by hand: the reconciler refuses it
    mc.edit(*COS, "shop-1", None, lambda o: o["metadata"].__setitem__("annotations", dict(half)))
    assert publish(mc, bundle(big=False), owner="shop").outcome == "unchanged"
    assert annotations(mc, "shop-1") == half
    # the publish that names a whole one fixes it
    publish(mc, bundle(big=False), owner="shop", service_account=ServiceAccountRef("shop", "installer"))
    assert annotations(mc, "shop-1") == {NAME: "installer", NAMESPACE: "shop"}


def test_rollback_uses_the_current_identity_or_the_one_it_is_given(tmp_path) -> None:
    mc = MemCluster()
    allow_service_accounts(mc, "shop/old", "shop/new", "shop/other")
    cosctl("publish", str(write_bundle(tmp_path / "b1", image="web:1")), "--owner", "shop",
           "--service-account", "shop/old", cluster=mc)
    set_conditions(mc, "shop-1", ("True", "Succeeded", "Revision 1 has rolled out."),
                   {"type": "Succeeded", "status": "True", "reason": "Succeeded",
                    "message": "Revision succeeded rolling out.", "lastTransitionTime": "2026-01-02T03:04:05Z"})
    mc.edit(*COS, "shop-1", None, lambda o: o["spec"].__setitem__("lifecycleState", "Archived"))
    cosctl("publish", str(write_bundle(tmp_path / "b2", image="web:2")), "--owner", "shop",
           "--service-account", "shop/new", cluster=mc)
    code, _, err = cosctl("rollback", "--owner", "shop", cluster=mc)
    assert (code, err) == (0, "")
    assert annotations(mc, "shop-3") == {NAME: "new", NAMESPACE: "shop"}   # the owner's identity now, not rev 1's
    code, _, err = cosctl("rollback", "--owner", "shop", "--to-revision", "2", "--service-account", "shop/other",
                          cluster=mc)
    assert (code, err) == (0, "")
    assert annotations(mc, "shop-4") == {NAME: "other", NAMESPACE: "shop"}


@pytest.mark.parametrize("command", ["publish", "rollback"])
def test_a_bad_value_is_a_usage_error(command: str, tmp_path, capsys) -> None:
    from common.cosctl import main

    argv = [command, *([str(write_bundle(tmp_path / "b", image="web:1"))] if command == "publish" else []),
            "--owner", "shop", "--service-account", "a/b/c"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"cosctl {command}: error: argument --service-account: 'a/b/c' is not NAMESPACE/NAME (or NAME, for a bundle)")


@pytest.mark.parametrize("command", ["publish", "rollback"])
def test_a_bare_name_without_a_bundle_is_a_usage_error_before_any_cluster(command: str, tmp_path, capsys) -> None:
    from common.cosctl import main

    argv = [command, *([str(write_bundle(tmp_path / "b", image="web:1"))] if command == "publish" else []),
            "--owner", "shop", "--service-account", "installer", "--kubeconfig", str(tmp_path / "missing")]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"cosctl {command}: --service-account installer: give NAMESPACE/NAME (a bare name means a ServiceAccount "
        "of a registry+v1 bundle's install namespace)\n")
