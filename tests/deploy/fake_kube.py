"""A minimal local HTTP server playing the Kubernetes API server for ``cos-webhook certs``.

Serves exactly what the certificate command uses -- Secrets (get, create, replace) and Validating/Mutating
WebhookConfigurations (get, replace) -- with the API server's optimistic concurrency (a replace whose
resourceVersion is stale gets 409 Conflict, a create of an existing name 409 AlreadyExists) and Status
bodies. Objects are stored as raw JSON, so fields the client library does not model survive a replace
only if the client sends them back. Every request is recorded; ``fail_next`` queues error answers.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Obj = dict[str, Any]

SECRETS = re.compile(r"^/api/v1/namespaces/([^/]+)/secrets(?:/([^/]+))?$")
CONFIGS = re.compile(r"^/apis/admissionregistration\.k8s\.io/v1/(validating|mutating)webhookconfigurations/([^/]+)$")
TOKEN = "fake-token-for-tests"


def status(code: int, reason: str, message: str) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}  # (kind, namespace, name) -> object
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[Obj | None] = []
        self.fail_next: list[tuple[str, str, int, str]] = []  # (method, path, code, reason)
        self.on_request: list[Any] = []  # callables (method, path), run before each request is answered
        self.unauthorized = 0
        self._rv = 100
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- test helpers
    def put(self, kind: str, obj: Obj) -> Obj:
        with self._lock:
            obj = copy.deepcopy(obj)
            self._rv += 1
            obj.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
            self.objects[(kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj
            return obj

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        obj = self.objects.get((kind, namespace, name))
        return copy.deepcopy(obj) if obj else None

    def writes(self) -> list[tuple[str, str]]:
        return [r for r in self.requests if r[0] != "GET"]

    def kubeconfig(self, path: str) -> str:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "fake",
                       "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                       "users": [{"name": "fake", "user": {"token": TOKEN}}],
                       "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}, f)
        return path

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeKube:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

            def _answer(self, code: int, body: Obj) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                path = self.path.split("?", 1)[0]
                fake.requests.append((self.command, path))
                fake.bodies.append(body)
                for hook in list(fake.on_request):
                    hook(self.command, path)
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    fake.unauthorized += 1
                    return self._answer(401, status(401, "Unauthorized", "Unauthorized"))
                for i, (method, fpath, code, reason) in enumerate(fake.fail_next):
                    if method == self.command and fpath == path:
                        del fake.fail_next[i]
                        return self._answer(code, status(code, reason, f"injected {reason}"))
                code, out = fake.dispatch(self.command, path, body)
                self._answer(code, out)
                return None

            do_GET = do_POST = do_PUT = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    # -- the API
    def dispatch(self, method: str, path: str, body: Obj | None) -> tuple[int, Obj]:
        if m := SECRETS.match(path):
            kind, namespace, name = "Secret", m.group(1), m.group(2)
            if method == "POST" and name is None:
                assert body is not None
                name = body["metadata"]["name"]
                if ("Secret", namespace, name) in self.objects:
                    return 409, status(409, "AlreadyExists", f'secrets "{name}" already exists')
                return 201, self.put(kind, body)
        elif m := CONFIGS.match(path):
            kind = "ValidatingWebhookConfiguration" if m.group(1) == "validating" else "MutatingWebhookConfiguration"
            namespace, name = "", m.group(2)
        else:
            return 404, status(404, "NotFound", f"no route for {path}")
        if name is None:
            return 405, status(405, "MethodNotAllowed", "method not allowed")
        current = self.objects.get((kind, namespace, name))
        if current is None:
            return 404, status(404, "NotFound", f'{kind.lower()}s "{name}" not found')
        if method == "GET":
            return 200, copy.deepcopy(current)
        if method == "PUT":
            assert body is not None
            if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                return 409, status(409, "Conflict", "the object has been modified; please apply your changes "
                                                    "to the latest version and try again")
            return 200, self.put(kind, body)
        return 405, status(405, "MethodNotAllowed", "method not allowed")
