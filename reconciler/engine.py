"""One reconcile of one ClusterObjectSet: the entry point the reconciler process calls.

``reconcile(cluster, name)`` reads the COS and does exactly one pass of ``shared/spec/reconciler.md``
sections 2-5: resolve and check the content, walk the phases (create / apply / adopt / collide / probe),
archive older siblings on success, or tear down an Archived or deleted COS in reverse phase order. It never
sleeps or loops waiting: it returns a :class:`Result` saying when to come back. Writes happen only when
something must change, so reconciling a complete, unchanged COS sends no write at all.

Whose rights the writes use: the objects of a COS naming a ServiceAccount (its annotations
``olm.operatorframework.io/service-account-name`` and ``-namespace``, see :mod:`common.contract.serviceaccount`)
are created, applied, adopted, released and deleted through ``EngineConfig.writer``, which writes with that
ServiceAccount's token; its reads, and the writes the reconciler makes on its own account (the COS's status,
finalizer and the archiving of older revisions), stay the process's. A COS naming none is written with the
process's identity unless ``require_service_account`` is set; then it is refused with OLM v1's message and
nothing is rolled out. The same rule holds for teardown: an Archived or deleted revision removes its objects
with its own ServiceAccount, and a revision adopting objects from an older one does so with its own.
"""

from __future__ import annotations

import weakref
from datetime import UTC, datetime, timedelta

from common.bundle import refs
from common.cluster.interface import ApiError, Cluster, Forbidden, NotFound
from common.cluster.tokens import ServiceAccountTokenError
from common.contract import conditions, probes, serviceaccount
from common.contract.api import (
    ANNOTATION_BUNDLE_VERSION,
    API_VERSION,
    FINALIZER_TEARDOWN,
    KIND,
    LABEL_OWNER_NAME,
    LIFECYCLE_ARCHIVED,
)
from common.contract.conditions import Situation
from common.contract.gotext import go_quote
from common.contract.objects import Obj, copy_json, merge_patch_between
from common.contract.serviceaccount import ServiceAccountMissing, ServiceAccountRef
from reconciler import collisions, digest
from reconciler.drift import AppliedMemory
from reconciler.resolve import Resolution, inline_kinds, referenced_secrets, resolve
from reconciler.result import EngineConfig, Event, Memory, Result, Writer
from reconciler.rollout import ObjectError, Outcome, Owner, reconcile_object
from reconciler.teardown import TeardownProgress, teardown

COLLISION_REQUEUE = 10.0
TEARDOWN_REQUEUE = 5.0
ORPHAN_FINALIZER = "orphan"


class IdentityUnavailable(ServiceAccountMissing):
    """The COS names a ServiceAccount but this engine was given no way to write as one."""


class ReconcileError(Exception):
    """A retryable failure of one reconcile; ``str()`` is what Progressing/Retrying shows."""

    def __init__(self, message: str, cause: Exception | None = None) -> None:
        super().__init__(message)
        self.cause = cause


_MEMORY: weakref.WeakKeyDictionary[Cluster, Memory] = weakref.WeakKeyDictionary()


def memory_for(cluster: Cluster, *, settled_by_watch: bool = False) -> Memory:
    """The engine's memory of its work through ``cluster`` (one per cluster object, as long as it lives).

    ``settled_by_watch`` applies when this call makes it (the first for ``cluster``): a caller that watches
    every object it has the engine write, and hands each replaced version to ``applied.settle`` (the reconciler
    process), lets the engine leave the answers of its writes unfingerprinted until then (:mod:`reconciler.drift`)."""
    memory = _MEMORY.get(cluster)
    if memory is None:
        memory = _MEMORY[cluster] = Memory(applied=AppliedMemory(settled_by_watch=settled_by_watch))
    return memory


def reconcile(cluster: Cluster, name: str, *, config: EngineConfig = EngineConfig(),
              now: datetime | None = None, memory: Memory | None = None) -> Result:
    """Reconcile the ClusterObjectSet ``name`` once (reads it with ``cluster.get``; NotFound = nothing to do).

    ``memory`` is what the engine remembers from earlier reconciles (:class:`Memory`); by default the one kept for
    ``cluster``, so reconciling again through the same cluster object is free at steady state and a teardown never
    deletes an object twice. Pass a new one to see what a restarted process would do."""
    now = now or datetime.now(UTC)
    try:
        cos = cluster.get(API_VERSION, KIND, name)
    except NotFound:
        return Result()
    except ApiError as exc:
        return Result(error=ReconcileError(f"getting ClusterObjectSet {name}: {exc}", exc))
    run = _Run(cluster, cos, config, now, memory if memory is not None else memory_for(cluster))
    if cos["metadata"].get("deletionTimestamp"):
        result = run.deleted()
    elif (cos.get("spec") or {}).get("lifecycleState") == LIFECYCLE_ARCHIVED:
        result = run.archived()
    else:
        result = run.active()
    return run.report(result)


class _Run:
    """State of one reconcile of one COS."""

    def __init__(self, cluster: Cluster, cos: Obj, config: EngineConfig, now: datetime, memory: Memory) -> None:
        self.cluster, self.cos, self.config, self.now, self.memory = cluster, cos, config, now, memory
        self.spec: Obj = cos.get("spec") or {}
        meta = cos["metadata"]
        self.name: str = meta["name"]
        self.uid: str = meta.get("uid", "")
        self.generation = int(meta.get("generation") or 0)
        self.old_status: Obj = copy_json(cos.get("status") or {})
        self.conds: list[Obj] = copy_json(self.old_status.get("conditions") or [])
        self.observed: list[Obj] | None = None      # observedPhases to record (first successful resolve)
        self.status: Obj = self.old_status           # the status as last written (or as read)
        self.account: ServiceAccountRef | None = None  # whose rights the objects are written with (None: ours)
        self.result = Result(referenced_secrets=referenced_secrets(self.spec, config.system_namespace),
                             watched_kinds=inline_kinds(self.spec))

    # ---- shared steps ----------------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        try:
            return int(self.spec.get("revision") or 0)
        except (TypeError, ValueError):
            return 0

    @property
    def version(self) -> str:
        annotations = self.cos["metadata"].get("annotations") or {}
        return str(annotations.get(ANNOTATION_BUNDLE_VERSION) or self.revision)

    def event(self, etype: str, reason: str, message: str) -> None:
        self.result.events.append(Event(etype, reason, message))

    def fail(self, message: str, cause: Exception | None) -> Result:
        """Retrying: conditions say why, the queue backs off exponentially."""
        self.set(Situation("retrying", message=message, deadline_minutes=self.deadline_passed()))
        self.result.error = ReconcileError(message, cause)
        return self.write_status()

    def object_failed(self, exc: ObjectError) -> Result:
        """Retrying for a failed API call on an object. No token: the token's own message (it concerns the
        revision, not the object). A 403 names the ServiceAccount: the API server's words do when its
        authorizer refused; when admission did, the identity is added."""
        cause = exc.cause
        if isinstance(cause, ServiceAccountTokenError):
            return self.fail(str(cause), cause)
        message = str(exc)
        if isinstance(cause, Forbidden) and self.account is not None and self.account.username not in message:
            message += f" (writing as ServiceAccount {self.account})"
        return self.fail(message, cause)

    def objects_cluster(self) -> Cluster:
        """The cluster this revision's objects are written through: the process's own, or a view writing with
        the token of the ServiceAccount the COS names (raises :class:`ServiceAccountMissing`)."""
        self.account = serviceaccount.service_account(self.cos, required=self.config.require_service_account)
        if self.account is None:
            return self.cluster
        if self.config.writer is None:
            raise IdentityUnavailable(f"revision {go_quote(self.name)} names ServiceAccount {self.account}, but "
                                      "this reconciler cannot write as a ServiceAccount")
        return self.config.writer(self.cluster, self.account)

    def set(self, situation: Situation, *, failing_object: str = "") -> None:
        """Set the conditions of ``situation``; ``failing_object``: the object a ProbeFailure names. What the
        Available condition says about a failing object is also kept as data (:attr:`Memory.failing`), for as
        long as the condition says it: only a blocked COS leaves Available as it was."""
        conditions.apply(self.conds, situation, generation=self.generation, now=self.now)
        if failing_object:
            self.memory.failing[self.uid] = failing_object
        elif situation.kind != "blocked":
            self.memory.failing.pop(self.uid, None)

    def write_status(self) -> Result:
        """Write status only when it changed; a failed write becomes the result's (retryable) error."""
        status = copy_json(self.old_status)
        status["conditions"] = self.conds
        if self.observed is not None:
            status["observedPhases"] = self.observed
        if status != self.old_status:
            # Only the change is sent, as a merge patch of the status subresource that holds only if the COS is
            # still the one read (its resourceVersion, else Conflict). A PUT would send the whole COS back: for
            # 1,000 objects ~200 KB to encode here and to decode again on the server.
            patch = {"status": merge_patch_between(self.old_status, status)}
            try:
                self.cos = self.cluster.merge_patch(API_VERSION, KIND, self.name, None, patch, subresource="status",
                                                    resource_version=self.cos["metadata"].get("resourceVersion"))
            except ApiError as exc:
                self.result.error = self.result.error or ReconcileError(f"updating status: {exc}", exc)
                return self.result
            self.status = status
            if conditions.is_true(self.conds, conditions.SUCCEEDED) and not conditions.is_true(
                    self.old_status.get("conditions") or [], conditions.SUCCEEDED):
                created = self.created_at()
                if created is not None:  # the transition this reconcile made (Succeeded latches): once
                    self.result.rollout_seconds = max((self.now - created).total_seconds(), 0.0)
        return self.result

    def report(self, result: Result) -> Result:
        """Fill the metrics' fields of ``result`` from the status last written or read (``self.status``)."""
        progressing = conditions.find(self.status.get("conditions") or [], conditions.PROGRESSING)
        result.state = str(progressing["reason"]) if progressing and progressing.get("reason") else None
        result.owner = self.owner_name
        return result

    def patch_finalizers(self, finalizers: list[str]) -> None:
        meta = self.cos["metadata"]
        self.cos = self.cluster.merge_patch(API_VERSION, KIND, self.name, None,
                                            {"metadata": {"finalizers": finalizers or None}},
                                            resource_version=meta.get("resourceVersion"))

    def resolve(self, *, lenient: bool = False) -> Resolution:
        resolution = resolve(self.cluster, self.spec, self.config.system_namespace, lenient=lenient)
        self.result.watched_kinds = resolution.kinds()
        return resolution

    def deadline_passed(self) -> int:
        """Minutes of the progress deadline when it has passed and still applies, else 0."""
        minutes = self.deadline_minutes()
        if not minutes:
            return 0
        at = self.deadline_at(minutes)
        return minutes if at is not None and self.now >= at else 0

    def deadline_minutes(self) -> int:
        try:
            minutes = int(self.spec.get("progressDeadlineMinutes") or 0)
        except (TypeError, ValueError):
            return 0
        if minutes <= 0 or conditions.is_true(self.conds, conditions.SUCCEEDED):
            return 0
        if self.spec.get("lifecycleState") == LIFECYCLE_ARCHIVED or self.cos["metadata"].get("deletionTimestamp"):
            return 0  # the deadline is about rolling out; an Archived or deleted revision no longer does
        return minutes

    def deadline_at(self, minutes: int) -> datetime | None:
        start = self.created_at()
        return None if start is None else start + timedelta(minutes=minutes)

    def created_at(self) -> datetime | None:
        created = self.cos["metadata"].get("creationTimestamp")
        if not created:
            return None
        try:
            return datetime.strptime(str(created), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return None

    # ---- Active ----------------------------------------------------------------------------------------------

    def active(self) -> Result:
        # 1. resolve
        try:
            resolution = self.resolve()
        except refs.RefError as exc:
            return self.fail(str(exc), exc)
        # 2. immutable Secrets
        mutable = resolution.mutable_secrets()
        if mutable:
            return self.blocked("the following secrets are not immutable (referenced secrets must have "
                                "immutable set to true): " + ", ".join(mutable))
        # 3. phase digests
        current = digest.observed_phases([(p.name, [o.manifest for o in p.objects]) for p in resolution.phases])
        recorded = self.old_status.get("observedPhases")
        if recorded:
            changed = digest.compare(recorded, current)
            if changed:
                return self.blocked(changed)
        else:
            self.observed = current
        try:
            progression = probes.parse_probes(self.spec.get("progressionProbes"))
        except probes.ProbeSpecError as exc:
            return self.fail(str(exc), exc)
        # whose rights the objects are written with (OLM v1 refuses a revision without one here)
        try:
            objects = self.objects_cluster()
        except ServiceAccountMissing as exc:
            return self.fail(str(exc), exc)
        # 4. finalizer, siblings
        try:
            finalizers = list(self.cos["metadata"].get("finalizers") or [])
            if FINALIZER_TEARDOWN not in finalizers:
                self.patch_finalizers([*finalizers, FINALIZER_TEARDOWN])
            siblings = self.siblings()
        except ApiError as exc:
            return self.fail(f"{exc}", exc)
        owner = Owner(self.name, self.uid, self.revision, self.owner_name,
                      {uid: s["metadata"]["name"] for uid, s in siblings.items()}, self.cos)
        # 5. phase walk
        previous_failure = self.memory.failing.get(self.uid, "")
        was_succeeded = conditions.is_true(self.conds, conditions.SUCCEEDED)
        for index, phase in enumerate(resolution.phases):
            try:
                outcomes = self.config.fanout.map(
                    lambda o: reconcile_object(objects, o.manifest, owner,
                                               collisions.effective_protection(self.spec, o.phase, o.entry),
                                               progression, self.memory.applied),
                    phase.objects)
            except ObjectError as exc:
                return self.object_failed(exc)
            colliding = [o for o in outcomes if o.action == collisions.COLLISION]
            if colliding:
                return self.collided(index, colliding)
            incomplete = [o for o in outcomes if not o.complete]
            if incomplete:
                return self.rolling_out(incomplete[0])
            if not was_succeeded and (any(o.wrote for o in outcomes) or any(
                    collisions.describe_object(o.manifest) == previous_failure for o in outcomes)):
                self.event("Normal", "PhaseComplete", f'Phase {index} "{phase.name}" is complete')
        # 6. success: archive older siblings, then report
        for _uid, sibling in sorted(siblings.items(), key=lambda kv: kv[1]["metadata"]["name"]):
            if _revision(sibling) < self.revision:
                try:
                    self.cluster.merge_patch(API_VERSION, KIND, sibling["metadata"]["name"], None,
                                             {"spec": {"lifecycleState": LIFECYCLE_ARCHIVED}})
                except NotFound:
                    continue
                except ApiError as exc:
                    return self.fail(f"archiving ClusterObjectSet {sibling['metadata']['name']}: {exc}", exc)
                self.result.changed.add(sibling["metadata"]["name"])
                self.event("Normal", conditions.ARCHIVED, f"Archived revision {_revision(sibling)} "
                           f"({sibling['metadata']['name']}): revision {self.revision} has rolled out")
        if not was_succeeded:
            self.event("Normal", conditions.REASON_SUCCEEDED, f"Revision {self.version} has rolled out.")
        self.set(Situation("complete", version=self.version))
        return self.write_status()

    @property
    def owner_name(self) -> str:
        return str((self.cos["metadata"].get("labels") or {}).get(LABEL_OWNER_NAME) or "")

    def siblings(self) -> dict[str, Obj]:
        """Other Active, not-deleting COSs with the same non-empty owner-name label, by uid."""
        if not self.owner_name:
            return {}
        found = self.cluster.list(API_VERSION, KIND, label_selector=f"{LABEL_OWNER_NAME}={self.owner_name}")
        return {
            s["metadata"]["uid"]: s for s in found
            if s["metadata"].get("uid") != self.uid
            and (s["metadata"].get("labels") or {}).get(LABEL_OWNER_NAME) == self.owner_name
            and (s.get("spec") or {}).get("lifecycleState") != LIFECYCLE_ARCHIVED
            and not s["metadata"].get("deletionTimestamp")
        }

    def blocked(self, message: str) -> Result:
        old = conditions.find(self.conds, conditions.PROGRESSING)
        if not old or old.get("reason") != conditions.BLOCKED or old.get("message") != message:
            self.event("Warning", conditions.BLOCKED, message)
        self.set(Situation("blocked", message=message))
        return self.write_status()

    def collided(self, index: int, colliding: list[Outcome]) -> Result:
        message = collisions.collision_message(
            index, [collisions.collision_report(o.manifest, o.decision) for o in colliding])
        old = conditions.find(self.conds, conditions.PROGRESSING)
        if not old or not str(old.get("message") or "").endswith(message):
            self.event("Warning", "Collision", message)
        self.set(Situation("retrying", message=message, deadline_minutes=self.deadline_passed()))
        self.result.requeue_after = COLLISION_REQUEUE
        return self.write_status()

    def rolling_out(self, first: Outcome) -> Result:
        failure = what = ""
        if first.probe.messages:
            what = collisions.describe_object(first.manifest)
            failure = f"Object {what}: " + " and ".join(first.probe.messages)
        self.set(Situation("rolling_out", version=self.version, probe_failure=failure,
                           deadline_minutes=self.deadline_passed()), failing_object=what)
        minutes = self.deadline_minutes()
        at = self.deadline_at(minutes) if minutes else None
        if at is not None and self.now < at:
            self.result.requeue_after = max((at - self.now).total_seconds(), 0.001)
        return self.write_status()

    # ---- Archived and deleted ----------------------------------------------------------------------------------

    def archived(self) -> Result:
        finalizers = list(self.cos["metadata"].get("finalizers") or [])
        if FINALIZER_TEARDOWN not in finalizers:
            # Torn down already, or never rolled out: the finalizer goes on before the first object is written,
            # so without it this revision owns nothing. An Archived COS is never rolled out again.
            self.set(Situation("archived"))
            return self.write_status()
        unfinished = self.torn_down()
        if unfinished is not None:
            return unfinished
        self.set(Situation("archived"))
        self.write_status()
        if self.result.error is not None:
            return self.result
        try:
            self.patch_finalizers([f for f in finalizers if f != FINALIZER_TEARDOWN])
        except ApiError as exc:
            self.result.error = ReconcileError(f"removing finalizer: {exc}", exc)
            return self.result
        self.event("Normal", "TeardownComplete", f"Revision {self.revision} is archived: its objects that no "
                   "newer revision owns were removed")
        return self.result

    def tear_down(self) -> TeardownProgress:
        """Resolve leniently and remove this revision's objects in reverse phase order (Archived or deleted).

        A transient error reading a Secret raises its ``RefError`` (retry: skipping would lose the ordered
        teardown of what it holds). A Secret or key that is gone cannot say which objects it held: the rest
        is torn down, and a TeardownSkipped warning says that the garbage collector removes what this
        revision still owns once it is gone. ``ObjectError`` from the teardown itself propagates, and so does
        ``ServiceAccountMissing``: a revision is torn down with its own identity, as it was rolled out.
        """
        objects = self.objects_cluster()
        resolution = self.resolve(lenient=True)
        transient = [e for e in resolution.errors if isinstance(e, refs.SecretUnreadable) and not e.missing]
        if transient:
            raise transient[0]
        for exc in resolution.errors:
            self.event("Warning", "TeardownSkipped", f"{exc}; the garbage collector removes what this "
                       "revision still owns once it is gone")
        return teardown(objects, [[o.manifest for o in p.objects] for p in resolution.phases],
                        cos_name=self.name, cos_uid=self.uid, sent=self.memory.sent)

    def waiting(self, progress: TeardownProgress) -> None:
        """Conditions while the teardown waits (archived or deleted), and come back in 5 s (the watch event of
        what it waits for usually comes first).

        When the server shows an object of the phase being deleted and held (finalizers, a grace period),
        Available names the first one. When the teardown only waits for the server to confirm deletions it
        accepted (milliseconds: the watch's DELETED event), the conditions are left as they are, so a teardown
        that never has to wait writes no more status than one that completes at once; a message that still
        names an object that is gone meanwhile falls back to the row's own text."""
        message = progress.waiting_message
        progressing = conditions.find(self.conds, conditions.PROGRESSING) or {}
        if message or (progressing.get("reason") == conditions.RETRYING
                       and progressing.get("message") == conditions.MSG_TEARING_DOWN):
            self.set(Situation("tearing_down", message=message))
        self.result.requeue_after = TEARDOWN_REQUEUE

    def torn_down(self) -> Result | None:
        """One teardown step of an Archived or deleted COS: ``None`` once every object it owns is gone, else the
        result to return (a failure, or the wait, both written to status). Failures are said on the COS: nobody but
        the reconciler's log could tell otherwise why an archived revision keeps its objects or a deleted one hangs
        in Terminating (a 403 for the ServiceAccount it is torn down with, a Secret that cannot be read)."""
        try:
            progress = self.tear_down()
        except (ServiceAccountMissing, refs.RefError) as exc:
            return self.fail(str(exc), exc)
        except ObjectError as exc:
            return self.object_failed(exc)
        if not progress.done:
            self.waiting(progress)
            return self.write_status()
        return None

    def deleted(self) -> Result:
        self.memory.failing.pop(self.uid, None)   # it will not roll out again
        finalizers = list(self.cos["metadata"].get("finalizers") or [])
        if FINALIZER_TEARDOWN not in finalizers:
            return self.result
        if ORPHAN_FINALIZER not in finalizers:
            unfinished = self.torn_down()
            if unfinished is not None:
                return unfinished
        try:
            self.patch_finalizers([f for f in finalizers if f != FINALIZER_TEARDOWN])
        except NotFound:
            return self.result
        except ApiError as exc:
            self.result.error = ReconcileError(f"removing finalizer: {exc}", exc)
            return self.result
        self.event("Normal", "TeardownComplete", "objects removed in reverse phase order" if ORPHAN_FINALIZER
                   not in finalizers else "objects orphaned (propagationPolicy Orphan)")
        return self.result


def _revision(cos: Obj) -> int:
    try:
        return int((cos.get("spec") or {}).get("revision") or 0)
    except (TypeError, ValueError):
        return 0


__all__ = ["EngineConfig", "Event", "IdentityUnavailable", "Memory", "ReconcileError", "Result", "Writer",
           "memory_for", "reconcile"]
