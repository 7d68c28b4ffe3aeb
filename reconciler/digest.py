"""Phase digests: a fingerprint of each phase's resolved content, stored once in ``status.observedPhases``.

A COS is immutable, but what its refs point at is not: a Secret can be deleted and recreated with different
bytes under the same name. The digest is computed like OLM v1 (Go's ``json.Marshal`` of
``{"name", "objects"}``: compact, keys sorted, ``<``, ``>`` and ``&`` escaped, non-ASCII kept as UTF-8), so a
COS moved between the two implementations keeps its recorded digests valid. One known difference: Go decodes
every JSON number through float64 and prints ``1.0`` as ``1``; here a manifest's non-integer or beyond-int64
numbers keep Python's spelling, so a phase containing such a number gets a different digest than upstream's
(manifests' numbers are integers in practice: quantities are strings).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from common.contract.objects import Obj

ALGORITHM = "sha256"

_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                             "\u2028": "\\u2028", "\u2029": "\\u2029"})


def go_json(value: Any) -> str:
    """Compact JSON with sorted keys, escaped like Go's ``encoding/json``."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False).translate(_GO_ESCAPES)


def phase_digest(name: str, objects: Sequence[Obj]) -> str:
    """``sha256:<hex>`` of one phase; an empty phase encodes ``"objects":null`` (a nil Go slice)."""
    doc = {"name": name, "objects": list(objects) if objects else None}
    return f"{ALGORITHM}:" + hashlib.sha256(go_json(doc).encode()).hexdigest()


def observed_phases(phases: Sequence[tuple[str, Sequence[Obj]]]) -> list[dict[str, str]]:
    """The ``status.observedPhases`` value for resolved ``(phase name, objects)`` pairs."""
    return [{"name": name, "digest": phase_digest(name, objs)} for name, objs in phases]


def compare(recorded: Sequence[Obj], current: Sequence[dict[str, str]]) -> str | None:
    """``None`` when the content is what was recorded, else the spec's Blocked message."""
    if len(recorded) != len(current):
        return f"number of phases has changed (expected {len(recorded)} phases, got {len(current)})"
    changed = [
        f'phase "{cur["name"]}" (expected digest {rec.get("digest")}, got {cur["digest"]})'
        for rec, cur in zip(recorded, current, strict=False)
        if rec.get("digest") != cur["digest"] or rec.get("name") != cur["name"]
    ]
    if not changed:
        return None
    return (f"resolved content of {len(changed)} phase(s) has changed: " + "; ".join(changed)
            + "; a referenced object source may have been deleted and recreated with different content")
