"""A bundle's configuration: the schema OLM v1 derives from the CSV's install modes, strict validation with OLM
v1's messages, and the ``deploymentConfig`` decoding step (spec §2).

Three steps, each as OLM v1 takes them (``internal/operator-controller/applier/provider.go``):

1. :func:`config_schema`: the base schema (``registryv1bundleconfig.json``, shipped next to this module and
   generated from Kubernetes' OpenAPI document by ``tools/gen_registryv1_schema.py``; see its docstring to
   regenerate) with ``watchNamespace`` replaced, made required, or removed according to the install modes.
2. Validation with the ``jsonschema`` library (draft-07; the formats ``ownNamespaceInstallMode`` and
   ``singleNamespaceInstallMode`` compare with the install namespace). OLM validates with
   santhosh-tekuri/jsonschema v6 and words the errors from that library's ``BasicOutput``, so the messages
   depend on the *shape* of that library's error tree, not only on what is wrong: the tree is rebuilt here
   from ``jsonschema``'s errors (:class:`_GoTree`) with the Go library's rules (a failed ``type``, ``const``,
   ``enum`` or ``format`` hides the other keywords of its schema; a failed ``$ref`` and a failed ``allOf`` are
   tree nodes of their own; more than one error of a schema is a group), then flattened as ``BasicOutput``
   flattens it, including its quirk: a failed ``$ref`` with a single cause is listed as its first descendant
   with the message ``validation failed``, and that descendant's own causes are dropped. That is why an error
   inside a Kubernetes type usually reads ``invalid configuration: validation failed``: OLM says exactly that.
3. ``deploymentConfig`` decoding (:class:`_Decoder`), what OLM's ``json.Unmarshal`` into v0's
   ``SubscriptionConfig`` does after the schema: quantities parsed (the first bad one stops it), integers
   checked against their Go type (the first overflow is reported), unknown keys dropped, keys matched to fields
   case-insensitively as Go's ``encoding/json`` matches them.

Message order: where OLM's order is deterministic it is mirrored (``required`` before the properties, the
properties before ``additionalProperties``, an ``anyOf`` before its branches, ``minLength`` before
``maxLength`` before ``pattern``). Errors on different properties of one object come in Go's map order in
OLM, which is random; here they come in the configuration's key order. For the same reason, of several unknown
fields of one object OLM names one at random (``unknown field "a"``); here it is the first in key order.
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from importlib import resources
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft7Validator, FormatChecker, ValidationError, validators

from common.bundle import k8syaml
from common.bundle.registryv1.model import BundleInputError, ConfigurationError, RegistryV1
from common.contract.objects import Obj, copy_json

SCHEMA_RESOURCE: Final = "registryv1bundleconfig.json"
WATCH_NAMESPACE: Final = "watchNamespace"
DEPLOYMENT_CONFIG: Final = "deploymentConfig"
NAMESPACE_PATTERN: Final = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
NAMESPACE_MAX_LENGTH: Final = 63
FORMAT_OWN_NAMESPACE: Final = "ownNamespaceInstallMode"
FORMAT_SINGLE_NAMESPACE: Final = "singleNamespaceInstallMode"
WATCH_NAMESPACE_DESCRIPTION: Final = "The namespace that the operator should watch for custom resources"

# The prefixes OLM v1's provider puts before a refused configuration and a refused deploymentConfig.
CONFIG_PREFIX: Final = "invalid ClusterExtension configuration: "
DEPLOYMENT_CONFIG_PREFIX: Final = "invalid deploymentConfig: "

ALL_NAMESPACES, OWN_NAMESPACE, SINGLE_NAMESPACE = "AllNamespaces", "OwnNamespace", "SingleNamespace"


@dataclass(frozen=True, slots=True)
class BundleConfig:
    """A validated configuration: the namespace to watch (``None``: all namespaces) and the decoded
    ``deploymentConfig`` (``None`` when not given).

    ``deployment_config`` holds what OLM's typed ``SubscriptionConfig`` holds, as JSON: only known fields, under
    their own names (``Value`` given for ``value`` is ``value``), quantities in canonical form (``0.5Gi`` ->
    ``512Mi``), integers as ``int``. Fields given with a zero value (``key: ""``) are kept as given; Go cannot
    tell them from absent ones and omits most of them when it prints the rendered objects.
    """

    watch_namespace: str | None
    deployment_config: dict[str, Any] | None


# --- the schema --------------------------------------------------------------------------------------------


@functools.cache
def _base_schema_text() -> str:
    return resources.files(__package__).joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")


def base_schema() -> dict[str, Any]:
    """A fresh copy of the base schema (callers may change it)."""
    schema: dict[str, Any] = json.loads(_base_schema_text())
    return schema


def supported_install_modes(csv: Obj) -> frozenset[str]:
    """The install mode types the CSV marks ``supported: true`` (OLM's set of ``{type, supported}`` pairs,
    asked for ``supported: true``)."""
    modes = ((csv.get("spec") or {}).get("installModes") or []) if isinstance(csv.get("spec"), dict) else []
    if not isinstance(modes, list):
        return frozenset()
    return frozenset(m["type"] for m in modes
                     if isinstance(m, dict) and isinstance(m.get("type"), str) and m.get("supported") is True)


def config_schema(bundle: RegistryV1) -> dict[str, Any]:
    """The JSON Schema (draft-07) a configuration of ``bundle`` must satisfy (spec §2's table).

    OLM v1's ``buildBundleConfigSchema``: AllNamespaces only (or none of Own/Single) removes ``watchNamespace``;
    otherwise it is a DNS-1123 label (1-63 characters), required unless AllNamespaces is supported (then
    ``null`` is allowed too), with format ``ownNamespaceInstallMode`` when OwnNamespace is supported without
    SingleNamespace and ``singleNamespaceInstallMode`` for the reverse.
    """
    modes = supported_install_modes(bundle.csv)
    schema = base_schema()
    properties: dict[str, Any] = schema["properties"]
    own, single = OWN_NAMESPACE in modes, SINGLE_NAMESPACE in modes
    if not (own or single):
        properties.pop(WATCH_NAMESPACE, None)
        _set_required(schema, required=False)
        return schema
    value: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": NAMESPACE_MAX_LENGTH,
                             "pattern": NAMESPACE_PATTERN}
    if own != single:
        value["format"] = FORMAT_OWN_NAMESPACE if own else FORMAT_SINGLE_NAMESPACE
    required = ALL_NAMESPACES not in modes
    if required:
        properties[WATCH_NAMESPACE] = {"description": WATCH_NAMESPACE_DESCRIPTION, **value}
    else:
        properties[WATCH_NAMESPACE] = {"description": WATCH_NAMESPACE_DESCRIPTION,
                                       "anyOf": [{"type": "null"}, value]}
    _set_required(schema, required=required)
    return schema


def _set_required(schema: dict[str, Any], *, required: bool) -> None:
    """Add ``watchNamespace`` to, or remove it from, the top-level ``required`` list, keeping the others."""
    current = [name for name in schema.get("required", []) if name != WATCH_NAMESPACE]
    if required:
        current.append(WATCH_NAMESPACE)
    if current:
        schema["required"] = current
    else:
        schema.pop("required", None)


# --- Go's quoting, for byte-exact messages -------------------------------------------------------------------


def _go_printable(char: str) -> bool:
    """Go's ``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


_GO_ESCAPES: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                      "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (what ``%q`` prints for a string)."""
    out = ['"']
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif _go_printable(char):
            out.append(char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        elif 0xD800 <= ord(char) <= 0xDFFF:  # not UTF-8: Go sees U+FFFD's bytes
            out.append("\\ufffd")
        elif ord(char) > 0xFFFF:
            out.append(f"\\U{ord(char):08x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    out.append('"')
    return "".join(out)


def _single_quote(text: str) -> str:
    """The jsonschema library's ``quote``: Go-quoted, then re-quoted with single quotes."""
    quoted = go_quote(text).replace('\\"', '"').replace("'", "\\'")
    return "'" + quoted[1:-1] + "'"


_HTML_ESCAPES: Final = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_JSON_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                        **_HTML_ESCAPES}


def _go_json_string(text: str) -> str:
    out = ['"']
    for char in text:
        if char in _JSON_ESCAPES:
            out.append(_JSON_ESCAPES[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        elif 0xD800 <= ord(char) <= 0xDFFF:  # not UTF-8: Go writes U+FFFD
            out.append("\\ufffd")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def go_json(value: Any) -> str:
    """``value`` as Go's ``json.Marshal`` writes it: compact, map keys sorted, ``<``, ``>``, ``&``, U+2028 and
    U+2029 escaped, floats in Go's shortest form (``1e+21``, ``1e-7``)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_json_float(value)
    if isinstance(value, str):
        return _go_json_string(value)
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_go_json_string(k) + ":" + go_json(value[k]) for k in sorted(value)) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def go_json_compact(text: str) -> str:
    """Go's ``json.Compact`` with HTML escaping (what ``json.Marshal`` does to a ``json.RawMessage``): the
    text's own escapes and key order are kept."""
    out: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char in " \t\n\r":
            continue
        elif char == '"':
            in_string = True
        out.append(_HTML_ESCAPES.get(char, char))
    return "".join(out)


def _shortest(number: float) -> tuple[str, int]:
    """The shortest digits that read back as ``abs(number)`` (Go's and Python's ``repr`` agree on them) and the
    decimal point's position: the value is 0.DIGITS x 10**point."""
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0") or "0", point


def _fixed(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def _exponent(digits: str, point: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exponent = point - 1
    return f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"


def go_json_float(number: float) -> str:
    """A float64 as Go's ``encoding/json`` writes it: exponent form outside [1e-6, 1e21), as ``1e+21`` and
    ``1e-7``."""
    if number == 0:
        return "-0" if math.copysign(1.0, number) < 0 else "0"
    sign = "-" if number < 0 else ""
    digits, point = _shortest(number)
    if 1e-6 <= abs(number) < 1e21:
        return sign + _fixed(digits, point)
    return sign + _exponent(digits, point).replace("e-0", "e-")


def _go_v_float(number: float) -> str:
    """A float64 as Go's ``%v`` prints it (``%g`` with the shortest digits: exponent form from 1e+06 on)."""
    if number == 0:
        return "-0" if math.copysign(1.0, number) < 0 else "0"
    sign = "-" if number < 0 else ""
    digits, point = _shortest(number)
    if point - 1 < -4 or point - 1 >= 6:
        return sign + _exponent(digits, point)
    return sign + _fixed(digits, point)


def _go_display(value: Any) -> str:
    """The jsonschema library's ``display`` of a value: ``%v``, strings single-quoted, collections ``value``."""
    if isinstance(value, str):
        return _single_quote(value)
    if isinstance(value, (list, dict)):
        return "value"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _go_v_float(float(value))


def go_fold(name: str) -> str:
    """Go's ``encoding/json`` key folding: ASCII letters upper-cased, other letters to the smallest of their
    case orbit (so ``\u212a``, the Kelvin sign, and ``\u017f``, the long s, match ``k`` and ``s``)."""
    out = []
    for char in name:
        if char.isascii():
            out.append(char.upper())
        else:
            orbit = {char, char.upper(), char.lower(), char.upper().lower(), char.lower().upper()}
            out.append(min(c for c in orbit if len(c) == 1))
    return "".join(out)


def _json_type(value: Any) -> str:
    """The type name the jsonschema library reports for a decoded JSON value (numbers are float64 in Go)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# --- the formats ---------------------------------------------------------------------------------------------


class _FormatFailure(Exception):
    """A failed format; ``str()`` is the reason, as the Go format function words it."""


def _format_checker(install_namespace: str) -> FormatChecker:
    """The formats the Go library asserts in OLM's schema: OLM's two namespace formats and ``date-time`` (a
    Kubernetes ``Time``). Others (``int32``, ``int64``) are unknown to it and ignored, as they are here."""
    checker = FormatChecker(formats=())

    @checker.checks(FORMAT_OWN_NAMESPACE, raises=_FormatFailure)
    def own(value: object) -> bool:
        if install_namespace and isinstance(value, str) and value != install_namespace:
            raise _FormatFailure(
                f"invalid value {go_quote(value)}: must be {go_quote(install_namespace)} (the namespace where the "
                "operator is installed) because this operator only supports OwnNamespace install mode")
        return True

    @checker.checks(FORMAT_SINGLE_NAMESPACE, raises=_FormatFailure)
    def single(value: object) -> bool:
        if install_namespace and isinstance(value, str) and value == install_namespace:
            raise _FormatFailure(
                f"invalid value {go_quote(value)}: must be different from {go_quote(install_namespace)} (the install "
                "namespace) because this operator uses SingleNamespace install mode to watch a different namespace")
        return True

    @checker.checks("date-time", raises=_FormatFailure)
    def date_time(value: object) -> bool:
        if isinstance(value, str):
            problem = _date_time_problem(value.encode("utf-8", "surrogatepass"))
            if problem:
                raise _FormatFailure(problem)
        return True

    return checker


def _go_atoi(text: bytes) -> int | None:
    """Go's ``strconv.Atoi``: an optional sign and decimal digits, nothing else."""
    return int(text) if re.fullmatch(rb"[+-]?[0-9]+", text) else None


def _time_quote(text: bytes) -> str:
    """The ``time`` package's quote: bytes outside printable ASCII as ``\\xNN``."""
    out = ['"']
    for byte in text:
        if byte >= 0x80 or byte < 0x20:
            out.append(f"\\x{byte:02x}")
        else:
            out.append(("\\" if byte in b'"\\' else "") + chr(byte))
    return "".join(out) + '"'


def _date_problem(text: bytes) -> str | None:
    """Go's ``time.Parse("2006-01-02", text)`` error, or None."""
    def cannot(rest: bytes, element: str) -> str:
        return (f"parsing time {_time_quote(text)} as \"2006-01-02\": cannot parse {_time_quote(rest)} as "
                f"\"{element}\"")

    rest = text
    if len(rest) < 4 or not rest[:4].isdigit():  # Go: four characters, the first a digit, read by atoi
        return cannot(rest, "2006")
    year = int(rest[:4])
    rest = rest[4:]
    numbers: list[int] = []
    for element in ("01", "02"):
        if not rest.startswith(b"-"):
            return cannot(rest, "-")
        rest = rest[1:]
        if len(rest) < 2 or not rest[:2].isdigit():
            return cannot(rest, element)
        numbers.append(int(rest[:2]))
        rest = rest[2:]
        if element == "01" and not 1 <= numbers[0] <= 12:
            return f"parsing time {_time_quote(text)}: month out of range"
    if rest:
        return f"parsing time {_time_quote(text)}: extra text: {_time_quote(rest)}"
    month, day = numbers
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    if not 1 <= day <= days:
        return f"parsing time {_time_quote(text)}: day out of range"
    return None


def _time_problem(text: bytes) -> str | None:
    """The Go library's ``validateTime`` (RFC 3339 ``full-time``), byte for byte."""
    if len(text) < 9:
        return "less than 9 characters long"
    if text[2:3] != b":" or text[5:6] != b":":
        return "missing colon in correct place"
    hms: list[int] = []
    for token in text[:8].split(b":", 2):
        number = _go_atoi(token)
        if number is None:
            return "invalid hour/min/sec"
        if number < 0:
            return "non-positive hour/min/sec"
        hms.append(number)
    if len(hms) != 3:
        return "missing hour/min/sec"
    hour, minute, second = hms
    if hour > 23 or minute > 59 or second > 60:
        return "hour/min/sec out of range"
    rest = text[8:]
    if rest.startswith(b"."):
        digits = len(rest[1:]) - len(rest[1:].lstrip(b"0123456789"))
        if digits == 0:
            return "no digits in second fraction"
        rest = rest[1 + digits:]
    if rest not in (b"z", b"Z"):
        if len(rest) != 6:
            return "offset must be 6 characters long"
        if rest[:1] not in (b"+", b"-"):
            return "offset must begin with plus/minus"
        sign = -1 if rest[:1] == b"+" else 1
        rest = rest[1:]
        if rest[2:3] != b":":
            return "missing colon in offset in correct place"
        offset: list[int] = []
        for token in rest.split(b":", 1):
            number = _go_atoi(token)
            if number is None:
                return "invalid hour/min in offset"
            if number < 0:
                return "non-positive hour/min in offset"
            offset.append(number)
        if offset[0] > 23 or offset[1] > 59:
            return "hour/min in offset out of range"
        total = hour * 60 + minute + sign * (offset[0] * 60 + offset[1])
        if total < 0:
            total += 24 * 60
        hour, minute = total // 60, total % 60
    if second >= 60 and (hour != 23 or minute != 59):
        return "invalid leap second"
    return None


def _date_time_problem(text: bytes) -> str | None:
    """The Go library's ``validateDateTime`` (RFC 3339 ``date-time``) error text, or None."""
    if len(text) < 20:
        return "less than 20 characters long"
    if text[10:11] not in (b"t", b"T"):
        return "11th character must be t or T"
    if problem := _date_problem(text[:10]):
        return f"invalid date element: {problem}"
    if problem := _time_problem(text[11:]):
        return f"invalid time element: {problem}"
    return None


# --- validation --------------------------------------------------------------------------------------------


def _go_regex(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled for Go's regexp semantics where they differ from Python's on schema patterns: ``$``
    (outside a class) is the end of the text, never before a final newline."""
    out: list[str] = []
    in_class = escaped = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            out.append(r"\Z")
            continue
        out.append(char)
    return re.compile("".join(out))


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _go_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# draft-07 with Go's regular-expression anchors (the only keyword whose meaning differs between the libraries on
# this schema; tests/registryv1/test_config.py checks the schema uses no keyword this module does not mirror).
_Validator = validators.extend(Draft7Validator, {"pattern": _pattern})

# Keywords whose failure in the Go library returns at once, hiding every other keyword of the same schema.
_EXCLUSIVE: Final = ("type", "const", "enum", "format")
SUPPORTED_KEYWORDS: Final = frozenset({
    "type", "const", "enum", "format", "$ref", "properties", "patternProperties", "additionalProperties",
    "required", "minProperties", "maxProperties", "items", "minItems", "maxItems", "uniqueItems", "minLength",
    "maxLength", "pattern", "allOf", "anyOf", "oneOf", "not",
})


@dataclass(eq=False)
class _GoError:
    """A node of the Go library's error tree: its kind, instance location, message and causes."""

    kind: str
    location: tuple[str, ...]
    message: str
    causes: list[_GoError] = field(default_factory=list)
    detail: tuple[Any, ...] = ()


@dataclass(eq=False)
class _Application:
    """One schema applied to one instance value: the keywords that failed there and the sub-applications."""

    schema: Any
    instance: Any
    location: tuple[str, ...]
    failed: dict[str, list[ValidationError]] = field(default_factory=dict)
    children: dict[tuple[Any, ...], _Application] = field(default_factory=dict)

    def child(self, edge: tuple[Any, ...], schema: Any, instance: Any, token: str | None) -> _Application:
        found = self.children.get(edge)
        if found is None:
            location = self.location if token is None else (*self.location, token)
            found = self.children[edge] = _Application(schema, instance, location)
        return found


class _GoTree:
    """The santhosh-tekuri/jsonschema error tree for one failed validation, rebuilt from ``jsonschema``'s
    errors, and flattened as that library's ``BasicOutput`` flattens it."""

    def __init__(self, schema: dict[str, Any], validator: Any, instance: Any) -> None:
        self.schema = schema
        self.validator = validator
        self.root = _Application(schema, instance, ())

    def add(self, error: ValidationError) -> None:
        """Record ``error`` (and, for ``anyOf``/``oneOf``, its branches' errors) where it happened."""
        self._insert(error)
        for sub in error.context or ():
            self.add(sub)

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"unsupported $ref {ref!r}")
        node: Any = self.schema
        for token in ref[2:].split("/"):
            node = node[token.replace("~1", "/").replace("~0", "~")]
        return node

    def _insert(self, error: ValidationError) -> None:
        app = self.root
        schema_path, instance_path = list(error.absolute_schema_path), list(error.absolute_path)
        while True:
            schema = app.schema
            if isinstance(schema, dict) and "$ref" in schema:  # draft-07: a $ref hides its siblings
                app = app.child(("$ref",), self._resolve(schema["$ref"]), app.instance, None)
                continue
            keyword = schema_path.pop(0)
            if not schema_path:
                app.failed.setdefault(str(keyword), []).append(error)
                return
            if keyword == "properties":
                name = schema_path.pop(0)
                instance_path.pop(0)
                app = app.child(("properties", name), schema["properties"][name], app.instance[name], str(name))
            elif keyword == "patternProperties":
                pattern, key = schema_path.pop(0), instance_path.pop(0)
                app = app.child(("patternProperties", pattern, key), schema["patternProperties"][pattern],
                                app.instance[key], str(key))
            elif keyword == "additionalProperties":
                key = instance_path.pop(0)
                app = app.child(("additionalProperties", key), schema["additionalProperties"], app.instance[key],
                                str(key))
            elif keyword == "items":
                items = schema["items"]
                if isinstance(items, list):
                    items = items[int(schema_path.pop(0))]
                index = instance_path.pop(0)
                app = app.child(("items", index), items, app.instance[index], str(index))
            elif keyword in ("allOf", "anyOf", "oneOf"):
                index = schema_path.pop(0)
                app = app.child((keyword, index), schema[keyword][index], app.instance, None)
            else:
                raise ValueError(f"unsupported keyword {keyword!r} in the configuration schema")

    # -- the Go library's validation result, per application --

    def result(self, app: _Application | None) -> _GoError | None:
        if app is None:
            return None
        errors = self._errors(app)
        if not errors:
            return None
        if len(errors) == 1:
            return errors[0]
        return _GoError("group", app.location, "validation failed", errors)

    def _errors(self, app: _Application) -> list[_GoError]:
        schema, instance, failed = app.schema, app.instance, app.failed
        for keyword in _EXCLUSIVE:
            if keyword in failed:
                return [self._leaf(app, keyword)]
        if isinstance(schema, dict) and "$ref" in schema:
            target = self.result(app.children.get(("$ref",)))
            if target is None:
                return []
            causes = target.causes if target.kind == "group" else [target]
            return [_GoError("reference", app.location, "validation failed", causes)]
        if not isinstance(schema, dict):
            return []
        out: list[_GoError] = []

        def leaves(*keywords: str) -> None:
            out.extend(self._leaf(app, k) for k in keywords if k in failed)

        def child(edge: tuple[Any, ...]) -> None:
            found = self.result(app.children.get(edge))
            if found is not None:
                out.append(found)

        if isinstance(instance, dict):
            leaves("minProperties", "maxProperties", "required")
            for key in instance:
                child(("properties", key))
                for pattern in schema.get("patternProperties") or {}:
                    child(("patternProperties", pattern, key))
                child(("additionalProperties", key))
            leaves("additionalProperties")
        elif isinstance(instance, list):
            leaves("minItems", "maxItems", "uniqueItems")
            for index in range(len(instance)):
                child(("items", index))
        elif isinstance(instance, str):
            leaves("minLength", "maxLength", "pattern")
        leaves("not")
        branches = [self.result(app.children.get(("allOf", i))) for i in range(len(schema.get("allOf") or []))]
        if any(branches):
            out.append(_GoError("allOf", app.location, "'allOf' failed", [b for b in branches if b]))
        for keyword in ("anyOf", "oneOf"):
            if keyword in failed:
                out.append(self._combinator(app, keyword))
        return out

    def _combinator(self, app: _Application, keyword: str) -> _GoError:
        count = len(app.schema[keyword])
        if keyword == "oneOf" and not any(e.context for e in app.failed[keyword]):
            valid = [i for i in range(count)
                     if self.validator.evolve(schema=app.schema[keyword][i]).is_valid(app.instance)]
            return _GoError("oneOf", app.location, f"'oneOf' failed, subschemas {valid[0]}, {valid[1]} matched")
        causes = [c for c in (self.result(app.children.get((keyword, i))) for i in range(count)) if c]
        message = "'anyOf' failed" if keyword == "anyOf" else "'oneOf' failed, none matched"
        return _GoError(keyword, app.location, message, causes)

    def _leaf(self, app: _Application, keyword: str) -> _GoError:
        schema, instance, location = app.schema, app.instance, app.location
        if keyword == "type":
            wanted = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            order = ["null", "boolean", "number", "integer", "string", "array", "object"]
            want = " or ".join(t for t in order if t in wanted)
            return _GoError("type", location, f"got {_json_type(instance)}, want {want}")
        if keyword == "required":
            missing = [name for name in schema["required"] if name not in instance]
            if len(missing) == 1:
                return _GoError("required", location, f"missing property {_single_quote(missing[0])}")
            return _GoError("required", location,
                            f"missing properties {', '.join(_single_quote(m) for m in missing)}")
        if keyword == "additionalProperties":
            patterns = [_go_regex(p) for p in schema.get("patternProperties") or {}]
            extra = [k for k in instance
                     if k not in (schema.get("properties") or {}) and not any(p.search(k) for p in patterns)]
            return _GoError("additionalProperties", location,
                            f"additional properties {', '.join(_single_quote(k) for k in extra)} not allowed")
        if keyword == "format":
            reason = next((str(e.cause) for e in app.failed["format"] if e.cause is not None), "")
            return _GoError("format", location, f"{_go_display(instance)} is not valid {schema['format']}: {reason}")
        if keyword in ("minLength", "maxLength"):
            got, want = len(instance), schema[keyword]
            return _GoError(keyword, location, f"{keyword}: got {got}, want {want}", detail=(got, want))
        if keyword == "pattern":
            message = f"{_single_quote(instance)} does not match pattern {_single_quote(schema['pattern'])}"
            return _GoError("pattern", location, message, detail=(schema["pattern"],))
        if keyword in ("minProperties", "maxProperties", "minItems", "maxItems"):
            return _GoError(keyword, location, f"{keyword}: got {len(instance)}, want {schema[keyword]}")
        if keyword == "enum":
            values = schema["enum"]
            if any(isinstance(v, (list, dict)) for v in values):
                return _GoError("enum", location, "'enum' failed")
            if len(values) == 1:
                return _GoError("enum", location, f"value must be {_go_display(values[0])}")
            return _GoError("enum", location, f"value must be one of {', '.join(_go_display(v) for v in values)}")
        if keyword == "const":
            want = schema["const"]
            message = "'const' failed" if isinstance(want, (list, dict)) else f"value must be {_go_display(want)}"
            return _GoError("const", location, message)
        if keyword == "not":
            return _GoError("not", location, "'not' failed")
        if keyword == "uniqueItems":
            seen: list[Any] = []
            for j, item in enumerate(instance):
                for i, earlier in enumerate(seen):
                    if earlier == item and type(earlier) is type(item):
                        return _GoError("uniqueItems", location, f"items at {i} and {j} are equal")
                seen.append(item)
        raise ValueError(f"unsupported keyword {keyword!r} in the configuration schema")

    # -- BasicOutput and OLM's wording --

    def messages(self) -> list[str]:
        """OLM's ``formatSingleError`` for each unit of ``BasicOutput``, in order."""
        top = self.result(self.root)
        if top is None:
            return []
        causes = top.causes if top.kind == "group" else [top]
        return [_olm_message(location, error) for location, error in _flatten(causes)]


def _flatten(causes: list[_GoError]) -> list[tuple[tuple[str, ...], _GoError]]:
    """``BasicOutput``'s flat list under a node with ``causes``: (instance location, error kind) per unit.

    Each cause is listed, then its own flattened causes; a ``$ref`` error with exactly one cause is listed
    instead as the first unit of its own list, under the ``$ref``'s kind, and the rest of that list is lost
    (the Go library's flattening does exactly this).
    """
    units: list[tuple[tuple[str, ...], _GoError]] = []
    for cause in causes:
        below = _flatten(cause.causes)
        if cause.kind == "reference" and len(cause.causes) == 1:
            units.append((below[0][0], cause))
        else:
            units.append((cause.location, cause))
            units.extend(below)
    return units


def _field_path(location: tuple[str, ...]) -> str:
    """OLM's ``buildFieldPath``: the JSON pointer (``~0``/``~1`` escapes) with slashes as dots."""
    pointer = "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in location)
    return "" if pointer in ("", "/") else pointer[1:].replace("/", ".")


def _quoted_name(message: str) -> str:
    """OLM's ``extractFieldNameFromMessage``: the text between the message's first two single quotes."""
    start = message.find("'")
    if start < 0:
        return ""
    end = message.find("'", start + 1)
    return message[start + 1:end] if end >= 0 else ""


def _olm_message(location: tuple[str, ...], error: _GoError) -> str:
    """OLM's ``formatSingleError`` for one unit."""
    kind, message, path = error.kind, error.message, _field_path(location)
    if kind == "required":
        name = _quoted_name(message)
        return f"required field {go_quote(name)} is missing" if name else "required field is missing"
    if kind == "additionalProperties":
        name = _quoted_name(message)
        return f"unknown field {go_quote(name)}" if name else "unknown field"
    if kind == "type":
        if not path:
            return f"invalid type: {message}"
        if "got null" in message:
            return f"required field {go_quote(path)} is missing"
        return f"invalid type for field {go_quote(path)}: {message}"
    if kind == "format":
        return f"invalid format for field {go_quote(path)}: {message}" if path else f"invalid format: {message}"
    if kind == "anyOf":
        return f"invalid value for field {go_quote(path)}" if path else "invalid value"
    if kind in ("minLength", "maxLength") and path:
        got, want = error.detail
        bound = "maximum" if kind == "maxLength" else "minimum"
        return f"field {go_quote(path)} must have {bound} length of {want} (len={got})"
    if kind == "pattern" and path:
        return f"field {go_quote(path)} must match pattern {go_quote(error.detail[0])}"
    return message


def _schema_messages(schema: dict[str, Any], instance: Any, install_namespace: str) -> list[str]:
    """OLM's messages for ``instance`` against ``schema`` (empty when it is valid)."""
    validator = _Validator(schema, format_checker=_format_checker(install_namespace))
    errors = list(validator.iter_errors(instance))
    if not errors:
        return []
    tree = _GoTree(schema, validator, instance)
    for error in errors:
        tree.add(error)
    return tree.messages()


# --- deploymentConfig: Go's json.Unmarshal into SubscriptionConfig ------------------------------------------


_INT_RANGES: Final = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_TIME: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
_FIELDS: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Go structs that embed another inline (`json:",inline"`): the embedded struct's name goes into Go's error
# path for the fields it holds. Volume's fields other than `name` are VolumeSource's.
_EMBEDDED: Final = {"io.k8s.api.core.v1.Volume": ("VolumeSource", frozenset({"name"}))}  # (embedded, own fields)


class _DecodeAbort(Exception):
    """An error that stops Go's decoder at once (an ``UnmarshalJSON`` failure: a quantity)."""


class _Decoder:
    """Go's ``json.Unmarshal`` of a validated ``deploymentConfig`` into ``SubscriptionConfig``, over the schema
    that types it: the first integer overflow is kept and reported at the end (Go saves it and goes on), a
    quantity that does not parse stops everything (Go returns its ``UnmarshalJSON`` error at once). Objects
    are read in sorted key order, as Go's ``json.Marshal`` wrote them for OLM's decoder."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.saved: str | None = None

    def _target(self, node: Any) -> tuple[str | None, Any]:
        """(component name, schema) at the end of ``node``'s ``$ref``/``allOf`` chain."""
        name = None
        while isinstance(node, dict):
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[-1]
                node = self.schema["components"]["schemas"][name]
            elif len(node.get("allOf") or []) == 1 and "type" not in node:
                node = node["allOf"][0]
            else:
                break
        return name, node

    def go_type(self, node: Any) -> str:
        """The Go type Go's errors name for a value of schema ``node`` (``string``, ``v1.ObjectMeta``, ...)."""
        name, target = self._target(node)
        if name == _QUANTITY:
            return "resource.Quantity"
        if name is not None and (name in (_TIME, _FIELDS) or (
                isinstance(target, dict) and isinstance(target.get("properties"), dict))):
            return "v1." + name.rsplit(".", 1)[-1]
        kind = target.get("type") if isinstance(target, dict) else None
        if kind == "array":
            return "[]" + self.go_type(target.get("items"))
        if kind == "object" and isinstance(target.get("additionalProperties"), dict):
            return "map[string]" + self.go_type(target["additionalProperties"])
        if kind == "integer":
            return str(target.get("format") or "int64")
        return {"boolean": "bool", "number": "float64", "object": "map[string]interface {}"}.get(str(kind), "string")

    def _mismatch(self, value: Any, node: Any, struct: str, stack: tuple[str, ...]) -> None:
        """Go's ``UnmarshalTypeError`` for ``value`` in a field of schema ``node``: saved, decoding goes on."""
        if self.saved is None:
            self.saved = (f"json: cannot unmarshal {_go_word(value)} into Go struct field {struct}."
                          f"{'.'.join(stack)} of type {self.go_type(node)}")

    def decode(self, value: Any, node: Any, struct: str, stack: tuple[str, ...], into: Any = None) -> Any:
        """``value`` decoded into a field of schema ``node`` (``into``: what the field holds already, as Go
        decodes into an existing struct or map): the JSON of what Go then holds."""
        name, target = self._target(node)
        if value is None:
            return None  # null: a pointer, map or list becomes nil; a string or number keeps its value
        if name == _QUANTITY:
            return self._quantity(value)
        if name == _TIME:
            if not isinstance(value, str):  # metav1.Time reads a JSON string itself; its error stops Go's decoder
                raise _DecodeAbort(f"json: cannot unmarshal {_go_word(value)} into Go struct field "
                                   f"{struct}.{'.'.join(stack)} of type string")
            return _go_time(value)
        if name == _FIELDS or not isinstance(target, dict):
            return value  # FieldsV1 keeps any JSON as it is
        kind = target.get("type")
        if isinstance(target.get("properties"), dict) or kind == "object":
            if not isinstance(value, dict):
                self._mismatch(value, node, struct, stack)
                return into
            if isinstance(target.get("properties"), dict):
                return self._struct(value, target, name or struct, stack, into)
            element = target.get("additionalProperties")
            result = dict(into) if isinstance(into, dict) else {}
            for key in sorted(value):
                result[key] = self.decode(value[key], element, struct, stack) if isinstance(element, dict) \
                    else value[key]
            return result
        if kind == "array":
            if not isinstance(value, list):
                self._mismatch(value, node, struct, stack)
                return into
            return [self.decode(item, target.get("items"), struct, stack) for item in value]
        if kind == "integer":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self._mismatch(value, node, struct, stack)
                return into
            return self._integer(value, target.get("format"), struct, stack)
        expected = {"string": str, "boolean": bool}.get(str(kind))
        if expected is not None and not isinstance(value, expected):
            self._mismatch(value, node, struct, stack)
            return into
        return value

    def _struct(self, value: dict[str, Any], node: dict[str, Any], component: str, stack: tuple[str, ...],
                into: Any) -> dict[str, Any]:
        fields: dict[str, Any] = node["properties"]
        folded: dict[str, str] = {}
        for field_name in fields:
            folded.setdefault(go_fold(field_name), field_name)
        result: dict[str, Any] = dict(into) if isinstance(into, dict) else {}
        embedded = _EMBEDDED.get(component)
        struct = component.rsplit(".", 1)[-1]
        for key in sorted(value):
            target = key if key in fields else folded.get(go_fold(key))
            if target is None:
                continue  # Go drops what no field takes
            path = (*stack, embedded[0]) if embedded and target not in embedded[1] else stack
            decoded = self.decode(value[key], fields[target], struct, (*path, target), result.get(target))
            if decoded is None:
                result.pop(target, None)
            else:
                result[target] = decoded
        return result

    def _integer(self, value: int | float, go_type: Any, struct: str, stack: tuple[str, ...]) -> int | float:
        low, high = _INT_RANGES.get(go_type, _INT_RANGES["int64"])
        number = float(value)  # OLM's values are float64 (yaml.Unmarshal into interface{})
        literal = go_json_float(number)
        if not re.fullmatch(r"-?[0-9]+", literal) or not low <= int(literal) <= high:
            if self.saved is None:
                self.saved = (f"json: cannot unmarshal number {literal} into Go struct field "
                              f"{struct}.{'.'.join(stack)} of type {go_type or 'int64'}")
            return value
        return int(literal)

    @staticmethod
    def _quantity(value: Any) -> Any:
        from common.contract.quantity import MSG_FORMAT, QuantityError, canonical

        if isinstance(value, (dict, list)):  # Go hands the object's text to the parser, which refuses it
            raise _DecodeAbort(MSG_FORMAT)
        try:
            return canonical(float(value) if isinstance(value, int) and not isinstance(value, bool) else value)
        except (QuantityError, OverflowError) as exc:
            raise _DecodeAbort(str(exc)) from None


_RFC3339: Final = "2006-01-02T15:04:05Z07:00"


def _go_time(text: str) -> str:
    """``metav1.Time`` decoded and printed back as Go does: ``time.Parse(time.RFC3339, text)`` (its errors,
    which stop the decoding, in its words), then RFC 3339 in UTC with whole seconds. Go's parser is stricter
    than the schema's ``date-time`` format in places (a lowercase ``t`` or ``z``, a leap second, a signed
    number), and OLM refuses those here."""
    raw = text.encode("utf-8", "surrogatepass")
    quoted = _time_quote(raw)

    def cannot(rest: bytes, element: str) -> _DecodeAbort:
        return _DecodeAbort(f"parsing time {quoted} as \"{_RFC3339}\": cannot parse {_time_quote(rest)} as "
                            f"\"{element}\"")

    def out_of_range(what: str) -> _DecodeAbort:
        return _DecodeAbort(f"parsing time {quoted}: {what} out of range")

    if len(raw) < 4 or not raw[:4].isdigit():  # Go: four characters, the first a digit, read by atoi
        raise cannot(raw, "2006")
    year = int(raw[:4])
    rest = raw[4:]
    fields: list[int] = []
    # (separator, element, width, upper bound or None, name): month, day, hour, minute, second
    for separator, element, width, bound, name in (("-", "01", 2, 13, "month"), ("-", "02", 2, None, "day"),
                                                    ("T", "15", 1, 24, "hour"), (":", "04", 2, 60, "minute"),
                                                    (":", "05", 2, 60, "second")):
        if not rest.startswith(separator.encode()):
            raise cannot(rest, separator)
        rest = rest[1:]
        digits = (2 if rest[1:2].isdigit() else 1) if rest[:1].isdigit() else 0
        if digits < width or digits == 0:  # two digits, or (the hour) one or two
            raise cannot(rest, element)
        value, rest = int(rest[:digits]), rest[digits:]
        if (bound is not None and value >= bound) or (name == "month" and value == 0):
            raise out_of_range(name)
        fields.append(value)
    if len(rest) >= 2 and rest[:1] in (b".", b",") and rest[1:2].isdigit():
        rest = rest[1:].lstrip(b"0123456789")
    offset = 0
    if rest.startswith(b"Z"):
        rest = rest[1:]
    else:
        if len(rest) < 6 or rest[3:4] != b":" or rest[:1] not in (b"+", b"-") or not (
                rest[1:3].isdigit() and rest[4:6].isdigit()):
            raise cannot(rest, "Z07:00")
        offset = (int(rest[1:3]) * 60 + int(rest[4:6])) * (1 if rest[:1] == b"+" else -1)
        rest = rest[6:]
    if rest:
        raise _DecodeAbort(f"parsing time {quoted}: extra text: {_time_quote(rest)}")
    month, day, hour, minute, second = fields
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]:
        raise out_of_range("day")
    try:
        local = datetime(year, month, day, hour, minute, second, tzinfo=timezone(timedelta(minutes=offset)))
        return local.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, OverflowError):  # a year Python's datetime cannot hold: keep the text
        return text


def _go_word(value: Any) -> str:
    """How Go's ``UnmarshalTypeError`` names the JSON value it could not store."""
    return {"boolean": "bool"}.get(_json_type(value), _json_type(value))


def object_meta_problem(obj: Obj) -> str | None:
    """Why Go could not decode ``obj``'s ``apiVersion`` and ``metadata`` into ``TypeMeta`` and ``ObjectMeta``,
    in Go's words, or None.

    OLM's bundle reader decodes every manifest so and refuses the bundle when that fails (an annotation
    ``0777`` is a number, not a string); the types come from the ObjectMeta schema of the shipped schema data.
    """
    decoder = _Decoder(_base_schema_for_decoding())
    try:
        if "apiVersion" in obj:  # the first key in Go's (sorted) order
            decoder.decode(obj["apiVersion"], {"type": "string"}, "metadataOnlyObject", ("TypeMeta", "apiVersion"))
        if "metadata" in obj:
            decoder.decode(obj["metadata"], {"$ref": f"#/components/schemas/{_OBJECT_META}"}, "metadataOnlyObject",
                           ("metadata",))
    except _DecodeAbort as exc:
        return str(exc)
    return decoder.saved


@functools.cache
def _base_schema_for_decoding() -> dict[str, Any]:
    """The base schema, parsed once, for decoders that only read it."""
    return base_schema()


def _decode_deployment_config(schema: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    decoder = _Decoder(schema)
    node = schema["properties"][DEPLOYMENT_CONFIG]
    try:
        result = decoder.decode(copy_json(value), node, "SubscriptionConfig", ())
    except _DecodeAbort as exc:
        raise ConfigurationError(f"{DEPLOYMENT_CONFIG_PREFIX}failed to unmarshal deploymentConfig: {exc}") from None
    if decoder.saved is not None:
        raise ConfigurationError(f"{DEPLOYMENT_CONFIG_PREFIX}failed to unmarshal deploymentConfig: {decoder.saved}")
    decoded: dict[str, Any] = result
    return decoded


# --- reading files ---------------------------------------------------------------------------------------------


def read_documents(path: Path, name: str, problems: list[str]) -> list[tuple[int, Any]]:
    """(index, value) of each non-empty document of the YAML or JSON file ``path``, read as kubectl reads it
    (:mod:`common.bundle.k8syaml`); what keeps the file or a document from being read goes to ``problems`` as
    ``name:index: ...``. An empty file is no problem here: a bundle's manifest file or a configuration may be
    empty (OLM reads nothing from it)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{name}: not UTF-8 text")
        return []
    except OSError as exc:
        problems.append(f"{name}: cannot read: {exc.strerror or exc}")
        return []
    found = []
    for document in k8syaml.read_stream(text).documents:
        if document.error is not None:
            what = "invalid JSON" if document.is_json else "invalid YAML"
            problems.append(f"{name}:{document.index}: {what}: {document.error}")
        elif document.value is not None:
            found.append((document.index, document.value))
    return found


# --- the public steps --------------------------------------------------------------------------------------


def validation_messages(bundle: RegistryV1, config: Any, install_namespace: str) -> list[str]:
    """The schema's complaints about ``config`` in OLM's words (without prefixes), in order; empty when valid.
    ``None`` is an empty configuration, as OLM reads an absent one."""
    instance = {} if config is None else config
    try:
        return _schema_messages(config_schema(bundle), instance, install_namespace)
    except RecursionError:
        return ["nested too deeply"]


def parse_config(bundle: RegistryV1, config: dict[str, Any] | None, install_namespace: str) -> BundleConfig:
    """Validate ``config`` for ``bundle`` installed in ``install_namespace`` and decode it, as OLM v1 does.

    ``None`` and ``{}`` are the same (no configuration). Raises :class:`ConfigurationError` with OLM's whole
    message: ``invalid ClusterExtension configuration: invalid configuration: ...`` for what the schema refuses
    (one error, or ``multiple errors found:`` and one ``\\n  - `` line each), ``invalid deploymentConfig:
    failed to unmarshal deploymentConfig: ...`` for what decoding refuses (a quantity, an integer too large for
    its Go type).
    """
    problems = validation_messages(bundle, config, install_namespace)
    if problems:
        detail = problems[0] if len(problems) == 1 else "multiple errors found:\n  - " + "\n  - ".join(problems)
        raise ConfigurationError(f"{CONFIG_PREFIX}invalid configuration: {detail}")
    data: dict[str, Any] = config or {}
    watch = data.get(WATCH_NAMESPACE)
    deployment = data.get(DEPLOYMENT_CONFIG)
    decoded = None
    if deployment is not None:
        decoded = _decode_deployment_config(_base_schema_for_decoding(), deployment)
    return BundleConfig(watch_namespace=None if watch is None else str(watch), deployment_config=decoded)


def load_config_file(path: str | Path) -> dict[str, Any] | None:
    """The configuration in the YAML or JSON file ``path``, read as Kubernetes reads YAML; ``None`` when the
    file is empty (or holds only ``null``), which is no configuration.

    An unreadable or unparseable file or several documents raise :class:`BundleInputError` naming the file. A
    value that is not an object is refused as OLM's configuration code refuses it (:class:`ConfigurationError`:
    ``invalid ClusterExtension configuration: invalid configuration: invalid type: got array, want object``;
    the API server would refuse such an ``inline`` before OLM saw it).
    """
    name = str(path)
    if Path(name).is_dir():
        raise BundleInputError(f"{name}: is a directory, not a configuration file")
    if not Path(name).exists():
        raise BundleInputError(f"{name}: no such file or directory")
    problems: list[str] = []
    found = read_documents(Path(name), name, problems)
    if problems:
        raise BundleInputError("\n".join(problems))
    if len(found) > 1:
        raise BundleInputError(f"{name}: a configuration is one document, found {len(found)}")
    if not found:
        return None
    value = found[0][1]
    if not isinstance(value, dict):
        raise ConfigurationError(
            f"{CONFIG_PREFIX}invalid configuration: invalid type: got {_json_type(value)}, want object")
    config: dict[str, Any] = value
    return config


__all__ = [
    "CONFIG_PREFIX",
    "DEPLOYMENT_CONFIG_PREFIX",
    "BundleConfig",
    "base_schema",
    "config_schema",
    "go_fold",
    "go_json",
    "go_json_compact",
    "go_json_float",
    "go_quote",
    "load_config_file",
    "object_meta_problem",
    "parse_config",
    "read_documents",
    "supported_install_modes",
    "validation_messages",
]
