"""Judging an object-data Secret (type ``olm.operatorframework.io/object-data``): the conventions of
``shared/spec/api-and-admission.md`` section 5. Messages name keys, never values: a Secret's content must not
leak into responses or logs.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from common.contract import api, names, objectdata
from common.contract.fielderrors import OMIT, FieldError, invalid, required
from common.contract.objectdata import content_key
from common.contract.validation.structure import json_type

Obj = dict[str, Any]

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
