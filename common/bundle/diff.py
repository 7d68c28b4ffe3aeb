"""What changes between two revisions' contents, object by object, as ``cosctl diff`` shows it.

Objects are matched by identity (group, kind, namespace, name: :class:`~common.contract.objects.ObjectRef`), so
an object that only changed its API version or phase is "changed"/"moved", not removed and added. Each side is
cleaned exactly as ``publish`` cleans it before comparing, so server-assigned metadata or ``status`` in a plain
manifest never shows up as a difference that publishing would not make.

Manifests are compared as YAML with sorted keys, multi-line strings in block style (``|``), so a changed line
of an embedded file (a script, a config file in a ConfigMap) is one changed line of the diff, not a quoted
scalar re-wrapped over twice as many lines. :meth:`Difference.render_stat` is the summary: one line per object
with its inserted and deleted line counts, like ``git diff --stat``.

Secret values never appear: before rendering, each value of a Secret's ``data``/``stringData`` (and the
``kubectl.kubernetes.io/last-applied-configuration`` annotation, which repeats them) is replaced by
``<hidden>`` on both sides when it is equal and by ``<hidden>`` / ``<changed>`` when it differs, so the diff
says *that* a key changed, not what it holds (not even a digest, which would let a guessable value be
recovered).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from common.bundle import k8syaml
from common.bundle.phasing import Phase, clean
from common.contract.objects import GVK, Obj, ObjectRef

HIDDEN = "<hidden>"
CHANGED = "<changed>"
ADDED, REMOVED, CHANGED_OBJECT, MOVED = "added", "removed", "changed", "moved"
_SECRET_FIELDS = ("data", "stringData")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_ABSENT: Any = object()
STAT_BAR_WIDTH = 50  # the longest +/- bar of --stat; longer ones are scaled down, as git scales to the terminal


class _Dumper(k8syaml.SafeDumper):  # libyaml's emitter (~10x faster), through k8syaml.SafeDumper
    """Safe YAML as kubectl reads it back (a string it would read as a boolean or a number is quoted), with every
    multi-line string in literal block style. The default quotes it and folds it at 80
    columns with a blank line for each line break, so one changed line of a 50-line file showed as a 105-line
    hunk. The emitter itself falls back to a quoted style where a block scalar cannot hold the string exactly
    (trailing spaces on a line, special characters)."""


def _represent_str(dumper: Any, data: str) -> Any:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return k8syaml.represent_str(dumper, data)


_Dumper.add_representer(str, _represent_str)


@dataclass(frozen=True, slots=True)
class ObjectChange:
    """One object that differs. ``change`` is added, removed, changed (content differs; the phase may differ
    too) or moved (same content, another phase). ``diff`` is the unified diff of the cleaned, masked
    manifests (empty for moved)."""

    object: str
    change: str
    from_phase: str | None
    to_phase: str | None
    diff: str = ""

    @property
    def insertions(self) -> int:
        """Lines the unified diff adds (its two ``---``/``+++`` header lines are not counted)."""
        return sum(line.startswith("+") for line in self.diff.splitlines()[2:])

    @property
    def deletions(self) -> int:
        return sum(line.startswith("-") for line in self.diff.splitlines()[2:])

    def to_json(self, *, with_diff: bool = True) -> Obj:
        out: Obj = {"object": self.object, "change": self.change, "fromPhase": self.from_phase,
                    "toPhase": self.to_phase, "insertions": self.insertions, "deletions": self.deletions}
        if with_diff:
            out["diff"] = self.diff
        return out

    def headline(self) -> str:
        if self.change == ADDED:
            return f"added    {self.object} (phase {self.to_phase})"
        if self.change == REMOVED:
            return f"removed  {self.object} (phase {self.from_phase})"
        if self.change == MOVED:
            return f"moved    {self.object} (phase {self.from_phase} -> {self.to_phase})"
        moved = f", phase {self.from_phase} -> {self.to_phase}" if self.from_phase != self.to_phase else ""
        return f"changed  {self.object} (phase {self.to_phase}{moved})"


@dataclass(frozen=True, slots=True)
class Difference:
    """Every change from ``a`` to ``b``, in ``b``'s phase order (removed objects in ``a``'s, at the end)."""

    a: str
    b: str
    changes: tuple[ObjectChange, ...]
    unchanged: int

    @property
    def different(self) -> bool:
        return bool(self.changes)

    def counts(self) -> dict[str, int]:
        return {kind: sum(c.change == kind for c in self.changes) for kind in (ADDED, REMOVED, CHANGED_OBJECT, MOVED)}

    def summary(self) -> str:
        c = self.counts()
        return (f"{c[ADDED]} added, {c[REMOVED]} removed, {c[CHANGED_OBJECT]} changed, {c[MOVED]} moved, "
                f"{self.unchanged} unchanged")

    def to_json(self, *, with_diff: bool = True) -> Obj:
        """The whole comparison as data; ``with_diff=False`` (``--stat``) leaves each change's ``diff`` out."""
        return {"from": self.a, "to": self.b, "different": self.different, "counts": self.counts(),
                "unchanged": self.unchanged, "insertions": sum(c.insertions for c in self.changes),
                "deletions": sum(c.deletions for c in self.changes),
                "changes": [c.to_json(with_diff=with_diff) for c in self.changes]}

    def render(self) -> str:
        lines = [f"--- {self.a}", f"+++ {self.b}"]
        for change in self.changes:
            lines.append(change.headline())
            if change.diff:
                lines.extend("    " + line for line in change.diff.splitlines())
        lines.append(self.summary())
        return "\n".join(lines) + "\n"

    def render_stat(self) -> str:
        """One line per changed object, ``HEADLINE | N +++--``, then the summary with the line totals: what
        changed at a glance, however large (removing a 488 KB CRD is one line, not 7,959)."""
        lines = [f"--- {self.a}", f"+++ {self.b}"]
        heads = [c.headline() for c in self.changes]
        width = max((len(h) for h in heads), default=0)
        counts = [c.insertions + c.deletions for c in self.changes]
        digits = len(str(max(counts, default=0)))
        scale = min(1.0, STAT_BAR_WIDTH / max(max(counts, default=0), 1))
        for head, change, count in zip(heads, self.changes, counts, strict=True):
            plus, minus = _bar(change.insertions, scale), _bar(change.deletions, scale)
            lines.append(f"{head.ljust(width)} | {count:>{digits}} {'+' * plus}{'-' * minus}".rstrip())
        inserted = sum(c.insertions for c in self.changes)
        deleted = sum(c.deletions for c in self.changes)
        lines.append(f"{self.summary()}; {inserted} insertion{'s' * (inserted != 1)}(+), "
                     f"{deleted} deletion{'s' * (deleted != 1)}(-)")
        return "\n".join(lines) + "\n"


def _bar(count: int, scale: float) -> int:
    """Bar length of ``count`` lines: scaled, but at least one character for any change at all."""
    return max(1, round(count * scale)) if count else 0


def _index(phases: Sequence[Phase]) -> dict[ObjectRef, tuple[str, Obj]]:
    return {ObjectRef.of(obj): (phase.name, clean(obj)) for phase in phases for obj in phase.objects}


def is_secret(obj: Obj) -> bool:
    return obj.get("kind") == "Secret" and GVK.of(obj).group == ""


def _masked(old: Any, new: Any) -> tuple[Any, Any]:
    """Markers for one value present on the old and/or new side (``_ABSENT`` where it is not)."""
    return HIDDEN, (HIDDEN if old is _ABSENT or old == new else CHANGED)


def _mask_values(a: Obj | None, b: Obj | None, field: str) -> None:
    """Replace every value of the mapping ``field`` in ``a``/``b`` (in place) by a marker."""
    va = a.get(field, _ABSENT) if a is not None else _ABSENT
    vb = b.get(field, _ABSENT) if b is not None else _ABSENT
    if isinstance(va, dict) or isinstance(vb, dict):
        da = va if isinstance(va, dict) else {}
        db = vb if isinstance(vb, dict) else {}
        if a is not None and va is not _ABSENT:
            a[field] = dict.fromkeys(da, HIDDEN) if isinstance(va, dict) else HIDDEN
        if b is not None and vb is not _ABSENT:
            b[field] = ({k: _masked(da.get(k, _ABSENT), v)[1] for k, v in db.items()}
                        if isinstance(vb, dict) else HIDDEN)
        return
    if a is not None and va is not _ABSENT:
        a[field] = HIDDEN
    if b is not None and vb is not _ABSENT:
        b[field] = _masked(va, vb)[1]


def mask_secrets(a: Obj | None, b: Obj | None) -> tuple[Obj | None, Obj | None]:
    """Copies of the two versions of one object with Secret values replaced by markers (see module doc):
    ``data``, ``stringData`` and the ``last-applied-configuration`` annotation ``kubectl apply`` leaves on
    an exported Secret, which holds its values too."""
    if not any(o is not None and is_secret(o) for o in (a, b)):
        return a, b
    out_a = dict(a) if a is not None else None
    out_b = dict(b) if b is not None else None
    for field in _SECRET_FIELDS:
        _mask_values(out_a, out_b, field)
    annotations = (_annotations(out_a), _annotations(out_b))
    if any(LAST_APPLIED in (ann or {}) for ann in annotations):
        _mask_values(annotations[0], annotations[1], LAST_APPLIED)
    return out_a, out_b


def _annotations(obj: Obj | None) -> Obj | None:
    """A copy of ``obj``'s annotations, put in place of the original, to mask in (None without any)."""
    if obj is None or not isinstance(obj.get("metadata"), dict):
        return None
    meta = obj["metadata"] = dict(obj["metadata"])
    if not isinstance(meta.get("annotations"), dict):
        return None
    ann: Obj = dict(meta["annotations"])
    meta["annotations"] = ann
    return ann


def _yaml(obj: Obj | None) -> list[str]:
    if obj is None:
        return []
    text = yaml.dump(obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True)
    return text.splitlines(keepends=True)


def unified(label: str, a: Obj | None, b: Obj | None, a_name: str, b_name: str) -> str:
    """The unified diff of two versions of one object, Secret values masked."""
    ma, mb = mask_secrets(a, b)
    lines = difflib.unified_diff(_yaml(ma), _yaml(mb), fromfile=f"{a_name} {label}", tofile=f"{b_name} {label}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def diff(a: Sequence[Phase], b: Sequence[Phase], *, a_name: str = "a", b_name: str = "b") -> Difference:
    """Compare two revisions' contents (phases of plain manifests), object by object."""
    old, new = _index(a), _index(b)
    changes: list[ObjectChange] = []
    unchanged = 0
    for ref, (phase, obj) in new.items():
        label = str(ref)
        if ref not in old:
            changes.append(ObjectChange(label, ADDED, None, phase, unified(label, None, obj, a_name, b_name)))
            continue
        old_phase, old_obj = old[ref]
        if old_obj != obj:
            changes.append(ObjectChange(label, CHANGED_OBJECT, old_phase, phase,
                                        unified(label, old_obj, obj, a_name, b_name)))
        elif old_phase != phase:
            changes.append(ObjectChange(label, MOVED, old_phase, phase))
        else:
            unchanged += 1
    for ref, (phase, obj) in old.items():
        if ref not in new:
            label = str(ref)
            changes.append(ObjectChange(label, REMOVED, phase, None, unified(label, obj, None, a_name, b_name)))
    return Difference(a_name, b_name, tuple(changes), unchanged)
