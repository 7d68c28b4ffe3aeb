"""Rolling one object out: read it, decide (collision table), write only when needed, probe it.

"Only when needed" is what makes a steady state free: an object this COS controls is applied only when the
server's own record says it changed since our last write (see :mod:`reconciler.drift`: defaults the server
adds, its normalization of what we sent, fields other managers own and labels users add are not differences).
Everything we send is a fresh copy of the manifest with our identity added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from common.cluster.interface import AlreadyExists, ApiError, Cluster, NotFound, UnknownKind
from common.contract import probes
from common.contract.api import (
    ANNOTATION_REVISION,
    FIELD_MANAGER,
    LABEL_MANAGED_BY,
    LABEL_OWNER_NAME,
    MANAGED_BY_VALUE,
    owner_reference,
)
from common.contract.objects import Obj
from common.contract.quantity import same_value
from reconciler import collisions, drift
from reconciler.collisions import ADOPT, COLLISION, CREATE, PROGRESSED, Decision

IDLE = "Idle"
APPLY = "Apply"


class ObjectError(Exception):
    """A failed API call for one object; the message names the object and the operation (Retrying text)."""

    def __init__(self, message: str, cause: Exception | None = None) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass
class Outcome:
    manifest: Obj
    action: str                 # Create / Idle / Apply / Adopt / Progressed / Collision
    decision: Decision
    live: Obj | None
    probe: probes.ProbeResult

    @property
    def complete(self) -> bool:
        return self.action != COLLISION and self.probe.ok

    @property
    def wrote(self) -> bool:
        return self.action in (CREATE, APPLY, ADOPT)


@dataclass(frozen=True)
class Owner:
    """The COS as the rollout needs it."""

    name: str
    uid: str
    revision: int
    owner_name: str
    siblings: dict[str, str]    # uid -> name
    cos: Obj

    @property
    def reference(self) -> Obj:
        return owner_reference(self.cos)


def is_subset(desired: Any, live: Any) -> bool:
    """Whether every field of ``desired`` has the same value in ``live`` (extra live fields are fine).

    Lists must have the same length, element by element (the server defaults fields inside list items,
    e.g. a container's ``imagePullPolicy``; that is not drift).
    """
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return False
        return all(k in live and is_subset(v, live[k]) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return False
        return all(is_subset(d, v) for d, v in zip(desired, live, strict=False))
    if isinstance(desired, bool) or isinstance(live, bool):
        return desired is live
    if isinstance(desired, str) and isinstance(live, str) and desired != live:
        return same_value(desired, live)  # the server stores quantities canonically (1000m -> 1)
    return bool(desired == live)


def drop_nulls(value: Any) -> Any:
    """``value`` without ``null`` map entries: a declared null means "not set", and an API server stores none
    (it drops them or fills in a default), so comparing one with the live object would see drift forever."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


def desired(manifest: Obj, owner: Owner, owner_refs: list[Obj]) -> Obj:
    """The manifest with our identity (labels, revision annotation, owner references), without ``status``."""
    obj: Obj = drop_nulls(manifest)  # a map stays a map
    obj.pop("status", None)
    meta = obj.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), LABEL_MANAGED_BY: MANAGED_BY_VALUE,
                      LABEL_OWNER_NAME: owner.owner_name}
    meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION_REVISION: str(owner.revision)}
    meta["ownerReferences"] = owner_refs
    return obj


def _refs_for(live: Obj | None, owner: Owner, *, adopt: bool) -> list[Obj]:
    """Owner references to declare: existing ones kept (demoted to non-controller when adopting), ours last
    as controller. Keeping the others keeps them releasable one by one when older revisions are archived."""
    ours = owner.reference
    if live is None:
        return [ours]
    refs = []
    for ref in (live.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("uid") == owner.uid:
            continue
        demote = adopt and ref.get("controller") is True
        refs.append({**ref, "controller": False} if demote else ref)
    refs.append(ours)
    return refs


def _api(manifest: Obj) -> tuple[str, str, str, str | None]:
    meta = manifest.get("metadata") or {}
    return (str(manifest.get("apiVersion")), str(manifest.get("kind")), str(meta.get("name") or ""),
            meta.get("namespace") or None)


def read(cluster: Cluster, manifest: Obj) -> Obj | None:
    api_version, kind, name, namespace = _api(manifest)
    try:
        return cluster.get(api_version, kind, name, namespace)
    except UnknownKind as exc:   # the kind itself is not served (yet): not "absent", an error to retry
        raise ObjectError(f"getting Object {collisions.describe_object(manifest)}: {exc}", exc) from None
    except NotFound:
        return None
    except ApiError as exc:
        raise ObjectError(f"getting Object {collisions.describe_object(manifest)}: {exc}", exc) from None


def reconcile_object(cluster: Cluster, manifest: Obj, owner: Owner, protection: str,
                     progression: Sequence[probes.ProgressionProbe],
                     memory: drift.AppliedMemory | None = None) -> Outcome:
    """Decide and act for one object; API failures raise :class:`ObjectError`. ``memory`` holds what our
    previous writes returned (a fresh one per call when not given: every controlled object then costs a dry
    run)."""
    memory = memory if memory is not None else drift.AppliedMemory()
    live = read(cluster, manifest)
    decision = collisions.decide(live, cos_name=owner.name, cos_uid=owner.uid, revision=owner.revision,
                                 siblings=owner.siblings, protection=protection)
    what = collisions.describe_object(manifest)
    if decision.action == CREATE:
        try:
            body = desired(manifest, owner, _refs_for(None, owner, adopt=False))
            live = cluster.create(body, field_manager=FIELD_MANAGER)
            memory.remember(body, live)
            return Outcome(manifest, CREATE, decision, live, probes.probe(live, progression))
        except AlreadyExists:
            # our read was stale (a cache miss): read again and decide on what is really there
            live = read(cluster, manifest)
            if live is None:
                raise ObjectError(f"creating Object {what}: it already exists but cannot be read yet") from None
            decision = collisions.decide(live, cos_name=owner.name, cos_uid=owner.uid, revision=owner.revision,
                                         siblings=owner.siblings, protection=protection)
        except ApiError as exc:
            raise ObjectError(f"creating Object {what}: {exc}", exc) from None
    assert live is not None
    if decision.action == COLLISION:
        return Outcome(manifest, COLLISION, decision, live, probes.ProbeResult(probes.FALSE))
    if decision.action == PROGRESSED:
        return Outcome(manifest, PROGRESSED, decision, live, probes.ProbeResult(probes.TRUE))
    adopt = decision.action == ADOPT
    want = desired(manifest, owner, _refs_for(live, owner, adopt=adopt))
    if not adopt and unchanged(cluster, want, live, memory, what):
        return Outcome(manifest, IDLE, decision, live, probes.probe(live, progression))
    try:
        live = cluster.apply(want, field_manager=FIELD_MANAGER, force=True)
    except ApiError as exc:
        raise ObjectError(f"applying Object {what}: {exc}", exc) from None
    memory.remember(want, live)
    return Outcome(manifest, ADOPT if adopt else APPLY, decision, live, probes.probe(live, progression))


def unchanged(cluster: Cluster, want: Obj, live: Obj, memory: drift.AppliedMemory, what: str) -> bool:
    """Whether applying ``want`` would change nothing in ``live`` (see :mod:`reconciler.drift`).

    When ``live`` is what our last write of this same intent returned: no request, it is unchanged. Otherwise
    (a restart, a write by someone else, an intent that changed only in what it copies from ``live``): one
    dry-run apply decides, and the live object is remembered when the apply would change nothing."""
    if memory.unchanged(want, live):
        return True
    try:
        answer = cluster.apply(want, field_manager=FIELD_MANAGER, force=True, dry_run=True)
    except ApiError as exc:
        raise ObjectError(f"applying Object {what}: {exc}", exc) from None
    fields = drift.our_fields(answer)
    if fields is None:   # no managedFields to judge by: compare the manifest itself
        return is_subset(want, live)
    if drift.our_fields(live) is None or not drift.same_at(fields, answer, live):
        return False     # (owning nothing of it, we could never tell a later change: apply once to own it)
    memory.remember(want, live)
    return True
