"""``merge_patch_between``: the smallest RFC 7386 patch from one JSON object to another."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.contract.objects import merge_patch_between


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, section 2, written from the RFC's pseudocode (independent of the code under test)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


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
