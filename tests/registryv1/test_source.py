"""Reading registry+v1 bundles (spec §1): directories and OCI image layouts, OLM v1's ``olm.properties``
folding, and the refusal of every unusable input with the file and the problem named.

The ``olm.properties`` texts below are what OLM v1's own ``source.FromFS`` (operator-controller at 186c9e64,
run over the same directories) put into the CSV annotation.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from common.bundle.registryv1 import oci
from common.bundle.registryv1.model import BundleInputError
from common.bundle.registryv1.source import is_bundle, load_bundle
from tests.registryv1 import bundles


def refusal(path: Path) -> str:
    with pytest.raises(BundleInputError) as caught:
        load_bundle(path)
    return str(caught.value)


def test_loads_a_bundle_directory(tmp_path: Path) -> None:
    crd = bundles.crd()
    root = bundles.write_bundle(tmp_path / "b", manifests={
        "a-crd.yaml": crd,
        "b-more.yaml": [bundles.config_map("one"), bundles.config_map("two")],
        "c-list.json": '{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Service", '
                       '"metadata": {"name": "svc"}}]}',
        "demo.clusterserviceversion.yaml": bundles.csv(),
    })
    bundle = load_bundle(root)
    assert bundle.package_name == "demo"
    assert bundle.csv == bundles.csv()
    assert bundle.csv_name == "demo-operator.v1.0.0"
    assert bundle.version == "1.0.0"
    assert bundle.crds == [crd]
    assert [o["metadata"]["name"] for o in bundle.others] == ["one", "two", "svc"]
    assert bundle.annotations == {"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
                                  "operators.operatorframework.io.bundle.package.v1": "demo"}
    assert bundle.source == str(root)


def test_every_file_of_manifests_is_read_whatever_its_name(tmp_path: Path) -> None:
    root = bundles.write_bundle(tmp_path / "b", manifests={"csv": bundles.csv(), "notes.txt": "# only a comment\n"})
    assert load_bundle(root).csv_name == "demo-operator.v1.0.0"


def test_is_bundle(tmp_path: Path) -> None:
    root = bundles.write_bundle(tmp_path / "b")
    layout = bundles.bundle_image_layout(tmp_path / "layout", root)
    (tmp_path / "plain").mkdir()
    (tmp_path / "file.yaml").write_text("a: 1\n")
    other_tar = bundles.tar_of(tmp_path / "plain", tmp_path / "plain.tar")
    assert is_bundle(root)
    assert is_bundle(layout)
    assert is_bundle(bundles.tar_of(layout, tmp_path / "layout.tar"))
    assert not is_bundle(tmp_path / "plain")
    assert not is_bundle(tmp_path / "file.yaml")
    assert not is_bundle(other_tar)
    assert not is_bundle(tmp_path / "missing")


def test_oci_layouts_read_as_the_directory(tmp_path: Path) -> None:
    root = bundles.write_bundle(tmp_path / "b", properties="properties:\n- {type: olm.package, value: {packageName: "
                                                           "demo, version: 1.0.0}}\n")
    expected = load_bundle(root)
    layout = bundles.bundle_image_layout(tmp_path / "layout", root)
    for source in (layout, bundles.tar_of(layout, tmp_path / "layout.tar")):
        bundle = load_bundle(source)
        assert (bundle.package_name, bundle.csv, bundle.crds, bundle.others, bundle.annotations) == (
            expected.package_name, expected.csv, expected.crds, expected.others, expected.annotations)
        assert bundle.source == str(source)


def test_problems_in_an_image_name_the_image(tmp_path: Path) -> None:
    root = bundles.write_bundle(tmp_path / "b", manifests={"csv.yaml": "kind: [\n"})
    layout = bundles.bundle_image_layout(tmp_path / "layout", root)
    assert refusal(layout).startswith(f"{layout} (image)/manifests/csv.yaml:0: invalid YAML: ")


# --- refusals ----------------------------------------------------------------------------------------------------


def test_not_a_bundle(tmp_path: Path) -> None:
    assert refusal(tmp_path / "missing") == f"{tmp_path / 'missing'}: no such file or directory"
    (tmp_path / "file.yaml").write_text("a: 1\n")
    assert refusal(tmp_path / "file.yaml") == (
        f"{tmp_path / 'file.yaml'}: not a bundle (a bundle is a directory with metadata/annotations.yaml, or an OCI "
        "image layout of a bundle image)")
    (tmp_path / "empty").mkdir()
    assert refusal(tmp_path / "empty") == (
        f"{tmp_path / 'empty'}: not a registry+v1 bundle: no metadata/annotations.yaml")
    (tmp_path / "empty" / "x").mkdir()
    plain_tar = bundles.tar_of(tmp_path / "empty", tmp_path / "plain.tar")
    assert refusal(plain_tar) == (
        f"{plain_tar}: a tar file, but not an OCI image layout (no oci-layout file at its root)")


def test_a_bundles_manifests_directory_names_the_bundle(tmp_path: Path) -> None:
    bundle = bundles.write_bundle(tmp_path / "b")
    assert refusal(bundle / "manifests") == (
        f"{bundle / 'manifests'}: the manifests/ directory of the registry+v1 bundle {bundle}: give the bundle "
        "directory itself")
    link = tmp_path / "m"
    link.symlink_to(bundle / "manifests")
    assert refusal(link) == f"{link}: the manifests/ directory of the registry+v1 bundle {bundle}: give the bundle " \
                            "directory itself"


def test_a_docker_archive_says_how_to_make_an_oci_archive_of_it(tmp_path: Path) -> None:
    """What `podman save` writes by default: manifest.json listing the config and layer tars, no oci-layout."""
    image = tmp_path / "image"
    image.mkdir()
    (image / "manifest.json").write_text('[{"Config": "c.json", "RepoTags": ["b:1"], "Layers": ["l/layer.tar"]}]')
    (image / "repositories").write_text("{}")
    archive = bundles.tar_of(image, tmp_path / "bundle.tar")
    assert refusal(archive) == (
        f"{archive}: a docker-archive (manifest.json at its root), not an OCI image layout: save the image with "
        "`podman save --format oci-archive -o FILE IMAGE`, or convert it with `skopeo copy "
        f"docker-archive:{archive} oci-archive:FILE`")
    (image / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')  # Docker 25+ writes both: a layout
    assert oci.is_layout_tar(bundles.tar_of(image, tmp_path / "both.tar"))


def test_a_truncated_layout_tar_is_a_broken_tar_not_another_kind_of_tar(tmp_path: Path) -> None:
    """Tools write ``oci-layout`` last, so a layout tar cut short has none: it is refused as the broken tar it is."""
    layout = bundles.bundle_image_layout(tmp_path / "l", bundles.write_bundle(tmp_path / "b"))
    whole = tmp_path / "whole.tar"
    with tarfile.open(whole, "w") as tar:
        for path in sorted(p for p in layout.rglob("*") if p.is_file() and p.name != "oci-layout"):
            tar.add(path, arcname=str(path.relative_to(layout)))
        tar.add(layout / "oci-layout", arcname="oci-layout")
    cut = tmp_path / "cut.tar"
    cut.write_bytes(whole.read_bytes()[:whole.stat().st_size // 2 + 100])
    assert refusal(cut) == f"{cut}: not a readable tar: unexpected end of data"


def test_other_mediatypes_are_refused(tmp_path: Path) -> None:
    root = bundles.write_bundle(tmp_path / "b", annotations=bundles.annotations_yaml(mediatype="plain+v0"))
    assert refusal(root) == (f"{root}/metadata/annotations.yaml: unsupported bundle mediatype \"plain+v0\" (only "
                             "registry+v1 bundles can be rendered)")
    root = bundles.write_bundle(tmp_path / "c", annotations=bundles.annotations_yaml(mediatype=None))
    assert refusal(root) == (
        f"{root}/metadata/annotations.yaml: no operators.operatorframework.io.bundle.mediatype.v1 annotation (a "
        "registry+v1 bundle has operators.operatorframework.io.bundle.mediatype.v1: registry+v1)")


def test_an_empty_package_name_is_the_renderers_to_refuse(tmp_path: Path) -> None:
    """OLM reads such a bundle and its renderer's validator refuses it (``package name is empty``)."""
    for name, package in (("none", None), ("empty", "")):
        root = bundles.write_bundle(tmp_path / name, annotations=bundles.annotations_yaml(package=package))
        assert load_bundle(root).package_name == ""


def test_package_name_is_read_as_olm_reads_it(tmp_path: Path) -> None:
    """A number is written as Go's YAML reader writes it into OLM's string field; the key matches ignoring
    case, the last in sorted order winning (OLM v1 read these bundles the same way)."""
    root = bundles.write_bundle(tmp_path / "n", annotations=bundles.annotations_yaml(package=None, extra={}) +
                                "  operators.operatorframework.io.bundle.package.v1: 12\n")
    assert load_bundle(root).package_name == "12"
    root = bundles.write_bundle(tmp_path / "f", annotations=bundles.annotations_yaml(
        package="lower", extra={"OPERATORS.operatorframework.io.bundle.package.v1": "upper"}))
    assert load_bundle(root).package_name == "lower"


@pytest.mark.parametrize(("written", "version"), [("1.0.0", "1.0.0"), ("v1.2", "1.2.0"), (" 01.2.3+b ", "1.2.3+b"),
                                                 ("1.2-rc", "1.2-rc"), ("", "")])
def test_the_bundle_version_is_the_csvs_as_go_prints_it(tmp_path: Path, written: str, version: str) -> None:
    """OLM's OperatorVersion reads spec.version with blang/semver's ParseTolerant and prints it normalized (judged
    with OLM v1's source.FromFS): what opm records in a catalog, and a revision's bundle-version annotation."""
    root = bundles.write_bundle(tmp_path / "b", manifests={"csv.yaml": bundles.csv(version=written)})
    assert load_bundle(root).version == version


def test_annotations_file_must_parse(tmp_path: Path) -> None:
    root = bundles.write_bundle(tmp_path / "b", annotations="annotations: [\n")
    assert refusal(root).startswith(f"{root}/metadata/annotations.yaml:0: invalid YAML: ")
    root = bundles.write_bundle(tmp_path / "c", annotations="- a\n")
    assert refusal(root) == f"{root}/metadata/annotations.yaml: expected a mapping with an \"annotations\" mapping"
    root = bundles.write_bundle(tmp_path / "d", annotations="annotations: {a: 1}\nANNOTATIONS: [a]\n")
    assert refusal(root) == f"{root}/metadata/annotations.yaml: expected a mapping with an \"annotations\" mapping"
    root = bundles.write_bundle(tmp_path / "e", annotations=bundles.annotations_yaml(
        extra={"Operators.operatorframework.io.bundle.channels.v1": ["a"]}))   # a field of OLM's struct
    assert refusal(root) == (f"{root}/metadata/annotations.yaml: operators.operatorframework.io.bundle.channels.v1 "
                             "must be a string")


MT = "  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n"
PKG = "  operators.operatorframework.io.bundle.package.v1"


@pytest.mark.parametrize(("text", "package"), [
    # OLM decodes the file into its AnnotationsFile struct: "annotations" matches ignoring case, a key given in
    # several cases is decoded in Go's order (sorted), fields merging and the last winning, a null changing nothing
    ("Annotations:\n" + MT + PKG + ": koku\n", "koku"),
    ("ANNOTATIONS:\n" + PKG + ": a\nannotations:\n" + MT + PKG + ": b\n", "b"),
    ("Annotations:\n" + MT + PKG + ": b\nannotations:\n  other: x\n", "b"),
    ("ANNOTATIONS:\n" + PKG + ": a\nannotations:\n" + MT + PKG + ": ~\n", "a"),
    ("annotations:\n" + MT + PKG + ": koku\nANNOTATIONS: ~\n", "koku"),
    # sigs.k8s.io/yaml's Unmarshal reads the first document only: a second, even a broken one, is never read
    ("annotations:\n" + MT + PKG + ": koku\n---\nannotations:\n" + PKG + ": other\n", "koku"),
    ("annotations:\n" + MT + PKG + ": koku\n---\nbad: [\n", "koku"),
    # JSON is read as YAML (sigs.k8s.io/yaml), and what follows the first document's value is never read
    ('{"annotations": {"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1", '
     '"operators.operatorframework.io.bundle.package.v1": "koku", "x": 1e400}} trailing', "koku"),
])
def test_annotations_file_is_decoded_as_olm_decodes_it(tmp_path: Path, text: str, package: str) -> None:
    """Judged against OLM v1's source.FromFS (operator-controller 186c9e64) on each of these files."""
    root = bundles.write_bundle(tmp_path / "b", annotations=text)
    assert load_bundle(root).package_name == package


def test_manifests_directory(tmp_path: Path) -> None:
    root = bundles.write_bundle(tmp_path / "b", manifests={})
    os.rmdir(root / "manifests")
    assert refusal(root) == f"{root}: not a registry+v1 bundle: no manifests/ directory"
    root = bundles.write_bundle(tmp_path / "c")
    (root / "manifests" / "nested").mkdir()
    assert refusal(root) == (f"{root}: subdirectories are not allowed within the \"manifests\" directory of the "
                             "bundle image filesystem: found \"manifests/nested\"")  # OLM's words
    root = bundles.write_bundle(tmp_path / "d")
    os.mkfifo(root / "manifests" / "pipe")
    assert refusal(root) == f"{root}/manifests/pipe: not a regular file"
    root = bundles.write_bundle(tmp_path / "e")
    os.symlink("loop.yaml", root / "manifests" / "loop.yaml")   # a link to itself: ELOOP when followed
    assert refusal(root) == f"{root}/manifests/loop.yaml: not a regular file"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_layout_whose_index_json_is_not_a_regular_file_is_refused_naming_it(tmp_path: Path, kind: str) -> None:
    """It is still a layout (not "no metadata/annotations.yaml"), and a FIFO is refused by its type, never opened:
    reading one would block."""
    layout = bundles.bundle_image_layout(tmp_path / "layout", bundles.write_bundle(tmp_path / "b"))
    (layout / "index.json").unlink()
    if kind == "fifo":
        os.mkfifo(layout / "index.json")
    else:
        (layout / "index.json").mkdir()
    assert refusal(layout) == f"{layout}: index.json: not a regular file"
    assert is_bundle(layout)


def test_exactly_one_csv(tmp_path: Path) -> None:
    root = bundles.write_bundle(tmp_path / "b", manifests={"cm.yaml": bundles.config_map()})
    assert refusal(root) == f"{root}: no ClusterServiceVersion found in \"manifests\""
    root = bundles.write_bundle(tmp_path / "c", manifests={"a.yaml": bundles.csv("a"),
                                                          "b.yaml": [bundles.config_map(), bundles.csv("b")]})
    assert refusal(root) == (f"{root}/manifests: a bundle has exactly one ClusterServiceVersion, found 2: "
                             f"{root}/manifests/a.yaml:0, {root}/manifests/b.yaml:1")


def test_every_manifest_problem_is_named(tmp_path: Path) -> None:
    root = bundles.write_bundle(tmp_path / "b", manifests={
        "a.yaml": "kind: [\n",
        "b.yaml": {"apiVersion": "v1", "metadata": {"name": "x"}},
        "c.json": "{",
        "csv.yaml": bundles.csv(),
    })
    problems = sorted(refusal(root).split("\n"))
    assert len(problems) == 3
    assert problems[0].startswith(f"{root}/manifests/a.yaml:0: invalid YAML: ")
    assert problems[1] == f"{root}/manifests/b.yaml:0: missing kind"
    assert problems[2].startswith(f"{root}/manifests/c.json:0: invalid JSON: ")


def test_what_olm_v1_drops_or_refuses_in_a_manifest_is_said_in_its_name(tmp_path: Path) -> None:
    """The same go-yaml reading as kubectl's, but a bundle's author meets it through OLM v1: the messages say so."""
    root = bundles.write_bundle(tmp_path / "b", manifests={"csv.yaml": bundles.csv(),
                                                           "cm.yaml": "{a: 1}\nb: 2\n"})
    assert refusal(root) == (f"{root}/manifests/cm.yaml:0: invalid YAML: content after the document's value is "
                             'dropped by OLM v1: remove it, or start another document with "---" at line 2 column 1')
    (root / "manifests" / "cm.yaml").write_text('a: "\\/"\n')
    assert refusal(root) == (f"{root}/manifests/cm.yaml:0: invalid YAML: the escape \"\\/\" is not YAML 1.1: "
                             "OLM v1 refuses it at line 1 column 5")
    (root / "manifests" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n--- x\n")
    assert refusal(root) == (f"{root}/manifests/cm.yaml:1: invalid YAML: a document separator line holds more "
                             'than "---" and a comment (OLM v1 refuses it) at line 4 column 4')


def test_a_utf16_manifest_is_refused_saying_so(tmp_path: Path) -> None:
    """OLM v1's YAML reader splits a UTF-16 file at byte values and refuses it ("yaml: incomplete UTF-16
    character", judged with its source.FromFS); the refusal says what the file is and what to do."""
    root = bundles.write_bundle(tmp_path / "b", manifests={"csv.yaml": bundles.csv(), "cm.yaml": "x: 1\n"})
    for encoding in ("utf-16", "utf-16-be"):
        text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
        data = text.encode(encoding) if encoding == "utf-16" else b"\xfe\xff" + text.encode(encoding)
        (root / "manifests" / "cm.yaml").write_bytes(data)
        assert refusal(root) == (f"{root}/manifests/cm.yaml: not UTF-8 text: UTF-16 (it starts with UTF-16's byte "
                                 "order mark), which OLM v1 cannot read in a bundle either; save it as UTF-8")
    (root / "manifests" / "cm.yaml").write_bytes(b"a: \xff\n")
    assert refusal(root) == f"{root}/manifests/cm.yaml: not UTF-8 text"


@pytest.mark.parametrize(("document", "read"), [
    # a document with "items" is a list to the API machinery, whatever its kind; null items are none
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nitems:\n- {apiVersion: v1, kind: Secret, metadata: "
     "{name: s}}\n", [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nitems: null\n", []),
    # an item without kind and apiVersion takes the list's (kind less "List"), a null item too
    ("apiVersion: v1\nkind: ConfigMapList\nitems:\n- null\n- {metadata: {name: b}}\n",
     [{"kind": "ConfigMap", "apiVersion": "v1"}, {"metadata": {"name": "b"}, "kind": "ConfigMap", "apiVersion": "v1"}]),
    # OLM decodes the document's metadata, not its items'
    ("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x, annotations: "
     "{a: 1}}}\n", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "annotations": {"a": 1}}}]),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nitems: {a: 1}\n", "M:0: items must be a list"),
    ("apiVersion: v1\nkind: List\nitems:\n- {kind: ConfigMap, metadata: {name: x}}\n",
     "M:0 items[0]: missing apiVersion (an item of a List needs one)"),
    ("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: apps/, kind: ConfigMap}\n",
     "M:0 items[0]: missing apiVersion (an item of a List needs one)"),
    ("apiVersion: v1\nkind: List\nitems:\n- {metadata: {name: x}}\n", "M:0 items[0]: missing kind"),
    ("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: []}\n",
     "M:0 items[0]: a list inside a list (OLM does not read it)"),
    ("apiVersion: a/b/c\nkind: ConfigMap\nmetadata: {name: x}\n",
     'M:0: apiVersion "a/b/c" is not a group/version (OLM reads no kind from it)'),
])
def test_lists_and_kinds_are_read_as_olms_builder_reads_them(tmp_path: Path, document: str, read: Any) -> None:
    """cli-runtime's local builder with Unstructured() and Flatten(), as OLM v1's source.FromFS uses it (judged
    against it on these documents and 1,200 random bundles)."""
    root = bundles.write_bundle(tmp_path / "b", manifests={"csv.yaml": bundles.csv(), "m.yaml": document})
    if isinstance(read, str):
        assert refusal(root) == read.replace("M:0", f"{root}/manifests/m.yaml:0", 1)
    else:
        assert load_bundle(root).others == read


# --- metadata/properties.yaml into olm.properties ---------------------------------------------------------------


def properties_of(tmp_path: Path, csv_properties: str | None, properties: str | None) -> str | None:
    annotations = None if csv_properties is None else {"olm.properties": csv_properties}
    root = bundles.write_bundle(tmp_path / "b", manifests={"csv.yaml": bundles.csv(annotations=annotations)},
                                properties=properties)
    found = load_bundle(root).csv["metadata"].get("annotations") or {}
    value = found.get("olm.properties")
    assert value is None or isinstance(value, str)
    return value


@pytest.mark.parametrize(("csv_properties", "properties", "expected"), [
    pytest.param('[{"type": "olm.maxOpenShiftVersion", "value": "4.12"}]', None,
                 '[{"type": "olm.maxOpenShiftVersion", "value": "4.12"}]', id="csv-only-unchanged"),
    pytest.param(None, "properties:\n- type: olm.package\n  value: {packageName: demo, version: 1.0.0}\n"
                       "- type: olm.gvk\n  value: {version: v1, kind: W<>, group: example.com}\n",
                 '[{"type":"olm.package","value":{"packageName":"demo","version":"1.0.0"}},'
                 '{"type":"olm.gvk","value":{"group":"example.com","kind":"W\\u003c\\u003e","version":"v1"}}]',
                 id="file-only-sorted-and-escaped"),
    pytest.param('[ {"value": {"z": 1, "a": [1, 2.50, 1e3, "\\u0041\\u2028"]}, "type": "a&b"} ]',
                 "properties:\n- type: t\n  value: {z: 1.5, a: 1e21, b: 0.0000001, c: 100000000000000000000, "
                 "d: 'x\\u2028\\u0001\\u007f', e: [true, null]}\n",
                 '[{"type":"a\\u0026b","value":{"z":1,"a":[1,2.50,1e3,"\\u0041\\u2028"]}},'
                 '{"type":"t","value":{"a":1e+21,"b":1e-7,"c":100000000000000000000,'
                 '"d":"x\\\\u2028\\\\u0001\\\\u007f","e":[true,null],"z":1.5}}]',
                 id="both-csv-text-kept-compacted"),
    pytest.param(None, "properties:\n- type: y\n  value: {a: yes, b: 010, c: 0x1F, d: ~, e: 2024-01-01, f: '1', "
                       "g: 1.0, h: =, i: 0o17, j: 1_000, k: .5, l: 08}\n",
                 '[{"type":"true","value":{"a":true,"b":8,"c":31,"d":null,"e":"2024-01-01","f":"1","g":1,"h":"=",'
                 '"i":15,"j":1000,"k":0.5,"l":8}}]', id="yaml-read-as-kubernetes-reads-it"),
    pytest.param('[{"type":"a","value":1}]', "", '[{"type":"a","value":1}]', id="empty-file-ignored"),
    pytest.param(None, "# nothing\n", "null", id="comment-only-file-gives-null"),
    pytest.param("[ ]", "# nothing\n", "null", id="no-properties-at-all-gives-null"),
    pytest.param('[{"type":"a","value":1}]', "properties: []\n", '[{"type":"a","value":1}]', id="empty-list"),
    pytest.param(None, "Properties:\n- Type: a\n  VALUE: 1\n  type: b\n", '[{"type":"b","value":1}]',
                 id="keys-ignore-case-last-sorted-wins"),
    pytest.param('[null, {"type": "a"}]', "properties:\n- null\n- type: b\n",
                 '[{"type":"","value":null},{"type":"a","value":null},{"type":"","value":null},'
                 '{"type":"b","value":null}]', id="null-items-and-missing-values"),
    pytest.param('[{"type": "a", "Type": null, "value": 1}]', "properties:\n- {type: a, TYPE: null, value: 2}\n",
                 '[{"type":"a","value":1},{"type":"a","value":2}]', id="null-type-keeps-the-string"),
    pytest.param('[{"type": "a", "type": "b", "value": 1, "Value": 2}]', "properties:\n- {type: a, value: 3}\n",
                 '[{"type":"b","value":2},{"type":"a","value":3}]', id="repeated-keys-last-wins"),
    pytest.param(None, "properties:\n- {type: 123456789.5, value: 1}\n- {type: 12, value: 2}\n"
                       "- {type: true, value: 3}\n- {type: 0.000001, value: 4}\n",
                 '[{"type":"1.2345679e+08","value":1},{"type":"12","value":2},{"type":"true","value":3},'
                 '{"type":"1e-06","value":4}]', id="scalar-types-as-go-strings"),
    pytest.param('[{"type":"é\\t","value":"\\/"}]', 'properties:\n- type: "é\\t\\b\\f"\n  value: "/é"\n',
                 '[{"type":"é\\t","value":"\\/"},{"type":"é\\t\\b\\f","value":"/é"}]', id="escapes"),
    # OLM keeps a property's value as json.RawMessage and its type as a Go string: an integer beyond int64 keeps
    # every digit there (a manifest's would become a float64), as does one below int64's minimum as a float
    pytest.param(None, "properties:\n- {type: t, value: 18446744073709551615}\n- {type: u, value: 0xFFFFFFFFFFFFFFFF}\n"
                       "- {type: 12345678901234567891, value: {a: [9223372036854775808]}}\n"
                       "- {type: neg, value: -9223372036854775809}\n",
                 '[{"type":"t","value":18446744073709551615},{"type":"u","value":18446744073709551615},'
                 '{"type":"12345678901234567891","value":{"a":[9223372036854775808]}},'
                 '{"type":"neg","value":-9223372036854776000}]', id="integers-beyond-int64-digit-for-digit"),
])
def test_properties_fold_into_the_csv_as_olm_does(tmp_path: Path, csv_properties: str | None,
                                                  properties: str | None, expected: str) -> None:
    assert properties_of(tmp_path, csv_properties, properties) == expected


def test_unusable_properties_are_refused(tmp_path: Path) -> None:
    def refused(csv_properties: str | None, properties: str | None, name: str) -> str:
        annotations = None if csv_properties is None else {"olm.properties": csv_properties}
        root = bundles.write_bundle(tmp_path / name, manifests={"csv.yaml": bundles.csv(annotations=annotations)},
                                    properties=properties)
        return refusal(root).replace(str(root), "B")

    assert refused("[{", None, "a").startswith(
        "B/manifests/csv.yaml:0: metadata.annotations['olm.properties']: not valid JSON: ")
    assert refused('{"type": "a"}', None, "b") == (
        "B/manifests/csv.yaml:0: metadata.annotations['olm.properties']: expected a JSON list of properties")
    assert refused("[1]", None, "c") == ("B/manifests/csv.yaml:0: metadata.annotations['olm.properties']: item 0: a "
                                         "property must be an object with \"type\" and \"value\"")
    assert refused('[{"type": 1}]', None, "d") == (
        "B/manifests/csv.yaml:0: metadata.annotations['olm.properties']: item 0: a property's \"type\" must be a "
        "string")
    assert refused(None, "- a\n", "e") == "B/metadata/properties.yaml: expected a mapping with a \"properties\" list"
    assert refused(None, "properties: 1\n", "f") == "B/metadata/properties.yaml: \"properties\" must be a list"
    assert refused(None, "properties: [1]\n", "g") == (
        "B/metadata/properties.yaml: properties[0]: a property must be a mapping with \"type\" and \"value\"")
    assert refused(None, "properties: [{type: [1]}]\n", "h") == (
        "B/metadata/properties.yaml: properties[0]: a property's \"type\" must be a string")
    assert refused(None, "properties: [\n", "i").startswith("B/metadata/properties.yaml:0: invalid YAML: ")


def test_metadata_json_is_read_as_yaml_as_olm_reads_it(tmp_path: Path) -> None:
    """sigs.k8s.io/yaml's Unmarshal reads JSON as YAML: "\\/" is no YAML escape, 1e400 too large a float is text."""
    root = bundles.write_bundle(tmp_path / "a", properties='{"properties": [{"type": "olm.x", "value": 1e400}]}')
    assert load_bundle(root).csv["metadata"]["annotations"]["olm.properties"] == '[{"type":"olm.x","value":"1e400"}]'
    root = bundles.write_bundle(tmp_path / "b", properties='{"properties": [{"type": "olm.x", "value": "a\\/b"}]}')
    assert refusal(root) == (f"{root}/metadata/properties.yaml:0: invalid YAML: the escape \"\\/\" is not YAML 1.1: "
                             "OLM v1 refuses it at line 1 column 46")


def test_properties_file_is_read_to_its_first_document(tmp_path: Path) -> None:
    """As OLM reads it (sigs.k8s.io/yaml's Unmarshal): a second document, even a broken one, is never read."""
    for name, second in (("a", "properties:\n- {type: olm.y, value: 2}\n"), ("b", "bad: [\n")):
        first = "properties:\n- {type: olm.x, value: 1}\n---\n"
        root = bundles.write_bundle(tmp_path / name, properties=first + second)
        assert load_bundle(root).csv["metadata"]["annotations"]["olm.properties"] == '[{"type":"olm.x","value":1}]'


# --- what OLM's reader requires of each manifest ------------------------------------------------------------------


@pytest.mark.parametrize(("document", "problem"), [
    pytest.param("metadata: {name: a, annotations: {oct: 0777}}",
                 "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string",
                 id="annotation-number"),
    pytest.param("metadata: {name: a, annotations: {b: true}}",
                 "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.annotations of type string",
                 id="annotation-bool"),
    pytest.param("metadata: {name: 5}",
                 "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string",
                 id="name-number"),
    pytest.param("metadata: 5",
                 "json: cannot unmarshal number into Go struct field metadataOnlyObject.metadata of type v1.ObjectMeta",
                 id="metadata-number"),
    pytest.param("metadata: {name: a, labels: [1]}",
                 "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type "
                 "map[string]string", id="labels-list"),
    pytest.param("metadata: {name: a, finalizers: x}",
                 "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.finalizers of type []string",
                 id="finalizers-string"),
    pytest.param("metadata: {name: a, ownerReferences: [{name: 1}]}",
                 "json: cannot unmarshal number into Go struct field OwnerReference.metadata.ownerReferences.name of "
                 "type string", id="owner-reference-name"),
    pytest.param("metadata: {name: a, creationTimestamp: 5}",
                 "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type "
                 "string", id="timestamp-number"),
    pytest.param("metadata: {name: a, creationTimestamp: x}",
                 'parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"', id="timestamp-text"),
    pytest.param("apiVersion: 5\nmetadata: {name: 5}",
                 "json: cannot unmarshal number into Go struct field metadataOnlyObject.TypeMeta.apiVersion of type "
                 "string", id="api-version-number-first"),
])
def test_metadata_must_decode_as_olm_decodes_it(tmp_path: Path, document: str, problem: str) -> None:
    """OLM's reader decodes each manifest's metadata into the typed ObjectMeta and refuses the bundle when it
    cannot (its message ends with the same Go text)."""
    text = ("" if document.startswith("apiVersion") else "apiVersion: v1\n") + "kind: ConfigMap\n" + document + "\n"
    root = bundles.write_bundle(tmp_path / "b", manifests={"csv.yaml": bundles.csv(), "zz.yaml": text})
    assert refusal(root) == f"{root}/manifests/zz.yaml:0: {problem}"


def test_what_olm_passes_through(tmp_path: Path) -> None:
    """No apiVersion, no name, a null annotation, odd managedFields, the same object twice: OLM's reader takes
    them, and so does this one."""
    odd = [{"kind": "ConfigMap", "metadata": {"name": "no-api-version"}},
           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}},
           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "odd", "annotations": {"a": None},
                                                                  "managedFields": [{"fieldsV1": 5}]}},
           bundles.config_map("twice"), bundles.config_map("twice")]
    root = bundles.write_bundle(tmp_path / "b", manifests={"csv.yaml": bundles.csv(), "odd.yaml": odd})
    assert load_bundle(root).others == odd
