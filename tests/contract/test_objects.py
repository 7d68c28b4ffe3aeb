"""RFC 7386 merge patches: ``apply_merge_patch`` (held to the RFC's own examples) and ``merge_patch_between``, the
smallest patch from one JSON object to another (applying it gives the other)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.contract.objects import apply_merge_patch, merge_patch_between

# RFC 7386, Appendix A: (original, patch, result)
RFC_EXAMPLES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("original", "patch", "result"), RFC_EXAMPLES)
def test_apply_merge_patch_gives_the_rfc_examples_results(original: Any, patch: Any, result: Any) -> None:
    before = repr(original)
    assert apply_merge_patch(original, patch) == result
    assert repr(original) == before   # the target is left as it was


def test_a_status_change_sends_only_what_changed() -> None:
    old = {"conditions": [{"type": "Available", "status": "False"}], "observedPhases": [{"name": "a"}],
           "extra": {"keep": 1, "drop": 2}}
    new = {"conditions": [{"type": "Available", "status": "True"}], "observedPhases": [{"name": "a"}],
           "extra": {"keep": 1}}
    assert merge_patch_between(old, new) == {"conditions": [{"type": "Available", "status": "True"}],
                                             "extra": {"drop": None}}


def test_removed_keys_are_null_added_keys_whole_and_equal_objects_empty() -> None:
    assert merge_patch_between({"a": 1, "b": {"c": 2}}, {"b": {"c": 2}}) == {"a": None}
    assert merge_patch_between({}, {"b": {"c": [1, 2]}}) == {"b": {"c": [1, 2]}}
    assert merge_patch_between({"b": [1]}, {"b": {"c": 1}}) == {"b": {"c": 1}}   # a list becomes a map: whole
    assert merge_patch_between({"b": {"c": 1}}, {"b": 3}) == {"b": 3}
    assert merge_patch_between({"a": {"b": 1}}, {"a": {"b": 1}}) == {}


json_scalars = st.one_of(st.booleans(), st.integers(-5, 5), st.text("xy", max_size=2))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abcd"), inner, max_size=3)), max_leaves=12)
json_objects = st.dictionaries(st.sampled_from("abcde"), json_values, max_size=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_objects, json_objects)
def test_applying_the_patch_to_old_gives_new(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert apply_merge_patch(old, merge_patch_between(old, new)) == new
