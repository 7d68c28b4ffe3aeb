"""End-to-end: the day-two commands (``kubectl cos`` diff, rollback, status --watch) against a real API server
with the real reconciler process (opt-in: ``pytest -m e2e`` with ``COS_E2E_KUBECONFIG``).

Every command runs as a user would run it: ``kubectl cos ...`` (kubectl finds the ``kubectl-cos`` plugin on
PATH, next to this Python), with kubectl's own ``--kubeconfig`` and ``-n`` flags. Names carry a per-run
suffix; the revisions are deleted at the end (the reconciler tears their objects down first).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.cluster.interface import ApiError
from tests.e2e.conftest import COS_API, KIND, wait_for

pytestmark = pytest.mark.e2e

RUN = uuid.uuid4().hex[:6]
OWNER = f"shop-{RUN}"
APP_NS = f"cos-e2e-ctl-{RUN}"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def ctl(env: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The session's cluster and reconciler (tests/e2e/conftest.py: one reconciler per cluster at a time),
    with this module's owner; its revisions are deleted at the end (the reconciler tears their objects down)."""
    if shutil.which("kubectl") is None or not (BIN / "kubectl-cos").exists():
        pytest.skip("needs kubectl on PATH and kubectl-cos installed next to this Python (pip install -e .)")
    kube = env["kube"]
    state = {"kube": kube, "kubeconfig": env["kubeconfig"], "system_ns": env["system_ns"],
             "dir": tmp_path_factory.mktemp("bundles")}
    try:
        yield state
    finally:
        selector = f"olm.operatorframework.io/owner-name={OWNER}"
        for name in [c["metadata"]["name"] for c in kube.list(COS_API, KIND, label_selector=selector)]:
            with contextlib.suppress(ApiError):
                kube.delete(COS_API, KIND, name)
        wait_for(lambda: not kube.list(COS_API, KIND, label_selector=selector), 120,
                 "the test revisions to be deleted")
        with contextlib.suppress(ApiError):
            kube.delete("v1", "Namespace", APP_NS)


def bundle(ctl: dict, name: str, *, greeting: str, password: str) -> str:
    root = ctl["dir"] / name
    root.mkdir()
    (root / "app.yaml").write_text(
        f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {APP_NS}}}\n---\n"
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: greeting, namespace: {APP_NS}}}\n"
        f"data: {{text: {greeting}}}\n---\n"
        f"apiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: {APP_NS}}}\n"
        f"stringData: {{password: {password}}}\n---\n"
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: gate, namespace: {APP_NS}, labels: {{e2e-gate: 'yes'}}}}\n"
        "data: {purpose: the probe waits for data.ready, which the test sets by hand}\n")
    return str(root)


PROBES = ("- selector: {type: Label, label: {matchLabels: {e2e-gate: 'yes'}}}\n"
          "  assertions: [{type: FieldValue, fieldValue: {fieldPath: data.ready, value: 'true'}}]\n")


def _command(ctl: dict, argv: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("KUBECONFIG", None)
    return ["kubectl", "cos", *argv, "--kubeconfig", ctl["kubeconfig"], "-n", ctl["system_ns"]], env


def kubectl_cos(ctl: dict, *argv: str) -> subprocess.CompletedProcess[str]:
    command, env = _command(ctl, argv)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def watch(ctl: dict, name: str) -> subprocess.CompletedProcess[str]:
    return kubectl_cos(ctl, "status", name, "--watch", "--timeout", "180")


def test_publish_watch_diff_rollback(ctl: dict) -> None:
    kube = ctl["kube"]
    v1 = bundle(ctl, "v1", greeting="hello", password="first-Secret-value")
    v2 = bundle(ctl, "v2", greeting="bonjour", password="second-Secret-value")

    probes = ctl["dir"] / "probes.yaml"
    probes.write_text(PROBES)
    done = kubectl_cos(ctl, "publish", v1, "--owner", OWNER, "--bundle-version", "1.0.0",
                       "--progression-probes", str(probes))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"ClusterObjectSet {OWNER}-1 (revision 1) created"
    # follow the rollout while it waits for the gate; open the gate once the watch has said so
    command, env = _command(ctl, ("status", f"{OWNER}-1", "--watch", "--timeout", "180"))
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line.rstrip("\n"))
            if f"waits for ConfigMap {APP_NS}/gate" in line:
                break
        kube.merge_patch("v1", "ConfigMap", "gate", APP_NS, {"data": {"ready": "true"}})
        rest, err = proc.communicate(timeout=180)
    lines = [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in [*seen, *rest.splitlines()]]  # time stamps
    assert (proc.returncode, err) == (0, "")
    assert lines[-1] == f"{OWNER}-1: rollout succeeded: Revision 1.0.0 has rolled out."
    assert lines[-2] == f"{OWNER}-1: 2/2 phases complete, 4/4 objects ready; Progressing True Succeeded"
    assert any(line.startswith(f"{OWNER}-1: 1/2 phases complete, 3/4 objects ready; phase configuration waits "
                               f'for ConfigMap {APP_NS}/gate (missing key: "data.ready")') for line in lines), lines

    # kubectl's --context, as kubectl spells it, after the plugin name
    context = yaml.safe_load(Path(ctl["kubeconfig"]).read_text())["current-context"]
    done = kubectl_cos(ctl, "history", "--owner", OWNER, "--context", context)
    assert done.returncode == 0 and done.stdout.splitlines()[1].split()[:5] == [
        "1", f"{OWNER}-1", "Active", "Succeeded", "yes"], done.stdout + done.stderr
    done = kubectl_cos(ctl, "history", "--owner", OWNER, "--context", f"no-such-context-{RUN}")
    assert done.returncode == 1 and done.stderr.startswith("cosctl history: cannot load the cluster configuration")

    # what publishing v2 would change: the ConfigMap's text and, masked, the Secret's value
    done = kubectl_cos(ctl, "diff", v2, "--owner", OWNER)
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "Secret-value" not in out
    assert out.splitlines()[:3] == [f"--- {OWNER}-1", f"+++ {v2}",
                                    f"changed  ConfigMap {APP_NS}/greeting (phase configuration)"]
    assert "    -  text: hello" in out.splitlines() and "    +  text: bonjour" in out.splitlines()
    assert "    -  password: <hidden>" in out.splitlines() and "    +  password: <changed>" in out.splitlines()
    assert out.splitlines()[-1] == "0 added, 0 removed, 2 changed, 0 moved, 2 unchanged"
    assert kubectl_cos(ctl, "diff", v1, "--owner", OWNER).returncode == 0

    assert kubectl_cos(ctl, "publish", v2, "--owner", OWNER, "--bundle-version", "2.0.0").returncode == 0
    assert watch(ctl, f"{OWNER}-2").returncode == 0
    assert kube.get("v1", "ConfigMap", "greeting", APP_NS)["data"] == {"text": "bonjour"}
    wait_for(lambda: kube.get(COS_API, KIND, f"{OWNER}-1")["spec"]["lifecycleState"] == "Archived", 60,
             "revision 1 to be archived")
    data = json.loads(kubectl_cos(ctl, "diff", f"{OWNER}-1", f"{OWNER}-2", "-o", "json").stdout)
    assert data["counts"] == {"added": 0, "removed": 0, "changed": 2, "moved": 0}

    # back to revision 1's content, as revision 3
    done = kubectl_cos(ctl, "rollback", "--owner", OWNER, "--dry-run")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == (
        f"ClusterObjectSet {OWNER}-3 (revision 3) would be created")
    done = kubectl_cos(ctl, "rollback", "--owner", OWNER)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"rolling back owner {OWNER} to revision 1 ({OWNER}-1)"
    done = watch(ctl, f"{OWNER}-3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == f"{OWNER}-3: rollout succeeded: Revision 1.0.0 has rolled out."
    assert kube.get("v1", "ConfigMap", "greeting", APP_NS)["data"] == {"text": "hello"}
    assert kubectl_cos(ctl, "diff", "1", "3", "--owner", OWNER).returncode == 0
    wait_for(lambda: kube.get(COS_API, KIND, f"{OWNER}-2")["spec"]["lifecycleState"] == "Archived", 60,
             "revision 2 to be archived")
    assert watch(ctl, f"{OWNER}-2").returncode == 5  # archived

    # a revision whose Secret is gone cannot be restored: the error names it, nothing is created
    cos2 = kube.get(COS_API, KIND, f"{OWNER}-2")
    secret = cos2["spec"]["phases"][0]["objects"][0]["ref"]["name"]
    kube.delete("v1", "Secret", secret, ctl["system_ns"])
    done = kubectl_cos(ctl, "rollback", "--owner", OWNER, "--to-revision", "2")
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"cosctl rollback: cannot roll back to revision 2: the content of ClusterObjectSet {OWNER}-2 is not "
        f"available: phase namespaces object 0: Secret {ctl['system_ns']}/{secret} not found")
    done = kubectl_cos(ctl, "rollback", "--owner", OWNER, "--to-revision", "7")
    assert (done.returncode, done.stderr) == (1, f"cosctl rollback: revision 7 of owner {OWNER} does not exist (any "
                                                 "more: retention keeps only the newest archived revisions); "
                                                 "revisions on the cluster: 1, 2, 3\n")
    assert len(kube.list(COS_API, KIND, label_selector=f"olm.operatorframework.io/owner-name={OWNER}")) == 3


def widgets(ctl: dict, name: str, props: dict[str, Any]) -> str:
    """A revision of a CRD (its name carries the run) and one custom resource of it."""
    group = f"e2e-{RUN}.example.com"
    root = ctl["dir"] / name
    root.mkdir()
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"widgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": props}}}}}]}}
    (root / "crd.json").write_text(json.dumps(crd))
    (root / "widget.yaml").write_text(f"apiVersion: {group}/v1\nkind: Widget\nmetadata: {{name: w, namespace: "
                                      "default}\nspec: {size: small}\n")
    return str(root)


def test_publish_refuses_crds_that_would_break_stored_custom_resources(ctl: dict) -> None:
    """OLM v1's CRD upgrade safety check against the CRD as a real API server stores it (defaults, status)."""
    kube, owner = ctl["kube"], f"widgets-{RUN}"
    crd_name = f"widgets.e2e-{RUN}.example.com"
    one = widgets(ctl, "w1", {"size": {"type": "string", "enum": ["small", "large"]}, "colour": {"type": "string"}})
    safe = widgets(ctl, "w2", {"size": {"type": "string", "enum": ["small", "large", "huge"], "description": "how big"},
                               "colour": {"type": "string"}, "weight": {"type": "integer", "minimum": 0}})
    unsafe = widgets(ctl, "w3", {"size": {"type": "string", "enum": ["small", "huge"]}})
    try:
        for number, source in ((1, one), (2, safe)):
            done = kubectl_cos(ctl, "publish", source, "--owner", owner)
            assert done.returncode == 0, done.stderr
            assert done.stdout.splitlines()[-1] == f"ClusterObjectSet {owner}-{number} (revision {number}) created"
            assert watch(ctl, f"{owner}-{number}").returncode == 0
        assert kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd_name)["status"][
            "storedVersions"] == ["v1"]
        refusal = [
            f'validating upgrade for CRD "{crd_name}": existingFieldRemoval: removed field : v1.^.spec.colour',
            "existingFieldRemoval: removed field : v1.^.spec.weight",
            'v1: ^.spec.colour: type: type changed : "string" -> ""',
            'v1: ^.spec.size: enum: allowed enum values removed : ["large"]',
            'v1: ^.spec.weight: type: type changed : "integer" -> ""',
        ]
        done = kubectl_cos(ctl, "diff", unsafe, "--owner", owner, "--stat")
        assert done.returncode == 1 and done.stdout.splitlines()[-6:] == [
            f"CRD upgrade safety: publish refuses {unsafe} over {owner}-2 (unless --crd-upgrade-safety None):",
            *refusal], done.stdout + done.stderr
        done = kubectl_cos(ctl, "publish", unsafe, "--owner", owner)
        assert done.returncode == 1 and done.stderr.splitlines()[1:-1] == refusal, done.stderr
        assert [c["metadata"]["name"] for c in kube.list(
            COS_API, KIND, label_selector=f"olm.operatorframework.io/owner-name={owner}")] == [f"{owner}-1",
                                                                                            f"{owner}-2"]
        done = kubectl_cos(ctl, "publish", unsafe, "--owner", owner, "--crd-upgrade-safety", "None")
        assert done.returncode == 0, done.stderr
        assert watch(ctl, f"{owner}-3").returncode == 0
        # a revision without the CRD, while its custom resource exists: archiving revision 3 would delete both
        bare = ctl["dir"] / "w4"
        bare.mkdir()
        (bare / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: widgets-gone, namespace: "
                                      "default}\n")
        done = kubectl_cos(ctl, "publish", str(bare), "--owner", owner)
        assert done.returncode == 1 and done.stderr.startswith(
            f"cosctl publish: the new revision drops CustomResourceDefinition {crd_name} (controlled by {owner}-3; "
            "custom resources of it exist): archiving the revision that controls it would delete"), done.stderr
        assert kube.get(f"e2e-{RUN}.example.com/v1", "Widget", "w", "default")["spec"] == {"size": "small"}
    finally:
        selector = f"olm.operatorframework.io/owner-name={owner}"
        for name in [c["metadata"]["name"] for c in kube.list(COS_API, KIND, label_selector=selector)]:
            with contextlib.suppress(ApiError):
                kube.delete(COS_API, KIND, name)
        wait_for(lambda: not kube.list(COS_API, KIND, label_selector=selector), 120, "the revisions to be deleted")


def test_an_installation_moves_to_a_service_account_with_cosctl_rbac(ctl: dict) -> None:
    """An owner installed with the reconciler's own rights moves to a ServiceAccount: publishing the same content
    naming it is refused until ``cosctl rbac --owner`` (no manifests: the installed revision, read from the cluster)
    is applied; the revision is then annotated in place, the reconciler repairs a deleted object with the
    ServiceAccount's token (the generated RBAC is enough for the API server, its escalation check of the revision's
    Role included), and tears the revision down with it."""
    kube, owner, ns = ctl["kube"], f"move-{RUN}", f"cos-e2e-move-{RUN}"
    selector = f"olm.operatorframework.io/owner-name={owner}"
    root = ctl["dir"] / "move"
    root.mkdir()
    (root / "app.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, namespace: {ns}}}\ndata: {{a: '1'}}\n---\n"
        f"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: reader, namespace: {ns}}}\n"
        "rules: [{apiGroups: [''], resources: [configmaps], verbs: [get, list, watch]}]\n---\n"
        f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: reader, namespace: {ns}}}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}\n"
        f"subjects: [{{kind: ServiceAccount, name: default, namespace: {ns}}}]\n")
    kubectl = ["kubectl", "--kubeconfig", ctl["kubeconfig"]]
    subprocess.run([*kubectl, "create", "namespace", ns], check=True, capture_output=True)
    try:
        done = kubectl_cos(ctl, "publish", str(root), "--owner", owner)
        assert done.returncode == 0, done.stderr
        assert watch(ctl, f"{owner}-1").returncode == 0
        subprocess.run([*kubectl, "-n", ns, "create", "serviceaccount", "installer"], check=True, capture_output=True)

        done = kubectl_cos(ctl, "publish", str(root), "--owner", owner, "--service-account", f"{ns}/installer")
        assert (done.returncode, done.stderr.splitlines()[:2]) == (1, [
            f"cosctl publish: the permission preflight refused ClusterObjectSet {owner}-1 (it was not changed):",
            f"ServiceAccount {ns}/installer lacks, by the cluster's RBAC, to apply ClusterObjectSet {owner}-1:"])
        # create for the ConfigMap; get, list, watch: what the Role grants, which the installer must hold to apply it
        assert f'  Namespace:"{ns}" APIGroups:[] Resources:[configmaps] Verbs:[create,get,list,watch]' in \
            done.stderr.splitlines()

        rbac = kubectl_cos(ctl, "rbac", "--owner", owner, "--service-account", f"{ns}/installer")
        assert (rbac.returncode, rbac.stderr) == (0, f"cosctl rbac: for the objects of {owner}-1\n")
        applied = subprocess.run([*kubectl, "apply", "-f", "-"], input=rbac.stdout, capture_output=True, text=True)
        assert applied.returncode == 0, applied.stderr
        done = kubectl_cos(ctl, "publish", str(root), "--owner", owner, "--service-account", f"{ns}/installer")
        assert (done.returncode, done.stderr, done.stdout.splitlines()[-1]) == (
            0, "", f"unchanged content: ClusterObjectSet {owner}-1 (revision 1) updated in place (mutable fields "
                   "only)")

        kube.delete("v1", "ConfigMap", "settings", ns)   # drift: repaired with the ServiceAccount's token
        wait_for(lambda: any(c["metadata"]["name"] == "settings" and not c["metadata"].get("deletionTimestamp")
                             for c in kube.list("v1", "ConfigMap", ns)), 120, "the ConfigMap to be created again")
        cm = kube.get("v1", "ConfigMap", "settings", ns)
        assert [r["name"] for r in cm["metadata"]["ownerReferences"]] == [f"{owner}-1"]
    finally:
        for name in [c["metadata"]["name"] for c in kube.list(COS_API, KIND, label_selector=selector)]:
            with contextlib.suppress(ApiError):
                kube.delete(COS_API, KIND, name)
        wait_for(lambda: not kube.list(COS_API, KIND, label_selector=selector), 120, f"{owner}'s revisions to go")
        subprocess.run([*kubectl, "delete", "clusterrole,clusterrolebinding", f"{owner}-installer",
                        "--ignore-not-found"], capture_output=True)
        subprocess.run([*kubectl, "delete", "namespace", ns, "--wait=false"], capture_output=True)


def test_uninstall_never_deletes_custom_resources_unasked(ctl: dict) -> None:
    """``cosctl uninstall`` on a real API server, with a custom resource whose finalizer its operator would remove:
    refused while it exists; ``--keep-crds`` removes all but the CRD (and the namespace holding the custom
    resource), which a later publish takes over; ``--delete-custom-resources`` deletes the custom resource first and
    waits for the finalizer (timing out, naming it, with nothing else deleted), then tears everything down."""
    kube, owner, ns = ctl["kube"], f"gone-{RUN}", f"cos-e2e-gone-{RUN}"
    group = f"gone-{RUN}.example.com"
    crd_name, crd_api = f"widgets.{group}", "apiextensions.k8s.io/v1"
    selector = f"olm.operatorframework.io/owner-name={owner}"
    root = ctl["dir"] / "gone"
    root.mkdir()
    crd = {"apiVersion": crd_api, "kind": "CustomResourceDefinition", "metadata": {"name": crd_name},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    (root / "crd.json").write_text(json.dumps(crd))
    (root / "app.yaml").write_text(
        f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n"
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: operator-settings, namespace: {ns}}}\ndata: {{a: '1'}}\n")
    kubectl = ["kubectl", "--kubeconfig", ctl["kubeconfig"]]

    def revisions() -> dict[str, str]:
        return {c["metadata"]["name"]: c["spec"]["lifecycleState"]
                for c in kube.list(COS_API, KIND, label_selector=selector)}

    try:
        done = kubectl_cos(ctl, "publish", str(root), "--owner", owner)
        assert done.returncode == 0, done.stderr
        assert watch(ctl, f"{owner}-1").returncode == 0
        widget = (f"apiVersion: {group}/v1\nkind: Widget\nmetadata: {{name: w, namespace: {ns}, finalizers: "
                  "[example.com/cleanup]}\nspec: {size: small}\n")
        applied = subprocess.run([*kubectl, "apply", "-f", "-"], input=widget, capture_output=True, text=True)
        assert applied.returncode == 0, applied.stderr

        done = kubectl_cos(ctl, "uninstall", "--owner", owner)
        assert done.returncode == 1 and done.stderr.splitlines()[:2] == [
            f"cosctl uninstall: owner {owner}: custom resources of the CustomResourceDefinitions its revisions "
            "control exist:", f"  {crd_name}: Widget {ns}/w"], done.stderr
        assert done.stdout.splitlines() == [
            f"owner {owner}: Active revision {owner}-1 (3 object(s))",
            f"CustomResourceDefinition {crd_name} (controlled by {owner}-1): custom resources exist: Widget {ns}/w",
            f"Namespace {ns} (controlled by {owner}-1): deleting it deletes everything in it"]
        assert revisions() == {f"{owner}-1": "Active"}

        done = kubectl_cos(ctl, "uninstall", "--owner", owner, "--keep-crds", "--timeout", "120")
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[-3:-1] == [
            f"owner {owner}: everything but CustomResourceDefinition {crd_name} was removed; revision {owner}-2 keeps "
            "them and their custom resources", f"Namespace {ns} was kept too: custom resources are in it"]
        assert revisions() == {f"{owner}-1": "Archived", f"{owner}-2": "Active"}
        assert [c["metadata"]["name"] for c in kube.list("v1", "ConfigMap", ns)
                if c["metadata"]["name"] == "operator-settings"] == []
        assert kube.get(f"{group}/v1", "Widget", "w", ns)["spec"] == {"size": "small"}

        done = kubectl_cos(ctl, "publish", str(root), "--owner", owner)   # installed again: takes the CRD over
        assert done.returncode == 0, done.stderr
        assert watch(ctl, f"{owner}-3").returncode == 0
        owners = kube.get(crd_api, "CustomResourceDefinition", crd_name)["metadata"]["ownerReferences"]
        assert [r["name"] for r in owners if r.get("controller")] == [f"{owner}-3"]

        done = kubectl_cos(ctl, "uninstall", "--owner", owner, "--delete-custom-resources", "--timeout", "10")
        assert done.returncode == 6, done.stdout + done.stderr
        assert done.stderr == (
            f"cosctl uninstall: custom resources: still waiting after 10 s (1 custom resource(s) being deleted; Widget "
            f"{ns}/w: waiting for finalizers: example.com/cleanup); nothing else was deleted; the custom resources "
            "that are left wait for what holds them (their operator still runs): run the command again once they are "
            "gone\n")
        assert f"{owner}-3" in revisions() and kube.get(crd_api, "CustomResourceDefinition", crd_name)

        subprocess.run([*kubectl, "-n", ns, "patch", f"widgets.{group}", "w", "--type=merge", "-p",
                        '{"metadata":{"finalizers":null}}'], check=True, capture_output=True)   # the operator's work
        done = kubectl_cos(ctl, "uninstall", "--owner", owner, "--delete-custom-resources", "--timeout", "120")
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[-1] == (
            f"owner {owner} uninstalled: 3 revision(s) deleted, their objects removed in reverse phase order")
        assert revisions() == {}
        assert not [c for c in kube.list(crd_api, "CustomResourceDefinition") if c["metadata"]["name"] == crd_name]
        assert not [n for n in kube.list("v1", "Namespace") if n["metadata"]["name"] == ns]
    finally:
        subprocess.run([*kubectl, "-n", ns, "patch", f"widgets.{group}", "w", "--type=merge", "-p",
                        '{"metadata":{"finalizers":null}}'], capture_output=True)
        for name in [c["metadata"]["name"] for c in kube.list(COS_API, KIND, label_selector=selector)]:
            with contextlib.suppress(ApiError):
                kube.delete(COS_API, KIND, name)
        wait_for(lambda: not kube.list(COS_API, KIND, label_selector=selector), 120, f"{owner}'s revisions to go")
