"""What the tests that pull from the test registry (tests/support/registry_server.py) share: trusting its CA the way
containers tools do (certs.d), and pushing a bundle directory to it as a bundle image."""

from __future__ import annotations

from pathlib import Path

from tests.registryv1.bundles import bundle_image_layout
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
