"""Unpacking OCI image layouts of bundle images (spec §1, ours): layers in order, whiteouts, image selection,
and untrusted input: nothing lands outside the target, no link is created, every blob is checked, every limit
holds with a message that says which."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from common.bundle.registryv1 import oci
from common.bundle.registryv1.model import BundleInputError
from tests.registryv1.bundles import (
    BUNDLE_LABELS,
    LAYER_ZSTD,
    Entry,
    Layout,
    bundle_image_layout,
    files_layer,
    image_layout,
    tar_bytes,
    tar_of,
    tree_files,
    write_bundle,
)


def unpack(layout: Path, tmp_path: Path, limits: oci.Limits = oci.DEFAULT_LIMITS) -> dict[str, bytes]:
    out = oci.unpack(layout, tmp_path / "out", limits)
    for directory, dirs, files in os.walk(out):
        for name in dirs + files:
            assert not os.path.islink(os.path.join(directory, name)), "no link may be created"
    return tree_files(out)


def refusal(layout: Path, tmp_path: Path, limits: oci.Limits = oci.DEFAULT_LIMITS) -> str:
    with pytest.raises(BundleInputError) as caught:
        oci.unpack(layout, tmp_path / "out", limits)
    return str(caught.value)


# --- layers ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [True, False], ids=["tar+gzip", "tar"])
def test_layers_apply_in_order(tmp_path: Path, compress: bool) -> None:
    layout = image_layout(tmp_path / "l", [
        [Entry("a", b"1"), Entry("dir/", kind="dir"), Entry("dir/b", b"2"), Entry("./c", b"3")],
        [Entry("a", b"one"), Entry("d/e", b"4")],
    ], compress=compress)
    assert unpack(layout, tmp_path) == {"a": b"one", "c": b"3", "d/e": b"4", "dir/b": b"2"}


def test_whiteouts_hide_the_lower_layers_only(tmp_path: Path) -> None:
    layout = image_layout(tmp_path / "l", [
        [Entry("d/x", b"x"), Entry("d/y", b"y"), Entry("o/a", b"a"), Entry("o/sub/b", b"b"), Entry("gone/f", b"f")],
        [Entry("d/.wh.x"), Entry("o/c", b"c"), Entry("o/.wh..wh..opq"), Entry(".wh.gone")],
    ])
    assert unpack(layout, tmp_path) == {"d/y": b"y", "o/c": b"c"}


def test_later_layers_replace_files_by_directories_and_back(tmp_path: Path) -> None:
    layout = image_layout(tmp_path / "l", [
        [Entry("p", b"file"), Entry("q/inner", b"i")],
        [Entry("p/child", b"c"), Entry("q", b"now a file")],
    ])
    assert unpack(layout, tmp_path) == {"p/child": b"c", "q": b"now a file"}


def test_a_tar_of_the_layout(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    layout = bundle_image_layout(tmp_path / "l", bundle)
    expected = tree_files(bundle)
    assert unpack(tar_of(layout, tmp_path / "l.tar"), tmp_path / "1") == expected
    gzipped = tmp_path / "l.tar.gz"
    gzipped.write_bytes(gzip.compress((tmp_path / "l.tar").read_bytes()))
    assert unpack(gzipped, tmp_path / "2") == expected
    # a compressed layout tar is decompressed once into a scratch file (reading blobs in layout order seeks back,
    # which restarts a compressed stream from its start): bzip2 and xz too, as tarfile reads them
    for name, compress in (("l.tar.bz2", bz2.compress), ("l.tar.xz", lzma.compress)):
        packed = tmp_path / name
        packed.write_bytes(compress((tmp_path / "l.tar").read_bytes()))
        assert unpack(packed, tmp_path / name.replace(".", "-")) == expected
    for name, data in (("t.tar.gz", gzipped.read_bytes()), ("t.tar.xz", (tmp_path / "l.tar.xz").read_bytes())):
        truncated = tmp_path / name
        truncated.write_bytes(data[:len(data) // 2])
        assert refusal(truncated, tmp_path / name.replace(".", "-")).startswith(f"{truncated}: not a readable tar: ")
        assert (oci.tar_refusal(truncated) or "").startswith("not a readable tar: ")


def test_oras_layers(tmp_path: Path) -> None:
    """``oras push`` writes a file as a blob titled with its path, and a directory as a tar+gzip marked to be
    unpacked."""
    layout = Layout(tmp_path / "l")
    file_layer = layout.blob(b"annotations: {}\n", "application/vnd.oci.image.layer.v1.tar",
                             annotations={"org.opencontainers.image.title": "metadata/annotations.yaml"})
    dir_layer = layout.layer([Entry("manifests/", kind="dir"), Entry("manifests/csv.yaml", b"kind: X\n")],
                             annotations={"org.opencontainers.image.title": "manifests",
                                          "io.deis.oras.content.unpack": "true"})
    layout.finish([layout.image([file_layer, dir_layer], labels={})])
    assert unpack(layout.root, tmp_path) == {"manifests/csv.yaml": b"kind: X\n",
                                             "metadata/annotations.yaml": b"annotations: {}\n"}


# --- which image -------------------------------------------------------------------------------------------------


def test_indexes_are_followed_and_attestations_skipped(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "l")
    layer = layout.layer([Entry("f", b"x")])
    amd64 = layout.image([layer])
    amd64["platform"] = {"architecture": "amd64", "os": "linux"}
    arm64 = layout.image([layer], labels={**BUNDLE_LABELS, "arch": "arm64"})
    attestation = layout.image([layout.layer([Entry("sbom", b"s")])], labels={},
                               annotations={"vnd.docker.reference.type": "attestation-manifest"})
    inner = layout.index([amd64, arm64, attestation])
    layout.finish([layout.index([inner])])
    assert unpack(layout.root, tmp_path) == {"f": b"x"}


def test_the_bundle_image_is_chosen_among_others(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "l")
    other = layout.image([layout.layer([Entry("other", b"o")])], labels={}, ref="base")
    bundle = layout.image([layout.layer([Entry("bundle", b"b")])], ref="bundle")
    layout.finish([other, bundle])
    assert unpack(layout.root, tmp_path) == {"bundle": b"b"}


def test_several_different_images_are_refused(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "l")
    first = layout.image([layout.layer([Entry("a", b"a")])], ref="v1")
    second = layout.image([layout.layer([Entry("b", b"b")])], ref="v2")
    layout.finish([first, second, dict(first, annotations={"org.opencontainers.image.ref.name": "latest"})])
    assert refusal(layout.root, tmp_path) == (
        f"{layout.root}: index.json: lists 2 different images and none is the only bundle image: "
        f"{first['digest']} (v1, latest); {second['digest']} (v2); copy only the one to render into the layout")


def test_layout_documents(tmp_path: Path) -> None:
    layout = image_layout(tmp_path / "a", [[Entry("f", b"x")]])
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "2.0.0"}')
    assert refusal(layout, tmp_path) == f"{layout}: oci-layout: unsupported imageLayoutVersion \"2.0.0\""
    layout = image_layout(tmp_path / "b", [[Entry("f", b"x")]])
    (layout / "index.json").write_text("{nope")
    assert refusal(layout, tmp_path).startswith(f"{layout}: index.json: not valid JSON (")
    layout = image_layout(tmp_path / "c", [[Entry("f", b"x")]])
    (layout / "index.json").write_text('{"schemaVersion": 2}')
    assert refusal(layout, tmp_path) == f"{layout}: index.json: not an image index (no \"manifests\" list)"
    layout = Layout(tmp_path / "d").finish([])
    assert refusal(layout, tmp_path) == f"{layout}: index.json: lists no image"
    store = Layout(tmp_path / "e")
    schema1 = store.blob(b'{"schemaVersion": 1}', "application/vnd.docker.distribution.manifest.v1+prettyjws")
    store.finish([schema1])
    assert refusal(store.root, tmp_path) == (
        f"{store.root}: index.json manifests[0]: unsupported manifest media type "
        "\"application/vnd.docker.distribution.manifest.v1+prettyjws\" (expected an OCI or Docker v2 image manifest "
        "or index)")


# --- integrity -----------------------------------------------------------------------------------------------------


def _single_layer(tmp_path: Path) -> tuple[Layout, dict[str, Any]]:
    layout = Layout(tmp_path / "l")
    layer = layout.layer([Entry("f", b"content")])
    return layout, layer


def test_blob_digests_and_sizes_are_checked(tmp_path: Path) -> None:
    layout, layer = _single_layer(tmp_path)
    layout.finish([layout.image([layer])])
    blob = layout.root / "blobs" / "sha256" / layer["digest"].removeprefix("sha256:")
    data = bytearray(blob.read_bytes())
    data[-1] ^= 1
    blob.write_bytes(bytes(data))
    actual = hashlib.sha256(bytes(data)).hexdigest()
    assert refusal(layout.root, tmp_path) == (f"{layout.root}: layer 0: blob {layer['digest']} does not match its "
                                              f"digest (its content hashes to sha256:{actual})")
    blob.write_bytes(bytes(data) + b"x")
    assert refusal(layout.root, tmp_path) == (f"{layout.root}: layer 0: blob {layer['digest']} has "
                                              f"{len(data) + 1} bytes, its descriptor says {layer['size']}")
    blob.unlink()
    assert refusal(layout.root, tmp_path) == (
        f"{layout.root}: layer 0: blob {layer['digest']} is missing from the layout")


@pytest.mark.parametrize("digest", ["sha256:../../../../etc/passwd", "sha256:ABC", "md5:" + "0" * 32, 5])
def test_malformed_digests_never_name_a_file(tmp_path: Path, digest: object) -> None:
    layout, layer = _single_layer(tmp_path)
    layout.finish([layout.image([dict(layer, digest=digest)])])
    assert refusal(layout.root, tmp_path) == (
        f"{layout.root}: layer 0: a descriptor without a digest" if not isinstance(digest, str) else
        f"{layout.root}: layer 0: unsupported or malformed digest {json.dumps(digest)}")


# --- hostile entries -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("entry", "problem"), [
    pytest.param(Entry("/etc/passwd", b"x"), 'entry "/etc/passwd" has an absolute path', id="absolute"),
    pytest.param(Entry("../escape", b"x"), 'entry "../escape" leads outside the image ("..")', id="dotdot"),
    pytest.param(Entry("a/../../escape", b"x"), 'entry "a/../../escape" leads outside the image ("..")',
                 id="inner-dotdot"),
    pytest.param(Entry("../.wh.x"), 'entry "../.wh.x" leads outside the image ("..")', id="whiteout-dotdot"),
    pytest.param(Entry("h", kind="hard", link="../../etc/passwd"),
                 'entry "../../etc/passwd" leads outside the image ("..")', id="hardlink-dotdot"),
    pytest.param(Entry("h", kind="hard", link="/etc/passwd"), 'entry "/etc/passwd" has an absolute path',
                 id="hardlink-absolute"),
    pytest.param(Entry("h", kind="hard", link="missing"),
                 'hard link "h" to "missing", which is not a regular file of the image', id="hardlink-missing"),
])
def test_entries_that_would_escape_are_refused(tmp_path: Path, entry: Entry, problem: str) -> None:
    layout = image_layout(tmp_path / "l", [[entry]])
    assert refusal(layout, tmp_path) == f"{layout}: layer 0: {problem}"
    assert not (tmp_path / "escape").exists()


def test_links_are_never_created(tmp_path: Path) -> None:
    layout = image_layout(tmp_path / "l", [
        [Entry("data/csv.yaml", b"kind: X\n"), Entry("manifests/csv.yaml", kind="sym", link="../data/csv.yaml"),
         Entry("manifests/abs.yaml", kind="sym", link="/data/csv.yaml"),
         Entry("manifests/chain.yaml", kind="sym", link="abs.yaml"),
         Entry("manifests/hard.yaml", kind="hard", link="data/csv.yaml"),
         Entry("usr/bin/sh", kind="sym", link="/bin/busybox"), Entry("dev/null", kind="chr"),
         Entry("run/fifo", kind="fifo")],
    ])
    assert unpack(layout, tmp_path) == {"data/csv.yaml": b"kind: X\n", "manifests/abs.yaml": b"kind: X\n",
                                        "manifests/chain.yaml": b"kind: X\n", "manifests/csv.yaml": b"kind: X\n",
                                        "manifests/hard.yaml": b"kind: X\n"}
    assert os.stat(tmp_path / "out" / "manifests" / "hard.yaml").st_nlink == 1


def test_a_link_to_outside_the_image_is_refused(tmp_path: Path) -> None:
    """``..`` and ``/`` stop at the image's root, so the link leads to the image's own ``etc/passwd``, which
    it does not have."""
    layout = image_layout(tmp_path / "l", [[Entry("manifests/x.yaml", kind="sym", link="../../../../etc/passwd")]])
    assert refusal(layout, tmp_path) == (
        f"{layout}: symbolic link manifests/x.yaml -> ../../../../etc/passwd does not lead to a file of the image")
    layout = image_layout(tmp_path / "m", [[Entry("manifests", kind="sym", link="/etc")]])
    assert refusal(layout, tmp_path / "m") == (
        f"{layout}: manifests is a symbolic link in the image; a bundle's manifests/ must be a directory")


def test_a_directory_link_is_not_followed_by_later_layers(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    layout = image_layout(tmp_path / "l", [[Entry("manifests", kind="sym", link=str(outside))],
                                           [Entry("manifests/x.yaml", b"x")]])
    assert unpack(layout, tmp_path) == {"manifests/x.yaml": b"x"}
    assert list(outside.iterdir()) == []


def test_unreadable_layers(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "l")
    truncated = layout.blob(gzip.compress(b"\0" * 100)[:-8], "application/vnd.oci.image.layer.v1.tar+gzip")
    layout.finish([layout.image([truncated])])
    assert refusal(layout.root, tmp_path).startswith(f"{layout.root}: layer 0: not a readable tar layer (")
    layout = Layout(tmp_path / "m")
    lying = layout.blob(tar_bytes([Entry("f", b"x" * 1000)])[:512 + 5], "application/vnd.oci.image.layer.v1.tar")
    layout.finish([layout.image([lying])])  # the header says 1000 bytes, 5 follow
    assert refusal(layout.root, tmp_path / "m").startswith(f"{layout.root}: layer 0: not a readable tar layer (")


def test_unknown_layer_media_types_are_refused(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "l")
    chart = layout.blob(b"x", "application/vnd.cncf.helm.chart.content.v1.tar+gzip")
    layout.finish([layout.image([chart])])
    assert refusal(layout.root, tmp_path) == (
        f"{layout.root}: layer 0: unsupported layer media type \"application/vnd.cncf.helm.chart.content.v1.tar+gzip\" "
        "(expected a tar, tar+gzip or tar+zstd image layer)")


def test_zstd_layers_are_read_every_frame_and_a_corrupt_one_is_refused(tmp_path: Path) -> None:
    """As podman pushes them (zstd, and zstd:chunked: many frames, skippable ones between): zstandard before Python
    3.14, compression.zstd from it."""
    import zstandard
    data = tar_bytes([Entry("manifests/a.yaml", b"a" * 5000), Entry("metadata/b.yaml", b"b")])
    compressor = zstandard.ZstdCompressor()
    skippable = b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little") + b"meta"
    chunked = compressor.compress(data[:2048]) + skippable + compressor.compress(data[2048:])
    layout = Layout(tmp_path / "l")
    layout.finish([layout.image([layout.blob(chunked, LAYER_ZSTD)])])
    assert unpack(layout.root, tmp_path) == {"manifests/a.yaml": b"a" * 5000, "metadata/b.yaml": b"b"}
    layout = Layout(tmp_path / "m")
    broken = compressor.compress(data)
    layout.finish([layout.image([layout.blob(broken[:8] + b"\xff" * 16 + broken[24:], LAYER_ZSTD)])])
    assert refusal(layout.root, tmp_path / "m").startswith(f"{layout.root}: layer 0: not a readable tar layer (zstd: ")
    layout = Layout(tmp_path / "t")   # the last frame cut short: refused, not read as an archive missing files
    layout.finish([layout.image([layout.blob(chunked[:-5], LAYER_ZSTD)])])
    assert refusal(layout.root, tmp_path / "t") == (
        f"{layout.root}: layer 0: not a readable tar layer (zstd: the stream ends inside a frame (truncated))")


# --- limits ----------------------------------------------------------------------------------------------------------


def test_a_decompression_bomb_is_refused(tmp_path: Path) -> None:
    layout = image_layout(tmp_path / "l", [[Entry("zeros", b"\0" * (4 << 20))]])
    assert (layout / "blobs").exists()
    limits = oci.Limits(max_stream_bytes=1 << 20)
    assert refusal(layout, tmp_path, limits) == (
        f"{layout}: layer 0: the layers decompress to more than {1 << 20} bytes (a decompression bomb?)")


@pytest.mark.parametrize(("limits", "problem"), [
    pytest.param(oci.Limits(max_file_bytes=10), "layer 0: big has 11 bytes, more than the limit of 10 for one file",
                 id="file"),
    pytest.param(oci.Limits(max_extracted_bytes=15), "layer 0: the image unpacks to more than 15 bytes", id="total"),
    pytest.param(oci.Limits(max_entries=2), "layer 0: more than 2 entries in the layers", id="entries"),
    pytest.param(oci.Limits(max_layers=0), "the image has 1 layers, more than the limit of 0", id="layers"),
])
def test_limits(tmp_path: Path, limits: oci.Limits, problem: str) -> None:
    layout = image_layout(tmp_path / "l", [[Entry("small", b"12345"), Entry("big", b"x" * 11), Entry("c", b"")]])
    assert refusal(layout, tmp_path, limits) == f"{layout}: {problem}"


def test_json_documents_are_bounded(tmp_path: Path) -> None:
    layout = image_layout(tmp_path / "l", [[Entry("f", b"x")]])
    size = (layout / "index.json").stat().st_size
    assert refusal(layout, tmp_path, oci.Limits(max_json_bytes=size - 1)) == (
        f"{layout}: index.json: {size} bytes, more than the limit of {size - 1} for a JSON document")


def test_bundle_files_layer_helper_writes_directories_first() -> None:
    names = [e.name for e in files_layer({"a/b/c": b"", "a/d": b""})]
    assert names == ["a/", "a/b/", "a/b/c", "a/d"]


# --- malformed and hostile documents ---------------------------------------------------------------------------


def test_indexes_listing_one_index_many_times_are_read_once_each(tmp_path: Path) -> None:
    """Four levels of indexes, each listing the next 30 times: 30 to the 4th paths, 5 documents. Each document is
    read once, so a budget of 200 listed manifests (4 x 30 + 1 listings) is enough."""
    layout = Layout(tmp_path / "l")
    descriptor = layout.image([layout.layer([Entry("f", b"x")])], ref="bundle")
    for _ in range(4):
        descriptor = layout.index([descriptor] * 30)
    layout.finish([descriptor])
    assert unpack(layout.root, tmp_path, oci.Limits(max_descriptors=200)) == {"f": b"x"}


def test_the_manifests_listed_by_all_indexes_are_bounded(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "l")
    images = [layout.image([layout.layer([Entry(f"f{i}", b"x")])], ref=f"r{i}") for i in range(3)]
    layout.finish([layout.index(images)])
    assert refusal(layout.root, tmp_path, oci.Limits(max_descriptors=3)) == (
        f"{layout.root}: index.json manifests[0] manifests[2]: the image indexes list more than 3 manifests")


def test_an_image_config_whose_config_is_not_an_object_is_refused(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "l")
    layer = layout.layer([Entry("f", b"x")])
    config = layout.blob(json.dumps({"architecture": "amd64", "os": "linux", "config": "labels",
                                     "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}).encode(),
                         "application/vnd.oci.image.config.v1+json")
    manifest = layout.blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                                       "config": config, "layers": [layer]}).encode(),
                           "application/vnd.oci.image.manifest.v1+json")
    layout.finish([manifest])
    assert refusal(layout.root, tmp_path) == (
        f"{layout.root}: index.json manifests[0] config: \"config\" is not a JSON object (got \"labels\")")


@pytest.mark.parametrize("media_type", [{"a": 1}, ["x"]], ids=["object", "list"])
def test_a_media_type_that_is_not_a_string_is_unsupported(tmp_path: Path, media_type: object) -> None:
    layout, layer = _single_layer(tmp_path)
    layout.finish([dict(layout.image([layer]), mediaType=media_type)])
    assert refusal(layout.root, tmp_path) == (
        f"{layout.root}: index.json manifests[0]: unsupported manifest media type {json.dumps(media_type)} "
        "(expected an OCI or Docker v2 image manifest or index)")
    layout, layer = _single_layer(tmp_path / "2")
    layout.finish([layout.image([dict(layer, mediaType=media_type)])])
    assert refusal(layout.root, tmp_path / "2") == (
        f"{layout.root}: layer 0: unsupported layer media type {json.dumps(media_type)} (expected a tar, tar+gzip or "
        "tar+zstd image layer)")


def test_a_file_layer_titled_with_a_nul_character_is_refused(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "l")
    file_layer = layout.blob(b"x", "application/vnd.oci.image.layer.v1.tar",
                             annotations={"org.opencontainers.image.title": "manifests/a\u0000b.yaml"})
    layout.finish([layout.image([file_layer], labels={})])
    assert refusal(layout.root, tmp_path) == (
        f"{layout.root}: layer 0: entry \"manifests/a\\u0000b.yaml\" has an invalid name (a NUL character)")


@pytest.mark.parametrize("whiteout", [".wh..", ".wh...", ".wh.", "manifests/.wh...", "manifests/.wh."])
def test_a_whiteout_that_names_no_file_is_refused(tmp_path: Path, whiteout: str) -> None:
    """``.wh..`` and ``.wh...`` would hide their own directory or the one above (the target's parent for a
    whiteout at the root): refused before anything is removed."""
    (tmp_path / "keep").write_text("keep")
    layout = image_layout(tmp_path / "l", [[Entry("manifests/csv.yaml", b"kind: X\n")], [Entry(whiteout)]])
    assert refusal(layout, tmp_path / "t") == f"{layout}: layer 1: whiteout {json.dumps(whiteout)} names no file"
    assert (tmp_path / "keep").read_text() == "keep"


def test_entries_nested_too_deep_are_refused(tmp_path: Path) -> None:
    deep = "/".join(["d"] * 200) + "/f"
    layout = image_layout(tmp_path / "l", [[Entry(deep, b"x")]])
    assert refusal(layout, tmp_path) == (
        f"{layout}: layer 0: entry \"d/d/d/...\" is nested 201 levels deep, more than the limit of 128")


def test_one_lookup_follows_at_most_40_links_in_all(tmp_path: Path) -> None:
    """Links whose targets go through the next link twice (``e0 -> e1/../e1``, ...): bounding only the depth
    let the work double with every link (2 to the 20th lookups here); all the links followed for one lookup are
    counted, as Linux counts them."""
    tree = oci._Tree(tmp_path, oci._Layout(oci._DirStore(tmp_path), oci.DEFAULT_LIMITS),
                     oci._Budget(oci.DEFAULT_LIMITS))
    tree.links = {(f"e{i}",): f"e{i + 1}/../e{i + 1}" for i in range(20)}
    tree.links[("e20",)] = "file"
    followed = [0]
    assert oci._resolve(tree, ("e0",), followed) is None
    assert followed[0] == 42   # the lookup's own link, 40 more, and the one refused


def test_the_entries_of_a_layout_tar_are_bounded(tmp_path: Path) -> None:
    layout = image_layout(tmp_path / "l", [[Entry("f", b"x")]])
    packed = tar_of(layout, tmp_path / "l.tar")
    assert refusal(packed, tmp_path, oci.Limits(max_entries=3)) == f"{packed}: more than 3 entries in the layout tar"


def test_the_count_of_links_below_each_directory_follows_every_change(tmp_path: Path) -> None:
    """The index that keeps removing an entry from touching every link (20,000 links made unpacking quadratic)
    always says what the links themselves say, and replacing, removing and clearing drop the right links."""
    root = tmp_path / "root"
    root.mkdir()
    tree = oci._Tree(root, oci._Layout(oci._DirStore(tmp_path), oci.DEFAULT_LIMITS), oci._Budget(oci.DEFAULT_LIMITS))

    def counts() -> dict[tuple[str, ...], int]:
        found: dict[tuple[str, ...], int] = {}
        for link in tree.links:
            for depth in range(1, len(link)):
                found[link[:depth]] = found.get(link[:depth], 0) + 1
        return found

    for link in [("a", "x"), ("a", "b", "y"), ("c", "z"), ("o", "p"), ("o", "q", "r"), ("d", "e", "w")]:
        tree.add_link(link, "f")
    tree.add_link(("a", "x"), "g")             # replaced: counted once
    assert tree.below == counts() == {("a",): 2, ("a", "b"): 1, ("c",): 1, ("o",): 2, ("o", "q"): 1,
                                      ("d",): 1, ("d", "e"): 1}
    tree.remove(("a", "b"))                    # a whiteout of a directory holding a link
    tree.directory(("c", "z", "sub"))          # a directory where a link was
    tree.clear(("o",))                         # an opaque directory
    tree.remove(("zz",))                       # nothing there
    assert sorted(tree.links) == [("a", "x"), ("d", "e", "w")]
    assert tree.below == counts() == {("a",): 1, ("d",): 1, ("d", "e"): 1}


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT], ids=["gnu-longname", "pax"])
def test_header_records_past_the_limit_are_refused_before_they_are_read(tmp_path: Path, fmt: int) -> None:
    """tarfile reads a long-name or pax record whole into memory: a small layer could claim a name of hundreds of
    MB. A record over 1 MiB is refused, in a layer and in the layout tar itself."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        info = tarfile.TarInfo("d/" + "n" * (oci.MAX_HEADER_RECORD_BYTES + 10))
        tar.addfile(info, io.BytesIO(b""))
    layout = Layout(tmp_path / "l")
    layout.finish([layout.image([layout.blob(buffer.getvalue(), "application/vnd.oci.image.layer.v1.tar")])])
    problem = refusal(layout.root, tmp_path / "1")
    assert problem.startswith(f"{layout.root}: layer 0: not a readable tar layer (a header record of ")
    assert problem.endswith(f" bytes, more than the limit of {oci.MAX_HEADER_RECORD_BYTES})")
    outer = tmp_path / "outer.tar"
    outer.write_bytes(buffer.getvalue())
    assert not oci.is_layout_tar(outer)
    problem = oci.tar_refusal(outer) or ""
    assert problem.startswith("not a readable tar: ")
    assert problem.endswith(f" bytes, more than the limit of {oci.MAX_HEADER_RECORD_BYTES}")


def test_a_name_the_filesystem_refuses_is_named_with_its_layer(tmp_path: Path) -> None:
    """A component over 255 bytes (a layer entry, a whiteout, an oras title, a symbolic link's own name) is
    refused by the filesystem: the message names the layer and the entry, shown to its first 100 characters. A
    link target no path can hold leads to no file of the image."""
    long = "manifests/" + "a" * 300
    shown = json.dumps(long[:100] + "...")
    layout = image_layout(tmp_path / "l", [[Entry("manifests/csv.yaml", b"x")], [Entry(long, b"x")]])
    packed = tar_of(layout, tmp_path / "l.tar")
    for source in (layout, packed):
        assert refusal(source, tmp_path / f"out-{source.name}") == (
            f"{source}: layer 1: entry {shown}: cannot unpack: File name too long")
    whiteout = "manifests/.wh." + "a" * 300
    layout = image_layout(tmp_path / "w", [[Entry("manifests/csv.yaml", b"x")], [Entry(whiteout)]])
    assert refusal(layout, tmp_path / "w") == (
        f"{layout}: layer 1: entry {json.dumps(whiteout[:100] + '...')}: cannot unpack: File name too long")
    store = Layout(tmp_path / "o")
    file_layer = store.blob(b"x", "application/vnd.oci.image.layer.v1.tar",
                            annotations={"org.opencontainers.image.title": long})
    store.finish([store.image([file_layer], labels={})])
    assert refusal(store.root, tmp_path / "o") == (
        f"{store.root}: layer 0: entry {shown}: cannot unpack: File name too long")
    layout = image_layout(tmp_path / "s", [[Entry(long, kind="sym", link="../data/f"), Entry("data/f", b"x")]])
    assert refusal(layout, tmp_path / "s") == (
        f"{layout}: symbolic link {long[:100]}...: cannot unpack: File name too long")
    layout = image_layout(tmp_path / "t", [[Entry("manifests/a.yaml", kind="sym", link="a/" * 20000 + "x")]])
    assert refusal(layout, tmp_path / "t") == (
        f"{layout}: symbolic link manifests/a.yaml -> {'a/' * 50}... does not lead to a file of the image")
    layout = image_layout(tmp_path / "h", [[Entry("manifests/h.yaml", kind="hard", link="f" * 300)]])
    assert refusal(layout, tmp_path / "h") == (
        f"{layout}: layer 0: hard link \"manifests/h.yaml\" to {json.dumps('f' * 100 + '...')}, which is not a "
        "regular file of the image")
