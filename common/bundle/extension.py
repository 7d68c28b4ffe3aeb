"""An OLM v1 ClusterExtension manifest read as the options of ``cosctl publish --package``.

Why: an admin coming from OLM v1 holds ClusterExtensions (in a GitOps repository, or on the cluster operator-controller
ran on); each says the package, channels, version range, upgrade policy, install namespace, ServiceAccount (up
to OLM v1 v1.10; optional and ignored since v1.11.0), configuration and preflight setting that ``publish
--package`` takes as flags. Reading the manifest itself, rather than having the admin copy each field into a flag,
keeps the two from drifting and makes the migration one command per extension. ``spec.source.catalog.selector``
picks the cluster's ClusterCatalogs to resolve from, as it does for OLM v1, unless ``--catalog`` names a catalog.
``status`` is ignored.

Pure: a parsed document in, an :class:`Extension` or :class:`ExtensionError` (naming the file and the field) out.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Final

from common.bundle import clustercatalogs
from common.bundle.registryv1.documents import read_file_documents
from common.bundle.registryv1.model import BundleInputError
from common.bundle.registryv1.resolve import (
    POLICY_CATALOG_PROVIDED,
    UPGRADE_CONSTRAINT_POLICIES,
    ResolutionError,
    make_query,
)

API_VERSION: Final = "olm.operatorframework.io/v1"
KIND: Final = "ClusterExtension"
# A ClusterExtension is small; its inline configuration is bounded by the API server's 1.5 MiB request limit.
MAX_BYTES: Final = 3 * 1024 * 1024
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
    policy: str = POLICY_CATALOG_PROVIDED
    service_account: str | None = None
    config: dict[str, Any] | None = None
    config_given: bool = False
    crd_upgrade_safety: str | None = None
    progress_deadline_minutes: int | None = None
    warnings: tuple[str, ...] = field(default=())
    selector: str = ""   # spec.source.catalog.selector in the API server's string form ("": every ClusterCatalog)


def load_extension(path: str) -> Extension:
    """The ClusterExtension in the YAML or JSON file ``path``: one document (``kubectl get clusterextension NAME -o
    yaml``), or a List of one (``kubectl get clusterextensions -o yaml`` on a cluster with one)."""
    warnings: list[str] = []
    documents = read_file_documents(path, "ClusterExtension manifest", max_bytes=MAX_BYTES, warnings=warnings,
                                    error=ExtensionError)
    values = [value for _, value in documents]
    if len(values) == 1 and isinstance(values[0], dict) and values[0].get("kind") in ("List", f"{KIND}List"):
        items = values[0].get("items")
        values = items if isinstance(items, list) else []
        if len(values) != 1:
            raise ExtensionError(f"{path}: a List of {len(values)} items: give one ClusterExtension")
    if len(values) != 1:
        raise ExtensionError(f"{path}: give one ClusterExtension, found {len(values)} documents")
    extension = parse_extension(values[0], path)
    return replace(extension, warnings=(*warnings, *extension.warnings))


# OLM v1's CRD rules (helm/olmv1/base/operator-controller/crd/experimental), with its messages.
_DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SUBDOMAIN_RULE: Final = ("must be a valid DNS1123 subdomain. It must contain only lowercase alphanumeric characters, "
                          "hyphens (-) or periods (.), start and end with an alphanumeric character, and be no "
                          "longer than 253 characters")
# The fields of each object the manifest's spec holds: anything else is a typo kubectl apply would refuse too
# (strict field validation), and here it would widen the install (a misspelt version range is no range).
_FIELDS: Final = {
    "spec": ("namespace", "serviceAccount", "source", "install", "config", "progressDeadlineMinutes"),
    "spec.serviceAccount": ("name",),
    "spec.source": ("sourceType", "catalog"),
    "spec.source.catalog": ("packageName", "channels", "version", "selector", "upgradeConstraintPolicy"),
    "spec.source.catalog.selector": ("matchLabels", "matchExpressions"),
    "spec.config": ("configType", "inline"),
    "spec.install": ("preflight",),
    "spec.install.preflight": ("crdUpgradeSafety",),
    "spec.install.preflight.crdUpgradeSafety": ("enforcement",),
}
_DEADLINE: Final = (10, 720)
# The ServiceAccount name that, with OLM v1's SyntheticPermissions gate, means a synthetic user instead.
SYNTHETIC_USER: Final = "olm.synthetic-user"


def parse_extension(obj: Any, where: str) -> Extension:
    """:func:`load_extension` for a document already read; ``where`` names it in messages. Refused as the API server
    refuses it under OLM v1's CRD (a required field missing, a value its rules reject, a field it does not have),
    in the CRD's words, so that cosctl never acts on a manifest OLM v1 would not have taken."""
    def fail(field_path: str, why: str) -> ExtensionError:
        return ExtensionError(f"{where}: {field_path}: {why}")

    def section(parent: dict[str, Any], key: str, path: str, *, required: bool = True) -> dict[str, Any] | None:
        value = parent.get(key)
        if value is None:
            if required:
                raise fail(path, "Required value")
            return None
        if not isinstance(value, dict):
            raise fail(path, f"must be an object, not {_type(value)}")
        if path in _FIELDS:
            for unknown in sorted(set(value) - set(_FIELDS[path])):
                close = difflib.get_close_matches(str(unknown), _FIELDS[path], n=1)
                raise fail(f"{path}.{unknown}", "unknown field (OLM v1's ClusterExtension has none such; kubectl "
                                                "apply refuses it too)" + (f": did you mean {close[0]}?" if close
                                                                            else ""))
        return value

    def string(parent: dict[str, Any], key: str, path: str, *, required: bool = False, max_length: int = 253,
               pattern: re.Pattern[str] | None = None, rule: str = "") -> str:
        value = parent.get(key)
        if value is None:
            if required:
                raise fail(path, "Required value")
            return ""
        if not isinstance(value, str):
            raise fail(path, f"must be a string, not {_type(value)}")
        if len(value) > max_length:
            raise fail(path, f"may not be longer than {max_length} characters")
        if pattern is not None and not pattern.fullmatch(value):
            raise fail(path, rule)
        return value

    if not isinstance(obj, dict):
        raise ExtensionError(f"{where}: not a ClusterExtension (a {_type(obj)}, not an object)")
    if obj.get("apiVersion") != API_VERSION or obj.get("kind") != KIND:
        raise ExtensionError(f"{where}: not a ClusterExtension: apiVersion {obj.get('apiVersion')!r}, kind "
                             f"{obj.get('kind')!r} (want {API_VERSION}, {KIND})")
    warnings: list[str] = []
    metadata = section(obj, "metadata", "metadata")
    assert metadata is not None
    name = string(metadata, "name", "metadata.name", required=True, pattern=_DNS1123_SUBDOMAIN,
                  rule=f"name {_SUBDOMAIN_RULE}")
    spec = section(obj, "spec", "spec")
    assert spec is not None
    namespace = string(spec, "namespace", "spec.namespace", required=True, max_length=63, pattern=_DNS1123_LABEL,
                       rule="namespace must be a valid DNS1123 label")
    # Optional since OLM v1 v1.11.0, which deprecated it and ignores it (it installs with its own rights, as a
    # revision naming no ServiceAccount is written); where a manifest still names one, its revisions are written
    # with that ServiceAccount's rights, as OLM v1 did up to v1.10.
    account = section(spec, "serviceAccount", "spec.serviceAccount", required=False)
    service_account: str | None = None
    if account is not None and not {k: v for k, v in account.items() if v is not None}:   # a null is pruned first
        raise fail("spec.serviceAccount", "should have at least 1 properties")
    if account and account.get("name") is not None:
        if account["name"] == "":
            raise fail("spec.serviceAccount.name", "should be at least 1 chars long")
        service_account = string(account, "name", "spec.serviceAccount.name", pattern=_DNS1123_SUBDOMAIN,
                                 rule=f"name {_SUBDOMAIN_RULE}")
    if service_account == SYNTHETIC_USER:
        raise fail("spec.serviceAccount.name", f"{SYNTHETIC_USER} (OLM v1's SyntheticPermissions, an alpha feature "
                                               f"that applies as the user olm:clusterextension:{name}) is not "
                                               "supported: name a ServiceAccount of the install namespace")
    source = section(spec, "source", "spec.source")
    assert source is not None
    kind = string(source, "sourceType", "spec.source.sourceType", required=True)
    if kind != "Catalog":
        raise fail("spec.source.sourceType", f"Unsupported value: {kind!r}: supported values: \"Catalog\"")
    catalog = section(source, "catalog", "spec.source.catalog")
    assert catalog is not None
    package = string(catalog, "packageName", "spec.source.catalog.packageName", required=True,
                     pattern=_DNS1123_SUBDOMAIN, rule=f"packageName {_SUBDOMAIN_RULE}")
    channels = catalog.get("channels") or []
    if not isinstance(channels, list):
        raise fail("spec.source.catalog.channels", f"must be a list, not {_type(channels)}")
    if len(channels) > 256:
        raise fail("spec.source.catalog.channels", "must have at most 256 items")
    for i in range(len(channels)):
        string({"c": channels[i]}, "c", f"spec.source.catalog.channels[{i}]", required=True,
               pattern=_DNS1123_SUBDOMAIN, rule="channels entries must be valid DNS1123 subdomains")
    version = string(catalog, "version", "spec.source.catalog.version", max_length=64)
    if version:
        try:
            make_query(package, version=version)
        except ResolutionError as exc:   # OLM v1's own words, as its resolver says them
            raise fail("spec.source.catalog.version", str(exc)) from None
    policy = catalog.get("upgradeConstraintPolicy", POLICY_CATALOG_PROVIDED)
    if policy not in UPGRADE_CONSTRAINT_POLICIES:
        raise fail("spec.source.catalog.upgradeConstraintPolicy",
                   f"Unsupported value: {policy!r}: supported values: " + ", ".join(
                       f'"{p}"' for p in UPGRADE_CONSTRAINT_POLICIES))
    selector = ""
    if (given_selector := section(catalog, "selector", "spec.source.catalog.selector", required=False)) is not None:
        path = "spec.source.catalog.selector"
        match_labels = section(given_selector, "matchLabels", f"{path}.matchLabels", required=False) or {}
        for key, value in match_labels.items():   # the CRD's types first, as the API server checks them
            if not isinstance(value, str):
                raise fail(f"{path}.matchLabels.{key}", f"must be a string, not {_type(value)}")
        expressions = given_selector.get("matchExpressions") or []
        if not isinstance(expressions, list):
            raise fail(f"{path}.matchExpressions", f"must be a list, not {_type(expressions)}")
        for i, expression in enumerate(expressions):
            where_ = f"{path}.matchExpressions[{i}]"
            if not isinstance(expression, dict):
                raise fail(where_, f"must be an object, not {_type(expression)}")
            if unknown := sorted(set(expression) - {"key", "operator", "values"}):
                raise fail(f"{where_}.{unknown[0]}", "unknown field (a LabelSelectorRequirement has key, operator "
                                                     "and values)")
            # no length bound of the CRD's: a key too long is operator-controller's to refuse, below
            string(expression, "key", f"{where_}.key", required=True, max_length=1 << 20)
            string(expression, "operator", f"{where_}.operator", required=True)
            values = expression.get("values") or []
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise fail(f"{where_}.values", "must be a list of strings")
        # then as operator-controller reads it (an empty selector selects every ClusterCatalog)
        if (invalid := clustercatalogs.selector_object_error(given_selector)) is not None:
            raise fail(path, f"desired catalog selector is invalid: {invalid}")
        selector = clustercatalogs.selector_text(given_selector)
    config, config_given = None, False
    if (given := section(spec, "config", "spec.config", required=False)) is not None:
        if string(given, "configType", "spec.config.configType", required=True) != "Inline":
            raise fail("spec.config.configType", f"Unsupported value: {given['configType']!r}: supported values: "
                                                 '"Inline"')
        inline = section(given, "inline", "spec.config.inline", required=False)
        if inline is None:
            raise fail("spec.config", "inline is required when configType is Inline, and forbidden otherwise")
        if not inline:
            raise fail("spec.config.inline", "should have at least 1 properties")
        config, config_given = inline, True
    enforcement = None
    if (install := section(spec, "install", "spec.install", required=False)) is not None:
        preflight = section(install, "preflight", "spec.install.preflight", required=False)
        if preflight is None:
            raise fail("spec.install", "at least one of [preflight] are required when install is specified")
        safety = section(preflight, "crdUpgradeSafety", "spec.install.preflight.crdUpgradeSafety", required=False)
        if safety is None:
            raise fail("spec.install.preflight", "at least one of [crdUpgradeSafety] are required when preflight "
                                                 "is specified")
        enforcement = string(safety, "enforcement", "spec.install.preflight.crdUpgradeSafety.enforcement",
                             required=True)
        if enforcement not in _ENFORCEMENTS:
            raise fail("spec.install.preflight.crdUpgradeSafety.enforcement",
                       f"Unsupported value: {enforcement!r}: supported values: "
                       + ", ".join(f'"{e}"' for e in _ENFORCEMENTS))
    minutes = spec.get("progressDeadlineMinutes")
    if minutes is not None:
        if not isinstance(minutes, int) or isinstance(minutes, bool):
            raise fail("spec.progressDeadlineMinutes", f"must be an integer, not {_type(minutes)}")
        if not _DEADLINE[0] <= minutes <= _DEADLINE[1]:
            raise fail("spec.progressDeadlineMinutes", f"should be between {_DEADLINE[0]} and {_DEADLINE[1]}, "
                                                       f"not {minutes}")
    return Extension(name, namespace, package, tuple(channels), version, policy, service_account, config,
                     config_given, enforcement, minutes, tuple(warnings), selector)


def _type(value: Any) -> str:
    """A value's type as the API server names it."""
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string", int: "integer", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)
