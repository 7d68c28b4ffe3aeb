"""Validation of ClusterObjectSets and object-data Secrets: every violation at once.

Three passes over a COS, each reading the rule table in ``common.contract.schema``:

1. structure: the OpenAPI schema with ``jsonschema`` (types, enums, required, bounds, list-map keys), each
   failure translated into the field error the API server prints for it;
2. CEL: every ``x-kubernetes-validations`` rule, with Kubernetes semantics (``common.contract.cel``), on every part
   whose type is right, so one denial lists the CEL violations too (the API server stops at the first
   structural error; authors fixing manifests want the whole list);
3. what CRD validation cannot express (``shared/spec/api-and-admission.md`` section 3): embedded manifests'
   identity and metadata, duplicates across phases, selector operators, removal and reordering of phases,
   plus warnings.

Functions return ``(errors, warnings)`` and never raise on bad input: any JSON value is judged.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import marshal
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from jsonschema import Draft7Validator, ValidationError, validators

from common.contract import api, names, objectdata
from common.contract import schema as table
from common.contract.cel import compile_rule
from common.contract.fielderrors import (
    OMIT,
    ErrorType,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)

Obj = dict[str, Any]

# A COS is stored in etcd as one JSON value. etcd refuses a request over its --max-request-bytes, 1.5 MiB by
# default ("etcdserver: request is too large"), and the value it would hold is at least the object's compact
# JSON (the API server adds metadata and escapes <, > and & as six bytes each; on a too-large create it retries
# without metadata.managedFields, so those are not counted). Over the limit the API server cannot store the COS
# whatever the webhook says; between SIZE_WARNING_BYTES and the limit it might not (managedFields, a client-side
# apply's last-applied annotation and etcd's own framing all count), so that band is a warning.
SIZE_WARNING_BYTES = 1024 * 1024
ETCD_MAX_REQUEST_BYTES = 1536 * 1024  # 1572864: etcd's default --max-request-bytes (a cluster may raise it)

ETCD_LIMIT_TEXT = "1.5 MiB"
FORBIDDEN_METADATA = ("uid", "resourceVersion", "generation", "generateName", "finalizers", "ownerReferences")
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


# --------------------------------------------------------------------------------------------------------
# Pass 1: structure
# --------------------------------------------------------------------------------------------------------

def _required(validator: Any, names_: list[str], instance: Any, schema: Obj) -> Iterator[ValidationError]:
    """``required`` that reports the missing property as its own path (field.Required(path.Child(name)))."""
    if isinstance(instance, dict):
        for name in names_:
            if name not in instance:
                yield ValidationError(f"{name} is required", path=[name], validator="required")


def _list_map_keys(validator: Any, keys: list[str], instance: Any, schema: Obj) -> Iterator[ValidationError]:
    """``x-kubernetes-list-map-keys``: no two items may share the key (field.Duplicate at the later index)."""
    if not isinstance(instance, list):
        return
    seen: set[str] = set()
    for i, item in enumerate(instance):
        if not isinstance(item, dict) or not all(k in item for k in keys):
            continue
        key = {k: item[k] for k in keys}
        marker = json.dumps(key, sort_keys=True)
        if marker in seen:
            yield ValidationError("duplicate", path=[i], instance=key, validator="x-kubernetes-list-map-keys")
        seen.add(marker)


def _format(validator: Any, fmt: str, instance: Any, schema: Obj) -> Iterator[ValidationError]:
    """Integer formats: a value outside int32/int64 cannot be stored (the API server refuses to decode it)."""
    bounds = _INT_RANGES.get(fmt)
    is_int = isinstance(instance, int) and not isinstance(instance, bool)
    if bounds and is_int and not bounds[0] <= instance <= bounds[1]:
        yield ValidationError("format", validator="format")


_StructuralValidator = validators.extend(
    Draft7Validator,
    {"required": _required, "x-kubernetes-list-map-keys": _list_map_keys, "format": _format},
)
_STRUCTURE = _StructuralValidator(table.COS_SCHEMA)


def json_type(value: Any) -> str:
    """The OpenAPI type name of a JSON value, as kube-openapi reports it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def format_path(parts: Any) -> str:
    """``spec.phases[0].name`` from ``["spec", "phases", 0, "name"]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _structural_error(err: ValidationError) -> FieldError | None:
    path = format_path(err.absolute_path)
    keyword = err.validator
    # The keyword's value in the schema and the value it judged: arbitrary JSON, and set on every error
    # iter_errors yields (the stubs also allow Unset, for a ValidationError made by hand).
    expected: Any = err.validator_value
    value: Any = err.instance
    if keyword == "type":
        actual = json_type(value)
        return type_invalid(path, actual, f'{path} in body must be of type {expected}: "{actual}"')
    if keyword == "required":
        return required(path)
    if keyword == "enum":
        return not_supported(path, value, expected)
    if keyword == "minimum":
        return invalid(path, value, f"{path} in body should be greater than or equal to {expected}")
    if keyword == "maximum":
        return invalid(path, value, f"{path} in body should be less than or equal to {expected}")
    if keyword == "minLength":
        return invalid(path, value, f"{path} in body should be at least {expected} chars long")
    if keyword == "maxLength":
        return too_long(path, expected)
    if keyword == "minItems":
        return invalid(path, len(value), f"{path} in body should have at least {expected} items")
    if keyword == "maxItems":
        return too_many(path, len(value), expected)
    if keyword == "pattern":
        return invalid(path, value, f"{path} in body should match '{expected}'")
    if keyword == "format":
        return invalid(path, value, f'{path} in body must be of type {expected}: "{value}"')
    if keyword == "x-kubernetes-list-map-keys":
        return duplicate(path, value)
    return invalid(path, OMIT, err.message)  # a keyword the table does not use today


def _flatten(errors: Iterator[ValidationError]) -> Iterator[ValidationError]:
    for err in errors:
        if err.context:  # anyOf/oneOf: not used by the table, but never lose a failure
            yield from _flatten(iter(err.context))
        else:
            yield err


class _Unsupported(Exception):
    """The table uses a keyword the fast check does not know: every object then goes through jsonschema."""


Check = Callable[[Any], bool]
# Keywords jsonschema ignores (annotations, or read by the other passes).
_ANNOTATIONS = frozenset({"description", "x-kubernetes-validations", "x-kubernetes-embedded-resource",
                          "x-kubernetes-preserve-unknown-fields", "x-kubernetes-list-type"})
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,), "number": (int, float),
    "boolean": (bool,),
}


def _compile_valid(node: Obj) -> Check:
    """A predicate over a JSON value that is true only when ``_STRUCTURE`` reports nothing for it.

    It answers "certainly valid" for the common case in a few microseconds per object, where jsonschema
    spends tens (it builds an error iterator per keyword and per value); false means "maybe not", and then
    jsonschema judges the whole object, so every message and order comes from one place. It is therefore
    stricter wherever that is simpler: exact types (a ``1.0`` for an integer field, which Draft 7 accepts,
    goes to jsonschema), and a keyword it does not know makes the compiler raise ``_Unsupported``.
    """
    unknown = set(node) - _ANNOTATIONS - {
        "type", "enum", "minLength", "maxLength", "pattern", "minimum", "maximum", "format", "minItems",
        "maxItems", "items", "properties", "required", "additionalProperties", "x-kubernetes-list-map-keys"}
    if unknown:
        raise _Unsupported(", ".join(sorted(unknown)))
    kind = node.get("type")
    if kind not in _EXACT_TYPES:
        if set(node) - _ANNOTATIONS:
            raise _Unsupported(f"type {kind!r}")
        return lambda value: True
    types = _EXACT_TYPES[kind]
    checks: list[Check] = []
    if "enum" in node:
        if kind != "string" or not all(isinstance(e, str) for e in node["enum"]):
            raise _Unsupported("enum")
        allowed_values = frozenset(node["enum"])
        checks.append(lambda v: v in allowed_values)
    if "minLength" in node or "maxLength" in node:
        lo, hi = node.get("minLength", 0), node.get("maxLength")
        checks.append(lambda v: len(v) >= lo and (hi is None or len(v) <= hi))
    if "pattern" in node:
        search = re.compile(node["pattern"]).search  # what jsonschema's ``pattern`` calls
        checks.append(lambda v: search(v) is not None)
    if "minimum" in node or "maximum" in node or node.get("format") in _INT_RANGES:
        lo_n, hi_n = node.get("minimum"), node.get("maximum")
        bounds = _INT_RANGES.get(node.get("format", ""))
        checks.append(lambda v: (lo_n is None or v >= lo_n) and (hi_n is None or v <= hi_n)
                      and (bounds is None or bounds[0] <= v <= bounds[1]))
    if "minItems" in node or "maxItems" in node:
        lo_i, hi_i = node.get("minItems", 0), node.get("maxItems")
        checks.append(lambda v: len(v) >= lo_i and (hi_i is None or len(v) <= hi_i))
    if "x-kubernetes-list-map-keys" in node:
        keys = node["x-kubernetes-list-map-keys"]
        checks.append(lambda v: next(_list_map_keys(None, keys, v, node), None) is None)
    if "items" in node:
        item_valid = _compile_valid(node["items"])
        checks.append(lambda v: all(map(item_valid, v)))
    if "required" in node:
        names_required = tuple(node["required"])
        checks.append(lambda v: all(name in v for name in names_required))
    if "properties" in node:
        props = tuple((name, _compile_valid(sub)) for name, sub in node["properties"].items())
        checks.append(lambda v: all(sub_valid(v[name]) for name, sub_valid in props if name in v))
    if "additionalProperties" in node:
        if not isinstance(node["additionalProperties"], dict):
            raise _Unsupported("additionalProperties")
        declared = frozenset(node.get("properties", {}))
        extra_valid = _compile_valid(node["additionalProperties"])
        checks.append(lambda v: all(extra_valid(x) for k, x in v.items() if k not in declared))
    all_checks = tuple(checks)
    return lambda value: type(value) in types and all(check(value) for check in all_checks)


try:
    _VALID: Check | None = _compile_valid(table.COS_SCHEMA)
except _Unsupported:  # pragma: no cover - the table uses only known keywords (a test pins it)
    _VALID = None


def structural_errors(obj: Any) -> list[FieldError]:
    """Schema violations, one field error each; where a value has the wrong type, only the type error.

    A valid object (nearly every object) is recognised by ``_VALID`` without jsonschema; anything else is
    judged by jsonschema, so the errors are always ``structural_errors_reference``'s."""
    if _VALID is not None and _VALID(obj):
        return []
    return structural_errors_reference(obj)


def structural_errors_reference(obj: Any) -> list[FieldError]:
    """``structural_errors`` by jsonschema alone: the reference the fast check is tested against."""
    raw = list(_flatten(_STRUCTURE.iter_errors(obj)))
    type_paths = {tuple(e.absolute_path) for e in raw if e.validator == "type"}
    out: list[FieldError] = []
    for err in raw:
        if err.validator != "type" and tuple(err.absolute_path) in type_paths:
            continue
        fe = _structural_error(err)
        if fe is not None:
            out.append(fe)
    return out


# --------------------------------------------------------------------------------------------------------
# Pass 2: CEL
# --------------------------------------------------------------------------------------------------------

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
    return {
        "type": node.get("type"),
        "schema": node,
        "rules": rules,
        "shortcuts": [None if rule.is_transition else _SHORTCUTS.get(rule.expression) for rule in rules],
        "properties": {k: _annotate(v) for k, v in node.get("properties", {}).items() if _has_rules(v)},
        "items": _annotate(node["items"]) if "items" in node and _has_rules(node["items"]) else None,
        "map_keys": node.get("x-kubernetes-list-map-keys") if node.get("x-kubernetes-list-type") == "map" else None,
    }


_CEL_TREE = _annotate(table.COS_SCHEMA)
_MISSING = object()


def _cel_walk(node: Obj, value: Any, old: Any, path: str, out: list[FieldError]) -> None:
    check = _TYPE_CHECKS.get(node["type"] or "")
    if check is not None and not check(value):
        return  # a type error already reported; rules cannot judge this value
    for rule in node["rules"]:
        if rule.is_transition and old is _MISSING:
            continue
        if not rule.holds(value, None if old is _MISSING else old):
            shown = value if node["type"] in ("string", "integer", "number", "boolean") else OMIT
            out.append(invalid(path or "<nil>", shown, rule.message))
    if node["properties"] and isinstance(value, dict):
        for name, sub in node["properties"].items():
            if name in value:
                child_old = old[name] if isinstance(old, dict) and name in old else _MISSING
                _cel_walk(sub, value[name], child_old, f"{path}.{name}" if path else name, out)
    if node["items"] is not None and isinstance(value, list):
        old_items = _correlate(node["map_keys"], old)
        for i, item in enumerate(value):
            item_old = _MISSING
            if old_items is not None and isinstance(item, dict):
                item_old = old_items.get(_key_of(node["map_keys"], item), _MISSING)
            _cel_walk(node["items"], item, item_old, f"{path}[{i}]", out)


def _cel_walk_raw(node: Obj, value: Any, old: Any, path: str, out: list[FieldError]) -> None:
    """``_cel_walk`` over the values themselves: a rule with a shortcut that holds costs a few dictionary
    lookups, and the CEL view of a value (``cel_views``) is built only where a CEL program must run. The
    views of a subtree are those the whole object's view holds there (``cel_views`` recurses the same way;
    only the tokens' text differs, and the rules compare tokens only with each other)."""
    check = _TYPE_CHECKS.get(node["type"] or "")
    if check is not None and not check(value):
        return
    views: tuple[Any, Any] | None = None
    for rule, shortcut in zip(node["rules"], node["shortcuts"], strict=True):
        if rule.is_transition and old is _MISSING:
            continue
        if shortcut is not None and shortcut(value):
            continue
        if views is None:
            views = cel_views(value, old, node["schema"], path)
        if not rule.holds(views[0], None if old is _MISSING else views[1]):
            shown = value if node["type"] in ("string", "integer", "number", "boolean") else OMIT
            out.append(invalid(path or "<nil>", shown, rule.message))
    if node["properties"] and isinstance(value, dict):
        for name, sub in node["properties"].items():
            if name in value:
                child_old = old[name] if isinstance(old, dict) and name in old else _MISSING
                _cel_walk_raw(sub, value[name], child_old, f"{path}.{name}" if path else name, out)
    if node["items"] is not None and isinstance(value, list):
        old_items = _correlate(node["map_keys"], old)
        for i, item in enumerate(value):
            item_old = _MISSING
            if old_items is not None and isinstance(item, dict):
                item_old = old_items.get(_key_of(node["map_keys"], item), _MISSING)
            _cel_walk_raw(node["items"], item, item_old, f"{path}[{i}]", out)


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

    Python's C-level ``==`` rules out almost every difference first. Identical ``marshal`` encodings (C code,
    ~10x faster than JSON, and booleans encode unlike integers) then settle the common case: equal encodings
    mean equal values of equal types. Encodings also reflect key order and object sharing, so a difference
    there proves nothing; only then are the values walked.
    """
    if a != b:
        return False
    if marshal.dumps(a) == marshal.dumps(b):
        return True
    return _same_kinds(a, b)


def _same_kinds(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b)
    if isinstance(a, dict):
        return all(_same_kinds(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return all(_same_kinds(x, y) for x, y in zip(a, b, strict=False))
    return True


def prune_nulls(value: Any, node: Obj = table.COS_SCHEMA) -> Any:
    """``value`` without ``null`` in fields the schema declares (none is nullable), as the API server prunes
    them before admission: a webhook never sees them, and the offline validator must not judge them either.
    Embedded manifests are left as they are (the API server keeps what it does not know)."""
    if node.get("x-kubernetes-embedded-resource"):
        return value
    props = node.get("properties")
    if props is not None and isinstance(value, dict):
        out: dict[str, Any] | None = None  # copied only when something below changes
        for i, (k, v) in enumerate(value.items()):
            sub = props.get(k)
            pruned = v if sub is None else (_PRUNED if v is None else prune_nulls(v, sub))
            if pruned is not v and out is None:
                out = dict(list(value.items())[:i])
            if out is not None and pruned is not _PRUNED:
                out[k] = pruned
        return value if out is None else out
    items = node.get("items")
    if items is not None and isinstance(value, list):
        pruned_items = [prune_nulls(v, items) for v in value]
        return value if all(p is v for p, v in zip(pruned_items, value, strict=False)) else pruned_items
    return value


_PRUNED = object()


def _shell(manifest: Obj, token: str) -> Obj:
    view: Obj = {k: manifest[k] for k in ("apiVersion", "kind", "metadata") if k in manifest}
    view[OPAQUE_TOKEN_KEY] = token
    return view


def cel_views(new: Any, old: Any = _MISSING, node: Obj = table.COS_SCHEMA, path: str = "") -> tuple[Any, Any]:
    """``new`` and ``old`` as the table's CEL rules see them: pruned to the schema (as the API server's CEL
    input is), with each embedded manifest reduced to apiVersion, kind and metadata plus a token.

    Tokens are equal exactly when the manifests at the same position in ``new`` and ``old`` are equal
    (Python's deep equality, which like CEL's treats 1 and 1.0 as equal). No rule of the table reads inside
    an embedded manifest; the rules that involve one test its presence or compare lists position by
    position, so every rule judges the views exactly as it would the full values. The CEL runtime then
    converts a few keys per manifest instead of its whole tree: on a maximal COS, ~120 ms of CEL time
    becomes ~30 ms, without serializing anything.
    """
    has_old = old is not _MISSING
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
            n = new.get(key, _MISSING) if isinstance(new, dict) else _MISSING
            o = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
            if n is _MISSING and o is _MISSING:
                continue
            cn, co = cel_views(n, o, sub, f"{path}.{key}")
            if n is not _MISSING:
                nv[key] = cn
            if o is not _MISSING:
                ov[key] = co
        return nv, ov
    items = node.get("items")
    if items is not None and (isinstance(new, list) or isinstance(old, list)):
        new_list = new if isinstance(new, list) else []
        old_list = old if isinstance(old, list) else []
        nv, ov = (new if not isinstance(new, list) else []), (old if not isinstance(old, list) else [])
        for i in range(max(len(new_list), len(old_list))):
            n = new_list[i] if i < len(new_list) else _MISSING
            o = old_list[i] if i < len(old_list) else _MISSING
            cn, co = cel_views(n, o, items, f"{path}[{i}]")
            if n is not _MISSING:
                nv.append(cn)
            if o is not _MISSING:
                ov.append(co)
        return nv, ov
    return new, old


def cel_errors(obj: Any, old: Any = _MISSING) -> list[FieldError]:
    """Every rule of the table that does not hold; transition rules only where ``old`` has the field."""
    out: list[FieldError] = []
    _cel_walk_raw(_CEL_TREE, obj, _MISSING if old is None else old, "", out)
    return out


def cel_errors_reference(obj: Any, old: Any = _MISSING) -> list[FieldError]:
    """``cel_errors`` with every rule evaluated by CEL on the whole object's views: the reference the
    shortcuts and lazy views are tested against."""
    out: list[FieldError] = []
    new_view, old_view = cel_views(obj, _MISSING if old is None else old)
    _cel_walk(_CEL_TREE, new_view, old_view, "", out)
    return out


# --------------------------------------------------------------------------------------------------------
# Pass 3: what the CRD cannot express
# --------------------------------------------------------------------------------------------------------

def _parse_group_version(api_version: str) -> str | None:
    """schema.ParseGroupVersion's error text, or None when ``api_version`` parses."""
    if api_version.count("/") > 1:
        return f"unexpected GroupVersion string: {api_version}"
    return None


def _embedded_identity_errors(manifest: Obj, path: str) -> list[FieldError]:
    """An inline manifest's apiVersion and kind, as the API server checks embedded resources itself (after
    the schema, before list-map keys and CEL)."""
    errs: list[FieldError] = []
    for field in ("apiVersion", "kind"):
        if field not in manifest:
            errs.append(required(f"{path}.{field}"))  # the API server's words: no detail
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if "apiVersion" in manifest:
        if not isinstance(api_version, str):
            errs.append(invalid(f"{path}.apiVersion", api_version, "must be a string"))
        elif not api_version:
            errs.append(invalid(f"{path}.apiVersion", api_version, "must not be empty"))
        elif (msg := _parse_group_version(api_version)) is not None:
            errs.append(invalid(f"{path}.apiVersion", api_version, msg))
    if "kind" in manifest:
        if not isinstance(kind, str):
            errs.append(invalid(f"{path}.kind", kind, "must be a string"))
        elif not kind:
            errs.append(invalid(f"{path}.kind", kind, "must not be empty"))
        elif msgs := names.is_dns1035_label(kind.lower()):
            errs.append(invalid(f"{path}.kind", kind,
                                "may have mixed case, but should otherwise match: " + ",".join(msgs)))
    return errs


def _inline_manifests(obj: Obj) -> Iterator[tuple[str, Obj]]:
    spec = obj.get("spec")
    phases = spec.get("phases") if isinstance(spec, dict) else None
    for i, phase in enumerate(phases if isinstance(phases, list) else []):
        objects = phase.get("objects") if isinstance(phase, dict) else None
        for j, entry in enumerate(objects if isinstance(objects, list) else []):
            manifest = entry.get("object") if isinstance(entry, dict) else None
            if isinstance(manifest, dict):
                yield f"spec.phases[{i}].objects[{j}].object", manifest


def _metadata_valid(meta: Any) -> bool:
    """True only when ``_metadata_errors`` finds nothing: the common case decided with the (cached) name
    checks and no error objects or paths built; anything else goes to ``_metadata_errors`` for its words."""
    if type(meta) is not dict:
        return False
    if "name" in meta:
        name = meta["name"]
        if type(name) is not str or names.is_valid_path_segment_name(name):
            return False
    if "namespace" in meta:
        namespace = meta["namespace"]
        if type(namespace) is not str or (namespace and names.is_dns1123_label(namespace)):
            return False
    if "labels" in meta:
        labels = meta["labels"]
        if type(labels) is not dict or not all(
                type(v) is str and not names.is_qualified_name(k) and not names.is_valid_label_value(v)
                for k, v in labels.items()):
            return False
    if "annotations" in meta:
        annotations = meta["annotations"]
        if type(annotations) is not dict or not all(
                type(v) is str and not names.is_qualified_name(k.lower()) for k, v in annotations.items()):
            return False
    return not any(field in meta and meta[field] not in (None, "", 0, [], {}) for field in FORBIDDEN_METADATA)


def _metadata_errors(meta: Any, path: str) -> list[FieldError]:
    if _metadata_valid(meta):
        return []
    return metadata_errors_reference(meta, path)


def metadata_errors_reference(meta: Any, path: str) -> list[FieldError]:
    """An embedded manifest's metadata judged field by field: the reference ``_metadata_valid`` is tested
    against, and the words of every error."""
    if not isinstance(meta, dict):
        return [type_invalid(path, json_type(meta), f'{path} in body must be of type object: "{json_type(meta)}"')]
    errs: list[FieldError] = []
    for field in ("name", "namespace"):
        if field in meta and not isinstance(meta[field], str):
            actual = json_type(meta[field])
            errs.append(type_invalid(f"{path}.{field}", actual,
                                     f'{path}.{field} in body must be of type string: "{actual}"'))
    name = meta.get("name")
    if isinstance(name, str):
        errs.extend(invalid(f"{path}.name", name, msg) for msg in names.is_valid_path_segment_name(name))
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        errs.extend(invalid(f"{path}.namespace", namespace, msg) for msg in names.is_dns1123_label(namespace))
    for field in ("labels", "annotations"):
        if field not in meta:
            continue
        mapping = meta[field]
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            errs.append(type_invalid(f"{path}.{field}", json_type(mapping),
                                     f"{path}.{field} in body must be a map of strings"))
            continue
        if field == "labels":
            errs.extend(names.validate_labels(mapping, f"{path}.labels"))
        else:
            for key in mapping:
                errs.extend(invalid(f"{path}.annotations", key, msg) for msg in names.is_qualified_name(key.lower()))
    for field in FORBIDDEN_METADATA:
        if field in meta and meta[field] not in (None, "", 0, [], {}):
            errs.append(forbidden(f"{path}.{field}", "must be empty"))
    return errs


def _identity(manifest: Obj) -> tuple[str, str, str, str] | None:
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    meta = manifest.get("metadata")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not isinstance(meta, dict):
        return None
    name, namespace = meta.get("name"), meta.get("namespace") or ""
    if not isinstance(name, str) or not name or not isinstance(namespace, str):
        return None
    group = api_version.rpartition("/")[0]
    return group, kind, namespace, name


def _spec_extras(spec: Obj, old_spec: Any, system_namespace: str) -> tuple[list[FieldError], list[str]]:
    errs: list[FieldError] = []
    warnings: list[str] = []
    phases = spec.get("phases")
    if isinstance(old_spec, dict):
        old_phases = old_spec.get("phases")
        if isinstance(old_phases, list) and old_phases and "phases" not in spec:
            errs.append(invalid("spec.phases", OMIT, table.MSG_PHASES_IMMUTABLE))
    seen_objects: dict[tuple[str, str, str, str], str] = {}
    seen_refs: dict[tuple[str, str, str], str] = {}
    for i, phase in enumerate(phases if isinstance(phases, list) else []):
        if not isinstance(phase, dict):
            continue
        name = phase.get("name")
        if isinstance(name, str) and name[:1].isdigit() and len(name) <= 63:
            warnings.append(f'spec.phases[{i}].name: "{name}" starts with a digit: a valid RFC 1123 label, '
                            "but implementations that require RFC 1035 labels reject it")
        objects = phase.get("objects")
        for j, entry in enumerate(objects if isinstance(objects, list) else []):
            if not isinstance(entry, dict):
                continue
            path = f"spec.phases[{i}].objects[{j}]"
            manifest = entry.get("object")
            if isinstance(manifest, dict):
                if "metadata" in manifest:  # ObjectMeta shape, no server-populated fields
                    errs.extend(_metadata_errors(manifest["metadata"], f"{path}.object.metadata"))
                ident = _identity(manifest)
                if ident is not None:
                    group, kind, namespace, obj_name = ident
                    if ident in seen_objects:
                        errs.append(duplicate(path, {"group": group, "kind": kind, "namespace": namespace,
                                                     "name": obj_name},
                                              f"the same object is already at {seen_objects[ident]}"))
                    else:
                        seen_objects[ident] = path
                    if group == "" and kind == "Secret":
                        shown = f"{namespace}/{obj_name}" if namespace else obj_name
                        warnings.append(f'{path}.object: inline Secret "{shown}" is readable by anyone who can '
                                        "read this ClusterObjectSet; put it in an object-data Secret and use a "
                                        "ref instead")
            ref = entry.get("ref")
            if isinstance(ref, dict) and isinstance(ref.get("name"), str) and isinstance(ref.get("key"), str):
                ref_namespace = ref.get("namespace")
                namespace = ref_namespace if isinstance(ref_namespace, str) else ""
                ident_ref = (namespace or system_namespace, ref["name"], ref["key"])
                if ident_ref in seen_refs:
                    errs.append(duplicate(path, {"name": ident_ref[1], "namespace": ident_ref[0],
                                                 "key": ident_ref[2]},
                                          f"the same ref is already at {seen_refs[ident_ref]}"))
                else:
                    seen_refs[ident_ref] = path
    probes = spec.get("progressionProbes")
    for i, probe in enumerate(probes if isinstance(probes, list) else []):
        selector = probe.get("selector") if isinstance(probe, dict) else None
        label = selector.get("label") if isinstance(selector, dict) else None
        if isinstance(label, dict):
            errs.extend(names.validate_label_selector(label, f"spec.progressionProbes[{i}].selector.label"))
    return errs, warnings


def unknown_fields(obj: Any, node: Obj = table.COS_SCHEMA, path: str = "") -> list[str]:
    """Fields the schema does not declare: the API server prunes them silently, so say so (as kubectl's
    field validation warning does) instead of losing an author's typo without a word."""
    found: list[str] = []
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return found
    if isinstance(obj, dict) and "properties" in node:
        for key, value in obj.items():
            sub = node["properties"].get(key)
            child = f"{path}.{key}" if path else key
            if sub is None:
                if not (path == "" and key in ("apiVersion", "kind", "metadata")):
                    found.append(child)
            elif key != "metadata":
                found.extend(unknown_fields(value, sub, child))
    elif isinstance(obj, list) and "items" in node:
        for i, item in enumerate(obj):
            found.extend(unknown_fields(item, node["items"], f"{path}[{i}]"))
    return found


def _compile_known(node: Obj, top: bool = True) -> Check:
    """A predicate true exactly when ``unknown_fields`` finds nothing: the same walk without building a
    path per value (on a maximal COS, a tenth of the judgement)."""
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return lambda value: True
    props = ({k: _compile_known(sub, False) for k, sub in node["properties"].items()}
             if "properties" in node else None)
    items = _compile_known(node["items"], False) if "items" in node else None
    implicit = frozenset(("apiVersion", "kind", "metadata") if top else ())

    def known(value: Any) -> bool:
        if isinstance(value, dict) and props is not None:
            for key, child in value.items():
                sub = props.get(key)
                if sub is None:
                    if key not in implicit:
                        return False
                elif key != "metadata" and not sub(child):
                    return False
            return True
        if isinstance(value, list) and items is not None:
            return all(map(items, value))
        return True
    return known


_KNOWN = _compile_known(table.COS_SCHEMA)


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def api_server_order(err: FieldError) -> tuple[tuple[int, int, str], ...]:
    """Sort key putting errors in the order a Kubernetes API server lists them, whatever the manifest's order:
    properties by name at each level, list items by index (``spec.phases[2]`` before ``spec.phases[10]``).
    ``sorted`` is stable, so several errors at one path keep the order of the rules that found them."""
    return tuple((0, int(index), "") if index else (1, 0, name) for name, index in _PATH_TOKEN.findall(err.field))


def _ratchet_phases(obj: Obj, old: Obj | None) -> tuple[Obj, Obj | None, bool]:
    """Validation ratcheting (Kubernetes 1.30+ does the same for CRDs): on an UPDATE that leaves
    ``spec.phases`` exactly as it was, the phases were judged when they were admitted and are not judged
    again. ``spec.phases`` is immutable, so this is nearly every UPDATE of a COS (archiving it, changing
    its labels or probes), and on a maximal COS it turns ~80 ms of checks into one ~3 ms comparison.

    Returns the objects to judge (with the unchanged phases set aside) and whether they were.
    """
    spec = obj.get("spec")
    old_spec = old.get("spec") if isinstance(old, dict) else None
    if not (isinstance(spec, dict) and isinstance(old_spec, dict) and "phases" in spec and "phases" in old_spec
            and json_equal(spec["phases"], old_spec["phases"])):
        return obj, old, False
    assert isinstance(old, dict)
    return ({**obj, "spec": {**spec, "phases": []}}, {**old, "spec": {**old_spec, "phases": []}}, True)


# The error a Kubernetes API server appends when a blocking structural rule failed and it skipped the CEL
# rules (and so never called a validating webhook either).
NOT_ALL_CHECKED = FieldError(
    ErrorType.INVALID, "<nil>", None,
    "some validation rules were not checked because the object was invalid; correct the existing errors to "
    "complete validation")
# apiextensions-apiserver's hasBlockingErr: after one of these, CEL rules are not evaluated.
_BLOCKING = {ErrorType.NOT_SUPPORTED, ErrorType.REQUIRED, ErrorType.TOO_LONG, ErrorType.TOO_MANY,
             ErrorType.TYPE_INVALID}


def _crd_errors(obj: Obj, old: Obj | None, *, every_rule: bool) -> list[FieldError]:
    """The CRD's own verdict in the API server's order: the name, the schema (properties by name, items by
    index), embedded manifests' apiVersion and kind, list-map key duplicates, then the CEL rules. The API
    server skips CEL after a blocking error and says so (``NOT_ALL_CHECKED``); ``every_rule`` runs them
    anyway, for the webhook and ``cosctl validate``, which report everything at once."""
    errors: list[FieldError] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        errors.append(required("metadata.name", "name or generateName is required"))
    structural = structural_errors(obj)
    errors += sorted((e for e in structural if e.type is not ErrorType.DUPLICATE), key=api_server_order)
    embedded = [e for path, manifest in _inline_manifests(obj) for e in _embedded_identity_errors(manifest, path)]
    errors += sorted(embedded, key=api_server_order)
    errors += sorted((e for e in structural if e.type is ErrorType.DUPLICATE), key=api_server_order)
    if not every_rule and any(e.type in _BLOCKING for e in errors):
        return [*errors, NOT_ALL_CHECKED]
    return errors + sorted(cel_errors(obj, old if isinstance(old, dict) else _MISSING), key=api_server_order)


def crd_errors(obj: Obj, old: Obj | None = None) -> list[FieldError]:
    """What a cluster's API server itself answers for this COS (``old`` on UPDATE) before any validating
    webhook is called, in its order; empty when the CRD admits it. ``validate_cos`` reports this and more at
    once; this is what ``kubectl apply`` shows on a cluster."""
    obj, old, _ = _ratchet_phases(obj, old)
    return _crd_errors(obj, old, every_rule=False)


def serialized_size(obj: Any) -> int:
    """Bytes of ``obj`` as compact UTF-8 JSON, as etcd would store it. orjson writes exactly what the stdlib
    writes with ``separators=(",", ":"), ensure_ascii=False``, 20x faster on a maximal COS (this was a fifth
    of the validating route's time); it refuses unpaired surrogates, which the stdlib path counts."""
    try:
        return len(orjson.dumps(obj))
    except (TypeError, orjson.JSONEncodeError):
        return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass"))


def validate_cos(obj: Obj, old: Obj | None = None, *,
                 system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE) -> tuple[list[FieldError], list[str]]:
    """Every violation of a ClusterObjectSet (``old`` given on UPDATE), and the warnings for it."""
    obj, old, ratcheted = _ratchet_phases(obj, old)
    errors = _crd_errors(obj, old, every_rule=True)
    warnings: list[str] = []
    spec = obj.get("spec")
    if isinstance(spec, dict):
        old_spec = old.get("spec") if isinstance(old, dict) else None
        extra_errors, extra_warnings = _spec_extras(spec, old_spec, system_namespace)
        errors += sorted(extra_errors, key=api_server_order)
        warnings += extra_warnings
    if not _KNOWN(obj):
        warnings += [f'unknown field "{p}"' for p in unknown_fields(obj)]
    if ratcheted:
        # judged when the phases were admitted; and that they were stored proves this cluster's etcd takes them
        return errors, warnings
    size = serialized_size(obj)
    if size > ETCD_MAX_REQUEST_BYTES:
        size = stored_size(obj)
    if size > api.API_SERVER_MAX_REQUEST_BYTES:
        errors.append(too_large(size))
    elif size > ETCD_MAX_REQUEST_BYTES:
        warnings.append(f"this ClusterObjectSet is {size / 1048576:.2f} MiB serialized, over the {ETCD_LIMIT_TEXT} "
                        "etcd stores by default (unless its --max-request-bytes was raised); move large objects "
                        "into object-data Secrets and reference them with ref (cosctl pack does this)")
    elif size > SIZE_WARNING_BYTES:
        warnings.append(f"this ClusterObjectSet is {size / 1048576:.2f} MiB serialized, close to etcd's "
                        f"{ETCD_LIMIT_TEXT} object limit; move large objects into object-data Secrets and "
                        "reference them with ref (cosctl pack does this)")
    return errors, warnings


def stored_size(obj: Obj) -> int:
    """The fewest bytes etcd could be asked to store for ``obj``: its compact JSON without
    ``metadata.managedFields``, which the API server drops and retries without when a create or update is too
    large (k8s.io/apiserver endpoints/handlers, ``isTooLargeError``)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return serialized_size(obj)


def too_large(size: int) -> FieldError:
    """The denial of a COS no API server can store: over the request body it reads. Only ``cosctl validate``
    ever gives it (the API server refuses such a body before admission, "Request entity too large: limit is
    3145728"). Between etcd's default limit and this one the COS is allowed with a warning, as the spec's
    "larger than 1 MiB" row says: a cluster whose etcd takes larger requests stores it, and the webhook must not
    refuse what the cluster can hold."""
    return FieldError(ErrorType.TOO_LONG, "spec.phases", OMIT,
                      f"this ClusterObjectSet is {size} bytes serialized ({size / 1048576:.2f} MiB), over the "
                      f"{api.API_SERVER_MAX_REQUEST_BYTES} bytes (3 MiB) the API server reads in a request, so it can "
                      "never be stored: move objects into object-data Secrets and reference them with ref (cosctl "
                      "pack does this)")


# --------------------------------------------------------------------------------------------------------
# Object-data Secrets
# --------------------------------------------------------------------------------------------------------

_REVISION_LABEL_PATH = f"metadata.labels[{api.LABEL_REVISION_NAME}]"


def _labels(obj: Any) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _secret_values(secret: Obj) -> Iterator[tuple[str, bytes | None]]:
    """Each data key with its bytes (None when not valid base64); ``stringData`` merged over ``data`` as the
    API server does before admission (offline files may still carry it)."""
    values: dict[str, bytes | None] = {}
    data = secret.get("data")
    if isinstance(data, dict):
        for key, encoded in data.items():
            try:
                values[key] = base64.b64decode(encoded, validate=True) if isinstance(encoded, str) else None
            except (binascii.Error, ValueError):
                values[key] = None
    string_data = secret.get("stringData")
    if isinstance(string_data, dict):
        for key, text in string_data.items():
            values[key] = text.encode() if isinstance(text, str) else None
    yield from values.items()


def object_data_error(raw: bytes) -> str | None:
    """Why stored bytes are not a usable manifest (never quoting them), or None when they are."""
    try:
        doc = objectdata.load_json(objectdata.decode(raw))
    except objectdata.TooLarge:
        return f"decompressed data exceeds maximum size ({api.MAX_DECOMPRESSED_BYTES} bytes)"
    except objectdata.ObjectDataError as exc:
        return f"must be a JSON object manifest, optionally gzip-compressed: {exc}"
    if not isinstance(doc, dict):
        return f"must be a JSON object manifest, optionally gzip-compressed: got a JSON {json_type(doc)}"
    missing = [f for f in ("apiVersion", "kind") if not isinstance(doc.get(f), str) or not doc.get(f)]
    if missing:
        return "manifest must have a non-empty " + " and ".join(missing)
    return None


def content_key(raw: bytes) -> str:
    """The content address of stored bytes: SHA-256, base64url without padding (43 characters)."""
    return base64.urlsafe_b64encode(hashlib.sha256(raw).digest()).rstrip(b"=").decode()


def _looks_content_addressed(key: str) -> bool:
    return len(key) == 43 and all((c.isalnum() and c.isascii()) or c in "-_" for c in key)


def validate_secret(obj: Obj, old: Obj | None = None) -> tuple[list[FieldError], list[str]]:
    """The conventions of a Secret of type ``olm.operatorframework.io/object-data`` (other types pass).

    Messages name keys, never values: a Secret's content must not leak into responses or logs.
    """
    if obj.get("type") != api.SECRET_TYPE:
        return [], []
    errors: list[FieldError] = []
    warnings: list[str] = []
    labels = _labels(obj)
    revision = labels.get(api.LABEL_REVISION_NAME)
    if old is None:
        if obj.get("immutable") is False:
            errors.append(invalid("immutable", False, f"must be true for Secrets of type {api.SECRET_TYPE}"))
        if revision is None:
            errors.append(required(_REVISION_LABEL_PATH,
                                   "the name of the ClusterObjectSet revision this Secret belongs to"))
        for key, raw in _secret_values(obj):
            if raw is None:
                errors.append(invalid(f"data[{key}]", OMIT, "must be base64-encoded bytes"))
                continue
            problem = object_data_error(raw)
            if problem is not None:
                errors.append(invalid(f"data[{key}]", OMIT, problem))
            elif _looks_content_addressed(key) and content_key(raw) != key:
                warnings.append(f"data[{key}]: the key looks content-addressed (SHA-256, base64url) but does "
                                "not match its stored bytes; content addressing is broken")
    else:
        # A Secret admitted without the label (before the webhook was installed) may still be updated, e.g.
        # by step 3 of a crash-safe publish; what an UPDATE may not do is remove or change the label.
        old_revision = _labels(old).get(api.LABEL_REVISION_NAME)
        if old_revision is not None and revision is None:
            errors.append(required(_REVISION_LABEL_PATH, "may not be removed"))
        elif old_revision is not None and revision != old_revision:
            errors.append(invalid(_REVISION_LABEL_PATH, revision, "field is immutable"))
        if old_revision is not None:
            return errors, warnings  # unchanged: judged when it was set
    if isinstance(revision, str):
        errors.extend(invalid(_REVISION_LABEL_PATH, revision, msg) for msg in names.is_dns1123_subdomain(revision))
    elif revision is not None:
        errors.append(invalid(_REVISION_LABEL_PATH, OMIT, "must be a string"))
    return errors, warnings
