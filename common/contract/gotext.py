"""Go's text for Go's values: how Go's standard library quotes a string and prints a float.

Why a module of its own, in the contract: every message this project promises byte for byte was printed by a Go
program first. The API server quotes an invalid value with ``%q`` (field errors), OLM v1 quotes names and paths
with ``%q`` and prints numbers with ``encoding/json`` and ``fmt``, and sigs.k8s.io/yaml writes a float map key
with ``strconv.FormatFloat(f, 'g', -1, 32)``. Python's ``repr``, ``json.dumps`` and ``format`` differ from each of
them at the edges (``\\a``, ``1e+21``, ``1e-07``, float32 digits), so each rule is written here once and the field
errors, the quantities, the YAML reader and the bundle renderer all print the same way.

Pure functions over ``str`` and ``float``; no imports beyond the standard library.
"""

from __future__ import annotations

import math
import struct
import unicodedata
from typing import Final

__all__ = ["go_float32_g", "go_json_float", "go_json_number", "go_quote", "go_v_float"]

# --- quoting -------------------------------------------------------------------------------------------------

_GO_ESCAPES: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                      "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def _go_printable(char: str) -> bool:
    """Go's ``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (what ``%q`` prints for a string).

    Printable characters stay as they are; the C escapes Go knows are used by name (``\\a`` ... ``\\v``); other
    control characters are ``\\xNN``; other non-printable characters ``\\uNNNN`` or ``\\UNNNNNNNN``. Python's
    lone surrogates are what Go holds in their place: U+DC80-U+DCFF, an undecodable byte kept by
    ``surrogateescape``, is that byte, which Go prints ``\\xNN``; any other (a JSON ``\\uD800`` escape) is the
    U+FFFD Go's decoders put there, printed as it is."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'  # the common case: nothing to escape
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif _go_printable(char):
            out.append(char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\ufffd")
        elif code > 0xFFFF:
            out.append(f"\\U{code:08x}")
        else:
            out.append(f"\\u{code:04x}")
    out.append('"')
    return "".join(out)


# --- numbers -------------------------------------------------------------------------------------------------


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
    """``d.ddde±XX``: Go's ``%e`` exponent has at least two digits."""
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exponent = point - 1
    return f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"


def go_json_float(number: float) -> str:
    """A finite float64 as Go's ``encoding/json`` writes it: shortest digits, exponent form outside [1e-6, 1e21),
    written ``1e+21`` and ``1e-7`` (Go trims a negative exponent's leading zero)."""
    if number == 0:
        return "-0" if math.copysign(1.0, number) < 0 else "0"
    sign = "-" if number < 0 else ""
    digits, point = _shortest(number)
    if 1e-6 <= abs(number) < 1e21:
        return sign + _fixed(digits, point)
    return sign + _exponent(digits, point).replace("e-0", "e-")


def go_json_number(number: float) -> int | float:
    """A finite float64 as a reader of Go's ``encoding/json`` output gets it back: an integral value below 1e21 is
    written as an integer, with the float's shortest digits and zeros after them, so it reads back as *that*
    integer, which is not the float's exact value from 2**54 on (2**60 is written ``1152921504606847000``); any
    other value stays the float (its text has a fraction or an exponent)."""
    if number.is_integer() and abs(number) < 1e21:
        # below 2**53 every integer is a float64 of its own, so the shortest digits are all of its digits
        return int(number) if abs(number) < 2**53 else int(go_json_float(number))
    return number


def go_v_float(number: float) -> str:
    """A finite float64 as Go's ``%v`` prints it (``%g`` with the shortest digits: exponent form below 1e-4 and
    from 1e+06 on)."""
    if number == 0:
        return "-0" if math.copysign(1.0, number) < 0 else "0"
    sign = "-" if number < 0 else ""
    digits, point = _shortest(number)
    if point - 1 < -4 or point - 1 >= 6:
        return sign + _exponent(digits, point)
    return sign + _fixed(digits, point)


def go_float32_g(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 32)``: ``value`` rounded to a float32 (beyond its range: an
    infinity, as Go's conversion gives) and printed with the shortest digits that read back as that float32."""
    if math.isnan(value):
        return "NaN"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return "+Inf" if single > 0 else "-Inf"
    if single == 0:
        return "-0" if math.copysign(1.0, single) < 0 else "0"
    for precision in range(1, 10):  # 9 significant digits always read back as the same float32
        text = f"{abs(single):.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == abs(single):
            break
    mantissa, _, exponent = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    point = int(exponent) + 1
    sign = "-" if single < 0 else ""
    if point - 1 < -4 or point - 1 >= 6:
        return sign + _exponent(digits, point)
    return sign + _fixed(digits, point)
