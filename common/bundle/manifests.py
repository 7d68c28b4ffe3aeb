"""Loading plain manifests from files and directories, the way ``kubectl apply -f`` reads them.

A producer must either take a whole bundle or nothing: a typo in the 300th document must not publish the
first 299. So loading collects *every* problem (with the file and the document index, plus the item index
inside a ``List``) and raises them together in one :class:`ManifestError`; nothing is returned for a bundle
with any problem. Messages never quote document content (a manifest may be a Secret).

Inputs: YAML files (multi-document), JSON files, ``-`` for standard input, and directories, walked
recursively in sorted path order (``.yaml``, ``.yml`` and ``.json`` files; hidden entries skipped) so the
same tree always loads in the same order. ``List`` kinds (``v1/List`` and any ``*List`` with ``items``) are
flattened into their items.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from common.contract.objects import Obj, ObjectRef

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a manifest came from: ``path:index`` (0-based document index), plus ``items[i]`` in a List."""

    path: str
    index: int
    item: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.index}"
        return where if self.item is None else f"{where} items[{self.item}]"


@dataclass(frozen=True, slots=True)
class Manifest:
    obj: Obj
    source: Source


class ManifestError(Exception):
    """One or more inputs are unusable; ``problems`` lists each as ``<file>:<index>: <what is wrong>``."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# The C loader where PyYAML was built with libyaml (same interface, faster). The ignore: mypy accepts only a
# static base class, not one chosen at import time.
class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe YAML without timestamp resolution: ``2024-01-01`` stays a string, as it does for the API server
    (a ``datetime`` would neither round-trip nor serialize to JSON)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load(paths: Sequence[str | Path], *, stdin: Any = None) -> list[Manifest]:
    """Every manifest under ``paths``, in input order; raises :class:`ManifestError` listing all problems."""
    found, problems = documents(paths, stdin=stdin)
    manifests = [Manifest(doc, source) for source, doc in found if _check(doc, source, problems)]
    _check_duplicates(manifests, problems)
    if problems:
        raise ManifestError(problems)
    return manifests


def _expand(paths: Sequence[str | Path], problems: list[str]) -> Iterator[str]:
    """Files in the order given; a directory contributes its manifest files recursively, sorted by path."""
    if not paths:
        problems.append("no input files or directories given")
    for raw in paths:
        path = str(raw)
        if path == STDIN:
            yield STDIN
            continue
        p = Path(path)
        if p.is_dir():
            found = sorted(
                (f for f in p.rglob("*")
                 if f.suffix.lower() in MANIFEST_SUFFIXES and f.is_file()
                 and not any(part.startswith(".") for part in f.relative_to(p).parts)),
                key=lambda f: f.relative_to(p).as_posix(),
            )
            yield from (str(f) for f in found)
        elif p.exists():
            yield path
        else:
            problems.append(f"{path}: no such file or directory")


def _documents(name: str, text: str, problems: list[str]) -> Iterator[tuple[int, Any]]:
    """(index, parsed document) for each non-empty document; a parse error is reported at its index and ends
    the file (YAML cannot resynchronise after a syntax error)."""
    if name.lower().endswith(".json"):
        try:
            yield 0, json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"{name}:0: invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
        except RecursionError:
            problems.append(f"{name}:0: invalid JSON: nested too deeply")
        except ValueError:  # Python refuses integers of more than 4300 digits
            problems.append(f"{name}:0: invalid JSON: a number is too large")
        return
    index = 0
    try:
        for doc in yaml.load_all(text, Loader=_Loader):
            if doc is not None:
                yield index, doc
            index += 1
    except yaml.YAMLError as exc:
        problems.append(f"{name}:{index}: invalid YAML: {_yaml_problem(exc)}")
    except RecursionError:
        problems.append(f"{name}:{index}: invalid YAML: nested too deeply")
    except ValueError:  # Python refuses integers of more than 4300 digits
        problems.append(f"{name}:{index}: invalid YAML: a number is too large")


MAX_EXPANDED_NODES = 1_000_000


def _expanded_size(doc: Any, limit: int = MAX_EXPANDED_NODES) -> int:
    """How many nodes ``doc`` has once YAML aliases are expanded, counting no further than past ``limit``.

    PyYAML builds an alias as a second reference to the same object, so a few hundred bytes of nested
    anchors ("billion laughs") load instantly and explode only when something walks the result. Counting
    with one memo entry per container costs as much as the unique nodes, however large the expansion.
    """
    sizes: dict[int, int] = {}

    def size(value: Any) -> int:
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            return 1
        key = id(value)
        if key not in sizes:
            total = 1
            for child in children:
                total += size(child)
                if total > limit:
                    break
            sizes[key] = total
        return sizes[key]

    return size(doc)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """The problem and its position, without PyYAML's snippet of the offending text (it may be secret)."""
    problem = getattr(exc, "problem", None) or type(exc).__name__
    context = getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None)
    text = f"{context}, {problem}" if context else str(problem)
    if mark is not None:
        text += f" at line {mark.line + 1} column {mark.column + 1}"
    return text


def _is_list_kind(doc: Obj) -> bool:
    kind = doc.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list)


def _check(doc: Any, source: Source, problems: list[str]) -> bool:
    """Record what makes ``doc`` unusable as a manifest; True when it is usable."""
    if not isinstance(doc, dict):
        problems.append(f"{source}: not a mapping (a manifest must be an object, got {_type_name(doc)})")
        return False
    found: list[str] = []
    for field in ("apiVersion", "kind"):
        value = doc.get(field)
        if not isinstance(value, str) or not value:
            found.append(f"missing {field}" if value in (None, "") else f"{field} must be a string")
    meta = doc.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        found.append("metadata must be a mapping")
    else:
        name = (meta or {}).get("name")
        if not isinstance(name, str) or not name:
            found.append("missing metadata.name" if name in (None, "") else "metadata.name must be a string")
        namespace = (meta or {}).get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            found.append("metadata.namespace must be a string")
    if found:
        label = _label(doc)
        problems.extend(f"{source}{label}: {what}" for what in found)
        return False
    return True


def _label(doc: Obj) -> str:
    kind = doc.get("kind")
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    if isinstance(kind, str) and kind and isinstance(name, str) and name:
        return f" {kind}/{name}"
    if isinstance(kind, str) and kind:
        return f" {kind}"
    return ""


def _type_name(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
        type(value), type(value).__name__)


def _not_json(doc: object) -> str | None:
    """Why ``doc`` cannot be stored as JSON (YAML allows binary, NaN and non-string keys), or None."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    return f"{path or '<root>'}: mapping key {k!r} is not a string"
                stack.append((v, f"{path}.{k}" if path else k))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            return f"{path}: {value} is not a valid JSON number"
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            return f"{path}: a {type(value).__name__} value cannot be represented in JSON"
    return None


def _check_duplicates(manifests: Iterable[Manifest], problems: list[str]) -> None:
    """The API refuses the same object twice in a COS; say so here, naming both places."""
    seen: dict[ObjectRef, Source] = {}
    for m in manifests:
        ref = ObjectRef.of(m.obj)
        first = seen.setdefault(ref, m.source)
        if first is not m.source:
            problems.append(f"{m.source}: duplicate object {ref} (first defined at {first})")


def documents(paths: Sequence[str | Path], *, stdin: Any = None) -> tuple[list[tuple[Source, Any]], list[str]]:
    """Every parsed document under ``paths`` (``List`` items flattened), unchecked, with the problems that
    kept files or documents from being read. For callers that judge each document on its own, such as
    ``cosctl validate``; ``load`` is the all-or-nothing reader for publishing."""
    problems: list[str] = []
    found: list[tuple[Source, Any]] = []
    for path in _expand(paths, problems):
        try:
            if path == STDIN:
                text = (stdin if stdin is not None else sys.stdin).read()
                if isinstance(text, bytes):
                    text = text.decode("utf-8")
                name = "<stdin>"
            else:
                text = Path(path).read_bytes().decode("utf-8")
                name = str(path)
        except UnicodeDecodeError:
            problems.append(f"{path}: not UTF-8 text")
            continue
        except OSError as exc:
            problems.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        for doc_index, doc in _documents(name, text, problems):
            if _expanded_size(doc) > MAX_EXPANDED_NODES:
                problems.append(f"{name}:{doc_index}: invalid YAML: aliases expand to more than "
                                f"{MAX_EXPANDED_NODES} nodes")
                continue
            if isinstance(doc, dict) and _is_list_kind(doc):
                entries = [(Source(name, doc_index, i), item) for i, item in enumerate(doc["items"])]
            else:
                entries = [(Source(name, doc_index), doc)]
            for source, item in entries:
                bad = _not_json(item) if isinstance(item, (dict, list)) else None
                if bad:
                    problems.append(f"{source}{_label(item) if isinstance(item, dict) else ''}: {bad}")
                else:
                    found.append((source, item))
    return found, problems
