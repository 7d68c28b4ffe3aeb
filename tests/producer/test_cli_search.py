"""``cosctl search``: what a catalog offers, read offline, with exact output."""

from __future__ import annotations

import json
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


def test_search_lists_the_packages_with_the_newest_version_not_deprecated(tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json"))
    assert cosctl("search", "--catalog", catalog) == (0, (
        "PACKAGE  DEFAULT CHANNEL  LATEST      CHANNELS      DEPRECATED\n"
        "demo     stable           1.3.0-rc.1  stable, fast  -\n"
        "other    -                -           -             -\n"
        "widget   alpha            0.1.0       alpha         use demo\n"), "")
    assert cosctl("search", "--catalog", catalog, "WID") == (0, (
        "PACKAGE  DEFAULT CHANNEL  LATEST  CHANNELS  DEPRECATED\n"
        "widget   alpha            0.1.0   alpha     use demo\n"), "")
    assert cosctl("search", "--catalog", catalog, "zzz") == (
        1, "", f"cosctl search: catalog {catalog} has no package whose name contains 'zzz'\n")


def test_search_of_one_package_shows_each_channel_newest_first_and_how_to_install_it(tmp_path: Path) -> None:
    catalog = str(write_catalog(tmp_path / "catalog.json"))
    assert cosctl("search", "--catalog", catalog, "--package", "demo") == (0, (
        "package demo, default channel stable\n"
        "CHANNEL            VERSIONS (newest first)\n"
        "stable             1.2.0 (deprecated), 1.1.0, 1.0.0\n"
        "fast (deprecated)  1.3.0-rc.1, 1.2.0 (deprecated), 1.1.0, demo.broken (version unreadable)\n"
        f"install: cosctl publish --package demo --catalog {catalog} -n NAMESPACE [--channel stable] "
        "[--version RANGE]\n"), "")
    code, out, _ = cosctl("search", "--catalog", catalog, "--package", "demo", "-o", "json")
    [demo] = json.loads(out)
    assert (code, demo["latest"], demo["channels"][1]["deprecated"], demo["channels"][1]["versions"][-1]) == (
        0, {"bundle": "demo.v1.3.0-rc.1", "version": "1.3.0-rc.1", "deprecated": False}, "fast is retired",
        {"bundle": "demo.broken", "version": None, "deprecated": False})
    assert cosctl("search", "--catalog", catalog, "--package", "dmeo") == (
        1, "", f"cosctl search: catalog {catalog} has no package dmeo\n")


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
