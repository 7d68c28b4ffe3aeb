"""OLM v1's CRD upgrade safety preflight: would replacing the cluster's CustomResourceDefinition with the one a new
revision carries break the custom resources already stored?

Why: a revision that changes a CRD changes what every existing custom resource of it must look like. Removing a
field prunes its data on the next write; removing an enum value, adding a required field or tightening a bound
makes existing objects fail validation on their next update; dropping a stored version strands them. OLM v1 refuses
such an install or upgrade unless the ClusterExtension says ``spec.install.preflight.crdUpgradeSafety.enforcement:
None``, and an admin moving from OLM v1 expects the same guard from ``cosctl publish``.

What it does is OLM v1's check (operator-controller's ``rukpak/preflights/crdupgradesafety`` over sigs.k8s.io/crdify,
with OLM's configuration: description changes allowed, enum additions allowed, any change no comparator handles
refused), comparator for comparator and message for message:

- whole CRD: ``existingFieldRemoval``, ``scope``, ``storedVersionRemoval``;
- each version the old CRD has, against the same version in the new one, property by property (the schema
  flattened into paths such as ``^.spec.replicas``): ``default``, ``enum``, ``maximum``, ``maxItems``,
  ``maxLength``, ``maxProperties``, ``minimum``, ``minItems``, ``minLength``, ``minProperties``, ``required``,
  ``type``, ``pattern``, ``nullable``, ``oneOf``, and ``unhandled`` for any other change of the property itself;
- between the served versions of the new CRD (``v1alpha1 -> v1``), unless it converts through a webhook: the same
  comparisons, reporting only what the old CRD's served versions did not already have.

Where OLM's text cannot be had, ours is close and deterministic: Go iterates maps in random order, so OLM's lines
come in random order (ours: by property path, then in crdify's order of comparators, version pairs in Kubernetes
version order); the ``unhandled`` detail is OLM's summary of a go-cmp diff, whose format
go-cmp itself keeps unstable (ours names each changed field the same way, ``Format "" -> "email"``, and shows
non-scalar values as ``<complex value>``, as OLM's summary does); a ``oneOf`` schema is printed as its JSON, where
Go prints its protobuf text. Schema values (``default``, ``enum``) are compared in Go's canonical JSON, so the
key order or number spelling a CRD was first written with never counts as a change.

Pure functions over plain ``dict`` objects; reading the live CRDs is the caller's (:mod:`.crdcheck`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any, Final, NamedTuple

import orjson

from common.contract.objects import Obj

from .registryv1.gotext import go_list, go_marshal_json, go_quote, go_v_float
from .registryv1.gounstructured import GoTypeError, roundtrip

__all__ = ["CRD_API_VERSION", "ENFORCEMENTS", "ENFORCEMENT_NONE", "ENFORCEMENT_STRICT", "CRDDecodeError",
           "assume_stored_versions", "crd_upgrade_errors", "is_crd", "preflight", "preflight_failure"]

CRD_API_VERSION: Final = "apiextensions.k8s.io/v1"
ENFORCEMENT_STRICT: Final = "Strict"
ENFORCEMENT_NONE: Final = "None"
ENFORCEMENTS: Final = (ENFORCEMENT_STRICT, ENFORCEMENT_NONE)  # OLM v1's crdUpgradeSafety.enforcement values


class CRDDecodeError(ValueError):
    """An object that does not decode as a CustomResourceDefinition (OLM v1 refuses it as well)."""


def is_crd(obj: Obj) -> bool:
    """Whether the preflight looks at ``obj``: OLM v1 checks ``apiextensions.k8s.io/v1`` CRDs only."""
    return obj.get("apiVersion") == CRD_API_VERSION and obj.get("kind") == "CustomResourceDefinition"


def assume_stored_versions(crd: Obj) -> Obj:
    """``crd`` with ``status.storedVersions`` filled in from its storage version when it has none: what a cluster
    holding it records at the least (for comparing two revisions offline, with no cluster to ask)."""
    status: Obj = crd["status"] if isinstance(crd.get("status"), dict) else {}
    if status.get("storedVersions"):
        return crd
    versions = crd["spec"].get("versions") if isinstance(crd.get("spec"), dict) else None
    if not isinstance(versions, list):
        versions = []  # the comparison says what is wrong, naming the field
    stored = [v["name"] for v in versions if isinstance(v, dict) and v.get("storage") and v.get("name")]
    return {**crd, "status": {**status, "storedVersions": stored}}


def preflight(new_objects: Iterable[Obj], existing: Callable[[str], Obj | None]) -> list[str]:
    """OLM v1's preflight over a revision's objects: for each CRD among them that ``existing(name)`` returns (the
    cluster's, or an older revision's), its refusal (:func:`preflight_failure`) when the change is unsafe. Empty:
    nothing to refuse. A CRD ``existing`` lacks has nothing stored under it to break. Raises
    :class:`CRDDecodeError` naming the CRD when either side is no CRD."""
    failures = []
    for obj in new_objects:
        if not is_crd(obj):
            continue
        name = str((obj.get("metadata") or {}).get("name") or "")
        old = existing(name)
        if old is None:
            continue
        try:
            errors = crd_upgrade_errors(old, obj)
        except CRDDecodeError as exc:
            raise CRDDecodeError(f"CustomResourceDefinition {name}: {exc}") from None
        if errors:
            failures.append(preflight_failure(name, errors))
    return failures


def preflight_failure(name: str, errors: list[str]) -> str:
    """OLM v1's refusal of one CRD: its name, then each failed comparison on a line of its own."""
    return f"validating upgrade for CRD {go_quote(name)}: " + "\n".join(errors)


# --- decoding: the CRD as the Go struct holds it ------------------------------------------------------------------


@dataclass(frozen=True)
class _Version:
    name: str
    served: bool
    schema: Obj | None


@dataclass(frozen=True)
class _CRD:
    scope: str
    versions: tuple[_Version, ...]
    stored_versions: tuple[str, ...]
    webhook_conversion: bool


def _decode(obj: Obj, which: str) -> _CRD:
    """``obj`` read as OLM v1 reads a CRD (``FromUnstructured`` into ``apiextensionsv1.CustomResourceDefinition``):
    fields Go lacks are dropped, zero values of ``omitempty`` fields are gone (Go's semantic equality holds an empty
    list equal to none), a value of the wrong type is an error naming its field."""
    try:
        typed = roundtrip("apiext.CustomResourceDefinition", obj)
    except GoTypeError as error:
        raise CRDDecodeError(f"the {which} CustomResourceDefinition does not decode: {error}") from None
    spec = typed.get("spec") or {}
    versions = tuple(_Version(str(v.get("name", "")), bool(v.get("served")),
                              (v.get("schema") or {}).get("openAPIV3Schema"))
                     for v in spec.get("versions") or [])
    conversion = spec.get("conversion") or {}
    return _CRD(str(spec.get("scope", "")), versions, tuple((typed.get("status") or {}).get("storedVersions") or ()),
                conversion.get("strategy") == "Webhook")


# --- the schema flattened into paths (crdify's SchemaHas walk and field.Path printing) ----------------------------


def _walk(schema: Obj | None, path: str) -> Iterator[tuple[str, Obj]]:
    """Every schema node with its simple location, in crdify's order (a later node of the same path wins)."""
    if schema is None:
        return
    yield path, schema
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _walk(items, path + ".items")
    elif isinstance(items, list):
        for i, item in enumerate(items):
            yield from _walk(item, f"{path}.items[{i}]")
    for keyword in ("allOf", "anyOf", "oneOf"):
        for i, item in enumerate(schema.get(keyword) or ()):
            yield from _walk(item, f"{path}.{keyword}[{i}]")
    yield from _walk(schema.get("not"), path + ".not")
    for name, item in (schema.get("properties") or {}).items():
        yield from _walk(item, f"{path}.{name}" if name else f"{path}[]")  # field.Path prints an empty name so
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], path + ".additionalProperties")
    for name, item in (schema.get("patternProperties") or {}).items():
        yield from _walk(item, f"{path}.patternProperties[{name}]")
    if isinstance(schema.get("additionalItems"), dict):
        yield from _walk(schema["additionalItems"], path + ".additionalItems")
    for name, item in (schema.get("definitions") or {}).items():
        yield from _walk(item, f"{path}.definitions[{name}]")
    for name, item in (schema.get("dependencies") or {}).items():
        if isinstance(item, dict):
            yield from _walk(item, f"{path}.dependencies[{name}]")


def _flatten(schema: Obj | None) -> dict[str, Obj]:
    return dict(_walk(schema, "^"))


def _without_children(schema: Obj) -> Obj:
    """The node alone: its ``properties`` and ``items`` are compared at their own paths."""
    return {k: v for k, v in schema.items() if k not in ("properties", "items")}


def _canonical(value: Any) -> str:
    """Go's ``json.Marshal`` text: what a ``JSON`` value's bytes are when OLM v1 wrote the CRD."""
    return go_marshal_json(value)


def _same(a: Any, b: Any) -> bool:
    """Whether two decoded values are the same to Go: equal :func:`_canonical` texts. Most nodes compared are
    unchanged and, decoded in Go's field order, encode to the very same bytes, which orjson (C code) tells at once;
    only otherwise (or beyond what orjson encodes: integers over 64 bits, nesting over 255) are the Go texts made."""
    try:
        if orjson.dumps(a) == orjson.dumps(b):
            return True
    except orjson.JSONEncodeError:
        pass
    return _canonical(a) == _canonical(b)


# --- the property comparators ---------------------------------------------------------------------------------------

_Comparator = Callable[[Obj, Obj], str | None]


def _raw_text(value: Any) -> str:
    """A schema value's text as OLM v1 holds it: Go's JSON of the value decoded into ``interface{}``, where an
    integer beyond int64 became a float64 (``12345678901234567890`` is ``12345678901234567000``)."""
    return "" if value is None else _canonical(_as_go_decodes(value))


_INT64: Final = range(-(2**63), 2**63)


def _as_go_decodes(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value in _INT64 else float(value)
    if isinstance(value, list):
        return [_as_go_decodes(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_go_decodes(v) for k, v in value.items()}
    return value


def _default(a: Obj, b: Obj) -> str | None:
    old, new = a.pop("default", None), b.pop("default", None)
    if old is None and new is not None:
        return f"default added when there was none previously : {go_quote(_raw_text(new))}"
    if old is not None and new is None:
        return f"default value removed : {go_quote(_raw_text(old))}"
    if old is not None and new is not None and _raw_text(old) != _raw_text(new):
        return f"default value changed : {go_quote(_raw_text(old))} -> {go_quote(_raw_text(new))}"
    return None


def _enum(a: Obj, b: Obj) -> str | None:
    old = {_raw_text(v) for v in a.pop("enum", None) or ()}
    new = {_raw_text(v) for v in b.pop("enum", None) or ()}
    if not old and new:
        return f"enum constraint added when there was none previously : {go_list(sorted(new))}"
    if old - new:
        return f"allowed enum values removed : {go_list(sorted(old - new))}"
    return None  # OLM v1 allows added values (additionPolicy: Allow)


def _number(value: Any, floating: bool) -> str:
    return go_v_float(float(value)) if floating else str(int(value))


def _bound(keyword: str, maximum: bool, floating: bool) -> _Comparator:
    word = "maximum" if maximum else "minimum"
    tighter = "decreased" if maximum else "increased"

    def compare(a: Obj, b: Obj) -> str | None:
        old, new = a.pop(keyword, None), b.pop(keyword, None)
        if old is None and new is not None:
            return f"{word} constraint added when there was none previously : {_number(new, floating)}"
        if old is not None and new is not None and (new < old if maximum else new > old):
            return f"{word} {tighter} : {_number(old, floating)} -> {_number(new, floating)}"
        return None
    return compare


def _required(a: Obj, b: Obj) -> str | None:
    added = set(b.pop("required", None) or ()) - set(a.pop("required", None) or ())
    return f"new required fields: {go_list(sorted(added))}" if added else None


def _type(a: Obj, b: Obj) -> str | None:
    old, new = a.pop("type", ""), b.pop("type", "")
    return f"type changed : {go_quote(old)} -> {go_quote(new)}" if old != new else None


def _description(a: Obj, b: Obj) -> str | None:
    a.pop("description", None)
    b.pop("description", None)
    return None  # OLM v1 does not enforce it: a description may change


def _pattern(a: Obj, b: Obj) -> str | None:
    old, new = a.pop("pattern", ""), b.pop("pattern", "")
    if old == new:
        return None
    if not old:
        return f"pattern added : {go_quote(old)} -> {go_quote(new)}"
    if not new:
        return f"pattern removed : {go_quote(old)} -> {go_quote(new)}"
    return f"pattern changed : {go_quote(old)} -> {go_quote(new)}"


def _nullable(a: Obj, b: Obj) -> str | None:
    old, new = bool(a.pop("nullable", False)), bool(b.pop("nullable", False))
    if old == new:
        return None
    word = "added" if new else "removed"
    return f"nullable {word} : {str(old).lower()} -> {str(new).lower()}"


def _one_of_text(schema: Obj) -> str:
    """One ``oneOf`` schema as the set compares it: without its documentation (description, title, example,
    externalDocs), in canonical JSON."""
    return _canonical({k: v for k, v in schema.items()
                       if k not in ("description", "title", "example", "externalDocs")})


def _one_of(a: Obj, b: Obj) -> str | None:
    old = {_one_of_text(s) for s in a.pop("oneOf", None) or ()}
    new = {_one_of_text(s) for s in b.pop("oneOf", None) or ()}
    if not old and new:
        return f"oneOf constraint added when there was none previously: {go_list(sorted(new))}"
    if old - new:
        return f"allowed oneOf schemas removed: {go_list(sorted(old - new))}"
    if new - old:
        return f"allowed oneOf schemas added: {go_list(sorted(new - old))}"
    return None


# In the order crdify registers them; each takes the fields it handles out of both copies, and whatever differs
# after all of them is ``unhandled``.
_PROPERTY_COMPARATORS: Final[tuple[tuple[str, _Comparator], ...]] = (
    ("default", _default),
    ("enum", _enum),
    ("maximum", _bound("maximum", True, True)),
    ("maxItems", _bound("maxItems", True, False)),
    ("maxLength", _bound("maxLength", True, False)),
    ("maxProperties", _bound("maxProperties", True, False)),
    ("minimum", _bound("minimum", False, True)),
    ("minItems", _bound("minItems", False, False)),
    ("minLength", _bound("minLength", False, False)),
    ("minProperties", _bound("minProperties", False, False)),
    ("required", _required),
    ("type", _type),
    ("description", _description),
    ("pattern", _pattern),
    ("nullable", _nullable),
    ("oneOf", _one_of),
)

# JSONSchemaProps' Go field names, in declaration order (what OLM v1's summary of an unhandled change names)
_GO_FIELDS: Final = {
    "id": "ID", "$schema": "Schema", "$ref": "Ref", "format": "Format", "title": "Title",
    "exclusiveMaximum": "ExclusiveMaximum", "exclusiveMinimum": "ExclusiveMinimum", "uniqueItems": "UniqueItems",
    "multipleOf": "MultipleOf", "allOf": "AllOf", "anyOf": "AnyOf", "not": "Not",
    "additionalProperties": "AdditionalProperties", "patternProperties": "PatternProperties",
    "dependencies": "Dependencies", "additionalItems": "AdditionalItems", "definitions": "Definitions",
    "externalDocs": "ExternalDocs", "example": "Example",
    "x-kubernetes-preserve-unknown-fields": "XPreserveUnknownFields",
    "x-kubernetes-embedded-resource": "XEmbeddedResource", "x-kubernetes-int-or-string": "XIntOrString",
    "x-kubernetes-list-map-keys": "XListMapKeys", "x-kubernetes-list-type": "XListType",
    "x-kubernetes-map-type": "XMapType", "x-kubernetes-validations": "XValidations",
}
_POINTERS: Final = frozenset({"$ref", "multipleOf", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-list-type",
                              "x-kubernetes-map-type"})
_ZERO_STRINGS: Final = frozenset({"id", "$schema", "format", "title"})
_ZERO_BOOLS: Final = frozenset({"exclusiveMaximum", "exclusiveMinimum", "uniqueItems",
                                "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string"})
_COMPLEX: Final = "<complex value>"


def _shown(key: str, value: Any) -> str:
    """A field's value as OLM v1's summary shows it: Go's printing of a string, bool or pointer to one (``nil``
    when absent), a ``[]string`` as Go writes it, ``<complex value>`` for schemas and other structures."""
    if key in _ZERO_STRINGS:
        return go_quote(value or "")
    if key in _ZERO_BOOLS:
        return "true" if value else "false"
    if value is None:
        return "nil"
    if key in _POINTERS:
        if isinstance(value, bool):
            return "&" + str(value).lower()
        if isinstance(value, str):
            return "&" + go_quote(value)
        if isinstance(value, int | float):
            return "&" + go_v_float(float(value))
    if key == "x-kubernetes-list-map-keys" and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(go_quote(v) for v in value) + "}"
    if key == "x-kubernetes-validations":
        return "ValidationRules{" + ", ".join(_validation_rule(rule) for rule in value) + "}"
    return _COMPLEX


_RULE_FIELDS: Final = (("rule", "Rule", ""), ("message", "Message", ""),
                       ("messageExpression", "MessageExpression", ""), ("reason", "Reason", "&"),
                       ("fieldPath", "FieldPath", ""), ("optionalOldSelf", "OptionalOldSelf", "&"))


def _validation_rule(rule: Obj) -> str:
    """One CEL rule as go-cmp prints the struct: its set fields, by Go name."""
    shown = []
    for key, go_name, prefix in _RULE_FIELDS:
        value = rule.get(key)
        if isinstance(value, bool):
            shown.append(f"{go_name}: {prefix}{str(value).lower()}")
        elif isinstance(value, str) and (value or prefix):
            shown.append(f"{go_name}: {prefix}{go_quote(value)}")
    return "{" + ", ".join(shown) + "}"


def _unhandled(a: Obj, b: Obj) -> tuple[str, str] | None:
    """What no comparator took out of the two nodes and still differs, named field by field; with it, the whole
    difference (each differing field's two values in full), which is what OLM v1 compares when it subtracts the
    differences an old CRD's served versions already had (its message carries the go-cmp diff)."""
    if _same(a, b):
        return None
    details, whole = [], []
    for key, go_name in _GO_FIELDS.items():
        old, new = a.get(key), b.get(key)
        if _same(old, new):
            continue
        whole.append(f"{key}:{_canonical(old)}->{_canonical(new)}")
        before, after = _shown(key, old), _shown(key, new)
        if before == after:
            after += " (changed)"
        details.append(f"{go_name} {before} -> {after}")
    message = "unhandled changes found" + (f" ({'; '.join(details)})" if details else "")
    return message, message + "\n" + "\n".join(whole)


class _Failure(NamedTuple):
    """One failed comparison of a property: ``identity`` tells two failures apart as OLM v1's message text does."""

    path: str
    comparator: str
    message: str
    identity: str


def _compare_properties(path: str, old: Obj, new: Obj) -> list[_Failure]:
    """The failed comparisons of one property, in crdify's order of comparators, ``unhandled`` last."""
    a, b = dict(old), dict(new)
    failures = []
    for name, comparator in _PROPERTY_COMPARATORS:
        message = comparator(a, b)
        if message is not None:
            failures.append(_Failure(path, name, message, message))
    unhandled = _unhandled(a, b)
    if unhandled is not None:
        failures.append(_Failure(path, "unhandled", *unhandled))
    return failures


def _compare_versions(old: _Version, new: _Version) -> list[_Failure]:
    """crdify's ``CompareVersions``: each property of ``old`` against the same path in ``new`` (gone: against an
    empty schema), the node alone; properties sorted."""
    old_nodes, new_nodes = _flatten(old.schema), _flatten(new.schema)
    out: list[_Failure] = []
    for path in sorted(old_nodes):
        before = _without_children(old_nodes[path])
        after = _without_children(new_nodes[path]) if path in new_nodes else {}
        if path in new_nodes and _same(before, after):
            continue
        out.extend(_compare_properties(path, before, after))
    return out


def _by_name(versions: Iterable[_Version]) -> dict[str, _Version]:
    """Versions by name; of two of the same name (which the API server refuses), the first, as Go looks it up."""
    out: dict[str, _Version] = {}
    for version in versions:
        out.setdefault(version.name, version)
    return out


# --- the three validators ---------------------------------------------------------------------------------------------


def _crd_wide(old: _CRD, new: _CRD) -> list[str]:
    lines: list[str] = []
    old_versions = _by_name(old.versions)
    for version in new.versions:
        if version.name in old_versions:
            removed = set(_flatten(old_versions[version.name].schema)) - set(_flatten(version.schema))
            lines.extend(f"existingFieldRemoval: removed field : {version.name}.{path}" for path in sorted(removed))
    if old.scope != new.scope:
        lines.append(f"scope: scope changed : {go_quote(old.scope)} -> {go_quote(new.scope)}")
    new_names = {v.name for v in new.versions}
    removed_stored = [v for v in old.stored_versions if v not in new_names]
    if removed_stored:
        lines.append(f"storedVersionRemoval: stored versions removed : {go_list(removed_stored)}")
    return lines


def _same_versions(old: _CRD, new: _CRD) -> list[str]:
    new_versions = _by_name(new.versions)
    return [f"{version.name}: {f.path}: {f.comparator}: {f.message}"
            for version in old.versions if version.name in new_versions
            for f in _compare_versions(version, new_versions[version.name])]


_KUBE_VERSION: Final = re.compile(r"^v([0-9]+)(?:(alpha|beta)([0-9]+))?$")  # Go's \d: ASCII digits only


def _kube_version(name: str) -> tuple[int, int, int] | None:
    match = _KUBE_VERSION.match(name)
    if match is None:
        return None
    kind = {"alpha": 0, "beta": 1, None: 2}[match.group(2)]
    return kind, int(match.group(1)), int(match.group(3) or 0)


def _compare_kube_versions(a: str, b: str) -> int:
    """``version.CompareKubeAwareVersionStrings``: GA above beta above alpha, then by number; names that are no
    Kubernetes version sort below all, in reverse lexical order."""
    if a == b:
        return 0
    pa, pb = _kube_version(a), _kube_version(b)
    if pa is None and pb is None:
        return (a < b) - (a > b)
    if pa is None:
        return -1
    if pb is None:
        return 1
    return (pa > pb) - (pa < pb)


def _served_pairs(crd: _CRD) -> dict[str, list[_Failure]]:
    served = sorted((v for v in crd.versions if v.served), key=lambda v: cmp_to_key(_compare_kube_versions)(v.name))
    return {f"{a.name} -> {b.name}": _compare_versions(a, b)
            for i, a in enumerate(served) for b in served[i + 1:]}


def _served_versions(old: _CRD, new: _CRD) -> list[str]:
    """The served versions of ``new`` compared with each other, less what the old CRD's served versions already had
    (a difference between versions is a conversion concern; only new ones are refused). Skipped when ``new``
    converts through a webhook (OLM v1's ``conversion: Ignore``)."""
    if new.webhook_conversion:
        return []
    known = _served_pairs(old)
    lines: list[str] = []
    for pair, results in _served_pairs(new).items():
        seen = {(f.path, f.comparator, f.identity) for f in known.get(pair, ())}
        lines.extend(f"{pair}: {f.path}: {f.comparator}: {f.message}"
                     for f in results if (f.path, f.comparator, f.identity) not in seen)
    return lines


def crd_upgrade_errors(old: Obj, new: Obj) -> list[str]:
    """Why replacing the CRD ``old`` (as the cluster holds it, ``status.storedVersions`` included) by ``new`` is
    unsafe, one line per failed comparison in OLM v1's words (empty: safe). Raises :class:`CRDDecodeError` when
    either is no CRD."""
    before, after = _decode(old, "existing"), _decode(new, "new")
    return _crd_wide(before, after) + _same_versions(before, after) + _served_versions(before, after)
