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
    assert (code, out.splitlines()[-1]) == (1, "0 added, 0 removed, 2 changed, 0 moved, 0 unchanged; 3 "
                                               "insertions(+), 3 deletions(-)"), out + err
    assert cosctl("publish", "--extension", manifest, cluster=mc)[0] == 0
    assert json.loads(mc.get(*COS, "my-demo-2")["metadata"]["annotations"][api.ANNOTATION_BUNDLE_OPTIONS]) == {
        "namespace": "demo-system"}   # no spec.config: no configuration, not the one my-demo-1 recorded
    assert source_of(mc, "my-demo-2") == {"catalog": catalog, "packageName": "demo"}


def test_a_manifest_without_a_service_account_is_written_with_the_reconcilers_rights(images: dict[str, str],
                                                                                    tmp_path: Path) -> None:
    """OLM v1 v1.11.0 made spec.serviceAccount optional and ignores it (it installs with its own rights): such a
    manifest publishes a revision naming no ServiceAccount, which the reconciler writes with its own."""
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    manifest = extension(tmp_path / "ce.yaml", serviceAccount=None)
    mc = MemCluster()
    code, out, err = cosctl("publish", "--extension", manifest, "--catalog", catalog, cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "ClusterObjectSet my-demo-1 (revision 1) created"), out + err
    annotations = mc.get(*COS, "my-demo-1")["metadata"]["annotations"]
    assert api.ANNOTATION_SERVICE_ACCOUNT_NAME not in annotations
    assert api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE not in annotations


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


def test_a_manifest_saved_as_utf16_reads_as_kubectl_apply_reads_it(tmp_path: Path) -> None:
    """kubectl apply decodes UTF-16 with its byte order mark (what Windows editors save as "Unicode"): the
    same manifest, so the same refusal of a field given twice (the file was read)."""
    manifest = extension(tmp_path / "ce.yaml")
    Path(manifest).write_bytes(Path(manifest).read_text().encode("utf-16"))
    assert cosctl("publish", "--extension", manifest, "--owner", "x", cluster=MemCluster()) == (
        2, "", f"cosctl publish: --owner and --extension {manifest}: the ClusterExtension says it (metadata.name); "
               "give one or the other\n")


CATALOG = {"sourceType": "Catalog", "catalog": {"packageName": "demo"}}


@pytest.mark.parametrize(("spec", "why"), [
    ({"source": {"sourceType": "Image"}}, "spec.source.sourceType: Unsupported value: 'Image': supported values: "
                                          '"Catalog"'),
    ({"source": {"sourceType": "Catalog", "catalog": {}}}, "spec.source.catalog.packageName: Required value"),
    ({"namespace": None}, "spec.namespace: Required value"),
    ({"namespace": "Demo_NS"}, "spec.namespace: namespace must be a valid DNS1123 label"),
    ({"serviceAccount": {}}, "spec.serviceAccount: should have at least 1 properties"),
    ({"serviceAccount": {"name": None}}, "spec.serviceAccount: should have at least 1 properties"),
    ({"serviceAccount": {"name": ""}}, "spec.serviceAccount.name: should be at least 1 chars long"),
    ({"serviceAccount": {"name": "Installer"}}, "spec.serviceAccount.name: name must be a valid DNS1123 subdomain. "
     "It must contain only lowercase alphanumeric characters, hyphens (-) or periods (.), start and end with an "
     "alphanumeric character, and be no longer than 253 characters"),
    ({"source": {"sourceType": "Catalog", "catalog": {"packageName": "demo", "versoin": "1.0.0"}}},
     "spec.source.catalog.versoin: unknown field (OLM v1's ClusterExtension has none such; kubectl apply refuses it "
     "too): did you mean version?"),
    ({"progresDeadlineMinutes": 30}, "spec.progresDeadlineMinutes: unknown field (OLM v1's ClusterExtension has none "
                                     "such; kubectl apply refuses it too): did you mean progressDeadlineMinutes?"),
    ({"source": {"sourceType": "Catalog", "catalog": {"packageName": "demo", "version": "not a range"}}},
     'spec.source.catalog.version: desired version range "not a range" is invalid: improper constraint: "not a '
     'range"'),
    ({"source": {"sourceType": "Catalog", "catalog": {"packageName": "demo", "channels": ["Stable"]}}},
     "spec.source.catalog.channels[0]: channels entries must be valid DNS1123 subdomains"),
    ({"config": {"configType": "Inline", "inline": [1]}}, "spec.config.inline: must be an object, not array"),
    ({"config": {"configType": "Inline", "inline": {}}}, "spec.config.inline: should have at least 1 properties"),
    ({"config": {"configType": "Inline"}},
     "spec.config: inline is required when configType is Inline, and forbidden otherwise"),
    ({"install": {}}, "spec.install: at least one of [preflight] are required when install is specified"),
    ({"install": {"preflight": {"crdUpgradeSafety": {"enforcement": "Lax"}}}},
     "spec.install.preflight.crdUpgradeSafety.enforcement: Unsupported value: 'Lax': supported values: \"None\", "
     '"Strict"'),
    ({"serviceAccount": {"name": "olm.synthetic-user"}}, "spec.serviceAccount.name: olm.synthetic-user (OLM v1's "
     "SyntheticPermissions, an alpha feature that applies as the user olm:clusterextension:my-demo) is not supported: "
     "name a ServiceAccount of the install namespace"),
    ({"progressDeadlineMinutes": 5}, "spec.progressDeadlineMinutes: should be between 10 and 720, not 5"),
    ({"progressDeadlineMinutes": 0}, "spec.progressDeadlineMinutes: should be between 10 and 720, not 0"),
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
    manifest = extension(tmp_path / "ce.yaml",
                         config={"configType": "Inline", "inline": {"deploymentConfig": {"env": [
                             {"name": "A", "valeu": "secret-looking"}]}}})
    text = yaml.safe_load(Path(manifest).read_text())
    text["spec"]["source"]["catalog"]["selector"] = {"matchLabels": {"tier": "prod"}}
    Path(manifest).write_text(yaml.safe_dump(text).replace("  namespace: demo-system\n",
                                                           "  namespace: demo-system\n  namespace: demo-system\n"))
    code, out, err = cosctl("rbac", "--extension", manifest, "--catalog", catalog, cluster=MemCluster())
    lines = err.splitlines()
    assert (code, lines[:2]) == (0, [
        f"cosctl rbac: warning: {manifest}:0: key \"namespace\" at line {text_line(manifest, 'namespace: demo')} "
        "repeats an earlier key of the same mapping: its last value is used, as kubectl does",
        f"cosctl rbac: warning: {manifest}: spec.source.catalog.selector is not used: --catalog {catalog} names the "
        "catalog"]), err
    assert any(line.startswith(f"cosctl rbac: warning: {manifest}: spec.config.inline: deploymentConfig.env.0") and
               "valeu" in line for line in lines), err
    assert "kind: ServiceAccount\nmetadata:\n  name: installer\n  namespace: demo-system" in out
    assert "secret-looking" not in err + out


def text_line(path: str, text: str) -> int:
    """The line (from 1) of the second occurrence of ``text`` in ``path``."""
    lines = [i + 1 for i, line in enumerate(Path(path).read_text().splitlines()) if text in line]
    return lines[1]


def test_options_with_a_default_said_again_are_refused_too(tmp_path: Path) -> None:
    """A flag given at its default value still says the field a second time."""
    manifest = extension(tmp_path / "ce.yaml", install={"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}})
    (tmp_path / "config.yaml").write_text("{}\n")
    for argv, field in ((["--crd-upgrade-safety", "Strict"], "spec.install.preflight.crdUpgradeSafety"),
                        (["--upgrade-constraint-policy", "CatalogProvided"],
                         "spec.source.catalog.upgradeConstraintPolicy"),
                        (["--channel", "stable"], "spec.source.catalog.channels"),
                        (["--config", str(tmp_path / "config.yaml")], "spec.config.inline"),
                        (["--service-account", "installer"], "spec.serviceAccount.name"),
                        (["--progress-deadline-minutes", "30"], "spec.progressDeadlineMinutes")):
        code, out, err = cosctl("publish", "--extension", manifest, *argv, cluster=MemCluster())
        assert (code, out, err) == (2, "", f"cosctl publish: {argv[0]} and --extension {manifest}: the "
                                           f"ClusterExtension says it ({field}); give one or the other\n")


def test_a_list_of_one_and_json_are_read_and_a_list_of_two_refused(images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    one = yaml.safe_load(Path(extension(tmp_path / "ce.yaml")).read_text())
    (tmp_path / "list.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [one]}))
    mc = MemCluster()
    allow_service_accounts(mc, "demo-system/installer")
    code, out, err = cosctl("publish", "--extension", str(tmp_path / "list.json"), "--catalog", catalog,
                            "--dry-run", cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "ClusterObjectSet my-demo-1 (revision 1) would be created"), err
    (tmp_path / "two.yaml").write_text(yaml.safe_dump({"apiVersion": "olm.operatorframework.io/v1",
                                                       "kind": "ClusterExtensionList", "items": [one, one]}))
    assert cosctl("publish", "--extension", str(tmp_path / "two.yaml"), cluster=mc) == (
        2, "", f"cosctl publish: {tmp_path / 'two.yaml'}: a List of 2 items: give one ClusterExtension\n")
