"""Bench on a real API server: many ClusterObjectSets at once, and how time, memory and requests grow.

For each ``--counts`` value N (default 50 100 200), a fresh ``cos-reconciler`` process (the real CLI, as a
subprocess, default flags) is started against the cluster; once idle its resident memory (VmRSS) is read, then N
COSs of ``--objects`` ConfigMaps each (default 50, in ``--phases`` 5) are created at once. Measured: seconds
from the first create to every COS settled (Succeeded, seen through a watch of them), the process's VmRSS then,
the requests it sent (its own ``cos_api_requests_total``), the reconciles it ran per COS (``cos_reconciles_total``),
its CPU seconds (user + system, from ``/proc``) and per object, memory per cached object (RSS settled minus idle,
over the objects it manages) and
``--steady-seconds`` of steady state afterwards (requests sent: should be none). The floor of the same run is
the 8-connection create floor of N x objects ConfigMaps (plain creates, same client library), so
``ratio_to_floor`` says how far the reconciler is from what the server can take, and ``cpu_ratio_to_floor_client``
how its CPU compares with that floor client's (this process's CPU while it creates them).

``--rounds R`` (default 1) measures each size R times, the settle and its floor in turn: times and CPU are then
the medians of the rounds (their samples listed), ``paired_ratio_to_floor`` the median of each round's own ratio;
memory, requests and reconciles are the last round's, and only the last round waits out the steady state. One
sample of each is this machine's mood as much as the reconciler's: on a shared 2-core machine single rounds of the
same code gave 1.73x to 2.45x in one afternoon.

Needs a disposable cluster (``--kubeconfig``, ``$COS_BENCH_KUBECONFIG`` or ``$COS_E2E_KUBECONFIG``); without one
it prints ``{"skipped": "<why>"}`` and exits 0. Do not run it while another COS reconciler is active there.
Prints one JSON document.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_rollout_cluster import (  # the same cluster helpers
    cos_manifest,
    delete_configmaps,
    delete_namespace,
    ensure_crd,
    floor,
    kubeconfig_or_skip,
    make_namespace,
    wait,
)

from common.cluster.interface import ApiError, NotFound
from common.cluster.kube import KubeCluster
from common.contract import api
from common.contract.conditions import settled
from common.runtime.cache import Informer, InformerKey
from common.runtime.parallel import RETRY_JITTER, WATCH_CONNECTIONS
from reconciler.process import tune_collector
from reconciler.watches import MANAGED_SELECTOR

METRIC = re.compile(r'^cos_api_requests_total\{(?P<labels>[^}]*)\} (?P<value>[0-9.e+]+)$')


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"bench: no VmRSS for pid {pid}")


def cpu_seconds_of(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape(port: int) -> str:
    """The reconciler's /metrics page, read once for every figure taken from it at one moment."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return str(resp.read().decode())


def requests_by_verb(page: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in page.splitlines():
        m = METRIC.match(line)
        if m:
            verb = re.search(r'verb="([^"]*)"', m.group("labels"))
            key = verb.group(1) if verb else "?"
            out[key] = out.get(key, 0) + int(float(m.group("value")))
    return out


RECONCILES = re.compile(r'^cos_reconciles_total\{[^}]*\} (?P<value>[0-9.e+]+)$')


def reconciles(page: str) -> int:
    """Reconciles the process ran so far (its ``cos_reconciles_total``, all results)."""
    return sum(int(float(m.group("value"))) for line in page.splitlines() if (m := RECONCILES.match(line)))


def diff(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in sorted(after.items()) if v - before.get(k, 0)}


def metrics_up(port: int) -> bool:
    try:
        scrape(port)
    except OSError:
        return False
    return True


def start_reconciler(kubeconfig: str, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "reconciler.cli", "--kubeconfig", kubeconfig,
                             "--health-bind", "0", "--metrics-bind", f"127.0.0.1:{port}",
                             "--log-level", "warning"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def remove_all(admin: KubeCluster, names: list[str], ns: str) -> None:
    """Without the reconciler: delete the COSs' ConfigMaps in one call, then drop the finalizers and delete the
    COSs. In that order the garbage collector has no dependents left to read back when the owners go (the other
    way round it read all 10,000 back, at 40 a second, under the floor measured next)."""
    def drop(name: str) -> None:
        with contextlib.suppress(NotFound):
            admin.merge_patch(api.API_VERSION, api.KIND, name, None, {"metadata": {"finalizers": None}})
            admin.delete(api.API_VERSION, api.KIND, name)

    delete_configmaps(admin, ns, MANAGED_SELECTOR)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(drop, names))


class Settled:
    """Watch handler: the names of the COSs seen settled. The bench watches instead of listing every COS from
    etcd each half second, which cost the API server a fifth of its CPU during the run (its pprof profile) and
    so slowed the reconciler it measures; a watch event costs the server almost nothing."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def __call__(self, _key: InformerKey, etype: str, obj: dict[str, Any], _prev: dict[str, Any] | None) -> None:
        name = obj["metadata"]["name"]
        if etype != "DELETED" and settled(obj):
            self.names.add(name)
        else:
            self.names.discard(name)


def one_size(admin: KubeCluster, kubeconfig: str, port: int, count: int, objects: int, phases: int,
             steady_seconds: float) -> dict[str, Any]:
    ns = make_namespace(admin, "cos-scale")
    run = uuid.uuid4().hex[:6]
    selector = f"cos-bench-scale={run}"
    names = [f"scale-{run}-{i:03d}" for i in range(count)]
    manifests = []
    for name in names:
        m = cos_manifest(name, ns, objects, phases)
        m["metadata"]["labels"] = {"cos-bench-scale": run}
        manifests.append(m)
    proc = start_reconciler(kubeconfig, port)
    try:
        wait(lambda: metrics_up(port), 60, "the reconciler's /metrics", 0.2)
        time.sleep(3.0)  # caches synced, nothing to do: idle
        idle = rss_mib(proc.pid)
        page = scrape(port)
        before, reconciles_before = requests_by_verb(page), reconciles(page)
        cpu0 = cpu_seconds_of(proc.pid)
        done = Settled()
        watcher = Informer(admin, InformerKey(api.API_VERSION, api.KIND, label_selector=selector), done).start()
        try:
            wait(watcher.synced.is_set, 60, "the bench's COS watch")
            start = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(admin.create, manifests))
            wait(lambda: len(done.names) == count, 1800, f"{count} COSs to settle", 0.05)
            took = time.monotonic() - start
        finally:
            watcher.stop()
        cpu = cpu_seconds_of(proc.pid) - cpu0
        time.sleep(3.0)  # the last events and status writes
        settled_rss = rss_mib(proc.pid)
        page = scrape(port)
        after, reconciles_run = requests_by_verb(page), reconciles(page) - reconciles_before
        steady: dict[str, int] = {}
        if steady_seconds > 0:
            time.sleep(steady_seconds)
            steady = diff(requests_by_verb(scrape(port)), after)
        cached = count * objects
        return {
            "cos": count, "objects": cached, "settle_seconds": round(took, 2),
            "client_cpu_seconds": round(cpu, 2), "client_cpu_ms_per_object": round(cpu * 1000 / cached, 3),
            "rss_mib": {"idle": round(idle, 1), "settled": round(settled_rss, 1)},
            "kib_per_cached_object": round((settled_rss - idle) * 1024 / cached, 2),
            "requests": diff(after, before), "requests_total": sum(diff(after, before).values()),
            "reconciles_per_cos": round(reconciles_run / count, 2),
            "steady_state": {"seconds": steady_seconds, "requests": steady},
        }
    finally:
        stop(proc)
        remove_all(admin, names, ns)
        with contextlib.suppress(ApiError):
            delete_namespace(admin, ns)


def growth(rows: list[dict[str, Any]], key: str) -> float:
    first, last = rows[0], rows[-1]
    get = (lambda r: r["rss_mib"]["settled"] - r["rss_mib"]["idle"]) if key == "rss" else (lambda r: r[key])
    return round(get(last) / get(first), 2) if get(first) else 0.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kubeconfig", default=None)
    p.add_argument("--counts", type=int, nargs="+", default=[50, 100, 200])
    p.add_argument("--objects", type=int, default=50, help="ConfigMaps per COS (default: %(default)s)")
    p.add_argument("--phases", type=int, default=5)
    p.add_argument("--port", type=int, default=int(os.environ.get("COS_BENCH_METRICS_PORT", "19210")),
                   help="loopback port for the reconciler's /metrics (default: %(default)s)")
    p.add_argument("--steady-seconds", type=float, default=30.0)
    p.add_argument("--rounds", type=int, default=1, help="settles and floors per size, taking turns; medians "
                                                           "reported (default: %(default)s)")
    args = p.parse_args()
    if args.rounds < 1:
        p.error(f"--rounds must be at least 1, got {args.rounds}")
    path = kubeconfig_or_skip(args.kubeconfig)
    admin = KubeCluster.from_kubeconfig(path, pool_size=8 + WATCH_CONNECTIONS, retry_jitter=RETRY_JITTER)
    tune_collector()   # the floor client runs under the collector settings cos-reconciler runs under
    ensure_crd(admin)
    rows = []
    for count in args.counts:
        settles: list[float] = []
        cpus: list[float] = []
        floors: list[float] = []
        floor_cpu: list[float] = []
        for n in range(args.rounds):
            last = n == args.rounds - 1
            row = one_size(admin, path, args.port, count, args.objects, args.phases,
                           args.steady_seconds if last else 0.0)
            settles.append(row["settle_seconds"])
            cpus.append(row["client_cpu_seconds"])
            ns = make_namespace(admin, "cos-floor")
            try:
                floors.append(round(floor(admin, ns, count * args.objects, 8, floor_cpu), 2))
            finally:
                delete_namespace(admin, ns)
            print(json.dumps({"cos": count, "round": n + 1, "settle_seconds": settles[-1],
                              "floor_8_connections_seconds": floors[-1]}), file=sys.stderr)
        objects = count * args.objects
        cpu, fcpu = statistics.median(cpus), statistics.median(floor_cpu)
        row["settle_seconds"] = round(statistics.median(settles), 2)
        row["client_cpu_seconds"] = round(cpu, 2)
        row["client_cpu_ms_per_object"] = round(cpu * 1000 / objects, 3)
        row["floor_8_connections_seconds"] = round(statistics.median(floors), 2)
        row["ratio_to_floor"] = round(row["settle_seconds"] / row["floor_8_connections_seconds"], 2)
        row["floor_client_cpu_seconds"] = round(fcpu, 2)
        row["floor_client_cpu_ms_per_object"] = round(fcpu * 1000 / objects, 3)
        row["cpu_ratio_to_floor_client"] = round(cpu / fcpu, 2)
        if args.rounds > 1:
            row["rounds"] = args.rounds
            row["samples"] = {"settle_seconds": settles, "floor_8_connections_seconds": floors,
                              "client_cpu_seconds": [round(c, 2) for c in cpus],
                              "floor_client_cpu_seconds": [round(c, 2) for c in floor_cpu]}
            row["paired_ratio_to_floor"] = round(statistics.median(s / f for s, f in zip(settles, floors,
                                                                                            strict=True)), 2)
        rows.append(row)
    out = {"bench": "scale_cluster", "objects_per_cos": args.objects, "phases_per_cos": args.phases,
           "sizes": rows}
    if len(rows) > 1:
        out["growth_first_to_last"] = {
            "cos": round(rows[-1]["cos"] / rows[0]["cos"], 2), "settle_seconds": growth(rows, "settle_seconds"),
            "rss_above_idle": growth(rows, "rss"), "requests_total": growth(rows, "requests_total")}
    admin.close()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
