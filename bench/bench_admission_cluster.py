"""Admission of a maximal ClusterObjectSet end to end through a real API server, as JSON.

Three set-ups measured in the same run, against the cluster in ``--kubeconfig`` (default ``$KUBECONFIG``):
- ``crd_only``: no webhook registered; the CRD's schema and CEL rules only (the floor);
- ``cos_webhook``: deploy/'s webhook configurations (rules, matchConditions, failurePolicy, timeouts as
  shipped; only clientConfig rewritten to a URL) calling ``cos-webhook`` on this machine (2 workers, TLS);
- ``noop_webhook``: the same configurations calling the same server started with ``--noop-handler``
  (answers every review "allowed" unjudged): the cost of being called at all.

For each: CREATE of a maximal COS (20 phases x 50 inline Deployments, ``common.contract.samples``), UPDATE
to Archived, a metadata-only UPDATE (a label: what the reconciler and the producer write), and a denied
CREATE (one object with both ``object`` and ``ref``); the median of ``--rounds`` rounds of each, and each
webhook set-up's ratio to ``crd_only``. The bodies are serialized once, up front, so the client costs the
same in every set-up. The API server must reach this machine's loopback (a local control plane); the webhook
listens on ``--port`` and ``--port + 1`` (default: free ports). Without a cluster it prints why and exits 0.

Targets (issue 10): create and update with cos-webhook at most 1.15x crd_only; denied create at most 1.2x;
a metadata-only update costs what it costs without the webhook (the webhooks are not called).
Run: python bench/bench_admission_cluster.py [--kubeconfig F] [--rounds N] [--port P]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import urllib3
from kubernetes import client, config

from common.contract import samples
from tests.webhook.registration import by_url, kubectl, register, shipped_configurations, unregister
from tests.webhook.support import CA, Server

SETUPS = ("crd_only", "cos_webhook", "noop_webhook")
TARGETS = {"create": 1.15, "update_archive": 1.15, "denied_create": 1.2}
COS_PATH = "/apis/olm.operatorframework.io/v1/clusterobjectsets"
CRD_FILE = ROOT / "deploy" / "crd" / "olm.operatorframework.io_clusterobjectsets.yaml"
RUN = uuid.uuid4().hex[:6]


class Api:
    """Raw HTTP to the API server with the kubeconfig's credentials; bodies are bytes prepared up front."""

    def __init__(self, kubeconfig: str) -> None:
        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        self.host = cfg.host.rstrip("/")
        self.headers = {"Accept": "application/json"}
        token = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
        if token:
            self.headers["Authorization"] = token if token.startswith("Bearer ") else f"Bearer {token}"
        self.pool = client.ApiClient(cfg).rest_client.pool_manager

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str = "application/json") -> tuple[int, float, bytes]:
        headers = dict(self.headers, **({"Content-Type": content_type} if body is not None else {}))
        start = time.perf_counter()
        resp = self.pool.request(method, self.host + path, body=body, headers=headers, preload_content=True,
                                 timeout=urllib3.Timeout(total=60))
        elapsed = (time.perf_counter() - start) * 1000
        return resp.status, elapsed, resp.data


def denied_variant(obj: dict[str, Any]) -> dict[str, Any]:
    bad = copy.deepcopy(obj)
    bad["spec"]["phases"][7]["objects"][13]["ref"] = {"name": "s", "namespace": "olmv1-system", "key": "k"}
    return bad


def one_round(api: Api, setup: str, index: int, srv: Server | None) -> tuple[dict[str, float], dict[str, int]]:
    """Each operation once: its time, and how many reviews the set-up's webhook answered for it."""
    name = f"bench-{RUN}-{setup.replace('_', '-')}-{index}"
    obj = samples.maximal_cos(name)
    bodies = {
        "create": ("POST", COS_PATH, json.dumps(obj, separators=(",", ":")).encode(), "application/json", 201),
        "metadata_update": ("PATCH", f"{COS_PATH}/{name}", b'{"metadata":{"labels":{"bench":"touched"}}}',
                            "application/merge-patch+json", 200),
        "update_archive": ("PATCH", f"{COS_PATH}/{name}", b'{"spec":{"lifecycleState":"Archived"}}',
                           "application/merge-patch+json", 200),
        "denied_create": ("POST", COS_PATH, json.dumps(denied_variant(samples.maximal_cos(name + "-denied")),
                                                       separators=(",", ":")).encode(), "application/json", 422),
    }
    times: dict[str, float] = {}
    counts: dict[str, int] = {}
    for op, (method, path, body, content_type, expected) in bodies.items():
        before = calls(srv) if srv is not None else 0
        status, times[op], answer = api.request(method, path, body, content_type)
        assert status == expected, (op, status, answer[:500])
        counts[op] = calls(srv) - before if srv is not None else 0
    api.request("DELETE", f"{COS_PATH}/{name}")
    return times, counts


def wait_until(cond: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_admission_cluster: timed out waiting for {what}")
        time.sleep(0.3)


def calls(server: Server) -> int:
    return sum(1 for r in server.log_records() if r.get("event") == "admission")


class Setups:
    """Switches the API server between the CRD alone and deploy/'s webhook configurations calling one of
    ``servers`` by URL, and waits until the API server acts on the switch."""

    def __init__(self, kubeconfig: str, api: Api, servers: dict[str, Server], ca: CA) -> None:
        self.kubeconfig, self.api, self.servers, self.ca = kubeconfig, api, servers, ca
        self.registered: list[dict[str, Any]] = []
        probe = samples.small_cos(f"bench-{RUN}-probe")
        del probe["spec"]["lifecycleState"]  # a default is missing: the mutating webhook is called for it
        self.probe_body = json.dumps(probe).encode()

    def clear(self) -> None:
        if self.registered:
            unregister(self.kubeconfig, self.registered)
            self.registered = []

    def switch_to(self, setup: str) -> None:
        """Register ``setup``'s configurations (none for ``crd_only``) and wait until the API server uses them."""
        self.clear()
        srv = self.servers.get(setup)
        if srv is None:  # the CRD alone: a missing default is refused by its schema, nobody is called
            def crd_alone() -> bool:
                before = [calls(s) for s in self.servers.values()]
                status = self.api.request("POST", COS_PATH + "?dryRun=All", self.probe_body)[0]
                return status == 422 and [calls(s) for s in self.servers.values()] == before
            wait_until(crd_alone, "the webhooks to be unregistered")
            return
        self.registered = by_url(shipped_configurations(), f"https://127.0.0.1:{srv.port}",
                                 self.ca.ca_file.read_bytes())
        register(self.kubeconfig, self.registered)

        def called() -> bool:
            before = calls(srv)
            self.api.request("POST", COS_PATH + "?dryRun=All", self.probe_body)
            return calls(srv) > before
        wait_until(called, f"{setup} to be called")


def cluster_with_crd(kubeconfig: str | None, bench: str) -> str | None:
    """The kubeconfig file of a reachable cluster with the COS CRD applied and Established; else None, after
    printing the bench's ``{"skipped": why}`` line (the admission benches exit 0 without a cluster)."""
    if not kubeconfig or not os.path.isfile(kubeconfig.split(":")[0]):
        print(json.dumps({"bench": bench, "skipped": "no cluster: pass --kubeconfig or set KUBECONFIG to a "
                          "disposable cluster whose API server can reach this machine's loopback"}))
        return None
    kubeconfig = kubeconfig.split(":")[0]
    if kubectl(kubeconfig, "get", "--raw", "/readyz", check=False, timeout=15).returncode != 0:
        print(json.dumps({"bench": bench, "skipped": f"cluster in {kubeconfig} not reachable"}))
        return None
    kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", str(CRD_FILE))
    kubectl(kubeconfig, "wait", "--for=condition=Established", "crd/clusterobjectsets.olm.operatorframework.io")
    return kubeconfig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--port", type=int, default=0, help="webhook port (the no-op one uses port + 1)")
    args = ap.parse_args(argv)
    kubeconfig = cluster_with_crd(args.kubeconfig, "admission_cluster")
    if kubeconfig is None:
        return 0
    api = Api(kubeconfig)
    version = json.loads(api.request("GET", "/version")[2]).get("gitVersion")
    with tempfile.TemporaryDirectory() as tmp:
        ca = CA(Path(tmp))
        for sub in ("real", "noop"):
            Path(tmp, sub).mkdir()
        servers = {
            "cos_webhook": Server(ca, Path(tmp, "real"), args=["--workers", "2", "--log-level", "info"],
                                  port=args.port),
            "noop_webhook": Server(ca, Path(tmp, "noop"), args=["--workers", "2", "--log-level", "info",
                                                               "--noop-handler"],
                                   port=args.port + 1 if args.port else 0),
        }
        for srv in servers.values():
            srv.start()
        results: dict[str, list[dict[str, float]]] = {setup: [] for setup in SETUPS}
        webhook_calls: dict[str, dict[str, int]] = {}
        setups = Setups(kubeconfig, api, servers, ca)

        try:
            # Set-ups interleaved round by round (rotating which goes first), so a busy moment of a shared
            # machine does not land on one set-up only; each round after a warm-up one.
            for index in range(args.rounds + 1):
                order = SETUPS[index % 3:] + SETUPS[:index % 3]
                for setup in order:
                    setups.switch_to(setup)
                    srv = servers.get(setup)
                    measured, counted = one_round(api, setup, index, srv)
                    if index == 0:
                        continue  # warm-up: caches, connections, the webhook's first requests
                    results[setup].append(measured)
                    if srv is not None:
                        webhook_calls[setup] = counted
        finally:
            setups.clear()
            for srv in servers.values():
                srv.stop()
    ops = ("create", "update_archive", "metadata_update", "denied_create")
    ms = {op: {setup: round(statistics.median(r[op] for r in rounds), 1) for setup, rounds in results.items()}
          for op in ops}
    low = {op: {setup: round(min(r[op] for r in rounds), 1) for setup, rounds in results.items()} for op in ops}
    ratios = {op: {setup: round(ms[op][setup] / ms[op]["crd_only"], 2) for setup in ("cos_webhook", "noop_webhook")}
              for op in ops}
    print(json.dumps({
        "bench": "admission_cluster", "server": version, "rounds": args.rounds,
        "object": "maximal COS: 20 phases x 50 inline Deployments",
        "median_ms": ms, "ratio_to_crd_only": ratios, "min_ms": low, "targets": TARGETS,
        "within_targets": {op: ratios[op]["cos_webhook"] <= limit for op, limit in TARGETS.items()},
        "webhook_reviews_per_operation": webhook_calls,
        "note": "indicative: a shared machine; the API server, etcd, the webhooks and this client share its cores",
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
