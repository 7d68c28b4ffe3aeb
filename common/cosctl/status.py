"""``cosctl status``: where a rollout stands, phase by phase and object by object; ``--watch`` follows it.

The COS conditions are the reconciler's verdict and are shown as they are. The per-object detail (is it there,
is it ours, is it ready) is read live from the cluster and judged with the reconciler's own readiness probes
(:mod:`common.contract.probes`), so what ``status`` calls "not ready" is what holds the rollout back.

``--watch`` follows the COS on the watch API (one request open, no polling) and shows progress as events
arrive: a redrawn line on a terminal, one time-stamped line per change elsewhere. It ends with the rollout and
says how through the exit code: 0 succeeded, 3 blocked, 4 progress deadline exceeded, 5 archived, 6
``--timeout`` reached; 1 when the COS cannot be read or was deleted.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from common.bundle import refs
from common.bundle.packing import object_label
from common.bundle.publish import owner_revisions, revision_of
from common.cluster.backoff import Backoff
from common.cluster.interface import ApiError, Cluster, NotFound, UnknownKind
from common.cluster.watch import GaveUp, Watchable, WatchEvent, follow
from common.contract import api, conditions
from common.contract.conditions import condition, outcome
from common.contract.objects import GVK, Obj
from common.cosctl._producer import EXIT_FAILED, EXIT_OK, add_cluster_arguments, add_namespace_argument, run

EXIT_SUCCEEDED = 0
EXIT_BLOCKED = 3
EXIT_DEADLINE = 4
EXIT_ARCHIVED = 5
EXIT_TIMEOUT = 6
WATCH_EXAMPLE = """\
example (not a terminal: one line per change; on a terminal the progress line is redrawn in place):
  $ cosctl status shop-4 --watch --timeout 600
  21:35:28 shop-4: 3/5 phases complete, 5/7 objects ready; phase configuration waits for ConfigMap \
shop/migration (missing key: "data.done"); Progressing True RollingOut
  21:35:31 shop-4: 5/5 phases complete, 7/7 objects ready; Progressing True Succeeded
  shop-4: rollout succeeded: Revision 3.0.0 has rolled out.
  $ echo $?
  0"""


@dataclass
class ObjectState:
    object: str  # Kind.group namespace/name, or the ref when it cannot be resolved
    state: str  # applied | handed over to <cos> | absent | not controlled by this revision | unresolved | ...
    ready: bool = False
    messages: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.ready and (self.state == "applied" or self.state.startswith("handed over"))


@dataclass
class PhaseState:
    name: str
    objects: list[ObjectState]

    @property
    def ready(self) -> int:
        return sum(o.complete for o in self.objects)

    @property
    def complete(self) -> bool:
        return self.ready == len(self.objects)


@dataclass
class RevisionState:
    name: str
    revision: int
    lifecycle: str
    owner: str
    conditions: list[Obj]
    phases: list[PhaseState]
    notes: list[str] = field(default_factory=list)
    package: str = ""  # a revision made from a registry+v1 bundle: OLM v1's package-name annotation
    version: str = ""  # the bundle-version annotation

    def to_json(self) -> Obj:
        out = asdict(self)
        for phase, raw in zip(self.phases, out["phases"], strict=False):
            raw["complete"] = phase.complete
            for obj, raw_obj in zip(phase.objects, raw["objects"], strict=False):
                raw_obj["complete"] = obj.complete
        return out


# ---------------------------------------------------------------------------------------------- inspection

def _controller(live: Obj) -> Obj | None:
    refs: list[Obj] = (live.get("metadata") or {}).get("ownerReferences") or []
    for ref in refs:
        if ref.get("controller"):
            return ref
    return None


def _probes(cos: Obj) -> tuple[Callable[[Obj], Any], str | None]:
    """The reconciler's probe function for this COS (built-in plus its progressionProbes)."""
    from common.contract import probes  # the reconciler's verdict, not a re-implementation

    try:
        parsed = probes.parse_probes((cos.get("spec") or {}).get("progressionProbes"))
    except probes.ProbeSpecError as exc:
        return probes.probe, str(exc)
    return (lambda obj: probes.probe(obj, parsed)), None


def inspect(cluster: Cluster, cos: Obj, *, system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE) -> RevisionState:
    """Resolve every object of ``cos`` and read it live: applied by this revision? ready?"""
    meta = cos.get("metadata") or {}
    uid = meta.get("uid")
    run_probe, probe_error = _probes(cos)
    secrets: dict[tuple[str, str], Obj | refs.RefError] = {}
    newer_names = _newer_revisions(cluster, cos)
    phases: list[PhaseState] = []
    for phase in (cos.get("spec") or {}).get("phases") or []:
        states: list[ObjectState] = []
        for entry in phase.get("objects") or []:
            desired, problem = _resolve(cluster, entry, secrets, system_namespace)
            if desired is None:
                states.append(ObjectState(problem[0], "unresolved", messages=[problem[1]]))
                continue
            label = object_label(desired)
            gvk = GVK.of(desired)
            dmeta = desired.get("metadata") or {}
            try:
                live = cluster.get(gvk.api_version, gvk.kind, dmeta.get("name", ""), dmeta.get("namespace"))
            except UnknownKind:
                states.append(ObjectState(label, "absent", messages=["kind not served by the cluster (yet)"]))
                continue
            except NotFound:
                states.append(ObjectState(label, "absent"))
                continue
            owner = _controller(live)
            if owner and owner.get("uid") == uid:
                state = "applied"
            elif owner and owner.get("kind") == api.KIND and owner.get("name") in newer_names:
                state = f"handed over to {owner.get('name')}"
            elif owner:
                state = f"controlled by {owner.get('kind')} {owner.get('name')}"
            else:
                state = "not controlled by this revision"
            result = run_probe(live)
            states.append(ObjectState(label, state, result.ok, [] if result.ok else list(result.messages)))
        phases.append(PhaseState(str(phase.get("name")), states))
    labels = meta.get("labels") or {}
    package, version = bundle_of(cos)
    return RevisionState(
        name=str(meta.get("name")), revision=revision_of(cos),
        lifecycle=str((cos.get("spec") or {}).get("lifecycleState") or ""),
        owner=str(labels.get(api.LABEL_OWNER_NAME) or ""),
        conditions=[condition(cos, t) for t in conditions.TYPES if condition(cos, t)],
        phases=phases,
        notes=[f"progressionProbes not evaluated (built-in probes only): {probe_error}"] if probe_error else [],
        package=package, version=version)


def bundle_of(cos: Obj) -> tuple[str, str]:
    """The package and bundle version a revision says it carries (``""`` where it does not say)."""
    annotations = (cos.get("metadata") or {}).get("annotations") or {}
    return (str(annotations.get(api.ANNOTATION_PACKAGE_NAME) or ""),
            str(annotations.get(api.ANNOTATION_BUNDLE_VERSION) or ""))


def bundle_text(package: str, version: str) -> str:
    """``package argo 0.6.0``, ``version 0.6.0`` or ``""``: how a revision's content is named in one phrase."""
    if package:
        return f"package {package} {version}".rstrip()
    return f"version {version}" if version else ""


def _newer_revisions(cluster: Cluster, cos: Obj) -> set[str]:
    owner = ((cos.get("metadata") or {}).get("labels") or {}).get(api.LABEL_OWNER_NAME)
    if not owner:
        return set()
    return {c["metadata"]["name"] for c in owner_revisions(cluster, owner) if revision_of(c) > revision_of(cos)}


def _resolve(cluster: Cluster, entry: Obj, secrets: dict[tuple[str, str], Any],
             system_namespace: str) -> tuple[Obj | None, tuple[str, str]]:
    """The desired manifest of one entry, reading each Secret once; or (None, (what, why))."""
    if isinstance(entry.get("object"), dict):
        return entry["object"], ("", "")
    where = refs.SecretKeyRef.of(entry.get("ref") or {}, system_namespace)
    what = f"ref {where}[{where.key}]"
    try:
        if where.secret not in secrets:
            try:
                secrets[where.secret] = refs.read_secret(cluster, where)
            except refs.RefError as exc:
                secrets[where.secret] = exc
        secret = secrets[where.secret]
        if isinstance(secret, refs.RefError):
            raise secret
        return refs.decode_value(refs.secret_value(secret, where), where), ("", "")
    except refs.RefError as exc:
        return None, (what, str(exc))


# ------------------------------------------------------------------------------------------------ display

def render(state: RevisionState) -> str:
    what = bundle_text(state.package, state.version)
    lines = [f"ClusterObjectSet {state.name}: revision {state.revision}, {state.lifecycle}"
             + (f", owner {state.owner}" if state.owner else "") + (f", {what}" if what else "")]
    for c in state.conditions:
        lines.append(f"  {c.get('type', ''):<12} {c.get('status', ''):<8} {c.get('reason', ''):<25} "
                     f"{c.get('message', '')}".rstrip())
    lines.extend(f"  note: {n}" for n in state.notes)
    total = len(state.phases)
    for i, phase in enumerate(state.phases, 1):
        verdict = "complete" if phase.complete else "incomplete"
        lines.append(f"phase {i}/{total} {phase.name}: {verdict} ({phase.ready}/{len(phase.objects)} ready)")
        for o in phase.objects:
            ready = "ready" if o.ready else "not ready"
            detail = f"{o.state}, {ready}" if o.state != "unresolved" else o.state
            if o.messages:
                detail += ": " + " and ".join(o.messages)
            lines.append(f"  {o.object}: {detail}")
    return "\n".join(lines)


def progress_line(cos: Obj, state: RevisionState) -> str:
    """One line saying how far the rollout got and what it waits for. Phases count as complete in order, as
    the reconciler walks them: a complete phase after an incomplete one is not progress yet."""
    done = next((i for i, p in enumerate(state.phases) if not p.complete), len(state.phases))
    ready = sum(p.ready for p in state.phases)
    total = sum(len(p.objects) for p in state.phases)
    line = f"{done}/{len(state.phases)} phases complete, {ready}/{total} objects ready"
    waiting = next((p for p in state.phases if not p.complete), None)
    if waiting is not None:
        blocker = next(o for o in waiting.objects if not o.complete)
        why = f" ({' and '.join(blocker.messages)})" if blocker.messages else f" ({blocker.state})"
        line += f"; phase {waiting.name} waits for {blocker.object}{why}"
    progressing = condition(cos, conditions.PROGRESSING)
    if progressing:
        line += f"; Progressing {progressing.get('status')} {progressing.get('reason')}"
    return line


# ---------------------------------------------------------------------------------------------- commands

def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status", help="show a rollout phase by phase; --watch follows it until it ends",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=WATCH_EXAMPLE,
        description="Show a ClusterObjectSet's conditions and, for each phase, whether each object is applied "
                    "and ready. --watch follows the rollout; exit codes: 0 succeeded, 3 blocked, 4 progress "
                    "deadline exceeded, 5 archived, 6 --timeout reached, 1 error.")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("name", nargs="?", help="ClusterObjectSet name")
    target.add_argument("--owner", help="every revision of this owner")
    parser.add_argument("--watch", action="store_true", help="follow the rollout until it ends")
    parser.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                        help="seconds between reads with --watch where the cluster has no watch API (default 2)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="give up watching after this long (exit 6)")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="output format")
    add_namespace_argument(parser)
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main, sleep=time.sleep, clock=time.monotonic, tty=None)


def _main(args: argparse.Namespace) -> int:
    return run("status", lambda: _status(args))


def _status(args: argparse.Namespace) -> int:
    cluster = args.connect(args)
    if args.owner:
        revisions = owner_revisions(cluster, args.owner)
        if args.watch:
            active = [c for c in revisions if (c.get("spec") or {}).get("lifecycleState") == api.LIFECYCLE_ACTIVE]
            if not active:
                print(f"cosctl status: owner {args.owner} has no Active revision to watch", file=sys.stderr)
                return EXIT_FAILED
            return _watch(cluster, active[-1]["metadata"]["name"], args)
        return _show_owner(cluster, args.owner, revisions, args)
    if args.watch:
        return _watch(cluster, args.name, args)
    try:
        cos = cluster.get(api.API_VERSION, api.KIND, args.name)
    except NotFound:
        print(f"cosctl status: ClusterObjectSet {args.name} not found", file=sys.stderr)
        return EXIT_FAILED
    state = inspect(cluster, cos, system_namespace=args.system_namespace)
    print(json.dumps(state.to_json(), indent=2) if args.output == "json" else render(state))
    return EXIT_OK


def _show_owner(cluster: Cluster, owner: str, revisions: list[Obj], args: argparse.Namespace) -> int:
    if not revisions:
        print(f"cosctl status: owner {owner} has no revisions", file=sys.stderr)
        return EXIT_FAILED
    active = [c for c in revisions if (c.get("spec") or {}).get("lifecycleState") == api.LIFECYCLE_ACTIVE]
    states = [inspect(cluster, c, system_namespace=args.system_namespace) for c in active]
    if args.output == "json":
        print(json.dumps({"owner": owner,
                          "revisions": [{"name": c["metadata"]["name"], "revision": revision_of(c),
                                         "lifecycleState": (c.get("spec") or {}).get("lifecycleState"),
                                         "outcome": outcome(c), "package": bundle_of(c)[0],
                                         "bundleVersion": bundle_of(c)[1]} for c in revisions],
                          "active": [s.to_json() for s in states]}, indent=2))
        return EXIT_OK
    print(f"owner {owner}: {len(revisions)} revision(s)")
    for c in revisions:
        progressing = condition(c, conditions.PROGRESSING)
        lifecycle = (c.get("spec") or {}).get("lifecycleState", "")
        what = bundle_text(*bundle_of(c))
        print(f"  {revision_of(c):>4}  {c['metadata']['name']:<30} {lifecycle:<9} {progressing.get('reason', '-')}"
              + (f"  {what}" if what else ""))
    for state in states:
        print()
        print(render(state))
    return EXIT_OK


_ENDINGS = {
    "succeeded": (EXIT_SUCCEEDED, "rollout succeeded"),
    "blocked": (EXIT_BLOCKED, "rollout blocked"),
    "deadline": (EXIT_DEADLINE, "progress deadline exceeded"),
    "archived": (EXIT_ARCHIVED, "revision archived"),
}


class Progress:
    """The progress display of ``--watch``: on a terminal one line redrawn in place; elsewhere (CI logs,
    pipes) one time-stamped line per change, so a log reads as a rollout history."""

    def __init__(self, name: str, stream: TextIO, tty: bool) -> None:
        self.name, self.stream, self.tty = name, stream, tty
        self.last: str | None = None

    def show(self, line: str) -> None:
        if line == self.last:
            return
        self.last = line
        if self.tty:
            width = shutil.get_terminal_size((120, 24)).columns
            text = f"{self.name}: {line}"
            if len(text) >= width:
                text = text[:max(width - 2, 1)] + "…"
            self.stream.write("\r\x1b[K" + text)
        else:
            stamp = datetime.now(UTC).strftime("%H:%M:%S")
            self.stream.write(f"{stamp} {self.name}: {line}\n")
        self.stream.flush()

    def end(self, line: str, *, error: bool = False) -> None:
        """The closing line (outcome or timeout; an error goes to stderr), on a line of its own."""
        if self.tty and self.last is not None:
            self.stream.write("\n")
        self.stream.flush()
        print(line, file=sys.stderr if error else self.stream, flush=True)


def _progress(args: argparse.Namespace, name: str) -> Progress:
    tty = args.tty if args.tty is not None else sys.stdout.isatty()
    return Progress(name, sys.stdout, tty)


def _report(cluster: Cluster, cos: Obj, progress: Progress, args: argparse.Namespace) -> int | None:
    """Show the progress of ``cos``; the exit code when its rollout has ended, else None."""
    state = inspect(cluster, cos, system_namespace=args.system_namespace)
    progress.show(progress_line(cos, state))
    ended = outcome(cos)
    if ended is None:
        return None
    code, words = _ENDINGS[ended]
    message = condition(cos, conditions.PROGRESSING).get("message", "")
    progress.end(f"{progress.name}: {words}" + (f": {message}" if message and ended != "archived" else ""))
    return code


def _watch(cluster: Cluster, name: str, args: argparse.Namespace) -> int:
    """Follow the rollout until it ends (or ``--timeout``): on the watch API when the cluster offers it,
    re-reading the objects each time the reconciler writes the COS (it does on every step of a rollout)."""
    if not isinstance(cluster, Watchable):
        return _poll(cluster, name, args)
    progress = _progress(args, name)
    started = args.clock()
    try:
        cos = cluster.get(api.API_VERSION, api.KIND, name)
    except NotFound:
        print(f"cosctl status: ClusterObjectSet {name} not found", file=sys.stderr)
        return EXIT_FAILED
    owner = ((cos.get("metadata") or {}).get("labels") or {}).get(api.LABEL_OWNER_NAME)
    version = str(cos["metadata"].get("resourceVersion") or "")
    code = _report(cluster, cos, progress, args)
    deleted = False

    def seconds() -> int | None:
        """What the next stream asks for: until the server's timeout, or --timeout's rest (None: reached)."""
        if args.timeout is None:
            return WATCH_SECONDS
        remaining = args.timeout - (args.clock() - started)
        return None if remaining <= 0 else max(1, min(WATCH_SECONDS, math.ceil(remaining)))

    def on_event(event: WatchEvent) -> bool:
        nonlocal version, code, deleted
        version = str((event.obj.get("metadata") or {}).get("resourceVersion") or version)
        if event.type == "BOOKMARK" or (event.obj.get("metadata") or {}).get("name") != name:
            return False
        if event.type == "DELETED":
            deleted = True
            return True
        code = _report(cluster, event.obj, progress, args)
        return code is not None or (args.timeout is not None and args.clock() - started >= args.timeout)

    def reread() -> bool:
        """After a 410 (too old to resume from): read the COS again, and watch from there."""
        nonlocal version, code, deleted
        try:
            fresh = cluster.get(api.API_VERSION, api.KIND, name)
        except NotFound:
            deleted = True
            return True
        version = str(fresh["metadata"].get("resourceVersion") or "")
        code = _report(cluster, fresh, progress, args)
        return code is not None

    if code is None:
        try:
            follow(cluster, api.API_VERSION, api.KIND,
                   label_selector=f"{api.LABEL_OWNER_NAME}={owner}" if owner else None,  # fewer events than all
                   position=lambda: version, relist=reread, listed=True, on_event=on_event,
                   timeout_seconds=seconds, backoff=WATCH_BACKOFF, wait=args.sleep, retryable=_retryable,
                   give_up_after=WATCH_ATTEMPTS)
        except GaveUp as exc:
            progress.end(f"cosctl status: cannot watch ClusterObjectSet {name}: gave up after {exc.attempts} "
                         f"attempts: {_problem(exc.cause)}", error=True)
            return EXIT_FAILED
    if deleted:
        progress.end(f"cosctl status: ClusterObjectSet {name} was deleted", error=True)
        return EXIT_FAILED
    if code is None:
        progress.end(f"{name}: still rolling out after {args.timeout:g} s (timeout)")
        return EXIT_TIMEOUT
    return code


def _retryable(exc: ApiError) -> bool:
    """429 and 5xx answers to a watch request pass (as for the reconciler's watches); others are final."""
    code = _http_code(exc)
    return code == 429 or code >= 500


def _http_code(exc: ApiError) -> int:
    """The status code the server answered (the Status's ``code``; the class's when it sent none)."""
    code = exc.status.get("code")
    return code if isinstance(code, int) and not isinstance(code, bool) else exc.code


def _problem(exc: Exception) -> str:
    """An error in one line: the API server's answer, or the connection problem's type and text."""
    if isinstance(exc, ApiError):
        return f"{_http_code(exc)} {exc.reason}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


WATCH_SECONDS = 300
WATCH_ATTEMPTS = 8  # consecutive failed (re)connections before giving up: about 20 s of backoff
WATCH_BACKOFF = Backoff(0.2, 5.0)


def _poll(cluster: Cluster, name: str, args: argparse.Namespace) -> int:
    """Follow the rollout by reading it every ``--interval`` seconds, for clusters without a watch API."""
    progress = _progress(args, name)
    started = args.clock()
    while True:
        try:
            cos = cluster.get(api.API_VERSION, api.KIND, name)
        except NotFound:
            print(f"cosctl status: ClusterObjectSet {name} not found", file=sys.stderr)
            return EXIT_FAILED
        code = _report(cluster, cos, progress, args)
        if code is not None:
            return code
        if args.timeout is not None and args.clock() - started >= args.timeout:
            progress.end(f"{name}: still rolling out after {args.timeout:g} s (timeout)")
            return EXIT_TIMEOUT
        args.sleep(args.interval)
