"""File-Based Catalogs (FBC) as OLM v1 reads them: what a catalog says about one package.

Why: OLM v1 installs and upgrades a registry+v1 bundle only as its catalog allows. The catalog's channels say
which bundle may follow which (``replaces``, ``skips``, ``skipRange``), and its deprecations say what to warn
about. A catalog is the directory an operator index image serves (``/configs``), or a directory ``opm render``
wrote: files of JSON or YAML objects, each with a ``schema`` (``olm.package``, ``olm.channel``, ``olm.bundle``,
``olm.deprecations``; other schemas are ignored).

Read as operator-controller reads it (operator-registry's ``declcfg.WalkMetasFS`` and operator-controller's
catalog cache): every file below the directory in path order, except files an ``.indexignore`` names
(gitignore patterns, relative to the directory holding it, the last matching pattern of all of them deciding,
as joelanford/ignore over go-git's matcher decides); each file a stream of JSON values or YAML documents; keys
matched as Go matches them (``schema``, ``package`` and ``name`` whatever their case, two keys differing only
in case refused; the other fields with ``encoding/json``'s case folding); the objects grouped by package (an
``olm.package`` by its ``name``, the others by their ``package``); and, like the cache, one object per package,
schema and name, the last one read. An object without a schema spoils only its package. A symbolic link to a
file is read, one to a directory is refused (Go's walk does not follow it, then cannot read it as a file), and
so is anything that is not a regular file.

Pure functions over plain data, apart from reading the files. Errors name the file and the document.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from common.bundle import k8syaml

from . import oci, pull
from .gotext import go_fold
from .imageref import is_image_reference
from .model import BundleInputError

READER: Final = "operator-registry"   # who reads a catalog's files so (named in the messages of what it refuses)
SCHEMA_PACKAGE: Final = "olm.package"
SCHEMA_CHANNEL: Final = "olm.channel"
SCHEMA_BUNDLE: Final = "olm.bundle"
SCHEMA_DEPRECATIONS: Final = "olm.deprecations"
PROPERTY_PACKAGE: Final = "olm.package"
INDEX_IGNORE: Final = ".indexignore"
# What a catalog read may hold at most: the largest public operator index (all of OperatorHub's packages, their
# bundles' CSVs inlined as properties) is a few hundred MiB of JSON.
MAX_CATALOG_BYTES: Final = 2 * 1024**3
_BOM: Final = b"\xef\xbb\xbf"
REPORT_BYTES: Final = 16 * 1024**2  # a catalog this large takes seconds to read: say so first


class CatalogError(BundleInputError):
    """The catalog cannot be read: not there, not JSON or YAML, an object without a schema, a field of the
    wrong type. The message names the file (and the document) and never quotes its content."""


@dataclass(frozen=True, slots=True)
class ChannelEntry:
    """One entry of a channel: the bundle it names and the bundles it may be an upgrade from."""

    name: str
    replaces: str = ""
    skips: tuple[str, ...] = ()
    skip_range: str = ""


@dataclass(frozen=True, slots=True)
class Channel:
    name: str
    entries: tuple[ChannelEntry, ...]


@dataclass(frozen=True, slots=True)
class Bundle:
    """An ``olm.bundle``: its name (the CSV's), image and properties (``{"type": ..., "value": ...}``)."""

    name: str
    image: str
    properties: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class DeprecationEntry:
    """What an ``olm.deprecations`` entry deprecates (``schema``: olm.package, olm.channel or olm.bundle; ``name``
    empty for the package) and the message to show."""

    schema: str
    name: str
    message: str


@dataclass(slots=True)
class Package:
    """What a catalog holds about one package. ``found`` is false when the catalog has nothing of it."""

    name: str
    default_channel: str = ""
    channels: list[Channel] = field(default_factory=list)
    bundles: list[Bundle] = field(default_factory=list)
    deprecations: list[DeprecationEntry] = field(default_factory=list)
    found: bool = False


@dataclass(slots=True)
class Catalog:
    """A whole catalog: its objects grouped by package, in the order read."""

    source: str
    _objects: dict[str, dict[tuple[str, str], tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    _broken: dict[str, str] = field(default_factory=dict)  # package: why it cannot be read

    _others: set[str] = field(default_factory=set)  # packages read but not kept (load_catalog's package=)

    def package_names(self) -> list[str]:
        """The packages the catalog names (objects filed under no package, such as plain Kubernetes manifests
        given by mistake, name none)."""
        return sorted((set(self._objects) | set(self._broken) | self._others) - {""})

    def add(self, package: str, schema: str, name: str, where: str, obj: dict[str, Any]) -> None:
        """One object read; the cache keeps the last one of a package, schema and name, in the order read."""
        objects = self._objects.setdefault(package, {})
        key = (schema, name or schema)
        objects.pop(key, None)
        objects[key] = (where, obj)

    def spoil(self, package: str, problem: str) -> None:
        """An object of ``package`` cannot be read: operator-controller refuses that package only."""
        self._broken.setdefault(package, problem)

    def count(self, package: str) -> None:
        self._others.add(package)

    def package(self, name: str) -> Package:
        """The package ``name`` as operator-controller's catalog client gives it (empty when absent). Raises
        :class:`CatalogError` when an object filed under it cannot be read."""
        if name in self._broken:
            raise CatalogError(self._broken[name])
        package = Package(name)
        for (schema, _), (where, obj) in (self._objects.get(name) or {}).items():
            package.found = True
            if schema == SCHEMA_PACKAGE:
                package.default_channel = _string(obj, "defaultChannel", where)
            elif schema == SCHEMA_CHANNEL:
                package.channels.append(_channel(obj, where))
            elif schema == SCHEMA_BUNDLE:
                package.bundles.append(_bundle(obj, where))
            elif schema == SCHEMA_DEPRECATIONS:
                package.deprecations.extend(_deprecation_entries(obj, where))
        # the cache holds a file per bundle (``<name>.json``) and reads them back in path order
        package.bundles.sort(key=lambda bundle: (bundle.name + ".json").encode(errors="surrogateescape"))
        return package


def field_of(obj: dict[str, Any], key: str) -> Any:
    """``encoding/json``'s field matching: any key that folds to ``key``, the last one in the object winning."""
    wanted, value = go_fold(key), None
    for name, item in obj.items():
        if name == key or go_fold(name) == wanted:
            value = item
    return value


def _string(obj: dict[str, Any], key: str, where: str) -> str:
    value = field_of(obj, key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CatalogError(f"{where}: {key} must be a string")
    return value


def _list(obj: dict[str, Any], key: str, where: str) -> list[Any]:
    value = field_of(obj, key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise CatalogError(f"{where}: {key} must be a list")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CatalogError(f"{where} must be an object")
    return value


def _channel(obj: dict[str, Any], where: str) -> Channel:
    entries = []
    for i, raw in enumerate(_list(obj, "entries", where)):
        entry_where = f"{where}: entries[{i}]"
        entry = _object(raw, entry_where)
        skips = _list(entry, "skips", entry_where)
        if not all(isinstance(skip, str) for skip in skips):
            raise CatalogError(f"{entry_where}: skips must be a list of strings")
        entries.append(ChannelEntry(_string(entry, "name", entry_where), _string(entry, "replaces", entry_where),
                                    tuple(skips), _string(entry, "skipRange", entry_where)))
    return Channel(_string(obj, "name", where), tuple(entries))


def _bundle(obj: dict[str, Any], where: str) -> Bundle:
    properties = []
    for i, raw in enumerate(_list(obj, "properties", where)):
        prop = _object(raw, f"{where}: properties[{i}]")
        _string(prop, "type", f"{where}: properties[{i}]")   # Go's Property.Type: the package does not load
        properties.append(prop)
    return Bundle(_string(obj, "name", where), _string(obj, "image", where), tuple(properties))


def _deprecation_entries(obj: dict[str, Any], where: str) -> Iterator[DeprecationEntry]:
    for i, raw in enumerate(_list(obj, "entries", where)):
        entry_where = f"{where}: entries[{i}]"
        entry = _object(raw, entry_where)
        reference = _object(field_of(entry, "reference") or {}, f"{entry_where}: reference")
        yield DeprecationEntry(_string(reference, "schema", f"{entry_where}: reference"),
                               _string(reference, "name", f"{entry_where}: reference"),
                               _string(entry, "message", entry_where))


# --- reading ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _IgnorePattern:
    base: str  # the directory of the .indexignore holding it, relative to the root, with a trailing / (or "")
    pattern: GitIgnoreSpecPattern


def _ignore_patterns(root: Path, paths: list[Path]) -> list[_IgnorePattern]:
    """Every pattern of the ``.indexignore`` files among ``paths`` (walk order), as joelanford/ignore's
    ``NewMatcher`` reads them: lines trimmed, comments and blank lines skipped, each relative to its directory."""
    patterns = []
    for path in paths:
        if path.name != INDEX_IGNORE:
            continue
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            raise CatalogError(f"{path}: cannot be read ({exc.strerror})") from None
        relative = path.parent.relative_to(root).as_posix()
        base = "" if relative == "." else relative + "/"
        for text in (line.strip() for line in lines):
            if text and not text.startswith("#"):
                patterns.append(_IgnorePattern(base, GitIgnoreSpecPattern(text)))
    return patterns


def _ignored(relative: str, patterns: list[_IgnorePattern]) -> bool:
    """go-git's gitignore matcher: the last pattern that matches decides (``!`` re-includes)."""
    for item in reversed(patterns):
        if item.pattern.include is None or not relative.startswith(item.base):
            continue
        if item.pattern.match_file(relative[len(item.base):]):
            return bool(item.pattern.include)
    return False


def _walk(root: Path) -> Iterator[Path]:
    """The files below ``root`` in ``fs.WalkDir``'s order: names sorted by bytes, depth first, symbolic links not
    followed into."""
    try:
        children = sorted(os.scandir(root), key=lambda entry: entry.name.encode(errors="surrogateescape"))
    except OSError as exc:
        raise CatalogError(f"{root}: cannot be read ({exc.strerror})") from None
    for child in children:
        path = Path(child.path)
        if child.is_dir(follow_symlinks=False):
            yield from _walk(path)
        else:
            yield path


def _files(root: Path) -> list[Path]:
    """The files to read, less the ``.indexignore`` files and those they name (one walk serves both)."""
    paths = list(_walk(root))
    patterns = _ignore_patterns(root, paths)
    return [path for path in paths
            if path.name != INDEX_IGNORE and not _ignored(path.relative_to(root).as_posix(), patterns)]


def _size(path: Path, shown: str) -> int:
    """The size of the regular file ``path`` leads to; refuses what a catalog cannot hold."""
    try:
        status = path.stat()
    except OSError as exc:
        raise CatalogError(f"{shown}: cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(status.st_mode):
        raise CatalogError(f"{shown}: a symbolic link to a directory (operator-controller does not follow it; "
                           "give the directory itself)")
    if not stat.S_ISREG(status.st_mode):
        raise CatalogError(f"{shown}: not a regular file")
    return status.st_size


def _text(path: Path, shown: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(f"{shown}: cannot be read ({exc.strerror})") from None
    if data.startswith(_BOM) and data[len(_BOM):].lstrip()[:1] == b"{":
        raise CatalogError(f"{shown}: a byte order mark before JSON, which operator-controller reads as nothing (the "
                           "file's objects would be dropped without a word): remove the byte order mark")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if data.lstrip()[:1] == b"{":  # Go's JSON decoder takes invalid UTF-8 in strings as U+FFFD
            return data.decode("utf-8", errors="replace")
        raise CatalogError(f"{shown}: not UTF-8 text (a catalog holds JSON or YAML)") from None


def _documents(path: Path, shown: str) -> Iterator[tuple[str, Any]]:
    # declcfg decodes each into a Meta
    stream = k8syaml.read_stream(_text(path, shown), into_go_value=True, reader=READER)
    several = len(stream.documents) > 1
    for document in stream.documents:
        where = f"{shown}: document {document.index + 1}" if several else shown
        if document.error is not None:
            raise CatalogError(f"{where}: {document.error}")
        if document.value is None:
            continue
        yield where, document.value


def _meta_keys(obj: dict[str, Any], where: str) -> dict[str, str]:
    """``extractUniqueMetaKeys``: ``schema``, ``package`` and ``name`` in any case; keys that differ only in
    case are refused (the whole catalog, as operator-controller refuses to serve it)."""
    folded: dict[str, str] = {}
    for key in obj:
        other = folded.setdefault(key.casefold(), key)
        if other != key:
            raise CatalogError(f"{where}: keys {other!r} and {key!r} differ only in case")
    meta: dict[str, str] = {}
    for name in ("schema", "package", "name"):
        original = folded.get(name)
        if original is not None:
            if not isinstance(obj[original], str):
                raise CatalogError(f"{where}: {original} must be a string")
            meta[name] = obj[original]
    return meta


def load_catalog(path: str | Path, *, package: str | Collection[str] | None = None,
                 report: Callable[[str], None] | None = None) -> Catalog:
    """The catalog in ``path``: a directory (read whole), one file, or an OCI image layout (a directory or a tar
    of one) of an operator index image, whose configs directory is read. With ``package`` (a name, or several),
    only those packages' objects are kept (every file is still read: any may hold some). ``report`` hears one line
    before a large catalog is read or an image unpacked. Raises :class:`CatalogError` (or, for an image layout that
    cannot be unpacked, its parent :class:`BundleInputError`)."""
    if isinstance(path, str) and is_image_reference(path):
        with pull.pulled(path, oci.CATALOG_LIMITS, report) as pulled_image, \
                tempfile.TemporaryDirectory(prefix="cosctl-catalog-") as scratch:
            label = f"docker://{pulled_image.reference}"
            if report is not None:
                report(f"unpacking the catalog of image {label}" + pull.described(pulled_image))
            image = Path(scratch) / "image"
            configs = oci.unpack_catalog(pulled_image.layout, image, label=label)
            return _load(configs, f"{label}:/{configs.relative_to(image).as_posix()}", path, package, report)
    root = Path(path)
    if (root.is_dir() and oci.is_layout_dir(root)) or (root.is_file() and oci.is_layout_tar(root)):
        with tempfile.TemporaryDirectory(prefix="cosctl-catalog-") as scratch:
            if report is not None:
                report(f"unpacking the catalog of image layout {root}")
            image = Path(scratch) / "image"
            configs = oci.unpack_catalog(root, image)
            return _load(configs, f"{root}:/{configs.relative_to(image).as_posix()}", str(root), package, report)
    if not root.exists():
        raise CatalogError(f"{root}: no such catalog (give a File-Based Catalog directory or file, or an OCI image "
                           "layout of an index image)")
    return _load(root, str(root), str(root), package, report)


def _load(root: Path, shown: str, source: str, package: str | Collection[str] | None,
          report: Callable[[str], None] | None) -> Catalog:
    """Read the catalog directory or file ``root``, naming it ``shown`` in messages."""
    kept = None if package is None else frozenset([package] if isinstance(package, str) else package)
    files = _files(root) if root.is_dir() else [root]

    def name(file: Path) -> str:
        return shown if file == root else f"{shown}/{file.relative_to(root).as_posix()}"

    total = sum(_size(file, name(file)) for file in files)
    if total > MAX_CATALOG_BYTES:
        raise CatalogError(f"{shown}: {total // 1024**2} MiB of files, more than a catalog may hold "
                           f"({MAX_CATALOG_BYTES // 1024**3} GiB)")
    if report is not None and total >= REPORT_BYTES:
        report(f"reading catalog {shown} ({len(files)} file(s), {total // 1024**2} MiB)")
    catalog = Catalog(source)
    for file in files:
        for where, value in _documents(file, name(file)):
            meta = _meta_keys(_object(value, where), where)
            schema, obj_name = meta.get("schema", ""), meta.get("name", "")
            owner = obj_name if schema == SCHEMA_PACKAGE else meta.get("package", "")
            if kept is not None and owner not in kept:
                catalog.count(owner)
                continue
            label = f"{where} ({schema}{' ' + repr(obj_name) if obj_name else ''})"
            if not schema:
                catalog.spoil(owner, f"{where}: the object has no schema (each catalog object needs one, such as "
                                     f"{SCHEMA_BUNDLE})")
            else:
                catalog.add(owner, schema, obj_name, label, value)
    return catalog
