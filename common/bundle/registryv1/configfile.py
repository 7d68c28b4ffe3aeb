"""Where the containers tools look for a configuration file and its drop-ins: containers/storage's
``pkg/configfile`` (go.podman.io/storage v1.63), through which containers/image v5.40 (OLM v1 v1.11's, and
podman's from 5.7) finds ``registries.conf``, ``certs.d``, ``registries.d`` and ``policy.json``.

Why one module: the four files follow one rule, and an admin who sets a machine up for podman expects every
containers tool to find the same files. Reading each with its own lookup is how the earlier copies here drifted
from containers/image (the user's file hiding the system's drop-ins, ``~/.config`` where ``$XDG_CONFIG_HOME`` is
set, no ``/usr/share``).

For a file ``NAME.EXT`` (``NAME`` alone for the names that carry no extension):

- The main file: ``$<ENV>`` when the file has an environment variable and it is set (it must exist, and then no
  drop-in is read); else the first that exists of ``<user>/NAME.EXT``, ``/etc/containers/NAME.EXT`` and
  ``/usr/share/containers/NAME.EXT``, that one alone. ``<user>`` is ``$XDG_CONFIG_HOME/containers`` whenever the
  variable is set, else ``$HOME/.config/containers``.
- The drop-in directories, highest priority first: ``<user>/NAME.EXT.d``; then for ``/etc/containers`` and then
  ``/usr/share/containers``: for root ``NAME.rootful.EXT.d``, for another user ``NAME.rootless.EXT.d/<uid>`` and
  ``NAME.rootless.EXT.d``; then ``NAME.EXT.d``. Every ``*.EXT`` that is not a directory is read, in name order;
  of two files of the same name, the one in the higher priority directory is read, the other not at all.
- ``$<ENV>_OVERRIDE``: one more file, read last, which must exist.
- A file that does not exist is skipped (a main file named by the environment excepted); any other error reading a
  file or a directory stops everything, as it stops podman.

The uid is ``$_CONTAINERS_ROOTLESS_UID`` (set by podman in its user namespace) or the process's. Pure lookups: what
the files mean is their readers' (:mod:`.registries`, :mod:`.registriesd`, :mod:`.policy`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from common.bundle.registryv1.model import BundleInputError

SYSTEM_DIR: Final = "/usr/share/containers"   # what the distribution ships
ADMIN_DIR: Final = "/etc/containers"          # the admin's overrides
DROP_IN_SUFFIX: Final = ".d"


class ConfigFileError(BundleInputError):
    """A containers configuration file or directory that exists but cannot be read, or one named by the
    environment that does not exist; names the path."""


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One kind of containers configuration file, as containers/image describes it to configfile."""

    name: str                       # "registries"
    extension: str                  # "conf": the drop-ins' suffix, and the main file's unless not in_name
    environment: str = ""           # the variable that names the main file; <it>_OVERRIDE names one more
    extension_in_name: bool = True  # False: the main file (and the drop-in directories) are NAME, not NAME.EXT
    main_file: bool = True          # False: drop-ins only (registries.d)
    drop_ins: bool = True           # False: the main file only (policy.json)

    @property
    def file_name(self) -> str:
        """The main file's name (and the drop-in directories' stem): ``NAME.EXT``, or ``NAME``."""
        return f"{self.name}.{self.extension}" if self.extension_in_name else self.name


REGISTRIES_CONF: Final = ConfigFile("registries", "conf", "CONTAINERS_REGISTRIES_CONF")
POLICY_JSON: Final = ConfigFile("policy", "json", "CONTAINERS_POLICY_JSON", drop_ins=False)
REGISTRIES_D: Final = ConfigFile("registries", "yaml", extension_in_name=False, main_file=False)
CERTS_D: Final = ConfigFile("certs", "d", extension_in_name=False)   # only its directories: per-host CA folders


@dataclass(frozen=True, slots=True)
class SearchPaths:
    """Where a file is looked for, highest priority first in each list."""

    main_files: tuple[Path, ...]
    drop_in_dirs: tuple[Path, ...]
    override_file: Path | None = None
    named_by: str = ""   # the variable that named the main file (which must then exist), or ""


def rootless_uid() -> int:
    """The uid that chooses between the rootful and rootless drop-ins, as containers/storage's
    ``GetRootlessUID`` reads it (an unparsable ``$_CONTAINERS_ROOTLESS_UID`` is 0, what Go's ``Atoi`` returns with
    its error)."""
    named = os.environ.get("_CONTAINERS_ROOTLESS_UID", "")
    if not named:
        return os.getuid()
    digits = named[1:] if named[0] in "+-" else named
    if not (digits.isascii() and digits.isdigit()):
        return 0
    if len(digits.lstrip("0")) > 19:   # beyond int64 whatever the digits: Atoi's clamped value
        return -(2 ** 63) if named[0] == "-" else 2 ** 63 - 1
    return max(-(2 ** 63), min(2 ** 63 - 1, int(named)))


def user_config_dir() -> Path:
    """``$XDG_CONFIG_HOME/containers`` when the variable is set (even empty, as Go's ``LookupEnv`` tells), else
    ``$HOME/.config/containers`` (the password database's home without ``$HOME``)."""
    config_home = os.environ.get("XDG_CONFIG_HOME")
    if config_home is not None:
        return Path(config_home, "containers")
    return home_dir() / ".config" / "containers"


def home_dir() -> Path:
    """``$HOME``, else the password database's home for this user (containers/storage's ``HomeDir``); a
    :class:`ConfigFileError` when there is neither (an arbitrary uid in a container, with HOME unset)."""
    if home := os.environ.get("HOME"):
        return Path(home)
    try:
        return Path.home()
    except (RuntimeError, KeyError):
        raise ConfigFileError(f"cannot tell the home directory: $HOME is not set and uid {os.getuid()} has no "
                              "entry in the password database (set HOME)") from None


def _under(root: Path | None, directory: str) -> Path:
    """``directory`` (absolute) below ``root``, as containers/image's RootForImplicitAbsolutePaths puts it."""
    return Path(directory) if root is None else root / directory.lstrip("/")


def search_paths(config: ConfigFile, *, root: Path | None = None, uid: int | None = None) -> SearchPaths:
    """Where ``config`` is looked for. ``root`` (containers/image's ``RootForImplicitAbsolutePaths``) is put before
    ``/etc`` and ``/usr/share``, never before the user's directory or a path from the environment."""
    uid = rootless_uid() if uid is None else uid
    system = _under(root, SYSTEM_DIR) / config.file_name
    admin = _under(root, ADMIN_DIR) / config.file_name
    user = user_config_dir() / config.file_name
    main_files: tuple[Path, ...] = ()
    named_by = ""
    if config.main_file:
        named = os.environ.get(config.environment, "") if config.environment else ""
        if named:
            main_files, named_by = (Path(named),), config.environment
        else:
            main_files = (user, admin, system)
    drop_in_dirs: tuple[Path, ...] = ()
    override: Path | None = None
    if config.drop_ins:
        if not named_by:
            suffix = "." + config.extension
            drop_in_dirs = (Path(f"{user}{DROP_IN_SUFFIX}"),
                            *_drop_ins_under(admin, suffix, uid), *_drop_ins_under(system, suffix, uid))
        if config.environment and (extra := os.environ.get(config.environment + "_OVERRIDE", "")):
            override = Path(extra)
    return SearchPaths(main_files, drop_in_dirs, override, named_by)


def _drop_ins_under(main: Path, suffix: str, uid: int) -> list[Path]:
    """``NAME.rootless.EXT.d/<uid>`` and ``NAME.rootless.EXT.d`` (or ``NAME.rootful.EXT.d``), then ``NAME.EXT.d``:
    the special name goes between the name and the extension when the main file has one."""
    text = str(main)
    if uid < 0:   # no user to tell rootful from rootless (Windows' uid; a negative $_CONTAINERS_ROOTLESS_UID)
        return [Path(text + DROP_IN_SUFFIX)]
    stem, has_suffix = (text[:-len(suffix)], True) if text.endswith(suffix) else (text, False)
    special = f"{stem}.{'rootless' if uid > 0 else 'rootful'}{suffix if has_suffix else ''}{DROP_IN_SUFFIX}"
    found = [Path(special, str(uid))] if uid > 0 else []
    return [*found, Path(special), Path(text + DROP_IN_SUFFIX)]


def config_files(config: ConfigFile, *, root: Path | None = None, uid: int | None = None) -> list[Path]:
    """The files to read, in the order to read them (a later one's settings win): the main file, the drop-ins in
    name order, the override. Raises :class:`ConfigFileError` where containers/image stops."""
    paths = search_paths(config, root=root, uid=uid)
    files: list[Path] = []
    for path in paths.main_files:
        if _exists(path, missing_is_error=paths.named_by):
            files.append(path)
            break
    if paths.drop_in_dirs:
        files += drop_in_files(paths.drop_in_dirs, "." + config.extension)
    if paths.override_file is not None:
        _exists(paths.override_file, missing_is_error=config.environment + "_OVERRIDE")
        files.append(paths.override_file)
    return files


def drop_in_files(directories: tuple[Path, ...], suffix: str) -> list[Path]:
    """The ``*suffix`` entries (not directories) of ``directories`` (highest priority first), one per name, in
    name order; a directory that does not exist has none, and a dangling link is no file."""
    chosen: dict[str, Path] = {}
    for directory in reversed(directories):
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.name.endswith(suffix) and not entry.is_dir(follow_symlinks=False):
                        chosen[entry.name] = directory / entry.name
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ConfigFileError(f"{directory}: cannot read the directory: {exc.strerror or exc}") from None
    return [chosen[name] for name in sorted(chosen) if _exists(chosen[name], missing_is_error="")]


def _exists(path: Path, *, missing_is_error: str) -> bool:
    """Whether ``path`` is there to be opened: False when it does not exist, unless ``missing_is_error`` names the
    variable that asked for it; any other failure (a permission, a file where a directory should be) is an
    error, as containers/image's open fails."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if missing_is_error:
            raise ConfigFileError(f"{path}: no such file (named by {missing_is_error})") from None
        return False
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return True
