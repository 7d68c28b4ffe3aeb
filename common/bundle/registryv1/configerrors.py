"""The configuration checked against its schema, and every complaint worded as OLM v1 words it (spec §2).

Why the messages need a module of their own: OLM v1 validates with santhosh-tekuri/jsonschema v6 and words the
errors from that library's ``BasicOutput``, so its messages depend on the *shape* of that library's error tree,
not only on what is wrong. Validation here is the ``jsonschema`` library's (draft-07, with Go's regular
expression anchors and the formats OLM registers); its errors are then put back into the tree the Go library
would have built (:class:`_GoTree`), with the Go library's rules (a failed ``type``, ``const``, ``enum`` or
``format`` hides the other keywords of its schema; a failed ``$ref`` and a failed ``allOf`` are tree nodes of
their own; more than one error of a schema is a group), and flattened as ``BasicOutput`` flattens it, including
its quirk: a failed ``$ref`` with a single cause is listed as its first descendant with the message ``validation
failed``, and that descendant's own causes are dropped. That is why an error inside a Kubernetes type usually
reads ``invalid configuration: validation failed``: OLM says exactly that. Each unit is finally worded by OLM's
``formatSingleError``.

The formats are the ones the Go library asserts in OLM's schema: OLM's two namespace formats (compared with the
install namespace) and ``date-time`` (the Go library's own RFC 3339 check, with its messages).

Message order: where OLM's order is deterministic it is mirrored (``required`` before the properties, the
properties before ``additionalProperties``, an ``anyOf`` before its branches, ``minLength`` before
``maxLength`` before ``pattern``). Errors on different properties of one object come in Go's map order in
OLM, which is random; here they come in the configuration's key order. For the same reason, of several unknown
fields of one object OLM names one at random (``unknown field "a"``); here it is the first in key order.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from jsonschema import Draft7Validator, FormatChecker, ValidationError, validators

from .gotext import go_quote, go_time_quote, go_v_float, json_type_name

FORMAT_OWN_NAMESPACE: Final = "ownNamespaceInstallMode"
FORMAT_SINGLE_NAMESPACE: Final = "singleNamespaceInstallMode"


# --- the jsonschema library's quoting ------------------------------------------------------------------------

def _single_quote(text: str) -> str:
    """The jsonschema library's ``quote``: Go-quoted, then re-quoted with single quotes."""
    quoted = go_quote(text).replace('\\"', '"').replace("'", "\\'")
    return "'" + quoted[1:-1] + "'"



def _go_display(value: Any) -> str:
    """The jsonschema library's ``display`` of a value: ``%v``, strings single-quoted, collections ``value``."""
    if isinstance(value, str):
        return _single_quote(value)
    if isinstance(value, (list, dict)):
        return "value"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return go_v_float(float(value))



# --- the formats ---------------------------------------------------------------------------------------------


class _FormatFailure(Exception):
    """A failed format; ``str()`` is the reason, as the Go format function words it."""


def _format_checker(install_namespace: str) -> FormatChecker:
    """The formats the Go library asserts in OLM's schema: OLM's two namespace formats and ``date-time`` (a
    Kubernetes ``Time``). Others (``int32``, ``int64``) are unknown to it and ignored, as they are here."""
    checker = FormatChecker(formats=())

    @checker.checks(FORMAT_OWN_NAMESPACE, raises=_FormatFailure)
    def own(value: object) -> bool:
        if install_namespace and isinstance(value, str) and value != install_namespace:
            raise _FormatFailure(
                f"invalid value {go_quote(value)}: must be {go_quote(install_namespace)} (the namespace where the "
                "operator is installed) because this operator only supports OwnNamespace install mode")
        return True

    @checker.checks(FORMAT_SINGLE_NAMESPACE, raises=_FormatFailure)
    def single(value: object) -> bool:
        if install_namespace and isinstance(value, str) and value == install_namespace:
            raise _FormatFailure(
                f"invalid value {go_quote(value)}: must be different from {go_quote(install_namespace)} (the install "
                "namespace) because this operator uses SingleNamespace install mode to watch a different namespace")
        return True

    @checker.checks("date-time", raises=_FormatFailure)
    def date_time(value: object) -> bool:
        if isinstance(value, str):
            problem = _date_time_problem(value.encode("utf-8", "surrogatepass"))
            if problem:
                raise _FormatFailure(problem)
        return True

    return checker


def _go_atoi(text: bytes) -> int | None:
    """Go's ``strconv.Atoi``: an optional sign and decimal digits, nothing else."""
    return int(text) if re.fullmatch(rb"[+-]?[0-9]+", text) else None


def _date_problem(text: bytes) -> str | None:
    """Go's ``time.Parse("2006-01-02", text)`` error, or None."""
    def cannot(rest: bytes, element: str) -> str:
        return (f"parsing time {go_time_quote(text)} as \"2006-01-02\": cannot parse {go_time_quote(rest)} as "
                f"\"{element}\"")

    rest = text
    if len(rest) < 4 or not rest[:4].isdigit():  # Go: four characters, the first a digit, read by atoi
        return cannot(rest, "2006")
    year = int(rest[:4])
    rest = rest[4:]
    numbers: list[int] = []
    for element in ("01", "02"):
        if not rest.startswith(b"-"):
            return cannot(rest, "-")
        rest = rest[1:]
        if len(rest) < 2 or not rest[:2].isdigit():
            return cannot(rest, element)
        numbers.append(int(rest[:2]))
        rest = rest[2:]
        if element == "01" and not 1 <= numbers[0] <= 12:
            return f"parsing time {go_time_quote(text)}: month out of range"
    if rest:
        return f"parsing time {go_time_quote(text)}: extra text: {go_time_quote(rest)}"
    month, day = numbers
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    if not 1 <= day <= days:
        return f"parsing time {go_time_quote(text)}: day out of range"
    return None


def _time_problem(text: bytes) -> str | None:
    """The Go library's ``validateTime`` (RFC 3339 ``full-time``), byte for byte."""
    if len(text) < 9:
        return "less than 9 characters long"
    if text[2:3] != b":" or text[5:6] != b":":
        return "missing colon in correct place"
    hms: list[int] = []
    for token in text[:8].split(b":", 2):
        number = _go_atoi(token)
        if number is None:
            return "invalid hour/min/sec"
        if number < 0:
            return "non-positive hour/min/sec"
        hms.append(number)
    if len(hms) != 3:
        return "missing hour/min/sec"
    hour, minute, second = hms
    if hour > 23 or minute > 59 or second > 60:
        return "hour/min/sec out of range"
    rest = text[8:]
    if rest.startswith(b"."):
        digits = len(rest[1:]) - len(rest[1:].lstrip(b"0123456789"))
        if digits == 0:
            return "no digits in second fraction"
        rest = rest[1 + digits:]
    if rest not in (b"z", b"Z"):
        if len(rest) != 6:
            return "offset must be 6 characters long"
        if rest[:1] not in (b"+", b"-"):
            return "offset must begin with plus/minus"
        sign = -1 if rest[:1] == b"+" else 1
        rest = rest[1:]
        if rest[2:3] != b":":
            return "missing colon in offset in correct place"
        offset: list[int] = []
        for token in rest.split(b":", 1):
            number = _go_atoi(token)
            if number is None:
                return "invalid hour/min in offset"
            if number < 0:
                return "non-positive hour/min in offset"
            offset.append(number)
        if offset[0] > 23 or offset[1] > 59:
            return "hour/min in offset out of range"
        total = hour * 60 + minute + sign * (offset[0] * 60 + offset[1])
        if total < 0:
            total += 24 * 60
        hour, minute = total // 60, total % 60
    if second >= 60 and (hour != 23 or minute != 59):
        return "invalid leap second"
    return None


def _date_time_problem(text: bytes) -> str | None:
    """The Go library's ``validateDateTime`` (RFC 3339 ``date-time``) error text, or None."""
    if len(text) < 20:
        return "less than 20 characters long"
    if text[10:11] not in (b"t", b"T"):
        return "11th character must be t or T"
    if problem := _date_problem(text[:10]):
        return f"invalid date element: {problem}"
    if problem := _time_problem(text[11:]):
        return f"invalid time element: {problem}"
    return None


# --- validation --------------------------------------------------------------------------------------------


def _go_regex(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled for Go's regexp semantics where they differ from Python's on schema patterns: ``$``
    (outside a class) is the end of the text, never before a final newline."""
    out: list[str] = []
    in_class = escaped = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            out.append(r"\Z")
            continue
        out.append(char)
    return re.compile("".join(out))


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _go_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# draft-07 with Go's regular-expression anchors (the only keyword whose meaning differs between the libraries on
# this schema; tests/registryv1/test_config.py checks the schema uses no keyword this module does not mirror).
_Validator = validators.extend(Draft7Validator, {"pattern": _pattern})

# Keywords whose failure in the Go library returns at once, hiding every other keyword of the same schema.
_EXCLUSIVE: Final = ("type", "const", "enum", "format")
SUPPORTED_KEYWORDS: Final = frozenset({
    "type", "const", "enum", "format", "$ref", "properties", "patternProperties", "additionalProperties",
    "required", "minProperties", "maxProperties", "items", "minItems", "maxItems", "uniqueItems", "minLength",
    "maxLength", "pattern", "allOf", "anyOf", "oneOf", "not",
})


@dataclass(eq=False)
class _GoError:
    """A node of the Go library's error tree: its kind, instance location, message and causes."""

    kind: str
    location: tuple[str, ...]
    message: str
    causes: list[_GoError] = field(default_factory=list)
    detail: tuple[Any, ...] = ()


@dataclass(eq=False)
class _Application:
    """One schema applied to one instance value: the keywords that failed there and the sub-applications."""

    schema: Any
    instance: Any
    location: tuple[str, ...]
    failed: dict[str, list[ValidationError]] = field(default_factory=dict)
    children: dict[tuple[Any, ...], _Application] = field(default_factory=dict)

    def child(self, edge: tuple[Any, ...], schema: Any, instance: Any, token: str | None) -> _Application:
        found = self.children.get(edge)
        if found is None:
            location = self.location if token is None else (*self.location, token)
            found = self.children[edge] = _Application(schema, instance, location)
        return found


class _GoTree:
    """The santhosh-tekuri/jsonschema error tree for one failed validation, rebuilt from ``jsonschema``'s
    errors, and flattened as that library's ``BasicOutput`` flattens it."""

    def __init__(self, schema: dict[str, Any], validator: Any, instance: Any) -> None:
        self.schema = schema
        self.validator = validator
        self.root = _Application(schema, instance, ())

    def add(self, error: ValidationError) -> None:
        """Record ``error`` (and, for ``anyOf``/``oneOf``, its branches' errors) where it happened."""
        self._insert(error)
        for sub in error.context or ():
            self.add(sub)

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"unsupported $ref {ref!r}")
        node: Any = self.schema
        for token in ref[2:].split("/"):
            node = node[token.replace("~1", "/").replace("~0", "~")]
        return node

    def _insert(self, error: ValidationError) -> None:
        app = self.root
        schema_path, instance_path = list(error.absolute_schema_path), list(error.absolute_path)
        while True:
            schema = app.schema
            if isinstance(schema, dict) and "$ref" in schema:  # draft-07: a $ref hides its siblings
                app = app.child(("$ref",), self._resolve(schema["$ref"]), app.instance, None)
                continue
            keyword = schema_path.pop(0)
            if not schema_path:
                app.failed.setdefault(str(keyword), []).append(error)
                return
            if keyword == "properties":
                name = schema_path.pop(0)
                instance_path.pop(0)
                app = app.child(("properties", name), schema["properties"][name], app.instance[name], str(name))
            elif keyword == "patternProperties":
                pattern, key = schema_path.pop(0), instance_path.pop(0)
                app = app.child(("patternProperties", pattern, key), schema["patternProperties"][pattern],
                                app.instance[key], str(key))
            elif keyword == "additionalProperties":
                key = instance_path.pop(0)
                app = app.child(("additionalProperties", key), schema["additionalProperties"], app.instance[key],
                                str(key))
            elif keyword == "items":
                items = schema["items"]
                if isinstance(items, list):
                    items = items[int(schema_path.pop(0))]
                index = instance_path.pop(0)
                app = app.child(("items", index), items, app.instance[index], str(index))
            elif keyword in ("allOf", "anyOf", "oneOf"):
                index = schema_path.pop(0)
                app = app.child((keyword, index), schema[keyword][index], app.instance, None)
            else:
                raise ValueError(f"unsupported keyword {keyword!r} in the configuration schema")

    # -- the Go library's validation result, per application --

    def result(self, app: _Application | None) -> _GoError | None:
        if app is None:
            return None
        errors = self._errors(app)
        if not errors:
            return None
        if len(errors) == 1:
            return errors[0]
        return _GoError("group", app.location, "validation failed", errors)

    def _errors(self, app: _Application) -> list[_GoError]:
        schema, instance, failed = app.schema, app.instance, app.failed
        for keyword in _EXCLUSIVE:
            if keyword in failed:
                return [self._leaf(app, keyword)]
        if isinstance(schema, dict) and "$ref" in schema:
            target = self.result(app.children.get(("$ref",)))
            if target is None:
                return []
            causes = target.causes if target.kind == "group" else [target]
            return [_GoError("reference", app.location, "validation failed", causes)]
        if not isinstance(schema, dict):
            return []
        out: list[_GoError] = []

        def leaves(*keywords: str) -> None:
            out.extend(self._leaf(app, k) for k in keywords if k in failed)

        def child(edge: tuple[Any, ...]) -> None:
            found = self.result(app.children.get(edge))
            if found is not None:
                out.append(found)

        if isinstance(instance, dict):
            leaves("minProperties", "maxProperties", "required")
            for key in instance:
                child(("properties", key))
                for pattern in schema.get("patternProperties") or {}:
                    child(("patternProperties", pattern, key))
                child(("additionalProperties", key))
            leaves("additionalProperties")
        elif isinstance(instance, list):
            leaves("minItems", "maxItems", "uniqueItems")
            for index in range(len(instance)):
                child(("items", index))
        elif isinstance(instance, str):
            leaves("minLength", "maxLength", "pattern")
        leaves("not")
        branches = [self.result(app.children.get(("allOf", i))) for i in range(len(schema.get("allOf") or []))]
        if any(branches):
            out.append(_GoError("allOf", app.location, "'allOf' failed", [b for b in branches if b]))
        for keyword in ("anyOf", "oneOf"):
            if keyword in failed:
                out.append(self._combinator(app, keyword))
        return out

    def _combinator(self, app: _Application, keyword: str) -> _GoError:
        count = len(app.schema[keyword])
        if keyword == "oneOf" and not any(e.context for e in app.failed[keyword]):
            valid = [i for i in range(count)
                     if self.validator.evolve(schema=app.schema[keyword][i]).is_valid(app.instance)]
            return _GoError("oneOf", app.location, f"'oneOf' failed, subschemas {valid[0]}, {valid[1]} matched")
        causes = [c for c in (self.result(app.children.get((keyword, i))) for i in range(count)) if c]
        message = "'anyOf' failed" if keyword == "anyOf" else "'oneOf' failed, none matched"
        return _GoError(keyword, app.location, message, causes)

    def _leaf(self, app: _Application, keyword: str) -> _GoError:
        schema, instance, location = app.schema, app.instance, app.location
        if keyword == "type":
            wanted = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            order = ["null", "boolean", "number", "integer", "string", "array", "object"]
            want = " or ".join(t for t in order if t in wanted)
            return _GoError("type", location, f"got {json_type_name(instance)}, want {want}")
        if keyword == "required":
            missing = [name for name in schema["required"] if name not in instance]
            if len(missing) == 1:
                return _GoError("required", location, f"missing property {_single_quote(missing[0])}")
            return _GoError("required", location,
                            f"missing properties {', '.join(_single_quote(m) for m in missing)}")
        if keyword == "additionalProperties":
            patterns = [_go_regex(p) for p in schema.get("patternProperties") or {}]
            extra = [k for k in instance
                     if k not in (schema.get("properties") or {}) and not any(p.search(k) for p in patterns)]
            return _GoError("additionalProperties", location,
                            f"additional properties {', '.join(_single_quote(k) for k in extra)} not allowed",
                            detail=(tuple(extra), tuple(schema.get("properties") or {})))
        if keyword == "format":
            reason = next((str(e.cause) for e in app.failed["format"] if e.cause is not None), "")
            return _GoError("format", location, f"{_go_display(instance)} is not valid {schema['format']}: {reason}")
        if keyword in ("minLength", "maxLength"):
            got, want = len(instance), schema[keyword]
            return _GoError(keyword, location, f"{keyword}: got {got}, want {want}", detail=(got, want))
        if keyword == "pattern":
            message = f"{_single_quote(instance)} does not match pattern {_single_quote(schema['pattern'])}"
            return _GoError("pattern", location, message, detail=(schema["pattern"],))
        if keyword in ("minProperties", "maxProperties", "minItems", "maxItems"):
            return _GoError(keyword, location, f"{keyword}: got {len(instance)}, want {schema[keyword]}")
        if keyword == "enum":
            values = schema["enum"]
            if any(isinstance(v, (list, dict)) for v in values):
                return _GoError("enum", location, "'enum' failed")
            if len(values) == 1:
                return _GoError("enum", location, f"value must be {_go_display(values[0])}")
            return _GoError("enum", location, f"value must be one of {', '.join(_go_display(v) for v in values)}")
        if keyword == "const":
            want = schema["const"]
            message = "'const' failed" if isinstance(want, (list, dict)) else f"value must be {_go_display(want)}"
            return _GoError("const", location, message)
        if keyword == "not":
            return _GoError("not", location, "'not' failed")
        if keyword == "uniqueItems":
            seen: list[Any] = []
            for j, item in enumerate(instance):
                for i, earlier in enumerate(seen):
                    if earlier == item and type(earlier) is type(item):
                        return _GoError("uniqueItems", location, f"items at {i} and {j} are equal")
                seen.append(item)
        raise ValueError(f"unsupported keyword {keyword!r} in the configuration schema")

    # -- BasicOutput and OLM's wording --

    def messages(self) -> list[str]:
        """OLM's ``formatSingleError`` for each unit of ``BasicOutput``, in order."""
        top = self.result(self.root)
        if top is None:
            return []
        causes = top.causes if top.kind == "group" else [top]
        return [_olm_message(location, error) for location, error in _flatten(causes)]

    def unnamed_causes(self) -> list[str]:
        """For each unit of OLM's list that names no field (``validation failed``: the flattening dropped what
        was below it), the failed checks below it, each worded by ``formatSingleError`` at its own location."""
        top = self.result(self.root)
        if top is None:
            return []
        units = _flatten(top.causes if top.kind == "group" else [top])
        listed = {id(error) for _, error in units}  # the same words at another place are another error
        out: list[str] = []
        for location, error in units:  # a group's "validation failed" heads causes listed after it: not unnamed
            if error.kind == "additionalProperties":
                out += _unknown_fields(error, said=True)
            if _olm_message(location, error) != "validation failed":
                continue
            for leaf in _leaves(error):
                if id(leaf) in listed:
                    continue
                if leaf.kind == "additionalProperties":
                    out += _unknown_fields(leaf, said=False)
                    continue
                message, path = _olm_message(leaf.location, leaf), _field_path(leaf.location)
                out.append(message if not path or go_quote(path) in message else f"in {go_quote(path)}: {message}")
        return list(dict.fromkeys(out))


def _unknown_fields(error: _GoError, *, said: bool) -> list[str]:
    """One line per unknown key of an ``additionalProperties`` error, with the object it is in and the property it
    most likely meant. OLM's message names one key and neither (``unknown field "resource"`` for a key of
    ``deploymentConfig``); when it was ``said`` and this adds nothing to it, nothing."""
    extra, known = error.detail
    path = _field_path(error.location)
    out = []
    for i, key in enumerate(extra):
        close = difflib.get_close_matches(key, known, n=1)
        if said and i == 0 and not path and not close:
            continue
        where = f"in {go_quote(path)}: " if path else ""
        meant = f" (did you mean {go_quote(close[0])}?)" if close else ""
        out.append(f"{where}unknown field {go_quote(key)}{meant}")
    return out


def _leaves(error: _GoError) -> list[_GoError]:
    """The nodes without causes below ``error`` (itself when it has none), in order."""
    if not error.causes:
        return [error]
    return [leaf for cause in error.causes for leaf in _leaves(cause)]


def _flatten(causes: list[_GoError]) -> list[tuple[tuple[str, ...], _GoError]]:
    """``BasicOutput``'s flat list under a node with ``causes``: (instance location, error kind) per unit.

    Each cause is listed, then its own flattened causes; a ``$ref`` error with exactly one cause is listed
    instead as the first unit of its own list, under the ``$ref``'s kind, and the rest of that list is lost
    (the Go library's flattening does exactly this).
    """
    units: list[tuple[tuple[str, ...], _GoError]] = []
    for cause in causes:
        below = _flatten(cause.causes)
        if cause.kind == "reference" and len(cause.causes) == 1:
            units.append((below[0][0], cause))
        else:
            units.append((cause.location, cause))
            units.extend(below)
    return units


def _field_path(location: tuple[str, ...]) -> str:
    """OLM's ``buildFieldPath``: the JSON pointer (``~0``/``~1`` escapes) with slashes as dots."""
    pointer = "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in location)
    return "" if pointer in ("", "/") else pointer[1:].replace("/", ".")


def _quoted_name(message: str) -> str:
    """OLM's ``extractFieldNameFromMessage``: the text between the message's first two single quotes."""
    start = message.find("'")
    if start < 0:
        return ""
    end = message.find("'", start + 1)
    return message[start + 1:end] if end >= 0 else ""


def _olm_message(location: tuple[str, ...], error: _GoError) -> str:
    """OLM's ``formatSingleError`` for one unit."""
    kind, message, path = error.kind, error.message, _field_path(location)
    if kind == "required":
        name = _quoted_name(message)
        return f"required field {go_quote(name)} is missing" if name else "required field is missing"
    if kind == "additionalProperties":
        name = _quoted_name(message)
        return f"unknown field {go_quote(name)}" if name else "unknown field"
    if kind == "type":
        if not path:
            return f"invalid type: {message}"
        if "got null" in message:
            return f"required field {go_quote(path)} is missing"
        return f"invalid type for field {go_quote(path)}: {message}"
    if kind == "format":
        return f"invalid format for field {go_quote(path)}: {message}" if path else f"invalid format: {message}"
    if kind == "anyOf":
        return f"invalid value for field {go_quote(path)}" if path else "invalid value"
    if kind in ("minLength", "maxLength") and path:
        got, want = error.detail
        bound = "maximum" if kind == "maxLength" else "minimum"
        return f"field {go_quote(path)} must have {bound} length of {want} (len={got})"
    if kind == "pattern" and path:
        return f"field {go_quote(path)} must match pattern {go_quote(error.detail[0])}"
    return message


def _tree(schema: dict[str, Any], instance: Any, install_namespace: str) -> _GoTree | None:
    validator = _Validator(schema, format_checker=_format_checker(install_namespace))
    errors = list(validator.iter_errors(instance))
    if not errors:
        return None
    tree = _GoTree(schema, validator, instance)
    for error in errors:
        tree.add(error)
    return tree


def config_refusal(schema: dict[str, Any], instance: Any, install_namespace: str) -> tuple[list[str], list[str]]:
    """OLM's messages for ``instance`` against ``schema`` (empty when it is valid), and what they leave unnamed
    (:meth:`_GoTree.unnamed_causes`: not OLM's output, hints printed beside it), from one validation."""
    tree = _tree(schema, instance, install_namespace)
    return (tree.messages(), tree.unnamed_causes()) if tree is not None else ([], [])
