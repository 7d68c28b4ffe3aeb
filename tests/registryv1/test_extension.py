"""``--extension FILE``: an OLM v1 ClusterExtension manifest gives ``publish``, ``diff`` and ``rbac`` their package and
install options, as operator-controller reads them; the catalog comes from ``--catalog`` (or the owner's record)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.contract import api
from common.testing.memcluster import MemCluster
from tests.producer.helpers import allow_service_accounts, cosctl
from tests.registryv1.demo_catalog import COS, pulled, source_of, succeed, write_catalog


def extension(path: Path, **spec: Any) -> str:
    """ClusterExtension ``my-demo`` of package demo into demo-system as ServiceAccount installer, ``spec`` merged
    over that; written as ``kubectl get clusterextension -o yaml`` writes it (status included)."""
    body: dict[str, Any] = {
        "namespace": "demo-system", "serviceAccount": {"name": "installer"},
        "source": {"sourceType": "Catalog", "catalog": {"packageName": "demo", "channels": ["stable"],
                                                         "version": "<1.2"}}}
    body.update(spec)
    path.write_text(yaml.safe_dump({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
        "metadata": {"name": "my-demo", "uid": "0e5f", "resourceVersion": "42"},
        "spec": body, "status": {"conditions": [{"type": "Installed", "status": "True"}]}}))
    return str(path)


def test_a_cluster_extension_is_published_as_publish_package_would_publish_it(images: dict[str, str],
                                                                             tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    config = {"deploymentConfig": {"nodeSelector": {"disk": "ssd"}}}
    manifest = extension(tmp_path / "ce.yaml", config={"configType": "Inline", "inline": config},
                         install={"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}},
                         progressDeadlineMinutes=30)
    mc = MemCluster()
    allow_service_accounts(mc, "demo-system/installer")
    code, out, err = cosctl("publish", "--extension", manifest, "--catalog", catalog, cluster=mc)
    assert (code, err) == (0, pulled("publish", images["1.1.0"])), out + err
    assert out.splitlines()[:2] == [
        f"package demo resolves to demo-operator.v1.1.0 (1.1.0) in catalog {catalog}: {images['1.1.0']}",
        "bundle demo-operator.v1.1.0 rendered for namespace demo-system"]
    assert out.splitlines()[-1] == "ClusterObjectSet my-demo-1 (revision 1) created"
    cos = mc.get(*COS, "my-demo-1")
    assert source_of(mc, "my-demo-1") == {"catalog": catalog, "packageName": "demo", "channels": ["stable"],
                                          "version": "<1.2"}
    annotations = cos["metadata"]["annotations"]
    assert (annotations[api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE],
            annotations[api.ANNOTATION_SERVICE_ACCOUNT_NAME]) == ("demo-system", "installer")
    assert json.loads(annotations[api.ANNOTATION_BUNDLE_OPTIONS]) == {"namespace": "demo-system", "config": config}
    assert cos["spec"]["progressDeadlineMinutes"] == 30
    assert cos["metadata"]["labels"][api.LABEL_OWNER_NAME] == "my-demo"
    succeed(mc, "my-demo-1")

    # the manifest is the whole truth: with its range and configuration dropped, the next run upgrades along the
    # catalog's edge, with no configuration
    manifest = extension(tmp_path / "ce.yaml", source={"sourceType": "Catalog", "catalog": {"packageName": "demo"}})
    code, out, err = cosctl("publish", "--extension", manifest, "--dry-run", cluster=mc)
    assert (code, out.splitlines()[0]) == (0, (
        f"package demo resolves to demo-operator.v1.2.0 (1.2.0) over demo-operator.v1.1.0 in catalog {catalog} "
        f"(--catalog kept from my-demo-1): {images['1.2.0']}")), out + err
    code, out, err = cosctl("diff", "--extension", manifest, "--stat", cluster=mc)
    assert (code, out.splitlines()[-1]) == (1, "0 added, 0 removed, 1 changed, 0 moved, 1 unchanged; 1 insertion(+), "
                                               "1 deletion(-)"), out + err
    assert cosctl("publish", "--extension", manifest, cluster=mc)[0] == 0
    assert json.loads(mc.get(*COS, "my-demo-2")["metadata"]["annotations"][api.ANNOTATION_BUNDLE_OPTIONS]) == {
        "namespace": "demo-system"}   # no spec.config: no configuration, not the one my-demo-1 recorded
    assert source_of(mc, "my-demo-2") == {"catalog": catalog, "packageName": "demo"}


def test_what_the_manifest_says_cannot_be_said_again_on_the_command_line(tmp_path: Path) -> None:
    manifest = extension(tmp_path / "ce.yaml")
    for flag, value, field in (("--version", "1.0.0", "spec.source.catalog.version"),
                               ("-n", "other", "spec.namespace"), ("--owner", "x", "metadata.name"),
                               ("--package", "demo", "spec.source.catalog.packageName"),
                               ("--upgrade-constraint-policy", "SelfCertified",
                                "spec.source.catalog.upgradeConstraintPolicy")):
        shown = "-n/--namespace" if flag == "-n" else flag
        assert cosctl("publish", "--extension", manifest, flag, value, cluster=MemCluster()) == (
            2, "", f"cosctl publish: {shown} and --extension {manifest}: the ClusterExtension says it ({field}); give "
                   "one or the other\n")


@pytest.mark.parametrize(("spec", "why"), [
    ({"source": {"sourceType": "Image"}}, "spec.source.sourceType: 'Image': only Catalog is defined"),
    ({"source": {"sourceType": "Catalog", "catalog": {}}},
     "spec.source.catalog.packageName: missing, or not a string"),
    ({"namespace": None}, "spec.namespace: missing, or not a string"),
    ({"config": {"configType": "Inline", "inline": [1]}},
     "spec.config.inline: must be an object (the bundle's configuration)"),
    ({"install": {"preflight": {"crdUpgradeSafety": {"enforcement": "Lax"}}}},
     "spec.install.preflight.crdUpgradeSafety.enforcement: 'Lax': must be one of None, Strict"),
])
def test_a_manifest_cosctl_cannot_act_on_is_refused_naming_the_field(spec: dict[str, Any], why: str,
                                                                    tmp_path: Path) -> None:
    manifest = extension(tmp_path / "ce.yaml", **spec)
    assert cosctl("publish", "--extension", manifest, cluster=MemCluster()) == (
        2, "", f"cosctl publish: {manifest}: {why}\n")


def test_other_files_and_what_is_not_used_are_said(images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert cosctl("publish", "--extension", str(tmp_path / "cm.yaml"), cluster=MemCluster()) == (
        2, "", f"cosctl publish: {tmp_path / 'cm.yaml'}: not a ClusterExtension: apiVersion 'v1', kind 'ConfigMap' "
               "(want olm.operatorframework.io/v1, ClusterExtension)\n")
    assert cosctl("publish", "--extension", str(tmp_path / "absent.yaml"), cluster=MemCluster()) == (
        2, "", f"cosctl publish: {tmp_path / 'absent.yaml'}: no such file or directory\n")
    manifest = extension(tmp_path / "ce.yaml", serviceAccount=None,
                         config={"configType": "Inline", "inline": {"deploymentConfig": {"env": [
                             {"name": "A", "valeu": "secret-looking"}]}}})
    text = yaml.safe_load(Path(manifest).read_text())
    del text["spec"]["serviceAccount"]
    text["spec"]["source"]["catalog"]["selector"] = {"matchLabels": {"tier": "prod"}}
    Path(manifest).write_text(yaml.safe_dump(text))
    code, out, err = cosctl("rbac", "--extension", manifest, "--catalog", catalog, cluster=MemCluster())
    lines = err.splitlines()
    assert (code, out, lines[-1]) == (2, "", "cosctl rbac: --service-account [NS/]NAME is required: the "
                                             "ServiceAccount to grant the rights to")   # the manifest names none
    assert lines[0] == (f"cosctl rbac: warning: {manifest}: spec.source.catalog.selector is not used: the package is "
                        "resolved from the one catalog --catalog names (or the owner's revision records)")
    assert any(line.startswith(f"cosctl rbac: warning: {manifest}: spec.config.inline: deploymentConfig.env.0") and
               "valeu" in line for line in lines), err
    assert "secret-looking" not in err + out
