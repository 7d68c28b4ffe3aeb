"""Go's text as OLM v1's messages and outputs contain it: each expected string is what Go's standard library
prints for the same value (encoding/json, fmt, time). The quoting and float printing this package re-exports
from common.contract.gotext are tested in tests/contract/test_gotext.py."""

from __future__ import annotations

import pytest

from common.bundle.registryv1.gotext import (
    GoTimeError,
    go_compact_json,
    go_fold,
    go_list,
    go_marshal_json,
    go_marshal_typed,
    go_time,
    go_time_quote,
    json_type_name,
)


def test_go_time_quote_escapes_bytes_outside_printable_ascii() -> None:
    assert go_time_quote('a"\\é\n'.encode()) == '"a\\"\\\\\\xc3\\xa9\\x0a"'


def test_go_marshal_json_sorts_and_escapes() -> None:
    assert go_marshal_json({"b": [1, 1.5, None, True], "a": "<&>\u2028\b\x01"}) == (
        '{"a":"\\u003c\\u0026\\u003e\\u2028\\b\\u0001","b":[1,1.5,null,true]}')


def test_go_marshal_typed_keeps_the_field_order_it_is_given() -> None:
    assert go_marshal_typed({"b": [1, None], "a": "<&>\u2028\u2029é\n\x01"}) == (
        '{"b":[1,null],"a":"\\u003c\\u0026\\u003e\\u2028\\u2029é\\n\\u0001"}')


def test_go_compact_json_keeps_the_texts_own_escapes_and_order() -> None:
    assert go_compact_json('{ "b" : "\\u00e9 <x>", "a": [1, 2.50] }') == '{"b":"\\u00e9 \\u003cx\\u003e","a":[1,2.50]}'


def test_go_list_and_fold_and_type_names() -> None:
    assert go_list(["a", "b"]) == "[a b]"
    assert go_list([""]) == "[]"
    assert go_fold("secretKey") == go_fold("\u017fecret\u212aey") == "SECRETKEY"
    assert [json_type_name(v) for v in (None, True, 1, 1.5, "", [], {})] == [
        "null", "boolean", "number", "number", "string", "array", "object"]


@pytest.mark.parametrize(("text", "printed"), [
    ("2024-01-01T00:00:00+01:00", "2023-12-31T23:00:00Z"),
    ("2024-01-01T1:00:00Z", "2024-01-01T01:00:00Z"),  # Go's parser takes a one-digit hour
    ("0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z"),
    ("0000-01-01T00:00:00+01:00", "-0001-12-31T23:00:00Z"),
    ("9999-12-31T23:00:00-05:00", "10000-01-01T04:00:00Z"),
    ("2024-01-01T00:00:00+24:00", "2023-12-31T00:00:00Z"),  # offsets up to 24 hours
    ("0001-01-01T00:00:00.5Z", "0001-01-01T00:00:00Z"),
    ("0001-01-01T01:00:00+01:00", None),  # the zero time prints null
])
def test_go_time_reads_and_prints_as_metav1_time(text: str, printed: str | None) -> None:
    assert go_time(text) == printed


@pytest.mark.parametrize(("text", "message"), [
    ("2024-01-01T00:00:00+25:00", 'parsing time "2024-01-01T00:00:00+25:00": time zone offset hour out of range'),
    ("2024-01-01T00:00:07+01:61", 'parsing time "2024-01-01T00:00:07+01:61": time zone offset minute out of range'),
    ("2024-01-01 00:00:00Z",
     'parsing time "2024-01-01 00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 00:00:00Z" as "T"'),
    ("2024-02-30T00:00:00Z", 'parsing time "2024-02-30T00:00:00Z": day out of range'),
])
def test_go_time_refuses_with_gos_words(text: str, message: str) -> None:
    with pytest.raises(GoTimeError) as caught:
        go_time(text)
    assert str(caught.value) == message
