"""The CSV's ``spec.version`` and ``spec.release`` as OLM v1 reads them: blang/semver v4's rules, Go's messages.

Why: OLM v1 decodes the whole ClusterServiceVersion before it renders anything, and these two fields have
their own ``UnmarshalJSON``: ``version`` (operator-framework/api ``OperatorVersion``) is
``semver.ParseTolerant`` of a string, ``release`` (``OperatorRelease``) is ``semver.NewPRVersion`` of each
dot-separated part. A bundle whose version blang/semver refuses (``1.0.0_beta``, ``1.0.0-01``) is refused by OLM
v1 when it loads it, so it is refused here too, with blang/semver's own message.

The same rules serve catalogs: :func:`parse` gives blang's ``Version`` values (compared as blang compares
them), which OLM v1 orders bundles and matches installed versions with, and :func:`parse_range` is blang's
``ParseRange``, which OLM v1 reads a channel entry's ``skipRange`` with.

Pure functions over ``str``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
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


def _number(text: str, which: str) -> int:
    if not _contains_only(text, _NUMBERS):
        raise SemverError(f"Invalid character(s) found in {which} number {go_quote(text)}")
    if _has_leading_zeroes(text):
        raise SemverError(f"{which.capitalize()} number must not contain leading zeroes {go_quote(text)}")
    return _parse_uint(text)


@dataclass(frozen=True, slots=True)
class PRVersion:
    """One prerelease (or OLM release) identifier: ``num`` when it is all digits, else ``text``."""

    text: str
    num: int | None = None

    def compare(self, other: PRVersion) -> int:
        """``PRVersion.Compare``: numbers before words, numbers by value, words by bytes."""
        if self.num is not None and other.num is None:
            return -1
        if self.num is None and other.num is not None:
            return 1
        if self.num is not None and other.num is not None:
            return (self.num > other.num) - (self.num < other.num)
        mine, theirs = self.text.encode(), other.text.encode()
        return (mine > theirs) - (mine < theirs)

    def __str__(self) -> str:
        return str(self.num) if self.num is not None else self.text


@dataclass(frozen=True, slots=True)
class Version:
    """blang/semver's ``Version``: build metadata is kept but has no precedence."""

    major: int
    minor: int
    patch: int
    pre: tuple[PRVersion, ...] = ()
    build: tuple[str, ...] = ()

    def compare(self, other: Version) -> int:
        """``Version.Compare``: -1, 0 or 1; a version with a prerelease comes before the one without."""
        for mine, theirs in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if mine != theirs:
                return 1 if mine > theirs else -1
        return compare_prereleases(self.pre, other.pre)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(identifier) for identifier in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def compare_prereleases(mine: tuple[PRVersion, ...], theirs: tuple[PRVersion, ...]) -> int:
    """The prerelease part of ``Version.Compare``: none sorts after any."""
    if not mine or not theirs:
        return (not mine) - (not theirs) if (mine or theirs) else 0
    for left, right in zip(mine, theirs, strict=False):
        if (comparison := left.compare(right)) != 0:
            return comparison
    return (len(mine) > len(theirs)) - (len(mine) < len(theirs))


def parse_prerelease(text: str) -> PRVersion:
    """``semver.NewPRVersion``: one prerelease identifier (digits without a leading zero, or alphanumerics)."""
    if not text:
        raise SemverError("Prerelease is empty")
    if _contains_only(text, _NUMBERS):
        if _has_leading_zeroes(text):
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(text)}")
        return PRVersion("", _parse_uint(text))
    if not _contains_only(text, _ALPHANUM):
        raise SemverError(f"Invalid character(s) found in prerelease {go_quote(text)}")
    return PRVersion(text)


def check_prerelease(text: str) -> None:
    """:func:`parse_prerelease`, for its verdict only."""
    parse_prerelease(text)


def parse(text: str) -> Version:
    """``semver.Parse``: ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    patch, build = parts[2], None
    if "+" in patch:
        patch, _, rest = patch.partition("+")
        build = rest.split(".")
    prerelease = None
    if "-" in patch:
        patch, _, rest = patch.partition("-")
        prerelease = rest.split(".")
    patch_number = _number(patch, "patch")
    pre = tuple(parse_prerelease(identifier) for identifier in prerelease or ())
    for identifier in build or ():
        if not identifier:
            raise SemverError("Build meta data is empty")
        if not _contains_only(identifier, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {go_quote(identifier)}")
    return Version(major, minor, patch_number, pre, tuple(build or ()))


def check_strict(text: str) -> None:
    """:func:`parse`, for its verdict only."""
    parse(text)


def parse_tolerant(text: str) -> Version:
    """``semver.ParseTolerant``: spaces and a leading ``v`` trimmed, leading zeroes dropped, a missing minor or
    patch filled with ``0``, then :func:`parse`."""
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
    return parse(".".join(parts))


def printed_tolerant(text: str) -> str:
    """``text`` as OLM's ``OperatorVersion`` prints it: read with :func:`parse_tolerant` and printed as Go prints a
    version (``v1.2`` is ``1.2.0``; a strict version prints as itself); ``text`` itself when it is no version even
    so (``""`` included)."""
    try:
        return str(parse_tolerant(text))
    except SemverError:
        return text


def check_release(text: str) -> None:
    """``OperatorRelease.UnmarshalJSON``: every dot-separated part a prerelease identifier (so ``""`` is
    refused: one empty part)."""
    for part in text.split("."):
        check_prerelease(part)


# --- ranges (``semver.ParseRange``) --------------------------------------------------------------------------
#
# OLM v1 reads a catalog channel entry's ``skipRange`` with blang/semver's ranges, which differ from the
# Masterminds constraints it reads a ClusterExtension's version range with (operator-controller#1565): spaces
# join comparators, ``||`` separates alternatives, ``x`` in a version is a wildcard. The quirks are kept: a
# range is split on bytes, and any ``x`` in a comparator (even inside a prerelease) goes through the wildcard
# expansion.

Range = Callable[[Version], bool]

_COMPARATORS: Final[dict[str, Callable[[int], bool]]] = {
    "": lambda c: c == 0, "=": lambda c: c == 0, "==": lambda c: c == 0,
    ">": lambda c: c == 1, ">=": lambda c: c >= 0, "<": lambda c: c == -1, "<=": lambda c: c <= 0,
    "!": lambda c: c != 0, "!=": lambda c: c != 0,
}


def _split_and_trim(text: str) -> list[str]:
    """``splitAndTrim``: split at spaces not following ``>``, ``<`` or ``=``, then drop the spaces kept."""
    data = text.encode()
    result: list[bytes] = []
    last, last_char = 0, 0
    for i, byte in enumerate(data):
        if byte == 0x20 and last_char not in b"><=":
            if last < i - 1:
                result.append(data[last:i])
            last = i + 1
        elif byte != 0x20:
            last_char = byte
    if last < len(data) - 1:
        result.append(data[last:])
    return [part.replace(b" ", b"").decode(errors="surrogateescape") for part in result]


def _split_or_parts(parts: list[str]) -> list[list[str]]:
    alternatives: list[list[str]] = []
    last = 0
    for i, part in enumerate(parts):
        if part == "||":
            if i == 0:
                raise SemverError("First element in range is '||'")
            alternatives.append(parts[last:i])
            last = i + 1
    if last == len(parts):
        raise SemverError("Last element in range is '||'")
    alternatives.append(parts[last:])
    return alternatives


def _split_comparator_version(text: str) -> tuple[str, str]:
    """``splitComparatorVersion``: the operator is what comes before the first (Unicode) digit."""
    for i, char in enumerate(text):
        if unicodedata.category(char) == "Nd":
            return text[:i].strip(_GO_SPACE), text[i:]
    raise SemverError(f"Could not get version from string: {go_quote(text)}")


def _go_atoi(text: str) -> int | None:
    """``strconv.Atoi`` (None where it fails; the wildcard expansion ignores that error)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return value if -2**63 <= value < 2**63 else None


def _increment(text: str, index: int) -> str:
    parts = text.split(".")
    number = _go_atoi(parts[index])
    if number is None:
        return ""
    parts[index] = str(number + 1)
    return ".".join(parts)


def _expand_wildcards(alternatives: list[list[str]]) -> list[list[str]]:
    """``expandWildcardVersion``: ``1.2.x`` becomes ``>=1.2.0 <1.3.0``, ``>1.x`` becomes ``>=2.0.0``..."""
    expanded: list[list[str]] = []
    for alternative in alternatives:
        parts: list[str] = []
        for part in alternative:
            if "x" in part:
                operator, version = _split_comparator_version(part)
                pieces = version.split(".")
                wildcard = len(pieces) if pieces[-1] == "x" and len(pieces) in (1, 2, 3) else 0
                flat = version.replace(".x.x", ".x", 1).replace(".x", ".0", 1)
                if len(flat.split(".")) == 2:
                    flat += ".0"
                result_operator, increment = "", False
                if operator == ">":
                    result_operator, increment = ">=", True
                elif operator == ">=":
                    result_operator = ">="
                elif operator == "<":
                    result_operator = "<"
                elif operator == "<=":
                    result_operator, increment = "<", True
                elif operator in ("", "=", "=="):
                    parts.append(">=" + flat)
                    result_operator, increment = "<", True
                elif operator in ("!=", "!"):
                    parts.append("<" + flat)
                    result_operator, increment = ">=", True
                if not increment:
                    result_version = flat
                elif wildcard == 3:  # 1.2.x
                    result_version = _increment(flat, 1)
                elif wildcard == 2:  # 1.x
                    result_version = _increment(flat, 0)
                else:
                    result_version = ""
                parts.append(result_operator + result_version)
            else:
                parts.append(part)
        expanded.append(parts)
    return expanded


def parse_range(text: str) -> Range:
    """``semver.ParseRange``: a predicate over versions, or :class:`SemverError` with blang/semver's message."""
    alternatives = _expand_wildcards(_split_or_parts(_split_and_trim(text)))
    predicates: list[list[tuple[Callable[[int], bool], Version]]] = []
    for alternative in alternatives:
        conjunction = []
        for part in alternative:
            operator, version_text = _split_comparator_version(part)
            comparator = _COMPARATORS.get(operator)
            if comparator is None:
                raise SemverError(f"Could not parse Range {go_quote(part)}: Could not parse comparator "
                                  f"{go_quote(operator)} in {go_quote(operator + version_text)}")
            try:
                bound = parse(version_text)
            except SemverError as exc:
                raise SemverError(f"Could not parse Range {go_quote(part)}: Could not parse version "
                                  f"{go_quote(version_text)} in {go_quote(operator + version_text)}: {exc}") from None
            conjunction.append((comparator, bound))
        predicates.append(conjunction)

    def in_range(version: Version) -> bool:
        return any(all(comparator(version.compare(bound)) for comparator, bound in conjunction)
                   for conjunction in predicates)
    return in_range
