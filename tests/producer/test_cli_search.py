"""``cosctl search``: what a catalog offers, read offline, with exact output."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.producer.helpers import cosctl


def bundle(package: str, version: str | None, name: str | None = None) -> dict[str, Any]:
    props = [] if version is None else [{"type": "olm.package", "value": {"packageName": package, "version": version}}]
    return {"schema": "olm.bundle", "package": package, "name": name or f"{package}.v{version}",
            "image": f"quay.io/{package}:{version}", "properties": props}


def write_catalog(path: Path) -> Path:
    """demo: channels stable (1.0.0, 1.1.0, 1.2.0 deprecated) and fast (1.3.0-rc.1 too), a bundle without a version
    in fast; widget: one channel, the package deprecated; other: nothing but its package object."""
    objects: list[dict[str, Any]] = [
        {"schema": "olm.package", "name": "demo", "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": "demo", "name": "stable",
         "entries": [{"name": "demo.v1.0.0"}, {"name": "demo.v1.1.0"}, {"name": "demo.v1.2.0"}]},
        {"schema": "olm.channel", "package": "demo", "name": "fast",
         "entries": [{"name": "demo.v1.1.0"}, {"name": "demo.v1.2.0"}, {"name": "demo.v1.3.0-rc.1"},
                     {"name": "demo.broken"}]},
        bundle("demo", "1.0.0"), bundle("demo", "1.1.0"), bundle("demo", "1.2.0"), bundle("demo", "1.3.0-rc.1"),
        bundle("demo", None, "demo.broken"),
        {"schema": "olm.deprecations", "package": "demo", "entries": [
            {"reference": {"schema": "olm.bundle", "name": "demo.v1.2.0"}, "message": "1.2.0 loses data"},
            {"reference": {"schema": "olm.channel", "name": "fast"}, "message": "fast is retired"}]},
        {"schema": "olm.package", "name": "widget", "defaultChannel": "alpha"},
        {"schema": "olm.channel", "package": "widget", "name": "alpha", "entries": [{"name": "widget.v0.1.0"}]},
        bundle("widget", "0.1.0"),
        {"schema": "olm.deprecations", "package": "widget", "entries": [
            {"reference": {"schema": "olm.package"}, "message": "use demo"}]},
        {"schema": "olm.package", "name": "other"},
    ]
    path.write_text("\n".join(json.dumps(o) for o in objects))
    return path


def test_search_lists_the_packages_with_what_publish_package_would_install(tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json"))
    assert cosctl("search", "--catalog", catalog) == (0, (
        "PACKAGE  DEFAULT CHANNEL  LATEST (ANY CHANNEL)  CHANNELS      DEPRECATED\n"
        "demo     stable           1.3.0-rc.1            stable, fast  -\n"
        "other    -                -                     -             -\n"
        "widget   alpha            0.1.0                 alpha         use demo\n"), "")
    assert cosctl("search", "--catalog", catalog, "WID") == (0, (
        "PACKAGE  DEFAULT CHANNEL  LATEST (ANY CHANNEL)  CHANNELS  DEPRECATED\n"
        "widget   alpha            0.1.0                 alpha     use demo\n"), "")
    assert cosctl("search", "--catalog", catalog, "zzz") == (
        1, "", f"cosctl search: catalog {catalog} has no package whose name contains 'zzz'\n")
    assert cosctl("search", "--catalog", catalog, "zzz", "--package", "demo") == (
        1, "", "cosctl search: zzz and --package demo: give TEXT to list the packages it matches, or --package for "
               "one package\n")


def test_search_of_one_package_shows_each_channel_newest_first_and_how_to_install_it(tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json"))
    assert cosctl("search", "--catalog", catalog, "--package", "demo") == (0, (
        "package demo, default channel stable\n"
        "latest: 1.3.0-rc.1, what publish --package installs without --channel or --version (from any channel)\n"
        "CHANNEL                             VERSIONS (newest first)\n"
        "stable                              1.2.0 (deprecated), 1.1.0, 1.0.0\n"
        "fast (deprecated: fast is retired)  1.3.0-rc.1, 1.2.0 (deprecated), 1.1.0, demo.broken (version unreadable)\n"
        f"install: cosctl publish --package demo --catalog {catalog} -n NAMESPACE [--channel stable] "
        "[--version RANGE]\n"), "")
    code, out, _ = cosctl("search", "--catalog", catalog, "--package", "demo", "-o", "json")
    [demo] = json.loads(out)
    assert (code, demo["latest"], demo["channels"][1]["deprecated"], demo["channels"][0]["versions"][0]) == (
        0, {"bundle": "demo.v1.3.0-rc.1", "version": "1.3.0-rc.1", "deprecated": False, "deprecationMessage": None,
            "declaresDependencies": False}, "fast is retired",
        {"bundle": "demo.v1.2.0", "version": "1.2.0", "deprecated": True, "deprecationMessage": "1.2.0 loses data",
         "declaresDependencies": False})
    assert cosctl("search", "--catalog", catalog, "--package", "dmeo") == (
        1, "", f"cosctl search: catalog {catalog} has no package dmeo\n")


def test_what_olm_v1_refuses_to_install_is_marked(tmp_path: Path) -> None:
    """A bundle declaring dependencies (OLM v1 installs none), one in no channel, one listed twice, two sharing a
    version, a multi-line deprecation message, a catalog path with a space."""
    needs = bundle("deps", "2.0.0")
    needs["properties"].append({"type": "olm.gvk.required", "value": {"group": "etcd.database.coreos.com",
                                                                      "kind": "EtcdCluster", "version": "v1beta2"}})
    objects: list[dict[str, Any]] = [
        {"schema": "olm.package", "name": "deps", "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": "deps", "name": "stable",
         "entries": [{"name": "deps.v1.0.0"}, {"name": "deps.v1.0.0"}, {"name": "deps.v2.0.0"},
                     {"name": "deps.v2.0.0-again"}]},
        bundle("deps", "1.0.0"), needs, bundle("deps", "2.0.0", "deps.v2.0.0-again"), bundle("deps", "3.0.0"),
        {"schema": "olm.deprecations", "package": "deps", "entries": [
            {"reference": {"schema": "olm.package"}, "message": "Moved.\nUse other-operator instead.\n"}]},
    ]
    (tmp_path / "my catalogs").mkdir()
    catalog = tmp_path / "my catalogs" / "catalog.json"
    catalog.write_text("\n".join(json.dumps(o) for o in objects))
    code, out, err = cosctl("search", "--catalog", str(catalog), "--package", "deps")
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        "package deps, default channel stable (deprecated: Moved. Use other-operator instead.)",
        "latest: 3.0.0, what publish --package installs without --channel or --version (from any channel)"]
    assert out.splitlines()[3:] == [
        "stable           2.0.0 (deps.v2.0.0) (declares dependencies), 2.0.0 (deps.v2.0.0-again), 1.0.0",
        "(in no channel)  3.0.0",
        f"install: cosctl publish --package deps --catalog '{catalog}' -n NAMESPACE [--channel stable] "
        "[--version RANGE]"]
    catalog.write_text("\n".join(json.dumps(o) for o in objects
                                 if o.get("name") not in ("deps.v3.0.0", "deps.v2.0.0-again")))
    code, out, _ = cosctl("search", "--catalog", str(catalog))
    assert (code, re.split(r"\s{2,}", out.splitlines()[1])) == (
        0, ["deps", "stable", "2.0.0 (declares dependencies)", "stable", "Moved. Use other-operator instead."])
    code, out, _ = cosctl("search", "--catalog", str(catalog), "--package", "deps")
    assert out.splitlines()[1] == (
        'latest: 2.0.0 (declares dependencies), which OLM v1 refuses: validating bundle "deps.v2.0.0": '
        'bundle "deps.v2.0.0" has a dependency declared via property "olm.gvk.required" which is currently not '
        "supported")


def test_a_package_the_catalog_spoils_is_said_and_the_others_listed(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path / "catalog.json")
    with catalog.open("a") as handle:
        handle.write('\n{"package": "broken", "name": "no-schema"}\n{"schema": "olm.package", "name": "broken"}\n')
    code, out, err = cosctl("search", "--catalog", str(catalog))
    assert (code, [line.split()[0] for line in out.splitlines()]) == (0, ["PACKAGE", "demo", "other", "widget"])
    assert err == (f"cosctl search: warning: package broken cannot be read: {catalog}: document 15: the object has "
                   "no schema (each catalog object needs one, such as olm.bundle)\n")
    code, out, err = cosctl("search", "--catalog", str(catalog), "--package", "broken")
    assert (code, out) == (2, "")


def test_resolve_lists_a_qualified_bundle_whose_version_olm_v1_cannot_read(tmp_path: Path) -> None:
    """It qualifies (ranked last) and is listed, as before it raised an internal error while printing."""
    catalog = write_catalog(tmp_path / "catalog.json")
    code, out, err = cosctl("resolve", "demo", "--catalog", str(catalog), "--channel", "fast")
    assert (code, err) == (0, "cosctl resolve: warning: deprecated: fast is retired\n")
    assert [line.split()[:2] for line in out.splitlines() if "demo.broken" in line] == [["demo.broken",
                                                                                        "(unreadable)"]]
