"""File-Based Catalogs and OLM v1's resolution over them (common/bundle/registryv1/catalog.py, resolve.py, and
blang/semver's ranges in semver.py): which bundle a ClusterExtension resolves to, and OLM v1's messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.bundle.registryv1 import catalog as catalog_module
from common.bundle.registryv1 import semver
from common.bundle.registryv1.catalog import CatalogError, Package, load_catalog
from common.bundle.registryv1.constraints import parse_constraints
from common.bundle.registryv1.model import BundleInputError
from common.bundle.registryv1.oci import CATALOG_CONFIGS_LABEL
from common.bundle.registryv1.resolve import (
    POLICY_SELF_CERTIFIED,
    Installed,
    Query,
    ResolutionError,
    VersionReleaseError,
    candidates,
    dependencies,
    deprecations,
    make_query,
    parse_legacy_version_release,
    resolve,
)
from tests.registryv1.bundles import files_layer, image_layout, tar_of


def bundle(name: str, version: str | None, *, package: str = "demo") -> dict[str, Any]:
    props = [] if version is None else [{"type": "olm.package", "value": {"packageName": package,
                                                                          "version": version}}]
    return {"schema": "olm.bundle", "name": name, "package": package, "image": f"quay.io/demo/{name}",
            "properties": props}


def channel(name: str, entries: list[dict[str, Any]], *, package: str = "demo") -> dict[str, Any]:
    return {"schema": "olm.channel", "name": name, "package": package, "entries": entries}


def write_catalog(path: Path, objects: list[dict[str, Any]]) -> Path:
    path.write_text("".join("---\n" + yaml.safe_dump(o) for o in objects))
    return path


DEMO = [
    {"schema": "olm.package", "name": "demo", "defaultChannel": "stable"},
    channel("stable", [{"name": "demo.v1.0.0"},
                       {"name": "demo.v1.1.0", "replaces": "demo.v1.0.0"},
                       {"name": "demo.v1.2.0", "replaces": "demo.v1.1.0", "skips": ["demo.v1.0.0"]},
                       {"name": "demo.v2.0.0", "replaces": "demo.v1.2.0", "skipRange": ">=1.0.0 <1.2.0"}]),
    channel("fast", [{"name": "demo.v2.1.0-rc.1", "replaces": "demo.v2.0.0"}]),
    bundle("demo.v1.0.0", "1.0.0"), bundle("demo.v1.1.0", "1.1.0"), bundle("demo.v1.2.0", "1.2.0"),
    bundle("demo.v2.0.0", "2.0.0"), bundle("demo.v2.1.0-rc.1", "2.1.0-rc.1"),
]


@pytest.fixture
def demo(tmp_path: Path) -> Any:
    return load_catalog(write_catalog(tmp_path / "catalog.yaml", DEMO)).package("demo")


def names(bundles: Any) -> list[str]:
    return [b.name for b in bundles]


def test_a_first_install_resolves_to_the_highest_version(demo):
    resolution = resolve(demo, Query("demo"), None)
    assert (resolution.bundle.name, str(resolution.version)) == ("demo.v2.1.0-rc.1", "2.1.0-rc.1")
    assert names(resolution.candidates) == ["demo.v2.1.0-rc.1", "demo.v2.0.0", "demo.v1.2.0", "demo.v1.1.0",
                                            "demo.v1.0.0"]
    assert resolve(demo, Query("demo", channels=("stable",)), None).bundle.name == "demo.v2.0.0"


def test_upgrades_follow_replaces_skips_and_skip_range(demo):
    on = Installed("demo.v1.0.0", "1.0.0")
    # v1.1.0 replaces it, v1.2.0 skips it, v2.0.0's skipRange holds 1.0.0, and the installed one itself stays
    assert names(candidates(demo, Query("demo"), on)) == ["demo.v2.0.0", "demo.v1.2.0", "demo.v1.1.0",
                                                          "demo.v1.0.0"]
    assert names(candidates(demo, Query("demo"), Installed("demo.v1.2.0", "1.2.0"))) == [
        "demo.v2.0.0", "demo.v1.2.0"]  # 1.2.0 is outside v2.0.0's skipRange, but v2.0.0 replaces it
    assert names(candidates(demo, Query("demo"), Installed("demo.v2.0.0", "2.0.0"))) == [
        "demo.v2.1.0-rc.1", "demo.v2.0.0"]  # an edge in any channel of the package counts
    assert names(candidates(demo, Query("demo", channels=("stable",)), Installed("demo.v2.0.0", "2.0.0"))) == [
        "demo.v2.0.0"]


def test_self_certified_lifts_the_upgrade_edges(demo):
    query = Query("demo", policy=POLICY_SELF_CERTIFIED)
    assert resolve(demo, query, Installed("demo.v2.0.0", "2.0.0")).bundle.name == "demo.v2.1.0-rc.1"
    assert len(candidates(demo, query, Installed("demo.v9.0.0", "9.0.0"))) == 5  # downgrades too


def test_olm_v1s_messages_when_nothing_qualifies(demo):
    with pytest.raises(ResolutionError) as exc:
        resolve(demo, Query("demo", channels=("stable", "nope"), version="3.0.0",
                            version_range=lambda v: False), Installed("demo.v1.0.0", "1.0.0"))
    assert str(exc.value) == ('error upgrading from currently installed version "1.0.0": no bundles found for '
                              'package "demo" matching version "3.0.0" in channels [stable nope]')
    with pytest.raises(ResolutionError) as exc:
        resolve(Package("other"), Query("other"), None)  # what a catalog without the package gives
    assert str(exc.value) == 'no bundles found for package "other"'
    with pytest.raises(ResolutionError) as exc:
        resolve(demo, Query("demo"), Installed("demo.v1", "1.2"))
    assert str(exc.value) == ("error walking catalogs: error finding upgrade edges: failed to get version and "
                              "release of installed bundle: No Major.Minor.Patch elements found")


def test_deprecated_bundles_sort_last_and_deprecations_are_reported(tmp_path):
    catalog = load_catalog(write_catalog(tmp_path / "c.yaml", [*DEMO, {
        "schema": "olm.deprecations", "package": "demo", "entries": [
            {"reference": {"schema": "olm.package"}, "message": "demo is deprecated, use demo2"},
            {"reference": {"schema": "olm.channel", "name": "fast"}, "message": "fast is gone"},
            {"reference": {"schema": "olm.bundle", "name": "demo.v2.1.0-rc.1"}, "message": "rc.1 is broken"},
            {"reference": {"schema": "olm.bundle", "name": "demo.v2.0.0"}, "message": ""}]}]))
    demo = catalog.package("demo")
    assert names(resolve(demo, Query("demo"), None).candidates)[:3] == [
        "demo.v1.2.0", "demo.v1.1.0", "demo.v1.0.0"]  # both deprecated bundles after the others, highest first
    assert deprecations(demo, (), "demo.v2.1.0-rc.1").messages() == [
        "demo is deprecated, use demo2", "fast is gone", "rc.1 is broken"]
    assert deprecations(demo, ("stable",), "demo.v2.0.0").messages() == ["demo is deprecated, use demo2"]


def test_legacy_releases_in_build_metadata():
    assert str(parse_legacy_version_release("1.0.0+2")) == "1.0.0+2"
    older, newer = parse_legacy_version_release("1.0.0+2"), parse_legacy_version_release("1.0.0+10")
    assert (older.release, newer.compare(older)) == ((semver.PRVersion("", 2),), 1)
    assert parse_legacy_version_release("1.0.0").compare(older) == -1  # no release sorts before a release
    assert parse_legacy_version_release("1.0.0+001").release == ()  # not a release: build metadata stays
    assert str(parse_legacy_version_release("1.0.0+001")) == "1.0.0+001"
    with pytest.raises(VersionReleaseError, match="^Version string empty$"):
        parse_legacy_version_release("")


def test_a_bundle_without_a_version_sorts_last_and_cannot_be_resolved_alone(tmp_path):
    catalog = load_catalog(write_catalog(tmp_path / "c.yaml", [
        channel("stable", [{"name": "demo.a"}, {"name": "demo.b"}]),
        bundle("demo.a", None), bundle("demo.b", "0.1.0")]))
    assert names(resolve(catalog.package("demo"), Query("demo"), None).candidates) == ["demo.b", "demo.a"]
    only = load_catalog(write_catalog(tmp_path / "d.yaml", [bundle("demo.a", None)])).package("demo")
    with pytest.raises(ResolutionError) as exc:
        resolve(only, Query("demo"), None)
    assert str(exc.value) == ('error getting resolved bundle version for bundle "demo.a": no package property '
                              'found in bundle "demo.a"')


@pytest.mark.parametrize(("text", "inside", "outside"), [
    # blang orders a prerelease before its release and, unlike Masterminds, does not leave prereleases out
    (">=1.0.0 <1.3.0", ["1.0.0", "1.2.9", "1.3.0-rc.1"], ["0.9.9", "1.3.0", "1.0.0-rc.1"]),
    ("<1.2.0 || >=3.0.0", ["1.1.9", "3.0.0"], ["1.2.0", "2.9.9"]),
    ("1.x", ["1.0.0", "1.99.0"], ["2.0.0", "0.9.0"]),
    (">1.2.x", ["1.3.0"], ["1.2.9"]),
    ("<=1.2.x", ["1.2.9"], ["1.3.0"]),
    (">= 1.0.0", ["1.0.0"], ["0.1.0"]),  # a space after the operator
    ("!=1.2.x", [], ["1.1.0", "1.2.0", "1.3.0"]),  # blang expands it to <1.2.0 AND >=1.3.0: nothing
    ("1.0.0", ["1.0.0", "1.0.0+build"], ["1.0.1"]),
])
def test_skip_ranges_are_blang_semver_ranges(text, inside, outside):
    in_range = semver.parse_range(text)
    assert [v for v in inside + outside if in_range(semver.parse(v))] == inside


@pytest.mark.parametrize(("text", "message"), [
    ("abc", 'Could not get version from string: "abc"'),
    ("~1.0.0", 'Could not parse Range "~1.0.0": Could not parse comparator "~" in "~1.0.0"'),
    ("1.0.0 ||", "Last element in range is '||'"),
    ("1.2.3.4", 'Could not parse Range "1.2.3.4": Could not parse version "1.2.3.4" in "1.2.3.4": Invalid '
                'character(s) found in patch number "3.4"'),
])
def test_blang_semver_range_errors(text, message):
    with pytest.raises(semver.SemverError) as exc:
        semver.parse_range(text)
    assert str(exc.value) == message


def test_an_unreadable_skip_range_is_no_edge(tmp_path):
    catalog = load_catalog(write_catalog(tmp_path / "c.yaml", [
        channel("stable", [{"name": "demo.v2.0.0", "skipRange": "~1.0.0"}]), bundle("demo.v2.0.0", "2.0.0")]))
    assert candidates(catalog.package("demo"), Query("demo"), Installed("demo.v1.0.0", "1.0.0")) == []


# --------------------------------------------------------------------------------------------- reading


def test_a_catalog_directory_json_streams_yaml_and_indexignore(tmp_path):
    root = tmp_path / "configs"
    (root / "demo" / "old").mkdir(parents=True)
    (root / "demo" / "catalog.json").write_text("".join(json.dumps(o, indent=1) + "\n" for o in DEMO[:3]))
    (root / "demo" / "bundles.yaml").write_text("".join("---\n" + yaml.safe_dump(o) for o in DEMO[3:]))
    not_a_catalog = "- not: [a catalog\n"  # unreadable as YAML: read, it would refuse the catalog
    (root / "README.md").write_text(not_a_catalog)
    (root / "demo" / "notes.txt").write_text(not_a_catalog)
    (root / "demo" / "old" / "a.yaml").write_text(not_a_catalog)
    (root / "demo" / "old" / "b.yaml").write_text(yaml.safe_dump(bundle("demo.v0.9.0", "0.9.0")))
    # joelanford/ignore: lines trimmed, every .indexignore's patterns in walk order, the last match deciding
    (root / ".indexignore").write_text("  *.md\n# a comment\ndemo/notes.txt\nold/\n")
    (root / "demo" / ".indexignore").write_text("!old/b.yaml\n")
    catalog = load_catalog(root)
    assert catalog.package_names() == ["demo"]
    demo = catalog.package("demo")
    assert (demo.default_channel, [c.name for c in demo.channels], names(demo.bundles)) == (
        "stable", ["stable", "fast"], ["demo.v0.9.0", "demo.v1.0.0", "demo.v1.1.0", "demo.v1.2.0", "demo.v2.0.0",
                                       "demo.v2.1.0-rc.1"])
    (root / "demo" / ".indexignore").unlink()
    assert names(load_catalog(root).package("demo").bundles)[0] == "demo.v1.0.0"


def test_a_catalog_value_too_large_for_a_float_reads_as_yaml_as_declcfg_reads_it(tmp_path):
    """operator-registry decodes each JSON value into a Go map as it reads it: a number too large for a float64
    fails the value, and the stream is read as YAML, where that number is text (judged with its WalkMetasFS)."""
    (tmp_path / "c.json").write_text('{"schema": "olm.package", "name": "p", "x": 1e400}\n')
    assert load_catalog(tmp_path).package_names() == ["p"]
    # read as YAML, a second value is content go-yaml never reads: refused, not dropped
    (tmp_path / "c.json").write_text('{"schema": "olm.package", "name": "p", "x": 1e400}\n'
                                     '{"schema": "olm.bundle", "package": "p", "name": "b", "y": "\\/"}\n')
    with pytest.raises(CatalogError) as refused:
        load_catalog(tmp_path)
    assert str(refused.value) == (f"{tmp_path / 'c.json'}: content after the document's value is dropped by "
                                  'operator-registry: remove it, or start another document with "---" at line 2 '
                                  "column 1")


def test_keys_match_as_go_matches_them(tmp_path):
    """Meta keys in any case (operator-registry's extractUniqueMetaKeys), the others by encoding/json's folding."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"Schema": "olm.channel", "PACKAGE": "demo", "Name": "stable",
                                "Entries": [{"NAME": "demo.v2.0.0", "Replaces": "demo.v1.0.0"}]}) +
                    json.dumps({"schema": "olm.bundle", "package": "demo", "name": "demo.v2.0.0",
                                "Properties": [{"Type": "olm.package", "Value": {"Version": "2.0.0"}}]}))
    demo = load_catalog(path).package("demo")
    assert names(candidates(demo, Query("demo"), Installed("demo.v1.0.0", "1.0.0"))) == ["demo.v2.0.0"]
    path.write_text(json.dumps({"schema": "olm.package", "name": "demo", "Name": "other"}))
    with pytest.raises(CatalogError) as exc:
        load_catalog(path)
    assert str(exc.value) == f"{path}: keys 'name' and 'Name' differ only in case"


def test_what_a_catalog_directory_may_not_hold(tmp_path):
    root = tmp_path / "configs"
    (root / "real").mkdir(parents=True)
    (root / "link").symlink_to(root / "real")
    with pytest.raises(CatalogError) as exc:
        load_catalog(root)
    assert str(exc.value) == (f"{root / 'link'}: a symbolic link to a directory (operator-controller does not "
                              "follow it; give the directory itself)")
    (root / "link").unlink()
    (root / "zero.json").symlink_to("/dev/zero")
    with pytest.raises(CatalogError) as exc:
        load_catalog(root)
    assert str(exc.value) == f"{root / 'zero.json'}: not a regular file"
    (root / "zero.json").unlink()
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(CatalogError) as exc:
        load_catalog(root)
    assert str(exc.value) == f"{root / 'loop'}: cannot be read (Too many levels of symbolic links)"
    (root / "loop").unlink()
    (root / "latin1.json").write_bytes(b'{"schema": "olm.package", "name": "demo", "description": "caf\xe9"}')
    assert load_catalog(root).package_names() == ["demo"]  # Go's JSON decoder takes it (as U+FFFD)
    (root / "bom.yaml").write_bytes(b"\xef\xbb\xbfschema: olm.package\nname: other\n")
    assert load_catalog(root).package_names() == ["demo", "other"]  # YAML after a byte order mark reads as OLM's does
    (root / "bom.json").write_bytes(b'\xef\xbb\xbf{"schema": "olm.package", "name": "third"}')
    with pytest.raises(CatalogError) as exc:
        load_catalog(root)
    assert str(exc.value) == (f"{root / 'bom.json'}: a byte order mark before JSON, which operator-controller reads "
                              "as nothing (the file's objects would be dropped without a word): remove the byte order "
                              "mark")
    (root / "bom.json").unlink()
    (root / "latin1.yaml").write_bytes(b"schema: olm.package\nname: caf\xe9\n")
    with pytest.raises(CatalogError) as exc:
        load_catalog(root)
    assert str(exc.value) == f"{root / 'latin1.yaml'}: not UTF-8 text (a catalog holds JSON or YAML)"


def test_one_package_kept_and_a_large_catalog_announced(tmp_path, monkeypatch):
    path = write_catalog(tmp_path / "c.yaml", [*DEMO, bundle("other.v1", "1.0.0", package="other")])
    heard: list[str] = []
    monkeypatch.setattr(catalog_module, "REPORT_BYTES", 1)
    catalog = load_catalog(path, package="other", report=heard.append)
    assert heard == [f"reading catalog {path} (1 file(s), 0 MiB)"]
    assert (catalog.package_names(), catalog.package("demo").found, names(catalog.package("other").bundles)) == (
        ["demo", "other"], False, ["other.v1"])


def test_the_last_object_of_a_schema_and_name_wins(tmp_path):
    demo = load_catalog(write_catalog(tmp_path / "c.yaml", [
        bundle("demo.v1.0.0", "1.0.0"), bundle("demo.v1.0.0", "1.0.1")])).package("demo")
    assert [str(parse_legacy_version_release(b.properties[0]["value"]["version"])) for b in demo.bundles] == ["1.0.1"]


@pytest.mark.parametrize(("content", "message"), [
    ("schema: olm.bundle\nname: x\npackage: demo\nproperties: {}\n",
     "{path} (olm.bundle 'x'): properties must be a list"),
    ("---\nname: x\npackage: demo\n---\nschema: olm.package\nname: demo\n",
     "{path}: document 1: the object has no schema (each catalog object needs one, such as olm.bundle)"),
    ("- a list\n", "{path} must be an object"),
    ("schema: olm.channel\nname: s\npackage: demo\nentries: [{name: a, skips: [1]}]\n",
     "{path} (olm.channel 's'): entries[0]: skips must be a list of strings"),
    ("schema: olm.bundle\nname: x\npackage: demo\nproperties: [{type: 7, value: {}}]\n",
     "{path} (olm.bundle 'x'): properties[0]: type must be a string"),   # OLM v1: the package does not load
])
def test_bad_catalogs_name_the_file_and_never_quote_it(tmp_path, content, message):
    path = tmp_path / "catalog.yaml"
    path.write_text(content)
    with pytest.raises(CatalogError) as exc:
        load_catalog(path).package("demo")
    assert str(exc.value) == message.format(path=path)


def test_a_missing_catalog(tmp_path):
    with pytest.raises(CatalogError) as exc:
        load_catalog(tmp_path / "nope")
    assert str(exc.value) == (f"{tmp_path / 'nope'}: no such catalog (give a File-Based Catalog directory or file, "
                              "or an OCI image layout of an index image)")


def test_upgrade_edges_come_from_the_channels_asked_for_only(tmp_path):
    """OLM v1 filters the package's channels in place before it looks for edges: an edge in another channel does
    not count once channels are given (found comparing with OLM v1's own resolver)."""
    demo = load_catalog(write_catalog(tmp_path / "c.yaml", [
        channel("stable", [{"name": "demo.v1.0.0"}, {"name": "demo.v2.0.0"}]),
        channel("fast", [{"name": "demo.v2.0.0", "replaces": "demo.v1.0.0"}]),
        bundle("demo.v1.0.0", "1.0.0"), bundle("demo.v2.0.0", "2.0.0")])).package("demo")
    on = Installed("demo.v1.0.0", "1.0.0")
    assert names(candidates(demo, Query("demo"), on)) == ["demo.v2.0.0", "demo.v1.0.0"]
    assert names(candidates(demo, Query("demo", channels=("stable",)), on)) == ["demo.v1.0.0"]
    assert names(candidates(demo, Query("demo", channels=("stable", "fast")), on)) == ["demo.v2.0.0", "demo.v1.0.0"]


VERSIONS = ["0.2.3", "0.2.9", "1.0.0", "1.2.0", "1.2.3", "1.2.9", "1.3.0", "1.4.5", "2.0.0", "1.5.0-rc.1"]


@pytest.mark.parametrize(("text", "selected"), [
    (">=1.0.0, <2.0.0", ["1.0.0", "1.2.0", "1.2.3", "1.2.9", "1.3.0", "1.4.5"]),  # a prerelease only when asked
    (">=1.0.0 <2.0.0", ["1.0.0", "1.2.0", "1.2.3", "1.2.9", "1.3.0", "1.4.5"]),
    (">=1.0.0-0", ["1.0.0", "1.2.0", "1.2.3", "1.2.9", "1.3.0", "1.4.5", "2.0.0", "1.5.0-rc.1"]),
    ("~1.2", ["1.2.0", "1.2.3", "1.2.9"]),
    ("^0.2.3", ["0.2.3", "0.2.9"]),
    ("1.2 - 1.4.5", ["1.2.0", "1.2.3", "1.2.9", "1.3.0", "1.4.5"]),
    ("1.x", ["1.0.0", "1.2.0", "1.2.3", "1.2.9", "1.3.0", "1.4.5"]),
    ("v1.2.3", ["1.2.3"]),
    ("!=1.2.3", ["0.2.3", "0.2.9", "1.0.0", "1.2.0", "1.2.9", "1.3.0", "1.4.5", "2.0.0"]),
    (">1.2", ["1.3.0", "1.4.5", "2.0.0"]),
    ("<=1.2", ["0.2.3", "0.2.9", "1.0.0", "1.2.0", "1.2.3", "1.2.9"]),
    ("1.2.3 || >=2", ["1.2.3", "2.0.0"]),
])
def test_version_ranges_are_masterminds_constraints(text, selected):
    check = parse_constraints(text)
    assert [v for v in VERSIONS if check(semver.parse(v))] == selected


@pytest.mark.parametrize(("text", "message"), [
    ("abc", 'desired version range "abc" is invalid: improper constraint: "abc"'),
    (">=1.0 <2 foo", 'desired version range ">=1.0 <2 foo" is invalid: improper constraint: ">=1.0 <2 foo"'),
    ("1.0.0 || " * 40, 'desired version range "' + "1.0.0 || " * 40 + '" is invalid: too many constraint groups '
                       "(max 32)"),
])
def test_invalid_version_ranges_are_refused_with_olm_v1s_message(text, message):
    with pytest.raises(ResolutionError) as exc:
        make_query("demo", version=text)
    assert str(exc.value) == message


def test_an_object_without_schema_spoils_only_its_package(tmp_path):
    """As operator-controller serves a catalog: the other packages still resolve."""
    catalog = load_catalog(write_catalog(tmp_path / "c.yaml", [*DEMO, {"name": "x", "package": "other"}]))
    assert resolve(catalog.package("demo"), Query("demo"), None).bundle.name == "demo.v2.1.0-rc.1"
    with pytest.raises(CatalogError, match="document 9: the object has no schema"):
        catalog.package("other")
    assert catalog.package_names() == ["demo", "other"]


def test_an_index_image_layout_is_read_from_its_configs_directory(tmp_path):
    """An operator index image as `skopeo copy docker://... oci:DIR` writes it: only the directory its configs
    label names is unpacked (the base image's files are not), and messages name the layout and the path in it."""
    fbc = "".join(json.dumps(o) + "\n" for o in DEMO).encode()
    base = files_layer({"bin/opm": b"\x7fELF not really", "etc/passwd": b"root:x:0:0::/root:/bin/sh\n"})
    layers = [base, files_layer({"srv/fbc/demo/catalog.json": fbc, "configs/ignored.json": b"not json at all"})]
    layout = image_layout(tmp_path / "index", layers, labels={CATALOG_CONFIGS_LABEL: "/srv/fbc"})
    heard: list[str] = []
    catalog = load_catalog(layout, report=heard.append)
    assert heard == [f"unpacking the catalog of image layout {layout}"]
    assert (catalog.source, catalog.package_names()) == (str(layout), ["demo"])
    assert resolve(catalog.package("demo"), Query("demo"), None).bundle.name == "demo.v2.1.0-rc.1"
    assert load_catalog(tar_of(layout, tmp_path / "index.tar")).package_names() == ["demo"]
    broken = image_layout(tmp_path / "broken", [files_layer({"configs/demo/catalog.yaml": b"- [unclosed\n"})])
    with pytest.raises(CatalogError) as exc:
        load_catalog(broken)
    assert str(exc.value).startswith(f"{broken}:/configs/demo/catalog.yaml: ")
    empty = image_layout(tmp_path / "empty", [base])
    with pytest.raises(BundleInputError) as exc:
        load_catalog(empty)
    assert str(exc.value) == (f"{empty}: the image has no /configs directory (its File-Based Catalog, named by the "
                              "operators.operatorframework.io.index.configs.v1 label)")


def test_a_resolved_bundle_declaring_a_dependency_is_refused_as_operator_controller_refuses_it(tmp_path):
    """operator-controller's main.go runs ``NoDependencyValidation`` on the bundle it resolved: the first property
    declaring a dependency names it, and OLM v1 never falls back to another bundle by itself."""
    objects = [o for o in DEMO if o.get("name") != "demo.v2.1.0-rc.1"]
    top = next(o for o in objects if o.get("name") == "demo.v2.0.0")
    top["properties"] += [{"type": "olm.gvk.required", "value": {"group": "etcd.database.coreos.com",
                                                                 "kind": "EtcdCluster", "version": "v1beta2"}},
                          {"type": "olm.package.required", "value": {"packageName": "etcd",
                                                                     "versionRange": ">=0.9.0"}}]
    demo = load_catalog(write_catalog(tmp_path / "catalog.yaml", objects)).package("demo")
    with pytest.raises(ResolutionError) as refused:
        resolve(demo, Query("demo"), None)
    assert str(refused.value) == (
        'validating bundle "demo.v2.0.0": bundle "demo.v2.0.0" has a dependency declared via property '
        '"olm.gvk.required" which is currently not supported')
    assert dependencies(top_bundle := resolve_candidates(demo)[0]) == [
        "kind EtcdCluster.etcd.database.coreos.com/v1beta2", "package etcd >=0.9.0"]
    assert top_bundle.name == "demo.v2.0.0"
    assert resolve(demo, make_query("demo", version="<2.0.0"), None).bundle.name == "demo.v1.2.0"
    # an upgrade resolving to it is refused the same way
    with pytest.raises(ResolutionError, match='^validating bundle "demo.v2.0.0": '):
        resolve(demo, Query("demo"), Installed("demo.v1.2.0", "1.2.0"))


def resolve_candidates(package: Package) -> list[Any]:
    return candidates(package, Query(package.name), None)
