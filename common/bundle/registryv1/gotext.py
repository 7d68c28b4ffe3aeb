"""Go's text: how Go's standard library quotes, prints and folds what OLM v1's messages and outputs contain.

Why a module of its own: OLM v1's refusals and some of its outputs are Go's formatting of Go values, and this
package promises them byte for byte (spec §2, §3). ``%q`` is not Python's ``repr``, ``encoding/json`` does not
write floats or escape ``<`` as ``json.dumps`` does, and a ``[]string`` prints as ``[a b]``. Every such rule
the package needs is read from here, so the validators, the configuration messages, the bundle reader, the
decoders and the name hash all print the same way. The rules the API server's messages need too (``%q``, float
printing) are :mod:`common.contract.gotext`'s, re-exported here; the rest are OLM's alone:

- quoting: :func:`go_quote` (``strconv.Quote``, ``%q``), :func:`go_time_quote` (the ``time`` package's quoting
  in its parse errors), :func:`go_quote_list` (``%q`` of a ``[]string``);
- ``encoding/json`` output: :func:`go_marshal_json` prints a value Go holds as ``interface{}`` (maps: keys
  sorted), :func:`go_marshal_typed` a typed Go value already laid out in its Go encoding (struct fields in
  declaration order, which is the dict's order: never re-sorted), :func:`go_compact_json` a
  ``json.RawMessage``'s own text, :func:`go_json_float` one float64;
- ``fmt``: :func:`go_v_float` (``%v`` of a float64), :func:`go_float32_g` (``strconv.FormatFloat(f, 'g', -1,
  32)``), :func:`go_list` (``%v`` of a ``[]string``);
- :func:`go_fold`: the key folding ``encoding/json`` matches struct fields with;
- :func:`go_decoded_string`: a string as ``encoding/json`` decodes it (a lone surrogate escape is U+FFFD);
- :func:`json_type_name`: the JSON type names Go's messages use for a decoded value;
- :func:`go_time`: a ``metav1.Time`` read from its JSON text and printed back (``time.Parse`` with RFC 3339,
  its errors in its words, the instant in UTC to the second), which both decoders need.

Pure functions over ``str`` and plain JSON values.
"""

from __future__ import annotations

from typing import Any, Final

# Go's quoting and float printing are the contract's (the API server's field errors need them too); they are
# re-exported here so this package reads all of Go's text from one module.
from common.contract.gotext import go_float32_g, go_json_float, go_json_number, go_quote, go_v_float

__all__ = ["GoTimeError", "go_compact_json", "go_decoded_string", "go_float32_g", "go_fold", "go_json_float",
           "go_json_number", "go_list", "go_marshal_json", "go_marshal_typed", "go_quote", "go_quote_list", "go_time",
           "go_time_quote", "go_v_float", "json_type_name"]

# --- quoting ---------------------------------------------------------------------------------------------


def go_time_quote(text: bytes) -> str:
    """The ``time`` package's quote in its parse errors: bytes outside printable ASCII as ``\\xNN``."""
    out = ['"']
    for byte in text:
        if byte >= 0x80 or byte < 0x20:
            out.append(f"\\x{byte:02x}")
        else:
            out.append(("\\" if byte in b'"\\' else "") + chr(byte))
    return "".join(out) + '"'


# --- encoding/json ---------------------------------------------------------------------------------------------

_HTML_ESCAPES: Final = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_JSON_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                        **_HTML_ESCAPES}


def go_decoded_string(text: str) -> str:
    """``text`` (as Python's JSON decoder left it) as Go's encoding/json decodes the same JSON: a lone surrogate
    escape is U+FFFD, so the string always encodes to UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


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


class GoRawNumber(str):
    """A JSON number's text, marshalled as it is (Go's ``json.RawMessage`` holding a number)."""


def _marshal(value: Any, sort_keys: bool) -> str:
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
    if isinstance(value, GoRawNumber):
        return str.__str__(value)
    if isinstance(value, str):
        return _go_json_string(value)
    if isinstance(value, list):
        return "[" + ",".join(_marshal(v, sort_keys) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value) if sort_keys else value
        return "{" + ",".join(_go_json_string(k) + ":" + _marshal(value[k], sort_keys) for k in keys) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def go_marshal_json(value: Any) -> str:
    """``json.Marshal`` of ``value`` as Go holds decoded JSON (``interface{}``: maps, slices, float64): compact,
    map keys sorted, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, floats in Go's shortest form (``1e+21``,
    ``1e-7``)."""
    return _marshal(value, True)


def go_marshal_typed(value: Any) -> str:
    """``json.Marshal`` of a typed Go value given as its Go encoding (what :mod:`.gounstructured` and
    :mod:`.gounmarshal` return): keys in the dict's order, which is the struct's field order (maps in it are
    sorted already), otherwise as :func:`go_marshal_json`. Without the ``Encoder``'s trailing newline."""
    return _marshal(value, False)


def go_compact_json(text: str) -> str:
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


# --- fmt and names -----------------------------------------------------------------------------------------------


def go_list(items: list[str]) -> str:
    """Go's ``%v`` of a ``[]string``: ``[a b c]``."""
    return "[" + " ".join(items) + "]"


def go_quote_list(items: list[str]) -> str:
    """Go's ``%q`` of a ``[]string``: each quoted, space-separated, ``["a" "b"]`` (not JSON's ``["a", "b"]``)."""
    return "[" + " ".join(go_quote(item) for item in items) + "]"


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


def printable(value: Any) -> str:
    """A string from a bundle or catalog, fit to print in a message (control characters as ``?``); anything that is
    no string is no text (``""``)."""
    return "".join(c if c.isprintable() else "?" for c in value) if isinstance(value, str) else ""


def json_type_name(value: Any) -> str:
    """The JSON type of a decoded value as Go's messages name it (numbers are float64 in Go, so an ``int`` is a
    ``number`` too): ``null``, ``boolean``, ``number``, ``string``, ``array`` or ``object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# --- time: metav1.Time read with time.Parse(time.RFC3339, text) and printed back ----------------------------

_RFC3339: Final = "2006-01-02T15:04:05Z07:00"
_DAYS_IN_MONTH: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class GoTimeError(ValueError):
    """``time.Parse`` refused the text; ``str()`` is Go's error text."""


def go_time(text: str) -> str | None:
    """``metav1.Time``'s ``UnmarshalJSON`` of the string ``text`` and its ``MarshalJSON``: Go's
    ``time.Parse(time.RFC3339, text)`` (its errors, in its words, raise :class:`GoTimeError`), then the instant in UTC
    to the second (``-0001-12-31T23:00:00Z`` and ``10000-01-01T00:00:00Z`` too), or ``None`` (``null``) for
    the zero time, 0001-01-01T00:00:00Z. Go's parser is stricter than the schema's ``date-time`` format in
    places (a lowercase ``t`` or ``z``, a leap second, a signed number) and laxer in others (a one-digit hour)."""
    raw = text.encode("utf-8", "surrogatepass")
    quoted = go_time_quote(raw)

    def cannot(rest: bytes, element: str) -> GoTimeError:
        return GoTimeError(f"parsing time {quoted} as \"{_RFC3339}\": cannot parse {go_time_quote(rest)} as "
                      f"\"{element}\"")

    def out_of_range(what: str) -> GoTimeError:
        return GoTimeError(f"parsing time {quoted}: {what} out of range")

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
    nanos = 0
    if len(rest) >= 2 and rest[:1] in (b".", b",") and rest[1:2].isdigit():
        fraction = rest[1:len(rest) - len(rest[1:].lstrip(b"0123456789"))]
        nanos = int(fraction[:9].ljust(9, b"0"))
        rest = rest[1 + len(fraction):]
    offset = 0
    if rest.startswith(b"Z"):
        rest = rest[1:]
    else:
        if len(rest) < 6 or rest[3:4] != b":":
            raise cannot(rest, "Z07:00")
        hours = int(rest[1:3]) if rest[1:3].isdigit() else None
        minutes = int(rest[4:6]) if hours is not None and rest[4:6].isdigit() else None
        if hours is not None and hours > 24:  # Go allows offsets of 24 hours and 60 minutes
            raise out_of_range("time zone offset minute" if minutes is not None and minutes > 60 else
                               "time zone offset hour")
        if minutes is not None and minutes > 60:
            raise out_of_range("time zone offset minute")
        if hours is None or minutes is None or rest[:1] not in (b"+", b"-"):
            raise cannot(rest, "Z07:00")
        offset = (hours * 60 + minutes) * (1 if rest[:1] == b"+" else -1)
        rest = rest[6:]
    if rest:
        raise GoTimeError(f"parsing time {quoted}: extra text: {go_time_quote(rest)}")
    month, day, hour, minute, second = fields
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= (29 if month == 2 and leap else _DAYS_IN_MONTH[month - 1]):
        raise out_of_range("day")
    seconds = (_days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset * 60)
    days, of_day = divmod(seconds, 86400)
    y, m, d = _civil_from_days(days)
    if (y, m, d, of_day, nanos) == (1, 1, 1, 0, 0):
        return None  # the zero time: metav1.Time prints null
    sign = "-" if y < 0 else ""
    return f"{sign}{abs(y):04d}-{m:02d}-{d:02d}T{of_day // 3600:02d}:{of_day // 60 % 60:02d}:{of_day % 60:02d}Z"


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar, for any year (Python's dates stop at 1 and
    9999; Go's do not)."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    of_era = days - era * 146097
    year_of_era = (of_era - of_era // 1460 + of_era // 36524 - of_era // 146096) // 365
    of_year = of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * of_year + 2) // 153
    day = of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + (3 if shifted_month < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day
