"""900 manifests (about 3 MiB, 200 CRDs) through cosctl pack, back through the reconciler's ref resolution,
and through cosctl validate (the webhook's own rules)."""

from __future__ import annotations

import base64
import io
import json
from collections import Counter

import pytest
import yaml

from common.bundle import refs
from common.bundle.packing import MAX_SECRET_BYTES, to_json
from common.bundle.phasing import clean, sort_into_phases
from common.contract import api
from common.cosctl import validate
from common.testing.memcluster import MemCluster
from tests.producer.helpers import cosctl
from tests.support import big_bundle


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    """The bundle written as nine multi-document YAML files, packed by cosctl into -o out/."""
    root = tmp_path_factory.mktemp("big")
    originals = big_bundle.manifests()
    src = root / "bundle"
    src.mkdir()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    for f in range(9):
        (src / f"part-{f}.yaml").write_text(yaml.dump_all(originals[f * 100:(f + 1) * 100], Dumper=dumper))
    code, out, _err = cosctl("pack", str(src), "--owner", "big", "-o", str(root / "out"))
    assert (code, out) == (0, "")
    docs = [yaml.load(p.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            for p in sorted((root / "out").iterdir())]
    return originals, docs, root / "out"


def test_pack_gives_a_cos_with_20_phases_and_secrets_within_limits(packed):
    originals, docs, _ = packed
    assert sum(len(to_json(o)) for o in originals) > 2.9 * 1024 * 1024
    coses = [d for d in docs if d["kind"] == api.KIND]
    secrets = [d for d in docs if d["kind"] == "Secret"]
    assert len(coses) == 1 and len(secrets) >= 3
    phases = coses[0]["spec"]["phases"]
    assert [p["name"] for p in phases][4:10] == ["configuration-3", "crds", "crds-2", "crds-3", "crds-4", "roles"]
    assert len(phases) == 20 and sum(len(p["objects"]) for p in phases) == 900
    sizes = [sum(len(base64.b64decode(v)) for v in s["data"].values()) for s in secrets]
    assert all(s <= MAX_SECRET_BYTES for s in sizes)


def test_ref_resolution_gives_back_exactly_the_cleaned_manifests_in_phase_order(packed):
    originals, docs, _ = packed
    mc = MemCluster()
    for doc in docs:
        if doc["kind"] == "Secret":
            mc.create(doc)
    cos = next(d for d in docs if d["kind"] == api.KIND)
    expected = sort_into_phases(originals)
    assert [p["name"] for p in cos["spec"]["phases"]] == [p.name for p in expected]
    for phase, want in zip(cos["spec"]["phases"], expected, strict=False):
        got = [refs.resolve(mc, entry["ref"])[0] for entry in phase["objects"]]
        assert got == want.objects
    # and those are the originals, cleaned: nothing lost, nothing added
    resolved = Counter(to_json(refs.resolve(mc, e["ref"])[0]) for p in cos["spec"]["phases"] for e in p["objects"])
    assert resolved == Counter(to_json(clean(o)) for o in originals)


def test_cosctl_validate_accepts_every_document_pack_produced(packed):
    _, docs, out_dir = packed
    out, err = io.StringIO(), io.StringIO()
    code = validate.run([str(out_dir)], output="json", out=out, err=err)
    verdicts = [json.loads(line) for line in out.getvalue().splitlines()]
    assert err.getvalue() == ""
    assert len(verdicts) == len(docs)
    assert [(v["kind"], v["allowed"], v["message"]) for v in verdicts if not v["allowed"] or v["warnings"]] == []
    assert code == 0
