"""Go's ``encoding/json`` ``Unmarshal`` of JSON into Kubernetes' Go types (:mod:`.gotypes`), with Go's errors.

OLM v1 decodes two things with ``json.Unmarshal``: a configuration's ``deploymentConfig`` (into v0's
``SubscriptionConfig``, :mod:`.deploymentconfig`) and every bundle manifest's ``apiVersion`` and ``metadata``
(into ``TypeMeta`` and ``ObjectMeta``, refusing the bundle when that fails: :func:`object_meta_problem`).

Why a decoder of its own next to :mod:`.gounstructured`: the manifests OLM v1 renders go through Kubernetes'
unstructured converter, whose rules differ from ``encoding/json``'s, and both show in OLM's output and
messages. Here, as in ``encoding/json``:

- keys match a field exactly or, failing that, case-insensitively as Go folds them (``Value`` fills ``value``,
  the Kelvin sign matches ``k``; exactly only for a manifest's metadata, which OLM decodes with apimachinery's
  case-sensitive decoder); keys are read in sorted order (OLM's decoder reads what ``json.Marshal`` of a
  map wrote), so of two spellings of one field the later one wins; unknown keys are dropped;
- a value decodes *into* what the field holds already: a struct or map given twice is merged, a list's
  elements are decoded into the earlier list's; ``null`` empties a pointer, list or map, resets a Quantity or
  Time and leaves any other field as it was;
- the first type mismatch is kept and reported at the end (decoding goes on: ``json: cannot unmarshal number
  into Go struct field Toleration.tolerations.effect of type v1.TaintEffect``: the struct, the path of JSON
  names with any embedded struct's Go name, and the field's Go type as Go's error context has them), an
  ``UnmarshalJSON`` failure (a quantity, a time) stops everything;
- integers are checked against their Go type (OLM's numbers are float64: ``json: cannot unmarshal number
  3e+09 into Go struct field ... of type int32``).

The result is what ``json.Marshal`` prints for the decoded value (:func:`unmarshal`): struct fields in
declaration order, ``omitempty`` applied, ``null`` fields left out; or, for code that must tell a nil map from
an empty one as Go code does, the fields the value set (:func:`unmarshal_fields`).

Not modelled: a slice's spare capacity. Go decodes a list given three times in different spellings, shorter
the second time, partly into elements the second decoding cut off; here those elements start from zero.
"""

from __future__ import annotations

from typing import Any, Final

from common.contract.objects import Obj, copy_json
from common.contract.quantity import MSG_FORMAT, QuantityError, canonical

from .gotext import GoTimeError, go_fold, go_json_float, go_json_number, go_time, json_type_name
from .gotypes import STRUCTS, GoStruct, GoType, element_type, go_type_name, structs_within, zero_value

# Structs that embed another (`json:",inline"`), whose fields the table flattens into them: Go's error path names
# the embedded struct before a field it holds (Volume.volumes.VolumeSource.emptyDir, the fields of Volume other
# than `name`; ConfigMapKeySelector.env.valueFrom.configMapKeyRef.LocalObjectReference.name).
_LOCAL_OBJECT_REFERENCE: Final = ("LocalObjectReference", frozenset({"name"}))
_EMBEDDED: Final = {
    "core.Volume": ("VolumeSource", frozenset(f.name for f in STRUCTS["core.Volume"].fields) - {"name"}),
    **dict.fromkeys(("core.ConfigMapEnvSource", "core.SecretEnvSource", "core.ConfigMapKeySelector",
                     "core.SecretKeySelector", "core.ConfigMapVolumeSource", "core.ConfigMapProjection",
                     "core.SecretProjection"), _LOCAL_OBJECT_REFERENCE),
}
_INT_RANGES: Final = {"i32": (-(1 << 31), (1 << 31) - 1), "i64": (-(1 << 63), (1 << 63) - 1)}
_OBJECT_META: Final = GoType("struct", "meta.ObjectMeta")
_STRING: Final = GoType("scalar", "s")
# What this decoder implements: the kinds reachable from the types OLM v1 decodes with json.Unmarshal.
_SCALARS: Final = frozenset({"s", "b", "i32", "i64", "f64", "q", "time", "raw"})
ROOTS: Final = ("olm.SubscriptionConfig", "meta.ObjectMeta")


class UnmarshalError(Exception):
    """Go's ``json.Unmarshal`` refused the value; ``str()`` is Go's error text."""


class _Abort(Exception):
    """An ``UnmarshalJSON`` failure: Go's decoder stops at once and returns it."""


def unmarshal(type_name: str, value: Any) -> Obj:
    """``value`` decoded into the Go struct ``type_name`` by ``json.Unmarshal``, as ``json.Marshal`` prints it
    (``null`` fields left out). Raises :class:`UnmarshalError` with Go's message."""
    struct = STRUCTS[type_name]
    return _finish(struct, _Decoder().run(struct, value))


def unmarshal_fields(type_name: str, value: Any) -> Obj:
    """The fields ``json.Unmarshal`` of ``value`` into ``type_name`` set, each as ``json.Marshal`` prints it,
    with a nil pointer, slice or map left out but an empty one kept (``nodeSelector: {}``): what Go code reads
    when it asks ``config.NodeSelector != nil``. Raises :class:`UnmarshalError` with Go's message."""
    fields = _Decoder().run(STRUCTS[type_name], value)
    return {name: encoded for name, encoded in fields.items() if encoded is not None}


def object_meta_problem(obj: Obj) -> str | None:
    """Why Go could not decode ``obj``'s ``apiVersion`` and ``metadata`` into ``TypeMeta`` and ``ObjectMeta``,
    in Go's words, or None.

    OLM's bundle reader decodes every manifest so and refuses the bundle when that fails (an annotation
    ``0777`` is a number, not a string). It decodes with apimachinery's ``util/json`` (sigs.k8s.io/json's
    ``UnmarshalCaseSensitivePreserveInts``): keys match fields exactly, ``NAME`` is no ``name`` there.
    """
    decoder = _Decoder(case_sensitive=True)
    try:
        if "apiVersion" in obj:  # the first key in Go's (sorted) order
            decoder.value(_STRING, obj["apiVersion"], "metadataOnlyObject", ("TypeMeta", "apiVersion"), None)
        if "metadata" in obj:
            decoder.value(_OBJECT_META, obj["metadata"], "metadataOnlyObject", ("metadata",), None)
    except _Abort as exc:
        return str(exc)
    return decoder.saved


def _finish(struct: GoStruct, fields: dict[str, Any]) -> dict[str, Any]:
    """The struct's encoding from the fields set: declaration order, the zero value of a field not set,
    ``omitempty`` and ``null`` fields left out."""
    out: dict[str, Any] = {}
    for f in struct.fields:
        encoded = fields[f.name] if f.name in fields else zero_value(f.type, False)
        if not f.omitted(encoded, False):
            out[f.name] = encoded
    return out


class _Decoder:
    """One ``json.Unmarshal``: the first saved type mismatch, and the decoding itself. ``struct`` and ``stack``
    are Go's error context: the innermost struct whose field is being decoded, and the JSON names down to it."""

    def __init__(self, *, case_sensitive: bool = False) -> None:
        self.saved: str | None = None
        self.case_sensitive = case_sensitive

    def run(self, struct: GoStruct, value: Any) -> dict[str, Any]:
        try:
            if not isinstance(value, dict):
                raise UnmarshalError(f"json: cannot unmarshal {go_word(value)} into Go value of type "
                                     f"{go_type_name(GoType('struct', struct.name))}")
            fields = self.fields(struct, value, (), None)
        except _Abort as exc:
            raise UnmarshalError(str(exc)) from None
        if self.saved is not None:
            raise UnmarshalError(self.saved)
        return fields

    def mismatch(self, value: Any, typ: GoType, struct: str, stack: tuple[str, ...]) -> None:
        """Go's ``UnmarshalTypeError``: saved (the first one), decoding goes on."""
        if self.saved is None:
            self.saved = (f"json: cannot unmarshal {go_word(value)} into Go struct field {struct}."
                          f"{'.'.join(stack)} of type {go_type_name(typ)}")

    def fields(self, struct: GoStruct, value: dict[str, Any], stack: tuple[str, ...],
               into: dict[str, Any] | None) -> dict[str, Any]:
        """The fields of ``struct`` after decoding the object ``value`` into ``into`` (the struct's encoding,
        or None for its zero value)."""
        fields: dict[str, Any] = dict(into) if into else {}
        embedded = _EMBEDDED.get(struct.name)
        name = struct.short_name
        for key in sorted(value):
            index = struct.index.get(key) if self.case_sensitive else field_index(struct, key)
            if index is None:
                continue  # Go drops what no field takes
            f = struct.fields[index]
            path = (*stack, embedded[0]) if embedded and f.name in embedded[1] else stack
            fields[f.name] = self.value(f.type, value[key], name, (*path, f.name), fields.get(f.name))
        return fields

    def value(self, typ: GoType, value: Any, struct: str, stack: tuple[str, ...], into: Any) -> Any:
        """``value`` decoded into a field of type ``typ`` that holds ``into`` (its encoding; None for nil or
        the zero value): the field's encoding afterwards."""
        kind = typ.kind
        if kind in ("ptr", "list", "map"):
            if value is None:
                return None  # null: a nil pointer, slice or map
            if kind == "ptr":
                assert typ.inner is not None
                return self.value(typ.inner, value, struct, stack, into)
        elif into is None:
            into = zero_value(typ, False)
        code = typ.name
        if kind == "struct":
            if value is None:
                return into  # null leaves a struct as it was
            if not isinstance(value, dict):
                self.mismatch(value, typ, struct, stack)
                return into
            target = STRUCTS[code]
            return _finish(target, self.fields(target, value, stack, into))
        if kind == "list":
            assert typ.inner is not None
            if not isinstance(value, list):
                self.mismatch(value, typ, struct, stack)
                return into
            earlier = into or []  # Go decodes each element into the slice's element already there
            return [self.value(typ.inner, item, struct, stack, earlier[i] if i < len(earlier) else None)
                    for i, item in enumerate(value)]
        if kind == "map":
            assert typ.inner is not None
            if not isinstance(value, dict):
                self.mismatch(value, typ, struct, stack)
                return into
            merged = dict(into) if into else {}
            for key in sorted(value):  # each element is decoded into a new zero value, then stored
                merged[key] = self.value(typ.inner, value[key], struct, stack, None)
            return dict(sorted(merged.items()))
        return self.scalar(typ, value, struct, stack, into)

    def scalar(self, typ: GoType, value: Any, struct: str, stack: tuple[str, ...], into: Any) -> Any:
        code = typ.name
        if code == "q":
            return _quantity(value)
        if code == "time":
            if value is None:
                return None  # null: the zero Time, printed null
            if not isinstance(value, str):  # metav1.Time reads a JSON string itself; its error stops Go's decoder
                raise _Abort(f"json: cannot unmarshal {go_word(value)} into Go struct field "
                             f"{struct}.{'.'.join(stack)} of type string")
            try:
                return go_time(value)
            except GoTimeError as exc:
                raise _Abort(str(exc)) from None
        if code == "raw":
            return into if value is None else copy_json(value)  # FieldsV1 keeps any JSON as it is
        if value is None:
            return into  # null leaves a string, number or bool as it was
        if code in _INT_RANGES:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.mismatch(value, typ, struct, stack)
                return into
            return self.integer(value, typ, struct, stack, into)
        if code == "f64":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.mismatch(value, typ, struct, stack)
                return into
            return go_json_number(float(value))
        expected = bool if code == "b" else str
        if not isinstance(value, expected):
            self.mismatch(value, typ, struct, stack)
            return into
        return value

    def integer(self, value: int | float, typ: GoType, struct: str, stack: tuple[str, ...], into: Any) -> Any:
        """A JSON number into an integer field: Go reads the text ``json.Marshal`` wrote for the float64."""
        low, high = _INT_RANGES[typ.name]
        literal = go_json_float(float(value))  # OLM's values are float64 (yaml.Unmarshal into interface{})
        if not literal.lstrip("-").isdigit() or not low <= int(literal) <= high:
            if self.saved is None:
                self.saved = (f"json: cannot unmarshal number {literal} into Go struct field "
                              f"{struct}.{'.'.join(stack)} of type {go_type_name(typ)}")
            return into
        return int(literal)


_FOLDED: dict[str, dict[str, int]] = {}


def _folded(struct: GoStruct) -> dict[str, int]:
    """The struct's fields by folded name (the table has no two fields that fold alike)."""
    found = _FOLDED.get(struct.name)
    if found is None:
        found = _FOLDED[struct.name] = {go_fold(f.name): i for i, f in enumerate(struct.fields)}
    return found


def field_index(struct: GoStruct, key: str) -> int | None:
    """The field of ``struct`` that ``encoding/json`` stores the key ``key`` in: the field of that name, else the
    one whose name Go folds alike (``Value`` fills ``value``); ``None`` when Go drops the key."""
    index = struct.index.get(key)
    return index if index is not None else _folded(struct).get(go_fold(key))


def quantity_problem(value: Any) -> str | None:
    """Why ``resource.Quantity``'s ``UnmarshalJSON`` refuses ``value`` (its words), or ``None``."""
    try:
        _quantity(value)
    except _Abort as exc:
        return str(exc)
    return None


def go_word(value: Any) -> str:
    """How Go's ``UnmarshalTypeError`` names the JSON value it could not store."""
    return {"boolean": "bool"}.get(json_type_name(value), json_type_name(value))


def _quantity(value: Any) -> str:
    """``resource.Quantity``'s ``UnmarshalJSON``: ``null`` is the zero quantity, anything else is parsed (the
    text of an object or a list too, which the parser refuses), and its error stops Go's decoder."""
    if value is None:
        return "0"
    if isinstance(value, (dict, list)):
        raise _Abort(MSG_FORMAT)
    try:
        return canonical(float(value) if isinstance(value, int) and not isinstance(value, bool) else value)
    except (QuantityError, OverflowError) as exc:
        raise _Abort(str(exc)) from None


def _reachable(type_names: tuple[str, ...]) -> set[str]:
    """The scalar codes the structs ``type_names`` reach."""
    return {held.name for name in structs_within(*type_names) for f in STRUCTS[name].fields
            if (held := element_type(f.type)).kind != "struct"}


if not _reachable(ROOTS) <= _SCALARS:  # a type added to the table that this decoder does not know: fail now
    raise RuntimeError(f"gounmarshal: no json.Unmarshal for {sorted(_reachable(ROOTS) - _SCALARS)}")
