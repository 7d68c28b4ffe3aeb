"""Fixtures of the tests that pull images: a HOME and containers configuration of the test's own, a CA, and a
registry over TLS that the HOME trusts; the demo package's three bundle images pushed to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.registryv1.demo_catalog import VERSIONS, demo
from tests.registryv1.pulling import push_bundle, trust
from tests.support.registry_server import Registry
from tests.webhook.support import CA


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own, and no containers configuration but what the test writes."""
    home = tmp_path / "home"
    (home / ".config" / "containers" / "registries.d").mkdir(parents=True)   # not the machine's lookaside
    for name in ("CONTAINERS_POLICY_JSON", "CONTAINERS_REGISTRIES_CONF_OVERRIDE", "_CONTAINERS_ROOTLESS_UID",
                 "XDG_CONFIG_HOME",
                 "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "REGISTRY_AUTH_FILE", "DOCKER_CONFIG",
                 "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "run").mkdir()   # podman login's runtime directory: not the machine's /run/containers/<uid>
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("COSCTL_CACHE_DIR", str(tmp_path / "cache"))
    conf = tmp_path / "registries.conf"
    conf.write_text("")
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(conf))
    return home


@pytest.fixture
def ca(tmp_path: Path) -> CA:
    (tmp_path / "ca").mkdir()
    return CA(tmp_path / "ca")


@pytest.fixture
def registry(ca: CA, home: Path) -> Iterator[Registry]:
    with Registry(ca) as server:
        trust(home, ca, server)
        yield server


@pytest.fixture
def images(registry: Registry, tmp_path: Path) -> dict[str, str]:
    """demo 1.0.0, 1.1.0 and 1.2.0 (:mod:`tests.registryv1.demo_catalog`) pushed as op/demo-bundle:vVERSION; each
    version's image by digest, as catalogs name them."""
    return {v: registry.ref("op/demo-bundle", push_bundle(registry, demo(tmp_path / f"b{v}", v), tmp_path,
                                                          tag=f"v{v}"))
            for v in VERSIONS}
