"""Go's ``encoding/json`` ``Unmarshal`` of JSON into a typed Kubernetes value, with Go's error messages.

OLM v1 decodes two things with ``json.Unmarshal``: a configuration's ``deploymentConfig`` (into v0's
``SubscriptionConfig``, after the schema) and every bundle manifest's ``apiVersion`` and ``metadata`` (into
``TypeMeta`` and ``ObjectMeta``, refusing the bundle when that fails). Its errors are Go's (``json: cannot
unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string``), and its rules are
``encoding/json``'s: the first type mismatch is kept and reported at the end (decoding goes on), an
``UnmarshalJSON`` failure (a quantity, a time) stops everything, integers are checked against their Go type,
unknown keys are dropped, keys match fields case-insensitively as Go folds them.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final

from common.contract.objects import Obj, copy_json

from .gotext import go_fold, go_json_float, go_time_quote, json_type_name
from .model import ConfigurationError

DEPLOYMENT_CONFIG: Final = "deploymentConfig"
DEPLOYMENT_CONFIG_PREFIX: Final = "invalid deploymentConfig: "

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
    quoted = go_time_quote(raw)

    def cannot(rest: bytes, element: str) -> _DecodeAbort:
        return _DecodeAbort(f"parsing time {quoted} as \"{_RFC3339}\": cannot parse {go_time_quote(rest)} as "
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
        raise _DecodeAbort(f"parsing time {quoted}: extra text: {go_time_quote(rest)}")
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
    return {"boolean": "bool"}.get(json_type_name(value), json_type_name(value))


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
    from .config import base_schema

    return base_schema()


def decode_deployment_config(value: dict[str, Any]) -> dict[str, Any]:
    """``deploymentConfig`` as OLM's ``json.Unmarshal`` into ``SubscriptionConfig`` decodes it."""
    schema = _base_schema_for_decoding()
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

