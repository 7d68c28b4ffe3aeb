"""``cos-reconciler``: the process a cluster admin deploys (see the README's "Running the reconciler").

Exit codes: 0 after a clean stop (SIGTERM/SIGINT) or, with ``--once``, when every ClusterObjectSet settled;
1 when the leader lease was lost or ``--once`` timed out; 2 for bad flags or an unusable kubeconfig; 3 when OLM
v1's operator-controller is running (:mod:`reconciler.olm_guard`: it reconciles the same ClusterObjectSets).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import uuid
from typing import Any

from common.contract import api, conditions, useragent
from common.runtime.logs import JsonFormatter
from common.runtime.parallel import DEFAULT_CONCURRENCY
from reconciler.olm_guard import EXIT_OTHER_CONTROLLER, SKIP_FLAG

log = logging.getLogger("cos-reconciler")


def user_agent() -> str:
    """``cos-reconciler/<version>``: how the API server's audit log and request metrics name this process."""
    return useragent.user_agent("cos-reconciler")


def setup_logging(fmt: str, level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        formatter: logging.Formatter = JsonFormatter()   # whole tracebacks: our messages name objects, not values
    else:
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cos-reconciler", description="Roll out ClusterObjectSets phase by phase.")
    p.add_argument("--kubeconfig", default=None,
                   help="kubeconfig file (default: in-cluster service account, then $KUBECONFIG/~/.kube/config)")
    p.add_argument("--context", default=None, help="kubeconfig context (default: the current context)")
    p.add_argument("--system-namespace", default=api.DEFAULT_SYSTEM_NAMESPACE,
                   help="namespace of object-data Secrets referenced without a namespace, and of the Lease "
                        "(default: %(default)s)")
    p.add_argument("--workers", type=int, default=4, help="concurrent reconciles (default: %(default)s)")
    p.add_argument("--rollout-concurrency", type=int, default=DEFAULT_CONCURRENCY,
                   help="object writes in flight at once, shared by all workers: the objects of a phase are "
                        "written concurrently up to this many; 1 writes them one by one (default: %(default)s)")
    p.add_argument("--require-service-account", action="store_true",
                   help="refuse ClusterObjectSets that name no ServiceAccount (annotations "
                        f"{api.ANNOTATION_SERVICE_ACCOUNT_NAME} and {api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE}), as "
                        "OLM v1 does; without it they are written with this process's own rights. COSs naming one "
                        "are always written with a token of that ServiceAccount")
    p.add_argument("--leader-elect", action="store_true", help="elect a leader through a coordination.k8s.io "
                                                               "Lease; only the leader reconciles")
    p.add_argument("--leader-election-name", default="cos-reconciler", help="Lease name (default: %(default)s)")
    p.add_argument("--leader-election-namespace", default=None,
                   help="Lease namespace (default: the system namespace)")
    p.add_argument("--leader-election-id", default=None,
                   help="this replica's identity (default: $POD_NAME, else hostname_<random>)")
    p.add_argument("--lease-duration", type=float, default=15.0, help="seconds (default: %(default)s)")
    p.add_argument("--renew-deadline", type=float, default=10.0, help="seconds (default: %(default)s)")
    p.add_argument("--retry-period", type=float, default=2.0, help="seconds (default: %(default)s)")
    p.add_argument("--health-bind", default=":8081", help="/healthz and /readyz (host:port, :port, or 0 to "
                                                          "disable; default: %(default)s)")
    p.add_argument("--metrics-bind", default=":8080", help="Prometheus /metrics (host:port, :port, or 0; "
                                                           "default: %(default)s)")
    p.add_argument("--log-format", choices=("text", "json"), default="text")
    p.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    p.add_argument("--shutdown-grace", type=float, default=20.0,
                   help="seconds to finish reconciles in flight on SIGTERM (default: %(default)s)")
    p.add_argument("--watch-timeout", type=int, default=300, help=argparse.SUPPRESS)
    p.add_argument("--once", action="store_true",
                   help="reconcile until every ClusterObjectSet is settled (rolled out, archived or blocked), "
                        "then exit: 0 when all settled, 1 on timeout (no leader election)")
    p.add_argument("--once-timeout", type=float, default=120.0, help="seconds for --once (default: %(default)s)")
    p.add_argument(SKIP_FLAG, action="store_true",
                   help="start even while OLM v1's operator-controller holds its leader Lease (by default "
                        f"cos-reconciler then exits {EXIT_OTHER_CONTROLLER}: both would reconcile the same "
                        "ClusterObjectSets)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.log_format, args.log_level)

    from common.cluster.kube import KubeCluster
    from common.runtime.health import HealthServer, parse_bind
    from common.runtime.leader import LeaderConfig
    from reconciler.metrics import Metrics
    from reconciler.olm_guard import check_start
    from reconciler.process import (
        ProcessConfig,
        ReconcilerProcess,
        client_options,
        run_until_settled,
        tune_collector,
    )

    if args.workers < 1:
        log.error("--workers must be at least 1, got %d", args.workers)
        return 2
    if args.rollout_concurrency < 1:
        log.error("--rollout-concurrency must be at least 1, got %d", args.rollout_concurrency)
        return 2
    try:
        health_bind = parse_bind(args.health_bind, "--health-bind")
        metrics_bind = parse_bind(args.metrics_bind, "--metrics-bind")
    except ValueError as e:
        log.error("%s", e)
        return 2
    metrics = Metrics()
    try:
        # made once, as the process needs it: its pool, its jitter, its metrics
        kube = KubeCluster.auto(args.kubeconfig, context=args.context, user_agent=user_agent(),
                                observer=metrics.observe_request,
                                **client_options(ProcessConfig(workers=args.workers,
                                                               rollout_concurrency=args.rollout_concurrency)))
    except Exception as e:  # kubernetes.config raises several types for missing/broken files
        where = args.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        log.error("cannot load Kubernetes configuration (in-cluster, then %s): %s", where, e)
        return 2
    refused = check_start(kube, args.system_namespace, skip=args.skip_operator_controller_check)
    if refused is not None:
        return refused

    if args.once:
        ok, items = run_until_settled(kube, system_namespace=args.system_namespace, timeout=args.once_timeout,
                                      workers=args.workers, rollout_concurrency=args.rollout_concurrency,
                                      require_service_account=args.require_service_account)
        for cos in items:
            prog = conditions.condition(cos, conditions.PROGRESSING)
            print(f"{cos['metadata']['name']}: {'settled' if conditions.settled(cos) else 'not settled'} "
                  f"(Progressing {prog.get('status', '?')}/{prog.get('reason', '?')}: {prog.get('message', '')})")
        return 0 if ok else 1

    identity = args.leader_election_id or os.environ.get("POD_NAME") or \
        f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    leader = LeaderConfig(name=args.leader_election_name,
                          namespace=args.leader_election_namespace or args.system_namespace,
                          identity=identity, lease_duration=args.lease_duration,
                          renew_deadline=args.renew_deadline, retry_period=args.retry_period)
    if not (leader.lease_duration > leader.renew_deadline > leader.retry_period > 0):
        log.error("leader election timings must satisfy --lease-duration > --renew-deadline > --retry-period > 0")
        return 2
    proc = ReconcilerProcess(kube, ProcessConfig(system_namespace=args.system_namespace, workers=args.workers,
                                                 leader_elect=args.leader_elect, leader=leader,
                                                 shutdown_grace=args.shutdown_grace, identity=identity,
                                                 rollout_concurrency=args.rollout_concurrency,
                                                 require_service_account=args.require_service_account),
                             metrics=metrics, watch_timeout=args.watch_timeout)
    health = None
    try:
        if health_bind:
            health = HealthServer(*health_bind, live=proc.live_checks(), ready=proc.ready_checks()).start()
            log.info("health on %s:%d (/healthz, /readyz)", health_bind[0], health.port)
        if metrics_bind:
            metrics.serve(*metrics_bind)
            log.info("metrics on %s:%d (/metrics)", *metrics_bind)
    except OSError as e:
        log.error("cannot listen: %s", e)
        return 2

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        threading.Thread(target=proc.stop, name="shutdown", daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("starting (identity %s, leader election %s)", identity, "on" if args.leader_elect else "off")
    # Everything made so far (modules, the client, the process) lives as long as the process: out of the cyclic
    # collector's reach from now on, and young collections made rarer (reconciler.process.tune_collector).
    tune_collector()
    proc.start()
    while not proc.wait(0.5):
        pass
    if health is not None:
        health.stop()
    log.info("stopped (exit %d)", proc.exit_code)
    return proc.exit_code


if __name__ == "__main__":
    sys.exit(main())
