"""Kubernetes name, label and selector checks, with apimachinery's exact messages.

These are the checks an API server applies to metadata and LabelSelectors. The webhook applies them where
CRD validation cannot (inside embedded manifests, inside progression-probe selectors), so authors get the
message they would get from any other Kubernetes object.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from common.contract.fielderrors import FieldError, forbidden, invalid, required

_QNAME_CHAR = "[A-Za-z0-9]"
_QNAME_EXT_CHAR = "[-A-Za-z0-9_.]"
QUALIFIED_NAME_FMT = f"({_QNAME_CHAR}{_QNAME_EXT_CHAR}*)?{_QNAME_CHAR}"
_QUALIFIED_NAME_ERR = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                       "with an alphanumeric character")
_QUALIFIED_NAME_RE = re.compile(f"^{QUALIFIED_NAME_FMT}$")
QUALIFIED_NAME_MAX = 63

LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_ERR = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                    "or '.', and must start and end with an alphanumeric character")
_LABEL_VALUE_RE = re.compile(f"^{LABEL_VALUE_FMT}$")
LABEL_VALUE_MAX = 63

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                          "'-' or '.', and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
DNS1123_SUBDOMAIN_MAX = 253

DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_ERR = ("a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-', "
                      "start with an alphabetic character, and end with an alphanumeric character")
_DNS1035_LABEL_RE = re.compile(f"^{DNS1035_LABEL_FMT}$")
DNS1035_LABEL_MAX = 63

# The longest valid label (or annotation) key: a DNS subdomain prefix, "/", a qualified name. Longer is invalid
# whatever it holds.
LABEL_KEY_MAX = DNS1123_SUBDOMAIN_MAX + 1 + QUALIFIED_NAME_MAX

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _cached_up_to(longest: int) -> Callable[[Callable[[str], tuple[str, ...]]], Callable[[str], tuple[str, ...]]]:
    """An lru_cache for the values of at most ``longest`` characters. A longer one is invalid whatever it holds and
    is checked without the cache, which would otherwise keep strings as large as a request (4,096 of them each)."""
    def wrap(check: Callable[[str], tuple[str, ...]]) -> Callable[[str], tuple[str, ...]]:
        cached = functools.lru_cache(maxsize=4096)(check)

        @functools.wraps(check)
        def bounded(value: str) -> tuple[str, ...]:
            return cached(value) if len(value) <= longest else check(value)
        bounded.cache_info = cached.cache_info  # type: ignore[attr-defined]
        bounded.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return bounded
    return wrap


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError: the message, the examples and the regex, as apimachinery words it."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    quoted = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {quoted}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """``validation.MaxLenError`` (util/validation: DNS names)."""
    return f"must be no more than {length} characters"


def content_max_len_error(length: int) -> str:
    """``content.MaxLenError`` (api/validate/content, apimachinery 0.36: label keys and values), which counts
    bytes, and says so."""
    return f"must be no more than {length} bytes"


def _bounded_format(value: str, max_length: int, pattern: re.Pattern[str], message: str, fmt: str,
                    *examples: str) -> tuple[str, ...]:
    """apimachinery's shape for a format check: the length error first, then the format error."""
    errs = []
    if len(value) > max_length:
        errs.append(max_len_error(max_length))
    if not pattern.fullmatch(value):
        errs.append(regex_error(message, fmt, *examples))
    return tuple(errs)


@_cached_up_to(DNS1123_SUBDOMAIN_MAX)
def is_dns1123_subdomain(value: str) -> tuple[str, ...]:
    return _bounded_format(value, DNS1123_SUBDOMAIN_MAX, _DNS1123_SUBDOMAIN_RE, _DNS1123_SUBDOMAIN_ERR,
                           DNS1123_SUBDOMAIN_FMT, "example.com")


_DNS1123_LABEL_ERR = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                      "and must start and end with an alphanumeric character")
_DNS1123_LABEL_RE = re.compile(f"^{DNS1123_LABEL_FMT}$")
DNS1123_LABEL_MAX = 63


@_cached_up_to(DNS1123_LABEL_MAX)
def is_dns1123_label(value: str) -> tuple[str, ...]:
    """Namespace names are RFC 1123 labels."""
    return _bounded_format(value, DNS1123_LABEL_MAX, _DNS1123_LABEL_RE, _DNS1123_LABEL_ERR, DNS1123_LABEL_FMT,
                           "my-name", "123-abc")


@_cached_up_to(DNS1035_LABEL_MAX)
def is_dns1035_label(value: str) -> tuple[str, ...]:
    return _bounded_format(value, DNS1035_LABEL_MAX, _DNS1035_LABEL_RE, _DNS1035_LABEL_ERR, DNS1035_LABEL_FMT,
                           "my-name", "abc-123")


@_cached_up_to(LABEL_KEY_MAX)
def is_qualified_name(value: str) -> tuple[str, ...]:
    """``content.IsLabelKey`` (what ``validation.IsQualifiedName`` is since apimachinery 0.36): lengths in bytes, as
    Go's ``len`` counts them, and a key of several ``/`` named a label key."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in _content_dns1123_subdomain(prefix))
    else:
        return ("a valid label key " + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                   "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",)
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > QUALIFIED_NAME_MAX:
        errs.append("name part " + content_max_len_error(QUALIFIED_NAME_MAX))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append("name part " + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                               "123-abc"))
    return tuple(errs)


def _content_dns1123_subdomain(value: str) -> tuple[str, ...]:
    """``content.IsDNS1123Subdomain``: a label key's prefix (its length in bytes)."""
    errs = []
    if len(value.encode()) > DNS1123_SUBDOMAIN_MAX:
        errs.append(content_max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return tuple(errs)


@_cached_up_to(LABEL_VALUE_MAX)
def is_valid_label_value(value: str) -> tuple[str, ...]:
    """``content.IsLabelValue``: its length in bytes."""
    errs = []
    if len(value.encode()) > LABEL_VALUE_MAX:
        errs.append(content_max_len_error(LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return tuple(errs)


def is_valid_path_segment_name(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def validate_label_name(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, msg) for msg in is_qualified_name(name)]


def validate_labels(labels: dict[str, Any], path: str) -> list[FieldError]:
    """metav1validation.ValidateLabels: keys are qualified names, values label values (errors on the map)."""
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs.extend(validate_label_name(key, path))
        if isinstance(value, str):
            errs.extend(invalid(path, value, msg) for msg in is_valid_label_value(value))
    return errs


def validate_label_selector(selector: dict[str, Any], path: str) -> list[FieldError]:
    """metav1validation.ValidateLabelSelector for a LabelSelector whose structure is already type-checked."""
    errs: list[FieldError] = []
    labels = selector.get("matchLabels")
    if isinstance(labels, dict):
        errs.extend(validate_labels(labels, f"{path}.matchLabels"))
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list):
        for i, req in enumerate(expressions):
            if isinstance(req, dict):
                errs.extend(_validate_requirement(req, f"{path}.matchExpressions[{i}]"))
    return errs


def _validate_requirement(req: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = req.get("operator")
    values = req.get("values")
    values = values if isinstance(values, list) else []
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(f"{path}.values",
                                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif isinstance(operator, str):
        errs.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    key = req.get("key")
    if isinstance(key, str):
        errs.extend(validate_label_name(key, f"{path}.key"))
    for i, value in enumerate(values):
        if isinstance(value, str):
            errs.extend(invalid(f"{path}.values[{i}]", value, msg) for msg in is_valid_label_value(value))
    return errs
