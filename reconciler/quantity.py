"""Kubernetes resource quantities (``500m``, ``1Gi``, ``1e3``), compared by value.

The API server stores quantities in canonical form: ``1000m`` comes back as ``1`` and ``1024Mi`` as ``1Gi``.
Comparing the manifest's string with the stored one would call that drift and re-apply the object on every
reconcile, so the drift check compares two strings that both parse as quantities by their value.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal(10**3),
            "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15),
            "E": Decimal(10**18)}


def parse(text: str) -> Decimal | None:
    """The value of a quantity string, or None when it is not one."""
    m = _QUANTITY.fullmatch(text)
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        return None
    suffix = m.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    if suffix:
        return number * (Decimal(10) ** int(suffix[1:]))
    return number


def same(a: str, b: str) -> bool:
    """Whether two strings are the same quantity (both must parse)."""
    va, vb = parse(a), parse(b)
    return va is not None and vb is not None and va == vb
