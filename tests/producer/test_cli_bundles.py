"""cosctl with registry+v1 bundles (shared/spec/bundles.md §4): render, pack, publish with upgrades that keep the
configuration, diff, status and history, against the in-memory API server."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path
from typing import Any

import yaml

from common.contract import api
from common.testing.memcluster import MemCluster
from tests.producer.helpers import allow_service_accounts, cosctl
from tests.registryv1.bundles import annotations_yaml, crd, csv, write_bundle

COS = (api.API_VERSION, api.KIND)
OPTIONS = api.ANNOTATION_BUNDLE_OPTIONS


def operator_csv(version: str, *, modes: tuple[str, ...] = ("AllNamespaces", "OwnNamespace"),
                 image: str = "quay.io/demo/operator") -> dict[str, Any]:
    """A CSV with one Deployment, namespaced and cluster permissions for one service account, one owned CRD."""
    doc = csv(f"demo-operator.v{version}", supported=modes, version=version,
              annotations={"capabilities": "Basic Install"})
    doc["spec"]["customresourcedefinitions"] = {"owned": [{"name": "widgets.example.com", "version": "v1",
                                                           "kind": "Widget"}]}
    doc["spec"]["install"]["spec"] = {
        "deployments": [{
            "name": "demo-controller",
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "demo"}},
                "template": {
                    "metadata": {"labels": {"app": "demo"}},
                    "spec": {"serviceAccountName": "demo-sa",
                             "containers": [{"name": "manager", "image": f"{image}:{version}",
                                             "resources": {"requests": {"memory": "0.5Gi", "cpu": "0.05"}}}]},
                },
            },
        }],
        "permissions": [{"serviceAccountName": "demo-sa",
                         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}],
        "clusterPermissions": [{"serviceAccountName": "demo-sa",
                                "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"],
                                           "verbs": ["*"]}]}],
    }
    return doc


def demo_bundle(root: Path, version: str = "1.0.0", **kwargs: Any) -> Path:
    return write_bundle(root, manifests={"widgets.crd.yaml": crd(),
                                         "demo.clusterserviceversion.yaml": operator_csv(version, **kwargs)},
                        annotations=annotations_yaml(package="demo"))


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def ids(docs: list[dict[str, Any]]) -> list[str]:
    return [f"{d['kind']}/{d['metadata'].get('namespace', '')}/{d['metadata']['name']}" for d in docs]


# ------------------------------------------------------------------------------------------------- render

def test_render_prints_olm_v1s_objects_in_its_order(tmp_path):
    code, out, err = cosctl("render", str(demo_bundle(tmp_path / "b")), "-n", "demo-system")
    assert (code, err) == (0, "")
    docs = documents(out)
    # The same objects, in the same order, as OLM v1's own renderer gives for this bundle (checked with OLM v1's
    # code built from source): AllNamespaces, so the namespaced permissions become a ClusterRole too, after the
    # cluster permissions, each named <csv name>-<service account> cut to fit, plus a hash of its rules.
    assert ids(docs) == [
        "ServiceAccount/demo-system/demo-sa",
        "ClusterRole//demo-operator.v1.0-1jf1biaoqa91fui5g78mzt1a0ao03fg3nw9ia4eulqqv",
        "ClusterRoleBinding//demo-operator.v1.0-1jf1biaoqa91fui5g78mzt1a0ao03fg3nw9ia4eulqqv",
        "ClusterRole//demo-operator.v1.0-2ejoltr44veuz8yzmhshuf8hbhqu3jodxw2j6jsy52mf",
        "ClusterRoleBinding//demo-operator.v1.0-2ejoltr44veuz8yzmhshuf8hbhqu3jodxw2j6jsy52mf",
        "CustomResourceDefinition//widgets.example.com",
        "Deployment/demo-system/demo-controller",
    ]
    assert docs[3]["rules"][-1] == {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]}
    deployment = docs[-1]
    template = deployment["spec"]["template"]
    assert deployment["spec"]["revisionHistoryLimit"] == 1
    assert template["metadata"]["annotations"] == {"capabilities": "Basic Install", "olm.targetNamespaces": "",
                                                   "olm.operatorNamespace": "demo-system"}
    assert template["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "50m", "memory": "512Mi"}}


def test_render_own_namespace_puts_roles_in_the_watched_namespace(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("watchNamespace: demo-system\n")
    code, out, err = cosctl("render", str(demo_bundle(tmp_path / "b")), "-n", "demo-system", "--config", str(config))
    assert (code, err) == (0, "")
    docs = documents(out)
    roles = [d for d in docs if d["kind"] in ("Role", "RoleBinding")]
    assert [(d["kind"], d["metadata"]["namespace"]) for d in roles] == [("Role", "demo-system"),
                                                                         ("RoleBinding", "demo-system")]
    deployment = docs[-1]
    assert deployment["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"] == "demo-system"


def test_render_config_schema_follows_the_install_modes(tmp_path):
    code, out, err = cosctl("render", str(demo_bundle(tmp_path / "b", modes=("AllNamespaces",))), "--config-schema")
    assert (code, err) == (0, "")
    schema = json.loads(out)
    assert set(schema["properties"]) == {"deploymentConfig"}
    assert schema["additionalProperties"] is False
    code, out, _ = cosctl("render", str(demo_bundle(tmp_path / "c", modes=("OwnNamespace",))), "--config-schema")
    schema = json.loads(out)
    assert schema["required"] == ["watchNamespace"]
    assert schema["properties"]["watchNamespace"]["format"] == "ownNamespaceInstallMode"


def test_render_config_schema_of_a_csv_olm_cannot_decode_is_its_decode_error(tmp_path):
    """No schema for a bundle OLM v1 cannot load (a schema without watchNamespace would say nothing is needed)."""
    bundle = demo_bundle(tmp_path / "b", modes=("OwnNamespace",))
    csv = bundle / "manifests" / "demo.clusterserviceversion.yaml"
    csv.write_text(re.sub(r"installModes:\n(  - .*\n(    .*\n)?)+", "installModes: x\n", csv.read_text()))
    code, out, err = cosctl("render", str(bundle), "--config-schema")
    assert (code, out, err) == (2, "", f'cosctl render: {bundle}: ClusterServiceVersion "demo-operator.v1.0.0": '
                                       "spec.installModes: expected an array, got string\n")


def test_render_refusals_are_olm_v1s_words_with_exit_1(tmp_path):
    bundle = str(demo_bundle(tmp_path / "b", modes=("OwnNamespace",)))
    code, out, err = cosctl("render", bundle, "-n", "demo-system")
    assert (code, out) == (1, "")
    choices = 'cosctl render: cause: this bundle supports OwnNamespace: give "demo-system" (the install namespace)'
    assert err == ("cosctl render: invalid ClusterExtension configuration: invalid configuration: required field "
                   f'"watchNamespace" is missing\n{choices}\n')  # OLM's words, then ours: what it may be
    config = tmp_path / "config.yaml"
    config.write_text("watchNamespace: elsewhere\nlogLevel: debug\n")
    code, _, err = cosctl("render", bundle, "-n", "demo-system", "--config", str(config))
    assert code == 1
    assert err.startswith("cosctl render: invalid ClusterExtension configuration: invalid configuration: "
                          "multiple errors found:\n  - ")
    assert err.endswith(f"\n{choices}\n")
    assert sorted(err.splitlines()[1:-1]) == sorted([
        '  - unknown field "logLevel"',
        "  - invalid format for field \"watchNamespace\": 'elsewhere' is not valid ownNamespaceInstallMode: "
        'invalid value "elsewhere": must be "demo-system" (the namespace where the operator is installed) because '
        "this operator only supports OwnNamespace install mode"])


def test_render_names_the_fields_olm_v1s_message_leaves_out(tmp_path):
    """OLM's message stays as it is; a cause line names the field, and a quantity's value."""
    bundle = str(demo_bundle(tmp_path / "b"))
    config = tmp_path / "config.yaml"
    config.write_text("deploymentConfig:\n  env: [{name: A, value: 2}]\n")
    assert cosctl("render", bundle, "-n", "demo-system", "--config", str(config)) == (1, "", (
        "cosctl render: invalid ClusterExtension configuration: invalid configuration: validation failed\n"
        'cosctl render: cause: invalid type for field "deploymentConfig.env.0.value": got number, want string\n'))
    config.write_text("deploymentConfig:\n  resources: {limits: {memory: 1Gb}}\n")
    assert cosctl("render", bundle, "-n", "demo-system", "--config", str(config)) == (1, "", (
        "cosctl render: invalid deploymentConfig: failed to unmarshal deploymentConfig: quantities must match the "
        "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'\n"
        'cosctl render: cause: field "deploymentConfig.resources.limits.memory": "1Gb" is not a quantity\n'))


def test_render_and_pack_warn_of_keys_olm_v1_drops(tmp_path):
    """A typo inside a toleration renders as OLM renders it (the key dropped: a toleration of every effect),
    and is said."""
    bundle = str(demo_bundle(tmp_path / "b"))
    config = tmp_path / "config.yaml"
    config.write_text("deploymentConfig:\n  tolerations: [{key: a, effects: NoSchedule}]\n")
    warning = (f'warning: {config}: deploymentConfig.tolerations.0: unknown field "effects" is ignored: Kubernetes\' '
               'Toleration has no such field, and OLM v1 drops it too (did you mean "effect"?)\n')
    code, out, err = cosctl("render", bundle, "-n", "demo-system", "--config", str(config))
    assert (code, err) == (0, "cosctl render: " + warning)
    assert documents(out)[-1]["spec"]["template"]["spec"]["tolerations"] == [{"key": "a"}]
    code, _, err = cosctl("pack", bundle, "-n", "demo-system", "--config", str(config), "--owner", "demo",
                          "-o", str(tmp_path / "out"))
    assert code == 0 and err.startswith("cosctl pack: " + warning)
    code, _, err = cosctl("diff", bundle, str(demo_bundle(tmp_path / "v2", "1.1.0")), "-n", "demo-system",
                          "--config", str(config))
    assert code == 1 and err.count(warning) == 1  # two bundles rendered, one configuration: said once


def test_render_unusable_input_exits_2(tmp_path):
    (tmp_path / "plain").mkdir()
    code, out, err = cosctl("render", str(tmp_path / "plain"), "-n", "x")
    assert (code, out) == (2, "")
    assert err.startswith(f"cosctl render: {tmp_path / 'plain'}: ")
    code, out, err = cosctl("render", str(demo_bundle(tmp_path / "b")))
    assert (code, out, err) == (
        2, "", "cosctl render: -n/--namespace NS is required: the namespace to install the bundle in\n")


def test_a_part_or_a_holder_of_bundles_is_not_read_as_manifests(tmp_path):
    """Read as plain manifests these made a revision of a bare ClusterServiceVersion (exit 0), a pile of
    annotations.yaml problems, or 'invalid YAML' of a tar's bytes; each is refused, naming what to give."""
    bundle = demo_bundle(tmp_path / "pkg" / "1.0.0")
    demo_bundle(tmp_path / "pkg" / "1.1.0", version="1.1.0")
    manifests = bundle / "manifests"
    assert cosctl("pack", str(manifests), "--owner", "demo", "--inline") == (2, "", (
        f"cosctl pack: {manifests}: the manifests/ directory of the registry+v1 bundle {bundle}: give the bundle "
        "directory itself, which is rendered as OLM v1 renders it (read as plain manifests, its "
        "ClusterServiceVersion would be packed as an object that nothing acts on without OLM)\n"))
    assert cosctl("pack", str(tmp_path / "pkg"), "--owner", "demo", "-n", "x") == (2, "", (
        f"cosctl pack: {tmp_path / 'pkg'}: holds registry+v1 bundles in 1.0.0, 1.1.0: give one bundle directory "
        "(a bundle must be the only input)\n"))
    link = tmp_path / "m"
    link.symlink_to(manifests)
    assert cosctl("pack", str(link), "--owner", "demo")[2].startswith(
        f"cosctl pack: {link}: the manifests/ directory of the registry+v1 bundle {bundle}: ")
    assert cosctl("pack", str(tmp_path), "--owner", "demo", "-n", "x") == (2, "", (
        f"cosctl pack: {tmp_path}: holds registry+v1 bundles in pkg/1.0.0, pkg/1.1.0: give one bundle directory "
        "(a bundle must be the only input)\n"))
    plain = tmp_path / "plain"
    demo_bundle(plain / ".olm")  # hidden: the manifest reader skips it, and so does this check
    (plain / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\n")
    assert cosctl("pack", str(plain), "--owner", "demo")[0] == 0
    archive = tmp_path / "bundle.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(bundle, arcname=".")
    assert cosctl("pack", str(archive), "--owner", "demo") == (2, "", (
        f"cosctl pack: {archive}: a tar file, but not an OCI image layout (no oci-layout file at its root)\n"))


def test_an_empty_package_name_is_olms_refusal_with_the_file_named(tmp_path):
    bundle = write_bundle(tmp_path / "b", manifests={"widgets.crd.yaml": crd(),
                                                      "demo.clusterserviceversion.yaml": operator_csv("1.0.0")},
                          annotations=annotations_yaml(package=None))
    assert cosctl("render", str(bundle), "-n", "demo-system") == (1, "", (
        "cosctl render: package name is empty\n"
        "cosctl render: cause: the bundle's metadata/annotations.yaml names no package "
        "(operators.operatorframework.io.bundle.package.v1)\n"))


def test_webhooks_without_a_provider_are_olms_refusal_with_what_to_give(tmp_path):
    csv = operator_csv("1.0.0")
    csv["spec"]["webhookdefinitions"] = [{
        "type": "ValidatingAdmissionWebhook", "generateName": "vwidget.example.com",
        "deploymentName": "demo-controller", "containerPort": 443,
        "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"],
                   "resources": ["widgets"]}]}]
    bundle = write_bundle(tmp_path / "b", manifests={"widgets.crd.yaml": crd(), "demo.clusterserviceversion.yaml": csv},
                          annotations=annotations_yaml(package="demo"))
    assert cosctl("render", str(bundle), "-n", "demo-system") == (1, "", (
        "cosctl render: unsupported bundle: webhookDefinitions are not supported\n"
        "cosctl render: cause: the bundle defines 1 webhook(s), whose serving certificates come from a provider the "
        "cluster runs: give --cert-provider cert-manager or openshift-serviceca\n"))
    assert cosctl("render", str(bundle), "-n", "demo-system", "--cert-provider", "cert-manager")[0] == 0


def test_an_install_namespace_no_cluster_accepts_is_refused_before_rendering(tmp_path):
    bundle = str(demo_bundle(tmp_path / "b"))
    assert cosctl("render", bundle, "-n", "Demo_System") == (2, "", (
        "cosctl render: install namespace 'Demo_System' (-n/--namespace) is not a valid namespace name: a lowercase "
        "RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an "
        "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')\n"))
    assert cosctl("pack", bundle, "-n", "d" * 64) == (2, "", (
        f"cosctl pack: install namespace '{'d' * 64}' (-n/--namespace) is not a valid namespace name: must be no "
        "more than 63 characters\n"))
    assert cosctl("render", bundle, "-n", "d" * 63)[0] == 0


# --------------------------------------------------------------------------------------------------- pack

def test_pack_of_a_bundle_carries_olm_v1s_annotations_and_the_options(tmp_path):
    code, out, err = cosctl("pack", str(demo_bundle(tmp_path / "b")), "-n", "demo-system", "--inline")
    assert (code, err) == (0, "")
    cos = documents(out)[-1]
    assert cos["metadata"]["name"] == "demo-1"  # the owner defaults to the package
    assert cos["metadata"]["labels"][api.LABEL_OWNER_NAME] == "demo"
    assert cos["metadata"]["annotations"] == {
        api.ANNOTATION_BUNDLE_NAME: "demo-operator.v1.0.0",
        OPTIONS: '{"namespace":"demo-system"}',
        api.ANNOTATION_BUNDLE_VERSION: "1.0.0",
        api.ANNOTATION_PACKAGE_NAME: "demo",
    }
    assert [p["name"] for p in cos["spec"]["phases"]] == ["identity", "crds", "roles", "bindings", "deploy"]


def test_pack_create_namespace_adds_the_install_namespace_first(tmp_path):
    code, out, _ = cosctl("pack", str(demo_bundle(tmp_path / "b")), "-n", "demo-system", "--inline",
                          "--create-namespace")
    assert code == 0
    cos = documents(out)[-1]
    assert cos["spec"]["phases"][0] == {"name": "namespaces", "objects": [
        {"object": {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "demo-system",
            # every object of a revision, as operator-controller labels and annotates it
            "labels": {api.LABEL_OWNER_KIND: "ClusterExtension", api.LABEL_OWNER_NAME: "demo"},
            "annotations": {api.ANNOTATION_BUNDLE_VERSION: "1.0.0", api.ANNOTATION_PACKAGE_NAME: "demo"}}}}]}
    assert json.loads(cos["metadata"]["annotations"][OPTIONS]) == {"namespace": "demo-system",
                                                                   "createNamespace": True}


def test_pack_secrets_go_to_the_system_namespace_not_the_install_namespace(tmp_path):
    code, out, _ = cosctl("pack", str(demo_bundle(tmp_path / "b")), "-n", "demo-system")
    assert code == 0
    secrets = [d for d in documents(out) if d["kind"] == "Secret"]
    assert secrets and {s["metadata"]["namespace"] for s in secrets} == {api.DEFAULT_SYSTEM_NAMESPACE}


def test_plain_manifests_keep_n_as_the_secrets_namespace(tmp_path):
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n")
    code, out, _ = cosctl("pack", str(tmp_path / "cm.yaml"), "--owner", "shop", "-n", "secrets-here")
    assert code == 0
    assert [d["metadata"]["namespace"] for d in documents(out) if d["kind"] == "Secret"] == ["secrets-here"]


def test_bundle_options_on_plain_manifests_and_mixed_inputs_are_refused(tmp_path):
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n")
    code, out, err = cosctl("pack", str(tmp_path / "cm.yaml"), "--owner", "shop", "--cert-provider", "cert-manager")
    assert (code, out) == (1, "")
    assert err == ("cosctl pack: --cert-provider: only for a registry+v1 bundle input (a directory with "
                   "metadata/annotations.yaml, or an OCI image layout of a bundle image)\n")
    bundle = str(demo_bundle(tmp_path / "b"))
    code, out, err = cosctl("pack", bundle, str(tmp_path / "cm.yaml"), "-n", "demo-system")
    assert (code, out) == (1, "")
    assert err == (f"cosctl pack: {bundle}: a registry+v1 bundle must be the only input (got 2 inputs); publish "
                   "other manifests as a revision of their own\n")


def test_pack_of_a_bundle_without_namespace_says_so(tmp_path):
    code, out, err = cosctl("pack", str(demo_bundle(tmp_path / "b")))
    assert (code, out, err) == (
        2, "", "cosctl pack: a registry+v1 bundle needs -n/--namespace NS: the namespace to install it in\n")


# ------------------------------------------------------------------------------------------------ publish

def test_publish_then_upgrade_keeps_namespace_and_configuration(tmp_path):
    mc = MemCluster()
    config = tmp_path / "config.yaml"
    config.write_text("watchNamespace: demo-system\ndeploymentConfig:\n  env: [{name: LOG, value: debug}]\n")
    code, out, err = cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--config",
                            str(config), cluster=mc)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "ClusterObjectSet demo-1 (revision 1) created"
    code, out, err = cosctl("publish", str(demo_bundle(tmp_path / "v2", "1.1.0")), cluster=mc)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "ClusterObjectSet demo-2 (revision 2) created"
    first, second = (c["metadata"]["annotations"] for c in mc.objects(*COS))
    assert second[OPTIONS] == first[OPTIONS] == (
        '{"config":{"deploymentConfig":{"env":[{"name":"LOG","value":"debug"}]},"watchNamespace":"demo-system"},'
        '"namespace":"demo-system"}')
    assert (second[api.ANNOTATION_BUNDLE_NAME], second[api.ANNOTATION_BUNDLE_VERSION]) == (
        "demo-operator.v1.1.0", "1.1.0")
    code, out, _ = cosctl("history", "--owner", "demo", cluster=mc)
    assert [line.split()[5:7] for line in out.splitlines()[1:]] == [["demo", "1.0.0"], ["demo", "1.1.0"]]
    code, out, _ = cosctl("status", "demo-2", cluster=mc)
    assert out.splitlines()[0] == "ClusterObjectSet demo-2: revision 2, Active, owner demo, package demo 1.1.0"


def test_an_upgrade_cannot_drop_the_namespace_it_installs_into(tmp_path):
    """Archiving the revision that holds the Namespace would delete it, and the new revision's objects in it."""
    mc = MemCluster()
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--create-namespace",
                  cluster=mc)[0] == 0
    writes = mc.writes
    v2 = str(demo_bundle(tmp_path / "v2", "1.1.0"))
    assert cosctl("publish", v2, "--no-create-namespace", cluster=mc) == (1, (
        "bundle demo-operator.v1.1.0 rendered for namespace demo-system (options kept from demo-1)\n"), (
        "cosctl publish: ClusterObjectSet demo-1 holds Namespace demo-system, which the new revision does not though "
        "objects of it are in it: archiving demo-1 would delete the namespace and everything in it, the new "
        "revision's objects included; no revision was created. Keep the Namespace in the revision (for a bundle: "
        "--create-namespace), or put the objects in another namespace\n"))
    assert mc.writes == writes
    code, out, _ = cosctl("diff", v2, "--owner", "demo", "--no-create-namespace", cluster=mc)
    assert code == 1 and "removed  Namespace demo-system" in out  # diff shows it: only publish refuses
    code, out, _ = cosctl("publish", v2, "-n", "demo-other", "--no-create-namespace", cluster=mc)
    assert code == 0 and out.splitlines()[-1] == "ClusterObjectSet demo-2 (revision 2) created"


def test_a_rollback_cannot_drop_the_namespace_its_objects_are_in(tmp_path):
    """Revision 1 installed into an existing namespace, revision 2 took it over (--create-namespace): rolling back
    to revision 1 would archive revision 2 and with it delete the namespace, the rolled-back objects in it."""
    mc = MemCluster()
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", cluster=mc)[0] == 0
    assert cosctl("publish", str(demo_bundle(tmp_path / "v2", "1.1.0")), "--create-namespace", cluster=mc)[0] == 0
    writes = mc.writes
    assert cosctl("rollback", "--owner", "demo", "--to-revision", "1", cluster=mc) == (1, (
        "rolling back owner demo to revision 1 (demo-1)\n"), (
        "cosctl rollback: ClusterObjectSet demo-2 holds Namespace demo-system, which the new revision does not "
        "though objects of it are in it: archiving demo-2 would delete the namespace and everything in it, the new "
        "revision's objects included; no revision was created. Keep the Namespace in the revision (for a bundle: "
        "--create-namespace), or put the objects in another namespace\n"))
    assert mc.writes == writes


def test_upgrade_refused_by_the_new_schema_publishes_nothing(tmp_path):
    mc = MemCluster()
    config = tmp_path / "config.yaml"
    config.write_text("watchNamespace: demo-system\n")
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--config", str(config),
                  cluster=mc)[0] == 0
    writes = mc.writes
    v2 = demo_bundle(tmp_path / "v2", "2.0.0", modes=("AllNamespaces",))
    code, out, err = cosctl("publish", str(v2), cluster=mc)
    assert (code, out) == (1, "")
    assert err == (
        "cosctl publish: the configuration kept from ClusterObjectSet demo-1 does not fit demo-operator.v2.0.0: "
        'invalid ClusterExtension configuration: invalid configuration: unknown field "watchNamespace"\n'
        "nothing was done: give --config FILE with a configuration this bundle accepts "
        f"(cosctl render {v2} --config-schema prints its schema)\n"
        "cosctl publish: cause: this bundle supports AllNamespaces: leave watchNamespace out to watch all namespaces\n")
    assert mc.writes == writes and len(mc.objects(*COS)) == 1
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    code, out, err = cosctl("publish", str(v2), "--config", str(empty), cluster=mc)
    assert (code, err) == (0, "")
    assert json.loads(mc.objects(*COS)[-1]["metadata"]["annotations"][OPTIONS]) == {"namespace": "demo-system"}


def test_publish_of_an_unchanged_bundle_creates_nothing(tmp_path):
    mc = MemCluster()
    bundle = str(demo_bundle(tmp_path / "v1"))
    assert cosctl("publish", bundle, "-n", "demo-system", cluster=mc)[0] == 0
    code, out, _ = cosctl("publish", bundle, cluster=mc)
    assert (code, out) == (0, "bundle demo-operator.v1.0.0 rendered for namespace demo-system (options kept from "
                              "demo-1)\nunchanged: ClusterObjectSet demo-1 (revision 1) already has this content\n")


# --------------------------------------------------------------------------------------------------- diff

def test_diff_of_the_next_bundle_shows_what_publish_would_change(tmp_path):
    mc = MemCluster()
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", cluster=mc)[0] == 0
    code, out, err = cosctl("diff", str(demo_bundle(tmp_path / "v2", "1.1.0")), cluster=mc)
    assert (code, err) == (1, "cosctl diff: bundle demo-operator.v1.1.0 rendered for namespace demo-system (options "
                              "kept from demo-1)\n")
    assert out.splitlines()[0:2] == ["--- demo-1", f"+++ {tmp_path / 'v2'}"]
    assert "changed  Deployment.apps demo-system/demo-controller (phase deploy)" in out
    # the RBAC objects' names carry the CSV name (OLM v1's): a new version replaces them; the others change their
    # bundle-version annotation, as operator-controller's next revision changes it on every object
    assert out.splitlines()[-1] == "4 added, 4 removed, 3 changed, 0 moved, 0 unchanged"


def test_an_object_rendered_twice_is_packed_once_when_one_says_all_and_refused_when_they_contradict(tmp_path):
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "demo-sa"}}
    bundle = write_bundle(tmp_path / "same", manifests={"widgets.crd.yaml": crd(), "sa.yaml": sa,
                                                        "demo.clusterserviceversion.yaml": operator_csv("1.0.0")},
                          annotations=annotations_yaml(package="demo"))
    code, out, _ = cosctl("render", str(bundle), "-n", "demo-system")
    assert ids(documents(out)).count("ServiceAccount/demo-system/demo-sa") == 2  # as OLM v1 renders it
    code, out, err = cosctl("pack", str(bundle), "-n", "demo-system", "--inline")
    assert (code, err) == (0, "cosctl pack: warning: ServiceAccount demo-system/demo-sa is rendered twice, the same "
                              "both times: the revision holds it once\n")
    assert [o["object"]["kind"] for o in documents(out)[-1]["spec"]["phases"][0]["objects"]] == ["ServiceAccount"]
    sa["imagePullSecrets"] = [{"name": "registry"}]  # says more than the generated one: it is kept
    bundle = write_bundle(tmp_path / "more", manifests={"widgets.crd.yaml": crd(), "sa.yaml": sa,
                                                        "demo.clusterserviceversion.yaml": operator_csv("1.0.0")},
                          annotations=annotations_yaml(package="demo"))
    code, out, err = cosctl("pack", str(bundle), "-n", "demo-system", "--inline")
    assert (code, err) == (0, "cosctl pack: warning: ServiceAccount demo-system/demo-sa is rendered twice, the second "
                              "says all the first does and more: the revision holds it once\n")
    assert documents(out)[-1]["spec"]["phases"][0]["objects"] == [{"object": {
        "apiVersion": "v1", "imagePullSecrets": [{"name": "registry"}], "kind": "ServiceAccount",
        "metadata": {"name": "demo-sa", "namespace": "demo-system",
                     "labels": {api.LABEL_OWNER_KIND: "ClusterExtension", api.LABEL_OWNER_NAME: "demo"},
                     "annotations": {api.ANNOTATION_BUNDLE_VERSION: "1.0.0", api.ANNOTATION_PACKAGE_NAME: "demo"}}}}]
    one = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "a"}}
    two = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "b"}}
    bundle = write_bundle(tmp_path / "differ", manifests={"a.yaml": one, "b.yaml": two,
                                                          "demo.clusterserviceversion.yaml": operator_csv("1.0.0"),
                                                          "widgets.crd.yaml": crd()},
                          annotations=annotations_yaml(package="demo"))
    code, out, err = cosctl("pack", str(bundle), "-n", "demo-system", "--inline")
    assert (code, out) == (1, "")
    assert err == ("cosctl pack: the rendered bundle holds ConfigMap demo-system/settings twice, with different "
                   "content; a revision holds each object once, so one of the two must go\n")


def test_a_manifest_no_api_server_accepts_is_refused_by_pack_naming_it(tmp_path):
    service = {"kind": "Service", "metadata": {"name": "webhook"}, "spec": {"ports": [{"port": 443}]}}
    bundle = write_bundle(tmp_path / "b", manifests={"svc.yaml": service, "widgets.crd.yaml": crd(),
                                                     "demo.clusterserviceversion.yaml": operator_csv("1.0.0")},
                          annotations=annotations_yaml(package="demo"))
    code, out, _ = cosctl("render", str(bundle), "-n", "demo-system")
    assert code == 0 and {"kind": "Service", "metadata": {"name": "webhook", "namespace": "demo-system"},
                          "spec": {"ports": [{"port": 443}]}} in documents(out)  # OLM v1 renders it as it is
    code, out, err = cosctl("pack", str(bundle), "-n", "demo-system")
    assert (code, out) == (1, "")
    assert err == ("cosctl pack: the bundle's Service webhook has no apiVersion: no API server accepts it (OLM v1 "
                   "renders it as the bundle ships it, and the install fails on it)\n")


def test_a_rollback_records_the_package_bundle_and_options_it_restores(tmp_path):
    mc = MemCluster()
    config = tmp_path / "config.yaml"
    config.write_text("watchNamespace: demo-system\n")
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--config", str(config),
                  cluster=mc)[0] == 0
    assert cosctl("publish", str(demo_bundle(tmp_path / "v2", "1.1.0")), cluster=mc)[0] == 0
    for cos in mc.objects(*COS):  # both rolled out, so revision 1 is a rollback target
        mc.edit(*COS, cos["metadata"]["name"], None, lambda o: o.setdefault("status", {}).update(conditions=[
            {"type": "Succeeded", "status": "True", "reason": "Succeeded", "message": "",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]))
    code, _, err = cosctl("rollback", "--owner", "demo", cluster=mc)
    assert (code, err) == (0, "")
    first, _, third = (c["metadata"]["annotations"] for c in mc.objects(*COS))
    assert third == first
    code, out, err = cosctl("publish", str(demo_bundle(tmp_path / "v2", "1.1.0")), cluster=mc)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == ("bundle demo-operator.v1.1.0 rendered for namespace demo-system (options kept "
                                   "from demo-3)")


def test_a_bare_service_account_name_is_one_of_the_bundles_install_namespace(tmp_path):
    mc = MemCluster()
    allow_service_accounts(mc, "demo-system/installer")
    code, _, err = cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--service-account",
                          "installer", cluster=mc)
    assert (code, err) == (0, "")
    annotations = mc.objects(*COS)[0]["metadata"]["annotations"]
    assert (annotations[api.ANNOTATION_SERVICE_ACCOUNT_NAMESPACE],
            annotations[api.ANNOTATION_SERVICE_ACCOUNT_NAME]) == ("demo-system", "installer")


# ------------------------------------------------------------------------------------------- --catalog

def demo_catalog(path: Path, *, deprecations: list[dict[str, Any]] | None = None) -> Path:
    """demo's channel stable: 1.0.0, then 1.1.0 replacing it, then 1.2.0 replacing 1.1.0 (no skipping 1.1.0)."""
    def entry(version: str, replaces: str | None = None) -> dict[str, Any]:
        return {"name": f"demo-operator.v{version}", **({"replaces": f"demo-operator.v{replaces}"} if replaces else {})}
    objects: list[dict[str, Any]] = [
        {"schema": "olm.package", "name": "demo", "defaultChannel": "stable"},
        {"schema": "olm.channel", "name": "stable", "package": "demo",
         "entries": [entry("1.0.0"), entry("1.1.0", "1.0.0"), entry("1.2.0", "1.1.0")]},
        *({"schema": "olm.bundle", "name": f"demo-operator.v{v}", "package": "demo", "image": f"quay.io/demo:{v}",
           "properties": [{"type": "olm.package", "value": {"packageName": "demo", "version": v}}]}
          for v in ("1.0.0", "1.1.0", "1.2.0")),
    ]
    if deprecations:
        objects.append({"schema": "olm.deprecations", "package": "demo", "entries": deprecations})
    path.write_text("\n".join(json.dumps(o) for o in objects))
    return path


def succeed(mc: MemCluster, name: str) -> None:
    """What the reconciler reports when a revision has rolled out."""
    mc.set_status(*COS, name, None, {"conditions": [{"type": "Succeeded", "status": "True", "reason": "Succeeded",
                                                     "message": "", "lastTransitionTime": "2026-11-26T00:00:00Z"}]})


def test_a_catalog_refuses_an_upgrade_it_has_no_edge_for(tmp_path):
    mc = MemCluster()
    catalog = str(demo_catalog(tmp_path / "catalog.json"))
    code, out, err = cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--catalog", catalog,
                            cluster=mc)
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == (f"catalog {catalog}: demo-operator.v1.0.0 may be installed (no bundle of the "
                                   "owner is installed)")
    succeed(mc, "demo-1")
    writes = mc.writes
    v12 = str(demo_bundle(tmp_path / "v12", "1.2.0"))
    code, out, err = cosctl("publish", v12, "--catalog", catalog, cluster=mc)
    assert (code, out) == (1, "bundle demo-operator.v1.2.0 rendered for namespace demo-system (options kept from "
                              "demo-1)\n")
    assert err == (
        'cosctl publish: error upgrading from currently installed version "1.0.0": no bundles found for package "demo" '
        'matching version "1.2.0"\n'
        f"cosctl publish: cause: catalog {catalog} has no upgrade edge from demo-operator.v1.0.0 (installed by "
        "ClusterObjectSet demo-1) to demo-operator.v1.2.0: the upgrades it allows, newest first: "
        "demo-operator.v1.1.0\n"
        "cosctl publish: cause: --upgrade-constraint-policy SelfCertified installs it anyway, as OLM v1's "
        "ClusterExtension spec.source.catalog.upgradeConstraintPolicy does\n")
    assert mc.writes == writes
    code, out, err = cosctl("diff", v12, "--catalog", catalog, cluster=mc)
    assert code == 1 and out.endswith(
        "Catalog: publish refuses demo-operator.v1.2.0 (unless --upgrade-constraint-policy SelfCertified):\n"
        'error upgrading from currently installed version "1.0.0": no bundles found for package "demo" matching '
        'version "1.2.0"\n'
        f"catalog {catalog} has no upgrade edge from demo-operator.v1.0.0 (installed by ClusterObjectSet demo-1) to "
        "demo-operator.v1.2.0: the upgrades it allows, newest first: demo-operator.v1.1.0\n")
    code, out, err = cosctl("publish", v12, "--catalog", catalog, "--upgrade-constraint-policy", "SelfCertified",
                            cluster=mc)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert [lines[1], lines[-1]] == [
        f"catalog {catalog}: demo-operator.v1.2.0 may replace demo-operator.v1.0.0 (--upgrade-constraint-policy "
        "SelfCertified: upgrade edges not checked)", "ClusterObjectSet demo-2 (revision 2) created"]


def test_a_catalog_allows_the_next_version_and_warns_about_deprecations(tmp_path):
    mc = MemCluster()
    catalog = str(demo_catalog(tmp_path / "catalog.json", deprecations=[
        {"reference": {"schema": "olm.package"}, "message": "demo is deprecated: use demo2"},
        {"reference": {"schema": "olm.bundle", "name": "demo-operator.v1.1.0"}, "message": "1.1.0 leaks memory"},
        {"reference": {"schema": "olm.bundle", "name": "demo-operator.v1.0.0"}, "message": "not this one"}]))
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", cluster=mc)[0] == 0
    succeed(mc, "demo-1")
    code, out, err = cosctl("publish", str(demo_bundle(tmp_path / "v11", "1.1.0")), "--catalog", catalog,
                            "--channel", "stable", cluster=mc)
    assert code == 0
    assert err == ("cosctl publish: warning: deprecated: demo is deprecated: use demo2\n"
                   "cosctl publish: warning: deprecated: 1.1.0 leaks memory\n")
    lines = out.splitlines()
    assert [lines[1], lines[-1]] == [
        f"catalog {catalog}: demo-operator.v1.1.0 is an upgrade it allows from demo-operator.v1.0.0 (installed by "
        "ClusterObjectSet demo-1)", "ClusterObjectSet demo-2 (revision 2) created"]


def test_a_bundle_the_catalog_does_not_list_or_not_in_the_channel_before_any_cluster(tmp_path):
    """What the catalog refuses whatever is installed is said before the cluster is contacted (none is given)."""
    catalog = str(demo_catalog(tmp_path / "catalog.json"))
    assert cosctl("publish", str(demo_bundle(tmp_path / "v3", "3.0.0")), "-n", "demo-system", "--catalog", catalog,
                  "--channel", "fast") == (1, "", (
        'cosctl publish: no bundles found for package "demo" matching version "3.0.0" in channels [fast]\n'
        f"cosctl publish: cause: catalog {catalog} has no bundle demo-operator.v3.0.0 in package demo; the closest: "
        "demo-operator.v1.0.0, demo-operator.v1.2.0, demo-operator.v1.1.0\n"))
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--catalog", catalog,
                  "--channel", "fast") == (1, "", (
        'cosctl publish: no bundles found for package "demo" matching version "1.0.0" in channels [fast]\n'
        f"cosctl publish: cause: demo-operator.v1.0.0 is in channel(s) stable of catalog {catalog}, not in fast\n"))
    bundle_dir = tmp_path / "v1"  # a bundle given as the catalog: Kubernetes objects, no catalog objects
    assert cosctl("publish", str(demo_bundle(tmp_path / "v2", "1.1.0")), "-n", "demo-system", "--catalog",
                  str(bundle_dir)) == (1, "", (
        'cosctl publish: no bundles found for package "demo" matching version "1.1.0"\n'
        f"cosctl publish: cause: catalog {bundle_dir} has no package demo (it holds no package: is it a File-Based "
        "Catalog, with olm.package, olm.channel and olm.bundle objects?)\n"))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "olm.package", "name": "dmeo"}))
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--catalog", str(other)) == (
        1, "", 'cosctl publish: no bundles found for package "demo" matching version "1.0.0"\n'
               f"cosctl publish: cause: catalog {other} has no package demo; the closest: dmeo\n")


def test_catalog_options_are_checked_before_the_cluster_is_contacted(tmp_path):
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\n")
    assert cosctl("publish", str(manifest), "--owner", "x", "--catalog", "c.json") == (
        2, "", "cosctl publish: --catalog: only for a registry+v1 bundle input\n")
    bundle = str(demo_bundle(tmp_path / "v1"))
    assert cosctl("publish", bundle, "-n", "demo-system", "--channel", "stable") == (
        2, "", "cosctl publish: --channel and --upgrade-constraint-policy need --catalog\n")
    assert cosctl("publish", bundle, "-n", "demo-system", "--catalog", str(tmp_path / "nope")) == (
        2, "", f"cosctl publish: {tmp_path / 'nope'}: no such catalog (give a File-Based Catalog directory or file, "
               "or an OCI image layout of an index image)\n")
    assert cosctl("publish", bundle, "-n", "demo-system", "--catalog", str(tmp_path / "nope"), "--bundle-version",
                  "42") == (2, "", "cosctl publish: --bundle-version with --catalog: the catalog's upgrade edges are "
                                   "checked against the bundle versions the revisions record, so a registry+v1 bundle "
                                   "records its own\n")
    assert cosctl("diff", bundle, bundle, "-n", "demo-system", "--catalog", "c.json")[2] == (
        "cosctl diff: --catalog: only for `cosctl diff BUNDLE` against the owner's revisions\n")


def test_a_revision_still_rolling_out_is_not_installed_yet(tmp_path):
    """OLM v1's installed bundle is the newest Succeeded revision: the refusal says why it is not the newest."""
    mc = MemCluster()
    catalog = str(demo_catalog(tmp_path / "catalog.json"))
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", cluster=mc)[0] == 0
    succeed(mc, "demo-1")
    assert cosctl("publish", str(demo_bundle(tmp_path / "v11", "1.1.0")), cluster=mc)[0] == 0
    code, _, err = cosctl("publish", str(demo_bundle(tmp_path / "v12", "1.2.0")), "--catalog", catalog, cluster=mc)
    assert code == 1 and err.splitlines()[2] == (
        "cosctl publish: cause: ClusterObjectSet demo-2 (demo-operator.v1.1.0) has not succeeded yet, so the "
        "installed bundle is still demo-operator.v1.0.0 (OLM v1 resolves nothing while a revision rolls out): wait "
        "for it with cosctl status demo-2 --watch")
    code, out, err = cosctl("resolve", "demo", "--catalog", catalog, "--owner", "demo", cluster=mc)
    assert (code, out.splitlines()[1]) == (0, "resolves to: demo-operator.v1.1.0 1.1.0 quay.io/demo:1.1.0")
    assert err.startswith("cosctl resolve: warning: ClusterObjectSet demo-2 (demo-operator.v1.1.0) has not succeeded")
    succeed(mc, "demo-2")
    code, out, err = cosctl("publish", str(demo_bundle(tmp_path / "v12", "1.2.0")), "--catalog", catalog, cluster=mc)
    assert (code, err) == (0, "")


def test_an_installed_version_olm_v1_cannot_read(tmp_path):
    mc = MemCluster()
    catalog = str(demo_catalog(tmp_path / "catalog.json"))
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--bundle-version", "build-42",
                  cluster=mc)[0] == 0
    succeed(mc, "demo-1")
    v11 = str(demo_bundle(tmp_path / "v11", "1.1.0"))
    assert cosctl("publish", v11, "--catalog", catalog, cluster=mc) == (1, (
        "bundle demo-operator.v1.1.0 rendered for namespace demo-system (options kept from demo-1)\n"), (
        "cosctl publish: error walking catalogs: error finding upgrade edges: failed to get version and release of "
        "installed bundle: No Major.Minor.Patch elements found\n"
        "cosctl publish: cause: ClusterObjectSet demo-1 records bundle version 'build-42' "
        "(olm.operatorframework.io/bundle-version), which OLM v1 cannot read: --upgrade-constraint-policy "
        "SelfCertified skips the upgrade edges\n"))
    code, out, _ = cosctl("diff", v11, "--catalog", catalog, "-o", "json", cluster=mc)
    assert code == 1 and json.loads(out)["catalog"] == {
        "catalog": catalog, "bundle": "demo-operator.v1.1.0", "policy": "CatalogProvided",
        "installed": {"name": "demo-operator.v1.0.0", "version": "build-42", "revision": "demo-1"},
        "refusal": "error walking catalogs: error finding upgrade edges: failed to get version and release of "
                   "installed bundle: No Major.Minor.Patch elements found",
        "causes": ["ClusterObjectSet demo-1 records bundle version 'build-42' "
                   "(olm.operatorframework.io/bundle-version), which OLM v1 cannot read: --upgrade-constraint-policy "
                   "SelfCertified skips the upgrade edges"],
        "allowed": [], "deprecated": []}
    assert cosctl("publish", v11, "--catalog", catalog, "--upgrade-constraint-policy", "SelfCertified",
                  cluster=mc)[0] == 0


def test_a_version_an_earlier_cosctl_recorded_as_the_csv_spelled_it_is_read(tmp_path):
    """An earlier cosctl recorded a CSV's ``v1.0`` as written; OLM v1 records ``1.0.0``: the upgrade edge from
    the installed bundle is found as if it had."""
    mc = MemCluster()
    catalog = str(demo_catalog(tmp_path / "catalog.json"))
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", "--bundle-version", "v1.0",
                  cluster=mc)[0] == 0
    succeed(mc, "demo-1")
    code, out, err = cosctl("publish", str(demo_bundle(tmp_path / "v11", "1.1.0")), "--catalog", catalog, cluster=mc)
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == (f"catalog {catalog}: demo-operator.v1.1.0 is an upgrade it allows from "
                                   "demo-operator.v1.0.0 (installed by ClusterObjectSet demo-1)")


def test_resolve_names_the_bundle_olm_v1_would_pick_and_its_image(tmp_path):
    catalog = str(demo_catalog(tmp_path / "catalog.json", deprecations=[
        {"reference": {"schema": "olm.package"}, "message": "demo is deprecated: use demo2"}]))
    code, out, err = cosctl("resolve", "demo", "--catalog", catalog, "--version", "<1.2")
    assert (code, err) == (0, "cosctl resolve: warning: deprecated: demo is deprecated: use demo2\n")
    assert out == ("resolves to: demo-operator.v1.1.0 1.1.0 quay.io/demo:1.1.0\n"
                   "qualified, best first:\n"
                   "  demo-operator.v1.1.0  1.1.0  quay.io/demo:1.1.0\n"
                   "  demo-operator.v1.0.0  1.0.0  quay.io/demo:1.0.0\n")
    mc = MemCluster()
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", cluster=mc)[0] == 0
    code, out, _ = cosctl("resolve", "demo", "--catalog", catalog, "--owner", "demo", cluster=mc)
    assert (code, out.splitlines()[:2]) == (0, [
        "installed: none (owner demo has no Succeeded revision of a bundle)",
        "resolves to: demo-operator.v1.2.0 1.2.0 quay.io/demo:1.2.0"])
    succeed(mc, "demo-1")
    code, out, _ = cosctl("resolve", "demo", "--catalog", catalog, "--owner", "demo", cluster=mc)
    assert (code, out) == (0, "installed: demo-operator.v1.0.0 (1.0.0), by ClusterObjectSet demo-1\n"
                              "resolves to: demo-operator.v1.1.0 1.1.0 quay.io/demo:1.1.0\n"
                              "qualified, best first:\n"
                              "  demo-operator.v1.1.0  1.1.0  quay.io/demo:1.1.0\n"
                              "  demo-operator.v1.0.0  1.0.0  quay.io/demo:1.0.0  (installed)\n")
    code, out, _ = cosctl("resolve", "demo", "--catalog", catalog, "--owner", "demo", "-o", "json", cluster=mc)
    assert json.loads(out)["resolved"] == {"name": "demo-operator.v1.1.0", "version": "1.1.0",
                                           "image": "quay.io/demo:1.1.0"}
    code, out, err = cosctl("resolve", "demo", "--catalog", catalog, "--owner", "demo", "--version", ">=1.2",
                            cluster=mc)
    assert (code, out) == (1, "")
    assert err == ('cosctl resolve: warning: deprecated: demo is deprecated: use demo2\n'
                   'cosctl resolve: error upgrading from currently installed version "1.0.0": no bundles found for '
                   'package "demo" matching version ">=1.2"\n'
                   "cosctl resolve: cause: the upgrades the catalog allows from demo-operator.v1.0.0, best first: "
                   "demo-operator.v1.1.0; none is in the version range >=1.2\n")
    assert cosctl("resolve", "demo", "--catalog", catalog, "--version", "abc")[2] == (
        'cosctl resolve: desired version range "abc" is invalid: improper constraint: "abc"\n')


def test_a_bundle_declaring_a_dependency_is_refused_with_a_catalog_as_olm_v1_refuses_it(tmp_path):
    """OLM v1 installs no bundle whose catalog entry declares a dependency (``olm.gvk.required``, which opm derives
    from a CSV's required CRDs, ``olm.package.required``, ``olm.constraint``): neither does ``publish --catalog``,
    and ``resolve`` says so; without ``--catalog`` the bundle is published, its dependencies the admin's to install."""
    catalog = demo_catalog(tmp_path / "catalog.json")
    objects = [json.loads(line) for line in catalog.read_text().splitlines()]
    for obj in objects:
        if obj.get("name") in ("demo-operator.v1.1.0", "demo-operator.v1.2.0"):
            obj["properties"].append({"type": "olm.gvk.required", "value": {
                "group": "etcd.database.coreos.com", "kind": "EtcdCluster", "version": "v1beta2"}})
    catalog.write_text("\n".join(json.dumps(o) for o in objects))
    mc = MemCluster()
    v11 = str(demo_bundle(tmp_path / "v11", "1.1.0"))
    code, out, err = cosctl("publish", v11, "-n", "demo-system", "--catalog", str(catalog), cluster=mc)
    assert (code, out) == (1, "")   # refused before the cluster is contacted: it does not depend on what is there
    assert err == (
        'cosctl publish: validating bundle "demo-operator.v1.1.0": bundle "demo-operator.v1.1.0" has a dependency '
        'declared via property "olm.gvk.required" which is currently not supported\n'
        "cosctl publish: cause: demo-operator.v1.1.0 depends on kind EtcdCluster.etcd.database.coreos.com/v1beta2 "
        f"(catalog {catalog}): OLM v1 resolves no dependencies, and installs no bundle that declares one\n"
        "cosctl publish: cause: publish without --catalog installs it anyway; what it depends on is then yours to "
        "install first\n")
    assert mc.writes == 0
    code, out, err = cosctl("resolve", "demo", "--catalog", str(catalog))
    assert (code, out) == (1, "")
    assert err == (
        'cosctl resolve: validating bundle "demo-operator.v1.2.0": bundle "demo-operator.v1.2.0" has a dependency '
        'declared via property "olm.gvk.required" which is currently not supported\n'
        "cosctl resolve: cause: demo-operator.v1.2.0 depends on kind EtcdCluster.etcd.database.coreos.com/v1beta2: "
        "OLM v1 resolves no dependencies, and installs no bundle that declares one\n"
        "cosctl resolve: cause: the best bundle that qualifies and declares none is demo-operator.v1.0.0: a "
        "--version range or --channel that leaves the others out resolves to it\n")
    assert cosctl("resolve", "demo", "--catalog", str(catalog), "--version", "<1.1.0")[0] == 0
    code, out, err = cosctl("publish", v11, "-n", "demo-system", cluster=mc)
    assert (code, err, out.splitlines()[-1]) == (0, "", "ClusterObjectSet demo-1 (revision 1) created")


def test_publishing_a_bundle_by_path_warns_about_the_dependencies_the_cluster_lacks(tmp_path):
    """A CSV's required CRDs and metadata/dependencies.yaml (what opm turns into olm.gvk.required and
    olm.package.required) are checked against the cluster: a kind must be served, a package installed in range."""
    root = demo_bundle(tmp_path / "v1")
    csv_path = root / "manifests" / "demo.clusterserviceversion.yaml"
    csv_doc = yaml.safe_load(csv_path.read_text())
    csv_doc["spec"].setdefault("customresourcedefinitions", {})["required"] = [
        {"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"}]
    csv_path.write_text(yaml.safe_dump(csv_doc))
    (root / "metadata" / "dependencies.yaml").write_text(
        "dependencies:\n- {type: olm.package, value: {packageName: etcd, version: '>=0.9.0'}}\n"
        "- {type: olm.gvk, value: {group: etcd.database.coreos.com, kind: EtcdCluster, version: v1beta2}}\n")
    mc = MemCluster()
    code, out, err = cosctl("publish", str(root), "-n", "demo-system", cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "ClusterObjectSet demo-1 (revision 1) created")
    assert err == (
        "cosctl publish: warning: demo-operator.v1.0.0 depends on what the cluster lacks (OLM v1 installs no bundle "
        "that declares dependencies; published by path, they are yours to install first):\n"
        "cosctl publish: warning:   kind EtcdCluster.etcd.database.coreos.com/v1beta2: not served by the cluster\n"
        "cosctl publish: warning:   package etcd >=0.9.0: not installed by a revision on this cluster (no Active "
        "revision of the package has succeeded; one installed another way, such as with Helm, is not seen)\n")
    # the etcd operator installed (0.9.4, rolled out) and its kind served: nothing lacks
    mc.put({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "etcdclusters.etcd.database.coreos.com"},
            "spec": {"group": "etcd.database.coreos.com", "scope": "Namespaced",
                     "names": {"kind": "EtcdCluster", "plural": "etcdclusters", "singular": "etcdcluster",
                               "listKind": "EtcdClusterList"},
                     "versions": [{"name": "v1beta2", "served": True, "storage": True}]}})
    mc.put({"apiVersion": api.API_VERSION, "kind": api.KIND,
            "metadata": {"name": "etcd-1", "annotations": {api.ANNOTATION_PACKAGE_NAME: "etcd",
                                                           api.ANNOTATION_BUNDLE_VERSION: "0.9.4"}},
            "spec": {"lifecycleState": "Active", "revision": 1, "phases": []}})
    succeed(mc, "etcd-1")
    code, out, err = cosctl("publish", str(root), cluster=mc)
    assert (code, err) == (0, "")
    assert ("dependencies of demo-operator.v1.0.0 on the cluster: kind EtcdCluster.etcd.database.coreos.com/v1beta2, "
            "package etcd >=0.9.0") in out.splitlines()
    # out of range
    (root / "metadata" / "dependencies.yaml").write_text(
        "dependencies:\n- {type: olm.package, value: {packageName: etcd, version: '>=1.0.0'}}\n")
    code, out, err = cosctl("publish", str(root), cluster=mc)
    assert err.splitlines()[1:] == [
        "cosctl publish: warning:   package etcd >=1.0.0: installed versions 0.9.4 are not in the range"]
    # a dependencies.yaml that does not parse is no refusal (OLM v1 does not read it): it gives nothing
    (root / "metadata" / "dependencies.yaml").write_text("dependencies: [\n")
    code, out, err = cosctl("publish", str(root), cluster=mc)
    assert (code, err) == (0, "")
    assert ("dependencies of demo-operator.v1.0.0 on the cluster: kind EtcdCluster.etcd.database.coreos.com/v1beta2"
            in out.splitlines())


def test_diff_says_what_the_bundle_depends_on_that_the_cluster_lacks(tmp_path):
    root = demo_bundle(tmp_path / "v1")
    (root / "metadata" / "dependencies.yaml").write_text(
        "dependencies:\n- {type: olm.gvk, value: {group: etcd.database.coreos.com, kind: EtcdCluster, version: "
        "v1beta2}}\n")
    mc = MemCluster()
    code, out, err = cosctl("diff", str(root), "-n", "demo-system", cluster=mc)
    assert (code, err) == (1, "cosctl diff: bundle demo-operator.v1.0.0 rendered for namespace demo-system\n")
    assert out.splitlines()[-2:] == [
        f"Dependencies: publish warns that {root} depends on what the cluster lacks:",
        "kind EtcdCluster.etcd.database.coreos.com/v1beta2: not served by the cluster"]
    code, out, _ = cosctl("diff", str(root), "-n", "demo-system", "-o", "json", cluster=mc)
    assert json.loads(out)["dependencies"] == [
        "kind EtcdCluster.etcd.database.coreos.com/v1beta2: not served by the cluster"]



def test_the_dependencies_file_is_found_as_opm_finds_it(tmp_path):
    """opm reads the first file of metadata/ (by name) holding a dependencies list: pelorus-operator keeps its
    in properties.yaml, next to its properties."""
    root = demo_bundle(tmp_path / "b")
    (root / "metadata" / "properties.yaml").write_text(
        "properties: []\ndependencies:\n- {type: olm.package, value: {packageName: prometheus, version: 0.47.0}}\n")
    mc = MemCluster()
    code, _, err = cosctl("publish", str(root), "-n", "demo-system", cluster=mc)
    assert code == 0 and err.splitlines()[1] == (
        "cosctl publish: warning:   package prometheus 0.47.0: not installed by a revision on this cluster (no "
        "Active revision of the package has succeeded; one installed another way, such as with Helm, is not seen)")


def test_a_catalog_with_no_edge_to_a_bundle_declaring_a_dependency_says_self_certified_would_not_help(tmp_path):
    catalog = demo_catalog(tmp_path / "catalog.json")
    objects = [json.loads(line) for line in catalog.read_text().splitlines()]
    for obj in objects:
        if obj.get("name") == "demo-operator.v1.2.0":
            obj["properties"].append({"type": "olm.gvk.required", "value": {
                "group": "etcd.database.coreos.com", "kind": "EtcdCluster", "version": "v1beta2"}})
    catalog.write_text("\n".join(json.dumps(o) for o in objects))
    mc = MemCluster()
    assert cosctl("publish", str(demo_bundle(tmp_path / "v1")), "-n", "demo-system", cluster=mc)[0] == 0
    succeed(mc, "demo-1")
    code, out, _ = cosctl("diff", str(demo_bundle(tmp_path / "v12", "1.2.0")), "--catalog", str(catalog), cluster=mc)
    refused = ('validating bundle "demo-operator.v1.2.0": bundle "demo-operator.v1.2.0" has a dependency declared via '
               'property "olm.gvk.required" which is currently not supported')
    assert code == 1 and out.splitlines()[-6:] == [
        "Catalog: publish refuses demo-operator.v1.2.0:",
        'error upgrading from currently installed version "1.0.0": no bundles found for package "demo" matching '
        'version "1.2.0"',
        f"catalog {catalog} has no upgrade edge from demo-operator.v1.0.0 (installed by ClusterObjectSet demo-1) to "
        "demo-operator.v1.2.0: the upgrades it allows, newest first: demo-operator.v1.1.0",
        f"with --upgrade-constraint-policy SelfCertified, OLM v1 would refuse it still: {refused}",
        "demo-operator.v1.2.0 depends on kind EtcdCluster.etcd.database.coreos.com/v1beta2 (catalog "
        f"{catalog}): OLM v1 resolves no dependencies, and installs no bundle that declares one",
        "publish without --catalog installs it anyway; what it depends on is then yours to install first"]


def test_each_object_of_a_bundle_revision_is_labelled_and_annotated_as_operator_controller_does(tmp_path):
    """operator-controller's revision generator labels every object with its owner, annotates it with the bundle
    version and package, strips kubectl's last-applied-configuration, and copies the CSV's olm.properties onto the
    revision: a revision it made and one cosctl makes of the same bundle must hold the same objects."""
    settings = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "settings", "labels": {"app": "demo", api.LABEL_OWNER_NAME: "theirs"},
                             "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "this",
                                             api.ANNOTATION_PACKAGE_NAME: "theirs"}},
                "data": {"a": "1"}}
    properties = '[{"type":"olm.maxOpenShiftVersion","value":"4.18"}]'
    bundle = write_bundle(tmp_path / "b", manifests={
        "settings.yaml": settings, "widgets.crd.yaml": crd(),
        "demo.clusterserviceversion.yaml": csv(annotations={"olm.properties": properties})},
        annotations=annotations_yaml(package="demo"))
    code, out, err = cosctl("pack", str(bundle), "-n", "demo-system", "--inline", "--owner", "shop",
                            "--owner-kind", "Operator")
    assert (code, err) == (0, "")
    cos = documents(out)[-1]
    assert cos["metadata"]["annotations"]["olm.properties"] == properties
    objects = {o["object"]["kind"]: o["object"] for phase in cos["spec"]["phases"] for o in phase["objects"]}
    assert objects["ConfigMap"]["metadata"] == {
        "name": "settings", "namespace": "demo-system",
        "labels": {"app": "demo", api.LABEL_OWNER_NAME: "shop", api.LABEL_OWNER_KIND: "Operator"},
        "annotations": {"keep": "this", api.ANNOTATION_PACKAGE_NAME: "demo", api.ANNOTATION_BUNDLE_VERSION: "1.0.0"}}
    for obj in objects.values():
        assert (obj["metadata"]["labels"][api.LABEL_OWNER_NAME],
                obj["metadata"]["annotations"][api.ANNOTATION_BUNDLE_VERSION]) == ("shop", "1.0.0")


def test_what_a_revision_says_of_its_owner_and_bundle_properties_is_kept_by_later_publishes_and_rollbacks(tmp_path):
    """The owner kind and name its objects carry come from the revision compared with when not given (so the same
    bundle published again, or diffed against an owner that is not the package, is unchanged), and olm.properties
    travels with the content a rollback restores."""
    properties = '[{"type":"olm.maxOpenShiftVersion","value":"4.18"}]'

    def bundle(version: str) -> Path:
        return write_bundle(tmp_path / version, manifests={
            "a-crd.yaml": crd(), "demo.clusterserviceversion.yaml": csv(
                f"demo-operator.v{version}", version=version, annotations={"olm.properties": properties})},
            annotations=annotations_yaml(package="demo"))

    mc = MemCluster()
    assert cosctl("publish", str(bundle("1.0.0")), "-n", "demo-system", "--owner", "shop", "--owner-kind",
                  "Operator", cluster=mc)[0] == 0
    succeed(mc, "shop-1")
    assert cosctl("publish", str(bundle("1.0.0")), "--owner", "shop", cluster=mc)[1].splitlines()[-1] == (
        "unchanged: ClusterObjectSet shop-1 (revision 1) already has this content")
    code, out, _ = cosctl("diff", "shop-1", str(bundle("1.0.0")), "-n", "demo-system", cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "0 added, 0 removed, 0 changed, 0 moved, 1 unchanged")
    assert cosctl("publish", str(bundle("1.1.0")), "--owner", "shop", cluster=mc)[0] == 0
    assert mc.get(*COS, "shop-2")["metadata"]["labels"][api.LABEL_OWNER_KIND] == "Operator"
    succeed(mc, "shop-2")
    assert cosctl("rollback", "--owner", "shop", cluster=mc)[0] == 0
    restored = mc.get(*COS, "shop-3")["metadata"]["annotations"]
    assert (restored[api.ANNOTATION_BUNDLE_VERSION], restored[api.ANNOTATION_OLM_PROPERTIES]) == ("1.0.0", properties)
