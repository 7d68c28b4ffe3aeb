"""go-yaml's ``resolve()``: what a plain YAML scalar's text is to Go (an int, a uint64, a float, a timestamp).

Why a module of its own: the numbers and timestamps of a YAML scalar are read with Go's ``strconv`` and
``time.Parse`` rules, which are neither Python's nor YAML's; the Go YAML decoders whose reading this project
reproduces share that code: go-yaml v2 under kubectl (manifests and bundles, :mod:`.k8syaml`) and gopkg.in/yaml.v3
under containers/image (registries.d, :mod:`.registryv1.goyaml`). Which words are booleans is each decoder's own
(v2 takes YAML 1.1's ``yes`` and ``on``, v3 does not) and stays with it.

Pure functions over ``str``; no imports beyond the standard library.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any, Final

INT64_MIN, INT64_MAX, UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


class Uint64(int):
    """An integer go-yaml holds as uint64 (above int64): a JSON number that loses precision, an invalid key."""


# The special floats every go-yaml reads by name (its resolve table, beside each decoder's own booleans and nulls).
SPECIAL_FLOATS: Final[dict[str, float]] = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_NOT_FOUND: Final = object()

# go-yaml looks at the first character: only these can start anything but a string.
HINT = {**dict.fromkeys("+-", "S"), **dict.fromkeys("0123456789", "D"), **dict.fromkeys("yYnNtTfFoO~", "M"),
        ".": "."}
# strconv.ParseFloat's syntax for text starting with ".": an underscore only between two digits ("._5" and "5_"
# are not numbers, ".5_5" is 0.55)
_GO_FLOAT_AFTER_DOT = re.compile(r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?")
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_DIGITS = {2: re.compile("[01]+"), 8: re.compile("[0-7]+"), 10: re.compile("[0-9]+"),
           16: re.compile("[0-9a-fA-F]+")}
_MAX_DIGITS = {2: 64, 8: 22, 10: 20, 16: 16}  # more significant digits than this overflow 64 bits


def parse_uint(text: str, base: int) -> int | None:
    """Go's ``strconv.ParseUint(text, base, 64)`` for base 0 (prefixes 0b/0o/0x, or 0 for octal), 2 or 8."""
    if base == 0:
        base = 10
        if text[:1] == "0":
            prefix = text[1:2].lower()
            if len(text) >= 3 and prefix in ("b", "o", "x"):
                base, text = {"b": 2, "o": 8, "x": 16}[prefix], text[2:]
            else:
                base, text = 8, text[1:]
                if not text:
                    return 0
    if not _DIGITS[base].fullmatch(text):
        return None
    significant = text.lstrip("0")
    if len(significant) > _MAX_DIGITS[base]:
        return None
    value = int(significant or "0", base)
    return value if value <= UINT64_MAX else None


def parse_int(text: str, base: int) -> int | None:
    """Go's ``strconv.ParseInt(text, base, 64)``: an optional sign, then ``parse_uint``, within int64."""
    negative = text[:1] == "-"
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits:
        return None
    magnitude = parse_uint(digits, base)
    if magnitude is None:
        return None
    value = -magnitude if negative else magnitude
    return value if INT64_MIN <= value <= INT64_MAX else None


def parse_float(text: str) -> float | None:
    """Go's ``strconv.ParseFloat`` on text already known to be decimal: None when it overflows."""
    value = float(text)
    return None if math.isinf(value) else value


def resolve_after_dot(text: str) -> float | None:
    """go-yaml's reading of a plain scalar starting with ``.`` that is not ``.inf`` or ``.nan``: Go's
    ``strconv.ParseFloat(text, 64)``, None when it is no number or overflows."""
    return parse_float(text.replace("_", "")) if _GO_FLOAT_AFTER_DOT.fullmatch(text) else None


def resolver(words: Mapping[str, Any], *, v3: bool = False) -> Callable[[str], Any]:
    """go-yaml's resolve() of an untagged plain scalar, for a decoder whose resolve table is ``words`` (its booleans
    and nulls, and :data:`SPECIAL_FLOATS`): the function giving a text's Go value, None when empty, the value
    ``words`` gives it, else by its first character a number (an int, a :class:`Uint64`, a float) or the text
    itself (timestamps are the caller's). ``words`` is bound once: the function runs for every plain scalar."""
    def resolve(text: str) -> Any:
        if not text:
            return None
        hint = HINT.get(text[0])
        if hint is None:
            return text
        found = words.get(text, _NOT_FOUND)
        if found is not _NOT_FOUND:
            return found
        if hint == "M":
            return text
        if hint == ".":
            number = resolve_after_dot(text)
            return text if number is None else number
        return resolve_number(text, v3=v3)
    return resolve


def go_kind(value: Any) -> str:
    """The short tag go-yaml names a resolved value by: null, bool, int (a :class:`Uint64` too), float or str."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


_FALLBACKS_V2: Final = (("0b", 2),)
_FALLBACKS_V3: Final = (("0b", 2), ("0o", 8))


def resolve_number(text: str, *, v3: bool = False) -> Any:
    """go-yaml's reading of a plain scalar starting with a digit or a sign, timestamps aside: an int, a
    :class:`Uint64`, a float, or the text itself. ``v3``: gopkg.in/yaml.v3's, which adds an octal fallback."""
    plain = text.replace("_", "")
    value = parse_int(plain, 0)
    if value is not None:
        return value
    unsigned = parse_uint(plain, 0)
    if unsigned is not None:
        return Uint64(unsigned)
    if _YAML_STYLE_FLOAT.fullmatch(plain):
        number = parse_float(plain)
        if number is not None:
            return number
    # go-yaml's own fallbacks for a base prefix, reached only by forms ParseInt's prefix handling refused
    # ("0b-101"; yaml.v3's "0o+7")
    for prefix, base in _FALLBACKS_V3 if v3 else _FALLBACKS_V2:
        if plain.startswith(prefix):
            value = parse_int(plain[2:], base)
            if value is not None:
                return value
            unsigned = parse_uint(plain[2:], base) if plain[2:3] not in ("+", "-") else None
            if unsigned is not None:
                return Uint64(unsigned)
        elif plain.startswith("-" + prefix):
            value = parse_int("-" + plain[3:], base)
            if value is not None:
                return value
    return text


# time.Parse of "2006-1-2T15:4:5.999999999Z07:00" (or "t"), "2006-1-2 15:4:5.999999999" and "2006-1-2": a space in
# a layout takes any run of spaces, a fraction may follow "." or ",", the offset's hours and minutes are any two
# digits up to 24 and 60 (range-checked below with the date and the clock).
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:(?:[Tt]([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[.,][0-9]+)?(?:Z|[+-]([0-9]{2}):([0-9]{2})))"
    r"|(?: +([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[.,][0-9]+)?))?")


def is_timestamp(text: str) -> bool:
    """go-yaml's parseTimestamp: the four layouts it tries with Go's time.Parse, including its range checks."""
    match = _TIMESTAMP.fullmatch(text)
    if not match:
        return False
    year, month, day = (int(g) for g in match.group(1, 2, 3))
    try:
        date(year, month, day) if year else date(2000, month, day)  # year 0 is valid for Go, not for Python
    except ValueError:
        return False
    clock = match.group(4, 5, 6) if match.group(4) else match.group(9, 10, 11)
    if clock[0] is None:
        return True
    hour, minute, second = (int(g) for g in clock)
    if match.group(7) and (int(match.group(7)) > 24 or int(match.group(8)) > 60):
        return False
    return hour < 24 and minute < 60 and second < 60
