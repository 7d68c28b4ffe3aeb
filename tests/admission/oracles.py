"""Test oracles: the slow, plainly right judgements the validating route's fast paths are held against.

They live with the tests, not in the shipped code: production never runs them.
"""

from __future__ import annotations

from typing import Any

from common.contract.fielderrors import FieldError
from common.contract.validation import cel_rules


def _every_rule(node: dict[str, Any], value: Any, old: Any, path: str, out: list[FieldError]) -> None:
    """Every rule of the node evaluated by CEL, no shortcut, on views built once for the whole object."""
    for rule in node["rules"]:
        if rule.is_transition and old is cel_rules.MISSING:
            continue
        if not rule.holds(value, None if old is cel_rules.MISSING else old):
            out.append(cel_rules.violation(node, value, path, rule.message))


def cel_errors_reference(obj: Any, old: Any = cel_rules.MISSING) -> list[FieldError]:
    """``cel_errors`` with every rule evaluated by CEL on the whole object's views: the reference the shortcuts
    and the lazily built views are tested against."""
    out: list[FieldError] = []
    new_view, old_view = cel_rules.cel_views(obj, cel_rules.MISSING if old is None else old)
    cel_rules.walk(cel_rules.RULE_TREE, new_view, old_view, "", out, _every_rule)
    return out
