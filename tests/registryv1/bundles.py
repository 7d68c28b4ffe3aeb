"""Small registry+v1 bundles for tests: bundle directories, and OCI image layouts (directories or tars) of
bundle images, written from plain data so each test shows what it feeds the loader.

The OCI helpers write blobs themselves (``tarfile``, ``hashlib``, ``json``) and can write hostile images:
any tar entry type, absolute or ``..`` names, wrong digests, whatever index a test needs.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MEDIATYPE = "operators.operatorframework.io.bundle.mediatype.v1"
PACKAGE = "operators.operatorframework.io.bundle.package.v1"
ALL_MODES = ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")


def csv(name: str = "demo-operator.v1.0.0", *, supported: Iterable[str] = ("AllNamespaces",),
        annotations: dict[str, str] | None = None, version: str = "1.0.0") -> dict[str, Any]:
    """A minimal ClusterServiceVersion listing all four install modes, ``supported`` ones true."""
    wanted = set(supported)
    metadata: dict[str, Any] = {"name": name}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": metadata,
        "spec": {
            "version": version,
            "installModes": [{"type": t, "supported": t in wanted} for t in ALL_MODES],
            "install": {"strategy": "deployment", "spec": {"deployments": []}},
        },
    }


def crd(plural: str = "widgets", group: str = "example.com") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": {"plural": plural, "kind": plural.capitalize()[:-1]}, "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": True, "storage": True}]},
    }


def config_map(name: str = "demo-config") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def annotations_yaml(package: str | None = "demo", mediatype: str | None = "registry+v1",
                     extra: dict[str, str] | None = None) -> str:
    values: dict[str, str] = {}
    if mediatype is not None:
        values[MEDIATYPE] = mediatype
    if package is not None:
        values[PACKAGE] = package
    values.update(extra or {})
    return yaml.safe_dump({"annotations": values})


def _text(document: str | dict[str, Any] | list[Any]) -> str:
    if isinstance(document, str):
        return document
    if isinstance(document, list):
        return yaml.safe_dump_all(document)
    return yaml.safe_dump(document)


def write_bundle(root: Path, *, manifests: dict[str, str | dict[str, Any] | list[Any]] | None = None,
                 annotations: str | None = None, properties: str | None = None) -> Path:
    """A bundle directory at ``root``: ``manifests`` maps file names under ``manifests/`` to YAML text or
    objects (a list: several documents); by default one CSV, one CRD and one ConfigMap."""
    if manifests is None:
        manifests = {"a-crd.yaml": crd(), "b-config.yaml": config_map(), "demo.clusterserviceversion.yaml": csv()}
    (root / "metadata").mkdir(parents=True, exist_ok=True)
    (root / "manifests").mkdir(exist_ok=True)
    (root / "metadata" / "annotations.yaml").write_text(annotations if annotations is not None else annotations_yaml())
    if properties is not None:
        (root / "metadata" / "properties.yaml").write_text(properties)
    for name, document in manifests.items():
        (root / "manifests" / name).write_text(_text(document))
    return root


def tree_files(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` by relative path, for comparing trees and building images."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- OCI image layouts ------------------------------------------------------------------------------------------


@dataclass
class Entry:
    """One tar entry: a file (``data``), a directory (``kind="dir"``), a link (``kind="sym"``/``"hard"``, with
    ``link``) or a device/FIFO (``kind="fifo"``/``"chr"``)."""

    name: str
    data: bytes = b""
    kind: str = "file"
    link: str = ""


_TYPES = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE,
          "fifo": tarfile.FIFOTYPE, "chr": tarfile.CHRTYPE}


def tar_bytes(entries: Sequence[Entry]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.type = _TYPES[entry.kind]
            info.linkname = entry.link
            info.mode = 0o755 if entry.kind == "dir" else 0o644
            if entry.kind == "file":
                info.size = len(entry.data)
                tar.addfile(info, io.BytesIO(entry.data))
            else:
                tar.addfile(info)
    return buffer.getvalue()


def files_layer(files: dict[str, bytes]) -> list[Entry]:
    """Entries for ``files`` (relative paths), with their directories first, as image builders write them."""
    entries: list[Entry] = []
    seen: set[str] = set()
    for name in sorted(files):
        parts = name.split("/")
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth]) + "/"
            if directory not in seen:
                seen.add(directory)
                entries.append(Entry(directory, kind="dir"))
        entries.append(Entry(name, files[name]))
    return entries


LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
BUNDLE_LABELS = {MEDIATYPE: "registry+v1", PACKAGE: "demo"}


class Layout:
    """An OCI image layout being written under ``root``: add blobs, images and indexes, then ``finish``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        self.manifests: list[dict[str, Any]] = []

    def blob(self, data: bytes, media_type: str, **extra: Any) -> dict[str, Any]:
        digest = hashlib.sha256(data).hexdigest()
        (self.root / "blobs" / "sha256" / digest).write_bytes(data)
        return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data), **extra}

    def layer(self, entries: Sequence[Entry], *, compress: bool = True, media_type: str | None = None,
              **extra: Any) -> dict[str, Any]:
        data = tar_bytes(entries)
        if compress:
            data = gzip.compress(data, mtime=0)
        return self.blob(data, media_type or (LAYER_GZIP if compress else LAYER_TAR), **extra)

    def image(self, layers: Sequence[dict[str, Any]], *, labels: dict[str, str] | None = None,
              ref: str | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
        """An image manifest over ``layers`` (bundle labels by default), returned as its descriptor."""
        config = {"architecture": "amd64", "os": "linux",
                  "config": {"Labels": BUNDLE_LABELS if labels is None else labels},
                  "rootfs": {"type": "layers", "diff_ids": [layer["digest"] for layer in layers]}}
        config_descriptor = self.blob(json.dumps(config).encode(), CONFIG)
        manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": config_descriptor, "layers": list(layers)}
        descriptor = self.blob(json.dumps(manifest).encode(), MANIFEST)
        notes = dict(annotations or {})
        if ref is not None:
            notes["org.opencontainers.image.ref.name"] = ref
        if notes:
            descriptor["annotations"] = notes
        return descriptor

    def index(self, manifests: Sequence[dict[str, Any]]) -> dict[str, Any]:
        data = json.dumps({"schemaVersion": 2, "mediaType": INDEX, "manifests": list(manifests)}).encode()
        return self.blob(data, INDEX)

    def finish(self, manifests: Sequence[dict[str, Any]] | None = None, *,
               layout_version: str = "1.0.0") -> Path:
        """Write ``oci-layout`` and ``index.json`` listing ``manifests``."""
        (self.root / "oci-layout").write_text(json.dumps({"imageLayoutVersion": layout_version}))
        (self.root / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": list(manifests or [])}))
        return self.root


def image_layout(root: Path, layers: Sequence[Sequence[Entry]], *, compress: bool = True,
                 labels: dict[str, str] | None = None) -> Path:
    """A layout at ``root`` holding one image with ``layers`` (each a list of entries)."""
    layout = Layout(root)
    descriptors = [layout.layer(entries, compress=compress) for entries in layers]
    return layout.finish([layout.image(descriptors, labels=labels, ref="latest")])


def bundle_image_layout(root: Path, bundle_dir: Path) -> Path:
    """A layout at ``root`` of a bundle image whose single layer holds the bundle directory ``bundle_dir``."""
    return image_layout(root, [files_layer(tree_files(bundle_dir))])


def tar_of(directory: Path, out: Path) -> Path:
    """A tar of ``directory``'s content (entries relative to it, as ``tar -C DIR -cf OUT .`` writes them)."""
    with tarfile.open(out, "w") as tar:
        for path in sorted(directory.rglob("*")):
            tar.add(path, arcname="./" + path.relative_to(directory).as_posix(), recursive=False)
    return out
