"""YAML and JSON read exactly as ``kubectl apply -f`` reads them, into JSON values.

kubectl does not read YAML the way a YAML 1.1 or 1.2 library does. Its decoder (k8s.io/apimachinery
``util/yaml``) splits a stream into documents at every line that starts with ``---``, reads each with
sigs.k8s.io/yaml over its fork of go-yaml v2, converts the result to JSON, and the API machinery decodes that
JSON again keeping integers as int64. What reaches the API server follows from those steps, and a manifest
means what kubectl sends, so this module reproduces them rather than any YAML specification (the rules are
learnt from that code, and ``tests/producer/test_k8syaml.py`` checks them against the kubectl binary):

- plain scalars resolve as go-yaml v2 does: ``y``/``Y``/``yes``/``on``/``true`` (three spellings each) and
  their opposites are booleans, ``~``/``null``/empty are null, timestamps stay strings, ``=`` and ``<<``
  (outside a key) are strings, integers are read as Go's ``strconv.ParseInt(s, 0, 64)`` reads them after
  every ``_`` is removed (``0x1F``, ``0o17``, ``017``, ``0b101``, ``1_000``), then as unsigned 64-bit, then as
  a float (``1e3``, ``08``); a number too large even for a float stays a string;
- numbers are what survives a JSON round trip in Go: a float with an integral value below 1e21 becomes an
  integer (``1.0`` is ``1``), an integer beyond int64 becomes the float nearest to it, written as Go writes
  it (``18446744073709551615`` is ``18446744073709552000``); NaN and infinities are refused (JSON has none);
- explicit tags: ``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!timestamp`` must fit their
  value (``!!float 1`` is fine, ``!!int 1.5`` is refused), ``!!binary`` is decoded into a string, and any
  other tag is ignored (its value is a string);
- mapping keys become strings as sigs.k8s.io/yaml converts them: ``on`` is ``"true"``, ``1`` is ``"1"``, a
  float is written in 32-bit precision, ``.inf`` is ``".inf"``; null keys, keys beyond int64 and collection
  keys are refused;
- ``<<`` merge keys are applied where they stand, each overwriting the keys before it (go-yaml's order, not
  the YAML 1.1 rule that explicit keys win); a list of merges is applied last to first;
- a repeated key keeps its last value (as kubectl), and the caller is told (see :class:`Stream`); the value it
  replaces is decoded (go-yaml's refusals count) but never converted to JSON (a null key or NaN in it is fine);
- aliases are copies (never shared objects), a node that contains an alias to itself is refused, and so is
  a document whose aliases expand beyond go-yaml's ratio of alias-driven to plain decoding steps;
- a separator line with anything but a comment after ``---`` is refused, and content after a ``...``
  document end marker (which kubectl silently drops) is refused too;
- a stream whose first character is ``{`` is read as a stream of JSON values, as kubectl does (falling back
  to YAML when the first value is not JSON, a syntax error outranking a number too large), with the same number
  rules; content after a document's value, which go-yaml never reads, is refused.

The other way round, :class:`SafeDumper` writes YAML that kubectl reads back as the same JSON: it quotes every
string that the rules above would read as something else (``'y'``, ``'1e3'``, ``'08'``), which PyYAML alone does
not (its own resolver is YAML 1.1's, not go-yaml's).

Errors never quote document content (a manifest may be a Secret): they name the problem and its line.
Parsing uses libyaml through PyYAML's C composer where it is built in. Documents that need what that composer
hides (aliases, which go-yaml counts and copies; anchors defined twice; the non-specific tag ``!``) are
composed from libyaml's events instead; libyaml's escapes are aligned with go-yaml's (``\\'`` is a quote,
``\\/`` an error).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from common.bundle.yamlscalars import INT64_MAX, INT64_MIN, SPECIAL_FLOATS, Uint64, go_kind, is_timestamp, resolver
from common.contract.gotext import go_float32_g, go_json_number

__all__ = ["Document", "SafeDumper", "Stream", "YAMLReadError", "load", "read_stream", "reads_back_as_string",
           "represent_str"]

# Tags the composer gives scalars without an explicit tag. Both hold a space, which no YAML tag can, so a
# document cannot spell them.
_PLAIN = " plain"  # a plain scalar: resolved by its text
_TEXT = " text"  # quoted or block: always a string
# the non-specific tag "!": a string too, but libyaml calls it implicit whatever its quotes, so go-yaml v2 merges
# under a "<<" key written with it (``! '<<': {a: 1}`` is ``a: 1`` to kubectl)
_NON_SPECIFIC = " non-specific"
_COLLECTION = " collection"

_P = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL, TIMESTAMP = (_P + t for t in ("str", "int", "float", "bool", "null", "timestamp"))
BINARY, MERGE = _P + "binary", _P + "merge"
_CHECKED_TAGS = {INT, FLOAT, BOOL, NULL, TIMESTAMP}

class YAMLReadError(Exception):
    """A document kubectl would not read (or would read other than it says); ``line``/``column`` are 1-based
    positions in the whole stream, or 0 when unknown. The message never quotes content. ``kubectl_reads``: kubectl
    does read the document, but keeps part of it or decides at random, so it is refused on purpose."""

    def __init__(self, message: str, line: int = 0, column: int = 0, *, kubectl_reads: bool = False) -> None:
        self.message, self.line, self.column, self.kubectl_reads = message, line, column, kubectl_reads
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.message} at line {self.line} column {self.column}" if self.line else self.message


class RoundedUint64(int):
    """An integer above int64 as the API machinery reads sigs.k8s.io/yaml's JSON of it: a float64, here its
    integral value. ``exact`` is what the YAML said, digit for digit, which is what a Go field keeping the JSON
    raw (``json.RawMessage``, or a string field) gets: OLM reads ``metadata/properties.yaml`` that way."""

    exact: int

    def __new__(cls, rounded: int, exact: int) -> RoundedUint64:
        number = super().__new__(cls, rounded)
        number.exact = exact
        return number

    def __reduce__(self) -> tuple[Any, ...]:  # what copy.deepcopy and pickle rebuild it from
        return type(self), (int(self), self.exact)


class JSONFloat64(int):
    """A whole number a JSON document wrote as a float (``4.611686018427388e+18``), of 2**53 or more and below 2**63
    in magnitude, where the float64's value and the digits Go prints for it differ. The API machinery's JSON decoder
    keeps it a float64 (a YAML file's number is read back from sigs.k8s.io/yaml's JSON text instead, so there it is
    the printed integer). As an ``int`` it is what Go prints for it and what every JSON round trip gives
    (4611686018427388000); ``float_value`` is the float64 itself, which Kubernetes' unstructured converter turns
    into an integer field by conversion: OLM v1 reads a JSON CRD's ``maxLength: 4.611686018427388e+18`` as
    4611686018427387904, a YAML CRD's as 4611686018427388000."""

    float_value: float

    def __new__(cls, printed: int, float_value: float) -> JSONFloat64:
        number = super().__new__(cls, printed)
        number.float_value = float_value
        return number

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (int(self), self.float_value)


class _ValueProblem(Exception):
    """Raised while building a document; ``path`` grows as it unwinds so the message can name the field.
    ``in_json``: a problem of sigs.k8s.io/yaml's conversion to JSON, which runs after go-yaml has decoded the whole
    document, so a value that a later equal key replaces never meets it (unlike go-yaml's own refusals)."""

    def __init__(self, message: str, node: Node | None, *, kubectl_reads: bool = False, in_json: bool = False) -> None:
        super().__init__(message)
        self.message, self.node, self.path = message, node, ""
        self.kubectl_reads, self.in_json = kubectl_reads, in_json

    def under(self, segment: str) -> _ValueProblem:
        self.path = segment + ("" if not self.path or self.path.startswith("[") else ".") + self.path
        return self


# ---------------------------------------------------------------------------------------------------------
# Scalars: go-yaml v2's resolve(), then the JSON round trip kubectl puts every value through.

_BOOL_NULL: dict[str, Any] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    **dict.fromkeys(("~", "null", "Null", "NULL"), None),
    **SPECIAL_FLOATS,
}
# The Go value go-yaml v2 gives an untagged plain scalar: str, bool, None, int, :class:`Uint64` or float (possibly
# NaN or infinite: :func:`_json_value` and :func:`_json_key` decide what JSON makes of it).
resolve_plain: Final[Callable[[str], Any]] = resolver(_BOOL_NULL)


def _resolve_tagged(tag: str, text: str, node: Node) -> Any:
    """A scalar with an explicit tag, as go-yaml's resolve() and scalar() treat it."""
    if tag == STR:
        return text
    if tag == BINARY:
        return _binary(text, node)
    if tag not in _CHECKED_TAGS:
        return text  # go-yaml ignores tags it does not know: the value stays a string
    if tag == TIMESTAMP and is_timestamp(text):
        return text  # go-yaml keeps a timestamp's text when decoding into an untyped value
    value: Any = resolve_plain(text) if text else None
    short = "!!" + tag[len(_P):]
    found = "!!" + go_kind(value)
    if found == short:
        return value
    if tag == FLOAT and found == "!!int" and not isinstance(value, Uint64):
        return float(value)
    raise _ValueProblem(f"a value tagged {short} is not a valid {short[2:]} (it reads as {found})", node)


def _binary(text: str, node: Node) -> str:
    """``!!binary``: the decoded bytes as a string, each byte that is not UTF-8 replaced by U+FFFD, as Go's
    JSON encoder does."""
    try:
        raw = base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        raise _ValueProblem("!!binary value contains invalid base64 data", node) from None
    decoded = raw.decode("utf-8", "surrogateescape")
    return _LONE_SURROGATE.sub("\ufffd", decoded) if not decoded.isascii() else decoded


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_value(value: Any, node: Node) -> Any:
    kind = type(value)
    if kind is float:
        if not math.isfinite(value):
            raise _ValueProblem("not a finite number (.nan or .inf): JSON cannot hold it", node, in_json=True)
        return go_json_number(value)
    if kind is Uint64:
        return RoundedUint64(int(go_json_number(float(value))), int(value))  # below 2**64 < 1e21: always integral
    return value


def _float32_text(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 32)``, which sigs.k8s.io/yaml uses for float map keys; a NaN or
    an infinity is written back as the YAML it was read from."""
    text = go_float32_g(value)
    return {"NaN": ".nan", "+Inf": ".inf", "-Inf": "-.inf"}.get(text, text)


def _json_key(value: Any, node: Node) -> str:
    """sigs.k8s.io/yaml's conversion of a go-yaml map key to a JSON object key."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:
        return _float32_text(value)
    if kind is Uint64:
        raise _ValueProblem("an integer key beyond the signed 64-bit range cannot be a JSON key", node, in_json=True)
    if value is None:
        raise _ValueProblem("a null mapping key cannot be a JSON key", node, in_json=True)
    raise _ValueProblem("a mapping or a list cannot be a mapping key", node)


# ---------------------------------------------------------------------------------------------------------
# Building a document from the node graph, as go-yaml's decoder walks it.

# go-yaml's limits on alias expansion (decode.go allowedAliasRatio): while it has taken up to 400,000 decoding
# steps 99% may come from aliases, falling to 10% at 4,000,000 steps.
_ALIAS_RATIO_LOW, _ALIAS_RATIO_HIGH = 400_000, 4_000_000


def _allowed_alias_ratio(steps: int) -> float:
    if steps <= _ALIAS_RATIO_LOW:
        return 0.99
    if steps >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((steps - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW))


class _AliasNode(Node):
    """An alias (``*name``) kept as such: go-yaml expands each one again and counts its steps."""

    id = "alias"

    def __init__(self, target: Node, start_mark: Any, end_mark: Any) -> None:
        super().__init__(_COLLECTION, target, start_mark, end_mark)


DuplicateKey = Callable[[str, Node], None]


def _is_merge_key(node: Node) -> bool:
    return type(node) is ScalarNode and node.value == "<<" and node.tag in (_PLAIN, MERGE, _NON_SPECIFIC)


@dataclass
class _Pending:
    """The JSON conversion's refusals met while decoding one mapping (and what is merged into it): of a key, and
    of a value by its key."""

    keys: list[_ValueProblem] = field(default_factory=list)
    values: dict[str, _ValueProblem] = field(default_factory=dict)


class _Builder:
    """Turns one document's nodes into JSON values. With ``aliases`` (the document has anchors) every node is
    counted as go-yaml counts its decoding steps, so alias expansion stops where go-yaml stops it."""

    def __init__(self, aliases: bool, duplicate: DuplicateKey | None, reader: str) -> None:
        self.aliases = aliases
        self.duplicate = duplicate
        self.reader = reader  # who reads the document so, named in messages
        self.steps = 1  # go-yaml counts the document node
        self.alias_steps = 0
        self.alias_depth = 0
        self.active: set[int] = set()  # collections being built: an alias to one of them is a cycle

    def step(self, node: Node) -> None:
        """One call of go-yaml's decoder, counted and limited as it does it."""
        self.steps += 1
        if self.alias_depth:
            self.alias_steps += 1
            if (self.alias_steps > 100 and self.steps > 1000
                    and self.alias_steps / self.steps > _allowed_alias_ratio(self.steps)):
                raise _ValueProblem("the document contains excessive aliasing", node)

    def go_value(self, node: Node) -> Any:
        """The node as go-yaml decodes it into an untyped value (scalars keep their Go type)."""
        kind = type(node)
        if kind is ScalarNode:
            if self.aliases:
                self.step(node)
            tag = node.tag
            if tag == _PLAIN:
                return resolve_plain(node.value)
            if tag == _TEXT:
                return node.value
            return _resolve_tagged(tag, node.value, node)
        if kind is _AliasNode:
            return self.expand(node, self.go_value)
        if self.aliases:
            self.step(node)
            self.active.add(id(node))
        try:
            if kind is MappingNode:
                out: dict[str, Any] = {}
                self.fill(node, out)
                return out
            return self.sequence(node)
        finally:
            if self.aliases:
                self.active.discard(id(node))

    def expand(self, alias: Node, build: Callable[[Node], Any]) -> Any:
        """What go-yaml's alias() does: one step for the alias, then the target's, counted as aliasing."""
        target = alias.value
        if id(target) in self.active:
            raise _ValueProblem("an alias refers to a node that contains it", alias)
        self.step(alias)
        self.alias_depth += 1
        try:
            return build(target)
        finally:
            self.alias_depth -= 1

    def value(self, node: Node) -> Any:
        """The node as a JSON value."""
        if type(node) is ScalarNode and not self.aliases:
            tag = node.tag
            if tag == _PLAIN:
                return _json_value(resolve_plain(node.value), node)
            if tag == _TEXT:
                return node.value
        return _json_value(self.go_value(node), node)

    def sequence(self, node: Node) -> list[Any]:
        items = []
        first: _ValueProblem | None = None  # of the JSON conversion: go-yaml decodes every item first
        for index, child in enumerate(node.value):
            try:
                items.append(self.value(child))
            except _ValueProblem as problem:
                if not problem.in_json:
                    raise problem.under(f"[{index}]") from None
                first = first or problem.under(f"[{index}]")
        if first is not None:
            raise first
        return items

    def fill(self, node: Node, out: dict[str, Any], pending: _Pending | None = None) -> None:
        """go-yaml's mapping(): keys in order, a merge applied where it stands, the last of equal keys wins
        (a key written twice is reported; a key that overrides a merged one is what merges are for).

        go-yaml decodes the whole mapping before sigs.k8s.io/yaml converts it to JSON, so the conversion's
        refusals wait in ``pending`` (shared with the merges into this mapping): a value's until a later equal key
        replaces it, a key's (null, or equal to another as JSON) to the end; go-yaml's own refusals are raised at
        once."""
        outermost = pending is None
        waiting = _Pending() if pending is None else pending
        explicit: set[str] | None = set() if self.duplicate is not None else None
        origins: dict[str, tuple[type, Any]] | None = None  # kept once a key is not a string
        for key_node, value_node in node.value:
            if _is_merge_key(key_node):
                self.merge(value_node, out, waiting)
                continue
            if type(key_node) is ScalarNode and key_node.tag == _PLAIN and not self.aliases:
                go_key = resolve_plain(key_node.value)
            else:
                go_key = self.go_value(key_node)
            try:
                key = _json_key(go_key, key_node)
                if origins is not None or type(go_key) is not str:
                    if origins is None:
                        origins = {k: (str, k) for k in out}
                    origin = origins.setdefault(key, (type(go_key), go_key))
                    if origin != (type(go_key), go_key):
                        raise _ValueProblem(f"key {json.dumps(key)} is also another key of this mapping written "
                                            f"differently ({self.reader} keeps one of the two at random)", key_node,
                                            kubectl_reads=True, in_json=True)
            except _ValueProblem as problem:
                if not problem.in_json:
                    raise
                waiting.keys.append(problem)
                self.decode_only(value_node)
                continue
            if explicit is not None:
                if key in explicit:
                    self.duplicate(key, key_node)  # type: ignore[misc]
                explicit.add(key)
            if waiting.values:
                waiting.values.pop(key, None)
            try:
                out[key] = self.value(value_node)
            except _ValueProblem as problem:
                if not problem.in_json:
                    raise problem.under(key) from None
                waiting.values[key] = problem.under(key)
                out.pop(key, None)
        if outermost and (waiting.keys or waiting.values):
            raise (waiting.keys or list(waiting.values.values()))[0]

    def decode_only(self, node: Node) -> None:
        """What go-yaml does with the value of a key the JSON conversion will refuse: decode it (and fail where
        decoding fails)."""
        try:
            self.value(node)
        except _ValueProblem as problem:
            if not problem.in_json:
                raise

    def merge(self, node: Node, out: dict[str, Any], pending: _Pending) -> None:
        """``<<: {..}``, ``<<: *alias`` or ``<<: [*a, *b]``: maps only; a list is applied last to first so
        that earlier entries win. go-yaml takes no step for the list itself."""
        if type(node) is SequenceNode:
            for child in reversed(node.value):
                self.merge_one(child, out, pending)
        else:
            self.merge_one(node, out, pending)

    def merge_one(self, node: Node, out: dict[str, Any], pending: _Pending) -> None:
        if type(node) is _AliasNode:
            if type(node.value) is not MappingNode:
                raise _ValueProblem("a merge key (<<) needs a mapping or a list of mappings", node)
            self.expand(node, lambda target: self.merge_one(target, out, pending))
            return
        if type(node) is not MappingNode:
            raise _ValueProblem("a merge key (<<) needs a mapping or a list of mappings", node)
        if self.aliases:
            self.step(node)
            self.active.add(id(node))
        duplicate, self.duplicate = self.duplicate, None  # merged keys overriding each other are the point
        try:
            self.fill(node, out, pending)
        finally:
            self.duplicate = duplicate
            if self.aliases:
                self.active.discard(id(node))


# ---------------------------------------------------------------------------------------------------------
# Composing nodes: libyaml's composer (fast) where it cannot differ from go-yaml's, ours over the event
# stream otherwise.

_CParser: Any = getattr(getattr(yaml, "_yaml", None), "CParser", None) if yaml.__with_libyaml__ else None

if _CParser is not None:
    class _FastComposer(_CParser):  # type: ignore[misc]
        """libyaml's composer with the tags this module needs instead of PyYAML's YAML 1.1 resolution."""

        def resolve(self, kind: type, value: str | None, implicit: tuple[bool, bool]) -> str:
            if kind is ScalarNode:
                return _PLAIN if implicit[0] else _TEXT
            return _COLLECTION

        def descend_resolver(self, parent: Node | None, index: Any) -> None:
            pass

        def ascend_resolver(self) -> None:
            pass


class _PyEvents(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python parser, for when libyaml is not built in."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


def _events(text: str) -> Any:
    return _CParser(text) if _CParser is not None else _PyEvents(text)


def _compose_from_events(text: str) -> tuple[Node | None, Any]:
    """The first document's node graph, composed as go-yaml composes it: aliases stay alias nodes, an anchor
    may be defined again (later aliases see the latest), an anchor is known inside its own node (a cycle the
    builder refuses), and the tag ``!`` makes a string. Returns the parser, to look past the document."""
    parser = _events(text)
    parser.get_event()  # stream start
    if parser.check_event(StreamEndEvent):
        return None, parser
    parser.get_event()  # document start
    anchors: dict[str, Node] = {}

    def compose() -> Node:
        event: Any = parser.get_event()
        start: Any = event.start_mark  # libyaml's marks and PyYAML's, alike but of two types
        end: Any = event.end_mark
        if isinstance(event, AliasEvent):
            if event.anchor not in anchors:
                raise yaml.composer.ComposerError(None, None, "found undefined alias", start)
            return _AliasNode(anchors[event.anchor], start, end)
        node: Node
        if isinstance(event, ScalarEvent):
            if _CParser is None and not event.value.isascii() and _LONE_SURROGATE.search(event.value):
                raise yaml.scanner.ScannerError("while parsing a quoted scalar", start,
                                                "found invalid Unicode character escape code", start)
            tag = event.tag
            if tag is None:
                tag = _PLAIN if event.implicit[0] else _TEXT
            elif tag == "!":
                tag = _NON_SPECIFIC
            node = ScalarNode(tag, event.value, start, end, event.style)
            if event.anchor is not None:
                anchors[event.anchor] = node
            return node
        if isinstance(event, SequenceStartEvent):
            node = SequenceNode(_COLLECTION, [], start, None, event.flow_style)
            if event.anchor is not None:
                anchors[event.anchor] = node
            while not parser.check_event(SequenceEndEvent):
                node.value.append(compose())
        else:
            assert isinstance(event, MappingStartEvent), event
            node = MappingNode(_COLLECTION, [], start, None, event.flow_style)
            if event.anchor is not None:
                anchors[event.anchor] = node
            while not parser.check_event(MappingEndEvent):
                key = compose()
                node.value.append((key, compose()))
        node.end_mark = parser.get_event().end_mark
        return node

    root = compose()
    parser.get_event()  # document end
    return root, parser


# Where libyaml's composer would hide what go-yaml sees. Both may match more than they must (inside a string);
# that costs only the slower composer. An anchor name is [0-9A-Za-z_-]+ and never follows such a character.
_ANCHOR = re.compile(r"(?<![0-9A-Za-z])&[0-9A-Za-z_-]")
_NON_SPECIFIC_TAG = re.compile(r"(?:^|[\s\[\]{},])!(?=\s|$)", re.MULTILINE)


# libyaml's composer recurses in C, one stack frame per level of nesting: some ten thousand levels overflow the
# stack and kill the process. It is used only where the text bounds the nesting far below that: flow levels
# need a "[" or "{" each, and block levels need a deeper column every second level, which only indentation
# and "- "/"? " indicators at the start of a line reach. Deeper documents go to the composer over events,
# which recurses in Python and stops with "nested too deeply".
_FAST_LIMIT = 2000
_DEEP_BLOCK = re.compile(rf"\n[ \t?-]{{{_FAST_LIMIT}}}")
_DEEP_BLOCK_START = re.compile(rf"[ \t?-]{{{_FAST_LIMIT}}}")


def _shallow(text: str) -> bool:
    """True when ``text`` cannot nest deeper than about 3 * ``_FAST_LIMIT`` levels."""
    return (text.count("[") + text.count("{") < _FAST_LIMIT and _DEEP_BLOCK.search(text) is None
            and _DEEP_BLOCK_START.match(text) is None)


def _compose(text: str) -> tuple[Node | None, Any, bool]:
    """The first document of ``text`` as a node graph, the parser positioned after it, and whether the
    document may hold aliases (only then are they :class:`_AliasNode` and must be counted)."""
    anchors = "&" in text and _ANCHOR.search(text) is not None
    if (_CParser is None or anchors or ("!" in text and _NON_SPECIFIC_TAG.search(text))
            or not _shallow(text)):
        node, parser = _compose_from_events(text)
        return node, parser, anchors
    parser = _FastComposer(text)
    return (parser.get_node() if parser.check_node() else None), parser, False


# ---------------------------------------------------------------------------------------------------------
# Streams: documents split as kubectl splits them.

@dataclass(frozen=True, slots=True)
class Document:
    """One document of a stream: ``index`` counts documents as YAML does (``---`` starts one; the first
    starts implicitly if content comes before any ``---``); ``value`` is None for an empty document."""

    index: int
    value: Any = None
    error: YAMLReadError | None = None
    is_json: bool = False  # read as JSON (its errors are JSON errors)


KUBECTL = "kubectl"   # the reader named in messages unless a caller names another


@dataclass(slots=True)
class Stream:
    """Every document of a stream, and what kubectl accepts silently but a reader should hear about:
    ``warnings`` as (document index, message) pairs, e.g. a repeated key whose last value wins."""

    documents: list[Document] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    reader: str = KUBECTL   # who reads the stream so, named in messages (the same go-yaml reading)


def _separators(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each line that starts with ``---``, without its line break. (``str.find`` rather than a
    multi-line regular expression: a manifest may hold a line of a megabyte, a base64 icon.)"""
    at = 0 if text.startswith("---") else text.find("\n---")
    while at != -1:
        start = at if at == 0 and text.startswith("---") else at + 1
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        yield start, end
        at = text.find("\n---", end)


def _chunks(text: str, reader: str) -> Iterator[tuple[int, int, str, YAMLReadError | None]]:
    """(document index, first line, text, separator problem) for each document, split at lines that start
    with ``---`` as kubectl's YAMLReader splits them (not as a YAML parser would). Indexes count as YAML
    does: each separator starts a document, and content before the first one is document 0."""
    index = 0
    begun = False  # has document ``index`` begun (by a separator, or by content before the first one)?
    start = line = line_counted_to = 0
    for sep_start, sep_end in _separators(text):
        body = text[start:sep_start]
        if not begun and not _only_comments(body):
            begun = True
        if body:
            yield index, line, body, None
        line += text.count("\n", line_counted_to, sep_start)
        line_counted_to = sep_start
        if begun:
            index += 1
        begun = True
        rest = text[sep_start + 3:sep_end].strip()
        if rest and not rest.startswith("#"):
            yield index, line, "", YAMLReadError('a document separator line holds more than "---" and a '
                                                 f"comment ({reader} refuses it)", line + 1, 4)
        start, line = sep_end + 1, line + 1
        line_counted_to = min(start, len(text))
    if start < len(text):
        yield index, line, text[start:], None


def _only_comments(text: str) -> bool:
    return all(not s or s.startswith("#") for s in (line.strip(" \t\r\ufeff") for line in text.split("\n")))


def _yaml_error(exc: yaml.YAMLError, line_offset: int, chunk: str) -> YAMLReadError:
    """PyYAML's problem and position, without its snippet of the offending text (it may be secret)."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow: say where, not which
        before = chunk[:exc.position] if isinstance(exc.position, int) else ""
        return YAMLReadError("a control character is not allowed (YAML allows tab and line breaks only)",
                             before.count("\n") + 1 + line_offset, len(before) - before.rfind("\n"))
    problem = getattr(exc, "problem", None) or type(exc).__name__
    context = getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None)
    text = f"{context}, {problem}" if context else str(problem)
    if mark is None:
        return YAMLReadError(text)
    return YAMLReadError(text, mark.line + 1 + line_offset, mark.column + 1)


def _compose_chunk(chunk: str) -> tuple[Node | None, Any, bool, str]:
    """``_compose`` with go-yaml's escapes in double-quoted scalars: ``\\'`` is a quote to go-yaml and an
    error to libyaml, so it is rewritten as ``\\x27`` where libyaml stops at it. Returns the text parsed."""
    while True:
        try:
            node, parser, aliases = _compose(chunk)
            return node, parser, aliases, chunk
        except yaml.scanner.ScannerError as exc:
            mark = exc.problem_mark
            if exc.problem is None or "unknown escape character" not in exc.problem or mark is None:
                raise
            at = next((i for i in (mark.index, mark.index - 1) if chunk.startswith("\\'", i)), None)
            if at is None:
                raise
            chunk = chunk[:at] + "\\x27" + chunk[at + 2:]


def _slash_escape(chunk: str, line_offset: int, reader: str) -> YAMLReadError | None:
    """go-yaml refuses ``\\/`` in a double-quoted scalar (a YAML 1.2 escape libyaml accepts)."""
    scanner = _events(chunk)
    try:
        while scanner.check_token():
            token = scanner.get_token()
            if isinstance(token, yaml.tokens.ScalarToken) and token.style == '"':
                raw = chunk[token.start_mark.index:token.end_mark.index]
                at = raw.find("\\")
                while at != -1:
                    if raw[at + 1:at + 2] == "/":
                        line = raw.count("\n", 0, at)
                        column = at - raw.rfind("\n", 0, at) if line else token.start_mark.column + at + 1
                        return YAMLReadError(f'the escape "\\/" is not YAML 1.1: {reader} refuses it',
                                             token.start_mark.line + line + 1 + line_offset, column)
                    at = raw.find("\\", at + 2)
    except yaml.YAMLError:
        return None  # the composer reports the syntax error
    return None


_DOCUMENT_END = re.compile(r"^\.\.\.(?=[ \t\r\n]|$)", re.MULTILINE)


def _read_yaml_document(chunk: str, line_offset: int, index: int, stream: Stream, *,
                        rest_unread: bool = False) -> Document:
    try:
        node, parser, aliases, chunk = _compose_chunk(chunk)
    except yaml.YAMLError as exc:
        return Document(index, error=_yaml_error(exc, line_offset, chunk))
    if node is None:
        return Document(index)
    try:
        trailing = None if parser.check_event(StreamEndEvent) else parser.peek_event().start_mark
    except yaml.YAMLError as exc:
        trailing = getattr(exc, "problem_mark", None) or node.end_mark
    if "\\/" in chunk:   # (in the first document: go-yaml never reads what follows it)
        slash = _slash_escape(chunk if trailing is None else chunk[:trailing.index], line_offset, stream.reader)
        if slash is not None:
            return Document(index, error=slash)
    if trailing is not None and not rest_unread:  # go-yaml reads a chunk's first document and never looks further
        after_marker = _DOCUMENT_END.search(chunk, node.end_mark.index, trailing.index) is not None
        return Document(index, error=YAMLReadError(
            f'content after a document end marker ("...") is dropped by {stream.reader}: start another document '
            'with "---" instead' if after_marker else
            f"content after the document's value is dropped by {stream.reader}: remove it, or start another document "
            'with "---"', trailing.line + 1 + line_offset, trailing.column + 1, kubectl_reads=True))

    def duplicate(key: str, key_node: Node) -> None:
        stream.warnings.append((index, f"key {json.dumps(key)} at line {key_node.start_mark.line + 1 + line_offset} "
                                       "repeats an earlier key of the same mapping: its last value is used, as "
                                       f"{stream.reader} does"))

    builder = _Builder(aliases, duplicate, stream.reader)
    try:
        return Document(index, builder.value(node))
    except _ValueProblem as problem:
        mark = problem.node.start_mark if problem.node is not None else None
        message = f"{problem.path}: {problem.message}" if problem.path else problem.message
        if mark is None:
            return Document(index, error=YAMLReadError(message, kubectl_reads=problem.kubectl_reads))
        return Document(index, error=YAMLReadError(message, mark.line + 1 + line_offset, mark.column + 1,
                                                   kubectl_reads=problem.kubectl_reads))
    except RecursionError:
        return Document(index, error=YAMLReadError("nested too deeply"))


def _read_yaml(text: str, stream: Stream, first_index: int = 0, *, first_only: bool = False) -> None:
    for index, line_offset, chunk, problem in _chunks(text, stream.reader):
        if first_only and index > 0:   # (chunks of document 0: comments before its "---", then its content)
            return
        if problem is not None:
            stream.documents.append(Document(index + first_index, error=problem))
            continue
        try:
            stream.documents.append(_read_yaml_document(chunk, line_offset, index + first_index, stream,
                                                        rest_unread=first_only))
        except RecursionError:
            stream.documents.append(Document(index + first_index, error=YAMLReadError("nested too deeply")))


# JSON, as Go's decoder and the API machinery read it.

def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


class _NumberTooLarge(ValueError):
    pass


def _json_int(text: str) -> Any:
    """An integer literal, as k8s.io/apimachinery's JSON reads it: int64, else the nearest float64."""
    if len(text) <= 18:  # int64 holds every integer of 18 digits
        return int(text)
    value = int(text) if len(text) <= 400 else None
    if value is not None and INT64_MIN <= value <= INT64_MAX:
        return value
    number = float(text)
    if math.isinf(number):
        raise _NumberTooLarge
    return go_json_number(number)


def _json_float(text: str) -> Any:
    """A number literal with a fraction or an exponent: a float64, as k8s.io/apimachinery's JSON reads it, here the
    number Go prints for it (a :class:`JSONFloat64` where that differs from the float's own whole value)."""
    number = float(text)
    if math.isinf(number):
        raise _NumberTooLarge
    printed = go_json_number(number)
    # beyond int64 an integer field's conversion overflows whichever digits are printed: no need to keep the float
    if type(printed) is int and printed != (exact := int(number)) and INT64_MIN <= exact <= INT64_MAX:
        return JSONFloat64(printed, number)
    return printed


_DECODER = json.JSONDecoder(parse_float=_json_float, parse_int=_json_int, parse_constant=_refuse_constant)
# Go's decoder checks a whole value's syntax before it converts a number; this one checks syntax alone
_SYNTAX = json.JSONDecoder(parse_float=len, parse_int=len, parse_constant=_refuse_constant)
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _replace_lone_surrogates(value: Any) -> Any:
    """Go's JSON decoder turns an escaped lone surrogate into U+FFFD; Python keeps it (and cannot encode it)."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v) for k, v in value.items()}
    return value


def _json_error(exc: json.JSONDecodeError) -> YAMLReadError:
    return YAMLReadError(f"{exc.msg}", exc.lineno, exc.colno)


def _read_json(text: str, stream: Stream, *, into_go_value: bool = False) -> None:
    """kubectl's YAMLOrJSONDecoder: JSON values one after another. When the first or the second fails to
    parse, the rest is read as YAML (and when the first fails both ways, the JSON error is the one reported).
    ``into_go_value``: each value is decoded into a Go map as it is read (operator-registry's declcfg), so a number
    too large for a float64 fails it as a syntax error does, and the stream falls back to YAML the same way."""
    position = _skip_json_space(text, 0)
    count = 0
    surrogates = _ESCAPED_SURROGATE.search(text) is not None
    while position < len(text):
        try:
            try:
                value, end = _DECODER.raw_decode(text, position)
            except _NumberTooLarge:
                _SYNTAX.raw_decode(text, position)   # a syntax error after the number is what Go meets
                if into_go_value:
                    raise json.JSONDecodeError("a number is too large for a float64", text, position) from None
                stream.documents.append(Document(count, error=YAMLReadError("a number is too large"), is_json=True))
                return
        except RecursionError:
            stream.documents.append(Document(count, error=YAMLReadError("nested too deeply"), is_json=True))
            return
        except ValueError as exc:  # JSONDecodeError, or NaN/Infinity, which Go's decoder refuses
            error = (_json_error(exc) if isinstance(exc, json.JSONDecodeError)
                     else YAMLReadError("NaN and Infinity are not JSON"))
            if count > 1:
                stream.documents.append(Document(count, error=error, is_json=True))
                return
            if count:  # kubectl goes on as YAML after the whitespace up to the first newline
                blank = _skip_json_space(text, position)
                newline = text.find("\n", position, blank)
                position = newline + 1 if newline != -1 else blank
            before = len(stream.documents)
            _read_yaml(text[position:], stream, first_index=count)
            first = next((d for d in stream.documents[before:] if d.error or d.value is not None), None)
            if count == 0 and first is not None and first.error is not None and not first.error.kubectl_reads:
                stream.documents[stream.documents.index(first)] = Document(first.index, error=error, is_json=True)
            return
        if surrogates:
            value = _replace_lone_surrogates(value)
        stream.documents.append(Document(count, value, is_json=True))
        count += 1
        position = _skip_json_space(text, end)


def _skip_json_space(text: str, position: int) -> int:
    return _JSON_SPACE.match(text, position).end()  # type: ignore[union-attr]


def read_stream(text: str, *, unmarshal: bool = False, into_go_value: bool = False,
                reader: str = KUBECTL) -> Stream:
    """Every document of ``text`` as kubectl reads it, empty ones included (``value`` None). A stream whose
    first non-space character is ``{`` is read as JSON, as kubectl sniffs it (whatever the file's name).

    ``unmarshal``: as sigs.k8s.io/yaml's ``Unmarshal`` reads a file instead (OLM reads a bundle's ``metadata/``
    so): YAML always, JSON included (``"\\/"`` is no YAML escape), the first document only, and nothing after its
    value (go-yaml never looks further). ``into_go_value``: a JSON stream's values decoded into Go maps as they are
    read, as a File-Based Catalog's are (see :func:`_read_json`). ``reader``: who reads the text so, named in
    messages (``OLM v1`` for a bundle's files, ``operator-registry`` for a catalog's: the same go-yaml reading
    through sigs.k8s.io/yaml)."""
    stream = Stream(reader=reader)
    if unmarshal:
        _read_yaml(text, stream, first_only=True)
    elif text.lstrip()[:1] == "{":
        _read_json(text, stream, into_go_value=into_go_value)
    else:
        _read_yaml(text, stream)
    return stream


def load(text: str) -> Any:
    """The single document of ``text`` (None when empty); raises :class:`YAMLReadError` naming the document
    when there are several or one cannot be read."""
    documents = [d for d in read_stream(text).documents if d.error is not None or d.value is not None]
    for document in documents:
        if document.error is not None:
            raise document.error
    if len(documents) > 1:
        raise YAMLReadError(f"expected one document, found {len(documents)}")
    return documents[0].value if documents else None


# ---------------------------------------------------------------------------------------------------------
# Writing: YAML that kubectl reads back as the same JSON.
#
# PyYAML quotes a string only where its own YAML 1.1 resolver would read the plain scalar as something else.
# go-yaml v2 reads more plain scalars as non-strings (``y``, ``n``, ``1e3``, ``+1E5``, ``0o17``, ``08``), so a
# string written plain by PyYAML could reach the API server as a boolean or a number: ``cosctl render | kubectl
# apply -f -`` would change a ConfigMap's ``"y"`` into ``true``, and a key ``n`` into ``"false"``.


def reads_back_as_string(text: str) -> bool:
    """Whether kubectl reads ``text``, written as a plain (unquoted) scalar, back as the same string."""
    value = resolve_plain(text)
    return type(value) is str and value == text


class SafeDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]  # libyaml's emitter
    """PyYAML's safe dumper, with every string kubectl would not read back as itself single-quoted."""


def represent_str(dumper: Any, data: str) -> Any:
    """A string as a plain scalar where kubectl reads it back unchanged, else single-quoted (the emitter still
    picks double quotes where single quotes cannot hold the string)."""
    return dumper.represent_scalar("tag:yaml.org,2002:str", data,
                                   style=None if reads_back_as_string(data) else "'")


SafeDumper.add_representer(str, represent_str)


def represent_go_number(dumper: Any, data: int) -> Any:
    """A :class:`RoundedUint64` or :class:`JSONFloat64`: the number Go prints for it, as an integer (``cosctl render``
    of a bundle holding one used to stop with an internal error)."""
    return dumper.represent_int(int(data))


SafeDumper.add_representer(RoundedUint64, represent_go_number)
SafeDumper.add_representer(JSONFloat64, represent_go_number)
