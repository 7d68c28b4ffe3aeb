"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's timings and semantics.

A candidate acquires the Lease when it is free (no holder, or the holder has not renewed for
``lease_duration``), renews it every ``retry_period`` while leading, and gives up leadership when it could not
renew for ``renew_deadline``: it then stops work at once (the process exits, as controller-runtime does),
because another replica may take over as soon as the lease expires. Writes are optimistic (PUT with the
resourceVersion read), so two candidates can never both believe they acquired the same term. On a clean
stop the leader releases the Lease (empty holder, 1 s duration) so a standby takes over immediately rather
than after the lease expires.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from common.cluster.interface import AlreadyExists, ApiError, Cluster, Conflict, NotFound
from common.contract.objects import Obj

log = logging.getLogger(__name__)

LEASE_API_VERSION = "coordination.k8s.io/v1"
LEASE_KIND = "Lease"


@dataclass(frozen=True)
class LeaderConfig:
    name: str = "cos-reconciler"
    namespace: str = "olmv1-system"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def _micro_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Runs the election loop in the calling thread (``run``) until ``stop``."""

    def __init__(self, cluster: Cluster, config: LeaderConfig, *,
                 on_started_leading: Callable[[], None], on_stopped_leading: Callable[[], None],
                 clock: Callable[[], float] = time.time) -> None:
        if not config.identity:
            raise ValueError("leader election needs an identity")
        if not (config.lease_duration > config.renew_deadline > config.retry_period > 0):
            raise ValueError("leader election timings must satisfy lease duration > renew deadline > retry period")
        self.cluster = cluster
        self.config = config
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self._clock = clock
        self._stop = threading.Event()
        self.leading = threading.Event()
        self.healthy = True  # False when the API server could not be reached for a whole lease duration
        self._last_ok = time.monotonic()
        self._observed: tuple[str, float] = ("", 0.0)  # (holder, local time we saw its renewTime change)
        self._observed_renew: object = None

    # ------------------------------------------------------------------------------------------- loop
    def run(self) -> None:
        cfg = self.config
        while not self._stop.is_set():
            if self._try_acquire_or_renew():
                log.info("became leader (lease %s/%s, identity %s)", cfg.namespace, cfg.name, cfg.identity)
                self.leading.set()
                self.on_started_leading()
                self._renew_loop()
                return
            self._stop.wait(cfg.retry_period)

    def _renew_loop(self) -> None:
        cfg = self.config
        last_renew = time.monotonic()
        while not self._stop.wait(cfg.retry_period):
            if self._try_acquire_or_renew():
                last_renew = time.monotonic()
                continue
            if time.monotonic() - last_renew >= cfg.renew_deadline:
                log.error("could not renew the lease for %.0fs: stopping work", cfg.renew_deadline)
                self.leading.clear()
                self.on_stopped_leading()
                return
        # Stopped cleanly while leading: hand the lease over at once.
        self.leading.clear()
        self.release()

    def stop(self) -> None:
        self._stop.set()

    # ---------------------------------------------------------------------------------------- lease
    def _try_acquire_or_renew(self) -> bool:
        cfg = self.config
        now = self._clock()
        try:
            lease: Obj | None = self.cluster.get(LEASE_API_VERSION, LEASE_KIND, cfg.name, cfg.namespace)
        except NotFound:
            lease = None
        except ApiError as e:
            self._note_failure(e)
            return False
        spec_want = {
            "holderIdentity": cfg.identity,
            "leaseDurationSeconds": math.ceil(cfg.lease_duration),
            "renewTime": _micro_time(now),
        }
        try:
            if lease is None:
                spec_want["acquireTime"] = _micro_time(now)
                spec_want["leaseTransitions"] = 0
                self.cluster.create({"apiVersion": LEASE_API_VERSION, "kind": LEASE_KIND,
                                     "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                                     "spec": spec_want})
                self._note_ok()
                return True
            spec = lease.get("spec") or {}
            holder = str(spec.get("holderIdentity") or "")
            if holder != cfg.identity and holder and not self._expired(holder, spec):
                self._note_ok()
                return False
            new_spec = dict(spec)
            new_spec.update(spec_want)
            if holder != cfg.identity:
                new_spec["acquireTime"] = _micro_time(now)
                new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
            lease["spec"] = new_spec
            self.cluster.update(lease)
            self._note_ok()
            return True
        except (Conflict, AlreadyExists):
            self._note_ok()  # someone else wrote first: the server is fine, we simply lost this round
            return False
        except ApiError as e:
            self._note_failure(e)
            return False

    def _expired(self, holder: str, spec: Obj) -> bool:
        """Whether the holder's lease has lapsed. Like client-go, expiry is judged on OUR clock from the
        moment we last saw the lease change, so clock skew between replicas does not matter."""
        renew = spec.get("renewTime")
        if (holder, renew) != (self._observed[0], self._observed_renew):
            self._observed = (holder, time.monotonic())
            self._observed_renew = renew
            return False
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration)
        return time.monotonic() - self._observed[1] >= duration

    def release(self) -> bool:
        """Give the lease up if we hold it (empty holder, 1 s duration)."""
        cfg = self.config
        try:
            lease = self.cluster.get(LEASE_API_VERSION, LEASE_KIND, cfg.name, cfg.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != cfg.identity:
                return False
            now = _micro_time(self._clock())
            lease["spec"] = dict(spec, holderIdentity="", leaseDurationSeconds=1, renewTime=now, acquireTime=now)
            self.cluster.update(lease)
            log.info("released the lease %s/%s", cfg.namespace, cfg.name)
            return True
        except ApiError as e:
            log.warning("could not release the lease: %s", e.message)
            return False

    def _note_ok(self) -> None:
        self._last_ok = time.monotonic()
        self.healthy = True

    def _note_failure(self, e: ApiError) -> None:
        log.warning("leader election: %s (%d)", e.message, e.code)
        if time.monotonic() - self._last_ok > self.config.lease_duration:
            self.healthy = False
