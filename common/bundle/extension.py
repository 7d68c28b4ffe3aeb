"""An OLM v1 ClusterExtension manifest read as the options of ``cosctl publish --package``.

Why: an admin coming from OLM v1 holds ClusterExtensions (in a GitOps repository, or on the cluster operator-controller
ran on); each says the package, channels, version range, upgrade policy, install namespace, ServiceAccount,
configuration and preflight setting that ``publish --package`` takes as flags. Reading the manifest itself, rather
than having the admin copy each field into a flag, keeps the two from drifting and makes the migration one command
per extension. Fields that have no meaning here are said (``selector``: one catalog is read; ``status``: ignored).

Pure: a parsed document in, an :class:`Extension` or :class:`ExtensionError` (naming the file and the field) out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from common.bundle.registryv1.documents import read_documents
from common.bundle.registryv1.model import BundleInputError

API_VERSION: Final = "olm.operatorframework.io/v1"
KIND: Final = "ClusterExtension"
# A ClusterExtension is small; its inline configuration is bounded by the API server's 1.5 MiB request limit.
MAX_BYTES: Final = 3 * 1024 * 1024
_POLICIES: Final = ("CatalogProvided", "SelfCertified")
_ENFORCEMENTS: Final = ("None", "Strict")


class ExtensionError(BundleInputError):
    """The file is not a ClusterExtension cosctl can act on; ``str()`` names the file and the field."""


@dataclass(frozen=True, slots=True)
class Extension:
    """What a ClusterExtension says, in ``publish --package``'s terms. ``channels``/``version`` are always given
    (empty: any), so that a bound the owner's revision recorded is replaced, as the manifest is the whole truth;
    ``config`` is None without ``spec.config`` (no configuration), ``config_given`` False then."""

    name: str
    namespace: str
    package: str
    channels: tuple[str, ...] = ()
    version: str = ""
    policy: str = "CatalogProvided"
    service_account: str | None = None
    config: dict[str, Any] | None = None
    config_given: bool = False
    crd_upgrade_safety: str | None = None
    progress_deadline_minutes: int | None = None
    warnings: tuple[str, ...] = field(default=())


def load_extension(path: str) -> Extension:
    """The ClusterExtension in the YAML or JSON file ``path`` (one document, or a v1 List of one item, as ``kubectl
    get clusterextension NAME -o yaml`` writes it)."""
    problems: list[str] = []
    if Path(path).is_dir():
        raise ExtensionError(f"{path}: is a directory, not a ClusterExtension manifest")
    if not Path(path).exists():
        raise ExtensionError(f"{path}: no such file or directory")
    documents = read_documents(Path(path), path, problems, max_bytes=MAX_BYTES)
    if problems:
        raise ExtensionError("\n".join(problems))
    values = [value for _, value in documents]
    if len(values) == 1 and isinstance(values[0], dict) and values[0].get("kind") == "List":
        items = values[0].get("items")
        values = items if isinstance(items, list) else []
    if len(values) != 1:
        raise ExtensionError(f"{path}: give one ClusterExtension, found {len(values)} documents")
    return parse_extension(values[0], path)


def parse_extension(obj: Any, where: str) -> Extension:
    """:func:`load_extension` for a document already read; ``where`` names it in messages."""
    def fail(field_path: str, why: str) -> ExtensionError:
        return ExtensionError(f"{where}: {field_path}: {why}")

    if not isinstance(obj, dict):
        raise ExtensionError(f"{where}: not a ClusterExtension (a {type(obj).__name__}, not an object)")
    if obj.get("apiVersion") != API_VERSION or obj.get("kind") != KIND:
        raise ExtensionError(f"{where}: not a ClusterExtension: apiVersion {obj.get('apiVersion')!r}, kind "
                             f"{obj.get('kind')!r} (want {API_VERSION}, {KIND})")
    warnings: list[str] = []
    name = _string(_object(obj, "metadata", fail), "name", "metadata.name", fail, required=True)
    spec = _object(obj, "spec", fail)
    namespace = _string(spec, "namespace", "spec.namespace", fail, required=True)
    source = _object(spec, "source", fail, "spec.source")
    if source.get("sourceType") != "Catalog":
        raise fail("spec.source.sourceType", f"{source.get('sourceType')!r}: only Catalog is defined")
    catalog = _object(source, "catalog", fail, "spec.source.catalog")
    package = _string(catalog, "packageName", "spec.source.catalog.packageName", fail, required=True)
    channels = catalog.get("channels", [])
    if not isinstance(channels, list) or not all(isinstance(c, str) and c for c in channels):
        raise fail("spec.source.catalog.channels", "must be a list of channel names")
    version = _string(catalog, "version", "spec.source.catalog.version", fail)
    policy = catalog.get("upgradeConstraintPolicy", "CatalogProvided")
    if policy not in _POLICIES:
        raise fail("spec.source.catalog.upgradeConstraintPolicy", f"{policy!r}: must be one of {', '.join(_POLICIES)}")
    if catalog.get("selector"):
        warnings.append(f"{where}: spec.source.catalog.selector is not used: the package is resolved from the one "
                        "catalog --catalog names (or the owner's revision records)")
    account = spec.get("serviceAccount")
    service_account = None
    if account is not None:
        if not isinstance(account, dict):
            raise fail("spec.serviceAccount", "must be an object")
        service_account = _string(account, "name", "spec.serviceAccount.name", fail, required=True)
    config, config_given = None, False
    if (given := spec.get("config")) is not None:
        if not isinstance(given, dict) or given.get("configType") != "Inline":
            raise fail("spec.config.configType", "only Inline is defined")
        inline = given.get("inline")
        if not isinstance(inline, dict):
            raise fail("spec.config.inline", "must be an object (the bundle's configuration)")
        config, config_given = inline, True
    enforcement = None
    if spec.get("install") is not None:
        preflight = _object(spec, "install", fail, "spec.install").get("preflight")
        if preflight is not None:
            if not isinstance(preflight, dict):
                raise fail("spec.install.preflight", "must be an object")
            safety = preflight.get("crdUpgradeSafety")
            if safety is not None:
                if not isinstance(safety, dict):
                    raise fail("spec.install.preflight.crdUpgradeSafety", "must be an object")
                enforcement = safety.get("enforcement")
                if enforcement not in _ENFORCEMENTS:
                    raise fail("spec.install.preflight.crdUpgradeSafety.enforcement",
                               f"{enforcement!r}: must be one of {', '.join(_ENFORCEMENTS)}")
    minutes = spec.get("progressDeadlineMinutes")
    if minutes is not None and (not isinstance(minutes, int) or isinstance(minutes, bool)):
        raise fail("spec.progressDeadlineMinutes", "must be an integer")
    return Extension(name, namespace, package, tuple(channels), version, policy, service_account, config,
                     config_given, enforcement, minutes or None, tuple(warnings))


_Fail = Callable[[str, str], ExtensionError]


def _object(parent: dict[str, Any], key: str, fail: _Fail, path: str | None = None) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise fail(path or key, "missing, or not an object")
    return value


def _string(parent: dict[str, Any], key: str, path: str, fail: _Fail, *, required: bool = False) -> str:
    value = parent.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise fail(path, "missing, or not a string" if required else "must be a string")
    return value
