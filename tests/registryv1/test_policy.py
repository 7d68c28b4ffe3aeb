"""The containers signature policy (policy.json) held to when pulling: scopes looked up as containers/image looks
them up, a rejected image refused before any request reaches the registry (the test registry,
tests/support/registry_server.py), an invalid policy refusing every pull. The signatures themselves:
test_signatures.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from common.bundle.registryv1.imageref import parse_reference
from common.bundle.registryv1.policy import PolicyError, policy_path, read_policy, scopes
from common.bundle.registryv1.source import load_bundle
from tests.producer.helpers import cosctl
from tests.registryv1.bundles import write_bundle
from tests.registryv1.pulling import push_bundle
from tests.support.registry_server import Registry

ACCEPT = [{"type": "insecureAcceptAnything"}]
REJECT = [{"type": "reject"}]
SIGNED = [{"type": "sigstoreSigned", "keyPath": "/etc/pki/cosign.pub", "signedIdentity": {"type": "matchRepository"}}]


def write_policy(home: Path, policy: dict[str, Any] | str) -> Path:
    path = home / ".config" / "containers" / "policy.json"
    path.write_text(policy if isinstance(policy, str) else json.dumps(policy))
    return path


@pytest.mark.parametrize(("reference", "expected"), [
    ("docker://busybox", ["docker.io/library/busybox:latest", "docker.io/library/busybox", "docker.io/library",
                          "docker.io", "*.io"]),
    ("docker://registry.example.com:5000/team/app/bundle@sha256:" + "a" * 64,
     ["registry.example.com:5000/team/app/bundle@sha256:" + "a" * 64, "registry.example.com:5000/team/app/bundle",
      "registry.example.com:5000/team/app", "registry.example.com:5000/team", "registry.example.com:5000",
      "*.example.com", "*.com"]),
    ("docker://127.0.0.1:5000/op/demo:v1", ["127.0.0.1:5000/op/demo:v1", "127.0.0.1:5000/op/demo", "127.0.0.1:5000/op",
                                            "127.0.0.1:5000", "*.0.0.1", "*.0.1", "*.1"]),
])
def test_scopes_are_looked_up_most_specific_first(reference: str, expected: list[str]) -> None:
    assert scopes(parse_reference(reference)) == expected


def test_the_users_policy_comes_before_the_systems_and_the_systems_before_the_vendors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """containers/image v5.40's DefaultPolicy: the first policy.json of the user's, /etc's and /usr/share's
    containers directories (below ``root``, as its RootForImplicitAbsolutePaths puts them), or the one the
    environment names, which must exist."""
    monkeypatch.delenv("CONTAINERS_POLICY_JSON", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    root = tmp_path / "root"
    system, vendor = root / "etc/containers/policy.json", root / "usr/share/containers/policy.json"
    assert policy_path(root) is None
    vendor.parent.mkdir(parents=True)
    vendor.write_text("{}")
    assert policy_path(root) == vendor
    system.parent.mkdir(parents=True)
    system.write_text("{}")
    assert policy_path(root) == system
    (tmp_path / "user" / ".config" / "containers").mkdir(parents=True)
    user = write_policy(tmp_path / "user", "{}")
    assert policy_path(root) == user
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))   # the user's directory is $XDG_CONFIG_HOME's
    assert policy_path(root) == system
    monkeypatch.setenv("CONTAINERS_POLICY_JSON", str(tmp_path / "named.json"))
    with pytest.raises(PolicyError) as refused:
        policy_path(root)
    assert str(refused.value) == (f"signature policy {tmp_path}/named.json: no such file (named by "
                                  "CONTAINERS_POLICY_JSON)")
    (tmp_path / "named.json").write_text("{}")
    assert policy_path(root) == tmp_path / "named.json"


@pytest.mark.parametrize(("text", "problem"), [
    ("{", "not JSON (line 1 column 2: Expecting property name enclosed in double quotes)"),
    ("[]", "not a JSON object"),
    ('{"transports": {}}', 'no "default" requirements'),
    ('{"default": []}', "default: not a non-empty list of requirements"),
    ('{"default": [{"type": "acceptAll"}]}', "default: unknown requirement type 'acceptAll'"),
    ('{"default": [{}]}', "default: a requirement without a type"),
    ('{"default": [{"type": "reject"}], "transport": {}}', "unknown field 'transport'"),
    ('{"default": [{"type": "reject"}], "transports": {"docker": {"quay.io": {}}}}',
     'transports.docker "quay.io": not a non-empty list of requirements'),
    ('{"default": [{"type": "reject"}], "transports": {"docker": {"quay.io": [{"type": "reject", "extra": 1}]}}}',
     'transports.docker "quay.io": a reject requirement has an unknown field \'extra\''),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys"}]}',
     "default: a signedBy requirement needs exactly one of keyPath, keyPaths, keyData"),
    ('{"default": [{"type": "signedBy", "keyType": "bogus", "keyPath": "/k"}]}',
     "default: a signedBy requirement needs keyType, one of GPGKeys, signedByGPGKeys, X509Certificates, "
     "signedByX509CAs"),
    ('{"default": [{"type": "sigstoreSigned"}]}',
     "default: a sigstoreSigned requirement needs exactly one of keyPath, keyPaths, keyData, keyDatas, fulcio, pki"),
    ('{"default": [{"type": "signedBaseLayer"}]}', "default: a signedBaseLayer requirement needs baseLayerIdentity"),
    ('{"default": [{"type": "signedBaseLayer", "baseLayerIdentity": {}}]}',   # read as a signedIdentity is
     "default: a signedBaseLayer requirement has a signedIdentity without a type"),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k", "keyData": ""}]}',   # "" is data
     "default: a signedBy requirement needs exactly one of keyPath, keyPaths, keyData"),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "", "keyData": "AA=="}]}',   # both written
     "default: a signedBy requirement needs exactly one of keyPath, keyPaths, keyData"),
    ('{"default": [{"type": "sigstoreSigned", "keyData": [256]}]}',
     "default: a sigstoreSigned requirement has a keyData array that is not of bytes (0 to 255)"),
    ('{"default": [{"type": "reject"}], "transports": {"docker-archive": {"relative/path": [{"type": "reject"}]}}}',
     'transports.docker-archive "relative/path": the scope is not "" (the only scope docker-archive takes)'),
    ('{"default": [{"type": "reject"}], "transports": {"sif": {"/a/../b": [{"type": "reject"}]}}}',
     'transports.sif "/a/../b": the scope is not an absolute, clean path'),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyData": "no base64!"}]}',
     "default: a signedBy requirement has a keyData that is not base64"),
    ('{"default": [{"type": "sigstoreSigned", "keyPaths": [], "signedIdentity": {"type": "matchRepository"}}]}',
     "default: a sigstoreSigned requirement has a keyPaths that is not a non-empty list"),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": ""}]}',
     "default: a signedBy requirement needs exactly one of keyPath, keyPaths, keyData"),
    ('{"default": [{"type": "sigstoreSigned", "fulcio": {"caPath": "/ca"}, "signedIdentity": {"type": '
     '"matchRepository"}}]}',
     "default: a sigstoreSigned requirement has fulcio without one of rekorPublicKeyPath, rekorPublicKeyPaths, "
     "rekorPublicKeyData, rekorPublicKeyDatas"),
    ('{"default": [{"type": "sigstoreSigned", "keyPath": "/k", "rekorPublicKeyPaths": [], "signedIdentity": '
     '{"type": "matchRepository"}}]}',
     "default: a sigstoreSigned requirement has a rekorPublicKeyPaths that is not a non-empty list"),
    ('{"default": [{"type": "sigstoreSigned", "fulcio": {"caPath": "/ca", "caData": "", "oidcIssuer": "i", '
     '"subjectEmail": "e"}, "rekorPublicKeyPath": "/r", "signedIdentity": {"type": "matchRepository"}}]}',
     "default: a sigstoreSigned requirement has a fulcio with both caPath and caData"),
    ('{"default": [{"type": "sigstoreSigned", "pki": {"caRootsPath": "/ca", "caRootsData": "", "subjectEmail": '
     '"e"}, "signedIdentity": {"type": "matchRepository"}}]}',
     "default: a sigstoreSigned requirement has a pki with both caRootsPath and caRootsData"),
    ('{"default": [{"type": "sigstoreSigned", "pki": {"caRootsData": null, "subjectEmail": "e"}, '
     '"signedIdentity": {"type": "matchRepository"}}]}',
     "default: a sigstoreSigned requirement has a pki with neither caRootsPath nor caRootsData"),
    ('{"default": [{"type": "sigstoreSigned", "pki": {"caRootsPath": "/ca", "caIntermediatesPath": "/i", '
     '"caIntermediatesData": "", "subjectEmail": "e"}, "signedIdentity": {"type": "matchRepository"}}]}',
     "default: a sigstoreSigned requirement has a pki with both caIntermediatesPath and caIntermediatesData"),
    ('{"default": [{"type": "sigstoreSigned", "pki": {"caRootsPath": "/ca", "subjectEmail": ""}, '
     '"signedIdentity": {"type": "matchRepository"}}]}',
     "default: a sigstoreSigned requirement has a pki with neither subjectEmail nor subjectHostname"),
    ('{"default": [{"type": "sigstoreSigned", "pki": {"caRootsPath": "/ca", "subjectHost": "h"}, '
     '"signedIdentity": {"type": "matchRepository"}}]}',
     "default: a sigstoreSigned requirement has a pki with an unknown field 'subjectHost'"),
    ('{"default": [{"type": "sigstoreSigned", "pki": null, "keyPath": "/k", "signedIdentity": {"type": '
     '"matchRepository"}}]}', "default: a sigstoreSigned requirement has a pki that is not an object"),
    ('{"default": [{"type": "sigstoreSigned", "pki": {"caRootsPath": "/ca", "subjectEmail": "e"}, '
     '"rekorPublicKeyPath": "/r", "signedIdentity": {"type": "matchRepository"}}]}',
     "default: a sigstoreSigned requirement has pki with rekorPublicKeyPath, which pki does not take"),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k", "signedIdentity": {"type": []}}]}',
     "default: a signedBy requirement has a signedIdentity without a type"),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k", "signedIdentity": {"type": "any"}}]}',
     "default: a signedBy requirement has an unknown signedIdentity type 'any'"),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k", "signedIdentity": '
     '{"type": "exactReference", "dockerReference": "quay.io/op/demo"}}]}',
     "default: a signedBy requirement has a signedIdentity.dockerReference 'quay.io/op/demo' with neither a tag nor "
     "a digest"),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k", "signedIdentity": '
     '{"type": "matchExact", "dockerReference": "quay.io/op/demo:v1"}}]}',
     "default: a signedBy requirement has a signedIdentity with an unknown field 'dockerReference'"),
    ('{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k", "signedIdentity": '
     '{"type": "remapIdentity", "prefix": "quay.io/op:v1", "signedPrefix": "registry.redhat.io"}}]}',
     "default: a signedBy requirement has a signedIdentity prefix 'quay.io/op:v1' that is not valid"),
    ('{"default": [{"type": "reject"}], "transports": {"oci": {"relative/dir": [{"type": "reject"}]}}}',
     'transports.oci "relative/dir": the scope is not an absolute, clean path'),
    ('\ufeff{"default": [{"type": "reject"}]}', "not JSON (a byte order mark before the JSON)"),
    ('{"default": [{"type": "reject"}], "x": NaN}', "not JSON (NaN is not JSON)"),
    ("[" * 100000, "not JSON (nested too deeply)"),
    ('{"default": [{"type": "reject"}], "default": [{"type": "insecureAcceptAnything"}]}',
     "the key 'default' is given twice"),
])
def test_a_policy_containers_image_refuses_is_refused_naming_the_file(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "policy.json"
    path.write_text(text)
    with pytest.raises(PolicyError) as caught:
        read_policy(path)
    assert str(caught.value) == (f"signature policy {path}: {problem}: no image is pulled until it is fixed, as "
                                 "podman and skopeo pull none")


def test_a_rejected_image_is_refused_before_any_request(registry: Registry, home: Path, tmp_path: Path) -> None:
    push_bundle(registry, write_bundle(tmp_path / "bundle"), tmp_path)
    policy = write_policy(home, {"default": ACCEPT, "transports": {"docker": {registry.host: REJECT}}})
    asked = len(registry.requests)
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    with pytest.raises(PolicyError) as caught:
        load_bundle(ref)
    message = f'{ref}: the signature policy {policy} rejects it (scope transports.docker "{registry.host}": reject)'
    assert str(caught.value) == message
    assert cosctl("render", ref, "-n", "demo-system") == (2, "", f"cosctl render: {message}\n")
    assert len(registry.requests) == asked


def test_an_image_accepted_only_signed_is_refused_without_signatures(registry: Registry, home: Path,
                                                                   tmp_path: Path) -> None:
    digest = push_bundle(registry, write_bundle(tmp_path / "bundle"), tmp_path)
    push_bundle(registry, write_bundle(tmp_path / "bundle"), tmp_path, repo="other/demo-bundle")
    policy = write_policy(home, {"default": REJECT, "transports": {"docker": {
        f"{registry.host}/op": SIGNED, f"{registry.host}/other": ACCEPT}}})
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    with pytest.raises(PolicyError) as caught:
        load_bundle(ref)
    # no registries.d lookaside: containers/image's own (root's, or the user's)
    builtin = ("file:///var/lib/containers/sigstore" if os.geteuid() == 0
               else f"file://{home}/.local/share/containers/sigstore")
    assert str(caught.value) == (
        f"{ref}: rejected by the signature policy {policy} (sigstoreSigned, scope "
        f'transports.docker "{registry.host}/op"): A signature was required, but no signature exists (looked in '
        f"lookaside storage {builtin}/op/demo-bundle@sha256={digest[7:]}; sigstore "
        "attachments not read: registries.d does not set use-sigstore-attachments)")
    # the most specific scope decides: another namespace of the same registry accepts anything
    assert load_bundle(f"docker://{registry.ref('other/demo-bundle', 'v1')}").package_name == "demo"
    # a scope for the image itself (by tag) comes before its namespace's
    write_policy(home, {"default": REJECT, "transports": {"docker": {
        f"{registry.host}/op": SIGNED, registry.ref("op/demo-bundle", "v1"): ACCEPT}}})
    assert load_bundle(ref).package_name == "demo"


def test_the_transports_default_comes_before_the_policys(registry: Registry, home: Path, tmp_path: Path) -> None:
    push_bundle(registry, write_bundle(tmp_path / "bundle"), tmp_path)
    policy = write_policy(home, {"default": ACCEPT, "transports": {"docker": {"": [*ACCEPT, *REJECT]},
                                                                   "oci": {"": REJECT}}})
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    with pytest.raises(PolicyError) as caught:   # every requirement must be met: one reject refuses
        load_bundle(ref)
    assert str(caught.value) == f'{ref}: the signature policy {policy} rejects it (scope transports.docker "": reject)'


def test_an_invalid_policy_refuses_every_pull_naming_the_file(registry: Registry, home: Path) -> None:
    policy = write_policy(home, '{"default": [{"type": "insecureAcceptAnything"}],}')
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    with pytest.raises(PolicyError) as caught:
        load_bundle(ref)
    assert str(caught.value) == (f"signature policy {policy}: not JSON (line 1 column 50: Expecting property name "
                                 "enclosed in double quotes): no image is pulled until it is fixed, as podman and "
                                 "skopeo pull none")
    assert registry.requests == []


@pytest.mark.parametrize("requirement", [
    '{"type": "signedBy", "keyType": "GPGKeys", "keyData": ""}',   # Go's []byte{}: a key source holding no key
    '{"type": "sigstoreSigned", "keyData": [48, 89], "signedIdentity": {"type": "matchRepository"}}',   # bytes
    '{"type": "sigstoreSigned", "keyPath": "", "keyData": "AA==", "signedIdentity": {"type": "matchRepository"}}',
    '{"type": "signedBaseLayer", "baseLayerIdentity": {"type": "matchRepoDigestOrExact"}}',
])
def test_what_containers_image_540_accepts_in_a_policy_is_accepted(tmp_path: Path, requirement: str) -> None:
    """Judged against NewPolicyFromBytes: a source counts by its Go value (a keyPath not "", data not null), and
    signedBy alone also wants exactly one source written."""
    path = tmp_path / "policy.json"
    path.write_text(f'{{"default": [{requirement}]}}')
    assert len(read_policy(path).requirements(parse_reference("r.io/a:v1"))[1]) == 1
