"""The packing format: golden output, hashing, naming, the 900 KiB limits, gzip determinism."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from common.bundle.packing import (
    MAX_SECRET_BYTES,
    MAX_VALUE_BYTES,
    NotAdmissible,
    ObjectTooLarge,
    PackingError,
    gzip_deterministic,
    pack,
    pack_secrets,
    stored_bytes,
    to_json,
)
from common.bundle.phasing import Phase, clean, sort_into_phases
from common.contract import objectdata
from common.contract.objectdata import content_key
from tests.producer.helpers import cosctl

GOLDEN = Path(__file__).parent / "golden"
ROOT = Path(__file__).resolve().parents[2]


def cm(name: str, payload: str = "", namespace: str = "n") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"x": payload}}


def sized_cm(name: str, size: int) -> dict:
    """A ConfigMap whose compact JSON is exactly ``size`` bytes."""
    base = len(to_json(cm(name)))
    obj = cm(name, "a" * (size - base))
    assert len(to_json(obj)) == size
    return obj


def decoded(secret: dict) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in secret["data"].items()}


def test_golden_small_bundle_packed(tmp_path):
    code, out, err = cosctl("pack", str(GOLDEN / "small"), "--owner", "shop", "--revision", "3")
    assert (code, err) == (0, "")
    assert out == (GOLDEN / "small-packed.yaml").read_text()


def test_golden_small_bundle_inline():
    code, out, err = cosctl("pack", str(GOLDEN / "small"), "--name", "shop-inline", "--inline")
    assert (code, err) == (0, "")
    assert out == (GOLDEN / "small-inline.yaml").read_text()


def test_golden_output_follows_the_spec_independently_of_the_packer():
    """Recompute keys, Secret name and contents from the golden file with nothing but hashlib."""
    docs = list(yaml.safe_load_all((GOLDEN / "small-packed.yaml").read_text()))
    (secret,), cos = docs[:-1], docs[-1]
    data = decoded(secret)
    for key, value in data.items():
        assert key == base64.urlsafe_b64encode(hashlib.sha256(value).digest()).decode().rstrip("=")
        assert len(key) == 43
    h = hashlib.sha256()
    for key in sorted(data):
        h.update(key.encode() + data[key])
    assert secret["metadata"] == {
        "name": f"shop-3-{h.hexdigest()[:16]}",
        "namespace": "olmv1-system",
        "labels": {"olm.operatorframework.io/revision-name": "shop-3",
                   "olm.operatorframework.io/owner-name": "shop"}}
    assert "ownerReferences" not in secret["metadata"]
    assert secret["type"] == "olm.operatorframework.io/object-data"
    assert secret["immutable"] is True
    assert cos["metadata"] == {"name": "shop-3", "labels": {
        "olm.operatorframework.io/owner-kind": "ClusterExtension", "olm.operatorframework.io/owner-name": "shop"}}
    assert {k: v for k, v in cos["spec"].items() if k != "phases"} == {
        "revision": 3, "lifecycleState": "Active", "collisionProtection": "Prevent"}
    assert [p["name"] for p in cos["spec"]["phases"]] == [
        "namespaces", "identity", "configuration", "crds", "infrastructure", "deploy", "admission"]
    # every stored value is the compact sorted JSON of the cleaned manifest
    refs = [o["ref"] for p in cos["spec"]["phases"] for o in p["objects"]]
    assert all(r["name"] == secret["metadata"]["name"] and r["namespace"] == "olmv1-system" for r in refs)
    objs = [json.loads(data[r["key"]]) for r in refs]
    assert objs[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "web"}}}
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    assert deployment["metadata"] == {"name": "frontend", "namespace": "shop", "annotations": {"owner": "web-team"}}
    assert data[refs[0]["key"]] == json.dumps(objs[0], separators=(",", ":"), sort_keys=True).encode()
    configmap = next(o for o in objs if o["kind"] == "ConfigMap")
    assert configmap["data"] == {"greeting": "héllo wörld", "released": "2024-05-01"}


def test_same_input_same_output_byte_for_byte_and_on_disk(tmp_path):
    first = cosctl("pack", str(GOLDEN / "small"), "--owner", "shop")[1]
    assert cosctl("pack", str(GOLDEN / "small"), "--owner", "shop")[1] == first
    code, out, err = cosctl("pack", str(GOLDEN / "small"), "--owner", "shop", "-o", str(tmp_path / "out"))
    assert (code, out) == (0, "")
    assert err == f"wrote 2 file(s) to {tmp_path / 'out'}\n"
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    secret_name = yaml.safe_load(first.split("---")[1])["metadata"]["name"]
    assert files == ["clusterobjectset-shop-1.yaml", f"secret-{secret_name}.yaml"]
    rendered = "".join((tmp_path / "out" / f).read_text() for f in reversed(files))
    assert rendered == first


def test_object_exactly_900_kib_is_stored_as_json_one_byte_more_is_gzipped():
    at = sized_cm("at", MAX_VALUE_BYTES)
    assert stored_bytes(at) == to_json(at)
    over = sized_cm("over", MAX_VALUE_BYTES + 1)
    stored = stored_bytes(over)
    assert stored[:2] == b"\x1f\x8b" and len(stored) < 10_000
    assert objectdata.decode(stored) == to_json(over)
    assert gzip.decompress(stored) == to_json(over)


def test_gzip_is_deterministic_with_zero_mtime_and_no_name():
    data = to_json(sized_cm("big", MAX_VALUE_BYTES + 100))
    a, b = gzip_deterministic(data), gzip_deterministic(data)
    assert a == b
    assert a[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # deflate, no FNAME flag, mtime 0
    assert gzip.decompress(a) == data
    phases = [Phase("configuration", [sized_cm("big", MAX_VALUE_BYTES + 100)])]
    assert pack(phases, name="x").secrets == pack(phases, name="x").secrets


def test_object_too_large_even_compressed_names_phase_index_and_both_sizes():
    noise = base64.b64encode(random.Random(7).randbytes(1_000_000)).decode()  # barely compressible
    big = cm("huge", noise)
    phases = [Phase("configuration", [cm("small"), big])]
    with pytest.raises(ObjectTooLarge) as e:
        pack(phases, name="x")
    raw, packed = len(to_json(big)), len(gzip_deterministic(to_json(big)))
    assert packed > MAX_VALUE_BYTES
    assert str(e.value) == (
        f"phase 'configuration' object 1 (ConfigMap n/huge) is too large for a Secret: {raw} bytes as JSON, "
        f"{packed} bytes gzip-compressed, more than the 921600 bytes a value may hold")
    assert noise[:40] not in str(e.value)


def test_secrets_are_filled_exactly_up_to_900_kib():
    half = MAX_SECRET_BYTES // 2
    exact = [Phase("configuration", [sized_cm("a", half), sized_cm("b", half)])]
    assert [len(s["data"]) for s in pack(exact, name="x").secrets] == [2]
    over = [Phase("configuration", [sized_cm("a", half), sized_cm("b", half + 1)])]
    secrets = pack(over, name="x").secrets
    assert [len(s["data"]) for s in secrets] == [1, 1]
    assert [sum(len(v) for v in decoded(s).values()) for s in secrets] == [half, half + 1]


def test_split_keeps_object_order_and_refs_point_at_the_secret_holding_the_key():
    objs = [sized_cm(f"c{i}", 300_000) for i in range(7)]
    packed = pack([Phase("configuration", objs[:4]), Phase("deploy", objs[4:])], name="x", owner="o")
    assert [len(s["data"]) for s in packed.secrets] == [3, 3, 1]
    holder = {k: s["metadata"]["name"] for s in packed.secrets for k in s["data"]}
    refs = [o["ref"] for p in packed.cos["spec"]["phases"] for o in p["objects"]]
    assert [holder[r["key"]] == r["name"] for r in refs] == [True] * 7
    # the second Secret holds objects of both phases
    second = packed.secrets[1]["metadata"]["name"]
    assert [r["name"] == second for r in refs] == [False, False, False, True, True, True, False]
    assert [json.loads(decoded(next(s for s in packed.secrets if s["metadata"]["name"] == r["name"]))[r["key"]])
            for r in refs] == objs


def test_objects_of_different_phases_share_a_secret_and_identical_values_share_a_key():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    phases = sort_into_phases([ns, cm("a"), {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "metadata": {"name": "d", "namespace": "n"}}])
    packed = pack(phases, name="x")
    assert len(packed.secrets) == 1
    assert {o["ref"]["name"] for p in packed.cos["spec"]["phases"] for o in p["objects"]} == \
        {packed.secrets[0]["metadata"]["name"]}
    # identical values share a key (spec section 2, step 4) ...
    same = [Phase("a", [cm("same")]), Phase("b", [cm("same")])]
    refs, secrets = pack_secrets(same, cos_name="x", namespace="ns")
    assert len(secrets) == 1 and len(secrets[0]["data"]) == 1
    assert refs[0] == refs[1]
    # ... but identical objects are the same object twice, which the webhook denies: pack refuses to render it
    with pytest.raises(NotAdmissible) as e:
        pack(same, name="x")
    assert e.value.problems == [
        'ClusterObjectSet x: spec.phases[1].objects[0]: Duplicate value: '
        f'{{"key":"{refs[0][0]["key"]}","name":"{refs[0][0]["name"]}","namespace":"olmv1-system"}}: the same '
        "ref is already at spec.phases[0].objects[0]"]


def test_content_key_is_always_43_characters():
    for n in range(20):
        key = content_key(bytes(range(n)))
        assert len(key) == 43 and "=" not in key and "+" not in key and "/" not in key


def test_no_owner_means_no_owner_labels_and_explicit_namespace_everywhere():
    packed = pack([Phase("configuration", [cm("a")])], name="plain", system_namespace="ops")
    assert packed.cos["metadata"] == {"name": "plain"}
    assert packed.secrets[0]["metadata"]["labels"] == {"olm.operatorframework.io/revision-name": "plain"}
    assert packed.secrets[0]["metadata"]["namespace"] == "ops"
    assert packed.cos["spec"]["phases"][0]["objects"][0]["ref"]["namespace"] == "ops"


@pytest.mark.parametrize("kwargs,message", [
    ({"name": "Bad_Name"}, "invalid ClusterObjectSet name 'Bad_Name': must be a lowercase RFC 1123 subdomain "
     "(a-z, 0-9, '-' and '.', starting and ending alphanumeric, at most 253 characters)"),
    ({"name": "a" * 64}, f"invalid ClusterObjectSet name '{'a' * 64}': at most 63 characters when objects go "
     "to Secrets (it is the value of label olm.operatorframework.io/revision-name)"),
    ({"name": "x", "owner": "-bad"}, "invalid owner '-bad': must be a label value (at most 63 characters: "
     "alphanumerics, '-', '_' and '.', starting and ending alphanumeric)"),
    ({"name": "x", "revision": 0}, "invalid revision 0: must be at least 1"),
    ({"name": "x", "progress_deadline_minutes": 5}, "invalid progress deadline 5: must be 10..720 minutes"),
])
def test_bad_names_and_fields_are_refused(kwargs, message):
    with pytest.raises(PackingError) as e:
        pack([Phase("configuration", [cm("a")])], **kwargs)
    assert str(e.value) == message


def test_long_name_is_fine_inline():
    assert pack([Phase("c", [cm("a")])], name="a" * 100, inline=True).secrets == ()


def test_pack_cli_reports_bad_manifests_and_creates_nothing(tmp_path):
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\nkind: X\n")
    out_dir = tmp_path / "out"
    code, out, err = cosctl("pack", str(tmp_path / "a.yaml"), "--name", "x", "-o", str(out_dir))
    assert (code, out) == (1, "")
    assert err == (f"cosctl pack: {tmp_path / 'a.yaml'}:1 X: missing apiVersion\n"
                   f"cosctl pack: {tmp_path / 'a.yaml'}:1 X: missing metadata.name\n"
                   "cosctl pack: 2 problem(s) in the manifests; nothing was done\n")
    assert not out_dir.exists()


def test_pack_cli_needs_a_name_or_an_owner():
    code, out, err = cosctl("pack", str(GOLDEN / "small"))
    assert (code, out, err) == (1, "", "cosctl pack: --name is required when no --owner is given\n")


def test_cleaned_objects_round_trip_through_stored_bytes():
    raw = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u"}, "status": {}}
    assert json.loads(objectdata.decode(stored_bytes(clean(raw)))) == clean(raw)


def test_pack_inline_warns_when_the_cos_gets_close_to_the_etcd_limit(tmp_path):
    (tmp_path / "big.yaml").write_text(
        "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}, namespace: ns}}\n"
                f"data: {{x: {'y' * 300_000}}}\n" for i in range(4)))
    code, out, err = cosctl("pack", str(tmp_path), "--name", "x", "--inline")
    assert code == 0 and out.startswith("---\napiVersion: olm.operatorframework.io/v1")
    assert err.startswith("cosctl pack: warning: the ClusterObjectSet is 12")
    assert err.endswith(" bytes as JSON; etcd refuses objects over 1.5 MiB (1572864 bytes): pack without --inline "
                        "to move objects into Secrets\n")
    code, out, err = cosctl("pack", str(tmp_path), "--name", "x")
    assert (code, err) == (0, "")


# Issue 17: pack must never render what `cosctl validate`, the webhook or the API server refuse.

def test_a_30_mib_object_is_refused_naming_it_and_its_size_not_packed_into_a_bomb(tmp_path):
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "shop"},
           "data": {"blob": "x" * (30 * 1024 * 1024)}}
    raw = to_json(big)
    # gzip alone would squeeze it far under 900 KiB, into a value the webhook refuses to decompress (10 MiB)
    assert len(gzip_deterministic(raw)) < MAX_VALUE_BYTES
    (tmp_path / "big.json").write_text(json.dumps(big))
    message = (f"cosctl pack: phase 'configuration' object 0 (ConfigMap shop/big) is too large to deploy: "
               f"{len(raw)} bytes as JSON, more than the 3145728 bytes (3 MiB) the API server accepts in a request "
               "body (and than the 10485760 bytes an object-data Secret value may hold decompressed)\n")
    assert len(raw) == 31457382
    assert cosctl("pack", str(tmp_path), "--name", "big-1") == (1, "", message)
    assert cosctl("pack", str(tmp_path), "--name", "big-1", "--inline") == (1, "", message)
    assert cosctl("pack", str(tmp_path), "--name", "big-1", "-o", str(tmp_path / "out")) == (1, "", message)
    assert not (tmp_path / "out").exists()


def test_objects_up_to_3_mib_pack_and_validate_one_byte_more_is_refused(tmp_path):
    at = sized_cm("at", 3 * 1024 * 1024)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "at.json").write_text(json.dumps(at))
    code, out, err = cosctl("pack", str(tmp_path / "in"), "--name", "x")
    assert (code, err) == (0, "")
    (tmp_path / "packed.yaml").write_text(out)
    validated = subprocess.run([sys.executable, "-m", "common.cosctl", "validate", str(tmp_path / "packed.yaml")],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert validated.stdout.endswith(": allowed\n")
    with pytest.raises(ObjectTooLarge) as e:
        pack([Phase("configuration", [sized_cm("over", 3 * 1024 * 1024 + 1)])], name="x")
    assert str(e.value) == ("phase 'configuration' object 0 (ConfigMap n/over) is too large to deploy: 3145729 "
                            "bytes as JSON, more than the 3145728 bytes (3 MiB) the API server accepts in a "
                            "request body")


def test_an_object_still_over_900_kib_gzip_compressed_is_refused_by_the_cli_with_exit_1(tmp_path):
    noise = base64.b64encode(random.Random(7).randbytes(1_000_000)).decode()
    (tmp_path / "huge.json").write_text(json.dumps(cm("huge", noise)))
    raw = to_json(cm("huge", noise))
    assert cosctl("pack", str(tmp_path), "--name", "x") == (
        1, "", f"cosctl pack: phase 'configuration' object 0 (ConfigMap n/huge) is too large for a Secret: "
               f"{len(raw)} bytes as JSON, {len(gzip_deterministic(raw))} bytes gzip-compressed, more than the "
               "921600 bytes a value may hold\n")


def test_an_inline_cos_no_api_server_can_store_is_refused_naming_its_size_and_largest_object(tmp_path):
    (tmp_path / "big.yaml").write_text(
        "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}, namespace: ns}}\n"
                f"data: {{x: {'y' * (300_000 + i)}}}\n" for i in range(12)))
    code, out, err = cosctl("pack", str(tmp_path), "--name", "x", "--inline")
    assert (code, out) == (1, "")
    assert err == ("cosctl pack: the ClusterObjectSet x is 3601586 bytes as JSON (its largest object is phase "
                   "'configuration' object 3 (ConfigMap ns/c11), 300108 bytes), over the 3145728 bytes (3 MiB) "
                   "the API server reads in a request, so it can never be stored: pack without --inline to move "
                   "the objects into Secrets\n")
    code, out, err = cosctl("pack", str(tmp_path), "--name", "x")
    assert (code, err) == (0, "")


def test_what_the_webhook_would_deny_is_never_rendered(tmp_path):
    (tmp_path / "probes.yaml").write_text("- selector: {type: Nope}\n  assertions: []\n")
    code, out, err = cosctl("pack", str(GOLDEN / "small"), "--name", "x", "--progression-probes",
                            str(tmp_path / "probes.yaml"))
    assert (code, out) == (1, "")
    probes = tmp_path / "probes.yaml"   # judged on their own, so the file is named instead of the COS
    assert err == (
        "cosctl pack: the admission webhook would deny the revision as rendered (nothing was written):\n"
        f"  {probes}: spec.progressionProbes[0].assertions: Invalid value: 0: "
        "spec.progressionProbes[0].assertions in body should have at least 1 items\n"
        f'  {probes}: spec.progressionProbes[0].selector.type: Unsupported value: "Nope": supported '
        'values: "GroupKind", "Label"\n')
