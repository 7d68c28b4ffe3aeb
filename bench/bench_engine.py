"""Engine benchmark: roll out a maximal COS (20 phases x 50 objects) against the in-memory API server.

Between reconciles the "workload controllers" mark every object ready (uncounted), as a real cluster would.
Prints JSON: requests by verb for the whole rollout (target: writes <= objects + phases + 10), requests for one
more reconcile of the complete COS (target: zero writes) and the CPU milliseconds of that steady-state
reconcile (target: <= 150 ms; the median of several runs, so one noisy neighbour does not decide it), and the
first reconcile after a restart (a fresh memory of our writes, see ``reconciler.drift``: target one apply
dry run per object and zero writes) with its CPU milliseconds, and the ordered teardown of the deleted COS
(requests by verb and reconciles until its finalizer goes; target: exactly one DELETE per object, no status
write, one finalizer patch).

Half of each phase is inline, half comes from refs into a gzip-compressed, immutable Secret per phase, and
each phase mixes Deployments (which need a controller to become ready) with ConfigMaps, Services and
ServiceAccounts.
"""

from __future__ import annotations

import base64
import gzip
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common.contract import conditions
from common.contract.api import API_VERSION, KIND, LABEL_OWNER_NAME
from common.testing.memcluster import MemCluster
from reconciler.engine import Memory, reconcile

PHASES, PER_PHASE = 20, 50
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def manifest(p: int, i: int) -> dict:
    name, ns = f"p{p:02d}-o{i:02d}", f"ns-{p % 4}"
    labels = {"app": name, "phase": str(p)}
    meta = {"name": name, "namespace": ns, "labels": labels}
    kind = i % 5
    if kind == 0:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": labels},
                                      "spec": {"containers": [{"name": "main", "image": f"registry/{name}:1.0",
                                                               "args": ["--port=8080", "--verbose"],
                                                               "ports": [{"containerPort": 8080}]}]}}}}
    if kind == 1:
        return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
                "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]}}
    if kind == 2:
        return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
            "data": {f"key{j}": f"value-{name}-{j}" * 4 for j in range(8)}}


def build(mc: MemCluster) -> None:
    phases = []
    for p in range(PHASES):
        entries, data = [], {}
        for i in range(PER_PHASE):
            m = manifest(p, i)
            if i % 2:
                key = m["metadata"]["name"]
                data[key] = base64.b64encode(gzip.compress(json.dumps(m).encode())).decode()
                entries.append({"ref": {"name": f"bundle-{p:02d}", "key": key}})
            else:
                entries.append({"object": m})
        mc.put({"apiVersion": "v1", "kind": "Secret", "immutable": True, "data": data,
                "metadata": {"name": f"bundle-{p:02d}", "namespace": "olmv1-system"}})
        phases.append({"name": f"phase-{p:02d}", "objects": entries})
    mc.put({"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": "bench-1", "labels": {LABEL_OWNER_NAME: "bench"},
                         "annotations": {"olm.operatorframework.io/bundle-version": "1.0.0"}},
            "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent",
                     "progressDeadlineMinutes": 60, "phases": phases}})


def mark_ready(mc: MemCluster) -> None:
    for d in mc.objects("apps/v1", "Deployment"):
        st = d.get("status") or {}
        if st.get("observedGeneration") != d["metadata"]["generation"]:
            n = d["spec"].get("replicas", 1)
            mc.set_status("apps/v1", "Deployment", d["metadata"]["name"], d["metadata"]["namespace"], {
                "observedGeneration": d["metadata"]["generation"], "replicas": n, "updatedReplicas": n,
                "availableReplicas": n, "conditions": [{"type": "Available", "status": "True"}]})


def succeeded(mc: MemCluster) -> bool:
    return conditions.succeeded(mc.peek(API_VERSION, KIND, "bench-1") or {})


def main() -> int:
    mc = MemCluster(clock=lambda: NOW)
    build(mc)
    objects = PHASES * PER_PHASE
    reconciles = 0
    started = time.process_time()
    while not succeeded(mc):
        result = reconcile(mc, "bench-1", now=NOW)
        reconciles += 1
        if result.error is not None or reconciles > 5 * PHASES:
            print(json.dumps({"error": str(result.error), "reconciles": reconciles}))
            return 1
        mark_ready(mc)
    rollout_cpu = (time.process_time() - started) * 1000
    rollout_requests = dict(sorted(mc.requests.items()))
    rollout_writes = mc.writes

    mc.reset_requests()
    reconcile(mc, "bench-1", now=NOW)
    steady_requests = dict(sorted(mc.requests.items()))
    steady_writes = mc.writes
    samples = []
    for _ in range(7):
        t = time.process_time()
        reconcile(mc, "bench-1", now=NOW)
        samples.append((time.process_time() - t) * 1000)
    steady_cpu = statistics.median(samples)

    # a restart: the new process remembers none of our writes, so each object costs one dry run, no write
    mc.reset_requests()
    t = time.process_time()
    restart = reconcile(mc, "bench-1", now=NOW, memory=Memory())
    restart_cpu = (time.process_time() - t) * 1000
    restart_requests = dict(sorted(mc.requests.items()))
    restart_writes = mc.writes
    restart_dry_runs = sum(n for verb, n in mc.requests.items() if verb.endswith(":dry-run"))
    restart_ok = restart.error is None and restart_writes == 0 and restart_dry_runs == objects

    # deletion: the ordered teardown, reconciled until the finalizer goes (each pass as the process would run it)
    mc.remove(API_VERSION, KIND, "bench-1")
    mc.reset_requests()
    teardown_reconciles = 0
    while mc.peek(API_VERSION, KIND, "bench-1") is not None:
        result = reconcile(mc, "bench-1", now=NOW)
        teardown_reconciles += 1
        if result.error is not None or teardown_reconciles > 5 * PHASES:
            print(json.dumps({"error": f"teardown: {result.error}", "reconciles": teardown_reconciles}))
            return 1
    deletes = [r for r in mc.log if r.verb == "delete"]
    teardown_requests = dict(sorted(mc.requests.items()))
    teardown_ok = len(deletes) == len(set(deletes)) == objects and mc.requests["update_status"] == 0

    budget = objects + PHASES + 10
    report = {
        "objects": objects,
        "phases": PHASES,
        "reconciles_to_complete": reconciles,
        "rollout_requests_by_verb": rollout_requests,
        "rollout_writes": rollout_writes,
        "rollout_write_budget": budget,
        "rollout_cpu_ms_total": round(rollout_cpu, 1),
        "steady_state_requests_by_verb": steady_requests,
        "steady_state_writes": steady_writes,
        "steady_state_cpu_ms_median": round(steady_cpu, 1),
        "steady_state_cpu_ms_samples": [round(s, 1) for s in samples],
        "steady_state_cpu_ms_target": 150,
        "after_restart_requests_by_verb": restart_requests,
        "after_restart_writes": restart_writes,
        "after_restart_dry_runs": restart_dry_runs,
        "after_restart_cpu_ms": round(restart_cpu, 1),
        "teardown_requests_by_verb": teardown_requests,
        "teardown_reconciles": teardown_reconciles,
        "teardown_deletes": len(deletes),
        "teardown_repeated_deletes": len(deletes) - len(set(deletes)),
        "targets_met": {"rollout_writes": rollout_writes <= budget, "steady_state_writes": steady_writes == 0,
                        "steady_state_cpu": steady_cpu <= 150, "after_restart_one_dry_run_per_object": restart_ok,
                        "teardown_one_delete_per_object": teardown_ok},
    }
    print(json.dumps(report, indent=2))
    return 0 if rollout_writes <= budget and steady_writes == 0 and restart_ok and teardown_ok else 1


if __name__ == "__main__":
    sys.exit(main())
