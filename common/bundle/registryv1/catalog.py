"""File-Based Catalogs (FBC) as OLM v1 reads them: what a catalog says about one package.

Why: OLM v1 installs and upgrades a registry+v1 bundle only as its catalog allows. The catalog's channels say
which bundle may follow which (``replaces``, ``skips``, ``skipRange``), and its deprecations say what to warn
about. A catalog is the directory an operator index image serves (``/configs``), or a directory ``opm render``
wrote: files of JSON or YAML objects, each with a ``schema`` (``olm.package``, ``olm.channel``, ``olm.bundle``,
``olm.deprecations``; other schemas are ignored).

Read as operator-controller reads it (operator-registry's ``declcfg.WalkMetasFS`` and operator-controller's
catalog cache): every file below the directory in path order, except files an ``.indexignore`` names
(gitignore patterns, relative to the directory holding it); each file a stream of JSON values or YAML
documents; the objects grouped by package (an ``olm.package`` by its ``name``, the others by their
``package``); and, like the cache, one object per package, schema and name, the last one read.

Pure functions over plain data, apart from reading the files. Errors name the file and the document.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pathspec

from common.bundle import k8syaml

from .model import BundleInputError

SCHEMA_PACKAGE: Final = "olm.package"
SCHEMA_CHANNEL: Final = "olm.channel"
SCHEMA_BUNDLE: Final = "olm.bundle"
SCHEMA_DEPRECATIONS: Final = "olm.deprecations"
PROPERTY_PACKAGE: Final = "olm.package"
INDEX_IGNORE: Final = ".indexignore"
# What a catalog read may hold at most: the largest public operator index (all of OperatorHub's packages, their
# bundles' CSVs inlined as properties) is a few hundred MiB of JSON.
MAX_CATALOG_BYTES: Final = 2 * 1024**3


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

    def package_property(self) -> dict[str, Any] | None:
        """The first ``olm.package`` property's value (where the bundle's version is), or None."""
        for prop in self.properties:
            if prop.get("type") == PROPERTY_PACKAGE:
                value = prop.get("value")
                return value if isinstance(value, dict) else {}
        return None


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
    has_deprecations: bool = False
    found: bool = False


@dataclass(slots=True)
class Catalog:
    """A whole catalog: its objects grouped by package, in the order read."""

    source: str
    _objects: dict[str, dict[tuple[str, str], tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    _broken: dict[str, str] = field(default_factory=dict)  # package: why it cannot be read

    def package_names(self) -> list[str]:
        return sorted(set(self._objects) | set(self._broken))

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
                package.has_deprecations = True
                package.deprecations.extend(_deprecation_entries(obj, where))
        # the cache holds a file per bundle (``<name>.json``) and reads them back in path order
        package.bundles.sort(key=lambda bundle: (bundle.name + ".json").encode(errors="surrogateescape"))
        return package


def _string(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CatalogError(f"{where}: {key} must be a string")
    return value


def _list(obj: dict[str, Any], key: str, where: str) -> list[Any]:
    value = obj.get(key)
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
        properties.append(prop)
    return Bundle(_string(obj, "name", where), _string(obj, "image", where), tuple(properties))


def _deprecation_entries(obj: dict[str, Any], where: str) -> Iterator[DeprecationEntry]:
    for i, raw in enumerate(_list(obj, "entries", where)):
        entry_where = f"{where}: entries[{i}]"
        entry = _object(raw, entry_where)
        reference = _object(entry.get("reference") or {}, f"{entry_where}: reference")
        yield DeprecationEntry(_string(reference, "schema", f"{entry_where}: reference"),
                               _string(reference, "name", f"{entry_where}: reference"),
                               _string(entry, "message", entry_where))


# --- reading ---------------------------------------------------------------------------------------------


def _ignore_specs(root: Path) -> list[tuple[str, pathspec.GitIgnoreSpec]]:
    """Every ``.indexignore`` below ``root``: (its directory relative to root, its patterns)."""
    specs = []
    for directory, _, files in os.walk(root):
        if INDEX_IGNORE in files:
            path = Path(directory, INDEX_IGNORE)
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError as exc:
                raise CatalogError(f"{path}: cannot be read ({exc.strerror})") from None
            relative = Path(directory).relative_to(root).as_posix()
            specs.append(("" if relative == "." else relative + "/", pathspec.GitIgnoreSpec.from_lines(lines)))
    return specs


def _files(root: Path) -> Iterator[Path]:
    """The files of ``root`` in ``fs.WalkDir``'s order (names sorted, depth first), less those ignored."""
    specs = _ignore_specs(root)

    def walk(directory: Path) -> Iterator[Path]:
        try:
            children = sorted(os.scandir(directory), key=lambda entry: entry.name.encode(errors="surrogateescape"))
        except OSError as exc:
            raise CatalogError(f"{directory}: cannot be read ({exc.strerror})") from None
        for child in children:
            path = Path(child.path)
            if child.is_dir():
                yield from walk(path)
                continue
            if child.name == INDEX_IGNORE:
                continue
            relative = path.relative_to(root).as_posix()
            if any(relative.startswith(base) and spec.match_file(relative[len(base):]) for base, spec in specs):
                continue
            yield path
    yield from walk(root)


def _documents(path: Path, budget: list[int]) -> Iterator[tuple[str, Any]]:
    try:
        size = path.stat().st_size
        budget[0] -= size
        if budget[0] < 0:
            raise CatalogError(f"{path}: the catalog is larger than {MAX_CATALOG_BYTES // 1024**3} GiB")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CatalogError(f"{path}: not UTF-8 text (a catalog holds JSON or YAML)") from None
    except OSError as exc:
        raise CatalogError(f"{path}: cannot be read ({exc.strerror})") from None
    stream = k8syaml.read_stream(text)
    several = len(stream.documents) > 1
    for document in stream.documents:
        where = f"{path}: document {document.index + 1}" if several else str(path)
        if document.error is not None:
            raise CatalogError(f"{where}: {document.error}")
        if document.value is None:
            continue
        yield where, document.value


def load_catalog(path: str | Path) -> Catalog:
    """The catalog in ``path``: a directory (read whole) or one file. Raises :class:`CatalogError`."""
    root = Path(path)
    if root.is_dir():
        files: Iterator[Path] = _files(root)
    elif root.exists():
        files = iter([root])
    else:
        raise CatalogError(f"{root}: no such catalog (give a File-Based Catalog directory or file)")
    catalog = Catalog(str(root))
    budget = [MAX_CATALOG_BYTES]
    for file in files:
        for where, value in _documents(file, budget):
            obj = _object(value, where)
            schema = obj.get("schema")
            name = _string(obj, "name", where)
            if schema is None or schema == "":
                # operator-controller refuses only the package such an object is filed under
                package = _string(obj, "package", where)
                catalog._broken.setdefault(package, f"{where}: the object has no schema (each catalog object needs "
                                                    f"one, such as {SCHEMA_BUNDLE})")
                continue
            if not isinstance(schema, str):
                raise CatalogError(f"{where}: schema must be a string")
            label = f"{where} ({schema}{' ' + repr(name) if name else ''})"
            package = name if schema == SCHEMA_PACKAGE else _string(obj, "package", where)
            objects = catalog._objects.setdefault(package, {})
            key = (schema, name or schema)
            objects.pop(key, None)  # the cache keeps the last one read, in the order read
            objects[key] = (label, obj)
    return catalog
