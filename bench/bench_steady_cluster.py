"""Steady state on a real API server: a COS of 210 mixed-shape objects (empty maps and lists, stringData,
defaults, int-or-string, quantities, nulls), then 60 s during which the COS is touched every 10 s (each
touch makes the reconciler walk every object), counting the reconciler-relevant writes and dry runs with the
API server's own ``apiserver_request_total``. Prints JSON; expected: zero writes, zero dry runs.

    python -m bench.bench_steady_cluster --kubeconfig PATH [--seconds 60] [--service-account]

``--service-account``: the COS names a ServiceAccount (every right in the bench's namespace, nothing else), so
its objects are written with that ServiceAccount's token; the steady state must then also ask for no token
(``token_requests``, counted by the reconciler, must be 0).

Without a kubeconfig (flag or ``COS_E2E_KUBECONFIG``) it prints a JSON ``skipped`` reason and exits 0. The
ClusterObjectSet CRD must be installed; no other COS reconciler may run against the cluster meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: python bench/...

from common.cluster.kube import KubeCluster
from common.contract.conditions import settled
from reconciler.process import ProcessConfig, ReconcilerProcess
from tests.support import mixed_shapes

COS_API, KIND = "olm.operatorframework.io/v1", "ClusterObjectSet"


def _metrics(kube: KubeCluster) -> str:
    resp = kube._open("GET", "/metrics", None, None, "", 30)
    return str(resp.read().decode() if hasattr(resp, "read") else resp.data.decode())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig", default=os.environ.get("COS_E2E_KUBECONFIG"))
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--service-account", action="store_true",
                    help="the COS names a ServiceAccount allowed everything in the bench's namespace")
    args = ap.parse_args()
    if not args.kubeconfig:
        print(json.dumps({"skipped": "no cluster: pass --kubeconfig or set COS_E2E_KUBECONFIG"}))
        return 0
    try:
        kube = KubeCluster.from_kubeconfig(args.kubeconfig)
        kube.resource(COS_API, KIND)
    except Exception as e:  # unreachable cluster, no CRD
        print(json.dumps({"skipped": f"cluster not usable: {type(e).__name__}: {e}"}))
        return 0
    run = uuid.uuid4().hex[:6]
    ns, sys_ns, name = f"cos-bench-{run}", f"cos-bench-sys-{run}", f"shapes-{run}"
    for n in (ns, sys_ns):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}})
    meta: dict[str, object] = {"name": name}
    if args.service_account:
        rbac, sa = "rbac.authorization.k8s.io/v1", "cos-bench-installer"
        kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns}})
        kube.create({"apiVersion": rbac, "kind": "Role", "metadata": {"name": sa, "namespace": ns},
                     "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]})
        kube.create({"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": sa, "namespace": ns},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa},
                     "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]})
        meta["annotations"] = {"olm.operatorframework.io/service-account-name": sa,
                               "olm.operatorframework.io/service-account-namespace": ns}
    proc = ReconcilerProcess(kube, ProcessConfig(workers=4, system_namespace=sys_ns))
    proc.start()
    result: dict[str, object] = {"objects": len(mixed_shapes.objects(ns)), "service_account": args.service_account}
    try:
        start = time.monotonic()
        kube.create({"apiVersion": COS_API, "kind": KIND, "metadata": meta,
                     "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent",
                              "phases": mixed_shapes.phases(ns)}})
        while not settled(kube.get(COS_API, KIND, name)):
            if time.monotonic() - start > 300:
                raise SystemExit(json.dumps({"error": "the COS did not roll out in 300 s"}))
            time.sleep(1)
        result["rollout_seconds"] = round(time.monotonic() - start, 1)
        time.sleep(15)
        before = mixed_shapes.apiserver_writes(_metrics(kube), mixed_shapes.RESOURCES)
        reconciles = proc.reconcile_count
        tokens = sum(proc.tokens.issued.values())
        end = time.monotonic() + args.seconds
        tick = 0
        while time.monotonic() < end:
            kube.merge_patch(COS_API, KIND, name, None, {"metadata": {"annotations": {"bench/tick": str(tick)}}})
            tick += 1
            threading.Event().wait(min(10.0, max(0.0, end - time.monotonic())))
        after = mixed_shapes.apiserver_writes(_metrics(kube), mixed_shapes.RESOURCES)
        delta = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after if after[k] != before.get(k, 0.0)}
        result.update(seconds=args.seconds, reconciles=proc.reconcile_count - reconciles,
                      token_requests=sum(proc.tokens.issued.values()) - tokens,
                      token_requests_during_rollout=tokens,
                      writes=sum(v for k, v in delta.items() if not k.endswith("dry-run")),
                      dry_runs=sum(v for k, v in delta.items() if k.endswith("dry-run")), by_request=delta,
                      counted_by="apiserver_request_total (whole cluster, main resources of the COS's kinds)")
    finally:
        kube.delete(COS_API, KIND, name)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                kube.get(COS_API, KIND, name)
                time.sleep(1)
            except Exception:
                break
        proc.stop()
        for n in (ns, sys_ns):
            kube.delete("v1", "Namespace", n)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
