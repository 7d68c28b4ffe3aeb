"""Bench on a real API server: a 1,000-object rollout next to the server's own create floor, measured together.

Needs a disposable cluster: ``--kubeconfig`` or ``$COS_BENCH_KUBECONFIG`` (else ``$COS_E2E_KUBECONFIG``); without
one it prints ``{"skipped": "<why>"}`` and exits 0, like the e2e suite. Do not run it while another COS
reconciler is active on the cluster. Each round, in a namespace of its own run:

1. floor, one connection: ``--objects`` ConfigMap creates one after the other (``KubeCluster``, same client);
2. floor, ``--floor-connections`` (8) concurrent connections: the same creates over one shared pool;
3. the reconciler, in-process (caches synced first), for each ``--concurrency`` value: a COS of ``--objects``
   ConfigMaps in ``--phases`` phases, timed from the COS create to Succeeded=True seen through the watch,
   with the requests the reconciler sent by verb; then the reconciler stops and the COS and its objects are
   deleted directly (one collection delete).

The figures are medians over ``--rounds``; ``paired`` has the same ratios taken within each round (the rollout
against the floor timed just before it), then their median. The ratios compare the reconciler with both floors,
in time and in this process's CPU (``client_cpu_ms_per_object``: the reconciler's CPU per object next to the
floor client's, the same ``KubeCluster`` sending plain creates), and ``machine_busy_fraction``: the whole
machine's CPU busy over the window, from ``/proc/stat`` (near 1: saturated, the reconciler's CPU is then time
taken from the API server). ``rss_kib_per_cached_object``: the resident memory a rollout added, from the
reconciler's caches synced (empty) to Succeeded, over the objects it then caches. Then, with the
last COS rolled out, ``--steady-seconds`` of steady state (the COS re-enqueued every 5 s, as a resync would):
the requests sent, by verb, must be zero. Prints one JSON document.

``--identity``: whose rights the reconciler writes the objects with. ``process`` (the default): its own, as a
COS naming no ServiceAccount is written. ``service-account``: the COS names a ServiceAccount allowed to create,
patch and delete ConfigMaps in the bench's namespace, so every write carries its token (one TokenRequest per
reconciler process). ``both``: each round times both, one after the other (in alternating order), so the machine's
noise hits them alike; the result adds each ``service_account`` median's ratio to the ``process`` one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common.cluster.interface import AlreadyExists, ApiError, NotFound
from common.cluster.kube import KubeCluster
from common.contract import api, conditions
from common.runtime.parallel import RETRY_JITTER, WATCH_CONNECTIONS
from reconciler.process import ProcessConfig, ReconcilerProcess, tune_collector
from reconciler.watches import COS_KEY, MANAGED_SELECTOR

CRD_FILE = ROOT / "deploy" / "crd" / "olm.operatorframework.io_clusterobjectsets.yaml"
CRD_API = "apiextensions.k8s.io/v1"
BENCH_LABEL = "cos-bench"


class Counted:
    """A request observer: (verb, code) counts, thread-safe, resettable."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, verb: str, code: int) -> None:
        with self._lock:
            self.counts[verb] += 1

    def take(self) -> dict[str, int]:
        with self._lock:
            out = dict(self.counts)
            self.counts.clear()
        return out


def kubeconfig_or_skip(given: str | None) -> str:
    """The kubeconfig to use, or exit 0 with ``{"skipped": ...}`` when there is no usable cluster."""
    path = given or os.environ.get("COS_BENCH_KUBECONFIG") or os.environ.get("COS_E2E_KUBECONFIG")
    why = None
    if not path:
        why = ("set COS_BENCH_KUBECONFIG (or COS_E2E_KUBECONFIG, or pass --kubeconfig) to the kubeconfig of a "
               "disposable cluster to run this benchmark")
    elif not Path(path).is_file():
        why = f"kubeconfig {path}: no such file"
    else:
        try:
            kube = KubeCluster.from_kubeconfig(path, max_retries=0, request_timeout=5)
            kube.list("v1", "Namespace", label_selector="cos-bench-reachability-check")
            kube.close()
        except Exception as e:  # unreachable, refused, broken kubeconfig: all mean "skip"
            why = f"cluster in {path} not usable ({type(e).__name__}: {e})"
    if why:
        print(json.dumps({"skipped": why}))
        raise SystemExit(0)
    assert path is not None
    return path


def ensure_crd(kube: KubeCluster) -> None:
    try:
        kube.get(CRD_API, "CustomResourceDefinition", api.CRD_NAME)
    except NotFound:
        kube.create(yaml.safe_load(CRD_FILE.read_text(encoding="utf-8")))
    wait(lambda: _established(kube), 60, "the ClusterObjectSet CRD")


def _established(kube: KubeCluster) -> bool:
    crd = kube.get(CRD_API, "CustomResourceDefinition", api.CRD_NAME)
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def wait(cond: Callable[[], Any], timeout: float, what: str, every: float = 0.01) -> float:
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout:
            raise SystemExit(f"bench: timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)
    return time.monotonic() - start


def make_namespace(kube: KubeCluster, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": name, "labels": {BENCH_LABEL: "true"}}})
    return name


def delete_namespace(kube: KubeCluster, ns: str) -> None:
    with contextlib.suppress(NotFound):
        kube.delete("v1", "Namespace", ns)


def delete_configmaps(kube: KubeCluster, ns: str, selector: str) -> None:
    """One DELETE of the collection, then wait until the list is empty (no per-object deletes)."""
    kube.request("deletecollection", "DELETE", f"/api/v1/namespaces/{ns}/configmaps",
                 query={"labelSelector": selector})
    wait(lambda: not kube.list("v1", "ConfigMap", ns, label_selector=selector), 120, "ConfigMaps deleted", 0.2)


def configmap(ns: str, name: str, i: int, labels: dict[str, str] | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, **({"labels": labels} if labels else {})},
            "data": {"index": str(i), "payload": "x" * 64}}


BENCH_SERVICE_ACCOUNT = "cos-bench-installer"


def make_service_account(kube: KubeCluster, ns: str) -> None:
    """A ServiceAccount that may write exactly what the bench's COSs hold: ConfigMaps in ``ns``."""
    rbac = "rbac.authorization.k8s.io/v1"
    meta = {"name": BENCH_SERVICE_ACCOUNT, "namespace": ns}
    objs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": rbac, "kind": "Role", "metadata": meta,
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch", "delete"]}]},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": BENCH_SERVICE_ACCOUNT},
         "subjects": [{"kind": "ServiceAccount", "name": BENCH_SERVICE_ACCOUNT, "namespace": ns}]},
    ]
    for obj in objs:
        with contextlib.suppress(AlreadyExists):
            kube.create(obj)


def cos_manifest(name: str, ns: str, objects: int, phases: int, *, service_account: bool = False) -> dict:
    per = -(-objects // phases)
    meta: dict[str, Any] = {"name": name}
    if service_account:
        meta["annotations"] = {api.ANNOTATION_SERVICE_ACCOUNT_NAME: BENCH_SERVICE_ACCOUNT,
                               api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE: ns}
    return {
        "apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": meta,
        "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent", "phases": [
            {"name": f"phase-{p:02d}", "objects": [
                {"object": configmap(ns, f"{name}-{p:02d}-{o:03d}", p * per + o)}
                for o in range(min(per, objects - p * per))]}
            for p in range(phases) if p * per < objects]},
    }


def cpu_seconds() -> float:
    """CPU time of this process (user + system): the client side's share of a 2-core machine."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine since boot, from ``/proc/stat`` ((0, 0) where there is none).
    Busy over total for a window says whether the machine was saturated then: on a 2-core machine running the
    API server and etcd too, a client's CPU is then time taken from the server."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)   # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


class Busy:
    """The machine's busy fraction over a window: ``with Busy() as b: ...; b.fraction``."""

    def __enter__(self) -> Busy:
        self.start = machine_ticks()
        self.fraction = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        busy, total = machine_ticks()
        if total > self.start[1]:
            self.fraction = (busy - self.start[0]) / (total - self.start[1])


def floor(kube: KubeCluster, ns: str, objects: int, connections: int, cpu: list[float] | None = None,
          busy: list[float] | None = None) -> float:
    """Seconds to create ``objects`` ConfigMaps from ``connections`` threads over one client, then cleanup;
    the client's CPU seconds are appended to ``cpu``."""
    sel = "cos-bench-floor=true"
    items = [configmap(ns, f"floor-{i:04d}", i, {"cos-bench-floor": "true"}) for i in range(objects)]
    cpu0 = cpu_seconds()
    start = time.monotonic()
    with Busy() as machine:
        if connections == 1:
            for obj in items:
                kube.create(obj)
        else:
            with ThreadPoolExecutor(connections) as pool:
                list(pool.map(kube.create, items))
    took = time.monotonic() - start
    if cpu is not None:
        cpu.append(cpu_seconds() - cpu0)
    if busy is not None:
        busy.append(machine.fraction)
    delete_configmaps(kube, ns, sel)
    return took


def succeeded(cos: dict | None) -> bool:
    return conditions.succeeded(cos or {})


class Seen:
    """The reconciler's own watch handler, wrapped: notes the moment its COS watch delivers ``name`` with
    Succeeded=True (the object the watch decoded anyway: no polling, no extra copy of a 1,000-object COS)."""

    def __init__(self, handler: Any) -> None:
        self.handler, self.name, self.at = handler, "", 0.0
        self.done = threading.Event()

    def __call__(self, key: Any, etype: str, obj: dict[str, Any], prev: dict[str, Any] | None) -> None:
        self.handler(key, etype, obj, prev)
        if key == COS_KEY and etype != "DELETED" and self.name and \
                (obj.get("metadata") or {}).get("name") == self.name and succeeded(obj) and not self.done.is_set():
            self.at = time.monotonic()
            self.done.set()


def _first_namespace(cos: dict) -> str | None:
    """The namespace of a COS's first inline object, ``None`` for any other shape (a COS someone else left)."""
    try:
        return cos["spec"]["phases"][0]["objects"][0]["object"]["metadata"].get("namespace")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None


def rss_kib() -> int:
    """This process's resident memory (VmRSS), KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def rollout(kubeconfig: str, admin: KubeCluster, ns: str, objects: int, phases: int, concurrency: int,
            *, keep: bool = False, cpu: list[float] | None = None, service_account: bool = False,
            rss: list[int] | None = None, busy: list[float] | None = None,
            ) -> tuple[float, dict[str, int], ReconcilerProcess | None, Counted]:
    """The reconciler in-process: seconds from the COS create to Succeeded=True observed, requests by verb;
    its CPU seconds are appended to ``cpu``, and to ``rss`` the KiB of resident memory it added from its caches
    synced (empty) to the rollout done (its caches holding the COS and its objects)."""
    counted = Counted()
    kube = KubeCluster.from_kubeconfig(kubeconfig, observer=counted)
    proc = ReconcilerProcess(kube, ProcessConfig(workers=4, rollout_concurrency=concurrency))
    seen = Seen(proc.caches.handler)
    proc.caches.handler = seen   # before start: every informer is made with it
    tune_collector()   # as cos-reconciler does before it starts (main did it too, for the floor client)
    proc.start()
    wait(proc.caches.synced, 60, "the COS cache")
    name = seen.name = f"bench-{uuid.uuid4().hex[:6]}"
    counted.take()
    if rss is not None:
        rss.append(-rss_kib())
    cpu0 = cpu_seconds()
    start = time.monotonic()
    with Busy() as machine:
        admin.create(cos_manifest(name, ns, objects, phases, service_account=service_account))
        # The end is the moment the reconciler's COS watch delivers Succeeded=True (Seen): no polling interval in
        # the figure, and no copy of the COS made for the bench counted as the reconciler's CPU (of this process's
        # CPU in the window, only encoding the create is the bench's own).
        if not seen.done.wait(600):
            raise TimeoutError("timed out after 600s waiting for the rollout")
    took = seen.at - start
    if busy is not None:
        busy.append(machine.fraction)
    if cpu is not None:
        cpu.append(cpu_seconds() - cpu0)
    if rss is not None:
        rss.append(rss.pop() + rss_kib())
    wait(proc.queue.idle, 60, "an idle queue")
    time.sleep(0.5)
    counts = counted.take()
    if keep:
        return took, counts, proc, counted
    teardown(admin, proc, name, ns)
    return took, counts, None, counted


def teardown(admin: KubeCluster, proc: ReconcilerProcess, name: str, ns: str) -> None:
    """Stop the reconciler, then remove the COS's ConfigMaps with one collection delete and the COS (finalizer
    dropped): the rounds measure rollouts, not the reconciler's ordered teardown.

    The ConfigMaps go first: deleted after their owner, each of them is still a dependent in the garbage
    collector's graph when the COS goes, and kube-controller-manager reads every one of them back (1,000 GETs at
    its 40 a second) for the next 25 s, under the next round's floors and rollout."""
    proc.stop()
    proc.kube.close()
    delete_configmaps(admin, ns, MANAGED_SELECTOR)
    with contextlib.suppress(NotFound):
        admin.merge_patch(api.API_VERSION, api.KIND, name, None, {"metadata": {"finalizers": None}})
        admin.delete(api.API_VERSION, api.KIND, name)


def steady(proc: ReconcilerProcess, counted: Counted, name_of: Callable[[], list[str]], seconds: float) -> dict:
    counted.take()
    before = proc.reconcile_count
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for n in name_of():
            proc.queue.add(n)
        time.sleep(min(5.0, max(0.0, end - time.monotonic())))
    wait(proc.queue.idle, 30, "an idle queue")
    counts = counted.take()
    return {"seconds": seconds, "reconciles": proc.reconcile_count - before,
            "requests": counts, "requests_total": sum(counts.values())}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kubeconfig", default=None)
    p.add_argument("--objects", type=int, default=1000)
    p.add_argument("--phases", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--floor-connections", type=int, default=8)
    p.add_argument("--concurrency", type=int, nargs="+", default=[8, 1],
                   help="reconciler --rollout-concurrency values to time (default: 8 1)")
    p.add_argument("--steady-seconds", type=float, default=60.0)
    p.add_argument("--identity", choices=("process", "service-account", "both"), default="process",
                   help="write the objects with the reconciler's own rights, a ServiceAccount's token, or time "
                        "both each round (default: %(default)s)")
    args = p.parse_args()
    modes = {"process": [False], "service-account": [True], "both": [False, True]}[args.identity]
    path = kubeconfig_or_skip(args.kubeconfig)

    admin = KubeCluster.from_kubeconfig(path, pool_size=args.floor_connections + WATCH_CONNECTIONS,
                                        retry_jitter=RETRY_JITTER)
    tune_collector()   # the floor client runs under the collector settings cos-reconciler runs under
    ensure_crd(admin)
    ns = make_namespace(admin, "cos-bench")
    if True in modes:
        make_service_account(admin, ns)
    floors: dict[str, list[float]] = {"1": [], str(args.floor_connections): []}
    floor_cpu: dict[str, list[float]] = {"1": [], str(args.floor_connections): []}
    floor_busy: dict[str, list[float]] = {"1": [], str(args.floor_connections): []}
    keys = [(c, sa) for c in args.concurrency for sa in modes]
    runs: dict[tuple[int, bool], list[float]] = {k: [] for k in keys}
    run_cpu: dict[tuple[int, bool], list[float]] = {k: [] for k in keys}
    run_rss: dict[tuple[int, bool], list[int]] = {k: [] for k in keys}
    run_busy: dict[tuple[int, bool], list[float]] = {k: [] for k in keys}
    requests: dict[tuple[int, bool], dict[str, int]] = {}
    result: dict[str, Any] = {}
    try:
        for n in range(args.rounds):
            floors["1"].append(floor(admin, ns, args.objects, 1, floor_cpu["1"], floor_busy["1"]))
            fc = str(args.floor_connections)
            floors[fc].append(floor(admin, ns, args.objects, args.floor_connections, floor_cpu[fc],
                                     floor_busy[fc]))
            # with both identities, every other round times them in the other order: what the previous run
            # leaves the server busy with (the collection delete of its 1,000 objects) hits both alike
            for c, sa in (keys if n % 2 == 0 else [(c, sa) for c in args.concurrency for sa in reversed(modes)]):
                took, counts, _, _ = rollout(path, admin, ns, args.objects, args.phases, c, cpu=run_cpu[(c, sa)],
                                             service_account=sa, rss=run_rss[(c, sa)], busy=run_busy[(c, sa)])
                runs[(c, sa)].append(took)
                requests[(c, sa)] = counts
        f1 = statistics.median(floors["1"])
        fn = statistics.median(floors[str(args.floor_connections)])
        result = {
            "bench": "rollout_cluster", "objects": args.objects, "phases": args.phases, "rounds": args.rounds,
            "floor_seconds": {"1_connection": round(f1, 3),
                              f"{args.floor_connections}_connections": round(fn, 3),
                              "samples": {k: [round(x, 3) for x in v] for k, v in floors.items()},
                              "client_cpu_seconds": {k: round(statistics.median(v), 3)
                                                     for k, v in floor_cpu.items()},
                              "client_cpu_ms_per_object": {k: round(statistics.median(v) * 1000 / args.objects, 3)
                                                           for k, v in floor_cpu.items()},
                              "machine_busy_fraction": {k: round(statistics.median(v), 2)
                                                        for k, v in floor_busy.items()}},
            "rollout": {},
        }
        for (c, sa), samples in runs.items():
            med = statistics.median(samples)
            entry = {
                "seconds": round(med, 3), "samples": [round(x, 3) for x in samples],
                "ratio_to_1_connection_floor": round(med / f1, 2),
                f"ratio_to_{args.floor_connections}_connection_floor": round(med / fn, 2),
                "requests": requests[(c, sa)],
                "client_cpu_seconds": round(statistics.median(run_cpu[(c, sa)]), 3),
                "client_cpu_ms_per_object": round(statistics.median(run_cpu[(c, sa)]) * 1000 / args.objects, 3),
                f"client_cpu_ratio_to_{args.floor_connections}_connection_floor_client": round(
                    statistics.median(run_cpu[(c, sa)]) / statistics.median(floor_cpu[str(args.floor_connections)]),
                    2),
                # resident memory the rollout added (this process: the caches, the engine's memory of its writes)
                # over the objects it caches (the COS's objects; the COS itself holds them once more)
                "rss_kib_per_cached_object": round(statistics.median(run_rss[(c, sa)]) / args.objects, 2),
                # the whole machine's CPU busy over the rollout (the API server, etcd and this process): near 1,
                # the machine was saturated and a client's CPU is time taken from the server
                "machine_busy_fraction": round(statistics.median(run_busy[(c, sa)]), 2),
            }
            # the same ratios taken round by round (each rollout against the floor timed just before it), then
            # the median: a machine whose speed drifts over the run moves both sides of each ratio alike
            entry["paired"] = {
                f"ratio_to_{args.floor_connections}_connection_floor": round(statistics.median(
                    r / f for r, f in zip(samples, floors[str(args.floor_connections)], strict=True)), 2),
                f"client_cpu_ratio_to_{args.floor_connections}_connection_floor_client": round(statistics.median(
                    r / f for r, f in zip(run_cpu[(c, sa)], floor_cpu[str(args.floor_connections)], strict=True)), 2),
            }
            if sa and (c, False) in runs:
                entry["ratio_to_process_identity"] = round(med / statistics.median(runs[(c, False)]), 3)
            result["rollout"][f"concurrency_{c}" + ("_service_account" if sa else "")] = entry
        if args.steady_seconds > 0:
            c = args.concurrency[0]
            _, _, proc, counted = rollout(path, admin, ns, args.objects, args.phases, c, keep=True,
                                          service_account=modes[-1])
            assert proc is not None
            cos_inf = proc.caches.get(COS_KEY)
            assert cos_inf is not None
            # only this run's COS (one left behind by an interrupted run must not be touched or counted)
            names = [o["metadata"]["name"] for o in cos_inf.items() if _first_namespace(o) == ns]
            result["steady_state"] = steady(proc, counted, lambda: names, args.steady_seconds)
            teardown(admin, proc, names[0], ns)
    finally:
        with contextlib.suppress(ApiError, AlreadyExists):
            delete_namespace(admin, ns)
        admin.close()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
