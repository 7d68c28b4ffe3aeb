"""gopkg.in/yaml.v3's ``Unmarshal`` into Go's typed fields, for the files containers/image decodes with it
(registries.d, :mod:`.registriesd`).

Why: what Go's decoder accepts is neither PyYAML's YAML 1.1 nor plain YAML 1.2, and a file podman reads must be
read the same way by cosctl (the same accepted, the same refused, the same values):

- a string field takes any scalar as its literal text (``lookaside: 123`` is ``"123"``, ``yes`` is ``"yes"``);
- a boolean field takes ``true``/``false`` (``True``, ``TRUE``...) unquoted, and YAML 1.1's ``y``, ``yes``,
  ``on``, ``n``, ``no``, ``off`` (three spellings each) quoted or not; ``"true"`` quoted is refused;
- null (``~``, ``null``, nothing) leaves a field unset, but makes a map entry exist (with the zero value);
- a mapping holding one key twice (the keys' literal text compared) is refused, even an unknown one; the values
  of keys a struct does not know are never looked at; ``<<`` (or ``!!merge <<``) merges mappings (the mapping's
  own keys first, then the merged ones in order, the first winning);
- a core tag must fit its text wherever Go decodes the scalar, keys included (``!!int x``, ``!!bool yes``,
  ``!!timestamp 2001-02-30`` are refused; ``!!float 1`` is fine), numbers and dates read as Go's strconv and
  time.Parse read them (:mod:`common.bundle.yamlscalars`, shared with kubectl's go-yaml v2);
- only the first document of a stream is read (a broken second one does not matter);
- a mapping, sequence or scalar where the field's type wants another is refused.

Only the shapes registries.d needs: structs of string and boolean fields (:func:`struct_fields`, :func:`string`,
:func:`boolean`) and maps of string keys (:func:`map_entries`). Pure functions over PyYAML's node graph
(aliases resolved by its composer); imports nothing of this package (only :mod:`common.bundle.yamlscalars`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection
from typing import Any, Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from common.bundle.yamlscalars import SPECIAL_FLOATS, Uint64, go_kind, is_timestamp, resolver

NULLS: Final = frozenset(("", "~", "null", "Null", "NULL"))
TRUE: Final = frozenset(("true", "True", "TRUE"))
FALSE: Final = frozenset(("false", "False", "FALSE"))
# what yaml.v3 takes into a typed bool besides true/false ("compatibility with the 1.1 spec")
LEGACY_TRUE: Final = frozenset(("y", "Y", "yes", "Yes", "YES", "on", "On", "ON"))
LEGACY_FALSE: Final = frozenset(("n", "N", "no", "No", "NO", "off", "Off", "OFF"))

_PLAIN: Final = "!<plain>"   # an untagged plain scalar: resolved by its text, as yaml.v3's resolve() does
_QUOTED: Final = "!<quoted>"  # an untagged quoted, literal or folded scalar: a string
_CORE: Final = "tag:yaml.org,2002:"
_BOOL, _NULL, _BINARY, _MERGE_TAG = (_CORE + t for t in ("bool", "null", "binary", "merge"))
_MERGE: Final = "<<"
_CHECKED: Final = frozenset(("bool", "int", "float", "null", "timestamp"))   # tags resolve() holds a text to
# yaml.v3's resolve table (YAML 1.2's core schema: no yes/no/on/off); its "<<" entry no text reaches, as no hint
# starts with "<"
_resolve_plain: Final = resolver({**dict.fromkeys(TRUE, True), **dict.fromkeys(FALSE, False), **dict.fromkeys(NULLS),
                                  **SPECIAL_FLOATS}, v3=True)


class GoYAMLError(ValueError):
    """What yaml.v3 refuses, in its words, naming the line and the field; as in Go's, a scalar where a boolean or a
    mapping belongs is shown (a string field never shows its value)."""


class _Loader(yaml.SafeLoader):
    """PyYAML's scanner, parser and composer, with an untagged scalar's tag kept as "plain" (unquoted: yaml.v3
    resolves it by its text) or "quoted" (quoted, literal or folded: a string); PyYAML would resolve both by YAML
    1.1's rules, which are not yaml.v3's."""

    def compose_scalar_node(self, anchor: Any) -> ScalarNode:
        event = self.get_event()  # type: ignore[no-untyped-call]
        tag = event.tag
        if tag in (None, "!"):   # "!" is no tag at all to yaml.v3
            tag = _PLAIN if event.style is None else _QUOTED
        node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        if anchor is not None:
            self.anchors[anchor] = node
        return node


def first_document(data: bytes) -> Node | None:
    """The first document of ``data`` as a node graph (None when there is none). Raises ``yaml.YAMLError`` for
    what YAML's grammar refuses in it; what follows the first document is not read."""
    loader = _Loader(data)
    try:
        if not loader.check_node():
            return None
        node: Node | None = loader.get_node()
        if getattr(loader, "yaml_version", None) not in (None, (1, 1)):   # PyYAML only warns for 1.2
            raise yaml.YAMLError("found incompatible YAML document (yaml.v3 reads %YAML 1.1 only)")
        return node
    finally:
        loader.dispose()


def resolved(tag: str, text: str) -> str:
    """yaml.v3's resolve(): the core type ``text`` reads as, untagged (``tag`` "") or under a core tag it checks
    ("int", "timestamp"...): "str", "bool", "null", "int", "float", "timestamp" (tried untagged or so tagged
    only), or "uint" (an int above int64, which yaml.v3 does not turn into a float)."""
    if tag in ("", "timestamp") and is_timestamp(text):
        return "timestamp"
    value = _resolve_plain(text)
    return "uint" if isinstance(value, Uint64) else go_kind(value)


def _line(node: Node) -> int:
    return int(node.start_mark.line) + 1


def _short(node: Node) -> str:
    """The tag yaml.v3 names a node by in its refusals."""
    if isinstance(node, MappingNode):
        return "!!map"
    if isinstance(node, SequenceNode):
        return "!!seq"
    tag = node.tag
    if tag == _PLAIN:
        found = resolved("", str(node.value))
        return "!!int" if found == "uint" else f"!!{found}"
    if tag == _QUOTED:
        return "!!str"
    return "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag


def is_null(node: Node) -> bool:
    """Whether yaml.v3 reads ``node`` as null: leaves a field unset, makes a map entry with the zero value."""
    if not isinstance(node, ScalarNode):
        return False
    return node.tag in (_PLAIN, _NULL) and node.value in NULLS


def _scalar_text(node: ScalarNode, where: str) -> str:
    """A non-null scalar's text as a Go string: its literal text (``!!binary`` decoded). A text that is not what
    its tag says (``!!int x``, ``!!bool yes``, ``!!timestamp 2001-02-30``, ``!!float`` on an int above int64) is
    refused, as yaml.v3's resolve() refuses it wherever it decodes a scalar."""
    tag, value = node.tag, str(node.value)
    if tag == _BINARY:
        try:
            data = value.replace("\n", "").replace("\r", "")   # what Go's StdEncoding skips
            return base64.b64decode(data, validate=True).decode("utf-8", "surrogateescape")
        except (binascii.Error, ValueError):
            raise GoYAMLError(f"line {_line(node)}: {where}: !!binary value contains invalid base64 data") from None
    short = tag[len(_CORE):] if tag.startswith(_CORE) else ""
    if short in _CHECKED:
        found = resolved(short, value)
        if found != short and (found, short) not in (("uint", "int"), ("int", "float")):
            shown = "int" if found == "uint" else found
            raise GoYAMLError(f"line {_line(node)}: {where}: cannot decode !!{shown} `{value}` as a !!{short}")
    return value


def string(node: Node, where: str) -> str | None:
    """A Go ``string`` field: None when null, else the scalar's literal text; a mapping or sequence refused."""
    if is_null(node):
        return None
    if not isinstance(node, ScalarNode):
        raise GoYAMLError(f"line {_line(node)}: {where}: cannot unmarshal {_short(node)} into string")
    return _scalar_text(node, where)


def boolean(node: Node, where: str) -> bool | None:
    """A Go ``*bool`` field: None when null; true/false unquoted, or YAML 1.1's y/yes/on/n/no/off quoted or not."""
    if is_null(node):
        return None
    if isinstance(node, ScalarNode):
        tag, value = node.tag, node.value
        if tag in (_PLAIN, _BOOL) and value in TRUE:
            return True
        if tag in (_PLAIN, _BOOL) and value in FALSE:
            return False
        if tag not in (_BOOL, _NULL):   # a string (plain, quoted, !!str or a tag yaml.v3 does not resolve)
            text = _scalar_text(node, where)
            if text in LEGACY_TRUE:
                return True
            if text in LEGACY_FALSE:
                return False
        else:
            _scalar_text(node, where)   # refuses a !!bool or !!null tag on other text, as Go does
    shown = f" `{node.value}`" if isinstance(node, ScalarNode) else ""
    raise GoYAMLError(f"line {_line(node)}: {where}: cannot unmarshal {_short(node)}{shown} into bool")


def _pairs(node: MappingNode, where: str) -> tuple[list[tuple[str, Node]], Node | None]:
    """A mapping's (key, value) pairs decoded as string keys, null keys skipped, and its ``<<`` value; a key given
    twice (its literal text, as yaml.v3 compares them) refused."""
    seen: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        ident = ("scalar", str(key_node.value)) if isinstance(key_node, ScalarNode) else (_short(key_node), "")
        if ident in seen:
            raise GoYAMLError(f'line {_line(key_node)}: {where}: mapping key "{ident[1]}" already defined at line '
                              f"{seen[ident]}")
        seen[ident] = _line(key_node)
    pairs: list[tuple[str, Node]] = []
    merge: Node | None = None
    for key_node, value_node in node.value:
        if isinstance(key_node, ScalarNode) and key_node.tag in (_PLAIN, _MERGE_TAG) and key_node.value == _MERGE:
            merge = value_node
            continue
        key = string(key_node, where)   # a null key is skipped, as yaml.v3 skips it
        if key is not None:
            pairs.append((key, value_node))
    return pairs, merge


def _merged(node: Node, where: str) -> list[tuple[str, Node]]:
    """The pairs a ``<<`` brings: of a mapping, or of each mapping of a sequence in order."""
    sources = node.value if isinstance(node, SequenceNode) else [node]
    out: list[tuple[str, Node]] = []
    for source in sources:
        if not isinstance(source, MappingNode):
            raise GoYAMLError(f"line {_line(source)}: {where}: map merge requires map or sequence of maps as the "
                              "value")
        pairs, inner = _pairs(source, where)
        out += pairs + (_merged(inner, where) if inner is not None else [])
    return out


def _mapping(node: Node, where: str, into: str) -> list[tuple[str, Node]] | None:
    if is_null(node):
        return None
    if not isinstance(node, MappingNode):
        shown = f" `{node.value}`" if isinstance(node, ScalarNode) else ""
        raise GoYAMLError(f"line {_line(node)}: {where}: cannot unmarshal {_short(node)}{shown} into {into}")
    pairs, merge = _pairs(node, where)
    if merge is None:
        return pairs
    # the mapping's own keys win over merged ones; among merged mappings, the first
    own = {key for key, _ in pairs}
    out = list(pairs)
    for key, value in _merged(merge, where):
        if key not in own:
            own.add(key)
            out.append((key, value))
    return out


def struct_fields(node: Node, known: Collection[str], where: str, go_type: str) -> dict[str, Node] | None:
    """A Go struct: the nodes of its ``known`` fields by name (None when the node is null); other keys are not
    looked at; anything but a mapping refused (as ``cannot unmarshal ... into <go_type>``)."""
    pairs = _mapping(node, where, go_type)
    if pairs is None:
        return None
    return {key: value for key, value in pairs if key in known}


def map_entries(node: Node, where: str, go_type: str) -> list[tuple[str, Node]] | None:
    """A Go ``map[string]T``: its (key, value node) entries in the file's order (None when the node is null); a
    null value is an entry with T's zero value (:func:`is_null` tells)."""
    return _mapping(node, where, go_type)
