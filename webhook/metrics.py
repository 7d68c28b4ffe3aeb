"""Prometheus metrics of the webhook, correct when gunicorn runs several worker processes.

Each worker counts its own requests. With ``PROMETHEUS_MULTIPROC_DIR`` set (``cos-webhook`` sets it before
any worker starts), prometheus-client keeps every worker's values in files there and ``/metrics`` aggregates
them, so a scrape that lands on any worker sees the totals of all of them. Without it (the Flask test
client, a single process) the process's own registry is served.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

REQUESTS = Counter(
    "cos_webhook_admission_requests_total",
    "AdmissionReview requests answered, by route, kind, operation and result "
    "(allowed, denied, malformed, error).",
    ["route", "kind", "operation", "result"],
)
DURATION = Histogram(
    "cos_webhook_admission_duration_seconds",
    "Time to read, judge and answer one AdmissionReview.",
    ["route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0),
)
TLS_RELOADS = Counter(
    "cos_webhook_tls_reloads_total",
    "Attempts to load a rotated serving certificate, by result (ok, error).",
    ["result"],
)

# The alert that matters is "the certificate some worker serves expires soon": with several workers, the
# minimum over the live ones ("livemin": a replaced worker's value goes with it; ``worker_exited``). Only
# workers set it (``serving_certificate``); the master serves nothing and forgets its own value
# (``not_serving``), or the 0 every process holds from import would be the minimum.
SERVING_CERTIFICATE_EXPIRY = Gauge(
    "cos_webhook_serving_certificate_expiry_timestamp_seconds",
    "notAfter of the serving certificate the webhook serves, in Unix seconds (the minimum over live workers).",
    multiprocess_mode="livemin",
)


def serving_certificate(not_after: float) -> None:
    """Record the ``notAfter`` of the certificate this worker now serves (at start and after each reload)."""
    SERVING_CERTIFICATE_EXPIRY.set(not_after)


def not_serving() -> None:
    """Drop this process's live gauges from the aggregate: the gunicorn master, which serves no request."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(os.getpid())


def exposition() -> tuple[bytes, str]:
    """The text a scrape of ``/metrics`` returns, and its content type."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST


def worker_exited(pid: int) -> None:
    """Gunicorn ``child_exit`` hook: fold a dead worker's live-value files so they stop being reported."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(pid)
