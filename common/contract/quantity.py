"""Kubernetes resource quantities (``500m``, ``1Gi``, ``1e3``), parsed and printed exactly as Go does.

Why this exists: the registry+v1 bundle renderer must print every quantity of a rendered object (a Deployment's
``resources``, an ``emptyDir.sizeLimit``) byte for byte as OLM v1 prints it. OLM v1 decodes the CSV into Go
types and encodes them again, so a quantity comes out as ``resource.Quantity`` prints it: ``0.5Gi`` becomes
``512Mi``, ``1000m`` becomes ``1``, ``0.1`` becomes ``100m``. This module owns that round trip:
:func:`parse_quantity` is Go's ``resource.ParseQuantity`` and ``str()`` of the result is Go's
``Quantity.String()`` / ``MarshalJSON`` (without the JSON quotes); :func:`canonical` is the whole decode/encode
of one JSON value; :func:`same_value` compares two quantity strings by value (the reconciler's drift check: the
API server stores quantities canonically, ``1000m`` comes back as ``1``).

The rules are those of ``k8s.io/apimachinery/pkg/api/resource`` v0.36 (what OLM v1 builds with):

- A value is exact (never a float) and keeps the format of its suffix: ``DecimalSI`` (none, ``n u m k M G T P
  E``), ``BinarySI`` (``Ki`` ... ``Ei``) or ``DecimalExponent`` (``e3``, ``E-3``).
- Parsing rounds a non-zero value away from zero to a whole number of nanos (``0.1n`` -> ``1n``,
  ``1.0001`` -> ``1000100u``: nano, not milli, precision), and caps a ``BinarySI`` magnitude at 2^63-1.
- Printing drops trailing zeros into the exponent and lowers it to a multiple of 3 (``1.5`` -> ``1500m``,
  ``1000M`` -> ``1G``). A ``BinarySI`` value prints in powers of 1024 when it is a whole number of at least 1024
  in magnitude (``2048Ki`` -> ``2Mi``, ``1.5Ki`` -> ``1536``) and as ``DecimalSI`` otherwise (``0.5Ki`` ->
  ``512``, ``.001Ki`` -> ``1024m``).

Go's quirks are kept, because they are what OLM prints:

- Parsing keeps the input text and prints it verbatim when its digits look canonical. That is checked on the
  digits alone (Go's int64 fast path, up to 18 of them): for a decimal format, the digits without leading zeros
  and the point do not start with ``0`` or end in ``000`` and their scale is a multiple of 3; for ``BinarySI``,
  the number is not a multiple of 8. So ``+1``, ``01``, ``1.500``, ``1.G`` and ``1e+21`` print unchanged
  (kubernetes issue #138165).
- A ``DecimalSI`` value beyond ``E`` prints its digits with no suffix: ``1000E`` prints ``1`` (as v0.36.1 does;
  kubernetes PR #140459, merged upstream in July 2026, prints ``1e21`` instead).
- The scanner is looser than its error message's regular expression: ``.``, ``-`` and ``Ki`` parse as 0;
  ``Pi``, ``Ei`` and ``.e-10`` fail as a numeric error.
- Exponents are Go ``int32``: an exponent suffix outside int64 is a suffix error, one outside int32 wraps.
  Only where Go itself never finishes (its arbitrary-precision path given an exponent in the billions) does this
  module differ: it answers.

The JSON side (:func:`canonical`) follows OLM v1's path, not a plain ``json.Unmarshal`` into a typed struct: the
bundle's YAML becomes an unstructured object (a JSON number becomes an int64, or a float64 when it has a
fraction or exponent or does not fit int64), and ``FromUnstructured`` hands ``Quantity.UnmarshalJSON`` that
value re-encoded by ``encoding/json``. ``UnmarshalJSON`` strips the quotes of a string (without decoding its
escapes) and Go's ``strings.TrimSpace``; the literal ``null`` gives the zero quantity, which prints ``0``.
Which YAML scalars are numbers is the caller's to match: go-yaml (sigs.k8s.io/yaml) reads ``1e3`` as the number
1000 where PyYAML reads the string ``"1e3"``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from enum import StrEnum
from typing import Final

from common.contract.gotext import go_json_float

# The text of Go's three parse errors (ErrFormatWrong, ErrSuffix, ErrNumeric), byte for byte.
FORMAT_PATTERN: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
MSG_FORMAT: Final = f"quantities must match the regular expression '{FORMAT_PATTERN}'"
MSG_SUFFIX: Final = "unable to parse quantity's suffix"
MSG_NUMERIC: Final = "unable to parse numeric part of quantity"


class QuantityError(ValueError):
    """A string that is not a quantity. ``str(exc)`` is Go's error text exactly: :data:`MSG_FORMAT`,
    :data:`MSG_SUFFIX` or :data:`MSG_NUMERIC`."""


class Format(StrEnum):
    """How a quantity prints, remembered from the suffix it was parsed with (Go's ``resource.Format``)."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi
    DECIMAL_SI = "DecimalSI"  # 12M


_DSI, _BSI, _DEXP = Format.DECIMAL_SI, Format.BINARY_SI, Format.DECIMAL_EXPONENT

# suffix -> (base, exponent, format); the exponent forms (e3, E-3) are handled apart.
_SUFFIXES: Final[dict[str, tuple[int, int, Format]]] = {
    "": (10, 0, _DSI), "n": (10, -9, _DSI), "u": (10, -6, _DSI), "m": (10, -3, _DSI), "k": (10, 3, _DSI),
    "M": (10, 6, _DSI), "G": (10, 9, _DSI), "T": (10, 12, _DSI), "P": (10, 15, _DSI), "E": (10, 18, _DSI),
    "Ki": (2, 10, _BSI), "Mi": (2, 20, _BSI), "Gi": (2, 30, _BSI), "Ti": (2, 40, _BSI), "Pi": (2, 50, _BSI),
    "Ei": (2, 60, _BSI),
}  # fmt: skip
_DECIMAL_SUFFIX: Final = {e: s for s, (b, e, _) in _SUFFIXES.items() if b == 10}
_BINARY_SUFFIX: Final = {e // 10: s for s, (b, e, _) in _SUFFIXES.items() if b == 2}  # by power of 1024

# Go's scanner (parseQuantityString) as one expression: greedy left to right, it splits a string exactly as the
# scanner does: sign, leading zeros, integer digits, fraction, suffix (letters, sign, digits).
_SCAN: Final = re.compile(r"([+-]?)(0*)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT: Final = re.compile(r"([+-]?)0*([0-9]+)")

_INT64_MAX: Final = (1 << 63) - 1
_NANO: Final = 9  # Go keeps at most 9 decimal places
_EXACT: Final = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)
_MAX_INT_DIGITS: Final = 4000  # below Python's limit on int <-> decimal string conversion

# What UnmarshalJSON trims from a JSON string (Go's unicode.IsSpace), less what encoding/json escapes (control
# characters, U+2028, U+2029): a tab arrives as the two characters backslash and "t", which fail to parse.
_JSON_VISIBLE_SPACE: Final = " \u0085\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u202f\u205f\u3000"


def _int32(n: int) -> int:
    """``n`` wrapped as Go's int32 arithmetic wraps it."""
    return (n + 0x80000000) % 0x100000000 - 0x80000000


def _int(digits: str) -> int:
    """A digit string as an int, of any length (``int()`` refuses more than 4300 digits)."""
    return int(digits) if len(digits) <= _MAX_INT_DIGITS else int(Decimal(digits))


def _digits(n: int) -> str:
    """A non-negative int as decimal digits, of any length."""
    return str(n) if n.bit_length() <= 3 * _MAX_INT_DIGITS else format(Decimal(n), "f")


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity: ``mantissa * 10**exponent`` in ``format``, with Go's cached text.

    ``text`` is the input string when Go keeps it (see the module docstring) and is then what ``str()`` returns.
    The mantissa is stored without trailing zeros, so equal fields mean the same value, format and text; build
    quantities with :func:`parse_quantity`.
    """

    mantissa: int
    exponent: int
    format: Format
    text: str | None = None

    def __post_init__(self) -> None:
        m, e = self.mantissa, self.exponent
        if m == 0:
            if e:
                object.__setattr__(self, "exponent", 0)
            return
        if m % 10:
            return
        while m % 1_000_000 == 0:
            m //= 1_000_000
            e += 6
        while m % 10 == 0:
            m //= 10
            e += 1
        object.__setattr__(self, "mantissa", m)
        object.__setattr__(self, "exponent", e)

    @property
    def value(self) -> Decimal:
        """The exact value, for comparisons (``parse_quantity("1Gi").value == parse_quantity("1024Mi").value``)."""
        return Decimal(self.mantissa).scaleb(self.exponent, _EXACT)

    def __str__(self) -> str:
        """Go's ``Quantity.String()``: the cached text, else the canonical form."""
        if self.text is not None:
            return self.text
        m, e = self.mantissa, self.exponent
        if m == 0:
            return "0"
        sign = "-" if m < 0 else ""
        m = abs(m)
        fmt = self.format
        if fmt is _BSI:
            # exponent >= 0: a whole number; BinarySI values are capped at 2**63-1, so 10**e stays small
            whole = m * 10**e if e >= 0 else None
            if whole is None or whole < 1024:
                fmt = _DSI  # a fraction or below 1Ki: decimal, which loses nothing
            else:
                power = 0
                while whole % 1024 == 0:
                    whole //= 1024
                    power += 1
                return f"{sign}{_digits(whole)}{_BINARY_SUFFIX.get(power, '')}"
        # Go's exponent is an int32; lowering it to a multiple of 3 moves at most two zeros into the digits.
        e = _int32(e)
        lower = e % 3
        e = _int32(e - lower)
        digits = _digits(m * 10**lower)
        if fmt is _DEXP:
            return f"{sign}{digits}e{e}" if e else f"{sign}{digits}"
        return f"{sign}{digits}{_DECIMAL_SUFFIX.get(e, '')}"  # beyond "E": no suffix at all, as in Go v0.36


_ZERO: Final = Quantity(0, 0, _DSI, "0")


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """``(base, exponent, format)`` of a suffix, as Go's quantitySuffixer.interpret."""
    known = _SUFFIXES.get(suffix)
    if known is not None:
        return known
    if len(suffix) > 1 and suffix[0] in "eE":
        number = _EXPONENT.fullmatch(suffix, 1)  # strconv.ParseInt(suffix[1:], 10, 64)
        if number is not None and len(number[2]) <= 19:
            exponent = int(number[1] + number[2])
            if -_INT64_MAX - 1 <= exponent <= _INT64_MAX:
                return 10, _int32(exponent), _DEXP
    raise QuantityError(MSG_SUFFIX)


def parse_quantity(text: str) -> Quantity:
    """Go's ``resource.ParseQuantity(text)``: no surrounding whitespace allowed. Raises :class:`QuantityError`."""
    if not text:
        raise QuantityError(MSG_FORMAT)
    if text == "0":
        return _ZERO
    scanned = _SCAN.fullmatch(text)
    if scanned is None:
        raise QuantityError(MSG_FORMAT)
    sign, zeros, whole, fraction, suffix = scanned.groups()
    negative = sign == "-"
    num = whole or "0"
    denom = fraction or ""
    base, exponent, fmt = _interpret(suffix)

    # Go's fast path: few enough digits for an int64 at a scale of at least nano.
    multiplier = 1
    if fmt is _BSI:
        scale = 0
        if denom:
            precision = -1
        else:
            multiplier = 1 << exponent
            precision = 14 - len(num) - exponent * 3 // 10  # roughly the decimal digits 2**exponent takes
    else:
        scale = exponent
        precision = 18 - len(num) - len(denom)
    if precision >= 0:
        scale = _int32(scale - len(denom))
        if scale >= -_NANO:
            shifted = num + denom
            number = int(shifted)
            mantissa = number * multiplier
            if fmt is _BSI:
                keep = number & 7 != 0
            else:
                keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
            return Quantity(-mantissa if negative else mantissa, scale, fmt, text if keep else None)
    return _parse_exact(negative, zeros + whole, fraction, base, exponent, fmt)


def _parse_exact(negative: bool, whole: str, fraction: str | None, base: int, exponent: int, fmt: Format) -> Quantity:
    """Go's arbitrary-precision path (inf.Dec): round up to nano, cap BinarySI at 2**63-1."""
    digits = whole + (fraction or "")
    if not digits:  # inf.Dec.SetString of "", "-", "." or "-."
        raise QuantityError(MSG_NUMERIC)
    unscaled = _int(digits)
    scale = len(fraction or "")  # value = unscaled / 10**scale
    if base == 10:
        scale = _int32(scale + _int32(-exponent))
    else:
        unscaled <<= exponent
    if unscaled and scale > _NANO:
        drop = scale - _NANO
        # int(bits * 0.30103) + 2 is more than the digits of unscaled: then 0 < value < 1n, which rounds up to 1n
        if drop > int(unscaled.bit_length() * 0.30103) + 2:
            unscaled = 1
        else:
            unscaled, rest = divmod(unscaled, 10**drop)
            unscaled += 1 if rest else 0
        scale = _NANO
    if fmt is _BSI:  # binary: 0 <= scale <= 9 here
        if unscaled > _INT64_MAX * 10**scale:
            unscaled, scale = _INT64_MAX, 0
        if 0 < unscaled < 10**scale:
            fmt = _DSI
    return Quantity(-unscaled if negative else unscaled, -scale, fmt)


def canonical(value: str | int | float) -> str:
    """The string OLM v1 prints for a quantity it decoded from a bundle's JSON/YAML value ``value``.

    A ``str`` is a JSON string: Go's trimming of spaces applies (``" 1"`` -> ``1``), a tab or newline does not
    (they reach Go escaped). An ``int`` or ``float`` is a JSON number as ``json.loads`` gives it: like OLM's
    unstructured path, an int that fits int64 is its digits, and anything else is a float64 printed by
    ``encoding/json``. So the text of the original number is not needed, because OLM does not use it either:
    ``1e3`` and ``1000`` both print ``1k``, ``0.50`` prints ``500m``, and ``1e21`` prints ``1e+21``. A bool
    (JSON ``true``) fails as Go does; a NaN, an infinity or an int beyond float64 fails with :data:`MSG_FORMAT`
    (Go's JSON encoder refuses them before the quantity parser is reached). ``None`` (JSON ``null``) is the
    caller's: Go makes it the zero quantity, which prints ``0``.
    """
    if isinstance(value, str):
        text = value.strip(_JSON_VISIBLE_SPACE)
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int) and -_INT64_MAX - 1 <= value <= _INT64_MAX:
        text = str(value)
    else:
        try:
            number = float(value)
        except OverflowError:
            raise QuantityError(MSG_FORMAT) from None
        if not math.isfinite(number):
            raise QuantityError(MSG_FORMAT)
        text = go_json_float(number)
    return str(parse_quantity(text))


def same_value(a: str, b: str) -> bool:
    """Whether two strings are quantities of the same value (``1000m`` and ``1``, ``1024Mi`` and ``1Gi``); False
    when either is not a quantity."""
    try:
        return parse_quantity(a).value == parse_quantity(b).value
    except QuantityError:
        return False
