"""The producer commands end to end through ``cosctl`` (common.cosctl.main) and the real client adapter
(common.cluster.kube) against the fake API server over HTTP: the exact requests publish, diff, rollback and
status --watch send, and ``kubectl cos`` finding the plugin."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import threading
from importlib.metadata import version
from pathlib import Path

import pytest

from common.contract import api
from common.cosctl import main
from common.cosctl._producer import user_agent
from tests.support.fake_apiserver import FakeApiServer

NS = api.DEFAULT_SYSTEM_NAMESPACE


@pytest.fixture
def bundle(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\ndata: {a: b}\n")
    return str(tmp_path / "b")


def test_publish_over_http_sends_secrets_then_cos_then_merge_patches(server, bundle, tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.setenv("KUBECONFIG", server.write_kubeconfig(str(tmp_path / "kubeconfig")))
    assert main(["publish", bundle, "--owner", "shop"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "ClusterObjectSet shop-1 (revision 1) created"
    (secret,) = server.objects("v1", "Secret")
    name = secret["metadata"]["name"]
    cos = server.get_object(api.API_VERSION, api.KIND, "shop-1")
    writes = [(r.method, r.path, r.content_type) for r in server.requests if r.method != "GET"]
    assert writes == [
        ("POST", f"/api/v1/namespaces/{NS}/secrets", "application/json"),
        ("POST", "/apis/olm.operatorframework.io/v1/clusterobjectsets", "application/json"),
        ("PATCH", f"/api/v1/namespaces/{NS}/secrets/{name}", "application/merge-patch+json"),
    ]
    assert secret["metadata"]["ownerReferences"] == [api.owner_reference(cos)]
    assert secret["immutable"] is True and secret["type"] == api.SECRET_TYPE
    # the audit log names cosctl (a CronJob's upgrades are told from the reconciler's writes)
    assert {r.user_agent for r in server.requests} == {user_agent()}
    assert user_agent() == f"cosctl/{version('cluster-object-set')}"

    server.clear_requests()
    assert main(["publish", bundle, "--owner", "shop"]) == 0
    assert capsys.readouterr().out == "unchanged: ClusterObjectSet shop-1 (revision 1) already has this content\n"
    assert [r for r in server.requests if r.method != "GET"] == []

    assert main(["history", "--owner", "shop"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:4] == ["1", "shop-1", "Active", "Pending"]
    assert main(["gc", "--owner", "shop"]) == 0
    assert capsys.readouterr().out == "nothing to clean up\n"


def test_unreachable_or_missing_kubeconfig_is_a_clear_error(bundle, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["gc", "--owner", "shop"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cosctl gc: cannot load the cluster configuration: ")
    assert "Traceback" not in err


def test_in_a_pod_without_a_kubeconfig_the_pods_service_account_is_used(tmp_path, monkeypatch, capsys):
    """As kubectl falls back to it (a CronJob's cosctl upgrade); outside a pod its token file is missing, said so."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    assert main(["list"]) == 1
    assert capsys.readouterr().err == (
        "cosctl list: cannot load the cluster configuration: no kubeconfig (--kubeconfig, $KUBECONFIG, "
        "~/.kube/config), and the pod's ServiceAccount: Service token file does not exist.\n")
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("{}")   # a kubeconfig wins, even in a pod
    assert main(["list"]) == 1
    assert "the pod's ServiceAccount" not in capsys.readouterr().err
    (tmp_path / ".kube" / "config").unlink()
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")   # neither: both said
    assert main(["list"]) == 1
    assert capsys.readouterr().err == (
        "cosctl list: cannot load the cluster configuration: no kubeconfig (--kubeconfig, $KUBECONFIG, "
        "~/.kube/config), and not in a pod ($KUBERNETES_SERVICE_HOST is not set)\n")


# ---- diff, rollback, status --watch and the kubectl plugin over HTTP ---------------------------------------


COS = (api.API_VERSION, api.KIND)
SUCCEEDED = {"type": "Succeeded", "status": "True", "reason": "Succeeded",
             "message": "Revision succeeded rolling out.", "lastTransitionTime": "2026-01-02T03:04:05Z"}


def write(root: Path, image: str) -> str:
    root.mkdir(parents=True, exist_ok=True)
    (root / "x.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n"
        "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: shop}\n"
        f"stringData: {{password: pw-{image}}}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
        f"spec: {{replicas: 1, template: {{spec: {{containers: [{{name: w, image: '{image}'}}]}}}}}}\n")
    return str(root)


def set_status(server: FakeApiServer, name: str, status: str, reason: str, message: str, *extra: dict) -> None:
    cos = server.get_object(*COS, name)
    cos["status"] = {"conditions": [{"type": "Progressing", "status": status, "reason": reason, "message": message,
                                     "lastTransitionTime": "2026-01-02T03:04:05Z"}, *extra]}
    server.put_object(cos)


def test_diff_over_http_reads_the_latest_active_revision_and_its_secrets(server, kubeconfig, tmp_path, capsys):
    one, two = write(tmp_path / "one", "web:1"), write(tmp_path / "two", "web:2")
    assert main(["publish", one, "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    capsys.readouterr()
    server.clear_requests()
    assert main(["diff", two, "--owner", "shop", "--kubeconfig", kubeconfig]) == 1
    out = capsys.readouterr().out
    assert "pw-web" not in out
    assert out.splitlines()[:4] == ["--- shop-1", f"+++ {two}", "changed  Secret shop/creds (phase configuration)",
                                    "    --- shop-1 Secret shop/creds"]
    assert "    -  password: <hidden>" in out.splitlines() and "    +  password: <changed>" in out.splitlines()
    assert out.splitlines()[-1] == "0 added, 0 removed, 2 changed, 0 moved, 1 unchanged"
    (secret,) = server.objects("v1", "Secret")
    discovery = re.compile(r"/(api|apis/[^/]+)/[^/]+")
    assert [(r.method, r.path, r.query.get("labelSelector")) for r in server.requests
            if not discovery.fullmatch(r.path)] == [
        ("GET", f"/apis/{api.API_VERSION}/clusterobjectsets", f"{api.LABEL_OWNER_NAME}=shop"),
        ("GET", f"/api/v1/namespaces/{NS}/secrets/{secret['metadata']['name']}", None),  # once for 3 objects
    ]
    assert main(["diff", one, "--owner", "shop", "--kubeconfig", kubeconfig, "-o", "json"]) == 0
    assert '"different": false' in capsys.readouterr().out


def test_rollback_over_http_publishes_the_old_content_as_the_next_revision(server, kubeconfig, tmp_path, capsys):
    one, two = write(tmp_path / "one", "web:1"), write(tmp_path / "two", "web:2")
    assert main(["publish", one, "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    set_status(server, "shop-1", "True", "Succeeded", "Revision 1 has rolled out.", SUCCEEDED)
    assert main(["publish", two, "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    capsys.readouterr()
    server.clear_requests()
    assert main(["rollback", "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "rolling back owner shop to revision 1 (shop-1)"
    assert out.splitlines()[-2:] == ["ClusterObjectSet shop-3 (revision 3) created",
                                     "follow it: cosctl status shop-3 --watch"]
    new = server.get_object(*COS, "shop-3")
    old = server.get_object(*COS, "shop-1")
    assert [[o["ref"]["key"] for o in p["objects"]] for p in new["spec"]["phases"]] == [
        [o["ref"]["key"] for o in p["objects"]] for p in old["spec"]["phases"]]
    (secret,) = [s for s in server.objects("v1", "Secret") if s["metadata"]["labels"][api.LABEL_REVISION_NAME]
                 == "shop-3"]
    writes = [(r.method, r.path) for r in server.requests if r.method != "GET"]
    assert writes == [  # the crash-safe order of publish: Secret, COS, ownerReference
        ("POST", f"/api/v1/namespaces/{NS}/secrets"),
        ("POST", f"/apis/{api.API_VERSION}/clusterobjectsets"),
        ("PATCH", f"/api/v1/namespaces/{NS}/secrets/{secret['metadata']['name']}"),
    ]
    # the old revision's Secret gone: the error names it, nothing is written
    gone = old["spec"]["phases"][0]["objects"][0]["ref"]["name"]
    server.delete_object("v1", "Secret", gone, NS)
    server.clear_requests()
    assert main(["rollback", "--owner", "shop", "--to-revision", "1", "--kubeconfig", kubeconfig]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cosctl rollback: cannot roll back to revision 1: the content of ClusterObjectSet "
                          f"shop-1 is not available: phase namespaces object 0: Secret {NS}/{gone} not found; ")
    assert [r for r in server.requests if r.method != "GET"] == []


class Watcher:
    """``cosctl status --watch`` in a thread, its output readable while it runs."""

    def __init__(self, argv: list[str]) -> None:
        self.out = io.StringIO()
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, args=(argv,), daemon=True)
        self.thread.start()

    def _run(self, argv: list[str]) -> None:
        with contextlib.redirect_stdout(self.out):
            self.code = main(argv)

    def lines(self) -> list[str]:
        return [line.split(" ", 1)[1] for line in self.out.getvalue().splitlines()]


def wait_for(cond, what: str):
    """Wait for a condition of the running watch (a safety limit, not a timed assertion)."""
    for _ in range(2000):
        if cond():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"never happened: {what}")


def test_status_watch_over_http_follows_watch_events_without_polling(server, kubeconfig, tmp_path):
    assert main(["publish", write(tmp_path / "one", "web:1"), "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    cos = server.get_object(*COS, "shop-1")
    server.clear_requests()
    w = Watcher(["status", "shop-1", "--watch", "--kubeconfig", kubeconfig])
    wait_for(lambda: server.open_watch_count() == 1 and w.lines(), "the watch is open")
    assert w.lines() == ["shop-1: 0/3 phases complete, 0/3 objects ready; phase namespaces waits for Namespace "
                         "shop (absent)"]
    owned = {"ownerReferences": [api.owner_reference(cos)]}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", **owned}}
    server.put_object(namespace)
    server.put_object({**namespace, "status": {"phase": "Active"}})  # created, then its status set
    set_status(server, "shop-1", "True", "RollingOut", "Revision 1 is rolling out.")
    wait_for(lambda: len(w.lines()) == 2, "the rollout's first step")
    server.drop_watches(abrupt=False)  # the stream ends as on the server's timeout: resumed, nothing missed
    wait_for(lambda: server.open_watch_count() == 1 and len(
        [r for r in server.requests if r.query.get("watch")]) == 2, "the watch resumed")
    set_status(server, "shop-1", "True", "Succeeded", "Revision 1 has rolled out.", SUCCEEDED)
    w.thread.join(20)
    assert w.code == 0
    assert w.lines()[1:-1] == [
        "shop-1: 1/3 phases complete, 1/3 objects ready; phase configuration waits for Secret shop/creds "
        "(absent); Progressing True RollingOut",
        "shop-1: 1/3 phases complete, 1/3 objects ready; phase configuration waits for Secret shop/creds "
        "(absent); Progressing True Succeeded",
    ]
    assert w.out.getvalue().splitlines()[-1] == "shop-1: rollout succeeded: Revision 1 has rolled out."
    watches = [r for r in server.requests if r.query.get("watch")]
    assert [(w.path, w.query["labelSelector"]) for w in watches] == [
        (f"/apis/{api.API_VERSION}/clusterobjectsets", f"{api.LABEL_OWNER_NAME}=shop")] * 2
    assert watches[0].query["resourceVersion"] == cos["metadata"]["resourceVersion"]
    assert int(watches[1].query["resourceVersion"]) > int(cos["metadata"]["resourceVersion"])
    cos_reads = [r for r in server.requests if r.path == f"/apis/{api.API_VERSION}/clusterobjectsets/shop-1"]
    assert len(cos_reads) == 1  # one GET to start; everything after came from the watch


def test_status_watch_over_http_of_a_deleted_revision_and_of_a_timeout(server, kubeconfig, tmp_path, capsys):
    assert main(["publish", write(tmp_path / "one", "web:1"), "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    capsys.readouterr()
    w = Watcher(["status", "shop-1", "--watch", "--kubeconfig", kubeconfig])
    wait_for(lambda: server.open_watch_count() == 1 and w.lines(), "the watch is open")
    server.delete_object(*COS, "shop-1")
    w.thread.join(20)
    assert w.code == 1
    assert capsys.readouterr().err == "cosctl status: ClusterObjectSet shop-1 was deleted\n"
    assert main(["status", "shop-1", "--watch", "--kubeconfig", kubeconfig]) == 1
    assert capsys.readouterr().err == "cosctl status: ClusterObjectSet shop-1 not found\n"
    assert main(["publish", str(tmp_path / "one"), "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    capsys.readouterr()
    server.clear_requests()
    assert main(["status", "shop-1", "--watch", "--timeout", "1", "--kubeconfig", kubeconfig]) == 6
    assert capsys.readouterr().out.splitlines()[-1] == "shop-1: still rolling out after 1 s (timeout)"
    assert [r.query["timeoutSeconds"] for r in server.requests if r.query.get("watch")] == ["1"]


def test_status_watch_over_http_retries_a_failing_watch_then_gives_up(server, kubeconfig, tmp_path):
    from common.cluster.kube import KubeCluster
    from tests.producer.helpers import cosctl
    assert main(["publish", write(tmp_path / "one", "web:1"), "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    watch_path = f"/apis/{api.API_VERSION}/clusterobjectsets"
    server.inject("GET", watch_path, 503, query={"watch": "true"}, times=2)
    sleeps: list[float] = []

    def succeed_once_watched() -> None:
        wait_for(lambda: server.open_watch_count() == 1, "the third watch request")
        set_status(server, "shop-1", "True", "Succeeded", "Revision 1 has rolled out.", SUCCEEDED)
    t = threading.Thread(target=succeed_once_watched, daemon=True)
    t.start()
    cluster = KubeCluster.from_kubeconfig(kubeconfig)
    code, out, err = cosctl("status", "shop-1", "--watch", cluster=cluster, sleep=sleeps.append)
    t.join(20)
    assert (code, sleeps, err) == (0, [0.2, 0.4], "")
    assert out.splitlines()[-1] == "shop-1: rollout succeeded: Revision 1 has rolled out."

    set_status(server, "shop-1", "True", "RollingOut", "Revision 1 is rolling out.")
    server.inject("GET", watch_path, 503, query={"watch": "true"}, times=100)
    sleeps.clear()
    code, out, err = cosctl("status", "shop-1", "--watch", cluster=cluster, sleep=sleeps.append)
    assert code == 1 and sleeps == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]
    assert err == (f"cosctl status: cannot watch ClusterObjectSet shop-1: gave up after 8 attempts: "
                   f"503 ServiceUnavailable: injected 503 for watch {watch_path}\n")


def test_status_watch_over_http_on_a_terminal_redraws_one_line_and_re_reads_after_410(server, kubeconfig,
                                                                                        tmp_path, monkeypatch):
    from common.cluster.kube import KubeCluster
    from tests.producer.helpers import cosctl
    assert main(["publish", write(tmp_path / "one", "web:1"), "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    set_status(server, "shop-1", "True", "RollingOut", "Revision 1 is rolling out.")
    server.inject("GET", f"/apis/{api.API_VERSION}/clusterobjectsets", 410, query={"watch": "true"})
    monkeypatch.setenv("COLUMNS", "200")
    cluster = KubeCluster.from_kubeconfig(kubeconfig)

    def blocked_once_read_again() -> None:
        wait_for(lambda: len([r for r in server.requests if r.query.get("watch")]) >= 2, "the re-watch")
        set_status(server, "shop-1", "False", "Blocked", "the following secrets are not immutable (referenced "
                   "secrets must have immutable set to true): olmv1-system/x")
    t = threading.Thread(target=blocked_once_read_again, daemon=True)
    t.start()
    code, out, _ = cosctl("status", "shop-1", "--watch", cluster=cluster, tty=True)
    t.join(20)
    assert code == 3
    assert out == (
        "\r\x1b[Kshop-1: 0/3 phases complete, 0/3 objects ready; phase namespaces waits for Namespace shop "
        "(absent); Progressing True RollingOut"
        "\r\x1b[Kshop-1: 0/3 phases complete, 0/3 objects ready; phase namespaces waits for Namespace shop "
        "(absent); Progressing False Blocked\n"
        "shop-1: rollout blocked: the following secrets are not immutable (referenced secrets must have immutable "
        "set to true): olmv1-system/x\n")
    reads = [r.path for r in server.requests if r.path.endswith("/clusterobjectsets/shop-1")]
    assert len(reads) == 2  # the start, and again after the 410


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_finds_and_runs_the_plugin(server, kubeconfig, tmp_path):
    """``kubectl cos`` runs kubectl-cos from PATH; kubectl's --kubeconfig/--context/-n work anywhere after
    the plugin name (kubectl itself refuses flags before it)."""
    one = write(tmp_path / "one", "web:1")
    assert main(["publish", one, "--owner", "shop", "--kubeconfig", kubeconfig]) == 0
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if not shutil.which("kubectl-cos", path=env["PATH"]):
        pytest.skip("kubectl-cos is not installed in this environment (pip install -e .)")
    for argv in (["history", "--owner", "shop", "--kubeconfig", kubeconfig, "--context", "fake"],
                 ["--kubeconfig", kubeconfig, "-n", NS, "--context=fake", "diff", one, "--owner", "shop"]):
        done = subprocess.run(["kubectl", "cos", *argv], env=env, capture_output=True, text=True)
        assert (done.returncode, done.stderr) == (0, ""), argv
        assert done.stdout.splitlines()[0] in (
            "REVISION  NAME    LIFECYCLE  STATE    ROLLED OUT  PACKAGE  VERSION  CREATED               CHANGED",
            "--- shop-1"), argv
    done = subprocess.run(["kubectl", "cos", "--help"], env=env, capture_output=True, text=True)
    assert done.stdout.startswith("usage: kubectl cos ")


def test_kubectl_global_flags_before_the_subcommand(server, kubeconfig, tmp_path, capsys):
    from common.cosctl import hoist_global_flags
    assert hoist_global_flags(["--kubeconfig", "k", "-nX", "--context=c", "status", "a"]) == [
        "status", "--kubeconfig", "k", "-nX", "--context=c", "a"]
    assert hoist_global_flags(["-n", "ns", "--namespace=y", "gc", "--owner", "o"]) == [
        "gc", "-n", "ns", "--namespace=y", "--owner", "o"]
    assert hoist_global_flags(["status", "-n", "x"]) == ["status", "-n", "x"]
    assert hoist_global_flags(["--kubeconfig"]) == ["--kubeconfig"]  # argparse then says what is missing
    assert main(["--kubeconfig", kubeconfig, "--context", "nope", "history", "--owner", "shop"]) == 1
    assert capsys.readouterr().err.startswith("cosctl history: cannot load the cluster configuration: ")
    # every command that talks to a cluster takes -n, as kubectl users type it out of habit
    assert main(["history", "--owner", "shop", "-n", "elsewhere", "--kubeconfig", kubeconfig]) == 1
    assert capsys.readouterr().err == "cosctl history: owner shop has no revisions\n"
    assert main(["-n", "elsewhere", "--kubeconfig", kubeconfig, "gc", "--owner", "shop"]) == 0
    assert [r.path for r in server.requests if "secrets" in r.path] == ["/api/v1/namespaces/elsewhere/secrets"]


def test_the_terminal_line_is_cut_to_the_terminal_width(monkeypatch):
    from common.cosctl.status import Progress
    monkeypatch.setenv("COLUMNS", "20")
    out = io.StringIO()
    p = Progress("shop-1", out, tty=True)
    p.show("0/3 phases complete, 0/3 objects ready")
    p.show("0/3 phases complete, 0/3 objects ready")  # unchanged: not redrawn
    p.end("shop-1: rollout succeeded")
    assert out.getvalue() == "\r\x1b[Kshop-1: 0/3 phases…\nshop-1: rollout succeeded\n"
