"""The demo package the catalog tests share: three versions of a bundle, each pushed to the test registry (the
``images`` fixture of conftest.py), and a File-Based Catalog chaining them in channel stable."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from common.contract import api
from common.testing.memcluster import MemCluster
from tests.producer.helpers import cosctl
from tests.registryv1.bundles import annotations_yaml, config_map, crd, csv, write_bundle

COS = (api.API_VERSION, api.KIND)
VERSIONS = ("1.0.0", "1.1.0", "1.2.0")


def demo(root: Path, version: str) -> Path:
    """demo at ``version``: a CRD, and a ConfigMap saying the version (so that each version's content differs)."""
    settings = {**config_map("demo-settings"), "data": {"version": version}}
    return write_bundle(root, manifests={"a-crd.yaml": crd(), "b-settings.yaml": settings,
                                         "demo.clusterserviceversion.yaml": csv(f"demo-operator.v{version}",
                                                                                version=version)},
                        annotations=annotations_yaml(package="demo"))


def write_catalog(path: Path, images: dict[str, str]) -> Path:
    """demo's channel stable: 1.0.0, then 1.1.0 replacing it, then 1.2.0 replacing 1.1.0."""
    names = [f"demo-operator.v{v}" for v in VERSIONS]
    objects: list[dict[str, Any]] = [
        {"schema": "olm.package", "name": "demo", "defaultChannel": "stable"},
        {"schema": "olm.channel", "name": "stable", "package": "demo",
         "entries": [{"name": names[0]}, {"name": names[1], "replaces": names[0]},
                     {"name": names[2], "replaces": names[1]}]},
        *({"schema": "olm.bundle", "name": f"demo-operator.v{v}", "package": "demo", "image": images[v],
           "properties": [{"type": "olm.package", "value": {"packageName": "demo", "version": v}}]}
          for v in VERSIONS)]
    path.write_text("\n".join(json.dumps(o) for o in objects))
    return path


def succeed(mc: MemCluster, name: str) -> None:
    mc.set_status(*COS, name, None, {"conditions": [{"type": "Succeeded", "status": "True", "reason": "Succeeded",
                                                     "message": "", "lastTransitionTime": "2026-11-26T00:00:00Z"}]})


def install(mc: MemCluster, catalog: str, *extra: str) -> None:
    """demo published by ``publish --package`` at 1.0.0 (``--version 1.0.0``) for the first time, and rolled out."""
    code, out, err = cosctl("publish", "--package", "demo", "-n", "demo-system", "--catalog", catalog, "--version",
                            "1.0.0", *extra, cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "ClusterObjectSet demo-1 (revision 1) created"), out + err
    succeed(mc, "demo-1")


def source_of(mc: MemCluster, name: str) -> Any:
    cos = mc.get(*COS, name)
    return json.loads(cos["metadata"]["annotations"][api.ANNOTATION_BUNDLE_SOURCE])


def pulled(command: str, image: str) -> str:
    """What a command says on stderr when it pulls ``image`` (a reference by digest: no other digest to name)."""
    return f"cosctl {command}: pulled docker://{image}\n"


def columns(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line) for line in text.splitlines()]
