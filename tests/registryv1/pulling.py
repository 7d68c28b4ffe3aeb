"""What the tests that pull from the test registry (tests/support/registry_server.py) share: trusting its CA the way
containers tools do (certs.d), and pushing a bundle directory to it as a bundle image, or a File-Based Catalog as an
index image."""

from __future__ import annotations

from pathlib import Path

from tests.registryv1.bundles import Layout, bundle_image_layout, files_layer
from tests.support.registry_server import Registry
from tests.webhook.support import CA


def trust(home: Path, ca: CA, registry: Registry) -> None:
    """``registry``'s certificate is trusted through ``home``'s certs.d, as podman and skopeo read it."""
    directory = home / ".config" / "containers" / "certs.d" / registry.host
    directory.mkdir(parents=True)
    (directory / "ca.crt").write_bytes(ca.ca_file.read_bytes())


def push_bundle(registry: Registry, bundle_dir: Path, tmp_path: Path, repo: str = "op/demo-bundle",
                tag: str = "v1") -> str:
    """Push ``bundle_dir`` as the image ``repo:tag``; its manifest digest."""
    layout = bundle_image_layout(tmp_path / f"layout-{repo.replace('/', '-')}-{tag}", bundle_dir)
    return registry.push_layout(repo, tag, layout)


def push_index(registry: Registry, tmp_path: Path, repo: str, catalog_text: str, *, package: str = "demo",
               tag: str = "latest") -> str:
    """``catalog_text`` (File-Based Catalog JSON) as an index image's /configs/``package``/catalog.json, pushed as
    ``repo:tag``; its reference by digest, as a ClusterCatalog's status.resolvedSource names it."""
    layout = Layout(tmp_path / f"index-{repo.replace('/', '-')}-{tag}")
    layer = layout.layer(files_layer({f"configs/{package}/catalog.json": catalog_text.encode()}))
    layout.finish([layout.image([layer], labels={"operators.operatorframework.io.index.configs.v1": "/configs"})])
    return registry.ref(repo, registry.push_layout(repo, tag, layout.root))
