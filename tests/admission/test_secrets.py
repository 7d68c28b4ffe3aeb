"""Object-data Secret conventions (shared/spec/api-and-admission.md section 5)."""

from __future__ import annotations

import base64
import gzip
import json
import time
import tracemalloc

import pytest

from common.contract.admission import Request, mutate, review, validate
from common.contract.objectdata import content_key

MARKER = "TOP-SECRET-MARKER-31337"


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def manifest_bytes(**extra) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                       "data": {"token": MARKER}, **extra}).encode()


def secret(data: dict[str, bytes] | None = None, **fields) -> dict:
    raw = data if data is not None else {"k": manifest_bytes()}
    obj = {"apiVersion": "v1", "kind": "Secret", "type": "olm.operatorframework.io/object-data",
           "metadata": {"name": "rev1-0123456789abcdef", "namespace": "olmv1-system",
                        "labels": {"olm.operatorframework.io/revision-name": "rev1"}},
           "immutable": True, "data": {k: _b64(v) for k, v in raw.items()}}
    obj.update(fields)
    return obj


def verdict(obj: dict, old: dict | None = None):
    return validate(Request("Secret", "UPDATE" if old else "CREATE", obj, old, name=obj["metadata"]["name"]))


def messages(obj: dict, old: dict | None = None) -> list[str]:
    return [str(e) for e in verdict(obj, old).errors]


def test_valid_secret_plain_and_gzip() -> None:
    assert messages(secret({"plain": manifest_bytes(), "zipped": gzip.compress(manifest_bytes())})) == []


def test_immutable_defaulted_on_create_and_idempotent() -> None:
    obj = secret()
    del obj["immutable"]
    d = mutate(Request("Secret", "CREATE", obj))
    assert d.patch == ({"op": "add", "path": "/immutable", "value": True},)
    obj["immutable"] = True
    assert mutate(Request("Secret", "CREATE", obj)).patch == ()


def test_explicit_mutable_is_denied_not_overwritten() -> None:
    obj = secret(immutable=False)
    assert mutate(Request("Secret", "CREATE", obj)).patch == ()
    assert messages(obj) == [
        "immutable: Invalid value: false: must be true for Secrets of type olm.operatorframework.io/object-data"]


def test_revision_label_required_on_create() -> None:
    obj = secret()
    obj["metadata"]["labels"] = {}
    assert messages(obj) == ["metadata.labels[olm.operatorframework.io/revision-name]: Required value: "
                             "the name of the ClusterObjectSet revision this Secret belongs to"]


def test_revision_label_must_be_an_object_name() -> None:
    obj = secret()
    obj["metadata"]["labels"]["olm.operatorframework.io/revision-name"] = "Not_Valid"
    assert messages(obj) == [
        'metadata.labels[olm.operatorframework.io/revision-name]: Invalid value: "Not_Valid": a lowercase RFC 1123 '
        "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]


def test_revision_label_removal_and_change_denied_on_update() -> None:
    old = secret()
    removed = secret()
    removed["metadata"]["labels"] = {}
    assert messages(removed, old) == [
        "metadata.labels[olm.operatorframework.io/revision-name]: Required value: may not be removed"]
    changed = secret()
    changed["metadata"]["labels"]["olm.operatorframework.io/revision-name"] = "rev2"
    assert messages(changed, old) == [
        'metadata.labels[olm.operatorframework.io/revision-name]: Invalid value: "rev2": field is immutable']


def test_owner_reference_added_later_is_allowed() -> None:
    old = secret()
    new = secret()
    new["metadata"]["ownerReferences"] = [{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
                                           "name": "rev1", "uid": "u", "controller": True, "blockOwnerDeletion": True}]
    assert messages(new, old) == []


@pytest.mark.parametrize("raw,problem", [
    (b"not json " + MARKER.encode(), "must be a JSON object manifest, optionally gzip-compressed: "
                                     "Expecting value at line 1 column 1"),
    (b'["a list"]', "must be a JSON object manifest, optionally gzip-compressed: got a JSON array"),
    (b'{"kind": "ConfigMap"}', "manifest must have a non-empty apiVersion"),
    (b'{"apiVersion": "v1", "kind": ""}', "manifest must have a non-empty kind"),
    (b"\x1f\x8b" + MARKER.encode(), "must be a JSON object manifest, optionally gzip-compressed: invalid gzip "
                                     "data: Error -3 while decompressing data: unknown compression method"),
    (b"\xff\xfe" + MARKER.encode(), "must be a JSON object manifest, optionally gzip-compressed: invalid "
                                     "character: data is not UTF-8 text"),
])
def test_bad_values_named_by_key_never_quoted(raw: bytes, problem: str) -> None:
    d = verdict(secret({"bad-key": raw, "good": manifest_bytes()}))
    assert [str(e) for e in d.errors] == [f"data[bad-key]: Invalid value: {problem}"]
    assert MARKER not in json.dumps(d.status)


def test_gzip_bomb_denied_quickly_with_bounded_memory() -> None:
    bomb = gzip.compress(b" " * (64 * 1024 * 1024), compresslevel=9)  # 64 MiB of whitespace: ~64 KiB stored
    assert len(bomb) < 100 * 1024
    tracemalloc.start()
    started = time.process_time()
    d = verdict(secret({"bomb": bomb}))
    cpu = time.process_time() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [str(e) for e in d.errors] == [
        "data[bomb]: Invalid value: decompressed data exceeds maximum size (10485760 bytes)"]
    assert peak < 32 * 1024 * 1024, f"peak {peak} bytes: decompression was not bounded"
    assert cpu < 5, f"{cpu:.1f}s of CPU: decompression was not stopped at the cap"


def test_exactly_10_mib_decompressed_is_allowed() -> None:
    head = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"pad":"'
    tail = b'"}'
    body = head + b"a" * (10 * 1024 * 1024 - len(head) - len(tail)) + tail
    assert len(body) == 10485760
    assert messages(secret({"big": gzip.compress(body)})) == []
    assert messages(secret({"big": gzip.compress(body[:-2] + b'a"}')})) == [
        "data[big]: Invalid value: decompressed data exceeds maximum size (10485760 bytes)"]


def test_content_address_mismatch_warns() -> None:
    stored = manifest_bytes()
    good_key = content_key(stored)
    assert len(good_key) == 43
    d = verdict(secret({good_key: stored}))
    assert d.allowed and d.warnings == ()
    wrong = "A" * 43
    d = verdict(secret({wrong: stored}))
    assert d.allowed
    assert d.warnings == (f"data[{wrong}]: the key looks content-addressed (SHA-256, base64url) but does not match "
                          "its stored bytes; content addressing is broken",)


def test_string_data_checked_like_data() -> None:
    obj = secret({})
    obj["stringData"] = {"k": "not json"}
    assert messages(obj) == ["data[k]: Invalid value: must be a JSON object manifest, optionally "
                             "gzip-compressed: Expecting value at line 1 column 1"]


def test_other_secret_types_are_not_judged() -> None:
    obj = secret({"k": b"anything"}, type="Opaque")
    obj["metadata"]["labels"] = {}
    assert verdict(obj).allowed
    assert mutate(Request("Secret", "CREATE", obj)).patch == ()


def test_review_of_secret_never_echoes_content() -> None:
    obj = secret({"k": b"garbage " + MARKER.encode()})
    del obj["immutable"]
    d = review(Request("Secret", "CREATE", obj, name="s"))
    assert not d.allowed
    assert MARKER not in json.dumps([d.status, d.warnings, d.patch])


@pytest.mark.parametrize("raw,problem", [
    (b'{"apiVersion":"v1","kind":"ConfigMap","x":' + b"9" * 5000 + b"}", "a number is too large"),
    (b'{"apiVersion":"v1","kind":"ConfigMap","x":NaN}', "invalid character: NaN is not JSON"),
    (b'{"apiVersion":"v1","kind":"ConfigMap","x":-Infinity}', "invalid character: -Infinity is not JSON"),
])
def test_values_go_and_the_api_server_cannot_read_are_denied(raw: bytes, problem: str) -> None:
    assert messages(secret({"k": raw})) == [
        f"data[k]: Invalid value: must be a JSON object manifest, optionally gzip-compressed: {problem}"]


def test_trailing_newline_in_revision_label_is_invalid() -> None:
    obj = secret()
    obj["metadata"]["labels"]["olm.operatorframework.io/revision-name"] = "rev1\n"
    assert messages(obj)[0].startswith(
        'metadata.labels[olm.operatorframework.io/revision-name]: Invalid value: "rev1\\n": a lowercase RFC 1123')


def test_update_of_a_secret_admitted_without_the_label_is_allowed() -> None:
    old = secret()
    old["metadata"]["labels"] = {}
    new = secret()
    new["metadata"]["labels"] = {}
    new["metadata"]["ownerReferences"] = [{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
                                           "name": "rev1", "uid": "u", "controller": True}]
    assert messages(new, old) == []
