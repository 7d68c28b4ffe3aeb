"""Bench: what the reconciler process costs the API server, and what its caches cost in memory.

Against the local fake API server (tests/support/fake_apiserver.py):

1. rollout: one ClusterObjectSet of 1,000 ConfigMaps (20 phases x 50) from creation to Succeeded, with
   the requests the server received, by verb;
2. steady state: then ``--steady-seconds`` (default 60) with nothing changing, the COS re-enqueued every
   5 s on top (as a periodic resync would), requests by verb: the targets are zero writes and zero lists;
3. memory: a ``cos-reconciler`` subprocess with 50 complete COSs of 200 objects each in its caches:
   resident memory (VmRSS), next to the same process idle with no COS measured in the same run;
4. restart: a second process over the same server state (what a restart or a leader failover sees): its
   first reconcile of the complete COS, requests by verb: the targets are one server-side apply dry run per
   object and zero writes (``reconciler.drift``: the new process remembers none of our writes);
5. teardown: that second process tears the deleted COS down (last phase first) until its finalizer goes:
   requests by verb, DELETEs sent twice for one object, 404/409 answers: the targets are one DELETE per
   object and none repeated or refused.

Prints one JSON document. ``--quick`` shrinks everything for a smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common.cluster.kube import KubeCluster
from common.contract.conditions import settled
from reconciler.process import ProcessConfig, ReconcilerProcess
from tests.support.fake_apiserver import FakeApiServer

WRITE_VERBS = ("create", "update", "patch", "apply", "delete")
COS_API = "olm.operatorframework.io/v1"


def big_cos(name: str, phases: int, per_phase: int, ns: str) -> dict:
    return {
        "apiVersion": COS_API, "kind": "ClusterObjectSet", "metadata": {"name": name},
        "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent", "phases": [
            {"name": f"phase-{p:02d}", "objects": [
                {"object": {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": f"{name}-{p:02d}-{o:02d}", "namespace": ns},
                            "data": {"index": str(o), "payload": "x" * 64}}}
                for o in range(per_phase)]}
            for p in range(phases)]},
    }


def wait(cond, timeout: float, what: str) -> float:
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout:
            raise SystemExit(f"bench: timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - start


def is_settled(server: FakeApiServer, name: str) -> bool:
    obj = server.get_object(COS_API, "ClusterObjectSet", name)
    return obj is not None and settled(obj)


def _split(server: FakeApiServer) -> tuple[int, int]:
    """(writes, dry runs) among the requests the server received."""
    writes = [r for r in list(server.requests) if r.verb in WRITE_VERBS]
    dry = sum(1 for r in writes if r.query.get("dryRun") == "All")
    return len(writes) - dry, dry


def rollout_and_steady(steady_seconds: float, phases: int, per_phase: int) -> dict:
    with FakeApiServer() as server, tempfile.TemporaryDirectory() as tmp:
        kube = KubeCluster.from_kubeconfig(server.write_kubeconfig(os.path.join(tmp, "kc")))
        proc = ReconcilerProcess(kube, ProcessConfig(workers=4))
        proc.start()
        wait(proc.caches.synced, 30, "the COS cache")
        server.clear_requests()
        server.put_object(big_cos("big", phases, per_phase, "bench"))
        took = wait(lambda: is_settled(server, "big"), 600, "the rollout")
        wait(lambda: proc.queue.idle() and proc.caches.synced(), 60, "an idle queue")
        rollout_counts = server.counts()
        reconciles_rollout = proc.reconcile_count

        time.sleep(1.0)  # let the last watch events land
        server.clear_requests()
        before = proc.reconcile_count
        end = time.monotonic() + steady_seconds
        while time.monotonic() < end:
            proc.queue.add("big")  # a resync: the engine re-checks everything, from the caches
            time.sleep(min(5.0, max(0.0, end - time.monotonic())))
        wait(proc.queue.idle, 60, "an idle queue")
        steady_counts = server.counts()
        steady_writes, steady_dry_runs = _split(server)
        steady_reconciles = proc.reconcile_count - before
        lists_total = sum(i.lists for i in proc.caches.informers())
        proc.stop()

        server.clear_requests()
        second = ReconcilerProcess(kube, ProcessConfig(workers=4))
        started = time.monotonic()
        second.start()
        wait(lambda: second.reconcile_count > 0 and second.queue.idle(), 600, "the restarted process")
        restart_seconds = time.monotonic() - started
        time.sleep(1.0)
        restart_counts = server.counts()
        restart_writes, restart_dry_runs = _split(server)

        server.clear_requests()
        reconciles = second.reconcile_count
        started = time.monotonic()
        server.delete_object(COS_API, "ClusterObjectSet", "big")   # the finalizer holds it: the teardown runs
        wait(lambda: server.get_object(COS_API, "ClusterObjectSet", "big") is None, 600, "the teardown")
        teardown_seconds = time.monotonic() - started
        wait(second.queue.idle, 60, "an idle queue")
        time.sleep(1.0)
        teardown_counts = server.counts()
        deletes = [r.path for r in list(server.requests) if r.method == "DELETE"]
        refused = sum(1 for r in list(server.requests) if r.status in (404, 409))
        teardown_reconciles = second.reconcile_count - reconciles
        second.stop()
        kube.close()
    objects = phases * per_phase
    return {
        "rollout": {
            "objects": objects, "seconds": round(took, 2), "reconciles": reconciles_rollout,
            "requests_by_verb": dict(sorted(rollout_counts.items())),
            "writes": sum(rollout_counts.get(v, 0) for v in WRITE_VERBS),
            "writes_per_object": round(sum(rollout_counts.get(v, 0) for v in WRITE_VERBS) / objects, 3),
            "objects_per_second": round(objects / took, 1),
        },
        "steady_state": {
            "seconds": steady_seconds, "reconciles": steady_reconciles,
            "requests_by_verb": dict(sorted(steady_counts.items())),
            "writes": steady_writes, "dry_runs": steady_dry_runs,
            "lists": steady_counts.get("list", 0),
            "informer_lists_since_start": lists_total,
        },
        "restart": {
            "seconds_to_idle": round(restart_seconds, 2),
            "requests_by_verb": dict(sorted(restart_counts.items())),
            "writes": restart_writes, "dry_runs": restart_dry_runs,
        },
        "teardown": {
            "seconds": round(teardown_seconds, 2), "reconciles": teardown_reconciles,
            "requests_by_verb": dict(sorted(teardown_counts.items())),
            "deletes": len(deletes), "repeated_deletes": len(deletes) - len(set(deletes)),
            "refused_404_409": refused,
        },
    }


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def memory(cos_count: int, per_cos: int) -> dict:
    with FakeApiServer(record=False, history=20_000) as server, tempfile.TemporaryDirectory() as tmp:
        kc = server.write_kubeconfig(os.path.join(tmp, "kc"))
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        with open(os.path.join(tmp, "log"), "w") as log:  # the child keeps its own descriptor
            proc = subprocess.Popen([sys.executable, "-m", "reconciler.cli", "--kubeconfig", kc, "--workers", "4",
                                     "--health-bind", "0", "--metrics-bind", "0", "--log-level", "warning"],
                                    cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            time.sleep(3.0)
            idle = rss_kib(proc.pid)
            phases = max(1, per_cos // 50)
            started = time.monotonic()
            for i in range(cos_count):
                server.put_object(big_cos(f"cos-{i:02d}", phases, per_cos // phases, f"ns-{i % 10}"))
            wait(lambda: all(is_settled(server, f"cos-{i:02d}") for i in range(cos_count)), 1800,
                 "all COSs to settle")
            took = time.monotonic() - started
            time.sleep(2.0)
            loaded = rss_kib(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
    return {"cos": cos_count, "objects_per_cos": per_cos, "objects_cached": cos_count * per_cos,
            "rollout_seconds": round(took, 1), "rss_idle_mib": round(idle / 1024, 1),
            "rss_loaded_mib": round(loaded / 1024, 1), "rss_ratio_to_idle": round(loaded / idle, 2),
            "kib_per_object": round((loaded - idle) / (cos_count * per_cos), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steady-seconds", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="small sizes, 5 s steady state")
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args()
    if args.quick:
        out = rollout_and_steady(5.0, 4, 25)
        if not args.skip_memory:
            out["memory"] = memory(5, 40)
    else:
        out = rollout_and_steady(args.steady_seconds, 20, 50)
        if not args.skip_memory:
            out["memory"] = memory(50, 200)
    steady = out["steady_state"]
    out["targets_met"] = {"steady_state_zero_writes": steady["writes"] == 0,
                          "steady_state_zero_relists": steady["lists"] == 0,
                          "steady_state_zero_dry_runs": steady["dry_runs"] == 0,
                          "restart_zero_writes": out["restart"]["writes"] == 0,
                          "restart_one_dry_run_per_object": out["restart"]["dry_runs"] == out["rollout"]["objects"],
                          "teardown_one_delete_per_object": out["teardown"]["deletes"] == out["rollout"]["objects"]
                          and out["teardown"]["repeated_deletes"] == 0 and out["teardown"]["refused_404_409"] == 0}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
