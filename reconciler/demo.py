"""``make demo`` on a real cluster: send the examples to the API server and run the reconciler on them.

``examples/demo.py`` (the webhook's demo) calls ``run_on_cluster`` when ``KUBECONFIG`` is set. The API
server does the admission (its CRD rules, and the webhook if it is deployed); this module installs the CRD
if it is missing, creates the system namespace and each example document (an object that already exists is
left as it is: COS revisions are immutable by design), then runs the reconciler in-process until every
ClusterObjectSet has settled (rolled out, archived or blocked) or the timeout passes, and prints where each
one stands. ``cluster_problem`` says, in one sentence, why a cluster cannot be used, so the demo can print
what it would need instead of a stack trace.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

import yaml

from common.cluster.interface import AlreadyExists, ApiError, NotFound
from common.cluster.kube import KubeCluster
from common.contract import api, conditions
from common.contract.conditions import settled
from reconciler.process import run_until_settled

ROOT = Path(__file__).resolve().parents[1]
CRD_FILE = ROOT / "deploy" / "crd" / "olm.operatorframework.io_clusterobjectsets.yaml"
CRD_API = "apiextensions.k8s.io/v1"


def cluster_problem(kubeconfig: str | None) -> str | None:
    """None when the cluster named by ``kubeconfig`` answers; else why not, in one sentence."""
    if not kubeconfig:
        return ("KUBECONFIG is not set: point it at a cluster (for example a kind or minikube cluster) to also "
                "run the reconciler against it")
    if not all(Path(p).is_file() for p in kubeconfig.split(":") if p):
        return f"KUBECONFIG={kubeconfig}: no such file"
    try:
        kube = KubeCluster.from_kubeconfig(kubeconfig.split(":")[0], max_retries=0, request_timeout=5)
        kube.list("v1", "Namespace", label_selector="cos-demo-reachability-check")
        kube.close()
    except ApiError as e:
        return f"the cluster in KUBECONFIG={kubeconfig} refused the demo ({e.code} {e.reason}: {e.message})"
    except Exception as e:  # broken kubeconfig, unreachable host, TLS trouble
        return f"the cluster in KUBECONFIG={kubeconfig} is not usable ({type(e).__name__}: {e})"
    return None


def documents(examples: Iterable[Path | dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects to create: each file's documents, or objects as given (``make demo`` passes what the
    webhook admitted, defaults applied, so a cluster without the webhook takes them as they are)."""
    out = []
    for example in examples:
        if isinstance(example, dict):
            out.append(example)
            continue
        for doc in yaml.safe_load_all(Path(example).read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc:
                out.append(doc)
    return out


def run_on_cluster(kubeconfig: str, examples: Iterable[Path | dict[str, Any]], *, timeout: float = 300.0,
                   system_namespace: str = api.DEFAULT_SYSTEM_NAMESPACE, out: TextIO = sys.stdout) -> int:
    """Create the examples on the cluster and reconcile them; 0 when every COS settled, else 1."""
    kube = KubeCluster.from_kubeconfig(kubeconfig.split(":", maxsplit=1)[0])
    try:
        kube.get(CRD_API, "CustomResourceDefinition", api.CRD_NAME)
    except NotFound:
        kube.create(yaml.safe_load(CRD_FILE.read_text(encoding="utf-8")))
        print(f"installed CustomResourceDefinition {api.CRD_NAME}", file=out)
    with contextlib.suppress(AlreadyExists):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": system_namespace}})
    names = []
    for doc in documents(examples):
        meta = doc.get("metadata") or {}
        namespace = meta.get("namespace")
        what = f"{doc.get('kind')} {namespace + '/' if namespace else ''}{meta.get('name')}"
        try:
            kube.create(doc)
            print(f"{what} created", file=out)
        except AlreadyExists:
            print(f"{what} exists (left as it is)", file=out)
        except (ApiError, ValueError) as e:
            print(f"{what} refused: {e}", file=out)
            continue
        if doc.get("kind") == api.KIND:
            names.append(str(meta.get("name")))
    print(f"running the reconciler for up to {timeout:.0f}s, until each of the {len(names)} ClusterObjectSet(s) "
          "has rolled out (every phase's objects ready: Deployments Available, which needs nodes that can pull "
          "and run their images), been archived, or is blocked...", file=out)
    ok, items = run_until_settled(kube, system_namespace=system_namespace, timeout=timeout)
    by_name = {c["metadata"]["name"]: c for c in items}
    for name in names:
        cos = by_name.get(name) or {}
        prog = conditions.condition(cos, conditions.PROGRESSING)
        avail = conditions.condition(cos, conditions.AVAILABLE)
        line = (f"{name}: Progressing={prog.get('status', '?')} {prog.get('reason', '')}: {prog.get('message', '')}"
                f" | Available={avail.get('status', '?')} {avail.get('reason', '')}")
        if avail.get("status") != "True" and avail.get("message"):
            line += f": {avail['message']}"  # names the object not ready yet
        print(line, file=out)
    kube.close()
    waiting = [n for n in names if not settled(by_name.get(n, {}))]
    if ok and not waiting:
        return 0
    print(f"not settled after {timeout:.0f}s: {', '.join(waiting) or 'other ClusterObjectSets on the cluster'} "
          "(Available above names what each still waits for)", file=out)
    return 1


def main(argv: list[str] | None = None) -> int:
    """``python -m reconciler.demo FILE...``: run the given examples on the cluster named by $KUBECONFIG."""
    import argparse
    import os

    ap = argparse.ArgumentParser(prog="python -m reconciler.demo", description=main.__doc__)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    kubeconfig = os.environ.get("KUBECONFIG")
    problem = cluster_problem(kubeconfig)
    if problem:
        print(f"not running the reconciler on a cluster: {problem}")
        return 2
    missing = [str(f) for f in args.files if not f.is_file()]
    if missing:
        print(f"no such file: {', '.join(missing)}")
        return 2
    assert kubeconfig is not None
    return run_on_cluster(kubeconfig, args.files, timeout=args.timeout)


if __name__ == "__main__":
    sys.exit(main())
