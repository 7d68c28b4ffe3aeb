"""Webhook speed, as JSON: the real handler against a no-op handler in the same server setup.

Both servers are ``cos-webhook`` under gunicorn with 2 workers (and the default threads per worker) over TLS
on loopback (a CA generated here); the no-op one (``--noop-handler``) parses and answers AdmissionReviews
without judging them, so the ratios isolate the cost of admission itself from TLS, HTTP and JSON transport.

(a) latency of a maximal ClusterObjectSet UPDATE (20 phases x 50 inline Deployment-sized objects, ~1 MiB,
    with oldObject) sent one at a time over a keep-alive connection: p50/p99, and p99 ratio to the no-op;
(b) throughput of small COS CREATEs from 16 concurrent keep-alive clients, and its ratio to the no-op;
(d) small COS CREATEs on 6 keep-alive connections while 2 more send maximal CREATEs back to back (8
    connections, as the API server holds under 8 concurrent writers): the small ones' p50/p99 and their
    ratios to the no-op's (issue 18: a worker short of threads queued them behind the large ones);
(c) in process, without HTTP or TLS: the route's own steps (parse, judge, encode) on a maximal CREATE, a
    maximal CREATE denied for one duplicate object, and a maximal UPDATE (archiving), for the validating and
    mutating routes, as medians; ``total_ratio_to_noop`` divides by the no-op handler's total (parse and
    encode only) measured in the same run.

Targets (2-core machine): maximal UPDATE p99 <= 150 ms; small-COS throughput >= 60% of the no-op's.
Run: python bench/bench_webhook.py [--latency-requests N] [--seconds S] [--rounds R] [--in-process-only]
"""

from __future__ import annotations

import argparse
import copy
import gc
import http.client
import json
import multiprocessing
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common.contract.admission import Config
from common.runtime import collector
from webhook import app as webhook_app
from webhook import review as wire
from webhook import server as webhook_server
from webhook import tls

TARGET_P99_MS = 150.0
TARGET_THROUGHPUT_RATIO = 0.60
CONCURRENCY = 16
CLIENT_PROCESSES = 4  # 16 connections spread over 4 processes, so the clients are not limited by one GIL


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def deployment(phase: int, index: int) -> dict[str, Any]:
    """A Deployment of typical size (~1 KiB serialized)."""
    name = f"app-{phase}-{index}"
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "bench", "labels": {"app": name, "tier": "backend"},
                     "annotations": {"example.com/owner": "team-bench"}},
        "spec": {
            "replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"serviceAccountName": "bench", "containers": [{
                    "name": "main", "image": "registry.example.com/team/app:1.2.3",
                    "args": ["--port=8080", "--log-level=info"],
                    "env": [{"name": f"SETTING_{i}", "value": f"value-{i}"} for i in range(9)],
                    "ports": [{"containerPort": 8080, "name": "http"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                  "limits": {"cpu": "1", "memory": "512Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 10},
                }]},
            },
        },
    }


def maximal_cos() -> dict[str, Any]:
    return {
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "metadata": {"name": "bench-1"},
        "spec": {
            "revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent",
            "progressDeadlineMinutes": 30,
            "phases": [{"name": f"phase-{p}", "objects": [{"object": deployment(p, o)} for o in range(50)]}
                       for p in range(20)],
            "progressionProbes": [
                {"selector": {"type": "GroupKind", "groupKind": {"group": "apps", "kind": "Deployment"}},
                 "assertions": [{"type": "ConditionEqual",
                                 "conditionEqual": {"type": "Available", "status": "True"}}]}],
        },
    }


def small_cos(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "metadata": {"name": f"small-{i}"},
        "spec": {
            "revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent",
            "phases": [{"name": "deploy", "objects": [{"object": deployment(0, 0)},
                                                      {"object": {"apiVersion": "v1", "kind": "Service",
                                                                  "metadata": {"name": "app", "namespace": "bench"},
                                                                  "spec": {"ports": [{"port": 80}]}}}]}],
        },
    }


def review(obj: dict[str, Any], operation: str, old: dict[str, Any] | None = None) -> bytes:
    gvk = {"group": "olm.operatorframework.io", "version": "v1", "kind": "ClusterObjectSet"}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "0a1b2c3d-0000-4000-8000-000000000000", "kind": gvk, "requestKind": gvk,
        "resource": {"group": gvk["group"], "version": "v1", "resource": "clusterobjectsets"},
        "name": obj["metadata"]["name"], "operation": operation,
        "userInfo": {"username": "system:serviceaccount:olmv1-system:operator-controller"},
        "object": obj, "oldObject": old, "dryRun": False}}).encode()


class Server:
    def __init__(self, certs: tls.SelfSigned, noop: bool) -> None:
        self.port = free_port()
        self.ca_file = str(certs.ca_file)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        args = [sys.executable, "-m", "webhook.cli", "--cert-file", str(certs.cert_file), "--key-file",
                str(certs.key_file), "--bind", f"127.0.0.1:{self.port}", "--workers", "2",
                "--log-level", "warning"]
        if noop:
            args.append("--noop-handler")
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = connect(self.port, self.ca_file)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit("bench: cos-webhook did not start")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)


def connect(port: int, ca_file: str) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection("localhost", port, context=ssl.create_default_context(cafile=ca_file),
                                       timeout=60)


def post(conn: http.client.HTTPSConnection, path: str, body: bytes) -> dict[str, Any]:
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise SystemExit(f"bench: HTTP {resp.status} from {path}: {data[:200]!r}")
    return dict(json.loads(data)["response"])


def latency_samples(server: Server, body: bytes, requests: int) -> list[float]:
    conn = connect(server.port, server.ca_file)
    for _ in range(3):
        post(conn, "/validate/clusterobjectsets", body)
    samples = []
    for _ in range(requests):
        started = time.perf_counter()
        answer = post(conn, "/validate/clusterobjectsets", body)
        samples.append((time.perf_counter() - started) * 1000)
        if not answer["allowed"]:
            raise SystemExit(f"bench: maximal COS was denied: {answer['status']['message'][:300]}")
    conn.close()
    return samples


def summarize(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {"p50_ms": round(statistics.median(samples), 2),
            "p99_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.99))], 2),
            "max_ms": round(samples[-1], 2), "requests": len(samples)}


def _client(args: tuple[int, str, int, float, float]) -> int:
    """One client process: ``threads`` keep-alive connections posting small CREATEs until ``stop_at``."""
    import threading

    port, ca_file, threads, start_at, stop_at = args
    bodies = [review(small_cos(i), "CREATE") for i in range(threads)]
    counts = [0] * threads

    def run(slot: int) -> None:
        conn = connect(port, ca_file)
        post(conn, "/validate/clusterobjectsets", bodies[slot])  # handshake before the clock starts
        while time.time() < start_at:
            time.sleep(0.001)
        while time.time() < stop_at:
            post(conn, "/validate/clusterobjectsets", bodies[slot])
            counts[slot] += 1
        conn.close()

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts)


def throughput(server: Server, seconds: float) -> dict[str, float]:
    start_at = time.time() + 2.0
    per_process = CONCURRENCY // CLIENT_PROCESSES
    jobs = [(server.port, server.ca_file, per_process, start_at, start_at + seconds)] * CLIENT_PROCESSES
    with multiprocessing.get_context("spawn").Pool(CLIENT_PROCESSES) as pool:
        total = sum(pool.map(_client, jobs))
    return {"requests_per_second": round(total / seconds, 1), "requests": total}


MIXED_CONNECTIONS, MIXED_LARGE = 8, 2  # like the API server's pool under 8 concurrent writers, 2 of them large


def _mixed_client(args: tuple[int, str, bool, float, float]) -> list[float]:
    """One connection of the mixed load: maximal CREATEs back to back (``large``), or small CREATEs 20 ms
    apart, timed; returns the small ones' times in ms."""
    port, ca_file, large, start_at, stop_at = args
    body = review(maximal_cos(), "CREATE") if large else review(small_cos(0), "CREATE")
    conn = connect(port, ca_file)
    post(conn, "/validate/clusterobjectsets", body)  # handshake before the clock starts
    while time.time() < start_at:
        time.sleep(0.001)
    took: list[float] = []
    while time.time() < stop_at:
        started = time.perf_counter()
        post(conn, "/validate/clusterobjectsets", body)
        if not large:
            took.append((time.perf_counter() - started) * 1000)
            time.sleep(0.02)
    conn.close()
    return took


def mixed(server: Server, seconds: float) -> list[float]:
    """Small reviews while other connections of the same server stream maximal ones: what a worker short of
    threads (a small review queued behind large ones) or a worker's interpreter lock held too long costs."""
    start_at = time.time() + 2.0
    jobs = [(server.port, server.ca_file, i < MIXED_LARGE, start_at, start_at + seconds)
            for i in range(MIXED_CONNECTIONS)]
    with multiprocessing.get_context("spawn").Pool(MIXED_CONNECTIONS) as pool:
        return [ms for took in pool.map(_mixed_client, jobs) for ms in took]


def _median_ms(run: Any, repeat: int, best: dict[str, float] | None = None, name: str = "",
               setup: Any = None) -> float:
    """The median of ``repeat`` runs; the fastest goes into ``best`` (on a shared machine the minimum is
    the figure least disturbed by other load). With ``setup``, each run is given what it returns, made
    untimed just before (a review freshly parsed, as the server judges one)."""
    times = []
    for _ in range(repeat):
        args = () if setup is None else (setup(),)
        started = time.perf_counter()
        run(*args)
        times.append((time.perf_counter() - started) * 1000)
        del args
    if best is not None:
        best[name] = round(min(times), 2)
    return round(statistics.median(times), 2)


def in_process(repeat: int) -> dict[str, Any]:
    """(c): each step of a route as the Flask handler runs it (``webhook.review.parse``, the route's judge,
    ``webhook.review.encode``), with the collector set up as a worker sets it up after loading."""
    big = maximal_cos()
    denied = copy.deepcopy(big)
    denied["spec"]["phases"][-1]["objects"][-1] = copy.deepcopy(denied["spec"]["phases"][0]["objects"][0])
    archived = copy.deepcopy(big)
    archived["spec"]["lifecycleState"] = "Archived"
    cases = {"maximal_create": review(big, "CREATE"), "maximal_create_denied": review(denied, "CREATE"),
             "maximal_update": review(archived, "UPDATE", big)}
    config = Config()
    real = {r.path: r for r in webhook_app.routes(noop=False)}
    noop = {r.path: r for r in webhook_app.routes(noop=True)}
    gc.collect()
    threshold = gc.get_threshold()
    collector.tune_collector(webhook_server.YOUNG_COLLECTION_EVERY)
    out: dict[str, Any] = {}
    for path in ("/validate/clusterobjectsets", "/mutate/clusterobjectsets"):
        route, baseline = real[path], noop[path]
        for case, body in cases.items():
            parsed = wire.parse(body, route.expected)
            decision = route.judge(parsed.request, config)
            if case == "maximal_create_denied" and route.stage == "validate":
                assert not decision.allowed, "bench: the denied case was admitted"
            best: dict[str, float] = {}
            figures: dict[str, Any] = {
                "parse_ms": _median_ms(lambda body=body, route=route: wire.parse(body, route.expected), repeat,
                                       best, "parse_ms"),
                # each run judges a review parsed just before it, as a worker does: judging the same parsed
                # review again and again (its strings hashed, its memory in the caches) took a third less time
                "judge_ms": _median_ms(lambda fresh, route=route: route.judge(fresh.request, config), repeat, best,
                                       "judge_ms",
                                       setup=lambda body=body, route=route: wire.parse(body, route.expected)),
                "encode_ms": _median_ms(lambda parsed=parsed, d=decision: wire.encode(parsed.uid, d), repeat,
                                        best, "encode_ms"),
            }

            def total(r: Any = route, body: bytes = body) -> None:
                p = wire.parse(body, r.expected)
                wire.encode(p.uid, r.judge(p.request, config))

            figures["total_ms"] = _median_ms(total, repeat, best, "total_ms")
            figures["noop_total_ms"] = _median_ms(lambda b=baseline, body=body: total(b, body), repeat, best,
                                                  "noop_total_ms")
            figures["total_ratio_to_noop"] = round(figures["total_ms"] / figures["noop_total_ms"], 2)
            figures["best"] = {**best, "total_ratio_to_noop": round(best["total_ms"] / best["noop_total_ms"], 2)}
            out[f"{route.stage}_{case}"] = figures
    gc.unfreeze()
    gc.set_threshold(*threshold)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-requests", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=12.0, help="throughput time per server, all rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--in-process-repeat", type=int, default=30, help="samples per in-process figure")
    parser.add_argument("--mixed-seconds", type=float, default=12.0, help="(d) time per server, all rounds")
    parser.add_argument("--in-process-only", action="store_true", help="only (c): no servers started")
    args = parser.parse_args(argv)
    if args.in_process_only:
        print(json.dumps({"in_process": in_process(args.in_process_repeat)}, indent=2))
        return 0

    big_old = maximal_cos()
    big_new = copy.deepcopy(big_old)
    big_new["spec"]["lifecycleState"] = "Archived"
    big_body = review(big_new, "UPDATE", big_old)
    results: dict[str, Any] = {
        "maximal_cos_bytes": len(json.dumps(big_new, separators=(",", ":"))),
        "maximal_review_bytes": len(big_body),
    }
    # Both servers run side by side (an idle one costs nothing) and are measured in alternating rounds, so
    # a burst of background load on this shared machine hits both sides of each ratio alike.
    samples: dict[str, list[float]] = {"webhook": [], "noop": []}
    rates: dict[str, list[float]] = {"webhook": [], "noop": []}
    next_to_large: dict[str, list[float]] = {"webhook": [], "noop": []}
    per_round = max(1, args.latency_requests // args.rounds)
    with tempfile.TemporaryDirectory(prefix="cos-bench-") as tmp:
        certs = tls.write_self_signed(Path(tmp), ["localhost", "127.0.0.1"])
        servers = {"webhook": Server(certs, noop=False), "noop": Server(certs, noop=True)}
        try:
            for _ in range(args.rounds):
                for name, server in servers.items():
                    samples[name] += latency_samples(server, big_body, per_round)
                    rates[name].append(throughput(server, args.seconds / args.rounds)["requests_per_second"])
                    next_to_large[name] += mixed(server, args.mixed_seconds / args.rounds)
        finally:
            for server in servers.values():
                server.stop()
    for name in ("webhook", "noop"):
        results[f"{name}_maximal_update"] = summarize(samples[name])
        results[f"{name}_small_create"] = {
            "requests_per_second": round(statistics.median(rates[name]), 1),
            "per_round": rates[name], "clients": CONCURRENCY}
        results[f"{name}_small_next_to_large"] = summarize(next_to_large[name])
    results["small_next_to_large_ratio_to_noop"] = {
        q: round(results["webhook_small_next_to_large"][q] / results["noop_small_next_to_large"][q], 2)
        for q in ("p50_ms", "p99_ms")}
    p99 = results["webhook_maximal_update"]["p99_ms"]
    ratio_latency = p99 / results["noop_maximal_update"]["p99_ms"]
    ratio_tp = (results["webhook_small_create"]["requests_per_second"]
                / results["noop_small_create"]["requests_per_second"])
    results["maximal_update_p99_ratio_to_noop"] = round(ratio_latency, 2)
    results["small_create_throughput_ratio_to_noop"] = round(ratio_tp, 3)
    results["targets"] = {
        "maximal_update_p99_ms_max": TARGET_P99_MS, "maximal_update_p99_met": p99 <= TARGET_P99_MS,
        "small_create_throughput_ratio_min": TARGET_THROUGHPUT_RATIO,
        "small_create_throughput_met": ratio_tp >= TARGET_THROUGHPUT_RATIO,
    }
    results["in_process"] = in_process(args.in_process_repeat)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
