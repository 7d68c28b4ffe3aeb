"""Pass 3a: what the API server checks of an embedded manifest itself, and what its metadata may hold.

An inline manifest's apiVersion and kind are checked as the API server checks embedded resources (after the
schema, before list-map keys and CEL: :func:`identity_errors`). Its metadata is an ObjectMeta without the fields
the server populates (``shared/spec/api-and-admission.md`` section 3). For both, a validity check
(:func:`identity_valid`, :func:`metadata_valid`) decides the common case with cached name checks and builds no path
or error object; only a manifest that fails it gets the words, from :func:`identity_errors` and
:func:`metadata_field_errors`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from common.contract import names
from common.contract.fielderrors import FieldError, forbidden, invalid, required, type_invalid
from common.contract.validation.structure import json_type

Obj = dict[str, Any]

FORBIDDEN_METADATA = ("uid", "resourceVersion", "generation", "generateName", "finalizers", "ownerReferences")
_FORBIDDEN = frozenset(FORBIDDEN_METADATA)


def _parse_group_version(api_version: str) -> str | None:
    """schema.ParseGroupVersion's error text, or None when ``api_version`` parses."""
    if api_version.count("/") > 1:
        return f"unexpected GroupVersion string: {api_version}"
    return None


@lru_cache(maxsize=1024)
def _kind_valid(kind: str) -> bool:
    """A kind valid as the API server checks it (an RFC 1035 label once lowercased), lowercased inside the cache.
    Callers pass only kinds short enough to be valid, so the cache keeps no long string."""
    return not names.is_dns1035_label(kind.lower())


def identity_valid(manifest: Obj) -> bool:
    """True only when ``identity_errors`` finds nothing: the common case decided with one cached kind check and
    no path or error built (this runs once per inline manifest, 1,000 times for a maximal COS)."""
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    return (type(api_version) is str and api_version != "" and api_version.count("/") <= 1
            and type(kind) is str and kind != "" and len(kind) <= names.DNS1035_LABEL_MAX and _kind_valid(kind))


def identity_errors(manifest: Obj, path: str) -> list[FieldError]:
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


@lru_cache(maxsize=8192)
def _label_valid(key: str, value: str) -> bool:
    """A label's key and value both valid: one cached call per label where ``metadata_valid`` made two. Callers
    pass only keys and values short enough to be valid."""
    return not names.is_qualified_name(key) and not names.is_valid_label_value(value)


@lru_cache(maxsize=1024)
def _namespace_valid(namespace: str) -> bool:
    """A namespace valid (an RFC 1123 label): one C-level cache lookup on the per-manifest path, where
    ``names.is_dns1123_label`` adds its length guard's Python call. Callers pass only names short enough to be
    valid (the caches in this module keep no string longer than a valid one)."""
    return not names.is_dns1123_label(namespace)


@lru_cache(maxsize=4096)
def _annotation_key_valid(key: str) -> bool:
    """An annotation key valid (the API server checks it lowercased), lowercased inside the cache. Callers pass
    only keys short enough to be valid."""
    return not names.is_qualified_name(key.lower())


def metadata_valid(meta: Any) -> bool:
    """True only when ``metadata_field_errors`` finds nothing: the common case decided with the (cached) name
    checks and no error objects or paths built; anything else goes to ``metadata_field_errors`` for its words.
    Plain loops and one set test instead of generators: this runs once per inline manifest, 1,000 times for a
    maximal COS, on every admission."""
    if type(meta) is not dict:
        return False
    if "name" in meta:
        name = meta["name"]
        if type(name) is not str or name in (".", "..") or "/" in name or "%" in name:
            return False  # what names.is_valid_path_segment_name refuses, without building its words
    if "namespace" in meta:
        namespace = meta["namespace"]
        if type(namespace) is not str or (namespace and (len(namespace) > names.DNS1123_LABEL_MAX
                                                         or not _namespace_valid(namespace))):
            return False
    if "labels" in meta:
        labels = meta["labels"]
        if type(labels) is not dict:
            return False
        for key, value in labels.items():
            if (type(value) is not str or len(value) > names.LABEL_VALUE_MAX or len(key) > names.LABEL_KEY_MAX
                    or not _label_valid(key, value)):
                return False
    if "annotations" in meta:
        annotations = meta["annotations"]
        if type(annotations) is not dict:
            return False
        for key, value in annotations.items():
            if type(value) is not str or len(key) > names.LABEL_KEY_MAX or not _annotation_key_valid(key):
                return False
    if _FORBIDDEN.isdisjoint(meta):
        return True
    return not any(field in meta and meta[field] not in (None, "", 0, [], {}) for field in FORBIDDEN_METADATA)


def metadata_field_errors(meta: Any, path: str) -> list[FieldError]:
    """An embedded manifest's metadata judged field by field: the words of every error (and what
    ``metadata_valid`` is tested against)."""
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
