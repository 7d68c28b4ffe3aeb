"""Refuse to start while OLM v1's operator-controller reconciles the same ClusterObjectSets.

operator-controller (with its ``BoxcutterRuntime`` feature gate) serves the same CRD and rolls the same COSs
out. Two controllers on one COS fight over every object and every status write, so ``cos-reconciler`` looks
for it once at start-up and exits with :data:`EXIT_OTHER_CONTROLLER` while it runs.

**What counts as "running": its leader Lease, held and renewed recently.** operator-controller is deployed
with ``--leader-elect`` (upstream's Helm chart and OpenShift's manifests both pass it), and its leader keeps
the ``coordination.k8s.io`` Lease :data:`OPERATOR_CONTROLLER_LEASE` in its own namespace: renewed every 26 s,
``leaseDurationSeconds: 137``, released on a clean stop (empty ``holderIdentity``). A Lease with a holder
whose ``renewTime + leaseDurationSeconds`` is still ahead therefore means "running now", and the signal goes
away by itself: at once when it is stopped or scaled to zero, at most 137 s after it crashed or its
namespace was removed mid-term. A stale Lease left by an operator-controller that is gone never blocks us.

Field managers cannot say this. On managed objects both controllers apply as ``olm.operatorframework.io``
(a compatibility promise, ``shared/spec/reconciler.md`` section 1), so they cannot tell the two apart; and
operator-controller's ``managedFields`` entries on COSs stay forever after it is removed, their ``time``
moving only when it writes, so a live but idle operator-controller looks exactly like a removed one.

Where it looks: Leases of that name in every namespace (one list with a ``fieldSelector``, so a cluster's
many node Leases are not read); when that is forbidden (a narrowed ClusterRole), only the system namespace,
the default home of both controllers (its leader-election Role allows ``get`` there). When even that is
forbidden, a warning says the check was skipped: the admin chose the RBAC, and nothing could be seen.

Limits, said in the docs: an operator-controller run without ``--leader-elect`` (a developer's Tilt setup)
holds no Lease and is not seen; one running without ``BoxcutterRuntime`` holds the Lease but leaves COSs
alone (start with :data:`SKIP_FLAG` then). Freshness is judged on this process's clock against the renewal
time the other leader wrote: clock skew moves the verdict by the skew, seconds against a 137 s lease.
The check runs once, at start-up: an operator-controller started later is not noticed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from common.cluster.interface import ApiError, Forbidden, NotFound
from common.contract.objects import Obj

if TYPE_CHECKING:   # the kubernetes client is imported only when a process really talks to a cluster
    from common.cluster.kube import KubeCluster

log = logging.getLogger("cos-reconciler")

OPERATOR_CONTROLLER_LEASE = "9c4404e7.operatorframework.io"
"""operator-controller's ``LeaderElectionID`` (cmd/operator-controller/main.go), the name of its Lease."""

EXIT_OTHER_CONTROLLER = 3
"""``cos-reconciler``'s exit code when it refuses to start next to a running operator-controller."""

SKIP_FLAG = "--skip-operator-controller-check"

_LEASES = "/apis/coordination.k8s.io/v1"


class CheckFailed(Exception):
    """The API server could not answer whether operator-controller runs (not a refusal: nothing was seen)."""


@dataclass(frozen=True)
class HeldLease:
    """A Lease some leader holds now: whom, and until when it counts without another renewal."""

    namespace: str
    name: str
    holder: str
    renewed: datetime
    expires: datetime


def _parse_time(value: object) -> datetime | None:
    """A Lease's ``MicroTime`` (``2026-11-23T16:28:08.979599Z``) or plain RFC 3339 time; None if unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def held_lease(lease: Obj, now: datetime) -> HeldLease | None:
    """The Lease as held at ``now``, or None when it is free: no holder (released), or its last renewal plus
    its duration lies in the past (the holder is gone). A Lease without a readable ``renewTime`` or
    ``leaseDurationSeconds`` is treated as free: client-go always writes both, and a Lease nobody can
    judge must not block start-up forever."""
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity")
    renewed = _parse_time(spec.get("renewTime"))
    duration = spec.get("leaseDurationSeconds")
    if not isinstance(holder, str) or not holder or renewed is None:
        return None
    if not isinstance(duration, int) or isinstance(duration, bool) or duration <= 0:
        return None
    expires = renewed + timedelta(seconds=duration)
    if expires <= now:
        return None
    meta = lease.get("metadata") or {}
    return HeldLease(str(meta.get("namespace") or ""), str(meta.get("name") or ""), holder, renewed, expires)


def _stamp(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def refusal_message(lease: HeldLease) -> str:
    """What the admin reads: who runs, why that stops us, and the two ways forward."""
    return (f"refusing to start: OLM v1's operator-controller is running (Lease {lease.namespace}/{lease.name} "
            f"is held by {lease.holder!r}, last renewed at {_stamp(lease.renewed)}, valid until "
            f"{_stamp(lease.expires)}). It reconciles the same ClusterObjectSets, and two controllers would "
            "fight over every object. Stop it first (scale its Deployment to 0 or uninstall it), then start "
            "cos-reconciler: it takes over rolled-out ClusterObjectSets without rewriting their objects. A Lease "
            "left by an operator-controller that is gone stops counting at the time above; if this one runs "
            f"without the BoxcutterRuntime feature gate (it then leaves ClusterObjectSets alone), start with "
            f"{SKIP_FLAG}.")


def find_operator_controller(kube: KubeCluster, system_namespace: str, now: datetime) -> list[HeldLease]:
    """The operator-controller Leases held at ``now``: in all namespaces, or only in ``system_namespace`` when
    listing all is forbidden. Raises ``Forbidden`` when even that is, ``CheckFailed`` on other errors."""
    try:
        page = kube.request("list", "GET", f"{_LEASES}/leases",
                            query={"fieldSelector": f"metadata.name={OPERATOR_CONTROLLER_LEASE}"})
        leases = [x for x in page.get("items") or []
                  if (x.get("metadata") or {}).get("name") == OPERATOR_CONTROLLER_LEASE]
    except Forbidden:
        log.info("listing Leases in all namespaces is forbidden: looking for operator-controller's Lease in "
                 "namespace %s only", system_namespace)
        try:
            leases = [kube.request("get", "GET", f"{_LEASES}/namespaces/{system_namespace}/leases/"
                                                 f"{OPERATOR_CONTROLLER_LEASE}")]
        except NotFound:
            leases = []
        except Forbidden:
            raise
        except ApiError as e:
            raise CheckFailed(str(e)) from None
    except ApiError as e:
        raise CheckFailed(str(e)) from None
    held = [h for h in (held_lease(x, now) for x in leases) if h is not None]
    return sorted(held, key=lambda h: (h.namespace, h.name))


def check_start(kube: KubeCluster, system_namespace: str, *, skip: bool, now: datetime | None = None) -> int | None:
    """The start-up gate: None to go on, else the exit code (after logging why)."""
    if skip:
        log.warning("%s: not checking whether OLM v1's operator-controller is running; if it reconciles "
                    "ClusterObjectSets too, both controllers will fight over every object", SKIP_FLAG)
        return None
    try:
        held = find_operator_controller(kube, system_namespace, now or datetime.now(UTC))
    except Forbidden as e:
        log.warning("cannot check whether OLM v1's operator-controller is running (reading Lease %s/%s is "
                    "forbidden: %s); starting anyway", system_namespace, OPERATOR_CONTROLLER_LEASE, e)
        return None
    except CheckFailed as e:
        log.error("cannot check whether OLM v1's operator-controller is running: %s (exiting; %s skips the "
                  "check)", e, SKIP_FLAG)
        return 1
    if held:
        log.error("%s", refusal_message(held[0]))
        return EXIT_OTHER_CONTROLLER
    return None
