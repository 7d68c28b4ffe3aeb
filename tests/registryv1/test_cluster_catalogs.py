"""``--catalog clustercatalogs:[SELECTOR]`` and a ClusterExtension manifest without ``--catalog``: the package is
resolved across the cluster's ClusterCatalogs as operator-controller resolves it (priority, selector,
availabilityMode, served or not, deprecations across catalogs, a tie refused), each read from the image digest
catalogd says it serves, pulled from the test registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.bundle.clustercatalogs import WalkedCatalog, walked
from common.bundle.registryv1.catalog import Package
from common.bundle.registryv1.resolve import (
    Installed,
    RankedPackage,
    ResolutionError,
    make_query,
    resolve_among,
)
from common.cluster.interface import Forbidden
from common.testing.memcluster import MemCluster
from tests.producer.helpers import allow_service_accounts, cosctl
from tests.registryv1.demo_catalog import VERSIONS, columns, demo, pulled, source_of, succeed
from tests.registryv1.pulling import push_index
from tests.support.registry_server import Registry

CATALOG = ("olm.operatorframework.io/v1", "ClusterCatalog")


def fbc(images: dict[str, str], versions: tuple[str, ...] = VERSIONS, *, deprecated: tuple[str, ...] = ()) -> str:
    """demo's channel stable with ``versions`` only, each replacing the one before; ``deprecated`` versions so
    marked."""
    names = [f"demo-operator.v{v}" for v in versions]
    objects: list[dict[str, Any]] = [
        {"schema": "olm.package", "name": "demo", "defaultChannel": "stable"},
        {"schema": "olm.channel", "name": "stable", "package": "demo",
         "entries": [{"name": n, **({"replaces": names[i - 1]} if i else {})} for i, n in enumerate(names)]},
        *({"schema": "olm.bundle", "name": f"demo-operator.v{v}", "package": "demo", "image": images[v],
           "properties": [{"type": "olm.package", "value": {"packageName": "demo", "version": v}}]}
          for v in versions)]
    if deprecated:
        objects.append({"schema": "olm.deprecations", "package": "demo", "entries": [
            {"reference": {"schema": "olm.bundle", "name": f"demo-operator.v{v}"}, "message": f"{v} is deprecated"}
            for v in deprecated]})
    return "\n".join(json.dumps(o) for o in objects)


def cluster_catalog(mc: MemCluster, name: str, ref: str | None, *, priority: int | None = None,
                    labels: dict[str, str] | None = None, unavailable: bool = False) -> None:
    """A ClusterCatalog as catalogd leaves it once it serves ``ref`` (None: not served yet, as while unpacking)."""
    spec: dict[str, Any] = {"source": {"type": "Image", "image": {"ref": "example.com/catalog:latest"}}}
    if priority is not None:
        spec["priority"] = priority
    if unavailable:
        spec["availabilityMode"] = "Unavailable"
    mc.create({"apiVersion": CATALOG[0], "kind": CATALOG[1], "metadata": {"name": name, "labels": labels or {}},
               "spec": spec})
    serving = ({"type": "Serving", "status": "True", "reason": "Available", "message": "Serving desired content"}
               if ref is not None else
               {"type": "Serving", "status": "False", "reason": "Unavailable", "message": "Catalog is not available"})
    status: dict[str, Any] = {"conditions": [serving]}
    if ref is not None:
        status["resolvedSource"] = {"type": "Image", "image": {"ref": ref}}
    mc.set_status(*CATALOG, name, None, status)


def served_cluster() -> MemCluster:
    mc = MemCluster()
    mc.register_kind(*CATALOG, namespaced=False, plural="clustercatalogs")
    allow_service_accounts(mc, "demo-system/installer")
    return mc


# -- the resolver, over catalogs read ----------------------------------------------------------------------------


def package(images: dict[str, str], tmp_path: Path, versions: tuple[str, ...],
            deprecated: tuple[str, ...] = ()) -> Package:
    from common.bundle.registryv1.catalog import load_catalog
    path = tmp_path / f"c-{'-'.join(versions)}-{len(deprecated)}.json"
    path.write_text(fbc(images, versions, deprecated=deprecated))
    return load_catalog(path).package("demo")


FAKE = {v: f"registry.example/demo@sha256:{v.replace('.', '') * 16}"[:80] for v in VERSIONS}


def test_the_highest_priority_catalog_wins_and_a_tie_is_refused_naming_every_catalog_offering(
        tmp_path: Path) -> None:
    old, new = package(FAKE, tmp_path, ("1.0.0",)), package(FAKE, tmp_path, VERSIONS)
    query = make_query("demo")
    index, resolution = resolve_among([RankedPackage("a", 0, new), RankedPackage("b", 5, old)], query, None)
    assert (index, resolution.bundle.name) == (1, "demo-operator.v1.0.0")
    with pytest.raises(ResolutionError) as refused:
        resolve_among([RankedPackage("zeta", 1, old), RankedPackage("alpha", 1, new), RankedPackage("low", 0, new)],
                      make_query("demo", channels=["stable"], version=">=1.0.0"), Installed("demo-operator.v1.0.0",
                                                                                            "1.0.0"))
    # operator-controller keeps every offer when the top two tie, lower priorities included, names sorted
    assert str(refused.value) == (
        'error upgrading from currently installed version "1.0.0": found bundles for package "demo" matching version '
        '">=1.0.0" in channels [stable] in multiple catalogs with the same priority [alpha low zeta]')
    with pytest.raises(ResolutionError, match='^no bundles found for package "demo" matching version "9.x"$'):
        resolve_among([RankedPackage("a", 0, new), RankedPackage("b", 0, old)], make_query("demo", version="9.x"),
                      None)


def test_a_deprecated_best_bundle_gives_way_to_another_catalogs_whatever_its_priority(tmp_path: Path) -> None:
    deprecated = package(FAKE, tmp_path, ("1.2.0",), deprecated=("1.2.0",))
    plain = package(FAKE, tmp_path, ("1.0.0",))
    query = make_query("demo")
    for order in ((RankedPackage("high", 9, deprecated), RankedPackage("low", 0, plain)),
                  (RankedPackage("low", 0, plain), RankedPackage("high", 9, deprecated))):
        index, resolution = resolve_among(order, query, None)
        assert (order[index].catalog, resolution.bundle.name) == ("low", "demo-operator.v1.0.0")
    # all deprecated: priority decides among them
    also = package(FAKE, tmp_path, ("1.0.0",), deprecated=("1.0.0",))
    index, resolution = resolve_among([RankedPackage("high", 9, deprecated), RankedPackage("low", 0, also)], query,
                                      None)
    assert (index, resolution.bundle.name) == (0, "demo-operator.v1.2.0")


def test_unavailable_catalogs_are_left_out_and_one_not_served_is_kept_with_what_stops_it() -> None:
    def obj(name: str, **fields: Any) -> dict[str, Any]:
        return {"metadata": {"name": name}, **fields}
    serving = {"conditions": [{"type": "Serving", "status": "True"}], "resolvedSource": {"image": {"ref": "r/c@d"}}}
    assert walked([
        obj("b", spec={"priority": -3}, status=serving),
        obj("off", spec={"availabilityMode": "Unavailable"}),
        obj("a", spec={}, status={"conditions": [{"type": "Serving", "status": "False", "reason": "Unavailable",
                                                  "message": "Catalog is not available"}]}),
        obj("c", spec={}, status={"conditions": [{"type": "Serving", "status": "True"}]}),
        obj("d", spec={}),
    ]) == [
        WalkedCatalog("a", 0, problem='catalog "a" is not being served',
                      said="its condition Serving is False (Unavailable: Catalog is not available)"),
        WalkedCatalog("b", -3, "docker://r/c@d"),
        WalkedCatalog("c", 0, problem='error: catalog "c" has a nil status.resolvedSource value',
                      said="its condition Serving is True (no reason: no message)"),
        WalkedCatalog("d", 0, problem='catalog "d" is not being served',
                      said="it has no condition Serving: catalogd has not served it (is catalogd running?)")]


# -- cosctl, against the cluster's ClusterCatalogs ---------------------------------------------------------------


def community_and_pinned(mc: MemCluster, images: dict[str, str], registry: Registry, tmp_path: Path) -> tuple[str, str]:
    """ClusterCatalog community (demo 1.0.0 to 1.2.0, priority 0) and pinned (1.0.0 and 1.1.0, priority 10),
    served: their images by digest."""
    community = push_index(registry, tmp_path, "op/community", fbc(images))
    pinned = push_index(registry, tmp_path, "op/pinned", fbc(images, ("1.0.0", "1.1.0")))
    cluster_catalog(mc, "community", community)
    cluster_catalog(mc, "pinned", pinned, priority=10)
    return community, pinned


def test_publish_resolves_across_cluster_catalogs_by_priority_and_upgrade_follows_them(
        images: dict[str, str], registry: Registry, tmp_path: Path) -> None:
    mc = served_cluster()
    _, pinned = community_and_pinned(mc, images, registry, tmp_path)
    cluster_catalog(mc, "retired", None, unavailable=True)
    code, out, err = cosctl("publish", "--package", "demo", "-n", "demo-system", "--catalog", "clustercatalogs:",
                            "--version", "1.0.0", cluster=mc)
    assert (code, out.splitlines()[0]) == (0, (
        f"package demo resolves to demo-operator.v1.0.0 (1.0.0) in ClusterCatalog pinned (priority 10, docker://"
        f"{pinned}): {images['1.0.0']}")), out + err
    assert source_of(mc, "demo-1") == {"catalog": "clustercatalogs:", "packageName": "demo", "version": "1.0.0"}
    succeed(mc, "demo-1")
    mc.merge_patch("olm.operatorframework.io/v1", "ClusterObjectSet", "demo-1", None, {"metadata": {"annotations": {
        "olm.operatorframework.io/bundle-source": json.dumps({"catalog": "clustercatalogs:", "packageName": "demo"})}}})
    # the pinned catalog outranks the community one, which offers 1.2.0: the next upgrade is 1.1.0
    code, out, err = cosctl("list", "--upgrades", "-o", "json", cluster=mc)
    assert (code, json.loads(out)[0]["upgrade"]) == (0, {
        "name": "demo-operator.v1.1.0", "version": "1.1.0", "image": images["1.1.0"], "clusterCatalog": "pinned"}), err
    code, out, err = cosctl("upgrade", "--all", cluster=mc)
    assert (code, columns(out)[-1]) == (0, ["demo", "demo", "1.0.0", "1.1.0", "demo-2 created"]), out + err
    assert (f"cosctl upgrade: package demo resolves to demo-operator.v1.1.0 (1.1.0) over demo-operator.v1.0.0 in "
            f"ClusterCatalog pinned (priority 10, docker://{pinned}) (--catalog kept from demo-1): "
            f"{images['1.1.0']}") not in err   # said on stdout, as publish says it
    assert f"in ClusterCatalog pinned (priority 10, docker://{pinned}) (--catalog kept from demo-1)" in out
    assert source_of(mc, "demo-2") == {"catalog": "clustercatalogs:", "packageName": "demo"}


def test_a_cluster_extension_without_catalog_resolves_from_the_cluster_catalogs_its_selector_picks(
        images: dict[str, str], registry: Registry, tmp_path: Path) -> None:
    mc = served_cluster()
    cluster_catalog(mc, "community", push_index(registry, tmp_path, "op/community", fbc(images)), priority=50,
                    labels={"tier": "community"})
    certified = push_index(registry, tmp_path, "op/certified", fbc(images, ("1.0.0", "1.1.0")))
    cluster_catalog(mc, "certified", certified, labels={"tier": "certified"})
    manifest = tmp_path / "ce.yaml"
    manifest.write_text(yaml.safe_dump({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension", "metadata": {"name": "my-demo"},
        "spec": {"namespace": "demo-system", "serviceAccount": {"name": "installer"},
                 "source": {"sourceType": "Catalog", "catalog": {"packageName": "demo", "selector": {
                     "matchExpressions": [{"key": "tier", "operator": "In", "values": ["certified"]}]}}}}}))
    code, out, err = cosctl("publish", "--extension", str(manifest), cluster=mc)
    assert (code, out.splitlines()[0]) == (0, (
        f"package demo resolves to demo-operator.v1.1.0 (1.1.0) in ClusterCatalog certified (priority 0, docker://"
        f"{certified}): {images['1.1.0']}")), out + err
    assert err == f"cosctl publish: unpacking the catalog of image docker://{certified}\n" + pulled("publish",
                                                                                                 images["1.1.0"])
    assert source_of(mc, "my-demo-1") == {"catalog": "clustercatalogs:tier in (certified)", "packageName": "demo"}


def test_a_cluster_extension_keeps_a_catalog_its_owner_was_published_from_by_image(
        images: dict[str, str], registry: Registry, tmp_path: Path) -> None:
    """Published once with --catalog (what the migration's first step does), the owner keeps that catalog: the
    manifest's selector picks ClusterCatalogs only for an owner resolved from them, or a first install."""
    mc = served_cluster()
    image = f"docker://{push_index(registry, tmp_path, 'op/community', fbc(images))}"
    manifest = tmp_path / "ce.yaml"
    manifest.write_text(yaml.safe_dump({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension", "metadata": {"name": "my-demo"},
        "spec": {"namespace": "demo-system", "serviceAccount": {"name": "installer"},
                 "source": {"sourceType": "Catalog", "catalog": {"packageName": "demo", "version": "1.0.0"}}}}))
    assert cosctl("publish", "--extension", str(manifest), "--catalog", image, cluster=mc)[0] == 0
    succeed(mc, "my-demo-1")
    code, out, err = cosctl("publish", "--extension", str(manifest), cluster=mc)   # no ClusterCatalog at all
    assert (code, out.splitlines()[0]) == (0, (
        f"package demo resolves to the installed bundle demo-operator.v1.0.0 (1.0.0) in catalog {image} "
        f"(--catalog kept from my-demo-1): {images['1.0.0']}")), out + err


def test_what_keeps_resolution_from_the_cluster_catalogs_is_said(images: dict[str, str], registry: Registry,
                                                                  tmp_path: Path) -> None:
    publish = ("publish", "--package", "demo", "-n", "demo-system", "--catalog")
    assert cosctl(*publish, "clustercatalogs:", cluster=MemCluster()) == (
        2, "", "cosctl publish: --catalog clustercatalogs:: the cluster serves no ClusterCatalogs "
               "(olm.operatorframework.io/v1, OLM v1's catalogd): name a catalog (--catalog docker://REF, a "
               "ClusterCatalog's spec.source.image.ref)\n")
    mc = served_cluster()
    # nothing to walk: OLM v1's answer, and why
    assert cosctl(*publish, "clustercatalogs:", cluster=mc) == (
        1, "", 'cosctl publish: no bundles found for package "demo"\n'
               "cosctl publish: cause: no ClusterCatalog was read: there is none on the cluster\n")
    cluster_catalog(mc, "retired", None, unavailable=True)
    assert cosctl(*publish, "clustercatalogs:tier=prod", "--version", "<2", cluster=mc) == (
        1, "", 'cosctl publish: no bundles found for package "demo" matching version "<2"\n'
               "cosctl publish: cause: no ClusterCatalog was read: there is none matching 'tier=prod'\n")
    assert cosctl(*publish, "clustercatalogs:", cluster=mc)[2].splitlines()[-1] == (
        "cosctl publish: cause: no ClusterCatalog was read: those on the cluster are Unavailable (retired)")
    # the selector is the API server's to parse (labels.Parse), and its refusal is said naming the option
    assert cosctl(*publish, "clustercatalogs:tier in prod", cluster=mc) == (
        2, "", "cosctl publish: --catalog clustercatalogs:tier in prod: the API server refused the label selector: "
               "unable to parse requirement: invalid label key in selector clause 'tier in prod'\n")
    # a refused list is the cluster's refusal (exit 1), with the right it needs
    mc.fail("list", Forbidden('clustercatalogs.olm.operatorframework.io is forbidden: User "me" cannot list resource '
                              '"clustercatalogs" in API group "olm.operatorframework.io" at the cluster scope'),
            kind="ClusterCatalog")
    assert cosctl(*publish, "clustercatalogs:", cluster=mc) == (
        1, "", "cosctl publish: --catalog clustercatalogs:: listing the cluster's ClusterCatalogs: the cluster "
               'refused: Forbidden: clustercatalogs.olm.operatorframework.io is forbidden: User "me" cannot list '
               'resource "clustercatalogs" in API group "olm.operatorframework.io" at the cluster scope (reading the '
               "cluster's ClusterCatalogs needs list on clustercatalogs.olm.operatorframework.io)\n")
    # one not served stops resolution, as it stops operator-controller's
    cluster_catalog(mc, "community", push_index(registry, tmp_path, "op/community", fbc(images)))
    cluster_catalog(mc, "new", None)
    assert cosctl(*publish, "clustercatalogs:", cluster=mc) == (
        1, "", 'cosctl publish: error walking catalogs: error getting package "demo" from catalog "new": catalog '
               '"new" is not being served\n'
               "cosctl publish: cause: ClusterCatalog new: its condition Serving is False (Unavailable: Catalog is "
               "not available); OLM v1 resolves nothing until every ClusterCatalog it would read is served: wait "
               "for catalogd, set its spec.availabilityMode to Unavailable, or give a selector that leaves it out\n")
    mc.delete(*CATALOG, "new")
    cluster_catalog(mc, "mirror", push_index(registry, tmp_path, "op/mirror", fbc(images)))
    code, out, err = cosctl(*publish, "clustercatalogs:", cluster=mc)
    assert (code, out, "".join(err.splitlines(keepends=True)[-2:])) == (
        1, "", 'cosctl publish: found bundles for package "demo" in multiple catalogs with the same priority '
               "[community mirror]\n"
               "cosctl publish: cause: OLM v1 does not choose between catalogs of the same priority: give one "
               "ClusterCatalog a higher spec.priority, or leave the others out with a selector (--catalog "
               "clustercatalogs:SELECTOR, a ClusterExtension's spec.source.catalog.selector)\n")
    assert cosctl(*publish[:-1], "--package", "nope", "--catalog", "clustercatalogs:", cluster=mc)[2].split(
        "\n", 2)[2] == (
        'cosctl publish: no bundles found for package "nope"\n'
        "cosctl publish: cause: no ClusterCatalog read (community, mirror) has package nope\n")


def test_resolve_says_the_cluster_catalog_and_a_bundle_by_path_refuses_them(
        images: dict[str, str], registry: Registry, tmp_path: Path) -> None:
    mc = served_cluster()
    community = push_index(registry, tmp_path, "op/community", fbc(images, deprecated=("1.2.0",)))
    cluster_catalog(mc, "community", community, priority=-1)
    code, out, err = cosctl("resolve", "demo", "--catalog", "clustercatalogs:", cluster=mc)
    assert code == 0, err
    assert out.splitlines() == [
        f"resolves to: demo-operator.v1.1.0 1.1.0 {images['1.1.0']}",
        f"from: ClusterCatalog community (priority -1, docker://{community})",
        "qualified, best first:",
        f"  demo-operator.v1.1.0  1.1.0  {images['1.1.0']}",
        f"  demo-operator.v1.0.0  1.0.0  {images['1.0.0']}",
        f"  demo-operator.v1.2.0  1.2.0  {images['1.2.0']}  (deprecated)"]
    code, out, err = cosctl("resolve", "demo", "--catalog", "clustercatalogs:", "--version", "1.2.0", "-o", "json",
                            cluster=mc)
    assert (code, json.loads(out)["clusterCatalog"], json.loads(out)["catalog"], json.loads(out)["resolved"]) == (
        0, "community", f"docker://{community}", {"name": "demo-operator.v1.2.0", "version": "1.2.0",
                                                  "image": images["1.2.0"]}), err
    assert cosctl("publish", str(demo(tmp_path / "bundle", "1.0.0")), "-n", "demo-system", "--catalog",
                  "clustercatalogs:", cluster=mc) == (
        2, "", "cosctl publish: --catalog clustercatalogs:: the cluster's ClusterCatalogs are read for --package only; "
               "a bundle given by path is held to the one catalog named (a ClusterCatalog's spec.source.image.ref as "
               "docker://REF)\n")


def test_an_owner_whose_cluster_catalogs_are_not_served_is_said_by_list_and_by_upgrade(
        images: dict[str, str], registry: Registry, tmp_path: Path) -> None:
    mc = served_cluster()
    cluster_catalog(mc, "community", push_index(registry, tmp_path, "op/community", fbc(images)))
    assert cosctl("publish", "--package", "demo", "-n", "demo-system", "--catalog", "clustercatalogs:", "--version",
                  "1.0.0", cluster=mc)[0] == 0
    succeed(mc, "demo-1")
    mc.delete(*CATALOG, "community")
    cluster_catalog(mc, "community", None)   # catalogd unpacking it again
    code, out, err = cosctl("list", "--upgrades", "-o", "json", cluster=mc)
    assert (code, json.loads(out)[0]["upgradeProblem"]) == (1, (
        'error walking catalogs: error getting package "demo" from catalog "community": catalog "community" is not '
        "being served; ClusterCatalog community: its condition Serving is False (Unavailable: Catalog is not "
        "available); OLM v1 resolves nothing until every ClusterCatalog it would read is served: wait for catalogd, "
        "set its spec.availabilityMode to Unavailable, or give a selector that leaves it out")), err
    code, out, err = cosctl("upgrade", "--all", cluster=mc)
    assert (code, columns(out)[-1]) == (1, ["demo", "demo", "1.0.0", "-", "failed (said on stderr)"]), out + err


def extension_with(tmp_path: Path, selector: Any, **catalog: Any) -> str:
    path = tmp_path / "ce.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension", "metadata": {"name": "my-demo"},
        "spec": {"namespace": "demo-system", "serviceAccount": {"name": "installer"},
                 "source": {"sourceType": "Catalog", "catalog": {"packageName": "demo", "selector": selector,
                                                                  **catalog}}}}))
    return str(path)


@pytest.mark.parametrize(("selector", "why"), [
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a,b"]}]},
     'spec.source.catalog.selector: desired catalog selector is invalid: values[0][tier]: Invalid value: "a,b": a '
     "valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
     "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
     "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ({"matchExpressions": [{"key": "tier", "operator": "In"}]},
     "spec.source.catalog.selector: desired catalog selector is invalid: values: Invalid value: null: for 'in', "
     "'notin' operators, values set can't be empty"),
    ({"matchExpressions": [{"key": "tier", "operator": "Foo", "values": ["a"]}]},
     'spec.source.catalog.selector: desired catalog selector is invalid: "Foo" is not a valid label selector '
     "operator"),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists", "values": ["a"]}]},
     'spec.source.catalog.selector: desired catalog selector is invalid: values: Invalid value: ["a"]: values set '
     "must be empty for exists and does not exist"),
    ({"matchLabels": {"team": True}}, "spec.source.catalog.selector.matchLabels.team: must be a string, not boolean"),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": "abc"}]},
     "spec.source.catalog.selector.matchExpressions[0].values: must be a list of strings"),
])
def test_a_selector_operator_controller_refuses_is_refused_naming_the_field(selector: Any, why: str,
                                                                            tmp_path: Path) -> None:
    manifest = extension_with(tmp_path, selector)
    assert cosctl("publish", "--extension", manifest, cluster=served_cluster()) == (
        2, "", f"cosctl publish: {manifest}: {why}\n")


def test_what_a_manifest_without_catalog_cannot_read_names_the_manifest_and_a_forbidden_list_fails_its_owners_only(
        images: dict[str, str], registry: Registry, tmp_path: Path) -> None:
    manifest = extension_with(tmp_path, {"matchLabels": {"tier": "certified"}})
    assert cosctl("publish", "--extension", manifest, cluster=MemCluster()) == (
        2, "", f"cosctl publish: {manifest}: spec.source.catalog.selector: the cluster serves no ClusterCatalogs "
               "(olm.operatorframework.io/v1, OLM v1's catalogd): name a catalog (--catalog docker://REF, a "
               "ClusterCatalog's spec.source.image.ref)\n")
    # an owner resolved from ClusterCatalogs, one from an image; listing ClusterCatalogs is forbidden
    mc = served_cluster()
    community = push_index(registry, tmp_path, "op/community", fbc(images))
    cluster_catalog(mc, "community", community)
    for owner, catalog in (("by-cc", "clustercatalogs:"), ("by-image", f"docker://{community}")):
        assert cosctl("publish", "--package", "demo", "--owner", owner, "-n", f"{owner}-system", "--catalog", catalog,
                      "--version", "1.0.0", cluster=mc)[0] == 0
        succeed(mc, f"{owner}-1")
        mc.merge_patch("olm.operatorframework.io/v1", "ClusterObjectSet", f"{owner}-1", None, {"metadata": {
            "annotations": {"olm.operatorframework.io/bundle-source": json.dumps({"catalog": catalog,
                                                                                   "packageName": "demo"})}}})
    mc.fail("list", Forbidden('clustercatalogs.olm.operatorframework.io is forbidden: User "cos-upgrade" cannot list '
                              'resource "clustercatalogs" in API group "olm.operatorframework.io" at the cluster '
                              "scope"), kind="ClusterCatalog", times=9)
    code, out, err = cosctl("upgrade", "--all", "-o", "json", cluster=mc)
    assert code == 1, err
    assert [(o["owner"], o["result"], o.get("problem")) for o in json.loads(out)] == [
        ("by-cc", "failed", "catalog clustercatalogs:: listing the cluster's ClusterCatalogs: the cluster refused: "
                            'Forbidden: clustercatalogs.olm.operatorframework.io is forbidden: User "cos-upgrade" '
                            'cannot list resource "clustercatalogs" in API group "olm.operatorframework.io" at the '
                            "cluster scope (reading the cluster's ClusterCatalogs needs list on "
                            "clustercatalogs.olm.operatorframework.io)"),
        ("by-image", "created", None)]


def test_a_manifest_selector_not_used_for_a_catalog_kept_by_image_is_said(images: dict[str, str],
                                                                          registry: Registry, tmp_path: Path) -> None:
    mc = served_cluster()
    image = f"docker://{push_index(registry, tmp_path, 'op/community', fbc(images))}"
    manifest = extension_with(tmp_path, {"matchLabels": {"tier": "certified"}}, version="1.0.0")
    assert cosctl("publish", "--extension", manifest, "--catalog", image, cluster=mc)[0] == 0
    succeed(mc, "my-demo-1")
    code, out, err = cosctl("publish", "--extension", manifest, "--dry-run", cluster=mc)
    assert (code, err.splitlines()[0]) == (0, (
        f"cosctl publish: warning: {manifest}: spec.source.catalog.selector is not used: the catalog the owner was "
        "published from is kept (give --catalog clustercatalogs: to resolve from the cluster's ClusterCatalogs)")), \
        out + err


def test_search_lists_each_cluster_catalogs_packages_and_which_one_olm_resolves_a_package_from(
        images: dict[str, str], registry: Registry, tmp_path: Path) -> None:
    mc = served_cluster()
    community, pinned = community_and_pinned(mc, images, registry, tmp_path)
    cluster_catalog(mc, "unpacking", None)
    unpacking = ("cosctl search: warning: ClusterCatalog unpacking is not searched: its condition Serving is False "
                 "(Unavailable: Catalog is not available) (OLM v1 resolves nothing while it is not served)")
    code, out, err = cosctl("search", "--catalog", "clustercatalogs:", cluster=mc)
    assert (code, columns(out), err.splitlines()[-1]) == (0, [
        ["PACKAGE", "CLUSTERCATALOG", "DEFAULT CHANNEL", "LATEST (ANY CHANNEL)", "CHANNELS", "DEPRECATED"],
        ["demo", "pinned", "stable", "1.1.0", "stable", "-"],     # the higher priority first
        ["demo", "community", "stable", "1.2.0", "stable", "-"]], unpacking), err
    code, out, err = cosctl("search", "--catalog", "clustercatalogs:", "--package", "demo", cluster=mc)
    assert (code, out.split("\n\n")) == (0, [
        f"ClusterCatalog pinned (priority 10, docker://{pinned}):\npackage demo, default channel stable\n"
        "latest: 1.1.0, this catalog's best with no channel or range\nCHANNEL  VERSIONS (newest first)\n"
        "stable   1.1.0, 1.0.0",
        f"ClusterCatalog community (priority 0, docker://{community}):\npackage demo, default channel stable\n"
        "latest: 1.2.0, this catalog's best with no channel or range\nCHANNEL  VERSIONS (newest first)\n"
        "stable   1.2.0, 1.1.0, 1.0.0",
        "OLM v1 resolves nothing while ClusterCatalog unpacking is not served; from the others, it would resolve "
        "demo from ClusterCatalog pinned: demo-operator.v1.1.0\n"
        "install: cosctl publish --package demo --catalog clustercatalogs: -n NAMESPACE [--channel NAME] "
        "[--version RANGE]\n"]), err
    mc.delete(*CATALOG, "unpacking")
    mc.merge_patch(*CATALOG, "pinned", None, {"spec": {"priority": 0}})
    code, out, err = cosctl("search", "--catalog", "clustercatalogs:", "--package", "demo", "-o", "json", cluster=mc)
    assert (code, [(p["clusterCatalog"], p["priority"], p["latest"]["version"]) for p in json.loads(out)]) == (
        0, [("community", 0, "1.2.0"), ("pinned", 0, "1.1.0")]), err
    assert cosctl("search", "--catalog", "clustercatalogs:", "--package", "demo", cluster=mc)[1].splitlines()[-2] == (
        'OLM v1 refuses to resolve demo: found bundles for package "demo" in multiple catalogs with the same '
        "priority [community pinned]")
    # a package one ClusterCatalog cannot read stops OLM v1 too: said, not passed over
    broken = push_index(registry, tmp_path, "op/broken", '{"schema": "olm.package", "name": "demo", '
                                                         '"defaultChannel": 5}')
    cluster_catalog(mc, "broken", broken, priority=50)
    code, out, err = cosctl("search", "--catalog", "clustercatalogs:", "--package", "demo", cluster=mc)
    assert (code, out.splitlines()[-2]) == (0, (
        "OLM v1 resolves nothing while package demo of ClusterCatalog broken cannot be read; from the others, it "
        'would refuse to resolve demo: found bundles for package "demo" in multiple catalogs with the same priority '
        "[community pinned]")), err
    assert "cosctl search: warning: package demo in ClusterCatalog broken cannot be read: " in err
    mc.delete(*CATALOG, "broken")
    code, out, err = cosctl("search", "nope", "--catalog", "clustercatalogs:", cluster=mc)
    assert (code, out, err.splitlines()[-1]) == (
        1, "", "cosctl search: the ClusterCatalogs searched (community, pinned) have no package whose name contains "
               "'nope'")


def test_resolve_answers_for_a_cluster_extension_manifest_as_publish_would_resolve_it(
        images: dict[str, str], registry: Registry, tmp_path: Path) -> None:
    mc = served_cluster()
    community, _ = community_and_pinned(mc, images, registry, tmp_path)   # pinned, of higher priority, left out
    mc.merge_patch(*CATALOG, "community", None, {"metadata": {"labels": {"tier": "community"}}})
    manifest = extension_with(tmp_path, {"matchLabels": {"tier": "community"}}, version="<1.2")
    code, out, err = cosctl("resolve", "--extension", manifest, "-o", "json", cluster=mc)
    assert (code, {k: json.loads(out)[k] for k in ("package", "clusterCatalog", "installed", "resolved")}) == (0, {
        "package": "demo", "clusterCatalog": "community", "installed": None,
        "resolved": {"name": "demo-operator.v1.1.0", "version": "1.1.0", "image": images["1.1.0"]}}), err
    assert json.loads(out)["source"] == {"catalog": "clustercatalogs:tier=community", "packageName": "demo",
                                         "channels": [], "version": "<1.2", "kept": [], "keptFrom": None}
    # installed by the manifest: the owner's installed bundle is read, as publish reads it
    assert cosctl("publish", "--extension", manifest, cluster=mc)[0] == 0
    succeed(mc, "my-demo-1")
    code, out, err = cosctl("resolve", "--extension", manifest, cluster=mc)
    assert (code, out.splitlines()[:3]) == (0, [
        "installed: demo-operator.v1.1.0 (1.1.0), by ClusterObjectSet my-demo-1",
        f"resolves to: demo-operator.v1.1.0 1.1.0 {images['1.1.0']}",
        f"from: ClusterCatalog community (priority 0, docker://{community})"]), err
    assert cosctl("resolve", "demo", "--extension", manifest, cluster=mc) == (
        2, "", f"cosctl resolve: demo and --extension {manifest}: the ClusterExtension names the package "
               "(spec.source.catalog.packageName); give one or the other\n")
    assert cosctl("resolve", cluster=mc) == (
        2, "", "cosctl resolve: give PACKAGE, or --extension FILE (a ClusterExtension manifest)\n")
