"""The value of an object-data Secret key: JSON, optionally gzip-compressed, at most 10 MiB; its content address.

The webhook (checking Secrets on admission) and the reconciler (resolving refs) decode the same bytes the
same way, so a value the webhook admits is one the reconciler can read, and a gzip bomb is stopped after
at most ``limit + 1`` decompressed bytes in both places.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from typing import Any

from common.contract.api import MAX_DECOMPRESSED_BYTES

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 64 * 1024


class ObjectDataError(ValueError):
    """The stored bytes are not a usable manifest. Messages never include the bytes themselves."""


class TooLarge(ObjectDataError):
    """Decompressed data exceeds the limit."""


class CorruptGzip(ObjectDataError):
    """Data starts with the gzip magic but does not decompress."""


class NotJSON(ObjectDataError):
    """Data is not a JSON document."""


def is_gzip(raw: bytes) -> bool:
    return raw[:2] == GZIP_MAGIC


def decompress(raw: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Gunzip ``raw`` (all members), stopping as soon as the output would pass ``limit`` bytes.

    Memory stays bounded by ``limit`` plus one chunk however far the input would inflate.
    """
    out = bytearray()
    data = raw
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while True:
                chunk = d.decompress(data, _CHUNK)
                out += chunk
                if len(out) > limit:
                    raise TooLarge(f"exceeds maximum size ({limit} bytes)")
                data = d.unconsumed_tail
                if d.eof or (not data and not chunk):
                    break
            if not d.eof:
                tail = d.flush()
                out += tail
                if len(out) > limit:
                    raise TooLarge(f"exceeds maximum size ({limit} bytes)")
                if not d.eof:
                    raise CorruptGzip("unexpected end of gzip data")
        except zlib.error as exc:
            raise CorruptGzip(f"invalid gzip data: {exc}") from None
        data = d.unused_data
        if data and not is_gzip(data):
            break  # trailing garbage after the last member is ignored, as Go's gzip reader does with multistream off
    return bytes(out)


def decode(raw: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The JSON bytes of a stored value: decompressed when gzip, bounded by ``limit`` either way."""
    if is_gzip(raw):
        return decompress(raw, limit)
    if len(raw) > limit:
        raise TooLarge(f"exceeds maximum size ({limit} bytes)")
    return raw


def _not_a_json_constant(name: str) -> Any:
    raise NotJSON(f"invalid character: {name} is not JSON")


def load_json(data: bytes) -> Any:
    """Parse strict JSON (no NaN or Infinity: Go and the API server refuse them) without echoing the input in
    the error (it may be secret)."""
    try:
        return json.loads(data, parse_constant=_not_a_json_constant)
    except NotJSON:
        raise
    except UnicodeDecodeError:
        raise NotJSON("invalid character: data is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise NotJSON(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise NotJSON("exceeded max depth") from None
    except ValueError:  # Python refuses integers of more than 4300 digits
        raise NotJSON("a number is too large") from None


def content_key(stored: bytes) -> str:
    """The content address of stored bytes, the data key ``cosctl pack`` gives them and the webhook checks a key
    that looks like one against: SHA-256, base64url without padding (43 characters). Part of the format, so
    producers and the webhook compute it with this one function."""
    return base64.urlsafe_b64encode(hashlib.sha256(stored).digest()).rstrip(b"=").decode("ascii")
