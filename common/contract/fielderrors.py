"""Field errors formatted exactly as a Kubernetes API server formats them (``k8s.io/apimachinery`` field.Error).

Authors compare our rejections with what other clusters print, so the text of each error, the joined
message and the ``details.causes`` follow the API server byte for byte (as of Kubernetes 1.36).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from common.contract.gotext import go_quote


class ErrorType(Enum):
    """field.ErrorType: the printed text and the StatusCause reason of each kind of violation."""

    NOT_FOUND = ("Not found", "FieldValueNotFound")
    REQUIRED = ("Required value", "FieldValueRequired")
    DUPLICATE = ("Duplicate value", "FieldValueDuplicate")
    INVALID = ("Invalid value", "FieldValueInvalid")
    NOT_SUPPORTED = ("Unsupported value", "FieldValueNotSupported")
    FORBIDDEN = ("Forbidden", "FieldValueForbidden")
    TOO_LONG = ("Too long", "FieldValueTooLong")
    TOO_MANY = ("Too many", "FieldValueTooMany")
    INTERNAL = ("Internal error", "InternalError")
    TYPE_INVALID = ("Invalid value", "FieldValueTypeInvalid")

    @property
    def text(self) -> str:
        return self.value[0]

    @property
    def reason(self) -> str:
        return self.value[1]


class _Omit:
    """The Go ``omitValue`` sentinel: the error prints no value."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Any = _Omit()

# Types whose value is never printed (field.Error.ErrorBody).
_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}


def format_value(value: Any) -> str:
    """How field.Error prints a bad value: numbers and bools plain, strings Go-quoted, others as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return go_quote(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One violation at one field path, with what was wrong there."""

    type: ErrorType
    field: str
    value: Any = OMIT
    detail: str = ""

    def body(self) -> str:
        """The error without its ``<path>: `` prefix (what ``details.causes[].message`` carries)."""
        if self.type in _VALUELESS or self.value is OMIT:
            text = self.type.text
        else:
            text = f"{self.type.text}: {format_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, str]:
        return {"reason": self.type.reason, "message": self.body(), "field": self.field}


# Constructors named after the Go helpers (field.Required, field.Invalid, ...).
def required(path: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, OMIT, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, path, value, detail)


def type_invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.TYPE_INVALID, path, value, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, OMIT, detail)


def duplicate(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(ErrorType.DUPLICATE, path, value, detail)


def not_supported(path: str, value: Any, supported: list[str] | tuple[str, ...]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
    return FieldError(ErrorType.NOT_SUPPORTED, path, value, detail)


def too_long(path: str, max_length: int) -> FieldError:
    return FieldError(ErrorType.TOO_LONG, path, OMIT, f"may not be more than {max_length} bytes")


def too_many(path: str, actual: int, max_items: int) -> FieldError:
    return FieldError(ErrorType.TOO_MANY, path, actual, f"must have at most {max_items} items")


def aggregate_message(errors: list[FieldError]) -> str:
    """utilerrors.NewAggregate(...).Error(): duplicates dropped, ``[a, b]`` when more than one."""
    seen: list[str] = []
    for err in errors:
        text = str(err)
        if text not in seen:
            seen.append(text)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def invalid_status(kind: str, group: str, name: str, errors: list[FieldError]) -> dict[str, Any]:
    """apierrors.NewInvalid(...).ErrStatus: the Status a 422 Invalid answer carries."""
    qualified = f"{kind}.{group}" if group else kind
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"{qualified} {go_quote(name)} is invalid: {aggregate_message(errors)}",
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [err.cause() for err in errors],
        },
        "code": 422,
    }
