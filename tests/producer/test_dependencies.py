"""What a registry+v1 bundle depends on (common/bundle/dependencies.py), read as opm turns it into catalog
properties, and what of it a cluster lacks."""

from __future__ import annotations

import json

from common.bundle.dependencies import declared, unmet
from common.bundle.registryv1.model import RegistryV1
from common.testing.memcluster import MemCluster
from tests.registryv1.bundles import crd, csv


def bundle(**spec: object) -> RegistryV1:
    document = csv()
    document["spec"].update(spec)
    document["metadata"].setdefault("annotations", {})["olm.properties"] = json.dumps([
        {"type": "olm.package.required", "value": {"packageName": "etcd", "versionRange": ">=0.9.0"}},
        {"type": "olm.constraint", "value": {"failureMessage": "needs a GPU node", "cel": {"rule": "true"}}},
        {"type": "olm.maxOpenShiftVersion", "value": "4.9"}])
    return RegistryV1(package_name="demo", csv=document, crds=[crd()], dependencies=[
        {"type": "olm.package", "value": {"packageName": "etcd", "version": ">=0.9.0"}},   # the same as above
        {"type": "olm.gvk", "value": {"group": "", "kind": "Pod", "version": "v1"}},
        "not an entry"])


def test_what_a_bundle_declares_it_depends_on():
    found = declared(bundle(
        customresourcedefinitions={"required": [
            {"name": "widgets.example.com", "version": "v1", "kind": "Widget"},   # its own CRD: met by itself
            {"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"}]},
        apiservicedefinitions={"required": [{"group": "metrics.k8s.io", "version": "v1beta1", "kind": "PodMetrics",
                                             "name": "pods"}]}))
    assert [r.text for r in found] == [
        "kind EtcdCluster.etcd.database.coreos.com/v1beta2", "kind PodMetrics.metrics.k8s.io/v1beta1",
        "package etcd >=0.9.0", "kind Pod/v1", "a constraint (needs a GPU node)"]


def test_what_the_cluster_lacks_of_it():
    mc = MemCluster()
    requirements = declared(bundle())
    assert unmet(mc, requirements) == [
        "package etcd >=0.9.0: not installed by a revision on this cluster (no Active revision of the package has "
        "succeeded; one installed another way, such as with Helm, is not seen)",
        "a constraint (needs a GPU node): cannot be checked by cosctl"]   # Pods are served


def test_values_of_an_unexpected_shape_are_skipped_and_texts_are_printable():
    document = csv()
    document["spec"]["customresourcedefinitions"] = ["not a mapping"]
    document["spec"]["apiservicedefinitions"] = {"required": [{"kind": ["a"], "version": "v1"}]}
    document["metadata"].setdefault("annotations", {})["olm.properties"] = json.dumps([
        {"type": "olm.gvk.required", "value": {"group": "g.io", "kind": "K", "version": None}},
        {"type": "olm.constraint", "value": {"failureMessage": "needs\x1b[31m red"}}])
    found = declared(RegistryV1(package_name="demo", csv=document, crds=[{"spec": ["odd"]}],
                                dependencies=[{"type": "olm.gvk", "value": {"kind": {"x": 1}, "version": "v1"}}]))
    assert [r.text for r in found] == ["a constraint (needs?[31m red)"]


def test_an_installed_version_is_read_as_its_csv_was_and_a_range_must_hold_it():
    mc = MemCluster()
    mc.put({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": "etcd-1", "annotations": {"olm.operatorframework.io/package-name": "etcd",
                                                           "olm.operatorframework.io/bundle-version": "v0.9.4"}},
            "spec": {"lifecycleState": "Active", "revision": 1, "phases": []},
            "status": {"conditions": [{"type": "Succeeded", "status": "True", "reason": "Succeeded", "message": "",
                                       "lastTransitionTime": "2026-11-26T00:00:00Z"}]}})
    wanted = RegistryV1(package_name="demo", csv=csv(), dependencies=[
        {"type": "olm.package", "value": {"packageName": "etcd", "version": ">=0.9.0"}}])
    assert unmet(mc, declared(wanted)) == []
    wanted.dependencies[0]["value"]["version"] = ">=1.0.0"
    assert unmet(mc, declared(wanted)) == ["package etcd >=1.0.0: installed versions v0.9.4 are not in the range"]
