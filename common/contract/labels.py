"""Kubernetes label selectors: the string syntax of ``?labelSelector=`` and the ``LabelSelector`` object.

The in-memory API server filters lists with the string form and the reconciler's progression probes match
objects with the object form (``matchLabels`` / ``matchExpressions``), so both follow the API server's rules:
every requirement must hold; ``NotIn`` and ``!=`` also match when the key is absent; an empty selector matches
everything. Malformed input raises :class:`SelectorError` naming the offending part, never a bare
``KeyError``/``IndexError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OP_IN = "in"
OP_NOT_IN = "notin"
OP_EXISTS = "exists"
OP_DOES_NOT_EXIST = "!"
OP_EQUALS = "="
OP_NOT_EQUALS = "!="

# matchExpressions operators as the API spells them -> our ops
_EXPRESSION_OPS = {"In": OP_IN, "NotIn": OP_NOT_IN, "Exists": OP_EXISTS, "DoesNotExist": OP_DOES_NOT_EXIST}


class SelectorError(ValueError):
    """A label selector that cannot be parsed or is not valid."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause of a selector: ``key op values``."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == OP_EXISTS:
            return present
        if self.op == OP_DOES_NOT_EXIST:
            return not present
        if self.op in (OP_IN, OP_EQUALS):
            return present and labels[self.key] in self.values
        if self.op in (OP_NOT_IN, OP_NOT_EQUALS):
            return not present or labels[self.key] not in self.values
        raise SelectorError(f"unknown operator {self.op!r}")  # unreachable for parsed requirements

    def __str__(self) -> str:
        if self.op == OP_EXISTS:
            return self.key
        if self.op == OP_DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.op in (OP_EQUALS, OP_NOT_EQUALS):
            return f"{self.key}{self.op}{self.values[0]}"
        return f"{self.key} {self.op} ({','.join(sorted(self.values))})"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; the empty selector matches every label set."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = Selector()


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside ``( ... )``."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unbalanced ')' in label selector {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise SelectorError(f"unbalanced '(' in label selector {text!r}")
    parts.append("".join(cur))
    return parts


def _check_key(key: str, clause: str) -> str:
    if not key or any(c.isspace() or c in "=!(),<>" for c in key):
        raise SelectorError(f"invalid label key in selector clause {clause.strip()!r}")
    return key


def _parse_clause(clause: str) -> Requirement:
    text = clause.strip()
    if not text:
        raise SelectorError("empty clause in label selector")
    if text.startswith("!"):
        if "=" in text:
            raise SelectorError(f"invalid label selector clause {text!r}")
        return Requirement(_check_key(text[1:].strip(), text), OP_DOES_NOT_EXIST)
    for op in ("!=", "==", "="):
        if op in text:
            key, _, value = text.partition(op)
            value = value.strip()
            if any(c.isspace() or c in "=!()," for c in value):
                raise SelectorError(f"invalid label value in selector clause {text!r}")
            return Requirement(_check_key(key.strip(), text), OP_NOT_EQUALS if op == "!=" else OP_EQUALS, (value,))
    if "(" in text:
        head, _, rest = text.partition("(")
        if not rest.endswith(")"):
            raise SelectorError(f"invalid label selector clause {text!r}")
        words = head.split()
        if len(words) != 2 or words[1] not in (OP_IN, OP_NOT_IN):
            raise SelectorError(f"invalid label selector clause {text!r}: expected 'key in (...)' or 'key notin (...)'")
        values = tuple(v.strip() for v in rest[:-1].split(","))
        if any(not v for v in values) and len(values) > 1:
            raise SelectorError(f"empty value in selector clause {text!r}")
        values = tuple(v for v in values if v)
        if not values:
            raise SelectorError(f"selector clause {text!r} needs at least one value")
        return Requirement(_check_key(words[0], text), words[1], values)
    return Requirement(_check_key(text, text), OP_EXISTS)


def parse(text: str | None) -> Selector:
    """Parse the string syntax (``a=b,c!=d,e in (f,g),h notin (i),j,!k``); ``None``/``""`` match everything."""
    if text is None or not text.strip():
        return EVERYTHING
    return Selector(tuple(_parse_clause(c) for c in _split_top_level(text)))


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """Convert a ``LabelSelector`` object; invalid operators or value lists raise :class:`SelectorError`."""
    if selector is None:
        return EVERYTHING
    if not isinstance(selector, Mapping):
        raise SelectorError("label selector must be an object")
    reqs: list[Requirement] = []
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError("matchLabels must be an object")
    for key in sorted(match_labels):
        reqs.append(Requirement(str(key), OP_EQUALS, (str(match_labels[key]),)))
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError("matchExpressions must be a list")
    for i, expr in enumerate(expressions):
        if not isinstance(expr, Mapping):
            raise SelectorError(f"matchExpressions[{i}] must be an object")
        key = str(expr.get("key") or "")
        if not key:
            raise SelectorError(f"matchExpressions[{i}].key: Required value")
        api_op = expr.get("operator")
        op = _EXPRESSION_OPS.get(str(api_op))
        if op is None:
            raise SelectorError(
                f'matchExpressions[{i}].operator: Invalid value: "{api_op}": not a valid selector operator')
        values = tuple(str(v) for v in (expr.get("values") or []))
        if op in (OP_IN, OP_NOT_IN) and not values:
            raise SelectorError(f"matchExpressions[{i}].values: Required value: "
                                "must be specified when `operator` is 'In' or 'NotIn'")
        if op in (OP_EXISTS, OP_DOES_NOT_EXIST) and values:
            raise SelectorError(f"matchExpressions[{i}].values: Forbidden: "
                                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        reqs.append(Requirement(key, op, values))
    return Selector(tuple(reqs))


def to_string(selector: Mapping[str, Any] | None) -> str:
    """The string form of a ``LabelSelector`` object, for ``Cluster.list(label_selector=...)``."""
    return str(from_label_selector(selector))


def from_labels(labels: Mapping[str, str]) -> str:
    """An equality selector string for an exact label set (``a=b,c=d``, sorted)."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def matches(selector: str | Selector | Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` satisfy a selector given as a string, a parsed :class:`Selector` or a LabelSelector."""
    if isinstance(selector, Selector):
        sel = selector
    elif selector is None or isinstance(selector, str):
        sel = parse(selector)
    else:
        sel = from_label_selector(selector)
    return sel.matches(labels)
