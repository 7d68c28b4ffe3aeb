"""Teardown on a real API server: what the reconciler sends to tear a COS down, and whether it lets go too early.

Two COSs of the shape issue 16 was found with, each in its own namespace: phase ``namespace`` (the Namespace),
``config-0`` and ``config-1`` (100 ConfigMaps in it), ``accounts`` (10 ServiceAccounts), ``deploy`` (5
Deployments scaled to zero). The
reconciler runs in this process; every request it sends is counted by verb and HTTP code (its client's
request observer), and every DELETE by object, so a DELETE sent twice shows. For each COS:

1. rollout to Succeeded;
2. steady state: ``--steady-seconds`` (default 30) with the COS re-enqueued every 5 s: the target is no request
   at all (reads come from the watch caches);
3. teardown, the first COS deleted, the second archived, until its finalizer is gone: requests by verb and
   code, DELETEs (target: one per object, none repeated, no 404/409), seconds, and whether the COS let go
   while its Namespace was still there (looked at every 0.2 s, the COS first, then the Namespace: the target
   is never).

Prints JSON. ``python bench/bench_teardown_cluster.py --kubeconfig PATH``; without a kubeconfig (flag or
``COS_E2E_KUBECONFIG``) it prints a JSON ``skipped`` reason and exits 0. The ClusterObjectSet CRD must be
installed; no other COS reconciler may run against the cluster meanwhile.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: python bench/...

from common.cluster.interface import NotFound
from common.cluster.kube import KubeCluster
from common.contract.conditions import settled
from reconciler.process import ProcessConfig, ReconcilerProcess

COS_API, KIND = "olm.operatorframework.io/v1", "ClusterObjectSet"
FINALIZER = "olm.operatorframework.io/teardown"


def cos_body(name: str, ns: str) -> dict[str, Any]:
    cms = [{"object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:03d}", "namespace": ns},
                       "data": {"index": str(i)}}} for i in range(100)]
    sas = [{"object": {"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": f"sa-{i:02d}", "namespace": ns}}} for i in range(10)]
    pod = {"containers": [{"name": "c", "image": "example.invalid/w:1"}]}
    deps = [{"object": {"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": f"web-{i}", "namespace": ns},
                        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": f"web-{i}"}},
                                 "template": {"metadata": {"labels": {"app": f"web-{i}"}}, "spec": pod}}}}
            for i in range(5)]
    return {"apiVersion": COS_API, "kind": KIND, "metadata": {"name": name},
            "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent", "phases": [
                {"name": "namespace", "objects": [{"object": {"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": ns}}}]},
                {"name": "config-0", "objects": cms[:50]},   # at most 50 objects a phase
                {"name": "config-1", "objects": cms[50:]},
                {"name": "accounts", "objects": sas},
                {"name": "deploy", "objects": deps}]}}


class Recorder:
    """The reconciler's requests, by (verb, code), and its DELETEs by object."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.deletes: list[str] = []
        self.lock = threading.Lock()

    def observe(self, verb: str, code: int) -> None:
        with self.lock:
            self.requests[f"{verb} {code}"] += 1

    def reset(self) -> tuple[dict[str, int], list[str]]:
        with self.lock:
            out = dict(sorted(self.requests.items())), list(self.deletes)
            self.requests.clear()
            self.deletes.clear()
        return out


def exists(kube: KubeCluster, api_version: str, kind: str, name: str) -> bool:
    try:
        kube.get(api_version, kind, name)
        return True
    except NotFound:
        return False


def released(admin: KubeCluster, name: str, how: str) -> bool:
    try:
        cos = admin.get(COS_API, KIND, name)
    except NotFound:
        return True
    return how == "archive" and FINALIZER not in (cos["metadata"].get("finalizers") or []) and settled(cos)


def wait(cond: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(json.dumps({"error": f"timed out after {timeout:.0f}s waiting for {what}"}))
        time.sleep(0.5)


def one(admin: KubeCluster, proc: ReconcilerProcess, rec: Recorder, name: str, ns: str, how: str,
        steady_seconds: float) -> dict[str, Any]:
    rec.reset()
    started = time.monotonic()
    admin.create(cos_body(name, ns))
    wait(lambda: settled(admin.get(COS_API, KIND, name)), 300, f"{name} to roll out")
    rollout_seconds = time.monotonic() - started
    wait(proc.queue.idle, 60, "an idle queue")
    time.sleep(2.0)   # the controllers' last status writes, and their watch events
    rollout, _ = rec.reset()

    end = time.monotonic() + steady_seconds
    reconciles = proc.reconcile_count
    while time.monotonic() < end:
        proc.queue.add(name)
        time.sleep(min(5.0, max(0.0, end - time.monotonic())))
    wait(proc.queue.idle, 60, "an idle queue")
    steady, _ = rec.reset()
    steady_reconciles = proc.reconcile_count - reconciles

    reconciles = proc.reconcile_count
    started = time.monotonic()
    if how == "delete":
        admin.delete(COS_API, KIND, name)
    else:
        admin.merge_patch(COS_API, KIND, name, None, {"spec": {"lifecycleState": "Archived"}})
    early = False
    while True:   # the COS first, then the Namespace: a COS released while its Namespace is there is too early
        done = released(admin, name, how)
        ns_there = exists(admin, "v1", "Namespace", ns)
        if done:
            early = ns_there
            break
        if time.monotonic() - started > 300:
            raise SystemExit(json.dumps({"error": f"{name}: the teardown did not finish in 300 s"}))
        time.sleep(0.2)
    teardown_seconds = time.monotonic() - started
    wait(lambda: not exists(admin, "v1", "Namespace", ns), 300, f"namespace {ns} to go")
    wait(proc.queue.idle, 60, "an idle queue")
    time.sleep(1.0)
    teardown, deletes = rec.reset()
    objects = sum(len(p["objects"]) for p in cos_body(name, ns)["spec"]["phases"])
    return {
        "objects": objects, "rollout_seconds": round(rollout_seconds, 1), "rollout_requests": rollout,
        "steady_state": {"seconds": steady_seconds, "reconciles": steady_reconciles, "requests": steady},
        "teardown": {"how": how, "seconds": round(teardown_seconds, 1),
                     "reconciles": proc.reconcile_count - reconciles, "requests": teardown,
                     "deletes": len(deletes), "repeated_deletes": len(deletes) - len(set(deletes)),
                     "let_go_while_its_namespace_was_there": early},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kubeconfig", default=os.environ.get("COS_E2E_KUBECONFIG"))
    ap.add_argument("--steady-seconds", type=float, default=30.0)
    args = ap.parse_args()
    if not args.kubeconfig:
        print(json.dumps({"skipped": "no cluster: pass --kubeconfig or set COS_E2E_KUBECONFIG"}))
        return 0
    try:
        admin = KubeCluster.from_kubeconfig(args.kubeconfig)
        admin.resource(COS_API, KIND)
    except Exception as e:  # unreachable cluster, no CRD
        print(json.dumps({"skipped": f"cluster not usable: {type(e).__name__}: {e}"}))
        return 0
    rec = Recorder()
    kube = KubeCluster.from_kubeconfig(args.kubeconfig, observer=rec.observe)
    sent_delete = kube.delete

    def delete(api_version: str, kind: str, name: str, namespace: str | None = None, **kw: Any) -> Any:
        with rec.lock:
            rec.deletes.append(f"{kind} {namespace or ''}/{name}")
        return sent_delete(api_version, kind, name, namespace, **kw)

    kube.delete = delete  # type: ignore[method-assign]
    run = uuid.uuid4().hex[:6]
    sys_ns = f"cos-bench-sys-{run}"
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sys_ns}})
    proc = ReconcilerProcess(kube, ProcessConfig(workers=4, system_namespace=sys_ns))
    proc.start()
    out: dict[str, Any] = {}
    try:
        for how in ("delete", "archive"):
            out[how] = one(admin, proc, rec, f"td-{how}-{run}", f"cos-bench-td-{how[0]}-{run}", how,
                           args.steady_seconds)
    finally:   # the reconciler still runs, so a COS left behind is torn down, not stuck on its finalizer
        names = [f"td-{how}-{run}" for how in ("delete", "archive")]
        for name in names:
            with contextlib.suppress(NotFound):
                admin.delete(COS_API, KIND, name)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(exists(admin, COS_API, KIND, n) for n in names):
            time.sleep(0.5)
        proc.stop()
        admin.delete("v1", "Namespace", sys_ns)
    out["targets_met"] = {
        how: {"steady_state_no_request": not r["steady_state"]["requests"],
              "one_delete_per_object": r["teardown"]["deletes"] == r["objects"]
              and r["teardown"]["repeated_deletes"] == 0,
              "no_404_409": not any(k.endswith((" 404", " 409")) for k in r["teardown"]["requests"]),
              "held_until_its_namespace_was_gone": not r["teardown"]["let_go_while_its_namespace_was_there"]}
        for how, r in out.items()}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
