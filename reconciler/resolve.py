"""Turning a COS spec into concrete manifests: inline objects are copied, refs are read from Secrets.

Each Secret is read once per reconcile however many keys point into it. Manifests are always fresh copies, so
nothing the engine does later (adding labels, owner references) can leak into the COS it read or into a
cache that served it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.bundle import refs
from common.contract.objects import Obj, copy_json


@dataclass
class ResolvedObject:
    phase_index: int
    phase: Obj           # the phase entry of the spec (for its collisionProtection)
    entry: Obj           # the object entry of the spec (for its collisionProtection)
    manifest: Obj        # the resolved manifest, as declared (never mutated)


@dataclass
class ResolvedPhase:
    name: str
    objects: list[ResolvedObject]


@dataclass
class Resolution:
    phases: list[ResolvedPhase]
    secrets: dict[tuple[str, str], Obj] = field(default_factory=dict)   # (ns, name) -> Secret
    errors: list[refs.RefError] = field(default_factory=list)           # only in lenient mode

    def kinds(self) -> set[tuple[str, str]]:
        return {(str(o.manifest.get("apiVersion")), str(o.manifest.get("kind")))
                for p in self.phases for o in p.objects}

    def mutable_secrets(self) -> list[str]:
        return sorted(f"{ns}/{name}" for (ns, name), s in self.secrets.items() if s.get("immutable") is not True)


def phases_of(spec: Obj) -> list[Obj]:
    return [p for p in spec.get("phases") or [] if isinstance(p, dict)]


def referenced_secrets(spec: Obj, system_namespace: str) -> set[tuple[str, str]]:
    """Every Secret the COS points at, whether or not it exists (so the process can watch for it)."""
    return {refs.SecretKeyRef.of(e["ref"], system_namespace).secret
            for p in phases_of(spec) for e in p.get("objects") or []
            if isinstance(e, dict) and isinstance(e.get("ref"), dict)}


def inline_kinds(spec: Obj) -> set[tuple[str, str]]:
    """(apiVersion, kind) of the inline objects: known even when a ref cannot be resolved yet."""
    return {(str(e["object"].get("apiVersion")), str(e["object"].get("kind")))
            for p in phases_of(spec) for e in p.get("objects") or []
            if isinstance(e, dict) and isinstance(e.get("object"), dict)}


def resolve(cluster: Any, spec: Obj, system_namespace: str, *, lenient: bool = False) -> Resolution:
    """Resolve every object of every phase, in order.

    Strict mode raises the first :class:`common.bundle.refs.RefError`; lenient mode (tearing down a deleted COS,
    where a vanished Secret must not block the uninstall) skips unresolvable entries and collects the errors.
    """
    secrets: dict[tuple[str, str], Obj] = {}
    out = Resolution([], secrets)
    for i, phase in enumerate(phases_of(spec)):
        objects: list[ResolvedObject] = []
        for entry in phase.get("objects") or []:
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("object"), dict):
                objects.append(ResolvedObject(i, phase, entry, copy_json(entry["object"])))
                continue
            where = refs.SecretKeyRef.of(entry.get("ref") or {}, system_namespace)
            try:
                secret = secrets.get(where.secret)
                if secret is None:
                    secret = secrets[where.secret] = refs.read_secret(cluster, where)
                manifest = refs.decode_value(refs.secret_value(secret, where), where)
            except refs.RefError as exc:
                if not lenient:
                    raise
                out.errors.append(exc)
                continue
            objects.append(ResolvedObject(i, phase, entry, manifest))
        out.phases.append(ResolvedPhase(str(phase.get("name") or ""), objects))
    return out
