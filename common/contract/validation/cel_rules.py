"""Pass 2 of judging a ClusterObjectSet: every ``x-kubernetes-validations`` rule of the table, with Kubernetes
semantics (``common.contract.cel``), on every part whose type is right, so one denial lists the CEL violations too
(the API server stops at the first structural error; authors fixing manifests want the whole list).

One walk over the rule table (:func:`walk`) finds where rules apply; what it does there is a judge's. The one
:func:`cel_errors` uses lets a shortcut settle a constant-shaped rule that holds in a few dictionary lookups, and
builds the CEL view of a value (:func:`cel_views`) only where a CEL program must run.
"""

from __future__ import annotations

import json
import marshal
import re
from collections.abc import Callable
from typing import Any

import orjson

from common.contract import schema as table
from common.contract.cel import compile_rule
from common.contract.fielderrors import OMIT, FieldError, invalid

Obj = dict[str, Any]

_TYPE_CHECKS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def _has_rules(node: Obj) -> bool:
    if node.get("x-kubernetes-validations"):
        return True
    if any(_has_rules(sub) for sub in node.get("properties", {}).values()):
        return True
    return "items" in node and _has_rules(node["items"])


def _full_match(pattern: str) -> Callable[[Any], bool]:
    """``self.matches(pattern)`` for a pattern anchored with ``^...$`` whose syntax means the same to RE2 and
    Python: ``\\Z`` for ``$``, which in Python also matches before a final newline (RE2's does not)."""
    assert pattern.startswith("^") and pattern.endswith("$")
    match = re.compile(pattern[:-1] + r"\Z").match
    return lambda v: type(v) is str and match(v) is not None


def _required_when(field: str, type_value: str) -> Callable[[Any], bool]:
    return lambda v: (type(v) is dict and type(v.get("type")) is str
                      and (v["type"] == type_value) == (field in v))


def _exactly_one(a: str, b: str) -> Callable[[Any], bool]:
    return lambda v: type(v) is dict and (a in v) != (b in v)


# Sufficient conditions for the table's constant-shaped rules, by exact rule text: when one is true, the
# rule holds; when it is false, the CEL program decides (and words nothing: the message is the rule's). They
# read only properties the schema declares, so they judge the raw value exactly as the rule judges its
# pruned view. A rule whose text changes loses its shortcut and is simply evaluated (a test lists them all).
_SHORTCUTS: dict[str, Callable[[Any], bool]] = {
    "[has(self.object),has(self.ref)].filter(x,x==true).size() == 1": _exactly_one("object", "ref"),
    f"self.matches('{table.DNS1123_LABEL_PATTERN}')": _full_match(table.DNS1123_LABEL_PATTERN),
    f"self.matches('{table.DIGEST_PATTERN}')": _full_match(table.DIGEST_PATTERN),
    f"self.matches('{table.FIELD_PATH_PATTERN.replace(chr(92), chr(92) * 2)}')":
        _full_match(table.FIELD_PATH_PATTERN),
    "(has(self.matchExpressions) && !has(self.matchLabels)) || "
    "(!has(self.matchExpressions) && has(self.matchLabels))": _exactly_one("matchExpressions", "matchLabels"),
    **{f"self.type == '{t}' ?has(self.{f}) : !has(self.{f})": _required_when(f, t)
       for f, t in (("groupKind", "GroupKind"), ("label", "Label"), ("conditionEqual", "ConditionEqual"),
                    ("fieldsEqual", "FieldsEqual"), ("fieldValue", "FieldValue"))},
}


def _annotate(node: Obj) -> Obj:
    """Precompile the rule table for the walk: compiled rules (with their shortcuts) and which subtrees have
    any rule at all."""
    rules = [compile_rule(r["rule"], r["message"]) for r in node.get("x-kubernetes-validations", [])]
    shortcuts = [None if rule.is_transition else _SHORTCUTS.get(rule.expression) for rule in rules]
    properties = {k: _annotate(v) for k, v in node.get("properties", {}).items() if _has_rules(v)}
    items = _annotate(node["items"]) if "items" in node and _has_rules(node["items"]) else None
    # settled_by: the shortcuts that settle a value of this node entirely when they all hold, present when each of
    # its rules has one (none a transition rule, so the old value plays no part) and nothing below it has rules. An
    # item of such a list (every inline object of a COS) then costs the shortcuts' few lookups, not a visit.
    settled = bool(shortcuts) and not properties and items is None and None not in shortcuts
    return {
        "type": node.get("type"),
        "schema": node,
        "rules": rules,
        "shortcuts": shortcuts,
        "properties": properties,
        "items": items,
        "map_keys": node.get("x-kubernetes-list-map-keys") if node.get("x-kubernetes-list-type") == "map" else None,
        "settled_by": tuple(shortcuts) if settled else None,
    }


RULE_TREE = _annotate(table.COS_SCHEMA)   # the table's rules, compiled, only where some subtree has one


MISSING = object()


# judge(rule tree node, value, old value or MISSING, path, errors found so far): the rules of one node
Judge = Callable[[Obj, Any, Any, str, list[FieldError]], None]


def walk(node: Obj, value: Any, old: Any, path: str, out: list[FieldError], judge: Judge, *,
         shortcuts: bool = False) -> None:
    """Visit every part of ``value`` that the rule tree has rules for and whose type is right (a wrong type is
    reported by the structure pass; rules cannot judge it), with its old value where Kubernetes correlates one
    (through maps and list-maps), and let ``judge`` judge its rules. With ``shortcuts`` (a judge that trusts
    them), a list item its node's shortcuts settle (``settled_by``) is not visited at all: no path is built for
    it and no judge called."""
    check = _TYPE_CHECKS.get(node["type"] or "")
    if check is not None and not check(value):
        return
    judge(node, value, old, path, out)
    if node["properties"] and isinstance(value, dict):
        for name, sub in node["properties"].items():
            if name in value:
                child_old = old[name] if isinstance(old, dict) and name in old else MISSING
                walk(sub, value[name], child_old, f"{path}.{name}" if path else name, out, judge,
                     shortcuts=shortcuts)
    if node["items"] is not None and isinstance(value, list):
        old_items = _correlate(node["map_keys"], old)
        settled = node["items"]["settled_by"] if shortcuts else None
        for i, item in enumerate(value):
            if settled is not None and all(holds(item) for holds in settled):
                continue
            item_old = MISSING
            if old_items is not None and isinstance(item, dict):
                item_old = old_items.get(_key_of(node["map_keys"], item), MISSING)
            walk(node["items"], item, item_old, f"{path}[{i}]", out, judge, shortcuts=shortcuts)


def violation(node: Obj, value: Any, path: str, message: str) -> FieldError:
    """A rule that does not hold, as the API server reports it: the value shown only when it is a scalar."""
    shown = value if node["type"] in ("string", "integer", "number", "boolean") else OMIT
    return invalid(path or "<nil>", shown, message)


def _judge_lazily(node: Obj, value: Any, old: Any, path: str, out: list[FieldError]) -> None:
    """The rules of one node over the values themselves: a rule with a shortcut that holds costs a few dictionary
    lookups, and the CEL view of a value (``cel_views``) is built only where a CEL program must run. The views of
    a subtree are those the whole object's view holds there (``cel_views`` recurses the same way; only the
    tokens' text differs, and the rules compare tokens only with each other)."""
    views: tuple[Any, Any] | None = None
    for rule, shortcut in zip(node["rules"], node["shortcuts"], strict=True):
        if rule.is_transition and old is MISSING:
            continue
        if shortcut is not None and shortcut(value):
            continue
        if views is None:
            views = cel_views(value, old, node["schema"], path)
        if not rule.holds(views[0], None if old is MISSING else views[1]):
            out.append(violation(node, value, path, rule.message))


def _key_of(keys: list[str], item: Obj) -> str:
    return json.dumps([item.get(k) for k in keys])


def _correlate(keys: list[str] | None, old: Any) -> dict[str, Any] | None:
    """Old items by list-map key: Kubernetes correlates ``oldSelf`` only through maps and list-maps."""
    if not keys or not isinstance(old, list):
        return None
    return {_key_of(keys, item): item for item in old if isinstance(item, dict)}


OPAQUE_TOKEN_KEY = "\x00content"


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values as CEL sees it: like Python's ``==`` (so ``1 == 1.0``), except that a boolean
    never equals a number (Python's ``True == 1`` would let ``1`` -> ``true`` pass as "unchanged").

    Identical compact JSON encodings (orjson, C code: 1.8 ms for a maximal COS's phases) settle the common
    case, a value compared with itself unchanged, at once: ``true`` is not ``1`` there, nor ``1.0`` ``1``, so
    equal encodings mean equal values of equal types. Where orjson cannot encode a value (nested over 255
    deep, integers beyond 64 bits, lone surrogates), ``marshal`` (C code too, any depth; booleans encode unlike
    integers) does the same. Encodings also reflect key order, so a difference proves nothing: then Python's
    C-level ``==`` decides, and the values are walked for booleans only when it says equal. The values are
    JSON: no NaN or infinity (every reader here refuses them; orjson would write them as ``null``).
    """
    try:
        if orjson.dumps(a) == orjson.dumps(b):
            return True
    except orjson.JSONEncodeError:
        if marshal.dumps(a) == marshal.dumps(b):
            return True
    return a == b and _same_kinds(a, b)


def _same_kinds(a: Any, b: Any) -> bool:
    """Whether values already ``==`` hold booleans at the same places (a loop, not recursion: any depth)."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if type(x) is not type(y):
                return False
        elif isinstance(x, dict):
            pending.extend((v, y[k]) for k, v in x.items())
        elif isinstance(x, list):
            pending.extend(zip(x, y, strict=False))
    return True


def _shell(manifest: Obj, token: str) -> Obj:
    view: Obj = {k: manifest[k] for k in ("apiVersion", "kind", "metadata") if k in manifest}
    view[OPAQUE_TOKEN_KEY] = token
    return view


def cel_views(new: Any, old: Any = MISSING, node: Obj = table.COS_SCHEMA, path: str = "") -> tuple[Any, Any]:
    """``new`` and ``old`` as the table's CEL rules see them: pruned to the schema (as the API server's CEL
    input is), with each embedded manifest reduced to apiVersion, kind and metadata plus a token.

    Tokens are equal exactly when the manifests at the same position in ``new`` and ``old`` are equal
    (Python's deep equality, which like CEL's treats 1 and 1.0 as equal). No rule of the table reads inside
    an embedded manifest; the rules that involve one test its presence or compare lists position by
    position, so every rule judges the views exactly as it would the full values. The CEL runtime then
    converts a few keys per manifest instead of its whole tree: on a maximal COS, ~120 ms of CEL time
    becomes ~30 ms, without serializing anything.
    """
    has_old = old is not MISSING
    if node.get("x-kubernetes-embedded-resource"):
        if isinstance(new, dict) and has_old and isinstance(old, dict) and json_equal(new, old):
            return _shell(new, "=" + path), _shell(old, "=" + path)
        return (_shell(new, "+" + path) if isinstance(new, dict) else new,
                _shell(old, "-" + path) if has_old and isinstance(old, dict) else old)
    props = node.get("properties")
    if props is not None and (isinstance(new, dict) or isinstance(old, dict)):
        nv: Any = {} if isinstance(new, dict) else new
        ov: Any = {} if isinstance(old, dict) else old
        for key, sub in props.items():
            n = new.get(key, MISSING) if isinstance(new, dict) else MISSING
            o = old.get(key, MISSING) if isinstance(old, dict) else MISSING
            if n is MISSING and o is MISSING:
                continue
            cn, co = cel_views(n, o, sub, f"{path}.{key}")
            if n is not MISSING:
                nv[key] = cn
            if o is not MISSING:
                ov[key] = co
        return nv, ov
    items = node.get("items")
    if items is not None and (isinstance(new, list) or isinstance(old, list)):
        new_list = new if isinstance(new, list) else []
        old_list = old if isinstance(old, list) else []
        nv, ov = (new if not isinstance(new, list) else []), (old if not isinstance(old, list) else [])
        for i in range(max(len(new_list), len(old_list))):
            n = new_list[i] if i < len(new_list) else MISSING
            o = old_list[i] if i < len(old_list) else MISSING
            cn, co = cel_views(n, o, items, f"{path}[{i}]")
            if n is not MISSING:
                nv.append(cn)
            if o is not MISSING:
                ov.append(co)
        return nv, ov
    return new, old


def cel_errors(obj: Any, old: Any = MISSING) -> list[FieldError]:
    """Every rule of the table that does not hold; transition rules only where ``old`` has the field."""
    out: list[FieldError] = []
    walk(RULE_TREE, obj, MISSING if old is None else old, "", out, _judge_lazily, shortcuts=True)
    return out
