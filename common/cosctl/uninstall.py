"""``cosctl uninstall``: delete an owner's revisions, so that the reconciler tears down what they installed, after the
checks a bare ``kubectl delete`` cannot make, and follow the teardown until it is done.

Deleting the revisions deletes the CustomResourceDefinitions they control, and every custom resource of them, after
the operator is gone (:mod:`common.bundle.uninstall` says why that can hang for ever). So when custom resources
exist the command refuses, naming them, until the admin chooses: ``--delete-custom-resources`` deletes them first and
waits until their operator has finished them, or ``--keep-crds`` publishes one last revision holding only the CRDs,
to which the reconciler hands over as for any upgrade, removing the operator and keeping the CRDs and their custom
resources (a later publish of the package takes them over again). Revisions applied with a ServiceAccount's rights
are checked first for the teardown's deletes (``--preflight-permissions``).

Exit codes: 0 uninstalled (or, with ``--no-wait`` or ``--dry-run``, the deletes made or planned), 1 refused or
failed, 6 ``--timeout`` reached (the reconciler goes on).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable

from common.bundle.crdsafety import ENFORCEMENT_STRICT, ENFORCEMENTS
from common.bundle.phasing import Phase
from common.bundle.publish import HeldContent, owner_revisions, publish
from common.bundle.uninstall import (
    HeldCRD,
    Plan,
    UninstallError,
    conversion_service,
    delete_custom_resources,
    delete_revisions,
    kept_phases,
    orphaning,
    plan_uninstall,
    remaining,
    teardown_findings,
    tearing_down,
)
from common.cluster.interface import Cluster, NotFound
from common.contract import api, conditions
from common.contract.conditions import condition, outcome
from common.contract.objects import Obj
from common.contract.serviceaccount import declared
from common.cosctl._producer import (
    EXIT_OK,
    Progress,
    add_cluster_arguments,
    add_namespace_argument,
    run,
)
from common.cosctl.status import EXIT_TIMEOUT, bundle_of, bundle_text, inspect, progress_line
from common.cosctl.status import Progress as Display

EXAMPLE = """\
examples:
  $ cosctl uninstall --owner koku-metrics-operator
  cosctl uninstall: owner koku-metrics-operator: custom resources of the CustomResourceDefinitions its revisions \
control exist:
    kokumetricsconfigs.koku-metrics-cfg.openshift.io: KokuMetricsConfig koku-metrics/koku-config
  ...
  $ cosctl uninstall --owner koku-metrics-operator --delete-custom-resources --timeout 600
  $ cosctl uninstall --owner koku-metrics-operator --keep-crds"""

# Why the default refuses, and what to choose instead (the refusal's words).
CHOICES = ("--delete-custom-resources deletes them first, while the operator still runs to finish them, then "
           "uninstalls; --keep-crds uninstalls all but the CustomResourceDefinitions, which keep their custom "
           "resources (a later publish of the package takes them over)")
CUSTOM_RESOURCE_ROUNDS = 3   # deletes of what is found, then found again (an operator making them anew)


class _TimedOut(Exception):
    """``--timeout`` was reached while waiting (exit 6)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "uninstall", help="delete an owner's revisions and follow the teardown; custom resources are never lost "
                          "unasked",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLE,
        description="Delete every revision of an owner: the reconciler tears each down in reverse phase order "
                    "(webhooks and Deployments before the CustomResourceDefinitions and namespaces), and the command "
                    "follows it until it is done. Refused, before anything is deleted, when custom resources of the "
                    "CustomResourceDefinitions the revisions control exist (the CRDs' deletion would delete them, "
                    "after their operator is gone), unless --delete-custom-resources or --keep-crds says what to do "
                    "with them, and when a revision's ServiceAccount may not make its teardown's deletes "
                    "(--preflight-permissions). Exit codes: 0 done, 1 refused or failed, 6 --timeout reached.")
    parser.add_argument("--owner", required=True, help="the owner whose revisions to delete (their owner-name label)")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--delete-custom-resources", action="store_true",
                        help="delete the custom resources of the owner's CustomResourceDefinitions first and wait "
                             "until they are gone (their operator still runs and finishes them), then uninstall")
    choice.add_argument("--keep-crds", action="store_true",
                        help="keep the CustomResourceDefinitions and their custom resources: publish a last revision "
                             "holding only them (and the namespaces the revisions created that hold custom resources "
                             "or the ServiceAccount they are applied with); the reconciler hands over to it and "
                             "removes everything else")
    parser.add_argument("--preflight-permissions", choices=ENFORCEMENTS, default=ENFORCEMENT_STRICT,
                        help="before deleting revisions applied with a ServiceAccount's rights, check by the "
                             "cluster's RBAC that it exists and may delete what its revision holds: Strict (default) "
                             "refuses and lists every missing rule; None skips the check, for this run only")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the deletes; write nothing")
    parser.add_argument("--no-wait", dest="wait", action="store_false",
                        help="return once the revisions are deleted (or the last one published) instead of "
                             "following the teardown; custom resources are still waited for")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="give up waiting after this long (exit 6); the reconciler goes on")
    parser.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                        help="seconds between reads while waiting (default 2)")
    add_namespace_argument(parser)
    add_cluster_arguments(parser)
    parser.set_defaults(func=_main, sleep=time.sleep, clock=time.monotonic, tty=None)


def _main(args: argparse.Namespace) -> int:
    progress = Progress(args.dry_run)
    try:
        return run("uninstall", lambda: _uninstall(args, progress), progress=progress)
    except _TimedOut as exc:
        print(f"cosctl uninstall: {exc}", file=sys.stderr)
        return EXIT_TIMEOUT


def _uninstall(args: argparse.Namespace, progress: Progress) -> int:
    cluster = args.connect(args)
    owner = args.owner
    held = HeldContent(cluster, args.system_namespace)
    plan = plan_uninstall(cluster, owner, held.content)
    _describe(plan, held.content)
    waiter = _Waiter(args)
    if args.keep_crds:
        return _keep_crds(args, cluster, plan, held, progress, waiter)
    if plan.active and plan.in_use and not args.delete_custom_resources:
        raise UninstallError(
            f"owner {owner}: custom resources of the CustomResourceDefinitions its revisions control exist:\n"
            + "".join(f"  {c.name}: {c.describe_found()}\n" for c in plan.in_use)
            + "deleting the revisions deletes the CustomResourceDefinitions and, with them, every custom resource of "
              "them, after the operator is gone (custom resources its finalizers hold would then hold the uninstall "
              f"for ever); nothing was deleted. {CHOICES}")
    if plan.active and args.preflight_permissions == ENFORCEMENT_STRICT:
        _refuse_missing_permissions(cluster, plan, held)
    if args.delete_custom_resources:
        plan = _delete_custom_resources(args, cluster, plan, held, progress, waiter)
    undeleted = [c for c in plan.revisions if not (c.get("metadata") or {}).get("deletionTimestamp")]
    delete_revisions(cluster, undeleted, dry_run=args.dry_run, report=progress)
    if args.dry_run:
        print("dry run: nothing was deleted")
        return EXIT_OK
    if not args.wait:
        print(f"the reconciler tears the revisions down; follow it: cosctl status --owner {owner}")
        return EXIT_OK
    waiter.until(f"owner {owner}", lambda: _revisions_gone(cluster, owner),
                 f"the reconciler goes on; `cosctl status --owner {owner}` shows where it stands")
    orphaned = [str(c["metadata"]["name"]) for c in plan.deleting if orphaning(c)]
    print(f"owner {owner} uninstalled: {len(plan.revisions)} revision(s) deleted, "
          + ("their objects removed in reverse phase order" if not orphaned else
             f"the objects of {', '.join(orphaned)} left in place (it was deleted with propagationPolicy Orphan), "
             "the others' removed in reverse phase order"))
    return EXIT_OK


def _describe(plan: Plan, content: Callable[[Obj], list[Phase] | None]) -> None:
    """What the owner has installed and what of it needs a decision, before anything is written."""
    lines = []
    for cos in plan.active:
        phases = content(cos)
        what = bundle_text(*bundle_of(cos))
        count = f"{sum(len(p.objects) for p in phases)} object(s)" if phases is not None else "content unreadable"
        lines.append(f"owner {plan.owner}: Active revision {cos['metadata']['name']}"
                     + (f" ({what}, {count})" if what else f" ({count})"))
        if phases is None and declared(cos) is not None:
            print(f"cosctl uninstall: warning: the content of ClusterObjectSet {cos['metadata']['name']} cannot be "
                  "read (its object-data Secrets): the permission preflight cannot check its teardown",
                  file=sys.stderr)
    for cos in plan.deleting:
        lines.append(f"owner {plan.owner}: revision {cos['metadata']['name']} is being deleted already"
                     + (", leaving its objects in place (propagationPolicy Orphan)" if orphaning(cos) else ""))
    archived = [c for c in plan.revisions if c not in plan.active and c not in plan.deleting]
    busy = [str(c["metadata"]["name"]) for c in archived if tearing_down(c)]
    if busy:
        lines.append(f"owner {plan.owner}: archived revision {', '.join(busy)} still tearing down")
    if len(archived) > len(busy):
        lines.append(f"owner {plan.owner}: {len(archived) - len(busy)} archived revision(s) (nothing left to tear "
                     "down)")
    for crd in plan.crds:
        found = f"custom resources exist: {crd.describe_found()}" if crd.in_use else "no custom resources"
        going = ", being deleted" if plan.being_deleted(crd.controller) else ""
        lines.append(f"CustomResourceDefinition {crd.name} (controlled by {crd.controller}{going}): {found}")
    lines.extend(f"Namespace {ns} (controlled by {controller}): deleting it deletes everything in it"
                 for ns, controller in sorted(plan.namespaces.items()))
    print("\n".join(lines), flush=True)


def _refuse_missing_permissions(cluster: Cluster, plan: Plan, held: HeldContent) -> None:
    found = teardown_findings(cluster, plan, held.content)
    if found:
        raise UninstallError("\n".join([
            "the permission preflight refused the uninstall (nothing was deleted):", *(text for _, text in found),
            f"`cosctl rbac --owner {plan.owner} --service-account {found[0][0]}` prints the RBAC the installed "
            "revision needs, its teardown included; --preflight-permissions None skips the check, for this run "
            "only"]))


def _delete_custom_resources(args: argparse.Namespace, cluster: Cluster, plan: Plan, held: HeldContent,
                             progress: Progress, waiter: _Waiter) -> Plan:
    """Delete the custom resources and wait until they are gone, again while new ones appear (an operator that
    makes its own), at most :data:`CUSTOM_RESOURCE_ROUNDS` times; the plan read after the last round."""
    for _ in range(CUSTOM_RESOURCE_ROUNDS):
        if not _listable(plan):
            return plan
        deleted = delete_custom_resources(cluster, _listable(plan), dry_run=args.dry_run, report=progress)
        if args.dry_run:
            return plan
        waiter.until("custom resources", functools.partial(_custom_resources_gone, cluster, deleted),
                     "nothing else was deleted; the custom resources that are left wait for what holds them (their "
                     "operator still runs): run the command again once they are gone")
        plan = plan_uninstall(cluster, plan.owner, held.content)
    if _listable(plan):
        raise UninstallError(
            f"custom resources were made again after {CUSTOM_RESOURCE_ROUNDS} rounds of deletes (the operator "
            "may make its own):\n" + "".join(f"  {c.name}: {c.describe_found()}\n" for c in _listable(plan))
            + "nothing else was deleted; --keep-crds keeps them instead")
    return plan


def _listable(plan: Plan) -> list[HeldCRD]:
    """The CRDs with custom resources that can be deleted one by one (those of a CRD serving no version go with
    it: --delete-custom-resources asked for that)."""
    return [c for c in plan.in_use if c.served is not None]


def _custom_resources_gone(cluster: Cluster, deleted: list[Obj]) -> tuple[bool, str]:
    left = remaining(cluster, deleted)
    if not left:
        return True, f"{len(deleted)} custom resource(s) deleted"
    label, holds = left[0]
    return False, f"{len(left)} custom resource(s) being deleted; {label}" + (f": {holds}" if holds else "")


def _revisions_gone(cluster: Cluster, owner: str) -> tuple[bool, str]:
    left = owner_revisions(cluster, owner)
    if not left:
        return True, "every revision is gone"
    return False, f"{len(left)} revision(s) tearing down; {left[-1]['metadata']['name']}: {_teardown_state(left[-1])}"


def _teardown_state(cos: Obj) -> str:
    """What a revision being torn down reports: an error the reconciler retries, the object it waits for, or that
    it removes its objects."""
    progressing = condition(cos, conditions.PROGRESSING)
    available = condition(cos, conditions.AVAILABLE)
    if orphaning(cos):
        return "leaving its objects in place (propagationPolicy Orphan)"
    if not progressing:
        return "waiting for the reconciler"
    if progressing.get("reason") == conditions.RETRYING and progressing.get("message") != conditions.MSG_TEARING_DOWN:
        return str(progressing.get("message"))
    message = available.get("message") if available.get("reason") == conditions.RECONCILING else None
    if message and message != conditions.MSG_TEARING_DOWN:
        return str(message)
    return "removing its objects in reverse phase order"


def _keep_crds(args: argparse.Namespace, cluster: Cluster, plan: Plan, held: HeldContent, progress: Progress,
               waiter: _Waiter) -> int:
    """Publish the revision that holds only the CRDs (and the namespaces holding their custom resources), then
    follow the handover until the revisions before it are torn down."""
    if not plan.active:
        raise UninstallError(f"owner {plan.owner} has no Active revision: there is nothing to keep the "
                             "CustomResourceDefinitions from")
    kept = kept_phases(cluster, plan, held.content)
    latest = plan.active[-1]
    labels = latest["metadata"].get("labels") or {}
    result = publish(cluster, kept.phases, owner=plan.owner, owner_kind=labels.get(api.LABEL_OWNER_KIND),
                     system_namespace=args.system_namespace,
                     collision_protection=(latest.get("spec") or {}).get("collisionProtection")
                     or api.COLLISION_PREVENT,
                     revisions=plan.revisions, dry_run=args.dry_run, report=progress,
                     preflight_permissions=args.preflight_permissions)
    print(result.summary())
    if args.dry_run:
        return EXIT_OK
    if not args.wait:
        print(f"the reconciler hands over to it and removes everything else; follow it: cosctl status {result.name} "
              "--watch")
        return EXIT_OK
    older = [str(c["metadata"]["name"]) for c in plan.active if c["metadata"]["name"] != result.name]
    waiter.until(result.name, lambda: _handed_over(cluster, result.name, older, args.system_namespace),
                 f"the reconciler goes on; `cosctl status --owner {plan.owner}` shows where it stands")
    names = ", ".join(str(o["metadata"]["name"]) for o in kept.crds)
    print(f"owner {plan.owner}: everything but CustomResourceDefinition {names} was removed; revision {result.name} "
          "keeps them and their custom resources")
    for namespace, why in sorted(kept.namespaces.items()):
        print(f"Namespace {namespace} was kept too: {why}")
    for crd in kept.crds:
        if service := conversion_service(crd):
            print(f"warning: CustomResourceDefinition {crd['metadata']['name']} converts between its versions with a "
                  f"webhook (Service {service}), which was removed: until the operator is installed again, its "
                  "custom resources can be read only at the version they are stored at")
    print(f"reinstall: publish a bundle of the package for owner {plan.owner} (the new revision takes the "
          "CustomResourceDefinitions over); remove them later: delete their custom resources while the operator is "
          f"installed (their finalizers may need it), then cosctl uninstall --owner {plan.owner}")
    return EXIT_OK


def _handed_over(cluster: Cluster, name: str, older: list[str], system_namespace: str) -> tuple[bool, str]:
    """Whether revision ``name`` succeeded and each of ``older`` is archived and torn down; the progress line."""
    try:
        cos = cluster.get(api.API_VERSION, api.KIND, name)
    except NotFound:
        raise UninstallError(f"ClusterObjectSet {name} was deleted while the CustomResourceDefinitions were being "
                             "kept") from None
    ended = outcome(cos)
    if ended in ("blocked", "deadline", "archived"):
        message = condition(cos, conditions.PROGRESSING).get("message", "")
        raise UninstallError(f"ClusterObjectSet {name} did not roll out ({ended}): {message}")
    if ended != "succeeded":
        return False, progress_line(cos, inspect(cluster, cos, system_namespace=system_namespace))
    for old in older:
        try:
            previous = cluster.get(api.API_VERSION, api.KIND, old)
        except NotFound:
            continue
        progressing = condition(previous, conditions.PROGRESSING)
        if (progressing.get("reason"), progressing.get("status")) != (conditions.ARCHIVED, "False"):
            return False, f"archiving {old}: {_teardown_state(previous)}"
    return True, "handed over; the revisions before it are torn down"


class _Waiter:
    """Polls until a step says done, showing its progress line (redrawn on a terminal, time-stamped elsewhere), all
    waits of one run sharing ``--timeout``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.deadline = None if args.timeout is None else args.clock() + args.timeout

    def until(self, what: str, step: Callable[[], tuple[bool, str]], after_timeout: str) -> None:
        display = Display(what, sys.stdout, self.args.tty if self.args.tty is not None else sys.stdout.isatty())
        while True:
            done, line = step()
            display.show(line)
            late = self.deadline is not None and self.args.clock() >= self.deadline
            if (done or late) and display.tty:   # the redrawn line stays
                sys.stdout.write("\n")
                sys.stdout.flush()
            if done:
                return
            if late:
                raise _TimedOut(f"{what}: still waiting after {self.args.timeout:g} s ({line}); {after_timeout}")
            self.args.sleep(self.args.interval)
