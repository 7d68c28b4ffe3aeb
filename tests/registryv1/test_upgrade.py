"""``cosctl upgrade``: each owner resolved from a catalog gets the upgrade its catalog offers, published as
``publish --package`` publishes it; the others are left alone, and one failing does not stop the rest. The bundle
images are pulled from the test registry (tests/support/registry_server.py), over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from common.contract import api
from common.testing.memcluster import MemCluster
from tests.producer.helpers import cosctl
from tests.registryv1.demo_catalog import COS, columns, install, pulled, source_of, succeed, write_catalog
from tests.registryv1.pulling import push_index as pushed
from tests.support.registry_server import Registry


def widen(mc: MemCluster, name: str, catalog: str) -> None:
    """The revision's record drops its range (as an admin's ``kubectl annotate`` would): any version is next."""
    mc.merge_patch(*COS, name, None, {"metadata": {"annotations": {api.ANNOTATION_BUNDLE_SOURCE: json.dumps(
        {"catalog": catalog, "packageName": "demo"})}}})


def install_wide(mc: MemCluster, catalog: str, owner: str = "wide", *extra: str) -> None:
    """``owner`` installed at 1.0.0 into ``<owner>-system``, rolled out, then its range dropped: 1.1.0 is waiting."""
    code, out, err = cosctl("publish", "--package", "demo", "--owner", owner, "-n", f"{owner}-system", "--catalog",
                            catalog, "--version", "1.0.0", *extra, cluster=mc)
    assert code == 0, out + err
    succeed(mc, f"{owner}-1")
    widen(mc, f"{owner}-1", catalog)


def by_path(mc: MemCluster, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "settings.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "
                                             "shop}\ndata: {page-size: '20'}\n")
    assert cosctl("publish", str(manifests), "--owner", "shop", cluster=mc)[0] == 0


def names(mc: MemCluster) -> list[str]:
    return sorted(cos["metadata"]["name"] for cos in mc.objects(*COS))


def test_every_waiting_upgrade_is_published_and_the_rest_left_alone(images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install(mc, catalog)   # demo: 1.0.0 within its range --version 1.0.0, up to date
    install_wide(mc, catalog)
    by_path(mc, tmp_path)
    code, out, err = cosctl("upgrade", "--all", cluster=mc)
    assert (code, err) == (0, pulled("upgrade", images["1.1.0"]))
    lines = out.splitlines()
    assert lines[:4] == [
        "wide: upgrading 1.0.0 (demo-operator.v1.0.0) to 1.1.0 (demo-operator.v1.1.0)",
        f"package demo resolves to demo-operator.v1.1.0 (1.1.0) over demo-operator.v1.0.0 in catalog {catalog} "
        f"(--catalog kept from wide-1): {images['1.1.0']}",
        "bundle demo-operator.v1.1.0 rendered for namespace wide-system (options kept from wide-1)",
        f"catalog {catalog}: demo-operator.v1.1.0 is an upgrade it allows from demo-operator.v1.0.0 (installed by "
        "ClusterObjectSet wide-1)"]
    assert lines[4].startswith("create Secret olmv1-system/wide-2-")
    assert lines[5:7] == ["create ClusterObjectSet wide-2: revision 2, 2 phase(s), 2 object(s)",
                          f"patch Secret olmv1-system/{lines[4].split('/')[1].split(':')[0]}: ownerReference to "
                          "ClusterObjectSet wide-2"]
    assert lines[7] == "ClusterObjectSet wide-2 (revision 2) created"
    assert columns("\n".join(lines[8:])) == [
        ["OWNER", "PACKAGE", "INSTALLED", "UPGRADE", "RESULT"],
        ["demo", "demo", "1.0.0", "-", "up to date"],
        ["shop", "-", "-", "-", "by path"],
        ["wide", "demo", "1.0.0", "1.1.0", "wide-2 created"]]
    assert source_of(mc, "wide-2") == {"catalog": catalog, "packageName": "demo"}
    assert mc.get(*COS, "wide-2")["metadata"]["annotations"][api.ANNOTATION_BUNDLE_NAME] == "demo-operator.v1.1.0"

    # while wide-2 rolls out, the owner is left alone: nothing is written, nothing pulled
    before = names(mc)
    code, out, err = cosctl("upgrade", "--all", cluster=mc)
    assert (code, err) == (0, "")
    assert [row[-1] for row in columns(out)] == ["RESULT", "up to date", "by path",
                                                 "left alone: wide-2 has not succeeded"]
    assert names(mc) == before

    # once it has succeeded, the catalog's next edge: 1.2.0 replaces 1.1.0
    succeed(mc, "wide-2")
    code, out, err = cosctl("upgrade", "--all", cluster=mc)
    assert (code, out.splitlines()[0]) == (0, "wide: upgrading 1.1.0 (demo-operator.v1.1.0) to 1.2.0 "
                                              "(demo-operator.v1.2.0)")
    assert columns(out)[-1] == ["wide", "demo", "1.1.0", "1.2.0", "wide-3 created"]
    succeed(mc, "wide-3")
    code, out, _ = cosctl("upgrade", "wide", cluster=mc)
    assert (code, columns(out)) == (0, [["OWNER", "PACKAGE", "INSTALLED", "UPGRADE", "RESULT"],
                                        ["wide", "demo", "1.2.0", "-", "up to date"]])


def test_an_upgrade_changes_the_bundle_only(images: dict[str, str], tmp_path: Path) -> None:
    """What publish --package would reset to its defaults, the latest revision's owner kind, collision protection,
    progress deadline, probes and Secrets namespace, is carried to the upgrade."""
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    probes = [{"selector": {"type": "GroupKind", "groupKind": {"group": "", "kind": "ConfigMap"}},
               "assertions": [{"type": "FieldsEqual", "fieldsEqual": {"fieldA": "data.version",
                                                                      "fieldB": "data.version"}}]}]
    (tmp_path / "probes.json").write_text(json.dumps(probes))
    mc = MemCluster()
    install_wide(mc, catalog, "wide", "--owner-kind", "Operator", "--collision-protection", "IfNoController",
                 "--progress-deadline-minutes", "30", "--progression-probes", str(tmp_path / "probes.json"),
                 "--system-namespace", "wide-secrets")
    code, out, err = cosctl("upgrade", "wide", cluster=mc)
    assert code == 0, out + err
    old, new = mc.get(*COS, "wide-1"), mc.get(*COS, "wide-2")
    for cos in (old, new):
        assert cos["metadata"]["labels"][api.LABEL_OWNER_KIND] == "Operator"
        assert (cos["spec"]["collisionProtection"], cos["spec"]["progressDeadlineMinutes"]) == ("IfNoController", 30)
        assert cos["spec"]["progressionProbes"] == probes
        assert {entry["ref"]["namespace"] for phase in cos["spec"]["phases"] for entry in phase["objects"]} == {
            "wide-secrets"}
    assert new["metadata"]["annotations"][api.ANNOTATION_BUNDLE_NAME] == "demo-operator.v1.1.0"


def test_named_owners_are_upgraded_and_what_cannot_be_is_said(images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install_wide(mc, catalog)
    by_path(mc, tmp_path)
    code, out, err = cosctl("upgrade", "ghost", "shop", "wide", "shop", cluster=mc)
    assert code == 1
    assert err == ("cosctl upgrade: ghost: no ClusterObjectSets of owner ghost on the cluster (cosctl list shows the "
                   "owners)\n"
                   "cosctl upgrade: shop: its latest revision shop-1 records no catalog (published by path): upgrade "
                   "it with cosctl publish, or publish it once with --package NAME --catalog CATALOG to have its "
                   "upgrades resolved\n" + pulled("upgrade", images["1.1.0"]))
    assert columns(out)[-4:] == [["OWNER", "PACKAGE", "INSTALLED", "UPGRADE", "RESULT"],
                                 ["ghost", "-", "-", "-", "failed (said on stderr)"],
                                 ["shop", "-", "-", "-", "failed (said on stderr)"],
                                 ["wide", "demo", "1.0.0", "1.1.0", "wide-2 created"]]
    assert cosctl("upgrade", cluster=mc) == (
        2, "", "cosctl upgrade: name the owners to upgrade, or give --all for every owner resolved from a catalog\n")
    assert cosctl("upgrade", "--all", "wide", cluster=mc) == (
        2, "", "cosctl upgrade: --all and OWNER: give one or the other\n")


def test_one_owner_failing_does_not_stop_the_others(images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    gone = write_catalog(tmp_path / "gone.json", images)
    liar = str(write_catalog(tmp_path / "liar.json", {**images, "1.1.0": images["1.0.0"]}))
    mc = MemCluster()
    install_wide(mc, str(gone), "lost")
    gone.unlink()
    install_wide(mc, liar, "bad")   # its catalog names 1.0.0's image for 1.1.0: the pull disagrees
    install_wide(mc, catalog)
    code, out, err = cosctl("upgrade", "--all", "-o", "json", cluster=mc)
    assert code == 1
    lost = (f"{gone}: no such catalog (give a File-Based Catalog directory or file, or an OCI image layout of an "
            "index image)")
    assert err.splitlines()[0] == "bad: upgrading 1.0.0 (demo-operator.v1.0.0) to 1.1.0 (demo-operator.v1.1.0)"
    disagree = (f"image {images['1.0.0']}: holds bundle demo-operator.v1.0.0 of package demo, but catalog {liar} "
                "lists it as bundle demo-operator.v1.1.0 of package demo: the catalog and the image disagree; nothing "
                "was done")
    assert f"cosctl upgrade: bad: {disagree}" in err.splitlines()
    assert f"cosctl upgrade: lost: {lost}" in err.splitlines()
    assert err.splitlines()[-1] == "ClusterObjectSet wide-2 (revision 2) created"
    listed = {outcome["owner"]: outcome for outcome in json.loads(out)}
    assert {owner: (o["result"], o["revision"], o.get("problem")) for owner, o in listed.items()} == {
        "bad": ("failed", None, disagree),
        "lost": ("failed", None, lost),
        "wide": ("created", "wide-2", None)}
    assert names(mc) == ["bad-1", "lost-1", "wide-1", "wide-2"]


def test_a_dry_run_says_what_it_would_publish_and_writes_nothing(images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    install_wide(mc, catalog)
    code, out, err = cosctl("upgrade", "--all", "--dry-run", "-o", "json", cluster=mc)
    assert code == 0
    assert json.loads(out) == [{
        "owner": "wide", "package": "demo",
        "installed": {"name": "demo-operator.v1.0.0", "version": "1.0.0", "revision": "wide-1"},
        "upgrade": {"name": "demo-operator.v1.1.0", "version": "1.1.0", "image": images["1.1.0"]},
        "deprecations": [], "result": "created", "revision": "wide-2", "dryRun": True}]
    assert "would create ClusterObjectSet wide-2: revision 2, 2 phase(s), 2 object(s)" in err.splitlines()
    assert err.splitlines()[-1] == "ClusterObjectSet wide-2 (revision 2) would be created"
    assert names(mc) == ["wide-1"]
    code, out, _ = cosctl("upgrade", "--all", "--dry-run", cluster=mc)
    assert (code, columns(out)[-1]) == (0, ["wide", "demo", "1.0.0", "1.1.0", "wide-2 would be created"])


def push_index(registry: Registry, tmp_path: Path, images: dict[str, str]) -> str:
    """The catalog of :func:`write_catalog` as an index image (its /configs), pushed as op/catalog:latest."""
    text = write_catalog(tmp_path / "index-catalog.json", images).read_text()
    pushed(registry, tmp_path, "op/catalog", text)
    return f"docker://{registry.ref('op/catalog')}"


def test_each_catalog_is_read_once_however_many_owners_record_it(images: dict[str, str], registry: Registry,
                                                                 tmp_path: Path) -> None:
    index = push_index(registry, tmp_path, images)
    mc = MemCluster()
    for owner in ("one", "two", "three"):
        install_wide(mc, index, owner)
    asked = len(registry.requests)
    code, out, err = cosctl("upgrade", "--all", cluster=mc)
    assert code == 0, err
    index_reads = [r for r in registry.requests[asked:] if r.method == "GET" and r.path.startswith(
        "/v2/op/catalog/manifests/")]
    assert len(index_reads) == 1
    assert [row[-1] for row in columns(out)[-4:]] == ["RESULT", "one-2 created", "three-2 created", "two-2 created"]
    assert source_of(mc, "two-2") == {"catalog": index, "packageName": "demo"}


def test_a_revision_that_has_not_succeeded_an_uninstall_or_an_archived_owner_is_left_alone(
        images: dict[str, str], tmp_path: Path) -> None:
    """Unattended, an upgrade never decides over what is on its way: a first install that has not succeeded (the
    catalog would pick 1.2.0 over it), a rollback rolling out, an owner being deleted, an owner all archived."""
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    mc = MemCluster()
    assert cosctl("publish", "--package", "demo", "--owner", "first", "-n", "first-system", "--catalog", catalog,
                  "--version", "1.0.0", cluster=mc)[0] == 0
    widen(mc, "first-1", catalog)   # publish --package would resolve 1.2.0 as a first install, over first-1
    install_wide(mc, catalog, "back")
    assert cosctl("upgrade", "back", cluster=mc)[0] == 0
    succeed(mc, "back-2")
    mc.merge_patch(*COS, "back-1", None, {"spec": {"lifecycleState": "Archived"}})
    assert cosctl("rollback", "--owner", "back", cluster=mc)[0] == 0   # back-3: 1.0.0 again, rolling out
    install_wide(mc, catalog, "gone")
    mc.merge_patch(*COS, "gone-1", None, {"metadata": {"finalizers": ["example.com/teardown"]}})
    mc.delete(*COS, "gone-1", None)   # uninstall (or kubectl delete): the teardown is under way
    install_wide(mc, catalog, "old")
    mc.merge_patch(*COS, "old-1", None, {"spec": {"lifecycleState": "Archived"}})
    before = names(mc)
    code, out, err = cosctl("upgrade", "--all", "-o", "json", cluster=mc)
    assert (code, err) == (0, "")
    assert [(o["owner"], o["result"], o["revision"]) for o in json.loads(out)] == [
        ("back", "rollingOut", "back-3"), ("first", "rollingOut", "first-1"), ("gone", "deleting", "gone-1"),
        ("old", "archived", "old-1")]
    assert names(mc) == before
    code, out, _ = cosctl("upgrade", "--all", cluster=mc)
    assert [row[-1] for row in columns(out)] == [
        "RESULT", "left alone: back-3 has not succeeded", "left alone: first-1 has not succeeded",
        "left alone: gone-1 is being deleted", "left alone: old-1 is archived"]


def test_a_failed_publish_says_why_in_json_too_and_a_package_is_never_read_as_an_option(
        images: dict[str, str], tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json", images))
    dashed = tmp_path / "dashed.json"
    dashed.write_text(Path(catalog).read_text().replace('"demo"', '"-demo"'))
    mc = MemCluster()
    install_wide(mc, catalog, "dash")
    mc.merge_patch(*COS, "dash-1", None, {"metadata": {"annotations": {api.ANNOTATION_BUNDLE_SOURCE: json.dumps(
        {"catalog": str(dashed), "packageName": "-demo"})}}})   # a record naming a package that starts with "-"
    install_wide(mc, catalog)
    code, out, err = cosctl("upgrade", "--all", "-o", "json", cluster=mc)
    listed = {o["owner"]: o for o in json.loads(out)}
    problem = (f"image {images['1.1.0']}: holds bundle demo-operator.v1.1.0 of package demo, but catalog {dashed} "
               "lists it as bundle demo-operator.v1.1.0 of package -demo: the catalog and the image disagree; "
               "nothing was done")
    assert (code, listed["dash"]["result"], listed["dash"]["problem"]) == (1, "failed", problem)
    assert f"cosctl upgrade: dash: {problem}" in err.splitlines()
    assert (listed["wide"]["result"], listed["wide"]["revision"]) == ("created", "wide-2")


def test_what_the_catalog_deprecates_of_an_installed_operator_is_said_by_list_and_upgrade(
        images: dict[str, str], tmp_path: Path) -> None:
    """As a ClusterExtension's Deprecated conditions say it: the package, the channels asked for, the installed
    bundle (not a bundle merely offered), from the catalog resolved from; nothing is refused for it."""
    catalog = write_catalog(tmp_path / "catalog.json", images)
    mc = MemCluster()
    install_wide(mc, str(catalog))
    with catalog.open("a") as f:
        f.write("\n" + json.dumps({"schema": "olm.deprecations", "package": "demo", "entries": [
            {"reference": {"schema": "olm.package"}, "message": "demo is end of life: move to demo2"},
            {"reference": {"schema": "olm.channel", "name": "stable"}, "message": "channel stable is frozen"},
            {"reference": {"schema": "olm.bundle", "name": "demo-operator.v1.0.0"}, "message": "1.0.0 leaks"},
            {"reference": {"schema": "olm.bundle", "name": "demo-operator.v1.2.0"}, "message": "1.2.0 is bad"}]}))
    said = ["demo is end of life: move to demo2", "channel stable is frozen", "1.0.0 leaks"]
    code, out, err = cosctl("list", "--upgrades", "-o", "json", cluster=mc)
    assert (code, json.loads(out)[0]["deprecations"]) == (0, said), err
    assert err.splitlines() == [f"cosctl list: warning: wide: deprecated: {m}" for m in said]
    code, out, err = cosctl("upgrade", "--all", "--dry-run", cluster=mc)
    assert code == 0, err
    assert err.splitlines()[:3] == [f"cosctl upgrade: warning: wide: deprecated: {m}" for m in said]
    assert columns(out)[-1] == ["wide", "demo", "1.0.0", "1.1.0", "wide-2 would be created"]

