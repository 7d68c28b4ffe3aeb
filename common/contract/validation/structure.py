"""Pass 1 of judging a ClusterObjectSet: its structural schema, as the API server checks it.

The OpenAPI schema of the rule table (``common.contract.schema``) judged with ``jsonschema`` (types, enums,
required, bounds, list-map keys), each failure translated into the field error the API server prints for it
(:func:`schema_errors`). A compiled validity check recognises a valid object, nearly every object, in a few
microseconds without jsonschema (:func:`structural_errors`). The same schema says which fields the API server
would prune silently (:func:`unknown_fields`, a warning) and which ``null`` values it prunes before admission
(:func:`prune_nulls`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import Draft7Validator, ValidationError, validators

from common.contract import schema as table
from common.contract.fielderrors import (
    OMIT,
    FieldError,
    duplicate,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)

Obj = dict[str, Any]

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


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
        props = {name: _compile_valid(sub) for name, sub in node["properties"].items()}

        def properties_valid(v: Obj) -> bool:
            # a plain loop over the value's own keys: no generator per object (1,000 per maximal COS)
            for name, x in v.items():
                sub_valid = props.get(name)
                if sub_valid is not None and not sub_valid(x):
                    return False
            return True
        checks.append(properties_valid)
    if "additionalProperties" in node:
        if not isinstance(node["additionalProperties"], dict):
            raise _Unsupported("additionalProperties")
        declared = frozenset(node.get("properties", {}))
        extra_valid = _compile_valid(node["additionalProperties"])
        checks.append(lambda v: all(extra_valid(x) for k, x in v.items() if k not in declared))
    all_checks = tuple(checks)
    if not all_checks:
        return lambda value: type(value) in types
    if len(all_checks) == 1:
        (only,) = all_checks
        return lambda value: type(value) in types and only(value)
    return lambda value: type(value) in types and all(check(value) for check in all_checks)


try:
    _VALID: Check | None = _compile_valid(table.COS_SCHEMA)
except _Unsupported:  # pragma: no cover - the table uses only known keywords (a test pins it)
    _VALID = None


def structural_errors(obj: Any) -> list[FieldError]:
    """Schema violations, one field error each; where a value has the wrong type, only the type error.

    A valid object (nearly every object) is recognised by ``_VALID`` without jsonschema; anything else is
    judged by jsonschema, so the errors are always ``schema_errors``'s."""
    if _VALID is not None and _VALID(obj):
        return []
    return schema_errors(obj)


def schema_errors(obj: Any) -> list[FieldError]:
    """``structural_errors`` by jsonschema alone: the words of every structural error (and what the fast check
    is tested against)."""
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


# True exactly when unknown_fields finds nothing: what validate_cos asks of every object
only_known_fields = _compile_known(table.COS_SCHEMA)
