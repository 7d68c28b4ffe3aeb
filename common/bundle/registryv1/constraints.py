"""Version ranges as OLM v1 reads a ClusterExtension's ``spec.source.catalog.version``: Masterminds/semver v3's
constraints.

Why: OLM v1 reads the version range an admin asks for with Masterminds/semver (``compare.NewVersionRange``), not
with blang/semver it reads catalogs' ``skipRange`` with, and the two differ: Masterminds knows ``~``, ``^``,
hyphen ranges, ``x``/``*`` wildcards and commas, and leaves prereleases out unless the range names one.
``>=1.0.0, <2.0.0 || ~2.1`` selects the same bundles here as there, and an invalid range is refused with
Masterminds' message.

Pure functions over ``str``: :func:`parse_constraints` returns a predicate over blang versions (the bundle's
version converted as OLM v1 converts it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from . import semver
from .gotext import go_quote

MAX_CONSTRAINT_LENGTH: Final = 512
MAX_CONSTRAINT_GROUPS: Final = 32
_UINT64_MAX: Final = 2**64 - 1

# Go's RE2 ``\s`` is ASCII whitespace without \v; Python's is wider, so it is spelled out.
_S = r"[\t\n\f\r ]"
_CV = (r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?"
       r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
       r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?")
_OPS = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^"
_CONSTRAINT = re.compile(rf"^{_S}*({_OPS}){_S}*({_CV}){_S}*\Z")  # Go's $ is the end of the text
_RANGE = re.compile(rf"{_S}*({_CV}){_S}+-{_S}+({_CV}){_S}*")
_FIND = re.compile(rf"({_OPS}){_S}*({_CV})")
_VALID = re.compile(rf"^({_S}*({_OPS}){_S}*({_CV}){_S}*)((?:{_S}+|,{_S}*)({_OPS}){_S}*({_CV}){_S}*)*\Z")
_LOOSE = re.compile(r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
                    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?\Z")
_NUM: Final = frozenset("0123456789")
_ALLOWED: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")


class ConstraintError(ValueError):
    """Masterminds/semver refused the range; the message is its own."""


@dataclass(frozen=True, slots=True)
class MVersion:
    """A Masterminds ``Version``: numbers, and the prerelease and metadata as text."""

    major: int
    minor: int
    patch: int
    pre: str = ""

    def compare(self, other: MVersion) -> int:
        for mine, theirs in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if mine != theirs:
                return -1 if mine < theirs else 1
        if not self.pre and not other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        return _compare_prerelease(self.pre, other.pre)


def _go_uint(text: str) -> int | None:
    if not text or not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value <= _UINT64_MAX else None


def _compare_pre_part(mine: str, theirs: str) -> int:
    """``comparePrePart``, quirks included (an empty part sorts first, words by bytes)."""
    if mine == theirs:
        return 0
    if mine == "":
        return -1
    if theirs == "":
        return 1
    theirs_number, mine_number = _go_uint(theirs), _go_uint(mine)
    if theirs_number is None and mine_number is None:
        return 1 if mine.encode() > theirs.encode() else -1
    if theirs_number is None:
        return -1
    if mine_number is None:
        return 1
    return 1 if mine_number > theirs_number else -1


def _compare_prerelease(mine: str, theirs: str) -> int:
    mine_parts, theirs_parts = mine.split("."), theirs.split(".")
    for i in range(max(len(mine_parts), len(theirs_parts))):
        left = mine_parts[i] if i < len(mine_parts) else ""
        right = theirs_parts[i] if i < len(theirs_parts) else ""
        if (comparison := _compare_pre_part(left, right)) != 0:
            return comparison
    return 0


def _valid_parts(text: str, *, numeric_rules: bool) -> bool:
    for part in text.split("."):
        if not part:
            return False
        if numeric_rules and set(part) <= _NUM:
            if len(part) > 1 and part[0] == "0":
                return False
        elif not set(part) <= _ALLOWED:
            return False
    return True


def _new_version(text: str) -> MVersion | None:
    """``NewVersion`` with coercion (the package's default): None where it fails."""
    if len(text) > 256:
        return None
    m = _LOOSE.match(text)
    if m is None:
        return None
    major = _go_uint(m.group(1))
    minor = _go_uint((m.group(2) or ".0")[1:])
    patch = _go_uint((m.group(3) or ".0")[1:])
    pre, metadata = m.group(5) or "", m.group(8) or ""
    if major is None or minor is None or patch is None:
        return None
    if pre and not _valid_parts(pre, numeric_rules=True):
        return None
    if metadata and not _valid_parts(metadata, numeric_rules=False):
        return None
    return MVersion(major, minor, patch, pre)


def _is_x(text: str) -> bool:
    return text in ("x", "*", "X")


@dataclass(frozen=True, slots=True)
class _Constraint:
    operator: str
    con: MVersion
    minor_dirty: bool = False
    patch_dirty: bool = False
    dirty: bool = False

    def check(self, v: MVersion, include_pre: bool) -> bool:
        if v.pre and not include_pre:
            return False
        return _CHECKS[self.operator](v, self)


def _parse_constraint(text: str) -> _Constraint:
    if not text:
        return _Constraint("", MVersion(0, 0, 0), dirty=True)
    m = _CONSTRAINT.match(text)
    if m is None:
        raise ConstraintError(f"improper constraint: {go_quote(text)}")
    major, minor, patch, pre = (m.group(i) or "" for i in (3, 4, 5, 6))
    version = m.group(2)
    minor_dirty = patch_dirty = dirty = False
    if _is_x(major) or major == "":
        version, dirty = f"0.0.0{pre}", True
    elif _is_x(minor.removeprefix(".")) or minor == "":
        version, dirty, minor_dirty = f"{major}.0.0{pre}", True, True
    elif _is_x(patch.removeprefix(".")) or patch == "":
        version, dirty, patch_dirty = f"{major}{minor}.0{pre}", True, True
    con = _new_version(version)
    if con is None:
        raise ConstraintError("constraint parser error")
    return _Constraint(m.group(1), con, minor_dirty, patch_dirty, dirty)


def _not_equal(v: MVersion, c: _Constraint) -> bool:
    if c.dirty:
        if c.con.major != v.major:
            return True
        if c.con.minor != v.minor and not c.minor_dirty:
            return True
        if c.minor_dirty:
            return False
        if c.con.patch != v.patch and not c.patch_dirty:
            return True
        if c.patch_dirty:
            if v.pre or c.con.pre:
                return _compare_prerelease(v.pre, c.con.pre) != 0
            return False
    return v.compare(c.con) != 0


def _greater_than(v: MVersion, c: _Constraint) -> bool:
    if not c.dirty:
        return v.compare(c.con) == 1
    if v.major != c.con.major:
        return v.major > c.con.major
    if c.minor_dirty:
        return False
    if c.patch_dirty:
        return v.minor > c.con.minor
    return v.compare(c.con) == 1


def _less_than_equal(v: MVersion, c: _Constraint) -> bool:
    if not c.dirty:
        return v.compare(c.con) <= 0
    if v.major > c.con.major:
        return False
    return not (v.major == c.con.major and v.minor > c.con.minor and not c.minor_dirty)


def _tilde(v: MVersion, c: _Constraint) -> bool:
    if v.compare(c.con) < 0:
        return False
    if (c.con.major, c.con.minor, c.con.patch) == (0, 0, 0) and not c.minor_dirty and not c.patch_dirty:
        return True
    if v.major != c.con.major:
        return False
    return not (v.minor != c.con.minor and not c.minor_dirty)


def _tilde_or_equal(v: MVersion, c: _Constraint) -> bool:
    return _tilde(v, c) if c.dirty else v.compare(c.con) == 0


def _caret(v: MVersion, c: _Constraint) -> bool:
    if v.compare(c.con) < 0:
        return False
    if c.con.major > 0 or c.minor_dirty:
        return v.major == c.con.major
    if v.major > 0:
        return False
    if c.con.minor > 0 or c.patch_dirty:
        return v.minor == c.con.minor
    if v.minor > 0:
        return False
    return c.con.patch == v.patch


_CHECKS: Final[dict[str, Callable[[MVersion, _Constraint], bool]]] = {
    "": _tilde_or_equal, "=": _tilde_or_equal, "!=": _not_equal, ">": _greater_than,
    "<": lambda v, c: v.compare(c.con) < 0, ">=": lambda v, c: v.compare(c.con) >= 0,
    "=>": lambda v, c: v.compare(c.con) >= 0, "<=": _less_than_equal, "=<": _less_than_equal,
    "~": _tilde, "~>": _tilde, "^": _caret,
}


def _rewrite_range(text: str) -> str:
    """``rewriteRange``: ``1.2 - 1.4.5`` becomes ``>= 1.2, <= 1.4.5``."""
    out = text
    for m in _RANGE.finditer(text):
        out = out.replace(m.group(0), f">= {m.group(1)}, <= {m.group(11)} ", 1)
    return out


def parse_constraints(text: str) -> Callable[[semver.Version], bool]:
    """``semver.NewConstraint(text).Check``, over a blang version as OLM v1 converts it (prerelease and build
    joined with dots). Raises :class:`ConstraintError`."""
    if len(text.encode()) > MAX_CONSTRAINT_LENGTH:
        raise ConstraintError(f"constraint string is too long (max {MAX_CONSTRAINT_LENGTH} bytes)")
    groups = _rewrite_range(text).split("||")
    if len(groups) > MAX_CONSTRAINT_GROUPS:
        raise ConstraintError(f"too many constraint groups (max {MAX_CONSTRAINT_GROUPS})")
    parsed: list[tuple[list[_Constraint], bool]] = []
    for group in groups:
        if not _VALID.match(group):
            raise ConstraintError(f"improper constraint: {go_quote(group)}")
        found = [m.group(0) for m in _FIND.finditer(group)] or [group]
        constraints = [_parse_constraint(part) for part in found]
        parsed.append((constraints, any(c.con.pre for c in constraints)))

    def check(version: semver.Version) -> bool:
        converted = MVersion(version.major, version.minor, version.patch,
                             ".".join(str(identifier) for identifier in version.pre))
        return any(all(c.check(converted, has_pre) for c in constraints) for constraints, has_pre in parsed)
    return check
