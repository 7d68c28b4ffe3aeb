"""The CSV's ``spec.version`` and ``spec.release`` as OLM v1 reads them: blang/semver v4's rules, Go's messages.

Why: OLM v1 decodes the whole ClusterServiceVersion before it renders anything, and these two fields have
their own ``UnmarshalJSON``: ``version`` (operator-framework/api ``OperatorVersion``) is
``semver.ParseTolerant`` of a string, ``release`` (``OperatorRelease``) is ``semver.NewPRVersion`` of each
dot-separated part. A bundle whose version blang/semver refuses (``1.0.0_beta``, ``1.0.0-01``) is refused by OLM
v1 when it loads it, so it is refused here too, with blang/semver's own message.

Pure functions over ``str``.
"""

from __future__ import annotations

from typing import Final

from .gotext import go_quote

_NUMBERS: Final = frozenset("0123456789")
_ALPHANUM: Final = frozenset("-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_UINT64_MAX: Final = 2**64 - 1
# Go's strings.TrimSpace: Unicode's White_Space (Python's str.strip() also takes \x1c-\x1f)
_GO_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
                   "\u2028\u2029\u202f\u205f\u3000"


class SemverError(ValueError):
    """blang/semver refused the text; the message is its own."""


def _contains_only(text: str, allowed: frozenset[str]) -> bool:
    return all(char in allowed for char in text)


def _has_leading_zeroes(text: str) -> bool:
    return len(text) > 1 and text[0] == "0"


def _parse_uint(text: str) -> int:
    """Go's ``strconv.ParseUint(text, 10, 64)`` for text already known to be digits (or empty)."""
    if not text:
        raise SemverError('strconv.ParseUint: parsing "": invalid syntax')
    value = int(text)
    if value > _UINT64_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {go_quote(text)}: value out of range")
    return value


def _number(text: str, which: str) -> None:
    if not _contains_only(text, _NUMBERS):
        raise SemverError(f"Invalid character(s) found in {which} number {go_quote(text)}")
    if _has_leading_zeroes(text):
        raise SemverError(f"{which.capitalize()} number must not contain leading zeroes {go_quote(text)}")
    _parse_uint(text)


def check_prerelease(text: str) -> None:
    """``semver.NewPRVersion``: one prerelease identifier (digits without a leading zero, or alphanumerics)."""
    if not text:
        raise SemverError("Prerelease is empty")
    if _contains_only(text, _NUMBERS):
        if _has_leading_zeroes(text):
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(text)}")
        _parse_uint(text)
    elif not _contains_only(text, _ALPHANUM):
        raise SemverError(f"Invalid character(s) found in prerelease {go_quote(text)}")


def check_strict(text: str) -> None:
    """``semver.Parse``: ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    _number(parts[0], "major")
    _number(parts[1], "minor")
    patch, build = parts[2], None
    if "+" in patch:
        patch, _, rest = patch.partition("+")
        build = rest.split(".")
    prerelease = None
    if "-" in patch:
        patch, _, rest = patch.partition("-")
        prerelease = rest.split(".")
    _number(patch, "patch")
    for identifier in prerelease or ():
        check_prerelease(identifier)
    for identifier in build or ():
        if not identifier:
            raise SemverError("Build meta data is empty")
        if not _contains_only(identifier, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {go_quote(identifier)}")


def check_tolerant(text: str) -> None:
    """``semver.ParseTolerant``: spaces and a leading ``v`` trimmed, leading zeroes dropped, a missing minor or
    patch filled with ``0``, then :func:`check_strict`."""
    text = text.strip(_GO_SPACE)
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            parts[i] = trimmed if trimmed and trimmed[0] in _NUMBERS else "0" + trimmed
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("Short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    check_strict(".".join(parts))


def check_release(text: str) -> None:
    """``OperatorRelease.UnmarshalJSON``: every dot-separated part a prerelease identifier (so ``""`` is
    refused: one empty part)."""
    for part in text.split("."):
        check_prerelease(part)
