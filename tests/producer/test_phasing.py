"""The phase table, cleaning, sorting, splitting of big phases and the 20-phase limit."""

from __future__ import annotations

import pytest

from common.bundle.phasing import PhasingError, clean, phase_of, sort_into_phases


def obj(api_version: str, kind: str, name: str, namespace: str | None = None, **extra) -> dict:
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **extra}


@pytest.mark.parametrize("api_version,kind,phase", [
    ("v1", "Namespace", "namespaces"),
    ("networking.k8s.io/v1", "NetworkPolicy", "policies"),
    ("policy/v1", "PodDisruptionBudget", "policies"),
    ("scheduling.k8s.io/v1", "PriorityClass", "policies"),
    ("v1", "ServiceAccount", "identity"),
    ("v1", "Secret", "configuration"),
    ("v1", "ConfigMap", "configuration"),
    ("v1", "PersistentVolume", "storage"),
    ("v1", "PersistentVolumeClaim", "storage"),
    ("storage.k8s.io/v1", "StorageClass", "storage"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "crds"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "roles"),
    ("rbac.authorization.k8s.io/v1", "Role", "roles"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "bindings"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "bindings"),
    ("v1", "Service", "infrastructure"),
    ("cert-manager.io/v1", "Issuer", "infrastructure"),
    ("cert-manager.io/v1", "Certificate", "deploy"),
    ("apps/v1", "Deployment", "deploy"),
    ("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "scaling"),
    ("monitoring.coreos.com/v1", "PrometheusRule", "publish"),
    ("monitoring.coreos.com/v1", "ServiceMonitor", "publish"),
    ("monitoring.coreos.com/v1", "PodMonitor", "publish"),
    ("networking.k8s.io/v1", "Ingress", "publish"),
    ("route.openshift.io/v1", "Route", "publish"),
    ("console.openshift.io/v1", "ConsoleYAMLSample", "publish"),
    ("console.openshift.io/v1", "ConsoleQuickStart", "publish"),
    ("console.openshift.io/v1", "ConsoleCLIDownload", "publish"),
    ("console.openshift.io/v1", "ConsoleLink", "publish"),
    ("console.openshift.io/v1", "ConsolePlugin", "publish"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "admission"),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "admission"),
    # unlisted kinds, and listed kinds of another group, deploy with the workloads
    ("apps/v1", "StatefulSet", "deploy"),
    ("example.com/v1alpha1", "Widget", "deploy"),
    ("serving.knative.dev/v1", "Service", "deploy"),
    ("cert-manager.io/v1", "ClusterIssuer", "deploy"),
    ("acme.cert-manager.io/v1", "Issuer", "deploy"),
])
def test_phase_table(api_version, kind, phase):
    assert phase_of(obj(api_version, kind, "x")) == phase


def test_phases_in_table_order_only_non_empty_and_sorted_by_group_version_kind_namespace_name():
    objects = [
        obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "hook"),
        obj("apps/v1", "Deployment", "b", "ns2"),
        obj("apps/v1", "Deployment", "a", "ns2"),
        obj("apps/v1", "Deployment", "z", "ns1"),
        obj("example.com/v1", "Widget", "w", "ns1"),
        obj("cert-manager.io/v1", "Certificate", "c", "ns1"),
        obj("v1", "Namespace", "ns1"),
        obj("apps/v1", "StatefulSet", "s", "ns1"),
    ]
    phases = sort_into_phases(objects)
    assert [(p.name, [(o["kind"], o["metadata"]["name"]) for o in p.objects]) for p in phases] == [
        ("namespaces", [("Namespace", "ns1")]),
        ("deploy", [("Deployment", "z"), ("Deployment", "a"), ("Deployment", "b"), ("StatefulSet", "s"),
                    ("Certificate", "c"), ("Widget", "w")]),
        ("admission", [("ValidatingWebhookConfiguration", "hook")]),
    ]


def test_clean_keeps_only_name_namespace_labels_annotations_and_drops_status():
    raw = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "n", "labels": {"a": "b"}, "annotations": {"x": "y"},
                     "uid": "u", "resourceVersion": "7", "generation": 2, "creationTimestamp": "t",
                     "managedFields": [{}], "ownerReferences": [{}], "finalizers": ["f"], "generateName": "g"},
        "data": {"k": "v"},
        "status": {"phase": "x"},
    }
    assert clean(raw) == {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
                          "metadata": {"name": "c", "namespace": "n", "labels": {"a": "b"},
                                       "annotations": {"x": "y"}}}
    assert raw["status"] == {"phase": "x"} and "uid" in raw["metadata"]  # input untouched


def test_120_crds_split_into_crds_crds_2_crds_3_in_sorted_order():
    crds = [obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", f"r{i:03d}.example.com")
            for i in reversed(range(120))]
    phases = sort_into_phases([obj("v1", "Namespace", "n"), *crds, obj("apps/v1", "Deployment", "d", "n")])
    assert [(p.name, len(p.objects)) for p in phases] == [
        ("namespaces", 1), ("crds", 50), ("crds-2", 50), ("crds-3", 20), ("deploy", 1)]
    flat = [o["metadata"]["name"] for p in phases[1:4] for o in p.objects]
    assert flat == [f"r{i:03d}.example.com" for i in range(120)]


def test_exactly_50_is_not_split_and_exactly_20_phases_fit():
    phases = sort_into_phases([obj("v1", "ConfigMap", f"c{i:04d}", "n") for i in range(1000)])
    assert [p.name for p in phases] == ["configuration"] + [f"configuration-{i}" for i in range(2, 21)]
    assert all(len(p.objects) == 50 for p in phases)


def test_more_than_20_phases_says_how_many_objects_of_which_kinds_do_not_fit():
    objects = [obj("v1", "Namespace", "n")]
    objects += [obj("v1", "ConfigMap", f"c{i:04d}", "n") for i in range(1000)]
    objects += [obj("apps/v1", "Deployment", f"d{i}", "n") for i in range(5)]
    with pytest.raises(PhasingError) as e:
        sort_into_phases(objects)
    assert str(e.value) == (
        "the manifests need 22 phases but a ClusterObjectSet holds at most 20 (of at most 50 objects each): "
        "55 object(s) would not fit (50 ConfigMap, 5 Deployment.apps) in phase(s) configuration-20, deploy")
