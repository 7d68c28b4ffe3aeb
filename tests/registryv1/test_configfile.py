"""Where the containers configuration files are looked for, as containers/storage's configfile (go.podman.io/storage
v1.63, read by containers/image v5.40) looks: the search paths, the files read, and what stops the reading."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from common.bundle.registryv1.configfile import (
    CERTS_D,
    POLICY_JSON,
    REGISTRIES_CONF,
    REGISTRIES_D,
    ConfigFileError,
    SearchPaths,
    config_files,
    drop_in_files,
    rootless_uid,
    search_paths,
)
from common.bundle.registryv1.registries import RegistryConfigError, cert_dirs, certificates


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own and none of the variables that name files."""
    for name in ("XDG_CONFIG_HOME", "CONTAINERS_REGISTRIES_CONF", "CONTAINERS_REGISTRIES_CONF_OVERRIDE",
                 "CONTAINERS_POLICY_JSON", "CONTAINERS_POLICY_JSON_OVERRIDE", "_CONTAINERS_ROOTLESS_UID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_registries_conf_is_looked_for_as_root_in_the_rootful_drop_ins(environment: Path) -> None:
    user = environment / ".config/containers"
    assert search_paths(REGISTRIES_CONF, uid=0) == SearchPaths(
        (user / "registries.conf", Path("/etc/containers/registries.conf"),
         Path("/usr/share/containers/registries.conf")),
        (user / "registries.conf.d", Path("/etc/containers/registries.rootful.conf.d"),
         Path("/etc/containers/registries.conf.d"), Path("/usr/share/containers/registries.rootful.conf.d"),
         Path("/usr/share/containers/registries.conf.d")))


def test_another_user_has_the_rootless_drop_ins_and_those_of_the_uid_before_them(environment: Path,
                                                                                tmp_path: Path) -> None:
    user = environment / ".config/containers"
    etc, share = tmp_path / "etc/containers", tmp_path / "usr/share/containers"
    assert search_paths(REGISTRIES_CONF, root=tmp_path, uid=1000).drop_in_dirs == (
        user / "registries.conf.d", etc / "registries.rootless.conf.d/1000", etc / "registries.rootless.conf.d",
        etc / "registries.conf.d", share / "registries.rootless.conf.d/1000", share / "registries.rootless.conf.d",
        share / "registries.conf.d")


def test_a_name_without_its_extension_takes_the_special_name_at_the_end(environment: Path) -> None:
    """registries.d and certs.d are NAME.d directories: the rootful or rootless part goes before the .d."""
    assert search_paths(REGISTRIES_D, uid=0).drop_in_dirs == (
        environment / ".config/containers/registries.d", Path("/etc/containers/registries.rootful.d"),
        Path("/etc/containers/registries.d"), Path("/usr/share/containers/registries.rootful.d"),
        Path("/usr/share/containers/registries.d"))
    assert search_paths(REGISTRIES_D, uid=0).main_files == ()
    assert search_paths(CERTS_D, uid=7).drop_in_dirs[1:3] == (Path("/etc/containers/certs.rootless.d/7"),
                                                              Path("/etc/containers/certs.rootless.d"))


def test_a_negative_uid_has_no_rootful_or_rootless_drop_ins(environment: Path) -> None:
    assert search_paths(REGISTRIES_D, uid=-1).drop_in_dirs == (
        environment / ".config/containers/registries.d", Path("/etc/containers/registries.d"),
        Path("/usr/share/containers/registries.d"))


def test_xdg_config_home_is_the_users_directory_whenever_it_is_set_even_empty(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert search_paths(POLICY_JSON).main_files[0] == tmp_path / "xdg/containers/policy.json"
    monkeypatch.setenv("XDG_CONFIG_HOME", "")   # Go's LookupEnv: set, so a path relative to the working directory
    assert search_paths(POLICY_JSON).main_files[0] == Path("containers/policy.json")


def test_the_environment_names_the_main_file_alone_and_the_override_comes_last(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(tmp_path / "mine.conf"))
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF_OVERRIDE", str(tmp_path / "last.conf"))
    assert search_paths(REGISTRIES_CONF) == SearchPaths((tmp_path / "mine.conf",), (), tmp_path / "last.conf",
                                                        "CONTAINERS_REGISTRIES_CONF")
    with pytest.raises(ConfigFileError) as refused:
        config_files(REGISTRIES_CONF)
    assert str(refused.value) == f"{tmp_path}/mine.conf: no such file (named by CONTAINERS_REGISTRIES_CONF)"
    # policy.json has no drop-ins, and so no override either
    monkeypatch.setenv("CONTAINERS_POLICY_JSON_OVERRIDE", str(tmp_path / "last.json"))
    assert search_paths(POLICY_JSON).override_file is None


@pytest.mark.parametrize(("value", "uid"), [("1000", 1000), ("+5", 5), ("007", 7), ("-3", -3), ("abc", 0),
                                            ("5 ", 0), ("٣", 0), ("99999999999999999999", 2 ** 63 - 1),
                                            ("9" * 5000, 2 ** 63 - 1), ("-" + "9" * 5000, -(2 ** 63))])
def test_the_rootless_uid_podman_passes_is_read_as_go_atoi_reads_it(monkeypatch: pytest.MonkeyPatch, value: str,
                                                                    uid: int) -> None:
    monkeypatch.setenv("_CONTAINERS_ROOTLESS_UID", value)
    assert rootless_uid() == uid


def test_drop_ins_are_merged_by_name_the_higher_directory_winning_even_with_a_dangling_link(tmp_path: Path) -> None:
    high, low = tmp_path / "high", tmp_path / "low"
    for directory in (high, low):
        directory.mkdir()
        for name in ("a.conf", "b.conf", "c.conf", "notes.txt"):
            (directory / name).write_text("")
    (high / "b.conf").unlink()
    (high / "b.conf").symlink_to(tmp_path / "nowhere")   # wins over low's b.conf, then is no file: neither is read
    (high / "d.conf").mkdir()                              # a directory is no drop-in
    (low / "d.conf").write_text("")
    assert drop_in_files((high, low, tmp_path / "missing"), ".conf") == [high / "a.conf", high / "c.conf",
                                                                          low / "d.conf"]


def test_a_file_where_a_drop_in_directory_should_be_stops_the_reading(tmp_path: Path) -> None:
    (tmp_path / "registries.d").write_text("")
    with pytest.raises(ConfigFileError) as refused:
        drop_in_files((tmp_path / "registries.d",), ".yaml")
    assert str(refused.value) == f"{tmp_path}/registries.d: cannot read the directory: Not a directory"


def test_the_first_main_file_is_read_alone_and_one_below_a_file_is_an_error(environment: Path,
                                                                             tmp_path: Path) -> None:
    (tmp_path / "etc/containers").mkdir(parents=True)
    (tmp_path / "usr/share/containers").mkdir(parents=True)
    (tmp_path / "etc/containers/policy.json").write_text("{}")
    (tmp_path / "usr/share/containers/policy.json").write_text("{}")
    assert config_files(POLICY_JSON, root=tmp_path) == [tmp_path / "etc/containers/policy.json"]
    environment.mkdir()
    (environment / ".config").write_text("")   # ~/.config/containers/policy.json cannot even be looked for
    with pytest.raises(ConfigFileError) as refused:
        config_files(POLICY_JSON, root=tmp_path)
    assert str(refused.value) == f"{environment}/.config/containers/policy.json: cannot read: Not a directory"


def test_certs_d_of_a_host_is_the_first_found_then_dockers(environment: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_CONTAINERS_ROOTLESS_UID", "1000")
    assert cert_dirs(tmp_path) == (environment / ".config/containers/certs.d",
                                   tmp_path / "etc/containers/certs.rootless.d/1000",
                                   tmp_path / "etc/containers/certs.rootless.d", tmp_path / "etc/containers/certs.d",
                                   tmp_path / "usr/share/containers/certs.rootless.d/1000",
                                   tmp_path / "usr/share/containers/certs.rootless.d",
                                   tmp_path / "usr/share/containers/certs.d", tmp_path / "etc/docker/certs.d")
    docker = tmp_path / "etc/docker/certs.d/reg.example.com:5000"
    docker.mkdir(parents=True)
    (docker / "ca.crt").write_text("")
    assert certificates("reg.example.com:5000", tmp_path).ca_files == (str(docker / "ca.crt"),)
    rootless = tmp_path / "usr/share/containers/certs.rootless.d/reg.example.com:5000"
    rootless.mkdir(parents=True)   # found first, though empty: docker's is not read
    assert certificates("reg.example.com:5000", tmp_path).directory == str(rootless)
    assert certificates("reg.example.com:5000", tmp_path).ca_files == ()


def test_a_client_key_or_certificate_without_its_pair_is_refused(tmp_path: Path) -> None:
    host = tmp_path / "etc/docker/certs.d/reg.example.com"
    host.mkdir(parents=True)
    (host / "client.key").write_text("")
    with pytest.raises(RegistryConfigError) as refused:
        certificates("reg.example.com", tmp_path)
    assert str(refused.value) == f"{host}/client.key: a client key without its certificate client.cert"
    (host / "client.key").rename(host / "client.cert")
    with pytest.raises(RegistryConfigError) as refused:
        certificates("reg.example.com", tmp_path)
    assert str(refused.value) == (f"{host}/client.cert: a client certificate without its key client.key (a CA "
                                  "certificate's name ends in .crt)")
    (host / "client.key").write_text("")
    assert certificates("reg.example.com", tmp_path).client_pairs == ((str(host / "client.cert"),
                                                                      str(host / "client.key")),)


def test_no_home_at_all_is_said_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """An arbitrary uid in a container, with HOME unset and no password database entry."""
    monkeypatch.delenv("HOME")

    def no_entry() -> Path:
        raise KeyError("getpwuid(): uid not found")

    monkeypatch.setattr(Path, "home", staticmethod(no_entry))
    with pytest.raises(ConfigFileError) as refused:
        search_paths(POLICY_JSON)
    assert str(refused.value) == (f"cannot tell the home directory: $HOME is not set and uid {os.getuid()} has no "
                                  "entry in the password database (set HOME)")
