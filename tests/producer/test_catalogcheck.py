"""Which bundle an owner has installed, as OLM v1 reads it from revisions (common/bundle/catalogcheck.py)."""

from __future__ import annotations

from typing import Any

from common.bundle.catalogcheck import InstalledRevision, installed_bundle
from common.bundle.registryv1.resolve import Installed
from common.contract import api


def revision(name: str, version: str | None, *, succeeded: bool, archived: bool = False) -> dict[str, Any]:
    annotations = {} if version is None else {api.ANNOTATION_BUNDLE_NAME: f"demo.v{version}",
                                              api.ANNOTATION_BUNDLE_VERSION: version}
    return {"metadata": {"name": name, "annotations": annotations},
            "spec": {"lifecycleState": api.LIFECYCLE_ARCHIVED if archived else api.LIFECYCLE_ACTIVE},
            "status": {"conditions": [{"type": "Succeeded", "status": "True" if succeeded else "False"}]}}


def test_the_newest_succeeded_revision_that_is_not_archived():
    revisions = [revision("demo-1", "1.0.0", succeeded=True, archived=True),
                 revision("demo-2", "1.1.0", succeeded=True),
                 revision("demo-3", "1.2.0", succeeded=False)]  # still rolling out: not installed yet
    assert installed_bundle(revisions) == InstalledRevision(Installed("demo.v1.1.0", "1.1.0"), "demo-2",
                                                            (("demo-3", "demo.v1.2.0"),))
    assert installed_bundle(revisions[:2]) == InstalledRevision(Installed("demo.v1.1.0", "1.1.0"), "demo-2")


def test_nothing_installed():
    assert installed_bundle([]) is None
    assert installed_bundle([revision("demo-1", "1.0.0", succeeded=True, archived=True)]) is None
    assert installed_bundle([revision("demo-1", "1.0.0", succeeded=False)]) is None
    # plain manifests: a revision without OLM v1's bundle annotations installs no bundle
    assert installed_bundle([revision("demo-1", None, succeeded=True)]) is None


def test_a_version_recorded_as_the_csv_spelled_it_reads_as_the_version_it_meant():
    """An earlier cosctl recorded ``v1.2`` where OLM v1 records ``1.2.0``; what is no version stays as it is."""
    for recorded, read in (("v1.2", "1.2.0"), ("01.2.3", "1.2.3"), (" v2", "2.0.0"), ("1.2.3-rc.1", "1.2.3-rc.1"),
                           ("build-42", "build-42"), ("", ""), ("1.2-rc.1", "1.2-rc.1")):
        installed = installed_bundle([revision("demo-1", recorded, succeeded=True)])
        assert installed is not None and installed.bundle.version == read, recorded
