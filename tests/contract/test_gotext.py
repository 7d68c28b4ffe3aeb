"""Go's quoting and float printing: each expected string is what Go's standard library prints for the same value
(strconv.Quote, encoding/json, fmt, strconv.FormatFloat), and what the API server's field errors and OLM v1's
messages contain."""

from __future__ import annotations

import pytest

from common.contract.fielderrors import invalid
from common.contract.gotext import go_float32_g, go_json_float, go_json_number, go_quote, go_v_float


def test_go_quote_is_strconv_quote() -> None:
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("\t\n\x01\x7f") == '"\\t\\n\\x01\\x7f"'
    assert go_quote("é\u2028\U0001f600\u00a0") == '"é\\u2028😀\\u00a0"'
    assert go_quote("\a\b\f\v") == '"\\a\\b\\f\\v"'


def test_go_quote_fast_path_and_slow_path_agree_on_plain_ascii() -> None:
    assert go_quote("my-app.v1") == '"my-app.v1"'
    assert go_quote("a b~") == '"a b~"'
    assert go_quote("") == '""'
    assert go_quote("\udc80") == '"\\x80"'  # surrogateescape's undecodable byte: Go's \xNN for it
    assert go_quote("a\ud800b") == '"a\ufffdb"'  # another lone surrogate: the U+FFFD Go decodes, printed as is


def test_field_errors_quote_as_the_api_server_does() -> None:
    """The API server prints an invalid value with %q: Go's named escapes, not \\x07."""
    assert str(invalid("metadata.name", "a\ab", "bad")) == 'metadata.name: Invalid value: "a\\ab": bad'


@pytest.mark.parametrize(("number", "text"), [(0.0, "0"), (-0.0, "-0"), (1.0, "1"), (1.5, "1.5"), (1e21, "1e+21"),
                                              (1e20, "100000000000000000000"), (1e-7, "1e-7"), (1e-6, "0.000001"),
                                              (123456789.125, "123456789.125"), (-2.5e-10, "-2.5e-10")])
def test_go_json_float(number: float, text: str) -> None:
    assert go_json_float(number) == text


@pytest.mark.parametrize(("number", "read_back"), [
    (5.0, 5), (-0.0, 0), (2.0**53, 9007199254740992), (0.5, 0.5), (1e21, 1e21),
    # from 2**54 on Go's shortest digits are fewer than the float's exact ones, and it pads them with zeros
    (2.0**60, 1152921504606847000), (9223372036854775807.0, 9223372036854776000),
    (-123456789012345678.0, -123456789012345680),
])
def test_go_json_number_is_what_reading_encoding_json_back_gives(number: float, read_back: int | float) -> None:
    got = go_json_number(number)
    assert got == read_back and type(got) is type(read_back)
    assert float(got) == number  # the same float64: only the text differs from the exact value


@pytest.mark.parametrize(("number", "text"), [(0.0, "0"), (1e6, "1e+06"), (123456.0, "123456"), (1e-4, "0.0001"),
                                              (1e-5, "1e-05"), (-2.5, "-2.5")])
def test_go_v_float(number: float, text: str) -> None:
    assert go_v_float(number) == text


@pytest.mark.parametrize(("number", "text"), [(1.0, "1"), (0.1, "0.1"), (1e6, "1e+06"), (123456.0, "123456"),
                                              (3.14159265, "3.1415927"), (-0.0, "-0"), (float("nan"), "NaN"),
                                              (float("-inf"), "-Inf")])
def test_go_float32_g(number: float, text: str) -> None:
    assert go_float32_g(number) == text


def test_go_float32_g_beyond_float32_is_an_infinity_as_gos_conversion_gives() -> None:
    assert go_float32_g(1e39) == "+Inf"
    assert go_float32_g(-1e300) == "-Inf"
    assert go_float32_g(3.4028235e38) == "3.4028235e+38"
    assert go_float32_g(1e-4) == "0.0001"
    assert go_float32_g(1e-5) == "1e-05"
