"""Resolving a ``ref`` object entry (``{name, namespace, key}``) to the manifest stored in a Secret key.

Shared by the reconciler (rolling out) and the webhook (checking what a COS points at), so both read the same
bytes the same way: an empty namespace means the system namespace, the value is gzip when it starts with
``1f 8b`` (decompressed with a hard 10 MiB cap by :mod:`common.contract.objectdata`), and it must be a JSON object. The
error messages are the OLM v1 reconciler's, byte for byte (``shared/spec/reconciler.md`` section 2). None of
them ever contains Secret data.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.cluster.interface import ApiError, Cluster, NotFound
from common.contract import objectdata
from common.contract.api import DEFAULT_SYSTEM_NAMESPACE, MAX_DECOMPRESSED_BYTES
from common.contract.objects import Obj


class RefError(Exception):
    """A ref that cannot be resolved; ``str()`` is the user-facing message. Retryable: the Secret may appear
    or be fixed later."""

    def __init__(self, message: str, ref: SecretKeyRef) -> None:
        super().__init__(message)
        self.message = message
        self.ref = ref

    def __str__(self) -> str:
        return self.message


class SecretUnreadable(RefError):
    """Reading the Secret failed (``cause`` is the ``ApiError``; ``missing`` when it was a NotFound)."""

    def __init__(self, message: str, ref: SecretKeyRef, cause: ApiError) -> None:
        super().__init__(message, ref)
        self.cause = cause

    @property
    def missing(self) -> bool:
        return isinstance(self.cause, NotFound)


class KeyNotFound(RefError):
    """The Secret has no such data key."""


class DataTooLarge(RefError):
    """The value decompresses beyond the 10 MiB cap (a gzip bomb stops there)."""


class DataUndecodable(RefError):
    """The value is not valid base64, not valid gzip, not JSON, or not a JSON object."""


@dataclass(frozen=True, slots=True)
class SecretKeyRef:
    """A ref with its namespace defaulted: where the manifest lives."""

    namespace: str
    name: str
    key: str

    @classmethod
    def of(cls, ref: Mapping[str, Any], system_namespace: str = DEFAULT_SYSTEM_NAMESPACE) -> SecretKeyRef:
        return cls(str(ref.get("namespace") or system_namespace), str(ref.get("name") or ""),
                   str(ref.get("key") or ""))

    @property
    def secret(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def decode_value(raw: bytes, ref: SecretKeyRef, limit: int = MAX_DECOMPRESSED_BYTES) -> Obj:
    """The manifest in the raw (already base64-decoded) bytes of a Secret key."""
    try:
        data = objectdata.decode(raw, limit)
    except objectdata.TooLarge:
        raise DataTooLarge(f'decompressed data for key "{ref.key}" in Secret {ref} exceeds maximum size '
                           f"({limit} bytes)", ref) from None
    except objectdata.CorruptGzip as exc:
        raise DataUndecodable(f'decompressing data for key "{ref.key}" in Secret {ref}: {exc}', ref) from None
    try:
        obj = objectdata.load_json(data)
    except objectdata.NotJSON as exc:
        raise DataUndecodable(f'unmarshaling object from key "{ref.key}" in Secret {ref}: {exc}', ref) from None
    if not isinstance(obj, dict):
        raise DataUndecodable(f'unmarshaling object from key "{ref.key}" in Secret {ref}: '
                              f"cannot unmarshal {_json_type(obj)} into an object", ref)
    return obj


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"


def secret_value(secret: Obj, ref: SecretKeyRef) -> bytes:
    """The raw bytes of ``ref.key`` in a Secret as the API serves it (``data`` is base64)."""
    data = secret.get("data") or {}
    if ref.key not in data:
        string_data = secret.get("stringData") or {}
        if ref.key in string_data:
            return str(string_data[ref.key]).encode()
        raise KeyNotFound(f'key "{ref.key}" not found in Secret {ref}', ref)
    value = data[ref.key]
    if isinstance(value, bytes):
        return value
    try:
        return base64.b64decode(str(value or ""), validate=True)
    except (binascii.Error, ValueError):
        raise DataUndecodable(f'unmarshaling object from key "{ref.key}" in Secret {ref}: '
                              f"illegal base64 data", ref) from None


def read_secret(cluster: Cluster, ref: SecretKeyRef) -> Obj:
    """Get the Secret a ref points at, wrapping API errors in the spec's message."""
    try:
        return cluster.get("v1", "Secret", ref.name, ref.namespace)
    except ApiError as exc:
        raise SecretUnreadable(f"getting Secret {ref}: {exc}", ref, exc) from None


def resolve(cluster: Cluster, ref: Mapping[str, Any], *,
            system_namespace: str = DEFAULT_SYSTEM_NAMESPACE) -> tuple[Obj, Obj]:
    """Resolve ``ref`` to ``(manifest, secret)``; raises a :class:`RefError` subclass with the spec's message.

    The Secret is returned too so the caller can check ``immutable`` without reading it twice.
    """
    where = SecretKeyRef.of(ref, system_namespace)
    secret = read_secret(cluster, where)
    return decode_value(secret_value(secret, where), where), secret
