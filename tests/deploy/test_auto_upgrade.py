"""deploy/components/auto-upgrade: the optional CronJob running ``cosctl upgrade --all``, with exactly the rights it
uses, rendered by the real ``kubectl kustomize`` next to deploy/ as its comment says, and inside an overlay that
moves the system namespace."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from common.cosctl import build_parser
from tests.deploy import kustomize, schemas

Obj = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
COMPONENT = ROOT / "deploy" / "components" / "auto-upgrade"
LABELS = {"app.kubernetes.io/name": "cos-upgrade", "app.kubernetes.io/component": "upgrade",
          "app.kubernetes.io/part-of": "cluster-object-set"}


def with_component(root: Path, base: Path, component: Path = COMPONENT) -> list[Obj]:
    """``base`` with the component, as the component's comment says to opt in."""
    root.mkdir(parents=True)
    (root / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": [os.path.relpath(base, root)],   # kustomize refuses absolute paths
        "components": [os.path.relpath(component, root)]}))
    return kustomize.render(root)


def added(tmp_path: Path) -> dict[tuple[str, str], Obj]:
    base = {kustomize.resource_id(o) for o in kustomize.render(ROOT / "deploy")}
    return {(o["kind"], o["metadata"]["name"]): o for o in with_component(tmp_path / "k", ROOT / "deploy")
            if kustomize.resource_id(o) not in base}


def test_the_component_adds_a_cronjob_and_its_rights_and_nothing_else(tmp_path: Path) -> None:
    objs = added(tmp_path)
    assert sorted(objs) == [("ClusterRole", "cos-upgrade"), ("ClusterRoleBinding", "cos-upgrade"),
                            ("CronJob", "cos-upgrade"), ("Role", "cos-upgrade"), ("RoleBinding", "cos-upgrade"),
                            ("ServiceAccount", "cos-upgrade")]
    for obj in objs.values():
        assert obj["metadata"]["labels"] == LABELS
        assert obj["metadata"].get("namespace") == (None if obj["kind"].startswith("Cluster") else "olmv1-system")
        for version in (schemas.versions()[0], schemas.newest()):
            assert schemas.errors(obj, version) == [], kustomize.describe(obj)


def test_the_cronjob_runs_cosctl_upgrade_all_hardened_and_bounded(tmp_path: Path) -> None:
    cron = added(tmp_path)[("CronJob", "cos-upgrade")]
    assert (cron["spec"]["concurrencyPolicy"], cron["spec"]["schedule"]) == ("Forbid", "41 * * * *")
    job = cron["spec"]["jobTemplate"]["spec"]
    assert (job["backoffLimit"], job["activeDeadlineSeconds"]) == (0, 3000)   # a failed run waits for the next
    pod = job["template"]["spec"]
    assert (pod["serviceAccountName"], pod["restartPolicy"]) == ("cos-upgrade", "Never")
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 65532
    (container,) = pod["containers"]
    assert container["command"] == ["cosctl", "upgrade"] and container["image"] == "cluster-object-set:0.1.0"
    parsed = build_parser().parse_args([*container["command"][1:], *container["args"]])
    assert (parsed.command, parsed.all, parsed.owners, parsed.dry_run) == ("upgrade", True, [], False)
    assert {e["name"]: e["value"] for e in container["env"]} == {
        "HOME": "/tmp", "COSCTL_CACHE_DIR": "/var/cache/cosctl",
        "REGISTRY_AUTH_FILE": "/etc/cos-upgrade/registry-auth/.dockerconfigjson"}
    security = container["securityContext"]
    assert (security["readOnlyRootFilesystem"], security["allowPrivilegeEscalation"],
            security["capabilities"]) == (True, False, {"drop": ["ALL"]})
    assert set(container["resources"]["limits"]) == {"cpu", "memory"}
    # what it writes goes to emptyDirs (the root filesystem is read-only); the credentials are optional
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert volumes[mounts["/tmp"]["name"]]["emptyDir"] == {"sizeLimit": "1Gi"}   # a large index unpacks there
    assert "emptyDir" in volumes[mounts["/var/cache/cosctl"]["name"]]
    auth = mounts["/etc/cos-upgrade/registry-auth"]
    assert auth["readOnly"] is True
    assert volumes[auth["name"]]["secret"] == {"secretName": "cos-upgrade-registry-auth", "optional": True}


def test_its_rights_are_those_cosctl_upgrade_uses(tmp_path: Path) -> None:
    objs = added(tmp_path)
    assert objs[("ClusterRole", "cos-upgrade")]["rules"] == [
        {"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterobjectsets"],
         "verbs": ["get", "list", "create", "patch", "delete"]},
        {"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterobjectsets/finalizers"],
         "verbs": ["update"]},
        {"apiGroups": ["olm.operatorframework.io"], "resources": ["clustercatalogs"], "verbs": ["list"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get"]},
        {"apiGroups": ["rbac.authorization.k8s.io"],
         "resources": ["clusterroles", "clusterrolebindings", "roles", "rolebindings"], "verbs": ["list"]}]
    assert objs[("Role", "cos-upgrade")]["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "patch", "delete"]}]
    subject = [{"kind": "ServiceAccount", "name": "cos-upgrade", "namespace": "olmv1-system"}]
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        binding = objs[(kind, "cos-upgrade")]
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"], binding["subjects"]) == (
            kind.removesuffix("Binding"), "cos-upgrade", subject)


def test_added_inside_the_custom_namespace_overlay_it_moves_with_it(tmp_path: Path) -> None:
    """docs/admin.md: with another system namespace, the component goes into that overlay's own kustomization, whose
    namespace and binding patches then apply to it."""
    copy = tmp_path / "deploy"
    shutil.copytree(ROOT / "deploy", copy)
    overlay = copy / "overlays" / "custom-namespace" / "kustomization.yaml"
    spec = yaml.safe_load(overlay.read_text())
    overlay.write_text(yaml.safe_dump({**spec, "components": ["../../components/auto-upgrade"]}, sort_keys=False))
    objs = {(o["kind"], o["metadata"]["name"]): o for o in kustomize.render(overlay.parent)}
    assert objs[("CronJob", "cos-upgrade")]["metadata"]["namespace"] == "cos-system"
    assert objs[("Role", "cos-upgrade")]["metadata"]["namespace"] == "cos-system"
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        assert objs[(kind, "cos-upgrade")]["subjects"] == [
            {"kind": "ServiceAccount", "name": "cos-upgrade", "namespace": "cos-system"}]
    assert not any(o["metadata"].get("namespace") == "olmv1-system" for o in objs.values())
