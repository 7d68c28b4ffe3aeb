"""Pulling bundle and index images from a registry (``docker://REF``), at the HTTP level against a local registry
the test controls (tests/support/registry_server.py): what is asked, with which credentials, what is kept, and
the exact messages when a registry refuses, breaks off or lies."""

from __future__ import annotations

import base64
import json
import os
import ssl
import stat
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from common.bundle.registryv1 import pull
from common.bundle.registryv1.catalog import load_catalog
from common.bundle.registryv1.imageref import ImageReference, ImageReferenceError, parse_reference
from common.bundle.registryv1.model import BundleInputError
from common.bundle.registryv1.registries import (
    AuthFile,
    CredentialsError,
    Endpoint,
    RegistryConfigError,
    auth_files,
    conf_files,
    credentials,
    registries_conf,
)
from common.bundle.registryv1.source import is_bundle, load_bundle
from common.contract import api
from common.contract.useragent import user_agent
from common.testing.memcluster import MemCluster
from tests.producer.helpers import cosctl
from tests.registryv1.bundles import Layout, bundle_image_layout, files_layer, tree_files, write_bundle
from tests.registryv1.pulling import push_bundle, trust
from tests.support.registry_server import DOCKER_MANIFEST, Registry
from tests.webhook.support import CA

ACCEPTED = ("application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
            "application/vnd.docker.distribution.manifest.list.v2+json, "
            "application/vnd.docker.distribution.manifest.v2+json")


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    return write_bundle(tmp_path / "bundle")


def refusal(ref: str) -> str:
    """Why ``load_bundle(ref)`` is refused (it must be)."""
    with pytest.raises(BundleInputError) as caught:
        load_bundle(ref)
    return str(caught.value)


def write_auth(path: Path, entries: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"auths": entries}))
    return path


def basic_entry(user: str, password: str) -> dict[str, str]:
    return {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}


def manifest_and_blob_paths(registry: Registry) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in registry.requests]


# --- references ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("docker://quay.io/org/op-bundle:v1.2.3", ImageReference("quay.io", "org/op-bundle", "v1.2.3", None)),
    ("docker://busybox", ImageReference("docker.io", "library/busybox", "latest", None)),
    ("docker://org/app", ImageReference("docker.io", "org/app", "latest", None)),
    ("docker://index.docker.io/org/app:1", ImageReference("docker.io", "org/app", "1", None)),
    ("docker://docker.io/busybox", ImageReference("docker.io", "library/busybox", "latest", None)),
    ("docker://index.docker.io/busybox:1", ImageReference("docker.io", "library/busybox", "1", None)),
    ("docker://localhost:5000/app", ImageReference("localhost:5000", "app", "latest", None)),
    ("docker://127.0.0.1:5000/a/b/c@sha256:" + "a" * 64,
     ImageReference("127.0.0.1:5000", "a/b/c", None, "sha256:" + "a" * 64)),
    ("docker://r.io/app:v1@sha256:" + "b" * 64, ImageReference("r.io", "app", "v1", "sha256:" + "b" * 64)),
])
def test_references_are_normalised_as_docker_does(text: str, expected: ImageReference) -> None:
    assert parse_reference(text) == expected


def test_docker_hub_is_asked_where_its_api_answers() -> None:
    assert [parse_reference(t).api_host for t in ("docker://busybox", "docker://index.docker.io/a/b", "docker://q.io/a",
                                                  "docker://localhost:5000/a")] == [
        "registry-1.docker.io", "registry-1.docker.io", "q.io", "localhost:5000"]


@pytest.mark.parametrize(("text", "message"), [
    ("docker://", "image reference 'docker://': empty (write docker://REGISTRY/REPOSITORY[:TAG][@DIGEST])"),
    ("docker://quay.io/Org/app", "image reference 'docker://quay.io/Org/app': invalid repository 'Org/app' "
     "(lower-case letters, digits and separators '.', '_', '__', '-', in components joined by '/')"),
    ("docker://quay.io/app:-x", "image reference 'docker://quay.io/app:-x': invalid tag '-x' (letters, digits, '_', "
     "'.', '-', at most 128, not starting with '.' or '-')"),
    ("docker://quay.io/app:v\u00e9", "image reference 'docker://quay.io/app:v\u00e9': invalid tag 'v\u00e9' (letters, "
     "digits, '_', '.', '-', at most 128, not starting with '.' or '-')"),
    ("docker://quay.io/app@sha256:abc", "image reference 'docker://quay.io/app@sha256:abc': invalid digest "
     "'sha256:abc' (sha256:<64 hex> or sha512:<128 hex>, lower case)"),
    ("docker://quay.io/app@md5:" + "a" * 32, f"image reference 'docker://quay.io/app@md5:{'a' * 32}': invalid "
     f"digest 'md5:{'a' * 32}' (sha256:<64 hex> or sha512:<128 hex>, lower case)"),
])
def test_malformed_references_are_refused_naming_the_part(text: str, message: str) -> None:
    with pytest.raises(ImageReferenceError) as caught:
        parse_reference(text)
    assert str(caught.value) == message


def test_an_image_reference_is_a_bundle_input_without_any_request() -> None:
    assert is_bundle("docker://quay.io/org/app:v1")


# --- pulling ----------------------------------------------------------------------------------------------------


def test_a_bundle_pulled_by_tag_is_the_bundle_on_disk(registry: Registry, bundle_dir: Path, tmp_path: Path) -> None:
    digest = push_bundle(registry, bundle_dir, tmp_path)
    heard: list[str] = []
    pulled = load_bundle(f"docker://{registry.ref('op/demo-bundle', 'v1')}", heard.append)
    local = load_bundle(bundle_dir)
    assert (pulled.csv, pulled.crds, pulled.others, pulled.annotations) == (
        local.csv, local.crds, local.others, local.annotations)
    assert pulled.image == f"{registry.host}/op/demo-bundle@{digest}"
    assert pulled.source == f"docker://{registry.host}/op/demo-bundle:v1"
    assert heard == [f"pulled docker://{registry.host}/op/demo-bundle:v1 ({registry.host}/op/demo-bundle@{digest})"]
    first = registry.requests[0]
    assert (first.method, first.path, first.headers["accept"]) == ("GET", "/v2/op/demo-bundle/manifests/v1", ACCEPTED)
    assert all(r.method == "GET" and r.status == 200 for r in registry.requests)


def test_blobs_come_from_the_cache_and_a_digest_is_read_offline(registry: Registry, bundle_dir: Path,
                                                                tmp_path: Path) -> None:
    digest = push_bundle(registry, bundle_dir, tmp_path)
    load_bundle(f"docker://{registry.ref('op/demo-bundle', 'v1')}")
    assert len(registry.requests) == 3   # the manifest, its config, its one layer
    registry.requests.clear()
    load_bundle(f"docker://{registry.ref('op/demo-bundle', 'v1')}")
    assert manifest_and_blob_paths(registry) == [("GET", "/v2/op/demo-bundle/manifests/v1")]  # tags move: asked
    registry.requests.clear()
    heard: list[str] = []
    again = load_bundle(f"docker://{registry.ref('op/demo-bundle', digest)}", heard.append)
    assert registry.requests == []
    assert heard == [f"pulled docker://{registry.host}/op/demo-bundle@{digest}"]   # the digest is said already
    assert again.image == f"{registry.host}/op/demo-bundle@{digest}"
    layouts = tmp_path / "cache" / "layouts"
    assert list(layouts.iterdir()) == []   # scratch layouts are removed


def test_a_multi_platform_image_is_narrowed_to_this_machines_platform(registry: Registry, tmp_path: Path) -> None:
    os_name, arch = pull.host_platform()
    other = "s390x" if arch != "s390x" else "amd64"
    layout = Layout(tmp_path / "multi")

    def image(marker: str) -> dict[str, Any]:
        files = tree_files(write_bundle(tmp_path / marker))
        files["manifests/marker.yaml"] = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {marker}\n".encode()
        return layout.image([layout.layer(files_layer(files))])

    mine, theirs = image("mine"), image("theirs")
    index = layout.index([{**theirs, "platform": {"os": "linux", "architecture": other}},
                          {**mine, "platform": {"os": os_name, "architecture": arch}}])
    layout.finish([index])
    digest = registry.push_layout("op/multi", "v1", layout.root)
    heard: list[str] = []
    bundle = load_bundle(f"docker://{registry.ref('op/multi', 'v1')}", heard.append)
    assert [o["metadata"]["name"] for o in bundle.others if o["kind"] == "ConfigMap"] == ["demo-config", "mine"]
    assert bundle.image == f"{registry.host}/op/multi@{digest}"   # the index's digest, as OLM v1 records it
    assert heard == [f"pulled docker://{registry.host}/op/multi:v1 ({registry.host}/op/multi@{digest}, "
                     f"{os_name}/{arch})"]
    assert not any(theirs["digest"] in r.path for r in registry.requests)


def test_a_docker_v2_manifest_is_pulled(registry: Registry, bundle_dir: Path, tmp_path: Path) -> None:
    layout = bundle_image_layout(tmp_path / "layout", bundle_dir)
    index = json.loads((layout / "index.json").read_text())
    manifest_path = layout / "blobs" / "sha256" / index["manifests"][0]["digest"].split(":")[1]
    manifest = json.loads(manifest_path.read_text())
    manifest["mediaType"] = DOCKER_MANIFEST
    manifest["config"]["mediaType"] = "application/vnd.docker.container.image.v1+json"
    for layer in manifest["layers"]:
        layer["mediaType"] = "application/vnd.docker.image.rootfs.diff.tar.gzip"
    for descriptor in [manifest["config"], *manifest["layers"]]:
        registry.put_blob("op/v2", (layout / "blobs" / "sha256" / descriptor["digest"].split(":")[1]).read_bytes())
    digest = registry.put_manifest("op/v2", json.dumps(manifest).encode(), DOCKER_MANIFEST, tag="v1")
    bundle = load_bundle(f"docker://{registry.ref('op/v2', 'v1')}")
    assert bundle.image == f"{registry.host}/op/v2@{digest}"
    assert bundle.csv == load_bundle(bundle_dir).csv


def test_a_catalog_is_pulled_from_its_index_image(registry: Registry, tmp_path: Path) -> None:
    catalog = {"schema": "olm.package", "name": "demo", "defaultChannel": "stable"}
    layout = Layout(tmp_path / "catalog")
    layer = layout.layer(files_layer({"configs/demo/catalog.json": json.dumps(catalog).encode()}))
    layout.finish([layout.image([layer], labels={"operators.operatorframework.io.index.configs.v1": "/configs"})])
    registry.push_layout("op/catalog", "latest", layout.root)
    heard: list[str] = []
    loaded = load_catalog(f"docker://{registry.ref('op/catalog')}", package="demo", report=heard.append)
    assert loaded.package_names() == ["demo"]
    assert loaded.source == f"docker://{registry.host}/op/catalog:latest"
    assert heard[0].startswith(f"unpacking the catalog of image docker://{registry.host}/op/catalog:latest "
                               f"({registry.host}/op/catalog@sha256:")


# --- authentication ---------------------------------------------------------------------------------------------


def test_anonymous_bearer_tokens_for_a_public_repository(ca: CA, home: Path, bundle_dir: Path,
                                                         tmp_path: Path) -> None:
    with Registry(ca, auth="bearer", public_repos=["op/demo-bundle"]) as registry:
        trust(home, ca, registry)
        push_bundle(registry, bundle_dir, tmp_path)
        load_bundle(f"docker://{registry.ref('op/demo-bundle', 'v1')}")
        token = [r for r in registry.requests if r.path == "/token"]
        assert len(token) == 1
        assert token[0].query == {"scope": ["repository:op/demo-bundle:pull"], "service": ["test-registry"]}
        assert "authorization" not in token[0].headers
        assert all(r.headers.get("authorization", "").startswith("Bearer ") for r in registry.requests
                   if r.path.startswith("/v2/") and r.status == 200)


def test_credentials_from_the_auth_file_go_to_the_token_service_only(ca: CA, home: Path, bundle_dir: Path,
                                                                      tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with Registry(ca, auth="bearer", users={"alice": "s3cret"}, token_ttl_requests=1, redirect_blobs=True) as registry:
        trust(home, ca, registry)
        push_bundle(registry, bundle_dir, tmp_path)
        auth = write_auth(tmp_path / "auth.json", {registry.host: basic_entry("alice", "s3cret")})
        monkeypatch.setenv("REGISTRY_AUTH_FILE", str(auth))
        load_bundle(f"docker://{registry.ref('op/demo-bundle', 'v1')}")
        basic = "Basic " + base64.b64encode(b"alice:s3cret").decode()
        assert {r.path for r in registry.requests if r.headers.get("authorization") == basic} == {"/token"}
        # as containers/image asks: the account named, and cosctl named in the User-Agent
        assert next(r.query for r in registry.requests if r.path == "/token") == {
            "scope": ["repository:op/demo-bundle:pull"], "service": ["test-registry"], "account": ["alice"]}
        assert {r.headers["user-agent"] for r in registry.requests} == {user_agent("cosctl")}
        # each token serves one request here: a fresh 401 fetches a new one
        assert len([r for r in registry.requests if r.path == "/token"]) == 3
        storage = [r for r in registry.requests if r.path.startswith("/storage/")]
        assert len(storage) == 2 and all("authorization" not in r.headers and r.status == 200 for r in storage)


def test_no_credentials_for_a_private_repository(ca: CA, home: Path, bundle_dir: Path, tmp_path: Path) -> None:
    with Registry(ca, auth="bearer", users={"alice": "s3cret"}) as registry:
        trust(home, ca, registry)
        push_bundle(registry, bundle_dir, tmp_path)
        text = refusal(f"docker://{registry.ref('op/demo-bundle', 'v1')}")
    files = (f"{tmp_path}/run/containers/auth.json, {home}/.config/containers/auth.json, {home}/.docker/config.json, "
             f"{home}/.dockercfg")
    assert text == (
        f"docker://{registry.host}/op/demo-bundle:v1: access denied by {registry.host} (HTTP 401: DENIED: "
        f"requested access to the resource is denied), asked anonymously (no credentials for it in {files})")


def test_basic_authentication(ca: CA, home: Path, bundle_dir: Path, tmp_path: Path) -> None:
    with Registry(ca, auth="basic", users={"alice": "s3cret"}) as registry:
        trust(home, ca, registry)
        push_bundle(registry, bundle_dir, tmp_path)
        ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
        assert refusal(ref) == (
            f"{ref}: {registry.host} asks for a user name and password, and no credentials for it are in "
            f"{tmp_path}/run/containers/auth.json, {home}/.config/containers/auth.json, {home}/.docker/config.json, "
            f"{home}/.dockercfg (podman login or docker login writes them)")
        write_auth(home / ".docker" / "config.json", {"https://" + registry.host: basic_entry("alice", "wrong")})
        text = refusal(ref)
        assert text == (
            f"{ref}: access denied by {registry.host} (HTTP 401: UNAUTHORIZED: authentication required), asked with "
            f"the credentials of {home}/.docker/config.json (auths https://{registry.host})")   # the key as written
        assert "wrong" not in text
        write_auth(home / ".config" / "containers" / "auth.json",
                   {f"{registry.host}/op": basic_entry("alice", "s3cret")})
        assert load_bundle(ref).package_name == "demo"


def test_credentials_are_looked_up_most_specific_first(tmp_path: Path, home: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    auth = write_auth(tmp_path / "auth.json", {
        "r.io": basic_entry("registry", "1"), "r.io/org": basic_entry("org", "2"),
        "r.io/org/app": {"username": "app", "password": "3"}, "registry-1.docker.io": basic_entry("hub", "4")})
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(auth))

    def user(text: str) -> str | None:
        found = credentials(parse_reference(text))
        return None if found is None else found.username

    assert [user("r.io/org/app"), user("r.io/org/other"), user("r.io/x"), user("busybox"), user("q.io/a")] == [
        "app", "org", "registry", "hub", None]


def test_a_credential_helper_is_run_as_docker_runs_it(tmp_path: Path, home: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    helpers = tmp_path / "bin"
    helpers.mkdir()
    script = helpers / "docker-credential-test"
    script.write_text('#!/bin/sh\nread server\nif [ "$server" = r.io ]; then\n'
                      '  echo \'{"ServerURL":"r.io","Username":"robot","Secret":"xyz"}\'\n'
                      'else\n  echo "credentials not found in native keychain"; exit 1\nfi\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{helpers}{os.pathsep}{os.environ['PATH']}")
    config = home / ".docker" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"credHelpers": {"r.io": "test"}, "credsStore": "test"}))
    found = credentials(parse_reference("r.io/app"))
    assert found is not None and (found.username, found.password, found.source) == (
        "robot", "xyz", f"{config} (credHelpers r.io)")
    # what `docker login` writes with a credential store: an empty entry that says "ask the store"
    config.write_text(json.dumps({"auths": {"r.io": {}}, "credsStore": "test"}))
    found = credentials(parse_reference("r.io/app"))
    assert found is not None and (found.username, found.source) == ("robot", f"{config} (credsStore)")
    assert credentials(parse_reference("q.io/app")) is None
    config.write_text(json.dumps({"credHelpers": {"r.io": "missing"}}))
    with pytest.raises(CredentialsError) as caught:
        credentials(parse_reference("r.io/app"))
    assert str(caught.value) == f"{config} (credHelpers r.io): credential helper docker-credential-missing is not " \
        "installed"


def _helper(directory: Path, name: str, body: str) -> None:
    """A docker-credential-NAME on PATH running the shell ``body`` (the server name read into $server)."""
    directory.mkdir(exist_ok=True)
    script = directory / f"docker-credential-{name}"
    script.write_text(f"#!/bin/sh\nread server\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_the_auth_files_are_those_containers_image_540_reads(tmp_path: Path, home: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    assert auth_files() == [AuthFile(run / "containers/auth.json"), AuthFile(home / ".config/containers/auth.json"),
                            AuthFile(home / ".docker/config.json"), AuthFile(home / ".dockercfg", legacy=True)]
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "gone"))   # a runtime directory that is not there: none
    assert auth_files()[0] == AuthFile(home / ".config/containers/auth.json")
    monkeypatch.delenv("XDG_RUNTIME_DIR")   # podman login's file as root without it
    assert auth_files()[0] == AuthFile(Path(f"/run/containers/{os.getuid()}/auth.json"))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(tmp_path / "mine.json"))   # podman and skopeo read it alone
    assert auth_files() == [AuthFile(tmp_path / "mine.json")]


def test_docker_legacy_dockercfg_is_read_by_registry(tmp_path: Path, home: Path) -> None:
    home.joinpath(".dockercfg").write_text(json.dumps({"https://r.io/v1/": {**basic_entry("old", "1"),
                                                                             "email": "a@r.io"}}))
    found = credentials(parse_reference("r.io/org/app"))
    assert found is not None and (found.username, found.source) == ("old",
                                                                    f"{home}/.dockercfg (auths https://r.io/v1/)")
    assert credentials(parse_reference("q.io/org/app")) is None


def test_an_auth_file_entry_is_read_as_containers_image_540_reads_it(tmp_path: Path, home: Path) -> None:
    """The most specific key decides for its file: one that holds nothing (``{}``, an ``auth`` without a colon)
    sends the lookup to the next file, not to a less specific key; an exact key beats a URL naming the registry;
    a password's NUL padding is dropped."""
    first, second = home / ".config/containers/auth.json", home / ".docker/config.json"
    write_auth(first, {"r.io/org": {}, "r.io": basic_entry("registry", "1")})
    write_auth(second, {"r.io": basic_entry("docker", "2\x00\x00")})
    found = credentials(parse_reference("r.io/org/app"))
    assert found is not None and (found.username, found.password, found.source) == (
        "docker", "2", f"{second} (auths r.io)")
    write_auth(first, {"r.io/org": {"auth": base64.b64encode(b"no-colon").decode()}, "r.io": basic_entry("x", "1")})
    found = credentials(parse_reference("r.io/org/app"))
    assert found is not None and found.username == "docker"
    write_auth(first, {"https://r.io/v1/": basic_entry("url", "1"), "r.io": basic_entry("exact", "1")})
    found = credentials(parse_reference("r.io/app"))
    assert found is not None and found.username == "exact"
    write_auth(first, {"r.io": {"auth": "not base64!"}})   # what containers/image cannot decode stops the lookup
    with pytest.raises(CredentialsError) as caught:
        credentials(parse_reference("r.io/app"))
    assert str(caught.value) == f'{first} (auths r.io): "auth" is not base64 of user:password'


def test_auth_files_are_decoded_as_go_decodes_them(tmp_path: Path, home: Path) -> None:
    first, second = home / ".config/containers/auth.json", home / ".docker/config.json"
    write_auth(second, {"r.io": basic_entry("docker", "2")})
    first.parent.mkdir(parents=True, exist_ok=True)
    first.write_text("null")   # Go decodes null into an empty file
    assert (found := credentials(parse_reference("r.io/app"))) is not None and found.username == "docker"
    first.write_text(json.dumps({"auths": {"r.io": {"auth": base64.b64encode(b"u:p").decode()[:4] + "\n" +
                                                    base64.b64encode(b"u:p").decode()[4:]}}}))
    assert (found := credentials(parse_reference("r.io/app"))) is not None and found.username == "u"   # a line break
    for text, problem in (("", "not valid JSON"),
                          (json.dumps({"auths": {"q.io": {"auth": 5}}}), '(auths q.io): "auth" is not a string'),
                          (json.dumps({"auths": []}), '"auths" is not an object')):
        first.write_text(text)   # refused whole, as Go's decoder refuses it, whichever entry is looked up
        with pytest.raises(CredentialsError) as caught:
            credentials(parse_reference("r.io/app"))
        assert str(caught.value) == f"{first}{'' if problem.startswith('(') else ':'} {problem}"


def test_auth_file_keys_are_matched_as_encoding_json_matches_struct_fields(tmp_path: Path, home: Path) -> None:
    """containers/image decodes an auth file with encoding/json: a key equal to a field's name but for case is
    that field (the Kelvin sign folding into k), the same field given twice is decoded twice in order (a map adds
    entries, null empties it, a string is replaced); the registries' keys are exact."""
    auth_file = home / ".config/containers/auth.json"
    auth_file.parent.mkdir(parents=True, exist_ok=True)

    def found(text: str, ref: str = "r.io/app") -> tuple[str, str, str] | None:
        auth_file.write_text(text)
        got = credentials(parse_reference(ref))
        return None if got is None else (got.username, got.password, got.source)

    u1, u2 = (base64.b64encode(f"u{i}:p{i}".encode()).decode() for i in (1, 2))
    assert found(f'{{"AUTHS": {{"r.io": {{"Auth": "{u1}"}}}}}}') == ("u1", "p1", f"{auth_file} (auths r.io)")
    assert found(f'{{"auths": {{"r.io": {{"auth": "{u1}", "AUTH": "{u2}"}}}}}}') == ("u2", "p2",
                                                                                   f"{auth_file} (auths r.io)")
    # two auths fields: the second adds to the first's map; null before it empties nothing after it
    assert found(f'{{"auths": {{"q.io": {{"auth": "{u1}"}}}}, "Auths": {{"r.io": {{"auth": "{u2}"}}}}}}',
                 "q.io/app") == ("u1", "p1", f"{auth_file} (auths q.io)")
    assert found(f'{{"auths": {{"r.io": {{"auth": "{u1}"}}}}, "auths": null}}') is None
    assert found(f'{{"auths": {{"R.IO": {{"auth": "{u1}"}}}}}}') is None   # map keys are not folded
    assert found(f'{{"auths": {{"r.io": {{"identityto\u212aen": "t", "auth": "{u1}"}}}}}}') is not None
    assert credentials(parse_reference("r.io/app")).identity_token == "t"   # type: ignore[union-attr]
    # a null helper is Go's zero value, an empty helper name, which is asked (and fails), not passed over
    with pytest.raises(CredentialsError) as caught:
        found(f'{{"auths": {{"r.io": {{"auth": "{u1}"}}}}, "credHelpers": {{"r.io": null}}}}')
    assert str(caught.value).startswith(f"{auth_file} (credHelpers r.io): credential helper docker-credential- ")
    # JSON as Go's decoder reads it: a lone surrogate escape is U+FFFD, NaN is no JSON
    assert found(f'{{"auths": {{"r.io": {{"auth": "{u1}", "identitytoken": "\\ud800"}}}}}}') is not None
    assert credentials(parse_reference("r.io/app")).identity_token == "\ufffd"   # type: ignore[union-attr]
    with pytest.raises(CredentialsError) as caught:
        found(f'{{"auths": {{"r.io": {{"auth": "{u1}"}}}}, "x": NaN}}')
    assert str(caught.value) == f"{auth_file}: not valid JSON"


def test_a_helper_answering_an_empty_user_and_secret_has_nothing(tmp_path: Path, home: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _helper(tmp_path / "bin", "empty", 'echo \'{"Username":"","Secret":""}\'')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    (home / ".config/containers").mkdir(parents=True, exist_ok=True)
    (home / ".config/containers/auth.json").write_text(json.dumps({"credHelpers": {"r.io": "empty"}}))
    write_auth(home / ".docker/config.json", {"r.io": basic_entry("docker", "2")})
    assert (found := credentials(parse_reference("r.io/app"))) is not None and found.username == "docker"


def test_a_credhelper_without_credentials_passes_to_the_next_file(tmp_path: Path, home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _helper(tmp_path / "bin", "none", 'echo "credentials not found in native keychain"; exit 1')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    write_auth(home / ".config/containers/auth.json", {})
    (home / ".config/containers/auth.json").write_text(json.dumps({"credHelpers": {"r.io": "none"}}))
    write_auth(home / ".docker/config.json", {"r.io": basic_entry("docker", "2")})
    found = credentials(parse_reference("r.io/app"))
    assert found is not None and (found.username, found.source) == (
        "docker", f"{home}/.docker/config.json (auths r.io)")


def test_registries_conf_credential_helpers_are_asked_in_their_order(tmp_path: Path, home: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """containers-registries.conf(5) credential-helpers: external helpers by registry, "containers-auth.json" for
    the auth files; a helper that fails does not stop the next; the failures are said when nobody has any."""
    _helper(tmp_path / "bin", "vault", 'echo \'{"Username":"vault","Secret":"v"}\'')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    Path(os.environ["CONTAINERS_REGISTRIES_CONF"]).write_text(
        'credential-helpers = ["missing", "containers-auth.json", "vault"]\n')
    helpers = registries_conf().credential_helpers
    assert helpers == ("missing", "containers-auth.json", "vault")
    write_auth(home / ".docker/config.json", {"r.io": basic_entry("docker", "2")})
    found = credentials(parse_reference("r.io/app"), helpers)
    assert found is not None and found.username == "docker"   # the missing helper passed over
    found = credentials(parse_reference("q.io/app"), helpers)
    assert found is not None and (found.username, found.source) == (
        "vault", "registries.conf credential-helpers (vault)")
    with pytest.raises(CredentialsError) as caught:
        credentials(parse_reference("q.io/app"), ("missing", "containers-auth.json"))
    assert str(caught.value) == ("registries.conf credential-helpers (missing): credential helper "
                                 "docker-credential-missing is not installed")
    Path(os.environ["CONTAINERS_REGISTRIES_CONF"]).write_text("credential-helpers = []\n")
    assert registries_conf().credential_helpers == ("containers-auth.json",)
    Path(os.environ["CONTAINERS_REGISTRIES_CONF"]).write_text('credential-helpers = "vault"\n')
    with pytest.raises(RegistryConfigError) as refused:
        registries_conf()
    assert str(refused.value) == (f"{os.environ['CONTAINERS_REGISTRIES_CONF']}: credential-helpers must be a list "
                                  "of helper names")


def test_a_pull_asks_the_credential_helpers_registries_conf_names(ca: CA, home: Path, bundle_dir: Path,
                                                                   tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _helper(tmp_path / "bin", "vault", 'echo "credentials not found in native keychain"; exit 1')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    Path(os.environ["CONTAINERS_REGISTRIES_CONF"]).write_text('credential-helpers = ["vault"]\n')
    with Registry(ca, auth="basic", users={"alice": "s3cret"}) as registry:
        trust(home, ca, registry)
        push_bundle(registry, bundle_dir, tmp_path)
        ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
        write_auth(home / ".docker" / "config.json", {registry.host: basic_entry("alice", "s3cret")})
        assert refusal(ref) == (   # the auth files are not among the helpers: not read
            f"{ref}: {registry.host} asks for a user name and password, and no credentials for it are in the "
            "credential helper docker-credential-vault (podman login or docker login writes them)")
        _helper(tmp_path / "bin", "vault", 'echo \'{"Username":"alice","Secret":"s3cret"}\'')
        assert load_bundle(ref).package_name == "demo"


def test_an_identity_token_is_exchanged_at_the_token_service_as_containers_image_exchanges_it(
        ca: CA, home: Path, bundle_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``az acr login`` writes (a refresh token, a placeholder user name): POSTed as an OAuth2 form to the token
    service, never sent to the registry itself, never said."""
    with Registry(ca, auth="bearer", identity_tokens={"refresh-me": "robot"}) as registry:
        trust(home, ca, registry)
        push_bundle(registry, bundle_dir, tmp_path)
        auth = write_auth(tmp_path / "auth.json", {registry.host: {
            "auth": base64.b64encode(b"00000000-0000-0000-0000-000000000000:").decode(),
            "identitytoken": "refresh-me"}})
        monkeypatch.setenv("REGISTRY_AUTH_FILE", str(auth))
        assert load_bundle(f"docker://{registry.ref('op/demo-bundle', 'v1')}").package_name == "demo"
        (exchange,) = [r for r in registry.requests if r.path == "/token"]
        assert (exchange.method, exchange.query, exchange.headers["content-type"], exchange.form) == (
            "POST", {}, "application/x-www-form-urlencoded", {
                "service": ["test-registry"], "scope": ["repository:op/demo-bundle:pull"],
                "grant_type": ["refresh_token"], "refresh_token": ["refresh-me"], "client_id": ["containers/image"]})
        assert "authorization" not in exchange.headers
        assert [t.user for t in registry.tokens] == ["robot"]
        assert not any("refresh-me" in r.headers.get("authorization", "") for r in registry.requests)
        # one the token service does not know: said with the service's words and where it came from, not what it is
        write_auth(auth, {registry.host: {"auth": base64.b64encode(b"robot:").decode(), "identitytoken": "expired"}})
        ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
        text = refusal(ref)
        assert text == (f"{ref}: the token service {registry.host} refused a pull token for op/demo-bundle with the "
                        f"identity token of {auth} (auths {registry.host}) (HTTP 400: invalid_grant: the refresh "
                        "token is not valid)")
        assert "expired" not in text
        # without "auth" beside it, as containers/image reads it, no credentials: anonymous
        write_auth(auth, {registry.host: {"identitytoken": "refresh-me"}})
        # $REGISTRY_AUTH_FILE is the only file read, as podman and skopeo read it
        assert refusal(ref).endswith(f"asked anonymously (no credentials for it in {auth})")


def test_an_identity_token_from_a_credential_helper_and_for_a_registry_that_asks_for_basic(
        ca: CA, home: Path, bundle_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helpers = tmp_path / "bin"
    helpers.mkdir()
    script = helpers / "docker-credential-acr"
    script.write_text("#!/bin/sh\nread server\n"
                      "echo '{\"ServerURL\":\"x\",\"Username\":\"<token>\",\"Secret\":\"refresh-me\"}'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{helpers}{os.pathsep}{os.environ['PATH']}")
    with Registry(ca, auth="bearer", identity_tokens={"refresh-me": "robot"}) as registry:
        trust(home, ca, registry)
        push_bundle(registry, bundle_dir, tmp_path)
        config = home / ".docker" / "config.json"
        config.parent.mkdir(exist_ok=True)
        config.write_text(json.dumps({"credHelpers": {registry.host: "acr"}}))
        found = credentials(parse_reference(f"{registry.host}/op/demo-bundle"))
        assert found is not None and (found.username, found.password, found.identity_token) == ("", "", "refresh-me")
        script.write_text("#!/bin/sh\nread server\n"
                          "echo '{\"ServerURL\":\"x\",\"Username\":\"<token>\",\"Secret\":\"\"}'\n")
        assert credentials(parse_reference(f"{registry.host}/op/demo-bundle")) is None   # empty: none, anonymous
        script.write_text("#!/bin/sh\nread server\n"
                          "echo '{\"ServerURL\":\"x\",\"Username\":\"<token>\",\"Secret\":\"refresh-me\"}'\n")
        assert "refresh-me" not in repr(found)
        assert load_bundle(f"docker://{registry.ref('op/demo-bundle', 'v1')}").package_name == "demo"
        assert [t.user for t in registry.tokens] == ["robot"]
    with Registry(ca, auth="basic", users={"alice": "s3cret"}) as registry:
        trust(home, ca, registry)
        push_bundle(registry, bundle_dir, tmp_path)
        ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
        # the helper's identity token alone, to a registry that asks for Basic: said, with what to do
        config.write_text(json.dumps({"credHelpers": {registry.host: "acr"}}))
        assert refusal(ref) == (
            f"{ref}: {registry.host} asks for a user name and password, and the credentials of {config} "
            f"(credHelpers {registry.host}) are an identity token (OAuth2 refresh token), which only a token service "
            "takes: log in with a user name and password (podman login, docker login -u)")
        # an auth file's entry holds a user and password beside it: those go, as containers/image sends them
        auth = write_auth(tmp_path / "auth.json", {registry.host: {
            "auth": base64.b64encode(b"alice:s3cret").decode(), "identitytoken": "refresh-me"}})
        monkeypatch.setenv("REGISTRY_AUTH_FILE", str(auth))
        assert load_bundle(ref).package_name == "demo"


# --- what a registry does wrong ----------------------------------------------------------------------------------


def test_a_blob_that_does_not_match_its_digest_is_refused_and_not_kept(registry: Registry, bundle_dir: Path,
                                                                       tmp_path: Path) -> None:
    push_bundle(registry, bundle_dir, tmp_path)
    manifest = json.loads(_manifest(registry, "op/demo-bundle", "v1"))
    layer = manifest["layers"][0]["digest"]
    registry.corrupt_blob(layer)
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    assert refusal(ref).startswith(f"{ref}: layer 0: blob {layer} from {registry.host} does not match its digest "
                                        "(its content hashes to sha256:")
    assert not (tmp_path / "cache" / "blobs" / "sha256" / layer.split(":")[1]).exists()
    registry.clear_faults()
    assert load_bundle(ref).package_name == "demo"


def _manifest(registry: Registry, repo: str, tag: str) -> bytes:
    """The manifest as the registry holds it, read past the client (its requests forgotten)."""
    request = urllib.request.Request(f"{registry.url}/v2/{repo}/manifests/{tag}", headers={"Accept": ACCEPTED})
    context = ssl.create_default_context(cafile=str(Path(os.environ["HOME"]) / ".config" / "containers" / "certs.d"
                                                    / registry.host / "ca.crt"))
    with urllib.request.urlopen(request, context=context) as response:
        data: bytes = response.read()
    registry.requests.clear()
    return data


def test_a_download_cut_short_is_tried_again(registry: Registry, bundle_dir: Path, tmp_path: Path) -> None:
    push_bundle(registry, bundle_dir, tmp_path)
    layer = json.loads(_manifest(registry, "op/demo-bundle", "v1"))["layers"][0]["digest"]
    registry.truncate_blob(layer, times=2)
    registry.fail_next(1, status=503, retry_after=0)
    assert load_bundle(f"docker://{registry.ref('op/demo-bundle', 'v1')}").package_name == "demo"
    assert [r.status for r in registry.requests if r.path.endswith(layer)] == [200, 200, 200]
    assert registry.requests[0].status == 503


def test_a_download_that_always_breaks_off_is_given_up(registry: Registry, bundle_dir: Path, tmp_path: Path) -> None:
    push_bundle(registry, bundle_dir, tmp_path)
    layer = json.loads(_manifest(registry, "op/demo-bundle", "v1"))["layers"][0]["digest"]
    size = json.loads(_manifest(registry, "op/demo-bundle", "v1"))["layers"][0]["size"]
    registry.truncate_blob(layer)
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    assert refusal(ref) == (f"{ref}: layer 0: the download of blob {layer} ({size} bytes) broke off: Connection "
                                 f"broken: IncompleteRead({size // 2} bytes read, {size - size // 2} more expected) "
                                 "(after 4 attempts)")


def test_not_found(registry: Registry) -> None:
    ref = f"docker://{registry.ref('op/nothing', 'v9')}"
    assert refusal(ref) == (f"{ref}: not found: {registry.host} has no manifest v9 in repository op/nothing "
                                 "(MANIFEST_UNKNOWN: manifest unknown)")


def test_a_manifest_that_does_not_match_its_digest(registry: Registry) -> None:
    body = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {}, "layers": []}).encode()
    digest = registry.put_manifest("op/lie", body, "application/vnd.oci.image.manifest.v1+json", tag="v1")
    registry.corrupt_blob(digest)
    for ref in (f"docker://{registry.host}/op/lie@{digest}", f"docker://{registry.ref('op/lie', 'v1')}"):
        assert refusal(ref).startswith(f"{ref}: manifest: the manifest {registry.host} sent does not match its "
                                            f"digest {digest} (it hashes to sha256:")


def test_schema_1_manifests_are_refused(ca: CA, home: Path) -> None:
    schema1 = "application/vnd.docker.distribution.manifest.v1+prettyjws"
    with Registry(ca, strict_accept=False) as registry:   # one that answers whatever the client accepts
        trust(home, ca, registry)
        registry.put_manifest("op/old", json.dumps({"schemaVersion": 1}).encode(), schema1, tag="v1")
        ref = f"docker://{registry.ref('op/old', 'v1')}"
        text = refusal(ref)
    assert text == (f"{ref}: manifest: a Docker schema 1 manifest, which is no longer supported (push the "
                                 "image again with a current tool)")


def test_an_untrusted_certificate_says_where_to_put_the_ca(ca: CA, home: Path) -> None:
    with Registry(ca) as registry:
        ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
        text = refusal(ref)
    assert text.startswith(f"{ref}: cannot verify the TLS certificate of {registry.host} ([SSL: "
                           "CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    assert text.endswith(f"trust its CA with a file ending in .crt in one of {home}/.config/containers/certs.d/"
                         f"{registry.host}, /etc/containers/certs.d/{registry.host}, /etc/docker/certs.d/"
                         f"{registry.host} (as podman and skopeo read it), or mark the registry insecure in "
                         "registries.conf")


# --- registries.conf ----------------------------------------------------------------------------------------------


def test_a_mirror_serves_first_and_the_registry_when_the_mirror_fails(ca: CA, home: Path, bundle_dir: Path,
                                                                      tmp_path: Path) -> None:
    with Registry(ca) as primary, Registry(plain_http=True) as mirror:
        trust(home, ca, primary)
        digest = push_bundle(primary, bundle_dir, tmp_path)
        push_bundle(mirror, bundle_dir, tmp_path, repo="mirrored/op/demo-bundle")
        Path(os.environ["CONTAINERS_REGISTRIES_CONF"]).write_text(
            f'[[registry]]\nlocation = "{primary.host}"\n[[registry.mirror]]\nlocation = "{mirror.host}/mirrored"\n'
            'insecure = true\n')
        bundle = load_bundle(f"docker://{primary.ref('op/demo-bundle', 'v1')}")
        assert bundle.image == f"{primary.host}/op/demo-bundle@{digest}"   # the name asked for, not the mirror's
        assert primary.requests == [] and mirror.requests[0].path == "/v2/mirrored/op/demo-bundle/manifests/v1"
        mirror.requests.clear()
        assert refusal(f"docker://{primary.ref('op/demo-bundle', 'v2')}") == (
            f"docker://{primary.host}/op/demo-bundle:v2: not found: {primary.host} has no manifest v2 in repository "
            f"op/demo-bundle (MANIFEST_UNKNOWN: manifest unknown); before it: docker://{primary.host}/op/demo-bundle:"
            f"v2 (mirror {mirror.host}/mirrored/op/demo-bundle): not found: {mirror.host} has no manifest v2 in "
            "repository mirrored/op/demo-bundle (MANIFEST_UNKNOWN: manifest unknown)")


def test_digest_only_mirrors_and_blocked_registries(home: Path) -> None:
    conf = Path(os.environ["CONTAINERS_REGISTRIES_CONF"])
    conf.write_text('[[registry]]\nprefix = "r.io/team"\nlocation = "internal.example/r-team"\n'
                    '[[registry.mirror]]\nlocation = "m.example/r"\npull-from-mirror = "digest-only"\n'
                    '[[registry]]\nlocation = "bad.io"\nblocked = true\n'
                    '[[registry]]\nlocation = "o.io"\nmirror-by-digest-only = true\n'   # what OpenShift writes
                    '[[registry.mirror]]\nlocation = "m.example/o"\n'
                    '[[registry]]\nprefix = "*.example.com"\ninsecure = true\n')
    found = registries_conf()
    assert [e.name for e in found.endpoints(parse_reference("o.io/a:v1"))] == ["o.io/a"]
    assert [e.name for e in found.endpoints(parse_reference("o.io/a@sha256:" + "a" * 64))] == ["m.example/o/a",
                                                                                           "o.io/a"]
    assert found.endpoints(parse_reference("reg.example.com/team/app:v1")) == [
        Endpoint("reg.example.com/team/app", insecure=True)]
    by_tag = found.endpoints(parse_reference("r.io/team/app:v1"))
    by_digest = found.endpoints(parse_reference("r.io/team/app@sha256:" + "a" * 64))
    assert [e.name for e in by_tag] == ["internal.example/r-team/app"]
    assert [(e.name, e.mirror) for e in by_digest] == [("m.example/r/app", True), ("internal.example/r-team/app",
                                                                                   False)]
    assert [e.name for e in found.endpoints(parse_reference("r.io/other:v1"))] == ["r.io/other"]
    assert found.endpoints(parse_reference("bad.io/app:v1")) == [
        Endpoint("bad.io/app", insecure=False, blocked_by=f"bad.io is blocked in {conf}")]
    assert refusal("docker://bad.io/app:v1") == f"docker://bad.io/app:v1: registry bad.io is blocked in {conf}"
    conf.write_text('[[registry]]\nlocation = "https://r.io"\n')
    with pytest.raises(RegistryConfigError) as caught:
        registries_conf()
    assert str(caught.value) == f"{conf}: [[registry]] #1: 'https://r.io': a location has no scheme (write " \
        "host[:port][/path])"


def test_a_blocked_source_with_mirrors_is_pulled_from_its_mirrors_only(ca: CA, home: Path, bundle_dir: Path,
                                                                        tmp_path: Path) -> None:
    """What OpenShift's ImageDigestMirrorSet writes for mirrorSourcePolicy NeverContactSource: the source blocked,
    its mirrors tried, as containers/image checks blocked per attempt; the source itself is never asked."""
    with Registry(ca) as source, Registry(plain_http=True) as mirror:
        trust(home, ca, source)
        digest = push_bundle(source, bundle_dir, tmp_path)
        push_bundle(mirror, bundle_dir, tmp_path, repo="m/op/demo-bundle")
        conf = Path(os.environ["CONTAINERS_REGISTRIES_CONF"])
        conf.write_text(f'[[registry]]\nlocation = "{source.host}/op"\nblocked = true\nmirror-by-digest-only = true\n'
                        f'[[registry.mirror]]\nlocation = "{mirror.host}/m/op"\ninsecure = true\n')
        bundle = load_bundle(f"docker://{source.host}/op/demo-bundle@{digest}")
        assert bundle.package_name == "demo" and source.requests == []
        assert refusal(f"docker://{source.ref('op/demo-bundle', 'v1')}") == (   # by tag: no mirror, the source blocked
            f"docker://{source.host}/op/demo-bundle:v1: registry {source.host}/op is blocked in {conf}")
        assert source.requests == []


def test_registries_conf_entries_are_checked_and_matched_as_containers_image_540_does(home: Path) -> None:
    conf = Path(os.environ["CONTAINERS_REGISTRIES_CONF"])

    def refused(text: str) -> str:
        conf.write_text(text)
        with pytest.raises(RegistryConfigError) as caught:
            registries_conf().endpoints(parse_reference("r.io/org/app:v1"))
        return str(caught.value).removeprefix(f"{conf}: ")

    assert refused('[[registry]]\nprefix = "r.io"\n') == (
        "[[registry]] #1: prefix 'r.io' without a location (only a wildcard prefix, *.example.com, may go without one)")
    assert refused('[[registry]]\nprefix = "*.r.io/org"\n') == (
        "[[registry]] #1: wildcard prefix '*.r.io/org' is not of the form *.example.com")
    assert refused('[[registry]]\nlocation = "r.io"\npull-from-mirror = "all"\n') == (
        "[[registry]] #1: pull-from-mirror is a mirror's setting, not a registry's")
    assert refused('[[registry]]\nlocation = "r.io"\nmirror-by-digest-only = true\n[[registry.mirror]]\n'
                   'location = "m.io"\npull-from-mirror = "all"\n') == (
        "[[registry]] #1 mirror #1: pull-from-mirror cannot be set with the registry's mirror-by-digest-only")
    assert refused('[[registry]]\nprefix = "r.io/a"\nlocation = "m.io"\n[[registry]]\nprefix = "r.io/b"\n'
                   'location = "m.io"\ninsecure = true\n') == (
        "registry 'm.io' is defined several times with conflicting 'insecure' settings")
    assert refused('[[registry]]\nprefix = "r.io/org"\nlocation = "docker.io"\n') == (   # docker.io/app: not canonical
        "r.io/org/app:v1: registries.conf rewrites it to 'docker.io/app:v1', which is no canonical image reference (it "
        "would be 'docker.io/library/app:v1')")
    conf.write_text('[[registry]]\nprefix = "*.example.com"\nlocation = "m.io/w"\n'   # a wildcard may relocate
                    '[[registry]]\nprefix = "r.io/org"\nlocation = "first.io"\n'
                    '[[registry]]\nprefix = "r.io/org"\nlocation = "second.io"\n'   # the first of a prefix wins
                    '[[registry]]\nlocation = "example.com"\ninsecure = true\n')
    found = registries_conf()
    assert [e.name for e in found.endpoints(parse_reference("a.example.com/x/y:v1"))] == ["m.io/w/x/y"]
    assert [e.name for e in found.endpoints(parse_reference("r.io/org/app:v1"))] == ["first.io/app"]
    # containers/image's prefix quirk: "example.com" also matches "example.com:5000"
    assert found.endpoints(parse_reference("example.com:5000/z:v1")) == [Endpoint("example.com:5000/z",
                                                                                    insecure=True)]


def test_each_place_tried_stands_alone_as_in_containers_image(ca: CA, home: Path, bundle_dir: Path,
                                                              tmp_path: Path) -> None:
    """A mirror whose certs.d is broken, and a blocked mirror, are attempts that fail: the next place is tried. A
    stray .crt that is no PEM certificate is passed over, as Go's AppendCertsFromPEM passes it over."""
    with Registry(ca) as primary:
        trust(home, ca, primary)
        certs = home / ".config/containers/certs.d" / primary.host
        (certs / "old.crt").write_bytes(b"\x30\x82 not PEM")
        push_bundle(primary, bundle_dir, tmp_path)
        broken = home / ".config/containers/certs.d/broken.example:5000"
        broken.mkdir()
        (broken / "client.key").write_text("")
        conf = Path(os.environ["CONTAINERS_REGISTRIES_CONF"])
        conf.write_text(f'[[registry]]\nlocation = "{primary.host}"\n[[registry.mirror]]\n'
                        'location = "broken.example:5000/m"\n[[registry.mirror]]\nlocation = "blocked.example/m"\n'
                        '[[registry]]\nlocation = "blocked.example"\nblocked = true\n')
        ref = f"docker://{primary.ref('op/demo-bundle', 'v1')}"
        assert load_bundle(ref).package_name == "demo"
        primary.fail_next(1, status=404)
        assert refusal(ref).endswith(
            f"; before it: {ref} (mirror broken.example:5000/m/op/demo-bundle): {broken}/client.key: a client key "
            f"without its certificate client.cert; {ref} (mirror blocked.example/m/op/demo-bundle): registry "
            f"blocked.example is blocked in {conf}")


def test_a_source_relocated_into_a_blocked_registry_is_blocked_under_its_new_name(home: Path) -> None:
    conf = Path(os.environ["CONTAINERS_REGISTRIES_CONF"])
    conf.write_text('[[registry]]\nprefix = "r.io/org"\nlocation = "internal.example/org"\n'
                    '[[registry]]\nlocation = "internal.example"\nblocked = true\n'
                    '[[registry]]\nprefix = "q.io/org"\nlocation = "elsewhere.example/org"\nblocked = true\n')
    found = registries_conf()
    assert found.endpoints(parse_reference("r.io/org/app:v1")) == [
        Endpoint("internal.example/org/app", insecure=False, blocked_by=f"internal.example is blocked in {conf}")]
    # blocked, but tried under a name no blocked entry matches: containers/image pulls it
    assert found.endpoints(parse_reference("q.io/org/app:v1")) == [Endpoint("elsewhere.example/org/app",
                                                                            insecure=False)]


@pytest.mark.parametrize(("text", "problem"), [
    ('[registries.search]\nregistries = ["docker.io"]\n',
     "registries.conf must be in v2 format but is in v1 ([registries.search]), which containers/image v5.40 (OLM v1 "
     "v1.11, podman 5.7) refuses: write a [[registry]] table per registry instead (location, insecure = true, "
     "blocked = true; unqualified-search-registries for search), see containers-registries.conf(5)"),
    ('[registries.block]\nregistries = "r.io"\n', "[registries.block] must be a table with a list of registries"),
    ('short-name-mode = "prompt"\n', 'invalid short-name mode: "prompt"'),
    ('unqualified-search-registries = ["docker.io/library"]\n',
     'Invalid unqualified-search-registries entry "docker.io/library"'),
    ('[aliases]\n"busybox" = "busybox"\n', 'invalid alias "busybox": must contain registry and repository'),
    ('[aliases]\n"quay.io/x" = "quay.io/x/y"\n', 'invalid short name "quay.io/x": must not contain registry'),
])
def test_what_containers_image_540_refuses_in_registries_conf_is_refused(home: Path, text: str,
                                                                         problem: str) -> None:
    conf = Path(os.environ["CONTAINERS_REGISTRIES_CONF"])
    conf.write_text(text)
    with pytest.raises(RegistryConfigError) as caught:
        registries_conf()
    assert str(caught.value) == f"{conf}: {problem}"


def test_a_registries_conf_with_a_byte_order_mark_is_read(home: Path) -> None:
    conf = Path(os.environ["CONTAINERS_REGISTRIES_CONF"])
    conf.write_bytes('\ufeff[[registry]]\nlocation = "r.io"\ninsecure = true\n'.encode())
    assert registries_conf().endpoints(parse_reference("r.io/a:v1")) == [Endpoint("r.io/a", insecure=True)]


def test_a_registries_conf_in_toml_1_1_is_read(home: Path) -> None:
    """BurntSushi/toml (containers/image's decoder) reads TOML 1.1: an inline table over several lines with a
    trailing comma, \\xHH escapes; podman reads such a file, and so does cosctl."""
    conf = Path(os.environ["CONTAINERS_REGISTRIES_CONF"])
    conf.write_text('registry = [{\n  location = "r\\x2eio",\n  insecure = true,\n}]\n')
    assert registries_conf().endpoints(parse_reference("r.io/a:v1")) == [Endpoint("r.io/a", insecure=True)]


def test_registries_conf_keys_are_matched_as_go_matches_struct_fields(home: Path) -> None:
    """BurntSushi/toml (containers/image's decoder) takes a key equal to a field's name but for case, by
    strings.EqualFold (which folds the Kelvin sign into k): podman reads these, and so does cosctl."""
    conf = Path(os.environ["CONTAINERS_REGISTRIES_CONF"])
    conf.write_text('[[Registry]]\nPrefix = "r.io/org"\nLOCATION = "r.io/org"\n"bloc\u212aed" = true\n')
    assert registries_conf().endpoints(parse_reference("r.io/org/app:v1")) == [
        Endpoint("r.io/org/app", insecure=False, blocked_by=f"r.io/org is blocked in {conf}")]
    conf.write_text('[[REGISTRY]]\nlocation = "q.io"\nInsecure = true\n[[REGISTRY.Mirror]]\nLocation = "qm.io"\n'
                    'Pull-From-Mirror = "tag-only"\n')
    assert registries_conf().endpoints(parse_reference("q.io/x:v1")) == [
        Endpoint("qm.io/x", insecure=False, mirror=True), Endpoint("q.io/x", insecure=True)]
    conf.write_text('[Registries.Search]\nRegistries = []\n')   # the v1 format, in any case, even empty
    with pytest.raises(RegistryConfigError) as caught:
        registries_conf()
    assert "must be in v2 format but is in v1 ([registries.search])" in str(caught.value)
    conf.write_text("additional-layer-store-auth-helper = 1\n")   # a field Go decodes, so types
    with pytest.raises(RegistryConfigError) as caught:
        registries_conf()
    assert str(caught.value) == f"{conf}: additional-layer-store-auth-helper must be a string"


def test_an_insecure_registry_over_plain_http(home: Path, bundle_dir: Path, tmp_path: Path) -> None:
    with Registry(plain_http=True) as registry:
        push_bundle(registry, bundle_dir, tmp_path)
        ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
        assert refusal(ref).startswith(f"{ref}: TLS with {registry.host} failed: ")
        Path(os.environ["CONTAINERS_REGISTRIES_CONF"]).write_text(
            f'[[registry]]\nlocation = "{registry.host}"\ninsecure = true\n')
        assert load_bundle(ref).package_name == "demo"


def test_a_manifest_over_the_limit_is_refused(registry: Registry) -> None:
    big = json.dumps({"schemaVersion": 2, "layers": [], "pad": "x" * (5 << 20)}).encode()
    registry.put_manifest("op/big", big, "application/vnd.oci.image.manifest.v1+json", tag="v1")
    ref = f"docker://{registry.ref('op/big', 'v1')}"
    assert refusal(ref) == f"{ref}: manifest: {len(big)} bytes, more than the limit of {4 << 20} for a manifest"



# --- cosctl ---------------------------------------------------------------------------------------------------


def test_publish_of_a_pulled_bundle_records_its_digest_and_pulls_once(registry: Registry, bundle_dir: Path,
                                                                      tmp_path: Path) -> None:
    digest = push_bundle(registry, bundle_dir, tmp_path)
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    mc = MemCluster()
    code, out, err = cosctl("publish", ref, "-n", "demo-system", cluster=mc)
    assert (code, err) == (0, f"cosctl publish: pulled {ref} ({registry.host}/op/demo-bundle@{digest})\n")
    assert out.splitlines()[-1] == "ClusterObjectSet demo-1 (revision 1) created"
    assert len(registry.requests) == 3   # the manifest, the config, the layer: once
    [cos] = mc.objects(api.API_VERSION, api.KIND)
    assert cos["metadata"]["annotations"][api.ANNOTATION_BUNDLE_REFERENCE] == f"{registry.host}/op/demo-bundle@{digest}"
    # the same content from a directory: the revision no longer says it came from that image
    code, out, err = cosctl("publish", str(bundle_dir), cluster=mc)
    assert (code, out.splitlines()[-1]) == (0, "unchanged content: ClusterObjectSet demo-1 (revision 1) updated in "
                                               "place (mutable fields only)")
    [cos] = mc.objects(api.API_VERSION, api.KIND)
    assert api.ANNOTATION_BUNDLE_REFERENCE not in cos["metadata"]["annotations"]
    code, out, err = cosctl("diff", ref, cluster=mc)
    assert (code, err) == (0, f"cosctl diff: pulled {ref} ({registry.host}/op/demo-bundle@{digest})\n"
                              "cosctl diff: bundle demo-operator.v1.0.0 rendered for namespace demo-system (options "
                              "kept from demo-1)\n")


def test_render_of_an_image_that_cannot_be_pulled_exits_2(registry: Registry) -> None:
    ref = f"docker://{registry.ref('op/nothing', 'v1')}"
    assert cosctl("render", ref, "-n", "demo-system") == (
        2, "", f"cosctl render: {ref}: not found: {registry.host} has no manifest v1 in repository op/nothing "
               "(MANIFEST_UNKNOWN: manifest unknown)\n")


def test_a_damaged_cached_blob_is_downloaded_again(registry: Registry, bundle_dir: Path, tmp_path: Path) -> None:
    push_bundle(registry, bundle_dir, tmp_path)
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    load_bundle(ref)
    layer = json.loads(_manifest(registry, "op/demo-bundle", "v1"))["layers"][0]["digest"]
    cached = tmp_path / "cache" / "blobs" / "sha256" / layer.split(":")[1]
    data = bytearray(cached.read_bytes())
    data[-1] ^= 0xFF
    cached.write_bytes(bytes(data))
    assert load_bundle(ref).package_name == "demo"
    assert [r.path for r in registry.requests] == ["/v2/op/demo-bundle/manifests/v1",
                                                   f"/v2/op/demo-bundle/blobs/{layer}"]


def test_a_cache_that_cannot_hold_blobs_is_named(registry: Registry, bundle_dir: Path, tmp_path: Path) -> None:
    push_bundle(registry, bundle_dir, tmp_path)
    (tmp_path / "cache" / "blobs").mkdir(parents=True)
    (tmp_path / "cache" / "blobs" / "sha256").write_text("not a directory")
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    assert refusal(ref) == (f"{ref}: the image cache {tmp_path / 'cache'}: File exists (set COSCTL_CACHE_DIR to a "
                                 "writable directory, or delete this one: it only holds downloads)")


def test_what_a_registry_cannot_mean_names_the_reference(registry: Registry) -> None:
    registry.put_manifest("op/html", b"<html>maintenance</html>", "application/vnd.oci.image.manifest.v1+json",
                          tag="v1")
    ref = f"docker://{registry.ref('op/html', 'v1')}"
    assert refusal(ref) == f"{ref}: manifest: not valid JSON (Expecting value: line 1 column 1 (char 0))"
    hostile = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
               "config": {"digest": "sha256:../../etc", "size": 1}, "layers": []}
    registry.put_manifest("op/hostile", json.dumps(hostile).encode(), "application/vnd.oci.image.manifest.v1+json",
                          tag="v1")
    ref = f"docker://{registry.ref('op/hostile', 'v1')}"
    assert refusal(ref) == f'{ref}: config: unsupported or malformed digest "sha256:../../etc"'


def test_retry_after(registry: Registry, bundle_dir: Path, tmp_path: Path) -> None:
    push_bundle(registry, bundle_dir, tmp_path)
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    registry.fail_next(1, status=503, retry_after="nan")   # not a number of seconds: the backoff
    assert load_bundle(ref).package_name == "demo"
    registry.fail_next(1, status=429, retry_after=3600)   # not waited for: said at once
    assert refusal(ref) == (
        f"{ref}: {registry.host} answered HTTP 429 to GET /v2/op/demo-bundle/manifests/v1: TOOMANYREQUESTS: too many "
        "requests; it asks to wait 3600 s before trying again (a rate limit: try later, or log in to the registry, "
        "which usually allows more)")


def test_certs_d_follows_xdg_config_home_as_containers_image_540_reads_it(
        registry: Registry, bundle_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """containers/image v5.40 (OLM v1 v1.11's) looks for the user's certs.d below $XDG_CONFIG_HOME when it is set,
    ~/.config only without it: a CA trusted in ~/.config is not trusted with XDG_CONFIG_HOME set elsewhere."""
    push_bundle(registry, bundle_dir, tmp_path)
    ref = f"docker://{registry.ref('op/demo-bundle', 'v1')}"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert refusal(ref).endswith(
        f"trust its CA with a file ending in .crt in one of {tmp_path}/xdg/containers/certs.d/{registry.host}, "
        f"/etc/containers/certs.d/{registry.host}, /etc/docker/certs.d/{registry.host} (as podman and skopeo read "
        "it), or mark the registry insecure in registries.conf")
    (tmp_path / "xdg" / "containers").mkdir(parents=True)
    (tmp_path / "home" / ".config" / "containers" / "certs.d").rename(tmp_path / "xdg" / "containers" / "certs.d")
    assert load_bundle(ref).package_name == "demo"


def test_a_reference_with_both_a_tag_and_a_digest_is_refused_as_containers_image_refuses_it() -> None:
    ref = "docker://127.0.0.1:1/op/demo:v1@sha256:" + "a" * 64
    assert refusal(ref) == (f"{ref}: a reference with both a tag and a digest cannot be pulled (as skopeo and OLM v1 "
                            "cannot pull it): give the digest alone")


def test_registries_conf_is_the_first_main_file_with_the_drop_ins_of_every_directory(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """containers/image v5.40: the user's registries.conf hides /etc's and /usr/share's, not their drop-ins; a
    drop-in of the user's replaces /etc's of the same name, /etc's rootful or rootless ones come before its own;
    $CONTAINERS_REGISTRIES_CONF_OVERRIDE is read last, and $CONTAINERS_REGISTRIES_CONF alone, without drop-ins."""
    monkeypatch.delenv("CONTAINERS_REGISTRIES_CONF")
    monkeypatch.setenv("_CONTAINERS_ROOTLESS_UID", "1000")
    root = tmp_path / "root"
    user, etc, share = home / ".config/containers", root / "etc/containers", root / "usr/share/containers"
    files = ["registries.conf", "registries.conf.d/10-mirror.conf", "registries.conf.d/README",
             "registries.rootless.conf.d/20-proxy.conf", "registries.rootless.conf.d/1000/30-mine.conf",
             "registries.rootful.conf.d/40-root.conf"]
    for base in (etc, share):
        for name in files:
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_text("")
    assert conf_files(root) == [etc / "registries.conf", etc / "registries.conf.d/10-mirror.conf",
                                etc / "registries.rootless.conf.d/20-proxy.conf",
                                etc / "registries.rootless.conf.d/1000/30-mine.conf"]
    (user / "registries.conf.d").mkdir()
    for name in ("registries.conf", "registries.conf.d/10-mirror.conf", "registries.conf.d/50-user.conf"):
        (user / name).write_text("")
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF_OVERRIDE", str(tmp_path / "override.conf"))
    (tmp_path / "override.conf").write_text("")
    assert conf_files(root) == [user / "registries.conf", user / "registries.conf.d/10-mirror.conf",
                                etc / "registries.rootless.conf.d/20-proxy.conf",
                                etc / "registries.rootless.conf.d/1000/30-mine.conf",
                                user / "registries.conf.d/50-user.conf", tmp_path / "override.conf"]
    monkeypatch.setenv("_CONTAINERS_ROOTLESS_UID", "0")
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(share / "registries.conf"))
    assert conf_files(root) == [share / "registries.conf", tmp_path / "override.conf"]
    (tmp_path / "override.conf").unlink()
    with pytest.raises(RegistryConfigError) as refused:
        conf_files(root)
    assert str(refused.value) == (f"{tmp_path}/override.conf: no such file (named by "
                                  "CONTAINERS_REGISTRIES_CONF_OVERRIDE)")
