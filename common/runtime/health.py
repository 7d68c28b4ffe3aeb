"""``/healthz`` and ``/readyz`` for the kubelet's probes.

- ``/healthz``: the process is alive and its leader election (if any) can still reach the API server.
- ``/readyz``: the ClusterObjectSet cache is synced and, with leader election, this replica is either
  leading or standing by healthily. A standby is ready: it serves nothing, but marking it unready would only
  make rollouts of the Deployment stall.

Each answer is ``ok`` or a line per failing check, like the API server's own health endpoints.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Check = Callable[[], str | None]  # None when healthy, else the reason


class HealthServer:
    def __init__(self, host: str, port: int, *, live: dict[str, Check], ready: dict[str, Check]) -> None:
        checks = {"/healthz": live, "/readyz": ready, "/livez": live}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # probes every few seconds
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                group = checks.get(path)
                if group is None:
                    self._answer(404, "not found\n")
                    return
                failures = []
                for name, check in group.items():
                    try:
                        why = check()
                    except Exception as e:  # a broken check is a failing check, not a crash
                        why = f"check raised {type(e).__name__}"
                    if why:
                        failures.append(f"[-]{name} failed: {why}")
                if failures:
                    self._answer(503, "\n".join(failures) + "\n")
                else:
                    self._answer(200, "ok\n")

            def _answer(self, code: int, text: str) -> None:
                data = text.encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="health", daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def parse_bind(value: str, flag: str) -> tuple[str, int] | None:
    """``host:port``, ``:port`` (all interfaces) or ``0`` (disabled) -> (host, port) or None."""
    if value in ("0", ""):
        return None
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    try:
        p = int(port)
    except ValueError:
        raise ValueError(f"{flag}: expected host:port, :port or 0, got {value!r}") from None
    if not 0 < p < 65536:
        raise ValueError(f"{flag}: port out of range in {value!r}")
    return (host.strip("[]") or "0.0.0.0", p)
