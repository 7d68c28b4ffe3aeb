"""OLM v1's typed round trip of a manifest: decoded as Kubernetes' unstructured converter decodes it into Go
structs (:mod:`.gotypes`), then encoded back as ``encoding/json`` encodes them.

Why: OLM v1 reads the CSV and the CRDs with ``runtime.DefaultUnstructuredConverter.FromUnstructured`` into
``v1alpha1.ClusterServiceVersion`` and ``apiextensionsv1.CustomResourceDefinition``, works on the structs, and
its output is their ``encoding/json`` form. Real bundles show what that does (see
``tests/registryv1/test_render_gotypes.py``):

- fields the Go types do not have are dropped (community bundles carry ``volumes[].secretName``,
  ``livenessProbe.exec.failureThreshold`` and the like, which a strict API server would refuse);
- quantities come out canonical (``2000m`` -> ``"2"``, ``1024Mi`` -> ``1Gi``), int-or-strings keep their kind;
- zero values of fields without ``omitempty`` are printed (``resources: {}``, ``strategy: {}``, a
  ``resourceFieldRef``'s ``divisor: "0"``), ``omitempty`` ones vanish (``readOnly: false``, ``items: []``);
- a v1beta1 CRD loses the fields v1 does not have.

Decoding follows ``FromUnstructured``, whose rules are not ``encoding/json``'s (that is why :mod:`.gounmarshal`
is a second decoder, for the configuration OLM v1 reads with ``json.Unmarshal``): keys match field names exactly,
a missing key or ``null`` is the zero value, integers narrow to int32 as Go converts them, an integral float may
fill an integer, and any other mismatch is an error naming the field (the bundle is refused). Encoding follows
``encoding/json``. With ``nulls=False`` (what the renderer emits) a field that would print ``null`` is left out:
the spec allows omitting null-valued keys, and the API server drops them anyway. Raw JSON values (a CRD
schema's ``default``, ``enum``, ``example``) are copied as they are, nulls included.

Speed: the CRDs of a large bundle are hundreds of thousands of ``JSONSchemaProps`` nodes, so each Go type is
compiled once into a function (:func:`_compile`), a struct is walked by the keys its value has (not by its
fifty fields), and the path named in an error is only built when there is an error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final

from common.bundle.k8syaml import JSONFloat64
from common.contract.objects import copy_json
from common.contract.quantity import QuantityError, canonical

from .gotext import GoTimeError, go_json_number, go_quote, go_time
from .gotypes import (
    EMPTY_FALSE,
    EMPTY_FALSY,
    EMPTY_NEVER,
    EMPTY_ZERO,
    STRUCTS,
    GoStruct,
    GoType,
    structs_within,
    zero_value,
)
from .semver import SemverError, check_release, parse_tolerant


class GoTypeError(ValueError):
    """A value that does not decode into its Go type; ``path`` names the field (``spec.replicas``)."""

    def __init__(self, path: str, problem: str, *, quantity: bool = False) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem
        self.quantity = quantity  # ``problem`` is Go's own quantity parse error, which OLM v1 prints alone


def roundtrip(type_name: str, value: Any, path: str = "", *, nulls: bool = False) -> Any:
    """``value`` decoded into the Go struct ``type_name`` as OLM v1 decodes it, then encoded as Go encodes it.

    Returns a new ``dict`` (the input is not modified) with the struct's fields in Go's order. ``nulls=True``
    keeps the ``null`` of nil fields without ``omitempty`` (byte-exact Go output, what a hash needs).
    Raises :class:`GoTypeError` naming the first field that does not decode, prefixed by ``path``.
    """
    try:
        return _STRUCT_CODECS[type_name](value, nulls)
    except _Fail as fail:
        raise GoTypeError(_path(path, fail.trail), fail.problem, quantity=fail.quantity) from None


# --- failures: the path is collected on the way out --------------------------------------------------------------


class _Fail(Exception):
    """A value that does not decode; each level it passes through adds its step to ``trail`` (innermost first):
    a field or map key (``str``) or a list index (``int``)."""

    def __init__(self, problem: str, *, quantity: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.quantity = quantity
        self.trail: list[str | int] = []


def _path(root: str, trail: list[str | int]) -> str:
    """The path of a failure: ``root``, then each step outwards-in (``spec.versions[0].name``)."""
    path = root
    for step in reversed(trail):
        path = f"{path}[{step}]" if isinstance(step, int) else (f"{path}.{step}" if path else step)
    return path


def _jsontype(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# --- the codecs: one function per Go type, (value, nulls) -> encoded ------------------------------------------------

_Codec = Callable[[Any, bool], Any]
_STRUCT_CODECS: dict[str, _Codec] = {}
# The same types as apiextensions' union types' UnmarshalJSON decodes them (``items``, ``additionalProperties``,
# ``additionalItems``, ``dependencies``: marshalled back to JSON and read with apimachinery's util/json), which
# differs from the converter in one way: an integer must fit its type (1e19 is refused, not wrapped).
_JSON_STRUCT_CODECS: dict[str, _Codec] = {}
_SCHEMA: Final = "apiext.JSONSchemaProps"


def _struct_codec(struct: GoStruct, *, via_json: bool = False) -> _Codec:
    """The codec of a struct. A field whose key the value lacks is either left out (``omitempty`` fields and
    those printing ``null``) or printed as its zero value, which is known in advance (``always``): only the
    value's own keys and those fields are visited, in declaration order. :meth:`.GoField.omitted` is unrolled
    here, per field: whether a ``null`` is printed (``keeps_null``) and how ``omitempty`` tests other values."""
    fields = struct.fields
    index = struct.index
    names = tuple(f.name for f in fields)
    rules = tuple(f.empty if f.omitempty else EMPTY_NEVER for f in fields)
    keeps_null = {nulls: tuple(not f.omitted(None, nulls) for f in fields) for nulls in (False, True)}
    always = {nulls: tuple(i for i, f in enumerate(fields) if not f.omitted(zero_value(f.type, nulls), nulls))
              for nulls in (False, True)}
    codecs: list[_Codec] = []  # filled by the link step once every struct has a codec (the types are recursive)
    empty: dict[str, Any] = {}

    def codec(value: Any, nulls: bool) -> dict[str, Any]:
        if value is None:
            value = empty
        elif not isinstance(value, dict):
            raise _Fail(f"expected an object, got {_jsontype(value)}")
        get = index.get
        positions = [i for key in value if (i := get(key)) is not None]
        extra = always[nulls]
        if extra:
            positions = sorted(set(positions).union(extra))
        else:
            positions.sort()
        null_kept = keeps_null[nulls]
        out: dict[str, Any] = {}
        for i in positions:
            name = names[i]
            try:
                encoded = codecs[i](value.get(name), nulls)
            except _Fail as fail:
                fail.trail.append(name)
                raise
            if encoded is None:
                if null_kept[i]:
                    out[name] = None
                continue
            rule = rules[i]
            if rule and ((rule == EMPTY_FALSY and not encoded) or (rule == EMPTY_FALSE and encoded is False)
                         or (rule == EMPTY_ZERO and encoded == 0)):
                continue
            out[name] = encoded
        return out

    def link() -> None:
        codecs.extend(_compile(f.type, via_json=via_json) for f in fields)

    _LINKS.append(link)
    return codec


_LINKS: list[Callable[[], None]] = []


def _compile(typ: GoType, *, via_json: bool = False) -> _Codec:
    if typ.kind == "struct":
        return (_JSON_STRUCT_CODECS if via_json else _STRUCT_CODECS)[typ.name]
    if typ.kind == "scalar":
        return (_JSON_SCALARS if via_json else _SCALARS)[typ.name]
    assert typ.inner is not None
    inner = _compile(typ.inner, via_json=via_json)
    if typ.kind == "ptr":
        def pointer(value: Any, nulls: bool) -> Any:
            return None if value is None else inner(value, nulls)
        return pointer
    if typ.kind == "list":
        return _list_codec(inner, typ.inner == GoType("scalar", "s"))
    return _map_codec(inner, typ.inner == GoType("scalar", "s"))


def _list_codec(inner: _Codec, strings: bool) -> _Codec:
    def codec(value: Any, nulls: bool) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            raise _Fail(f"expected an array, got {_jsontype(value)}")
        if strings and all(isinstance(item, str) for item in value):
            return list(value)  # nothing to change (a []string of strings)
        out = []
        for i, item in enumerate(value):
            try:
                out.append(inner(item, nulls))
            except _Fail as fail:
                fail.trail.append(i)
                raise
        return out
    return codec


def _map_codec(inner: _Codec, strings: bool) -> _Codec:
    def codec(value: Any, nulls: bool) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise _Fail(f"expected an object, got {_jsontype(value)}")
        # encoding/json writes a map's keys sorted (by bytes; the same order as by code point)
        items = sorted((str(k), v) for k, v in value.items())
        if strings and all(isinstance(v, str) for _, v in items):
            return dict(items)  # nothing to change (a map[string]string of strings)
        out = {}
        for key, item in items:
            try:
                out[key] = inner(item, nulls)
            except _Fail as fail:
                fail.trail.append(key)
                raise
        return out
    return codec


# --- scalars --------------------------------------------------------------------------------------------------


def _string(value: Any, nulls: bool) -> Any:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Fail(f"expected a string, got {_jsontype(value)}")
    return value


def _bool(value: Any, nulls: bool) -> Any:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _Fail(f"expected a boolean, got {_jsontype(value)}")
    return value


def _wrap(number: int, bits: int) -> int:
    """Go's integer conversion: the low ``bits`` bits, two's complement (``reflect.Value.Convert``)."""
    number &= (1 << bits) - 1
    return number - (1 << bits) if number >> (bits - 1) else number


_INT64_MIN: Final = -(1 << 63)


def _integer(bits: int) -> _Codec:
    """The converter's integer: an int64 narrowed as Go converts integers; a float64 (an integral one; an integer
    beyond int64 is one too, as the JSON decoder gives it) converted to int64 first, as amd64 does: one beyond
    int64 becomes its minimum (the conversion is implementation-defined in Go; OLM's amd64 images do this)."""
    def codec(value: Any, nulls: bool) -> int:
        if value is None:
            return 0
        if isinstance(value, JSONFloat64):
            value = value.float_value  # the float64 a JSON document's decoder gave, not the digits Go prints for it
        if isinstance(value, float) and math.isfinite(value) and value == math.trunc(value):
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return _wrap(value if _INT64_MIN <= value < -_INT64_MIN else _INT64_MIN, bits)
        raise _Fail(f"expected an integer, got {_jsontype(value)} {json.dumps(value)}")
    return codec


def _json_integer(bits: int) -> _Codec:
    """An integer as util/json reads the converter's value marshalled back to JSON: Go writes an integral float
    below 1e21 as an integer, which must then fit ``bits``."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def codec(value: Any, nulls: bool) -> int:
        if value is None:
            return 0
        number = go_json_number(value) if isinstance(value, float) and math.isfinite(value) else value
        if not isinstance(number, int) or isinstance(number, bool):
            raise _Fail(f"expected an integer, got {_jsontype(value)} {json.dumps(value)}")
        if not low <= number <= high:
            raise _Fail(f"expected an integer that fits int{bits}, got {number}")
        return number
    return codec


def _float(value: Any, nulls: bool) -> int | float:
    """A float64: Go prints an integral one without a fraction, so it is an ``int`` here, the one Go prints."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Fail(f"expected a number, got {_jsontype(value)}")
    return go_json_number(float(value))


def _quantity(value: Any, nulls: bool) -> str:
    if value is None:
        return "0"  # the zero Quantity prints 0
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise _Fail(f"expected a quantity, got {_jsontype(value)}")
    try:
        return canonical(value)
    except QuantityError as exc:
        raise _Fail(str(exc), quantity=True) from None


def _int_or_string(value: Any, nulls: bool) -> int | str:
    """IntOrString: a string stays a string (``"8080"`` too), a number must be an int32."""
    if value is None:
        return 0
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Fail(f"expected an integer or a string, got {_jsontype(value)}")
    if isinstance(value, float) and not value.is_integer():
        raise _Fail(f"expected an integer or a string, got number {json.dumps(value)}")
    number = int(value)
    if not -(2**31) <= number < 2**31:
        raise _Fail(f"number {number} does not fit an int32")
    return number


def _time(value: Any, nulls: bool) -> str | None:
    """metav1.Time, which the converter reads with its own ``UnmarshalJSON``: RFC 3339 as Go's ``time.Parse``
    reads it in, UTC to the second out; ``null`` and the zero time print ``null``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Fail(f"expected an RFC 3339 time, got {_jsontype(value)}")
    try:
        return go_time(value)
    except GoTimeError:
        raise _Fail(f"expected an RFC 3339 time, got {json.dumps(value)}") from None


def _semver(check: Callable[[str], Any]) -> _Codec:
    """A string type with its own ``UnmarshalJSON`` (the CSV's ``version`` and ``release``): the converter hands
    it the value's JSON, which must be a string that ``check`` (blang/semver's rule) accepts; a version parsed
    (``check`` returns it) is printed as Go's ``MarshalJSON`` prints it (``v1.2`` is ``1.2.0``)."""
    def codec(value: Any, nulls: bool) -> Any:
        if value is None:
            return None
        if not isinstance(value, str):
            raise _Fail(f"expected a string, got {_jsontype(value)}")
        try:
            parsed = check(value)
        except SemverError as exc:
            raise _Fail(f"{go_quote(value)} is not a semantic version: {exc}") from None
        return value if parsed is None else str(parsed)
    return codec


def _bytes(value: Any, nulls: bool) -> Any:
    if value is None or isinstance(value, str):
        return value
    raise _Fail(f"expected a base64 string, got {_jsontype(value)}")


def _raw(value: Any, nulls: bool) -> Any:
    return copy_json(value)


# apiextensions' unions, decoded by their ``UnmarshalJSON`` and encoded by their ``MarshalJSON``.


def _schema_or_bool(value: Any, nulls: bool) -> Any:
    if isinstance(value, dict):
        return _JSON_STRUCT_CODECS[_SCHEMA](value, nulls)
    if isinstance(value, bool):
        return value
    raise _Fail("boolean or JSON schema expected")


def _schema_or_array(value: Any, nulls: bool) -> Any:
    schema = _JSON_STRUCT_CODECS[_SCHEMA]
    if isinstance(value, dict):
        return schema(value, nulls)
    if not isinstance(value, list) or not value:
        return None  # neither form: the union stays empty and prints null
    out = []
    for i, item in enumerate(value):
        try:
            out.append(schema(item, nulls))
        except _Fail as fail:
            fail.trail.append(i)
            raise
    return out


def _schema_or_strings(value: Any, nulls: bool) -> Any:
    if isinstance(value, dict):
        return _JSON_STRUCT_CODECS[_SCHEMA](value, nulls)
    if not isinstance(value, list) or not value:
        return None  # neither form: the union stays empty and prints null
    for i, item in enumerate(value):
        if not isinstance(item, str):
            fail = _Fail(f"expected a string, got {_jsontype(item)}")
            fail.trail.append(i)
            raise fail
    return list(value)


_SCALARS: Final[dict[str, _Codec]] = {
    "s": _string, "b": _bool, "i32": _integer(32), "i64": _integer(64), "f64": _float, "q": _quantity,
    "ios": _int_or_string, "time": _time, "bytes": _bytes, "raw": _raw, "schemaOrBool": _schema_or_bool,
    "schemaOrArray": _schema_or_array, "schemaOrStrings": _schema_or_strings,
    "semver": _semver(parse_tolerant), "semverRelease": _semver(check_release),
}

_JSON_SCALARS: Final[dict[str, _Codec]] = {**_SCALARS, "i32": _json_integer(32), "i64": _json_integer(64)}


for _name, _struct in STRUCTS.items():
    _STRUCT_CODECS[_name] = _struct_codec(_struct)
for _name in structs_within(_SCHEMA):   # what a union's UnmarshalJSON decodes: no other struct needs such a codec
    _JSON_STRUCT_CODECS[_name] = _struct_codec(STRUCTS[_name], via_json=True)
for _link in _LINKS:
    _link()
del _name, _struct, _link
_LINKS.clear()
