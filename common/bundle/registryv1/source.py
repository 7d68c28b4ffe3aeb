"""Reading a registry+v1 bundle: a directory (``metadata/``, ``manifests/``) or an OCI image layout of one.

What OLM v1's ``source.FromFS`` reads, with its rules: ``metadata/annotations.yaml`` names the package,
``manifests/`` holds files only (a subdirectory is refused with OLM's message), every file there is read as
YAML or JSON documents whatever its name, the ``ClusterServiceVersion`` goes apart, ``CustomResourceDefinition``
objects go to ``crds`` and everything else to ``others``, and ``metadata/properties.yaml`` is folded into the
CSV's ``olm.properties`` annotation as Go's ``json.Marshal`` writes it (compact, ``<``, ``>`` and ``&``
escaped, the CSV's own properties first).

Stricter than OLM in two places, where OLM goes on with a bundle it cannot mean: the mediatype annotation must
say ``registry+v1`` (OLM does not look at it), and there must be exactly one CSV (OLM keeps the last of
several). An empty package name is not refused here: OLM's renderer refuses it (``package name is empty``), and
so does ours. A document must be what OLM's reader requires: a mapping with a ``kind`` whose ``metadata``
decodes into Kubernetes' ``ObjectMeta`` (an annotation ``0777``, a number, is refused with Go's words); an
object without ``apiVersion`` passes through, as in OLM. Every problem raises :class:`BundleInputError`
(exit 2).

Files are read with :mod:`common.bundle.k8syaml`, so YAML means what it means to kubectl and problems carry
``file:index``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.bundle.k8syaml import RoundedUint64
from common.bundle.registryv1 import oci, pull
from common.bundle.registryv1.documents import read_documents
from common.bundle.registryv1.gotext import GoRawNumber, go_compact_json, go_float32_g, go_fold, go_marshal_json
from common.bundle.registryv1.gounmarshal import object_meta_problem
from common.bundle.registryv1.imageref import is_image_reference
from common.bundle.registryv1.model import (
    ANNOTATIONS_FILE,
    MEDIATYPE_ANNOTATION,
    PACKAGE_ANNOTATION,
    REGISTRY_V1,
    BundleInputError,
    RegistryV1,
)
from common.contract.objects import Obj

PROPERTIES_FILE = "metadata/properties.yaml"
MANIFESTS_DIR = "manifests"
PROPERTIES_ANNOTATION = "olm.properties"
READER = "OLM v1"   # who reads a bundle's files so (named where cosctl says what a reader drops or refuses)


def is_bundle(path: str | Path) -> bool:
    """Whether ``path`` is a bundle: a directory with ``metadata/annotations.yaml``, or an OCI image layout
    (a directory with ``oci-layout`` and ``index.json``, or a tar of one), or an image to pull (``docker://REF``;
    nothing is pulled to answer)."""
    if isinstance(path, str) and is_image_reference(path):
        return True
    p = Path(path)
    if p.is_dir():
        return (p / ANNOTATIONS_FILE).is_file() or oci.is_layout_dir(p)
    return p.is_file() and oci.is_layout_tar(p)


def enclosing_bundle(path: str | Path) -> str | None:
    """The bundle whose ``manifests/`` directory ``path`` is, spelled for a message to the one who gave ``path``
    (relative as they wrote it, or the real place when ``path`` is a symbolic link); ``None`` otherwise."""
    p = Path(path)
    if not p.is_dir():
        return None
    real = p.resolve()
    if real.name != MANIFESTS_DIR or not is_bundle(real.parent):
        return None
    return str(real.parent) if p.is_symlink() else os.path.normpath(os.path.join(str(path), ".."))


def load_bundle(path: str | Path, report: pull.Report | None = None) -> RegistryV1:
    """The bundle at ``path`` (a bundle directory or an OCI image layout of a bundle image), or the bundle image
    ``docker://REF`` pulled from its registry (``report`` hears about a long download and the digest pulled).

    Raises :class:`BundleInputError` naming the file (or image) and the problem when ``path`` is not a usable
    registry+v1 bundle.
    """
    if isinstance(path, str) and is_image_reference(path):
        return _load_image(path, report)
    p = Path(path)
    if not p.exists():
        raise BundleInputError(f"{path}: no such file or directory")
    if (p.is_dir() and oci.is_layout_dir(p) and not (p / ANNOTATIONS_FILE).exists()) or (
            p.is_file() and oci.is_layout_tar(p)):
        with tempfile.TemporaryDirectory(prefix="cosctl-bundle-") as scratch:
            root = oci.unpack(p, Path(scratch) / "rootfs")
            bundle = _load_dir(root, label=f"{path} (image)")
        bundle.source = str(path)
        return bundle
    if p.is_file() and (problem := oci.tar_refusal(p)) is not None:
        raise BundleInputError(f"{path}: {problem}")
    if not p.is_dir():
        raise BundleInputError(f"{path}: not a bundle (a bundle is a directory with {ANNOTATIONS_FILE}, "
                               "or an OCI image layout of a bundle image)")
    if not (p / ANNOTATIONS_FILE).exists() and (outer := enclosing_bundle(p)) is not None:
        raise BundleInputError(f"{path}: the {MANIFESTS_DIR}/ directory of the registry+v1 bundle {outer}: give the "
                               "bundle directory itself")
    return _load_dir(p, label=str(path))


def _load_image(text: str, report: pull.Report | None) -> RegistryV1:
    """The bundle image ``text`` (``docker://REF``), pulled and unpacked as a layout on disk is."""
    with pull.pulled(text, oci.DEFAULT_LIMITS, report) as image, \
            tempfile.TemporaryDirectory(prefix="cosctl-bundle-") as scratch:
        label = f"docker://{image.reference}"
        root = oci.unpack(image.layout, Path(scratch) / "rootfs", label=label)
        bundle = _load_dir(root, label=f"{label} (image)")
    if report is not None:
        report(f"pulled {label}" + pull.described(image))
    bundle.source = text
    bundle.image = str(image.canonical)
    return bundle


def _load_dir(root: Path, *, label: str) -> RegistryV1:
    """The bundle in directory ``root``; ``label`` is how messages name the bundle (files are named
    ``label/relative/path``)."""
    annotations = _annotations(root, label)
    package = annotations.get(PACKAGE_ANNOTATION, "")
    mediatype = annotations.get(MEDIATYPE_ANNOTATION)
    where = f"{label}/{ANNOTATIONS_FILE}"
    if mediatype is None:
        raise BundleInputError(f"{where}: no {MEDIATYPE_ANNOTATION} annotation (a registry+v1 bundle has "
                               f"{MEDIATYPE_ANNOTATION}: {REGISTRY_V1})")
    if mediatype != REGISTRY_V1:
        raise BundleInputError(f"{where}: unsupported bundle mediatype {json.dumps(mediatype)} (only {REGISTRY_V1} "
                               "bundles can be rendered)")

    files = list(_manifest_files(root, label))
    names = {str(f): f"{label}/{MANIFESTS_DIR}/{f.name}" for f in files}
    loaded = _objects(files, names)
    csvs = [o for o in loaded if o.obj.get("kind") == "ClusterServiceVersion"]
    if not csvs:
        raise BundleInputError(f"{label}: no ClusterServiceVersion found in \"{MANIFESTS_DIR}\"")
    if len(csvs) > 1:
        found = ", ".join(o.where for o in csvs)
        raise BundleInputError(f"{label}/{MANIFESTS_DIR}: a bundle has exactly one ClusterServiceVersion, found "
                               f"{len(csvs)}: {found}")
    csv = csvs[0].obj
    crds = [o.obj for o in loaded if o.obj.get("kind") == "CustomResourceDefinition"]
    others = [o.obj for o in loaded if o.obj.get("kind") not in ("ClusterServiceVersion", "CustomResourceDefinition")]
    _fold_properties(csv, root, label, csvs[0].where)
    return RegistryV1(package_name=package, csv=csv, crds=crds, others=others,
                      annotations=annotations, source=label, dependencies=_dependencies(root))


METADATA_DIR = "metadata"


def _dependencies(root: Path) -> list[Any]:
    """The ``dependencies`` list (``[{type, value}]``) of the bundle's dependencies file, for the warnings about what
    it depends on: as opm's ``addMetadata`` finds it, the first file of ``metadata/`` by name whose first document
    holds a non-empty ``dependencies`` list (usually ``dependencies.yaml``; some bundles keep it in
    ``properties.yaml``). OLM v1 does not read it (opm turns it into ``olm.*.required`` catalog properties), so a
    file that cannot be read or has another shape is no refusal: it gives nothing."""
    directory = root / METADATA_DIR
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        if not path.is_file():
            continue
        problems: list[str] = []
        documents = read_documents(path, f"{METADATA_DIR}/{path.name}", problems, max_bytes=1 << 20)
        first = documents[0][1] if documents and not problems else None
        entries = first.get("dependencies") if isinstance(first, dict) else None
        if isinstance(entries, list) and entries:
            return list(entries)
    return []


@dataclass(frozen=True, slots=True)
class _Object:
    obj: Obj
    where: str  # file:index, and items[i] in a List


def _objects(files: list[Path], names: dict[str, str]) -> list[_Object]:
    """Every object of the manifest files, as OLM's reader (cli-runtime's local builder, ``Unstructured()`` and
    ``Flatten()``) takes them: what it requires of a document is required here too, no more (OLM passes an object
    without ``apiVersion`` or name through, and so does this; the same object twice as well). Every problem of
    every file is reported at once."""
    problems: list[str] = []
    objects = []
    for path in files:
        name = names[str(path)]
        for index, document in read_documents(path, name, problems, reader=READER):
            where = f"{name}:{index}"
            if not isinstance(document, dict):
                problems.append(f"{where}: not a mapping (a manifest must be an object)")
            elif problem := _type_problem(document, version_required=False) or object_meta_problem(document):
                problems.append(f"{where}: {problem}")
            elif "items" not in document:
                objects.append(_Object(document, where))
            else:
                found, refused = _list_items(document, where)
                objects += found
                problems += refused
    if problems:
        raise BundleInputError("\n".join(problems))
    return objects


def _go_string(value: Any) -> str:
    """What unstructured's accessors read from a field: its text when it is a string, else nothing."""
    return value if isinstance(value, str) else ""


def _type_problem(obj: Obj, *, version_required: bool) -> str | None:
    """What keeps the API machinery from reading an object's kind (a string ``kind``, an ``apiVersion`` that parses
    as a group/version); a List's item needs a version too (cli-runtime's object typer)."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        return "missing kind" if kind in (None, "") else "kind must be a string"
    api_version = _go_string(obj.get("apiVersion"))
    if api_version.count("/") > 1:
        return f"apiVersion {json.dumps(api_version)} is not a group/version (OLM reads no kind from it)"
    if version_required and api_version.rpartition("/")[2] == "":
        return "missing apiVersion (an item of a List needs one)"
    return None


def _list_items(document: Obj, where: str) -> tuple[list[_Object], list[str]]:
    """A document with ``items`` is a list to the API machinery, whatever its kind: its items (null, one
    without kind and apiVersion takes the list's kind less "List" and its apiVersion), each needing a kind and
    a version; an item that is itself a list (an ``items`` list) is refused, as OLM's flattening refuses it."""
    items = document["items"]
    if items is not None and not isinstance(items, list):
        return [], [f"{where}: items must be a list"]
    item_kind = _go_string(document.get("kind")).removesuffix("List")
    list_version = _go_string(document.get("apiVersion"))
    found, problems = [], []
    for i, entry in enumerate(items or []):
        at = f"{where} items[{i}]"
        if entry is not None and not isinstance(entry, dict):
            problems.append(f"{at}: not a mapping (a manifest must be an object)")
            continue
        item: Obj = entry or {}
        if not _go_string(item.get("kind")) and not _go_string(item.get("apiVersion")):
            item = {**item, "kind": item_kind, "apiVersion": list_version}
        if isinstance(item.get("items"), list):
            problems.append(f"{at}: a list inside a list (OLM does not read it)")
        elif problem := _type_problem(item, version_required=True):
            problems.append(f"{at}: {problem}")
        else:
            found.append(_Object(item, at))
    return found, problems


def _read_first(path: Path, name: str) -> Any:
    """The first document of the YAML file ``path`` (``None`` when empty), as OLM reads ``metadata/``'s files with
    sigs.k8s.io/yaml's ``Unmarshal``: YAML as Kubernetes reads it, and nothing after the first document (go-yaml
    stops there, a broken second document included)."""
    problems: list[str] = []
    found = read_documents(path, name, problems, unmarshal=True, reader=READER)
    if problems:
        raise BundleInputError("\n".join(problems))
    return found[0][1] if found else None


# the fields of operator-registry's Annotations struct, which OLM decodes metadata/annotations.yaml into
_ANNOTATIONS_FIELDS = (PACKAGE_ANNOTATION, "operators.operatorframework.io.bundle.channels.v1",
                       "operators.operatorframework.io.bundle.channel.default.v1")


def _annotations(root: Path, label: str) -> dict[str, str]:
    """The ``annotations`` of ``metadata/annotations.yaml``, as strings (a number or boolean is written as Go's
    YAML reader writes it into OLM's string fields: ``123``, ``true``), read as OLM decodes the file into its
    ``AnnotationsFile`` struct: ``annotations`` and the fields of OLM's ``Annotations`` (the package, channels and
    default channel) matched ignoring case, a key given in several cases decoded in Go's order (the last wins), a
    null leaving a field as it was. The mediatype, which OLM v1 does not read, is looked up in what that gives."""
    path = root / ANNOTATIONS_FILE
    name = f"{label}/{ANNOTATIONS_FILE}"
    if not path.is_file():
        raise BundleInputError(f"{label}: not a registry+v1 bundle: no {ANNOTATIONS_FILE}")
    document = _read_first(path, name)
    if document is not None and not isinstance(document, dict):
        raise BundleInputError(f"{name}: expected a mapping with an \"annotations\" mapping")
    maps = [value for value in _go_field_values(document or {}, "annotations") if value is not None]
    if not all(isinstance(value, dict) for value in maps):
        raise BundleInputError(f"{name}: expected a mapping with an \"annotations\" mapping")
    merged = {key: value for raw in maps for key, value in sorted(raw.items())}
    annotations = {k: text for k, v in merged.items() if (text := _scalar_text(v)) is not None}
    for field_name in _ANNOTATIONS_FIELDS:
        texts = []
        for value in (v for raw in maps for v in _go_field_values(raw, field_name) if v is not None):
            text = _scalar_text(value)
            if text is None:
                raise BundleInputError(f"{name}: {field_name} must be a string")
            texts.append(text)
        if texts:
            annotations[field_name] = texts[-1]
    return annotations


def _scalar_text(value: Any) -> str | None:
    """A YAML scalar as sigs.k8s.io/yaml converts it for a Go string field (``None`` for null or a collection):
    numbers in Go's ``%g`` with float32 precision, as its converter writes them."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, RoundedUint64):
        return str(value.exact)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float32_g(value)
    return None


def _raw_numbers(value: Any) -> Any:
    """``value`` with integers above int64 as the exact text YAML gave: OLM decodes a property's ``value`` into a
    ``json.RawMessage``, which keeps sigs.k8s.io/yaml's digits (no float64 on the way)."""
    if isinstance(value, RoundedUint64):
        return GoRawNumber(value.exact)
    if isinstance(value, list):
        return [_raw_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _raw_numbers(v) for k, v in value.items()}
    return value


def _manifest_files(root: Path, label: str) -> Iterator[Path]:
    """The files of ``manifests/`` in name order (OLM reads every file, whatever its name)."""
    directory = root / MANIFESTS_DIR
    if not directory.is_dir():
        raise BundleInputError(f"{label}: not a registry+v1 bundle: no {MANIFESTS_DIR}/ directory")
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise BundleInputError(f"{label}/{MANIFESTS_DIR}: cannot read: {exc.strerror or exc}") from None
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            raise BundleInputError(
                f"{label}: subdirectories are not allowed within the \"{MANIFESTS_DIR}\" directory of the bundle "
                f"image filesystem: found \"{MANIFESTS_DIR}/{entry.name}\"")
        if not oci.is_regular(Path(entry.path)):  # a symbolic link that loops (ELOOP) is none either
            raise BundleInputError(f"{label}/{MANIFESTS_DIR}/{entry.name}: not a regular file")
        yield Path(entry.path)


# --- metadata/properties.yaml into olm.properties ---------------------------------------------------------------


def _fold_properties(csv: Obj, root: Path, label: str, csv_name: str) -> None:
    """OLM's ``copyMetadataPropertiesToCSV``: a non-empty ``metadata/properties.yaml`` appends its properties
    to those of the CSV's ``olm.properties`` annotation and rewrites the annotation as Go marshals the list."""
    path = root / PROPERTIES_FILE
    name = f"{label}/{PROPERTIES_FILE}"
    meta = csv.get("metadata") if isinstance(csv.get("metadata"), dict) else None
    csv_annotations = (meta or {}).get("annotations")
    existing = csv_annotations.get(PROPERTIES_ANNOTATION) if isinstance(csv_annotations, dict) else None
    properties: list[str] = []
    if existing is not None:
        properties = _csv_properties(existing, csv_name)
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return
    except OSError as exc:
        raise BundleInputError(f"{name}: cannot read: {exc.strerror or exc}") from None
    properties += _file_properties(_read_first(path, name), name)
    text = "[" + ",".join(properties) + "]" if properties else "null"
    if meta is None:
        meta = csv["metadata"] = {}
    if not isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {}
    meta["annotations"][PROPERTIES_ANNOTATION] = text


def _property(type_: Any, raw_value: str, where: str) -> str:
    if not isinstance(type_, str):
        raise BundleInputError(f"{where}: a property's \"type\" must be a string")
    return '{"type":' + go_marshal_json(type_) + ',"value":' + raw_value + "}"


def _file_properties(document: Any, name: str) -> list[str]:
    """The properties of ``metadata/properties.yaml`` (``{properties: [{type, value}]}``), each as Go writes
    it; keys match case-insensitively and the last of equal keys wins, as in Go's decoder."""
    if document is None:
        return []
    if not isinstance(document, dict):
        raise BundleInputError(f"{name}: expected a mapping with a \"properties\" list")
    items = _go_field(document, "properties", null_kept=True)
    if items is None:
        return []
    if not isinstance(items, list):
        raise BundleInputError(f"{name}: \"properties\" must be a list")
    out = []
    for index, item in enumerate(items):
        where = f"{name}: properties[{index}]"
        if item is None:
            out.append('{"type":"","value":null}')
            continue
        if not isinstance(item, dict):
            raise BundleInputError(f"{where}: a property must be a mapping with \"type\" and \"value\"")
        value = _go_field(item, "value", null_kept=True)
        type_ = _go_field(item, "type", null_kept=False)
        if type_ is not None and not isinstance(type_, (dict, list)):
            type_ = _scalar_text(type_)
        out.append(_property(type_ if type_ is not None else "", go_marshal_json(_raw_numbers(value)), where))
    return out


def _go_field_values(obj: dict[str, Any], name: str) -> list[Any]:
    """Every value Go's decoder applies to the field ``name``, in its order: the keys equal to it ignoring case
    (Go's folding), sorted (the order Go's YAML-to-JSON conversion writes them)."""
    folded = go_fold(name)
    return [obj[key] for key in sorted(obj) if key == name or go_fold(key) == folded]


def _go_field(obj: dict[str, Any], name: str, *, null_kept: bool) -> Any:
    """The value Go's decoder leaves in the field ``name``: the last of :func:`_go_field_values`; a ``null``
    replaces a list or raw value (``null_kept``) but leaves a string as it was."""
    value = None
    for applied in _go_field_values(obj, name):
        if applied is not None or null_kept:
            value = applied
    return value


def _csv_properties(text: Any, csv_name: str) -> list[str]:
    """The CSV's own ``olm.properties`` (a JSON list of ``{type, value}``), each as Go re-marshals it: the
    value's text compacted, not re-encoded."""
    where = f"{csv_name}: metadata.annotations['{PROPERTIES_ANNOTATION}']"
    if not isinstance(text, str):
        raise BundleInputError(f"{where}: must be a string")
    try:
        json.loads(text, parse_constant=_refuse_constant)
        parsed = _RawJSON(text).value()
    except (ValueError, RecursionError) as exc:
        raise BundleInputError(f"{where}: not valid JSON: {exc}") from None
    if parsed is None:
        return []
    if not isinstance(parsed, list):
        raise BundleInputError(f"{where}: expected a JSON list of properties")
    out = []
    for index, item in enumerate(parsed):
        if item is None:
            out.append('{"type":"","value":null}')
            continue
        if not isinstance(item, dict):
            raise BundleInputError(f"{where}: item {index}: a property must be an object with \"type\" and \"value\"")
        type_ = None
        raw = "null"
        for key in sorted(item, key=lambda k: item[k][0]):  # document order: the last matching key wins
            span = item[key][1]
            if go_fold(key) == "TYPE":
                if (decoded := json.loads(span)) is not None:  # Go leaves a string as it was on null
                    type_ = decoded
            elif go_fold(key) == "VALUE":
                raw = go_compact_json(span)
        out.append(_property(type_ if type_ is not None else "", raw, f"{where}: item {index}"))
    return out


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _RawJSON:
    """A JSON text's top-level list, with each object's members as ``key -> (position, raw text)``: Go keeps a
    ``json.RawMessage`` value's own text, which ``json.loads`` would not give back."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def _space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\n\r":
            self.pos += 1

    def _skip(self) -> int:
        """Skip one value; return where it started."""
        self._space()
        start = self.pos
        decoder = json.JSONDecoder()
        _, self.pos = decoder.raw_decode(self.text, self.pos)
        return start

    def value(self) -> Any:
        """The top-level value: ``None`` for ``null``, a list of items for a list (an item is ``None``, a dict of
        members, or another JSON value)."""
        self._space()
        if self.text.startswith("[", self.pos):
            self.pos += 1
            items: list[Any] = []
            self._space()
            if self.text.startswith("]", self.pos):
                return items
            while True:
                self._space()
                if self.text.startswith("{", self.pos):
                    items.append(self._members())
                else:
                    start = self._skip()
                    items.append(json.loads(self.text[start:self.pos]))
                self._space()
                if self.text.startswith("]", self.pos):
                    return items
                self.pos += 1  # the comma
        start = self._skip()
        return json.loads(self.text[start:self.pos])

    def _members(self) -> dict[str, tuple[int, str]]:
        self.pos += 1
        members: dict[str, tuple[int, str]] = {}
        self._space()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return members
        while True:
            start = self._skip()
            key = json.loads(self.text[start:self.pos])
            self._space()
            self.pos += 1  # the colon
            start = self._skip()
            members.pop(key, None)
            members[key] = (start, self.text[start:self.pos])
            self._space()
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return members
            self.pos += 1  # the comma
