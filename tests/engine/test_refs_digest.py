"""Ref resolution (common/bundle/refs.py) and phase digests (reconciler/digest.py)."""

from __future__ import annotations

import base64
import gzip
import time
import tracemalloc
import zlib

import pytest

from common.bundle import refs
from common.cluster.interface import Forbidden
from reconciler.digest import compare, go_json, observed_phases, phase_digest
from tests.engine.helpers import as_gzip, as_json, cluster, cm, secret

REF = {"name": "bundle", "key": "k"}


def _resolve(mc, ref=REF, system_namespace="olmv1-system"):
    return refs.resolve(mc, ref, system_namespace=system_namespace)


def test_gzip_and_plain_values_resolve_to_the_same_manifest() -> None:
    mc = cluster()
    mc.put(secret("bundle", {"k": as_gzip(cm("a")), "p": as_json(cm("a"))}))
    manifest, sec = _resolve(mc)
    assert manifest == cm("a")
    assert sec["metadata"]["name"] == "bundle"
    assert _resolve(mc, {"name": "bundle", "key": "p", "namespace": "olmv1-system"})[0] == cm("a")


def test_empty_namespace_is_the_configured_system_namespace() -> None:
    mc = cluster()
    mc.put(secret("bundle", {"k": as_json(cm("a"))}, ns="custom-system"))
    assert _resolve(mc, {"name": "bundle", "namespace": "", "key": "k"}, system_namespace="custom-system")[0] == cm("a")
    with pytest.raises(refs.SecretUnreadable) as err:
        _resolve(mc)
    assert str(err.value) == 'getting Secret olmv1-system/bundle: secrets "bundle" not found'
    assert err.value.missing


def test_transient_read_error_keeps_the_api_message() -> None:
    mc = cluster()
    mc.fail("get", Forbidden('secrets "bundle" is forbidden: User "x" cannot get resource'))
    with pytest.raises(refs.SecretUnreadable) as err:
        _resolve(mc)
    assert str(err.value) == ('getting Secret olmv1-system/bundle: secrets "bundle" is forbidden: '
                              'User "x" cannot get resource')
    assert not err.value.missing


def test_missing_key() -> None:
    mc = cluster()
    mc.put(secret("bundle", {"other": as_json(cm("a"))}))
    with pytest.raises(refs.KeyNotFound, match=r'^key "k" not found in Secret olmv1-system/bundle$'):
        _resolve(mc)


@pytest.mark.parametrize("raw,detail", [
    (b"not json", "Expecting value at line 1 column 1"),
    (b"[1,2]", "cannot unmarshal array into an object"),
    (b"\x80abc", "invalid character: data is not UTF-8 text"),
    (b'{"kind":"ConfigMap","x":NaN}', "invalid character: NaN is not JSON"),
    (b'{"x":' + b"9" * 5000 + b"}", "a number is too large"),
])
def test_non_json(raw, detail) -> None:
    mc = cluster()
    mc.put(secret("bundle", {"k": raw}))
    with pytest.raises(refs.DataUndecodable) as err:
        _resolve(mc)
    assert str(err.value) == f'unmarshaling object from key "k" in Secret olmv1-system/bundle: {detail}'


def test_corrupt_gzip() -> None:
    mc = cluster()
    mc.put(secret("bundle", {"k": as_gzip(cm("a"))[:20]}))
    with pytest.raises(refs.DataUndecodable) as err:
        _resolve(mc)
    assert str(err.value) == ('decompressing data for key "k" in Secret olmv1-system/bundle: '
                              "unexpected end of gzip data")


def test_gzip_bomb_is_rejected_quickly_with_bounded_memory() -> None:
    # 1 GiB of zeros in about 1 MiB: after a full flush every 1 MiB block of zeros compresses to the same
    # bytes, so one compressed block is repeated (the trailer is never reached: decoding stops at the cap)
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"\0" * (1 << 20)
    head = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    bomb = head + block * 1023 + comp.flush()
    mc = cluster()
    mc.put(secret("bundle", {"k": bomb}))
    tracemalloc.start()
    started = time.process_time()
    with pytest.raises(refs.DataTooLarge) as err:
        _resolve(mc)
    cpu = time.process_time() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert str(err.value) == ('decompressed data for key "k" in Secret olmv1-system/bundle exceeds maximum size '
                              "(10485760 bytes)")
    assert peak < 64 * 1024 * 1024          # far below the 1 GiB it would inflate to
    assert cpu < 5.0                          # it stops at the cap instead of inflating everything


def test_error_messages_never_contain_secret_data() -> None:
    mc = cluster()
    mc.put(secret("bundle", {"k": b"hunter2-super-secret"}))
    with pytest.raises(refs.RefError) as err:
        _resolve(mc)
    assert "hunter2" not in str(err.value)


def test_invalid_base64_in_data() -> None:
    mc = cluster()
    s = secret("bundle", {})
    s["data"] = {"k": "%%%not base64"}
    mc.put(s)
    with pytest.raises(refs.DataUndecodable, match="illegal base64 data$"):
        _resolve(mc)


# ---- digests -----------------------------------------------------------------------------------------------

def test_digest_test_vector() -> None:
    assert phase_digest("deploy", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}}]) == (
        "sha256:e159e3f2c46b65df156d02407c44936c0fd7349149a89dadf190d27c67019edc")


def test_empty_phase_encodes_null_and_json_is_go_shaped() -> None:
    import hashlib
    assert phase_digest("x", []) == "sha256:" + hashlib.sha256(b'{"name":"x","objects":null}').hexdigest()
    assert go_json({"b": "<&>", "a": "é"}) == '{"a":"é","b":"\\u003c\\u0026\\u003e"}'


def test_compare_messages() -> None:
    rec = observed_phases([("a", [cm("x")]), ("b", [cm("y")])])
    assert compare(rec, rec) is None
    assert compare(rec[:1], rec) == "number of phases has changed (expected 1 phases, got 2)"
    cur = observed_phases([("a", [cm("x", k="2")]), ("b", [cm("y", k="2")])])
    assert compare(rec, cur) == (
        f'resolved content of 2 phase(s) has changed: phase "a" (expected digest {rec[0]["digest"]}, got '
        f'{cur[0]["digest"]}); phase "b" (expected digest {rec[1]["digest"]}, got {cur[1]["digest"]}); '
        "a referenced object source may have been deleted and recreated with different content")


def test_base64_helper_roundtrip() -> None:
    assert base64.b64decode(secret("s", {"k": b"x"})["data"]["k"]) == b"x"
    assert gzip.decompress(as_gzip(cm("a"))) == as_json(cm("a"))
