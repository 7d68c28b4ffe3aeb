"""Running the webhook: gunicorn (pre-forked workers, TLS) hosting the Flask app, configured in code.

Three things here are about running several worker processes correctly:
- TLS: gunicorn asks the ``ssl_context`` hook for a context on every new connection; the hook hands out the
  worker's ``ReloadingContext``, so rotated certificate files are served from the next connection on, with
  no restart and without touching connections already open.
- Metrics: ``PROMETHEUS_MULTIPROC_DIR`` is set before any worker (or prometheus-client) starts, and a dead
  worker's files are folded by the ``child_exit`` hook, so ``/metrics`` on any worker reports all of them.
- Temporary files (self-signed certificates, the metrics directory) are removed by the master only: forked
  workers unwind through the same code when they exit and must not delete what the others still use.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from common.contract import api
from common.runtime import collector
from webhook import logs
from webhook.review import DEFAULT_MAX_BODY_BYTES

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# How long a worker thread may hold the GIL while another wants it (CPython's default is 5 ms). A worker's
# threads share one GIL: judging a ~1 MiB COS is pure Python for tens of milliseconds, and a small review on
# another keep-alive connection of the same worker gives the GIL up at every socket read, log write and
# send, waiting up to a full interval each time to get it back. At 5 ms a small review behind a large one took
# 2x the no-op server's time (p50 27-35 ms against 12-18 ms, one worker, 4 threads); at 0.5 ms 1.16x, for a
# few microseconds per hand-off on the large one.
GIL_SWITCH_INTERVAL = 0.0005

# How long an idle keep-alive connection stays open. The API server drops its idle connections to a webhook after
# 90 s (client-go's transport keeps Go's http.Transport default IdleConnTimeout) and does not retry a webhook POST
# whose write fails: a server that closes an idle connection first races the API server's next call on it, which
# then fails with "write: broken pipe" and, under failurePolicy Fail, refuses the user's write with a 500
# InternalError. Seen once in ~1,500 reviews under bench_admission_load_cluster.py with gunicorn's 30 s. Longer
# than 90 s, the API server always closes first. An idle connection costs a socket in the worker's poller, no thread.
KEEPALIVE_SECONDS = 120

YOUNG_COLLECTION_EVERY = 50_000
"""Net container allocations between two young collections in a worker (Python's default: 700;
``common.runtime.collector``). A ~1 MiB review parses into some 32,000 dicts and lists, alive until it is
answered; at 700 every review set off dozens of young collections and a few full ones, each scanning every
review then in flight. Measured in process on maximal CREATEs, parse and judge with 7 others in flight (a
worker's threads all busy with them): 28 ms of collector time a review at 700, 10 ms at 10,000, 0.4 ms at
50,000; with none in flight, 5 ms at 700 and none at 50,000. Reference counting frees what a review leaves;
the few cycles some requests leave (an exception with its traceback) wait longer for their collection: a worker
held 75 MiB after 450 mixed reviews, against 72 MiB at 700."""


@dataclass
class Options:
    cert_file: str
    key_file: str
    bind: str = "0.0.0.0:9443"
    workers: int = 2
    threads: int = 8
    system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    body_timeout: float = 10.0
    log_level: str = "info"
    noop: bool = False  # bench baseline only
    authorize_service_accounts: bool = False  # SubjectAccessReviews: may the requester use the named account?
    kubeconfig: str | None = None  # where those go (None: the pod's own ServiceAccount)
    cleanup: list[Path] = field(default_factory=list)


class ServerError(RuntimeError):
    """The server cannot start as configured (message says which flag or file)."""


def split_bind(bind: str) -> tuple[str, int]:
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ServerError(f"--bind must be HOST:PORT, got {bind!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


class WebhookServer(BaseApplication):
    """gunicorn configured from ``Options`` instead of a config file or gunicorn's own command line."""

    def __init__(self, options: Options) -> None:
        self.options = options
        from webhook import metrics
        from webhook.tls import ReloadingContext

        master = os.getpid()

        def on_reload(ok: bool) -> None:
            metrics.TLS_RELOADS.labels("ok" if ok else "error").inc()

        def on_load(not_after: float) -> None:
            if os.getpid() != master:  # workers only: see metrics.SERVING_CERTIFICATE_EXPIRY
                metrics.serving_certificate(not_after)

        # Loaded in the master so a bad pair fails at start-up; each forked worker inherits its own copy (and
        # records its notAfter when it starts: ``load``).
        self.tls = ReloadingContext(options.cert_file, options.key_file, on_reload=on_reload, on_load=on_load)
        metrics.not_serving()
        super().__init__(usage=None, prog="cos-webhook")

    def load_config(self) -> None:
        opts = self.options
        tls = self.tls

        def ssl_context(conf: Any, default_factory: Any) -> Any:
            return tls.load()

        def child_exit(server: Any, worker: Any) -> None:
            from webhook import metrics
            metrics.worker_exited(worker.pid)

        settings: dict[str, Any] = {
            "bind": [opts.bind],
            "workers": opts.workers,
            "worker_class": "gthread",
            "threads": opts.threads,
            "certfile": opts.cert_file,
            "keyfile": opts.key_file,
            "ssl_context": ssl_context,
            "child_exit": child_exit,
            "timeout": 30,
            "graceful_timeout": 20,
            "keepalive": KEEPALIVE_SECONDS,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": opts.log_level,
            "logconfig_dict": logs.gunicorn_config(opts.log_level),
            "proc_name": "cos-webhook",
            "preload_app": False,
            # No shared control socket in $HOME: several webhooks (tests, the bench) run side by side.
            "control_socket_disable": True,
        }
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from common.contract.admission import Config
        from webhook import metrics
        from webhook.app import create_app

        metrics.serving_certificate(self.tls.not_after)
        logging.getLogger("cos_webhook").setLevel(self.options.log_level.upper())
        access = None
        if self.options.authorize_service_accounts:
            from webhook.access import SubjectAccessReviewer

            access = SubjectAccessReviewer.from_kubeconfig(self.options.kubeconfig)
        app = create_app(Config(self.options.system_namespace), max_body_bytes=self.options.max_body_bytes,
                         body_timeout=self.options.body_timeout, noop=self.options.noop, access=access)
        # Everything loaded so far (Flask, jsonschema, compiled rules) lives as long as the worker: out of the
        # collector's reach, and young collections made rarer (YOUNG_COLLECTION_EVERY).
        collector.tune_collector(YOUNG_COLLECTION_EVERY)
        sys.setswitchinterval(GIL_SWITCH_INTERVAL)  # per worker: the master runs no request
        return app


def prepare_metrics_dir(cleanup: list[Path]) -> Path:
    """Point prometheus-client at a per-run directory (before it is imported), emptied of stale files."""
    current = os.environ.get(MULTIPROC_ENV)
    if current:
        path = Path(current)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
        return path
    path = Path(tempfile.mkdtemp(prefix="cos-webhook-metrics-"))
    os.environ[MULTIPROC_ENV] = str(path)
    cleanup.append(path)
    return path


def self_signed(bind: str, cleanup: list[Path]) -> tuple[str, str, Path]:
    """Generate a CA and serving certificate for loopback (and the bind host) into a temporary directory."""
    from webhook.tls import write_self_signed

    host, _ = split_bind(bind)
    hosts = ["localhost", "127.0.0.1", "::1"]
    if host not in hosts and host not in ("0.0.0.0", "::"):
        hosts.insert(0, host)
    directory = Path(tempfile.mkdtemp(prefix="cos-webhook-tls-"))
    cleanup.append(directory)
    out = write_self_signed(directory, hosts)
    return str(out.cert_file), str(out.key_file), out.ca_file


def run(options: Options) -> int:
    """Serve until SIGTERM/SIGINT; returns the exit code."""
    master = os.getpid()
    try:
        split_bind(options.bind)
        prepare_metrics_dir(options.cleanup)
        from webhook.tls import CertificateError
        try:
            server = WebhookServer(options)
        except CertificateError as exc:
            print(f"cos-webhook: {exc}", file=sys.stderr)
            return 2
        server.run()
        return 0
    except ServerError as exc:
        print(f"cos-webhook: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        if os.getpid() == master:
            for path in options.cleanup:
                shutil.rmtree(path, ignore_errors=True)
