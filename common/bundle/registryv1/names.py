"""Names OLM v1 gives the objects it generates: a base cut to fit 63 characters, and a suffix.

``object_name_for_base_and_suffix`` is OLM v1's ``util.ObjectNameForBaseAndSuffix``: ``<base>-<suffix>``, the
base cut (in bytes, as Go slices strings) so that the whole fits a 63-character DNS label. The unique name of a
Role or ClusterRole (``unique_name``) takes as suffix the hash of the CSV permission it grants, OLM v1's
``DefaultUniqueNameGenerator``: SHA-224 over the ``encoding/json`` form of the Go struct (trailing newline of
``json.Encoder`` included), printed in base 36. The expected names in OLM v1's regression data, e.g.
``argocd-operator.v0-1dhiybrldl1gyksid1dk2dqjsc72psdybc7iyvse5gpx``, depend on every byte of that encoding.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from .gotext import go_marshal_typed

MAX_NAME_LENGTH: Final = 63
_BASE36: Final = "0123456789abcdefghijklmnopqrstuvwxyz"


def object_name_for_base_and_suffix(base: str, suffix: str) -> str:
    """``<base>-<suffix>``, ``base`` cut to ``63 - len(suffix) - 1`` bytes when the two exceed 63 bytes."""
    raw, tail = base.encode(), suffix.encode()
    if len(raw) + len(tail) > MAX_NAME_LENGTH:
        raw = raw[: MAX_NAME_LENGTH - len(tail) - 1]
    return f"{raw.decode(errors='replace')}-{suffix}"


def deep_hash(value: Any) -> str:
    """OLM v1's ``DeepHashObject`` of a value already in its Go ``encoding/json`` shape: base-36 SHA-224."""
    digest = hashlib.sha224((go_marshal_typed(value) + "\n").encode()).digest()
    number = int.from_bytes(digest, "big")
    digits = []
    while number:
        number, rest = divmod(number, 36)
        digits.append(_BASE36[rest])
    return "".join(reversed(digits)) or "0"


def unique_name(base: str, value: Any) -> str:
    """OLM v1's ``DefaultUniqueNameGenerator``: ``base`` with the hash of ``value`` as suffix."""
    return object_name_for_base_and_suffix(base, deep_hash(value))
