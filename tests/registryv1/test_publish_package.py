"""``cosctl publish --package`` and ``diff --package``: the catalog picks the bundle as OLM v1 resolves a
ClusterExtension, its image is pulled from the test registry (tests/support/registry_server.py), and the revision
records where it came from so that the next upgrade resolves within the same bounds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from common.bundle.catalogsource import CatalogSource, CatalogSourceError, choose_source
from common.contract import api
from common.cosctl import main
from common.testing.memcluster import MemCluster
from tests.producer.helpers import allow_service_accounts, cosctl
from tests.registryv1.bundles import annotations_yaml, csv, write_bundle
from tests.registryv1.demo_catalog import (
    COS,
    columns,
    demo,
    install,
    pulled,
    source_of,
    succeed,
    write_catalog,
)
from tests.support.registry_server import Registry


def test_a_package_is_installed_and_upgraded_within_the_bounds_it_was_installed_with(
        images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    code, out, err = cosctl("publish", "--package", "demo", "-n", "demo-system", "--catalog", catalog,
                            "--version", "<1.2", cluster=mc)
    assert (code, err) == (0, pulled("publish", images["1.1.0"]))
    lines = out.splitlines()
    assert lines[:3] == [
        f"package demo resolves to demo-operator.v1.1.0 (1.1.0) in catalog {catalog}: {images['1.1.0']}",
        "bundle demo-operator.v1.1.0 rendered for namespace demo-system",
        f"catalog {catalog}: demo-operator.v1.1.0 may be installed (no bundle of the owner is installed)"]
    assert lines[-1] == "ClusterObjectSet demo-1 (revision 1) created"
    annotations = mc.get(*COS, "demo-1")["metadata"]["annotations"]
    assert json.loads(annotations[api.ANNOTATION_BUNDLE_SOURCE]) == {"catalog": catalog, "packageName": "demo",
                                                                    "version": "<1.2"}
    assert (annotations[api.ANNOTATION_BUNDLE_NAME], annotations[api.ANNOTATION_BUNDLE_REFERENCE]) == (
        "demo-operator.v1.1.0", images["1.1.0"])
    succeed(mc, "demo-1")

    # the next run keeps the catalog and the range: 1.2.0 is out of bounds, so nothing changes
    code, out, err = cosctl("publish", "--package", "demo", cluster=mc)
    assert (code, err) == (0, pulled("publish", images["1.1.0"]))
    assert out.splitlines()[0] == (f"package demo resolves to the installed bundle demo-operator.v1.1.0 (1.1.0) in "
                                   f"catalog {catalog} (--catalog, --version kept from demo-1): {images['1.1.0']}")
    assert out.splitlines()[-1] == "unchanged: ClusterObjectSet demo-1 (revision 1) already has this content"

    # widening the range: diff says what the upgrade would change, publish makes it
    code, out, err = cosctl("diff", "--package", "demo", "--version", "", "--stat", cluster=mc)
    assert (code, err) == (1, (
        f"cosctl diff: package demo resolves to demo-operator.v1.2.0 (1.2.0) over demo-operator.v1.1.0 in catalog "
        f"{catalog} (--catalog kept from demo-1): {images['1.2.0']}\n"
        + pulled("diff", images["1.2.0"])
        + "cosctl diff: bundle demo-operator.v1.2.0 rendered for namespace demo-system (options kept from demo-1)\n"))
    assert out == ("--- demo-1\n"
                   f"+++ docker://{images['1.2.0']}\n"
                   "changed  ConfigMap demo-system/demo-settings (phase configuration)                      | 4 ++--\n"
                   "changed  CustomResourceDefinition.apiextensions.k8s.io widgets.example.com (phase crds) | 2 +-\n"
                   "0 added, 0 removed, 2 changed, 0 moved, 0 unchanged; 3 insertions(+), 3 deletions(-)\n")
    code, out, err = cosctl("publish", "--package", "demo", "--version", "", cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "ClusterObjectSet demo-2 (revision 2) created")
    assert out.splitlines()[2] == (f"catalog {catalog}: demo-operator.v1.2.0 is an upgrade it allows from "
                                   "demo-operator.v1.1.0 (installed by ClusterObjectSet demo-1)")
    assert source_of(mc, "demo-2") == {"catalog": catalog, "packageName": "demo"}
    succeed(mc, "demo-2")
    code, out, _ = cosctl("publish", "--package", "demo", cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "unchanged: ClusterObjectSet demo-2 (revision 2) already has this "
                                               "content")


def test_an_upgrade_follows_the_catalogs_edges_one_at_a_time(images: dict[str, str], tmp_path: Path) -> None:
    """Installed at 1.0.0, the catalog allows 1.1.0 only (1.2.0 replaces 1.1.0): OLM v1 goes there first."""
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install(mc, catalog)
    code, out, _ = cosctl("publish", "--package", "demo", "--version", "", "--dry-run", cluster=mc)
    assert (code, out.splitlines()[0]) == (0, f"package demo resolves to demo-operator.v1.1.0 (1.1.0) over "
                                              f"demo-operator.v1.0.0 in catalog {catalog} (--catalog kept from "
                                              f"demo-1): {images['1.1.0']}")
    assert mc.objects(*COS)[-1]["metadata"]["name"] == "demo-1"   # a dry run writes nothing


def test_what_cannot_go_with_package_is_said_before_anything_is_pulled(images: dict[str, str], registry: Registry,
                                                                      tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    bundle = str(demo(tmp_path / "bundle", "1.0.0"))
    asked = len(registry.requests)
    assert cosctl("publish", "--package", "demo", bundle) == (
        2, "", f"cosctl publish: --package demo and {bundle}: give one or the other (with --package the catalog "
               "picks the bundle)\n")
    assert cosctl("publish", bundle, "--version", "1.0.0") == (
        2, "", "cosctl publish: --version: only with --package (a bundle given by path is its own version)\n")
    assert cosctl("publish", "--package", "demo", "--bundle-version", "3") == (
        2, "", "cosctl publish: --bundle-version with --package: the bundle's own version is recorded\n")
    assert cosctl("publish") == (
        2, "", "cosctl publish: give the manifests or bundle to publish (DIR|FILE), or --package NAME\n")
    assert cosctl("diff") == (
        2, "", "cosctl diff: give two revisions to compare (A B), manifests with --owner OWNER, or --package NAME\n")
    assert cosctl("publish", "--package", "demo", "-n", "demo-system", cluster=MemCluster()) == (
        2, "", "cosctl publish: no catalog to resolve package demo from: give --catalog\n")
    assert cosctl("publish", "--package", "dmeo", "--catalog", catalog, cluster=MemCluster()) == (
        1, "", 'cosctl publish: no bundles found for package "dmeo"\n'
               f"cosctl publish: cause: catalog {catalog} has no package dmeo; the closest: demo\n")
    assert cosctl("publish", "--package", "demo", "--catalog", catalog, "--channel", "fast", "-n", "demo-system",
                  cluster=MemCluster()) == (
        1, "", 'cosctl publish: no bundles found for package "demo" in channels [fast]\n'
               "cosctl publish: cause: package demo has no channel fast; its channels: stable\n")
    assert len(registry.requests) == asked


def test_an_image_that_holds_another_bundle_than_the_catalog_says_is_refused(images: dict[str, str],
                                                                           tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", {**images, "1.2.0": images["1.0.0"]}))
    mc = MemCluster()
    code, out, err = cosctl("publish", "--package", "demo", "-n", "demo-system", "--catalog", catalog, cluster=mc)
    assert (code, out) == (2, f"package demo resolves to demo-operator.v1.2.0 (1.2.0) in catalog {catalog}: "
                              f"{images['1.0.0']}\n")
    assert err == pulled("publish", images["1.0.0"]) + (
        f"cosctl publish: image {images['1.0.0']}: holds bundle demo-operator.v1.0.0 of package demo, but catalog "
        f"{catalog} lists it as bundle demo-operator.v1.2.0 of package demo: the catalog and the image disagree; "
        "nothing was done\n")
    assert mc.objects(*COS) == []


def test_a_kept_catalog_that_is_gone_says_where_it_was_kept_from(images: dict[str, str], tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path / "catalog.json", images)
    mc = MemCluster()
    assert cosctl("publish", "--package", "demo", "-n", "demo-system", "--catalog", str(catalog), cluster=mc)[0] == 0
    catalog.unlink()
    assert cosctl("publish", "--package", "demo", cluster=mc) == (
        2, "", f"cosctl publish: the catalog kept from ClusterObjectSet demo-1: {catalog}: no such catalog (give a "
               "File-Based Catalog directory or file, or an OCI image layout of an index image) (give --catalog to "
               "resolve from another)\n")


def test_a_relative_catalog_is_recorded_absolute_and_the_policy_not_at_all(images: dict[str, str], tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    write_catalog(tmp_path / "catalog.json", images)
    monkeypatch.chdir(tmp_path)
    mc = MemCluster()
    assert cosctl("publish", "--package", "demo", "-n", "demo-system", "--catalog", "catalog.json",
                  "--channel", "stable", "--upgrade-constraint-policy", "SelfCertified", cluster=mc)[0] == 0
    assert source_of(mc, "demo-1") == {"catalog": str(tmp_path / "catalog.json"), "packageName": "demo",
                                       "channels": ["stable"]}


def test_self_certified_is_for_one_run(images: dict[str, str], tmp_path: Path) -> None:
    """A jump past the catalog's edges, asked for once, does not make the next run skip them (or downgrade)."""
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install(mc, catalog)
    code, out, err = cosctl("publish", "--package", "demo", "--version", "1.2.0", cluster=mc)
    assert (code, err) == (1, (
        'cosctl publish: error upgrading from currently installed version "1.0.0": no bundles found for package '
        '"demo" matching version "1.2.0"\n'
        "cosctl publish: cause: the upgrades the catalog allows from demo-operator.v1.0.0, best first: "
        "demo-operator.v1.1.0; none is in the version range 1.2.0\n"))
    code, out, _ = cosctl("publish", "--package", "demo", "--version", "1.2.0", "--upgrade-constraint-policy",
                          "SelfCertified", cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "ClusterObjectSet demo-2 (revision 2) created")
    assert source_of(mc, "demo-2") == {"catalog": catalog, "packageName": "demo", "version": "1.2.0"}
    succeed(mc, "demo-2")
    code, out, err = cosctl("publish", "--package", "demo", "--version", "1.1.0", cluster=mc)
    assert (code, err) == (1, (
        'cosctl publish: error upgrading from currently installed version "1.2.0": no bundles found for package '
        '"demo" matching version "1.1.0"\n'))
    assert [c["metadata"]["name"] for c in mc.objects(*COS)] == ["demo-1", "demo-2"]


def test_the_same_content_published_by_path_keeps_the_record(images: dict[str, str], tmp_path: Path) -> None:
    """An in-place update by path (a new progress deadline) must not drop the bounds the next --package run keeps;
    new content by path starts a revision without one."""
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install(mc, catalog)
    code, out, _ = cosctl("publish", f"docker://{images['1.0.0']}", "--progress-deadline-minutes", "30", cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "unchanged content: ClusterObjectSet demo-1 (revision 1) updated in "
                                               "place (mutable fields only)")
    assert source_of(mc, "demo-1") == {"catalog": catalog, "packageName": "demo", "version": "1.0.0"}
    assert cosctl("publish", str(demo(tmp_path / "by-path", "1.1.0")), cluster=mc)[0] == 0
    assert api.ANNOTATION_BUNDLE_SOURCE not in mc.get(*COS, "demo-2")["metadata"]["annotations"]
    assert cosctl("publish", "--package", "demo", cluster=mc) == (
        2, "", "cosctl publish: no catalog to resolve package demo from: give --catalog (ClusterObjectSet demo-2 "
               "records none to keep)\n")


def test_a_rollback_carries_the_record_of_the_revision_it_restores(images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install(mc, catalog)
    assert cosctl("publish", "--package", "demo", "--version", "1.1.0", cluster=mc)[0] == 0
    succeed(mc, "demo-2")
    assert cosctl("rollback", "--owner", "demo", "--to", "1", cluster=mc)[0] == 0
    assert source_of(mc, "demo-3") == {"catalog": catalog, "packageName": "demo", "version": "1.0.0"}


def test_kept_channels_are_cleared_with_an_empty_channel(images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    assert cosctl("publish", "--package", "demo", "-n", "demo-system", "--catalog", catalog, "--channel", "stable",
                  "--version", "1.0.0", cluster=mc)[0] == 0
    code, out, _ = cosctl("diff", "--package", "demo", "--channel", "", "-o", "json", cluster=mc)
    assert code == 0 and json.loads(out)["source"] == {
        "catalog": catalog, "packageName": "demo", "channels": [], "version": "1.0.0",
        "kept": ["--catalog", "--version"], "keptFrom": "demo-1"}


def test_bad_input_is_named_and_said_as_early_as_it_can_be(images: dict[str, str], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    with pytest.raises(SystemExit) as exited:   # read as a path, an empty catalog would be the working directory
        main(["publish", "--package", "demo", "--catalog", ""])
    assert (exited.value.code, capsys.readouterr().err.splitlines()[-1]) == (
        2, "cosctl publish: error: argument --catalog: empty: give a catalog directory or file, or docker://INDEX")
    # no cluster is given: said before one is asked for
    assert cosctl("publish", "--package", "demo", "--catalog", catalog, "--version", ">>1") == (
        1, "", 'cosctl publish: desired version range ">>1" is invalid: improper constraint: ">>1"\n')
    mc = MemCluster()
    install(mc, catalog)
    mc.merge_patch(*COS, "demo-1", None, {"metadata": {"annotations": {api.ANNOTATION_BUNDLE_SOURCE: json.dumps(
        {"catalog": catalog, "packageName": "demo", "version": ">>1"})}}})
    assert cosctl("publish", "--package", "demo", cluster=mc) == (1, "", (
        'cosctl publish: desired version range ">>1" is invalid: improper constraint: ">>1"\n'
        "cosctl publish: cause: --version '>>1' was kept from ClusterObjectSet demo-1: give --version to replace "
        "it\n"))
    mc.merge_patch(*COS, "demo-1", None, {"metadata": {"annotations": {api.ANNOTATION_BUNDLE_SOURCE: "{damaged"}}})
    assert cosctl("publish", "--package", "demo", "--version", "1.0.0", cluster=mc) == (2, "", (
        f"cosctl publish: ClusterObjectSet demo-1: annotation {api.ANNOTATION_BUNDLE_SOURCE} is not what cosctl "
        "records (not JSON): give --catalog, --channel and --version, which replace it (--channel '' and "
        "--version '' for any)\n"))
    code, out, _ = cosctl("publish", "--package", "demo", "--catalog", catalog, "--channel", "", "--version",
                          "1.0.0", cluster=mc)   # everything given: the damaged record is not read, and replaced
    assert (code, out.splitlines()[-1]) == (0, "unchanged content: ClusterObjectSet demo-1 (revision 1) updated in "
                                               "place (mutable fields only)")
    assert source_of(mc, "demo-1") == {"catalog": catalog, "packageName": "demo", "version": "1.0.0"}
    unpullable = write_catalog(tmp_path / "unpullable.json", {**images, "1.2.0": "oci:/tmp/demo"})
    assert cosctl("publish", "--package", "demo", "--catalog", str(unpullable), cluster=MemCluster(),
                  owner="other")[2] == (
        f"cosctl publish: catalog {unpullable}: bundle demo-operator.v1.2.0 names an image cosctl cannot pull: "
        "image reference 'docker://oci:/tmp/demo': invalid registry 'oci:'\n")


# --- the record itself ---------------------------------------------------------------------------------------------

def revision(name: str, annotation: str | None) -> dict[str, Any]:
    annotations = {} if annotation is None else {api.ANNOTATION_BUNDLE_SOURCE: annotation}
    return {"metadata": {"name": name, "annotations": annotations}}


def test_what_the_command_line_leaves_out_is_kept_from_the_same_packages_record() -> None:
    recorded = CatalogSource("docker://index:1", "demo", ("stable",), "~1.2")
    latest = revision("demo-3", recorded.to_annotation())
    kept = choose_source("demo", catalog=None, channels=None, version=None, latest=latest)
    assert (kept.source, kept.kept, kept.kept_from) == (recorded, ("--catalog", "--channel", "--version"), "demo-3")
    given = choose_source("demo", catalog="other", channels=["fast"], version="", latest=latest)
    assert (given.source, given.kept, given.kept_from) == (CatalogSource("other", "demo", ("fast",)), (), None)
    cleared = choose_source("demo", catalog=None, channels=[""], version=None, latest=latest)
    assert (cleared.source, cleared.kept) == (CatalogSource("docker://index:1", "demo", (), "~1.2"),
                                              ("--catalog", "--version"))
    with pytest.raises(CatalogSourceError) as caught:   # another package's record is not this one's
        choose_source("other", catalog=None, channels=None, version=None, latest=latest)
    assert str(caught.value) == ("no catalog to resolve package other from: give --catalog (ClusterObjectSet demo-3 "
                                 "records the source of package demo, not other)")


@pytest.mark.parametrize(("text", "why"), [
    ("{", "not JSON"), ("[]", "not an object"), ('{"catalog": "c"}', "no catalog or packageName"),
    ('{"catalog": "c", "packageName": "p", "channels": "stable"}', "channels or version malformed"),
    ('{"catalog": "c", "packageName": "p", "channels": [""]}', "channels or version malformed"),
    ('{"catalog": "c", "packageName": "p", "version": 1}', "channels or version malformed")])
def test_a_record_cosctl_did_not_write_is_refused_naming_the_revision(text: str, why: str) -> None:
    with pytest.raises(CatalogSourceError) as caught:
        choose_source("p", catalog=None, channels=None, version=None, latest=revision("p-1", text))
    assert str(caught.value) == (f"ClusterObjectSet p-1: annotation {api.ANNOTATION_BUNDLE_SOURCE} is not what cosctl "
                                 f"records ({why}): give --catalog, --channel and --version, which replace it "
                                 "(--channel '' and --version '' for any)")


def test_rbac_of_a_package_is_for_the_bundle_publish_would_install(images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    code, out, err = cosctl("rbac", "--package", "demo", "-n", "demo-system", "--catalog", catalog, "--version",
                            "1.0.0", "--service-account", "installer", cluster=mc)
    assert (code, err) == (0, f"cosctl rbac: package demo resolves to demo-operator.v1.0.0 (1.0.0) in catalog "
                              f"{catalog}: {images['1.0.0']}\n" + pulled("rbac", images["1.0.0"]))
    assert out.startswith("# RBAC for ServiceAccount demo-system/installer to have demo's revisions applied with its "
                          "rights (cosctl rbac)\n")
    assert "  - demo-settings\n" in out and mc.writes == 0
    allow_service_accounts(mc, "demo-system/installer")
    install(mc, catalog, "--service-account", "installer")
    code, out, err = cosctl("rbac", "--package", "demo", "--version", "", cluster=mc)   # the account is kept
    assert (code, out.splitlines()[0]) == (0, "# RBAC for ServiceAccount demo-system/installer to have demo's "
                                              "revisions applied with its rights (cosctl rbac)")
    code, out, err = cosctl("rbac", "--package", "demo", "--version", "", "--keep-installed", cluster=mc)
    assert (code, err) == (0, (
        f"cosctl rbac: package demo resolves to demo-operator.v1.1.0 (1.1.0) over demo-operator.v1.0.0 in catalog "
        f"{catalog} (--catalog kept from demo-1): {images['1.1.0']}\n" + pulled("rbac", images["1.1.0"])
        + "cosctl rbac: options kept from demo-1\n"
        "cosctl rbac: keeping patch and delete on the objects of demo-1\n"))
    assert out.startswith("# RBAC for ServiceAccount demo-system/installer")
    bundle = str(demo(tmp_path / "by-path", "1.0.0"))
    assert cosctl("rbac", bundle, "-n", "x", "--service-account", "installer", "--catalog", catalog) == (
        2, "", "cosctl rbac: --catalog, --channel and --upgrade-constraint-policy: only with --package (cosctl rbac "
               "grants for the bundle it is given, whichever the catalog allows)\n")


def test_resolve_with_an_owner_answers_what_publish_package_would_pick(images: dict[str, str],
                                                                      tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install(mc, catalog)
    code, out, err = cosctl("resolve", "demo", "--owner", "demo", cluster=mc)
    assert (code, err) == (0, f"cosctl resolve: kept from demo-1 (as publish --package keeps them): --catalog "
                              f"{catalog}, --version '1.0.0'\n")
    assert out.splitlines()[:2] == ["installed: demo-operator.v1.0.0 (1.0.0), by ClusterObjectSet demo-1",
                                    f"resolves to: demo-operator.v1.0.0 1.0.0 {images['1.0.0']}"]
    code, out, _ = cosctl("resolve", "demo", "--owner", "demo", "-o", "json", cluster=mc)
    assert (code, json.loads(out)["source"]) == (0, {"catalog": catalog, "packageName": "demo", "channels": [],
                                                     "version": "1.0.0", "kept": ["--catalog", "--version"],
                                                     "keptFrom": "demo-1"})
    code, out, err = cosctl("resolve", "demo", "--owner", "demo", "--version", "", cluster=mc)
    kept = f"cosctl resolve: kept from demo-1 (as publish --package keeps them): --catalog {catalog}\n"
    assert (code, err, out.splitlines()[1]) == (0, kept, f"resolves to: demo-operator.v1.1.0 1.1.0 {images['1.1.0']}")
    code, out, err = cosctl("resolve", "demo", "--owner", "demo", "--version", ">=1.2", cluster=mc)
    assert (code, err) == (1, (
        kept +
        'cosctl resolve: error upgrading from currently installed version "1.0.0": no bundles found for package '
        '"demo" matching version ">=1.2"\n'
        "cosctl resolve: cause: the upgrades the catalog allows from demo-operator.v1.0.0, best first: "
        "demo-operator.v1.1.0; none is in the version range >=1.2\n"))
    assert cosctl("resolve", "demo") == (
        2, "", "cosctl resolve: --catalog DIR|FILE|docker://INDEX|clustercatalogs:[SELECTOR] is required (or --owner "
               "OWNER, whose latest revision records the catalog publish --package resolved it from)\n")
    # a record cosctl cannot read: resolve (which writes nothing) goes on with what the command line gives
    mc.merge_patch(*COS, "demo-1", None, {"metadata": {"annotations": {api.ANNOTATION_BUNDLE_SOURCE: "{damaged"}}})
    code, out, err = cosctl("resolve", "demo", "--owner", "demo", "--catalog", catalog, cluster=mc)
    assert (code, out.splitlines()[1], err) == (0, f"resolves to: demo-operator.v1.1.0 1.1.0 {images['1.1.0']}", (
        f"cosctl resolve: warning: ClusterObjectSet demo-1: annotation {api.ANNOTATION_BUNDLE_SOURCE} is not what "
        "cosctl records (not JSON): give --catalog, --channel and --version, which replace it (--channel '' and "
        "--version '' for any); resolving with the command line's bounds alone\n"))



def test_list_says_what_each_owner_has_and_what_publish_package_would_upgrade_it_to(
        images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    gone = write_catalog(tmp_path / "gone.json", images)
    mc = MemCluster()
    install(mc, catalog)
    assert cosctl("publish", "--package", "demo", "--owner", "lost", "-n", "lost-system", "--catalog", str(gone),
                  "--channel", "stable", cluster=mc)[0] == 0
    gone.unlink()
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "settings.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "
                                             "shop}\ndata: {page-size: '20'}\n")
    assert cosctl("publish", str(manifests), "--owner", "shop", cluster=mc)[0] == 0
    code, out, err = cosctl("list", cluster=mc)
    assert (code, err) == (0, "")
    assert columns(out) == [
        ["OWNER", "PACKAGE", "INSTALLED", "LATEST", "STATE", "SOURCE"],
        ["demo", "demo", "1.0.0", "demo-1", "Pending", f"{catalog} (version 1.0.0)"],
        ["lost", "demo", "-", "lost-1", "Pending", f"{gone} (channel stable)"],
        ["shop", "-", "-", "shop-1", "Pending", "by path"]]
    code, out, err = cosctl("list", "--upgrades", cluster=mc)
    assert (code, err) == (1, f"cosctl list: lost: {gone}: no such catalog (give a File-Based Catalog directory or "
                              "file, or an OCI image layout of an index image)\n")
    assert [row[-1] for row in columns(out)] == ["UPGRADE", "up to date", "cannot resolve (below)", "-"]
    code, out, json_err = cosctl("list", "--upgrades", "-o", "json", cluster=mc)   # said on stderr for a pipeline
    assert (code, json_err, json.loads(out)[1]["upgradeProblem"]) == (1, err, err.split(": ", 2)[2].rstrip("\n"))
    assert cosctl("publish", "--package", "demo", "--owner", "lost", "--catalog", catalog, cluster=mc)[0] == 0
    succeed(mc, "lost-1")
    mc.merge_patch(*COS, "demo-1", None, {"metadata": {"annotations": {api.ANNOTATION_BUNDLE_SOURCE: json.dumps(
        {"catalog": catalog, "packageName": "demo"})}}})   # the range dropped: 1.1.0 is next
    code, out, err = cosctl("list", "--upgrades", "-o", "json", cluster=mc)
    listed = json.loads(out)
    assert code == 0 and [(o["owner"], o.get("upgrade"), o.get("upToDate")) for o in listed] == [
        ("demo", {"name": "demo-operator.v1.1.0", "version": "1.1.0", "image": images["1.1.0"]}, False),
        ("lost", {"name": "demo-operator.v1.2.0", "version": "1.2.0", "image": images["1.2.0"]}, True),
        ("shop", None, None)]
    assert listed[0]["installed"] == {"package": "demo", "name": "demo-operator.v1.0.0", "version": "1.0.0",
                                      "revision": "demo-1"}
    assert listed[0]["source"] == {"catalog": catalog, "packageName": "demo", "channels": [], "version": ""}


def test_a_first_install_still_rolling_out_is_said_when_resolving_again(images: dict[str, str],
                                                                        tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    assert cosctl("publish", "--package", "demo", "-n", "demo-system", "--catalog", catalog, "--version", "1.0.0",
                  cluster=mc)[0] == 0
    code, out, err = cosctl("publish", "--package", "demo", "--version", "", "--dry-run", cluster=mc)
    assert (code, err.splitlines()[0]) == (0, (
        "cosctl publish: warning: no revision of the owner has succeeded yet (demo-1 has not): resolving as a first "
        "install, as OLM v1 does, with no upgrade edges from it (wait for it with cosctl status demo-1 --watch)"))
    assert out.splitlines()[0].startswith("package demo resolves to demo-operator.v1.2.0 (1.2.0) in catalog")


def test_list_says_an_upgrade_already_published_is_no_upgrade_waiting(images: dict[str, str], tmp_path: Path) -> None:
    """While the next revision rolls out (or is stuck), publish --package would change nothing: no upgrade waits."""
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install(mc, catalog)
    assert cosctl("publish", "--package", "demo", "--version", "<1.2", cluster=mc)[0] == 0   # demo-2: 1.1.0
    code, out, err = cosctl("list", "--upgrades", cluster=mc)
    assert (code, err) == (0, "")
    assert columns(out)[1][2:] == ["1.0.0 (demo-1)", "demo-2", "Pending", f"{catalog} (version <1.2)",
                                   "published in demo-2"]
    code, out, _ = cosctl("list", "--upgrades", "-o", "json", cluster=mc)
    assert {k: json.loads(out)[0][k] for k in ("upToDate", "publishedIn")} == {"upToDate": False,
                                                                               "publishedIn": "demo-2"}


def test_list_names_the_installed_package_when_the_latest_revision_changed_it(
        images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install(mc, catalog)
    other = write_bundle(tmp_path / "other", manifests={"demo.clusterserviceversion.yaml": csv("other.v7.0.0",
                                                                                             version="7.0.0")},
                         annotations=annotations_yaml(package="other"))
    assert cosctl("publish", str(other), "--owner", "demo", cluster=mc)[0] == 0
    mc.put({"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": {"name": "by-hand"},
            "spec": {"lifecycleState": "Active", "revision": 1, "phases": []}})
    code, out, err = cosctl("list", cluster=mc)
    assert (code, columns(out)[1][:4]) == (0, ["demo", "other", "demo 1.0.0 (demo-1)", "demo-2"])
    assert err == (f"cosctl list: 1 ClusterObjectSet(s) without the label {api.LABEL_OWNER_NAME} belong to no owner "
                   "and are not listed: by-hand\n")
