"""Unpacking an OCI image layout of a bundle image (spec §1, ours): a directory or a tar of one, as
``skopeo copy docker://... oci:DIR``, ``docker save`` (25+) or ``oras copy --to-oci-layout`` write it. Nothing
is pulled from a registry.

``index.json`` leads to the image manifest (through image indexes; of several images, the one whose config
carries the bundle labels, or one content shared by all of them), its layers are applied in order to an empty
directory, and the result is read as a bundle directory. A bundle image is untrusted input, so:

- every blob is checked against its descriptor's size and digest before it is used, and a digest must be a
  well-formed ``sha256``/``sha512`` hex digest (it names a file);
- only regular files and directories are created. Nothing written can be a link: a hard link becomes a copy
  of the file it names in the image; a symbolic link under ``metadata/`` or ``manifests/`` becomes a copy of
  the regular file it leads to *inside the image* (resolved as the image's root sees it), and other symbolic
  links, devices and FIFOs are not materialised (no bundle needs them);
- an absolute entry name, a ``..`` component, or a hard link to something outside the image refuses the
  image (nothing may land outside the target directory);
- whiteouts are honoured as the OCI image spec defines them (``.wh.NAME`` hides NAME of the lower layers,
  ``.wh..wh..opq`` hides everything the lower layers put in its directory);
- :class:`Limits` bound the JSON documents, the decompressed layer streams, the bytes written, each file and
  the number of entries, so a decompression bomb is refused with a message saying which limit it hit;
- layers: tar, tar+gzip and tar+zstd (recognised by content, whatever the media type says; zstd:chunked's many
  and skippable frames all read), zstd by ``compression.zstd`` from Python 3.14, by ``zstandard`` before it. A
  layer ``oras push`` made from a single file (an ``org.opencontainers.image.title`` annotation, no
  ``io.deis.oras.content.unpack``) is that file, placed at its title.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import importlib
import io
import json
import lzma
import os
import re
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, Protocol

from common.bundle.registryv1.model import (
    MEDIATYPE_ANNOTATION,
    BundleInputError,
)

OCI_LAYOUT: Final = "oci-layout"
INDEX: Final = "index.json"

MANIFEST_TYPES: Final = frozenset({"application/vnd.oci.image.manifest.v1+json",
                                   "application/vnd.docker.distribution.manifest.v2+json"})
INDEX_TYPES: Final = frozenset({"application/vnd.oci.image.index.v1+json",
                                "application/vnd.docker.distribution.manifest.list.v2+json"})
LAYER_TYPES: Final = frozenset({
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+zstd",
    "application/vnd.oci.image.layer.nondistributable.v1.tar",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
    "application/vnd.docker.image.rootfs.diff.tar",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
    "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
})
ORAS_TITLE: Final = "org.opencontainers.image.title"
ORAS_UNPACK: Final = "io.deis.oras.content.unpack"

_DIGEST: Final = re.compile(r"(sha256):([a-f0-9]{64})|(sha512):([a-f0-9]{128})")
_LAYOUT_MEMBER: Final = re.compile(r"(?:\./)?(oci-layout|index\.json|blobs/[a-z0-9]+/[a-f0-9]+)")
_GZIP_MAGIC: Final = b"\x1f\x8b"
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
# how a compressed layout tar is opened, by its first bytes (what tarfile's "r:*" recognises)
_DECOMPRESSORS: Final[dict[bytes, Any]] = {_GZIP_MAGIC: gzip.open, b"BZh": bz2.open, b"\xfd7zXZ\x00": lzma.open}
# what reading a broken tar raises, whatever compresses it (a bad gzip stream is an OSError)
_TAR_ERRORS: Final = (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError)
_WHITEOUT: Final = ".wh."
_OPAQUE: Final = ".wh..wh..opq"
_MIB: Final = 1 << 20
_CHUNK: Final = 1 << 16
_SHOWN_NAME_CHARS: Final = 100  # of an entry name or link target in a message (a tar name may be 1 MiB long)


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what an image may make this code read and write (a bundle image is a few hundred KiB)."""

    max_json_bytes: int = 4 * _MIB  # index.json, a manifest, an image config
    max_stream_bytes: int = 1024 * _MIB  # decompressed layer streams, all layers together
    max_extracted_bytes: int = 512 * _MIB  # bytes written to files
    max_file_bytes: int = 128 * _MIB  # one file
    max_entries: int = 100_000  # tar entries, all layers together
    max_layers: int = 256
    max_index_depth: int = 4  # image indexes inside image indexes
    max_descriptors: int = 10_000  # manifest descriptors listed by all the image indexes together
    max_path_depth: int = 128  # directories above an entry (deeper trees cannot even be removed recursively)


DEFAULT_LIMITS: Final = Limits()
# An operator index image's /configs holds every package of its catalog (the CSVs inlined as properties): a few
# hundred MiB of JSON, under a base image with opm. Only /configs is written, but every layer is read.
CATALOG_LIMITS: Final = Limits(max_stream_bytes=16 * 1024 * _MIB, max_extracted_bytes=4 * 1024 * _MIB,
                               max_file_bytes=2 * 1024 * _MIB, max_entries=2_000_000)
CATALOG_CONFIGS_LABEL: Final = "operators.operatorframework.io.index.configs.v1"
DEFAULT_CATALOG_CONFIGS: Final = "/configs"


MAX_HEADER_RECORD_BYTES: Final = _MIB
"""A tar's GNU long-name and pax header records are read whole into memory (by ``tarfile``): any larger one is
refused (a path is at most 4 KiB; a 1.4 MB layer could otherwise claim a 300 MB name and cost 1.3 GB)."""


class _BoundedTarInfo(tarfile.TarInfo):
    """A tar header whose long-name or pax record is refused past :data:`MAX_HEADER_RECORD_BYTES` before it is
    read (``tarfile`` has no limit of its own; this is its one hook for each member it reads)."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _HEADER_RECORD_TYPES and self.size > MAX_HEADER_RECORD_BYTES:
            raise tarfile.HeaderError(f"a header record of {self.size} bytes, more than the limit of "
                                      f"{MAX_HEADER_RECORD_BYTES}")
        member: tarfile.TarInfo = super()._proc_member(tarfile_)  # type: ignore[misc]
        return member


_HEADER_RECORD_TYPES: Final = frozenset({tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
                                         tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE})


# --- recognising a layout ------------------------------------------------------------------------------------


def digest_parts(digest: object) -> tuple[str, str] | None:
    """A content digest as the algorithm and hex digest it names (``sha256``/``sha512``, lower-case hex of the
    right length: what this code can check, and safe as a file name), or ``None`` for anything else. The one
    reading of digests for layouts, registries and image references."""
    match = _DIGEST.fullmatch(digest) if isinstance(digest, str) else None
    if match is None:
        return None
    return (match.group(1) or match.group(3)), (match.group(2) or match.group(4))


def is_layout_dir(path: str | Path) -> bool:
    """A directory with ``oci-layout`` and ``index.json``, whatever they are: one that is not a regular file (a
    directory, a FIFO) is refused when the layout is read, naming it, not taken for some other directory."""
    p = Path(path)
    return (p / OCI_LAYOUT).exists() and (p / INDEX).exists()


def is_layout_tar(path: str | Path) -> bool:
    """A tar (maybe compressed) with ``oci-layout`` at its root, or with more entries than a layout may hold (read
    as one, it is refused naming that limit)."""
    try:
        with tarfile.open(path, "r:*", tarinfo=_BoundedTarInfo) as tar:
            for count, m in enumerate(tar, 1):
                if count > DEFAULT_LIMITS.max_entries:
                    return True   # read as a layout, whose reader refuses it naming the limit
                if _LAYOUT_MEMBER.fullmatch(m.name) and m.name.endswith(OCI_LAYOUT) and m.isfile():
                    return True
            return False
    except _TAR_ERRORS:
        return False


def tar_refusal(path: str | Path) -> str | None:
    """For a file that is not a layout tar (:func:`is_layout_tar`): why it is no bundle, when it is a tar at all
    (``None``: not a tar), read in one pass: a tar that cannot be read to its end (truncated, corrupt, a header
    record over the limit; a layout tar cut short before its ``oci-layout``, which tools write last, is a broken
    tar, not some other tar), a docker-archive (``manifest.json`` at its root: what ``podman save`` writes unless
    told ``--format oci-archive``, and ``docker save`` before Docker 25), or some other tar."""
    try:
        tar = tarfile.open(path, "r:*", tarinfo=_BoundedTarInfo)  # noqa: SIM115 - closed by the with below
    except tarfile.HeaderError as exc:   # a tar whose first header is refused
        return f"not a readable tar: {str(exc) or type(exc).__name__}"
    except _TAR_ERRORS:
        return None
    manifest = False
    try:
        with tar:
            for member in tar:
                manifest = manifest or (member.name.removeprefix("./") == "manifest.json" and member.isfile())
    except _TAR_ERRORS as exc:
        return f"not a readable tar: {str(exc) or type(exc).__name__}"
    if manifest:
        return ("a docker-archive (manifest.json at its root), not an OCI image layout: save the image with "
                "`podman save --format oci-archive -o FILE IMAGE`, or convert it with `skopeo copy "
                f"docker-archive:{path} oci-archive:FILE`")
    return "a tar file, but not an OCI image layout (no oci-layout file at its root)"


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file. A path that cannot be followed (a looping symbolic link, ELOOP) or
    that the filesystem refuses (too long) is none."""
    try:
        return path.is_file()
    except OSError:
        return False


# --- where blobs come from -----------------------------------------------------------------------------------


class _Store(Protocol):
    """The files of a layout (``oci-layout``, ``index.json``, ``blobs/ALG/HEX``), by relative name."""

    label: str

    def size(self, name: str) -> int | None: ...

    def open(self, name: str) -> AbstractContextManager[IO[bytes]]: ...

    def close(self) -> None: ...


class _DirStore:
    def __init__(self, root: Path, label: str | None = None) -> None:
        self.label = label or str(root)
        self.root = root

    def size(self, name: str) -> int | None:
        """The size of the regular file ``name``, ``None`` when there is none; anything else there is refused
        before it is opened (a FIFO would block the read)."""
        path = self.root / name
        if path.is_file():
            return path.stat().st_size
        if path.exists():
            raise BundleInputError(f"{self.label}: {name}: not a regular file")
        return None

    @contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        with (self.root / name).open("rb") as handle:
            yield handle

    def close(self) -> None:
        pass


class _TarStore:
    """A layout tar. A compressed one is decompressed once into a scratch file: reading its blobs in the order the
    layout needs them seeks backwards, and a backward seek in a gzip stream decompresses it again from the start
    (a 322 KB archive took 27 s)."""

    def __init__(self, path: Path, limits: Limits) -> None:
        self.label = str(path)
        self.scratch: IO[bytes] | None = None
        try:
            self.tar, self.scratch = _open_tar(path, limits)
            self.members: dict[str, tarfile.TarInfo] = {}
            for count, member in enumerate(self.tar, 1):
                if count > limits.max_entries:
                    self.close()
                    raise BundleInputError(f"{path}: more than {limits.max_entries} entries in the layout tar")
                if member.isfile() and _LAYOUT_MEMBER.fullmatch(member.name):
                    self.members[member.name.removeprefix("./")] = member
        except _TAR_ERRORS as exc:
            if getattr(self, "tar", None) is not None:
                self.close()
            raise BundleInputError(f"{path}: not a readable tar: {exc}") from None

    def size(self, name: str) -> int | None:
        member = self.members.get(name)
        return None if member is None else member.size

    @contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        handle = self.tar.extractfile(self.members[name])
        if handle is None:  # pragma: no cover - members holds regular files only
            raise BundleInputError(f"{self.label}: {name}: not a regular file")
        with handle:
            yield handle

    def close(self) -> None:
        self.tar.close()
        if self.scratch is not None:
            self.scratch.close()


def _open_tar(path: Path, limits: Limits) -> tuple[tarfile.TarFile, IO[bytes] | None]:
    """The layout tar ``path`` opened for reading, and the scratch file holding it decompressed (``None`` for a
    plain tar), which the caller closes with it."""
    with path.open("rb") as raw:
        head = raw.read(6)
    opener = next((o for magic, o in _DECOMPRESSORS.items() if head.startswith(magic)), None)
    if opener is None:
        return tarfile.open(path, "r:", tarinfo=_BoundedTarInfo), None
    scratch = tempfile.TemporaryFile()  # noqa: SIM115 - returned open; closed with the tar by _TarStore.close
    try:
        written = 0
        with opener(path) as stream:
            while chunk := stream.read(_CHUNK):
                written += len(chunk)
                if written > limits.max_stream_bytes:
                    raise BundleInputError(f"{path}: decompresses to more than {limits.max_stream_bytes} bytes (a "
                                           "decompression bomb?)")
                scratch.write(chunk)
        scratch.seek(0)
        return tarfile.open(fileobj=scratch, mode="r:", tarinfo=_BoundedTarInfo), scratch
    except BaseException:
        scratch.close()
        raise


# --- reading the layout ----------------------------------------------------------------------------------------


@dataclass
class _Budget:
    limits: Limits
    stream: int = 0
    written: int = 0
    entries: int = 0


@dataclass
class _Image:
    """One image manifest found through index.json: its descriptor, manifest and config labels."""

    digest: str
    manifest: dict[str, Any]
    labels: dict[str, Any]
    names: list[str] = field(default_factory=list)


class _Layout:
    def __init__(self, store: _Store, limits: Limits) -> None:
        self.store = store
        self.limits = limits
        self.label = store.label
        self.verified: set[str] = set()
        self.descriptors = 0  # listed by the indexes walked so far (Limits.max_descriptors)
        self.walked: set[str] = set()  # digests of the image indexes and manifests already read

    def fail(self, problem: str) -> BundleInputError:
        return BundleInputError(f"{self.label}: {problem}")

    def blob_name(self, descriptor: Any, what: str) -> str:
        if not isinstance(descriptor, dict) or not isinstance(descriptor.get("digest"), str):
            raise self.fail(f"{what}: a descriptor without a digest")
        parts = digest_parts(descriptor["digest"])
        if parts is None:
            raise self.fail(f"{what}: unsupported or malformed digest {json.dumps(descriptor['digest'])}")
        algorithm, hexdigest = parts
        name = f"blobs/{algorithm}/{hexdigest}"
        size = self.store.size(name)
        if size is None:
            raise self.fail(f"{what}: blob {descriptor['digest']} is missing from the layout")
        declared = descriptor.get("size")
        if not isinstance(declared, int) or isinstance(declared, bool) or declared != size:
            raise self.fail(f"{what}: blob {descriptor['digest']} has {size} bytes, its descriptor says "
                            f"{json.dumps(declared)}")
        if name not in self.verified:
            digest = hashlib.new(algorithm)
            with self.store.open(name) as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
            if digest.hexdigest() != hexdigest:
                raise self.fail(f"{what}: blob {descriptor['digest']} does not match its digest (its content "
                                f"hashes to {algorithm}:{digest.hexdigest()})")
            self.verified.add(name)
        return name

    def _json(self, name: str, what: str) -> Any:
        size = self.store.size(name)
        if size is None:
            raise self.fail(f"no {name}" if name in (OCI_LAYOUT, INDEX) else f"{what}: missing")
        if size > self.limits.max_json_bytes:
            raise self.fail(f"{what}: {size} bytes, more than the limit of {self.limits.max_json_bytes} for a JSON "
                            "document")
        with self.store.open(name) as handle:
            data = handle.read()
        try:
            return json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise self.fail(f"{what}: not valid JSON ({exc})") from None

    def blob_json(self, descriptor: Any, what: str) -> Any:
        return self._json(self.blob_name(descriptor, what), what)

    # -- finding the image --

    def image(self, prefer: str = MEDIATYPE_ANNOTATION, what: str = "bundle") -> _Image:
        """The one image to unpack: of several, those whose config carries the label ``prefer``, when they share
        their layers."""
        layout = self._json(OCI_LAYOUT, OCI_LAYOUT)
        version = layout.get("imageLayoutVersion") if isinstance(layout, dict) else None
        if not isinstance(version, str) or not version.startswith("1."):
            raise self.fail(f"{OCI_LAYOUT}: unsupported imageLayoutVersion {json.dumps(version)}")
        index = self._json(INDEX, INDEX)
        if not isinstance(index, dict) or not isinstance(index.get("manifests"), list):
            raise self.fail(f"{INDEX}: not an image index (no \"manifests\" list)")
        images: list[_Image] = []
        self._collect(index, INDEX, 0, images)
        if not images:
            raise self.fail(f"{INDEX}: lists no image")
        unique: dict[str, _Image] = {}
        for found in images:
            kept = unique.setdefault(found.digest, _Image(found.digest, found.manifest, found.labels))
            kept.names.extend(n for n in found.names if n and n not in kept.names)
        candidates = list(unique.values())
        labelled = [i for i in candidates if prefer in i.labels]
        if labelled:
            candidates = labelled
        if len({_layer_digests(i.manifest) for i in candidates}) == 1:
            return candidates[0]
        names = "; ".join(f"{i.digest}" + (f" ({', '.join(i.names)})" if i.names else "") for i in candidates)
        raise self.fail(f"{INDEX}: lists {len(candidates)} different images and none is the only {what} image: "
                        f"{names}; copy only the one to " + ("render into the layout" if what == "bundle" else
                                                             "read into the layout (skopeo copy without --all)"))

    def _collect(self, index: dict[str, Any], what: str, depth: int, images: list[_Image]) -> None:
        if depth > self.limits.max_index_depth:
            raise self.fail(f"{what}: image indexes nested more than {self.limits.max_index_depth} deep")
        for position, descriptor in enumerate(index["manifests"]):
            where = f"{what} manifests[{position}]"
            self.descriptors += 1
            if self.descriptors > self.limits.max_descriptors:
                raise self.fail(f"{where}: the image indexes list more than {self.limits.max_descriptors} "
                                "manifests")
            if not isinstance(descriptor, dict):
                raise self.fail(f"{where}: not a descriptor")
            annotations = _annotations(descriptor)
            if annotations.get("vnd.docker.reference.type") == "attestation-manifest":
                continue  # BuildKit's provenance: not an image
            name = self.blob_name(descriptor, where)
            if name in self.walked:
                # Listed again (an index may name one manifest under several platforms or references, and
                # indexes may share children): its content was read already, only a reference name may be new.
                # Reading it again would let a small layout of indexes listing one index many times over make
                # the walk grow as width to the power of depth.
                reference = _ref_name(annotations)
                for found in images:
                    if found.digest == descriptor["digest"] and reference and reference not in found.names:
                        found.names.append(reference)
                continue
            self.walked.add(name)
            document = self.blob_json(descriptor, where)
            if not isinstance(document, dict):
                raise self.fail(f"{where}: not a JSON object")
            media_type = descriptor.get("mediaType") or document.get("mediaType")
            if media_type is not None and not isinstance(media_type, str):
                raise self.fail(f"{where}: unsupported manifest media type {json.dumps(media_type)} (expected an "
                                "OCI or Docker v2 image manifest or index)")
            if media_type in INDEX_TYPES or (media_type is None and "manifests" in document):
                if not isinstance(document.get("manifests"), list):
                    raise self.fail(f"{where}: an image index without a \"manifests\" list")
                self._collect(document, where, depth + 1, images)
            elif media_type in MANIFEST_TYPES or (media_type is None and "layers" in document):
                if not isinstance(document.get("layers"), list):
                    raise self.fail(f"{where}: an image manifest without a \"layers\" list")
                images.append(_Image(descriptor["digest"], document, self._labels(document, where),
                                     [_ref_name(annotations)]))
            else:
                raise self.fail(f"{where}: unsupported manifest media type {json.dumps(media_type)} (expected an "
                                "OCI or Docker v2 image manifest or index)")

    def _labels(self, manifest: dict[str, Any], where: str) -> dict[str, Any]:
        config = manifest.get("config")
        if not isinstance(config, dict) or config.get("mediaType") not in (
                "application/vnd.oci.image.config.v1+json", "application/vnd.docker.container.image.v1+json"):
            return {}
        document = self.blob_json(config, f"{where} config")
        if not isinstance(document, dict):
            return {}
        settings = document.get("config")
        if settings is not None and not isinstance(settings, dict):
            raise self.fail(f"{where} config: \"config\" is not a JSON object (got {json.dumps(settings)[:80]})")
        labels = (settings or {}).get("Labels") or {}
        return labels if isinstance(labels, dict) else {}

    # -- layers --

    @contextmanager
    def layer_stream(self, descriptor: dict[str, Any], what: str, budget: _Budget) -> Iterator[IO[bytes]]:
        """The layer's tar stream, decompressed (gzip or zstd recognised by content), counted against the
        stream budget."""
        name = self.blob_name(descriptor, what)
        with self.store.open(name) as raw:
            head = raw.read(4)
            raw.seek(0)
            stream: IO[bytes]
            if head.startswith(_GZIP_MAGIC):
                stream = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
            elif head == _ZSTD_MAGIC:
                stream = self._zstd(raw, descriptor, what)
            else:
                stream = raw
            yield _Counted(stream, budget, self.fail, what)  # type: ignore[misc]

    def _zstd(self, raw: IO[bytes], descriptor: dict[str, Any], what: str) -> IO[bytes]:
        """A zstd stream's content, every frame read (zstd:chunked layers hold many, and skippable ones): the
        standard library's decompressor from Python 3.14, ``zstandard`` before it."""
        try:
            module = importlib.import_module("compression.zstd")
        except ImportError:
            module = None
        if module is not None:
            return _ZstdErrors(module.ZstdFile(raw, mode="rb"), module.ZstdError)  # type: ignore[return-value]
        try:
            import zstandard
        except ImportError:
            raise self.fail(f"{what}: zstd-compressed layer ({descriptor.get('mediaType')}) is not supported: this "
                            "Python has neither compression.zstd (3.14) nor the zstandard package; copy the image "
                            "with gzip layers (skopeo copy --dest-compress-format gzip)") from None
        return _ZstdErrors(_ZstdFrames(raw, zstandard), zstandard.ZstdError)  # type: ignore[return-value]


class _ZstdFrames:
    """Every frame of a zstd stream, decompressed a little input at a time (so one read's output stays bounded
    whatever the ratio), and a stream that ends inside a frame refused as truncated, as Go's decoder refuses it
    (zstandard's stream reader would end quietly there, losing the files after)."""

    FEED: Final = 1024   # compressed bytes per step: at most about 32 MiB out of one step

    def __init__(self, raw: IO[bytes], zstandard: Any) -> None:
        self.raw, self.zstandard = raw, zstandard
        self.frame: Any = None
        self.leftover = b""
        self.pending = b""

    def read(self, size: int) -> bytes:
        while not self.pending:
            chunk = self.leftover or self.raw.read(self.FEED)
            self.leftover = b""
            if not chunk:
                if self.frame is not None:
                    raise self.zstandard.ZstdError("the stream ends inside a frame (truncated)")
                return b""
            if self.frame is None:
                self.frame = self.zstandard.ZstdDecompressor().decompressobj()
            self.pending = self.frame.decompress(chunk)
            if self.frame.eof:
                self.leftover, self.frame = self.frame.unused_data, None
        data, self.pending = self.pending[:size], self.pending[size:]
        return data

    def close(self) -> None:
        pass


class _ZstdErrors(io.RawIOBase):
    """A zstd stream whose decompressor's own errors read as a broken tar's (``tarfile.ReadError``), so a corrupt
    zstd layer is reported as a corrupt gzip one is."""

    def __init__(self, inner: Any, error: type[Exception]) -> None:
        super().__init__()
        self.inner, self.error = inner, error

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self.inner.read(len(buffer))
        except self.error as exc:
            raise tarfile.ReadError(f"zstd: {exc}") from None
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self.inner.close()
        super().close()


class _Counted(io.RawIOBase):
    """A read-only stream that refuses to deliver more than the budget's remaining decompressed bytes."""

    def __init__(self, inner: IO[bytes], budget: _Budget, fail: Any, what: str) -> None:
        super().__init__()
        self.inner, self.budget, self.fail_, self.what = inner, budget, fail, what

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(len(buffer))
        self.budget.stream += len(data)
        if self.budget.stream > self.budget.limits.max_stream_bytes:
            raise self.fail_(f"{self.what}: the layers decompress to more than "
                             f"{self.budget.limits.max_stream_bytes} bytes (a decompression bomb?)")
        buffer[:len(data)] = data
        return len(data)


def _annotations(descriptor: dict[str, Any]) -> dict[str, Any]:
    found = descriptor.get("annotations")
    return found if isinstance(found, dict) else {}


def _ref_name(annotations: dict[str, Any]) -> str:
    return str(annotations.get("org.opencontainers.image.ref.name") or "")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _layer_digests(manifest: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(layer.get("digest")) if isinstance(layer, dict) else "" for layer in manifest["layers"])


# --- applying layers ---------------------------------------------------------------------------------------------


class _Tree:
    """The filesystem being built under ``root``: entry paths are tuples of components below it, and symbolic
    links are kept aside (``links``), never created."""

    def __init__(self, root: Path, layout: _Layout, budget: _Budget, keep: tuple[str, ...] = ()) -> None:
        self.root, self.layout, self.budget = root, layout, budget
        self.keep = keep  # only entries below this directory are written (all of them when empty)
        self.links: dict[tuple[str, ...], str] = {}
        # how many links lie below each directory: removing an entry with none below it touches one key, not every
        # link (a layer of 20,000 links made unpacking quadratic)
        self.below: dict[tuple[str, ...], int] = {}

    def path(self, parts: tuple[str, ...]) -> Path:
        return self.root.joinpath(*parts)

    def add_link(self, parts: tuple[str, ...], target: str) -> None:
        if parts not in self.links:
            for depth in range(1, len(parts)):
                self.below[parts[:depth]] = self.below.get(parts[:depth], 0) + 1
        self.links[parts] = target

    def forget_link(self, parts: tuple[str, ...]) -> None:
        if self.links.pop(parts, None) is None:
            return
        for depth in range(1, len(parts)):
            prefix = parts[:depth]
            left = self.below[prefix] - 1
            if left:
                self.below[prefix] = left
            else:
                del self.below[prefix]

    def forget_links_below(self, parts: tuple[str, ...]) -> None:
        if self.below.get(parts):
            for link in [k for k in self.links if len(k) > len(parts) and k[:len(parts)] == parts]:
                self.forget_link(link)

    def remove(self, parts: tuple[str, ...]) -> None:
        path = self.path(parts)
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        self.forget_link(parts)
        self.forget_links_below(parts)

    def clear(self, parts: tuple[str, ...]) -> None:
        """Empty the directory ``parts`` (an opaque whiteout)."""
        path = self.path(parts)
        if path.is_dir():
            for child in path.iterdir():
                self.remove((*parts, child.name))
        self.forget_links_below(parts)

    def directory(self, parts: tuple[str, ...]) -> None:
        for depth in range(1, len(parts) + 1):
            prefix = parts[:depth]
            path = self.path(prefix)
            self.forget_link(prefix)
            if path.exists() and not path.is_dir():
                path.unlink()
            if not path.exists():
                path.mkdir(mode=0o755)

    def write(self, parts: tuple[str, ...], source: IO[bytes], size: int, what: str) -> None:
        limits = self.budget.limits
        if size > limits.max_file_bytes:
            raise self.layout.fail(f"{what}: {'/'.join(parts)} has {size} bytes, more than the limit of "
                                   f"{limits.max_file_bytes} for one file")
        if self.budget.written + size > limits.max_extracted_bytes:
            raise self.layout.fail(f"{what}: the image unpacks to more than {limits.max_extracted_bytes} bytes")
        self.directory(parts[:-1])
        self.remove(parts)
        with self.path(parts).open("wb") as out:
            copied = 0
            while chunk := source.read(min(_CHUNK, size - copied + 1)):
                copied += len(chunk)
                if copied > size:
                    raise self.layout.fail(f"{what}: {'/'.join(parts)} is longer than its header says")
                out.write(chunk)
        os.chmod(self.path(parts), 0o644)
        self.budget.written += size

    def kept(self, parts: tuple[str, ...]) -> bool:
        return parts[:len(self.keep)] == self.keep

    def count(self, what: str) -> None:
        self.budget.entries += 1
        if self.budget.entries > self.budget.limits.max_entries:
            raise self.layout.fail(f"{what}: more than {self.budget.limits.max_entries} entries in the layers")


def _shown(name: str) -> str:
    """``name`` as a message shows it: whole, or its first :data:`_SHOWN_NAME_CHARS` characters and ``...``."""
    return name if len(name) <= _SHOWN_NAME_CHARS else name[:_SHOWN_NAME_CHARS] + "..."


@contextmanager
def _unpacking(layout: _Layout, where: str) -> Iterator[None]:
    """What the filesystem refuses while one entry is unpacked (a name component over 255 bytes, a path over
    4 KiB) is refused naming the layer and the entry (``where``): naming the layout alone left the reader to
    search every entry of every layer for the one name it could not take."""
    try:
        yield
    except OSError as exc:
        raise layout.fail(f"{where}: cannot unpack: {exc.strerror or exc}") from None


def _parts(name: str, layout: _Layout, what: str) -> tuple[str, ...]:
    """The components of an entry name, refusing any that would leave the target."""
    if "\x00" in name:
        raise layout.fail(f"{what}: entry {json.dumps(name)} has an invalid name (a NUL character)")
    if name.startswith("/"):
        raise layout.fail(f"{what}: entry {json.dumps(name)} has an absolute path")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise layout.fail(f"{what}: entry {json.dumps(name)} leads outside the image (\"..\")")
    if len(parts) > layout.limits.max_path_depth:
        raise layout.fail(f"{what}: entry {json.dumps('/'.join(parts[:3]) + '/...')} is nested {len(parts)} levels "
                          f"deep, more than the limit of {layout.limits.max_path_depth}")
    return parts


def _members(layout: _Layout, descriptor: dict[str, Any], what: str, budget: _Budget) -> Iterator[
        tuple[tarfile.TarFile, tarfile.TarInfo]]:
    with layout.layer_stream(descriptor, what, budget) as stream:
        try:
            with tarfile.open(fileobj=stream, mode="r|", tarinfo=_BoundedTarInfo) as tar:
                for member in tar:
                    yield tar, member
        except BundleInputError:
            raise
        except _TAR_ERRORS as exc:
            raise layout.fail(f"{what}: not a readable tar layer ({exc})") from None


def _apply_layer(tree: _Tree, descriptor: dict[str, Any], what: str) -> None:
    layout, budget = tree.layout, tree.budget
    start = budget.stream
    # Pass 1: whiteouts, which hide what the lower layers hold (never what this layer adds).
    for _, member in _members(layout, descriptor, what, budget):
        tree.count(what)
        parts = _parts(member.name, layout, what)
        if parts and parts[-1] == _OPAQUE:
            with _unpacking(layout, f"{what}: entry {json.dumps(_shown(member.name))}"):
                tree.clear(parts[:-1])
        elif parts and parts[-1].startswith(_WHITEOUT):
            hidden = parts[-1][len(_WHITEOUT):]
            if hidden in ("", ".", ".."):   # would hide its own directory or the one above: never a file name
                raise layout.fail(f"{what}: whiteout {json.dumps(member.name)} names no file")
            with _unpacking(layout, f"{what}: entry {json.dumps(_shown(member.name))}"):
                tree.remove((*parts[:-1], hidden))
    budget.stream = start  # the second pass reads the same bytes again: count them once
    # Pass 2: the layer's own entries.
    for tar, member in _members(layout, descriptor, what, budget):
        parts = _parts(member.name, layout, what)
        if not parts or parts[-1].startswith(_WHITEOUT) or not tree.kept(parts):
            continue
        with _unpacking(layout, f"{what}: entry {json.dumps(_shown(member.name))}"):
            _apply_member(tree, tar, member, parts, what)


def _apply_member(tree: _Tree, tar: tarfile.TarFile, member: tarfile.TarInfo, parts: tuple[str, ...],
                  what: str) -> None:
    """One entry of a layer (not a whiteout), at ``parts``."""
    layout = tree.layout
    if member.isdir():
        tree.directory(parts)
    elif member.isreg():
        source = tar.extractfile(member)
        if source is None:  # pragma: no cover - a regular member always has a file object
            return
        tree.write(parts, source, member.size, what)
        tree.forget_link(parts)
    elif member.islnk():
        target = _parts(member.linkname, layout, what)
        path = tree.path(target)
        if not target or not is_regular(path) or target in tree.links:
            raise layout.fail(f"{what}: hard link {json.dumps(_shown(member.name))} to "
                              f"{json.dumps(_shown(member.linkname))}, which is not a regular file of the image")
        with path.open("rb") as source_file:
            tree.write(parts, source_file, path.stat().st_size, what)
    elif member.issym():
        tree.remove(parts)
        tree.add_link(parts, member.linkname)
    # devices and FIFOs: not materialised


def _apply_file(tree: _Tree, descriptor: dict[str, Any], title: str, what: str) -> None:
    """An ``oras push`` file layer: the blob is the file named by its title."""
    layout = tree.layout
    parts = _parts(title, layout, what)
    if not parts:
        raise layout.fail(f"{what}: file layer with an empty title")
    if not tree.kept(parts):
        return
    name = layout.blob_name(descriptor, what)
    with layout.store.open(name) as source, _unpacking(layout, f"{what}: entry {json.dumps(_shown(title))}"):
        tree.write(parts, source, int(descriptor["size"]), what)


def _resolve(tree: _Tree, link: tuple[str, ...], followed: list[int] | None = None) -> tuple[str, ...] | None:
    """Where the symbolic link ``link`` leads, resolved inside the image (``/`` and ``..`` stop at its root).

    Like Linux, at most 40 more links are followed in all for one lookup (``followed`` counts them across the
    recursion): bounding only the depth let links whose targets name other links twice make the work grow
    exponentially."""
    followed = followed if followed is not None else [0]
    followed[0] += 1
    if followed[0] > 41:
        return None
    target = tree.links[link]
    stack: list[str] = [] if target.startswith("/") else list(link[:-1])
    for component in target.split("/"):
        if component in ("", "."):
            continue
        if component == "..":
            if stack:
                stack.pop()
            continue
        stack.append(component)
        if tuple(stack) in tree.links:
            resolved = _resolve(tree, tuple(stack), followed)
            if resolved is None:
                return None
            stack = list(resolved)
    return tuple(stack)


def _materialise_links(tree: _Tree, roots: tuple[tuple[str, ...], ...] = (("metadata",), ("manifests",))) -> None:
    """Symbolic links below ``roots`` (a bundle's ``metadata/`` and ``manifests/``, a catalog's configs directory)
    become copies of the files they lead to."""
    for link in sorted(tree.links):
        root = next((r for r in roots if link[:len(r)] == r), None)
        if root is None:
            continue
        name = _shown("/".join(link))
        if len(link) == len(root):
            whose = "a bundle's" if root in (("metadata",), ("manifests",)) else "the catalog's"
            raise tree.layout.fail(f"{name} is a symbolic link in the image; {whose} {name}/ must be a directory")
        target = _resolve(tree, link)
        path = tree.path(target) if target else None
        if path is None or not is_regular(path):
            raise tree.layout.fail(f"symbolic link {name} -> {_shown(tree.links[link])} does not lead to a file of "
                                   "the image")
        with path.open("rb") as source, _unpacking(tree.layout, f"symbolic link {name}"):
            tree.write(link, source, path.stat().st_size, "symbolic link")


def unpack(path: str | Path, target: str | Path, limits: Limits = DEFAULT_LIMITS, *, label: str | None = None) -> Path:
    """Unpack the bundle image of the OCI layout ``path`` (a directory or a tar of one) into the new directory
    ``target``; return ``target``. Raises :class:`BundleInputError` naming the layout (or ``label``, for a
    layout directory that stands for something else: an image pulled) and the problem (and then leaves no
    ``target`` behind)."""
    _unpack(path, target, limits, catalog=False, label=label)
    return Path(target)


def unpack_catalog(path: str | Path, target: str | Path, limits: Limits = CATALOG_LIMITS, *,
                   label: str | None = None) -> Path:
    """Unpack the File-Based Catalog of the operator index image in the OCI layout ``path``: only its configs
    directory (the image's ``operators.operatorframework.io.index.configs.v1`` label, ``/configs`` without one) is
    written, below the new directory ``target``; return that configs directory."""
    keep = _unpack(path, target, limits, catalog=True, label=label)
    configs = Path(target).joinpath(*keep)
    if not configs.is_dir():
        shutil.rmtree(target, ignore_errors=True)
        raise BundleInputError(f"{label or path}: the image has no {'/' + '/'.join(keep)} directory (its File-Based "
                               f"Catalog, named by the {CATALOG_CONFIGS_LABEL} label)")
    return configs


def _unpack(path: str | Path, target: str | Path, limits: Limits, *, catalog: bool,
            label: str | None = None) -> tuple[str, ...]:
    """:func:`unpack`, or with ``catalog`` only the configs directory of an index image; returns the directory
    written (its parts below ``target``; empty: all of the image)."""
    source, root = Path(path), Path(target)
    store: _Store = _DirStore(source, label) if source.is_dir() else _TarStore(source, limits)
    created = False
    try:
        layout = _Layout(store, limits)
        image = layout.image(CATALOG_CONFIGS_LABEL, "catalog") if catalog else layout.image()
        keep: tuple[str, ...] = ()
        if catalog:
            configs = image.labels.get(CATALOG_CONFIGS_LABEL) or DEFAULT_CATALOG_CONFIGS
            # the label is a path in the image (absolute); ".." in it is refused as in an entry name
            keep = _parts(configs.lstrip("/"), layout, f"label {CATALOG_CONFIGS_LABEL}") \
                if isinstance(configs, str) else ()
            if not keep:
                raise layout.fail(f"label {CATALOG_CONFIGS_LABEL}: {json.dumps(configs)} names no directory")
        layers = image.manifest["layers"]
        if len(layers) > limits.max_layers:
            raise layout.fail(f"the image has {len(layers)} layers, more than the limit of {limits.max_layers}")
        root.mkdir(parents=True)
        created = True
        tree = _Tree(root, layout, _Budget(limits), keep)
        for position, descriptor in enumerate(layers):
            what = f"layer {position}"
            if not isinstance(descriptor, dict):
                raise layout.fail(f"{what}: not a descriptor")
            media_type = descriptor.get("mediaType")
            annotations = _annotations(descriptor)
            title = annotations.get(ORAS_TITLE)
            if isinstance(title, str) and annotations.get(ORAS_UNPACK) != "true":
                _apply_file(tree, descriptor, title, what)
            elif (isinstance(media_type, str) and media_type in LAYER_TYPES) or isinstance(title, str):
                _apply_layer(tree, descriptor, what)
            else:
                raise layout.fail(f"{what}: unsupported layer media type {json.dumps(media_type)} (expected a "
                                  "tar, tar+gzip or tar+zstd image layer)")
        _materialise_links(tree, (keep,) if keep else (("metadata",), ("manifests",)))
    except BaseException as exc:
        if created:
            shutil.rmtree(root, ignore_errors=True)
        if isinstance(exc, (tarfile.TarError, EOFError, zlib.error)):  # a layer's data read while writing a file
            raise BundleInputError(f"{label or path}: a layer is not a readable tar ({exc})") from None
        if isinstance(exc, OSError):
            raise BundleInputError(f"{label or path}: cannot unpack: {exc.strerror or exc}") from None
        raise
    finally:
        store.close()
    return keep
