"""Loading plain manifests from files and directories, the way ``kubectl apply -f`` reads them.

A producer must either take a whole bundle or nothing: a typo in the 300th document must not publish the
first 299. So loading collects *every* problem (with the file and the document index, plus the item index
inside a ``List``) and raises them together in one :class:`ManifestError`; nothing is returned for a bundle
with any problem. Messages never quote document content (a manifest may be a Secret).

Inputs: YAML files (multi-document), JSON files, ``-`` for standard input, and directories, walked
recursively in sorted path order (``.yaml``, ``.yml`` and ``.json`` files; hidden entries skipped) so the
same tree always loads in the same order. Each is read by :mod:`.k8syaml` exactly as kubectl reads it
(``on: yes`` is ``{"true": true}``, ``2024-01-01`` a string, ``1.0`` the integer 1), so what is packed is what
``kubectl apply`` would have sent. An input (file, directory or standard input) in which no manifest is
found is a problem too: an empty file among the inputs is almost always a mistake. ``List`` kinds
(``v1/List`` and any ``*List`` with ``items``) are flattened into their items.
"""

from __future__ import annotations

import codecs
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.bundle import k8syaml
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


def load(paths: Sequence[str | Path], *, stdin: Any = None, warnings: list[str] | None = None) -> list[Manifest]:
    """Every manifest under ``paths``, in input order; raises :class:`ManifestError` listing all problems.
    ``warnings``, when given, receives what kubectl accepts without a word but a reader should hear about."""
    found, problems = documents(paths, stdin=stdin, warnings=warnings)
    manifests = [Manifest(doc, source) for source, doc in found if _check(doc, source, problems)]
    _check_duplicates(manifests, problems)
    if problems:
        raise ManifestError(problems)
    return manifests


def _expand(paths: Sequence[str | Path], problems: list[str]) -> Iterator[tuple[str, list[str]]]:
    """Each input in the order given with the files it stands for: a directory, its manifest files
    recursively, sorted by path; a file or ``-`` (standard input), itself."""
    if not paths:
        problems.append("no input files or directories given")
    for raw in paths:
        path = str(raw)
        if path == STDIN:
            yield STDIN, [STDIN]
            continue
        p = Path(path)
        if p.is_dir():
            found = sorted(
                (f for f in p.rglob("*")
                 if f.suffix.lower() in MANIFEST_SUFFIXES and f.is_file()
                 and not any(part.startswith(".") for part in f.relative_to(p).parts)),
                key=lambda f: f.relative_to(p).as_posix(),
            )
            yield path, [str(f) for f in found]
        elif p.exists():
            yield path, [path]
        else:
            problems.append(f"{path}: no such file or directory")


_BYTE_ORDER_MARKS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
UTF16_BYTE_ORDER_MARKS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def text_of(data: bytes) -> str:
    """A file's text as ``kubectl apply -f`` decodes it (golang.org/x/text's BOMOverride over UTF-8, in its file
    reader): a UTF-8 byte order mark is dropped (so a file starting with one and ``{`` is JSON), UTF-16 with its
    byte order mark (what Windows editors save as "Unicode") is decoded. Raises ``UnicodeDecodeError`` for any
    other bytes that are not UTF-8, where kubectl would put U+FFFD in place of each bad byte: a manifest changed
    unseen, which is refused instead."""
    for mark, codec in _BYTE_ORDER_MARKS:
        if data.startswith(mark):
            return data[len(mark):].decode(codec)
    return data.decode("utf-8")


def _read(path: str, stdin: Any, problems: list[str]) -> tuple[str, str] | None:
    """(name used in messages, text) of a file or of standard input; None (with a problem) when unreadable."""
    try:
        if path == STDIN:
            data = (stdin if stdin is not None else getattr(sys.stdin, "buffer", sys.stdin)).read()
            return "<stdin>", text_of(data) if isinstance(data, bytes) else data.removeprefix("\ufeff")
        return path, text_of(Path(path).read_bytes())
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: not UTF-8 text" if exc.encoding == "utf-8" else
                        f"{path}: not UTF-16 text, though it starts with UTF-16's byte order mark")
    except OSError as exc:
        problems.append(f"{path}: cannot read: {exc.strerror or exc}")
    return None


def _nothing_found(path: str, files: list[str]) -> str:
    """The problem of an input in which no manifest was found, saying what was looked at."""
    if path == STDIN:
        return "<stdin>: no manifest found: standard input is empty or holds only comments"
    if files == [path]:
        return f"{path}: no manifest found: the file is empty or holds only comments"
    if not files:
        return f"{path}: no manifest found: the directory holds no .yaml, .yml or .json file"
    return (f"{path}: no manifest found: the directory's {len(files)} manifest file(s) are empty or hold only "
            "comments")


def stream_values(name: str, stream: k8syaml.Stream, problems: list[str],
                  warnings: list[str] | None = None) -> list[tuple[int, Any]]:
    """The documents of ``stream`` (read from file ``name``) that hold a value, with their index in it. One that
    cannot be decoded is a problem, ``<file>:<index>: invalid YAML: <why>`` (or JSON); an empty one is skipped;
    ``warnings``, when given, hears ``<file>:<index>: <what>`` for what the reader noticed."""
    if warnings is not None:
        warnings.extend(f"{name}:{index}: {message}" for index, message in stream.warnings)
    found = []
    for document in stream.documents:
        if document.error is not None:
            what = "invalid JSON" if document.is_json else "invalid YAML"
            problems.append(f"{name}:{document.index}: {what}: {document.error}")
        elif document.value is not None:
            found.append((document.index, document.value))
    return found


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


def _check_duplicates(manifests: Iterable[Manifest], problems: list[str]) -> None:
    """The API refuses the same object twice in a COS; say so here, naming both places."""
    seen: dict[ObjectRef, Source] = {}
    for m in manifests:
        ref = ObjectRef.of(m.obj)
        first = seen.setdefault(ref, m.source)
        if first is not m.source:
            problems.append(f"{m.source}: duplicate object {ref} (first defined at {first})")


def documents(paths: Sequence[str | Path], *, stdin: Any = None,
              warnings: list[str] | None = None) -> tuple[list[tuple[Source, Any]], list[str]]:
    """Every parsed document under ``paths`` (``List`` items flattened), unchecked, with the problems that
    kept files or documents from being read. For callers that judge each document on its own, such as
    ``cosctl validate``; ``load`` is the all-or-nothing reader for publishing. ``warnings``, when given,
    receives ``<file>:<index>: <what>`` for what kubectl reads without a word but a reader should hear about
    (a key written twice in a mapping: the last value is used)."""
    problems: list[str] = []
    found: list[tuple[Source, Any]] = []
    for path, files in _expand(paths, problems):
        seen = len(problems), len(found)
        for file in files:
            read = _read(file, stdin, problems)
            if read is None:
                continue
            name, text = read
            for index, doc in stream_values(name, k8syaml.read_stream(text), problems, warnings):
                if isinstance(doc, dict) and _is_list_kind(doc):
                    found.extend((Source(name, index, i), item) for i, item in enumerate(doc["items"]))
                else:
                    found.append((Source(name, index), doc))
        if (len(problems), len(found)) == seen:
            problems.append(_nothing_found(path, files))
    return found, problems
