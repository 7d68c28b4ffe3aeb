"""A bundle's configuration: the schema OLM v1 derives from the CSV's install modes, and the steps that take a
configuration from a file to what the renderer uses (spec §2).

The steps, each as OLM v1 takes them (``internal/operator-controller/applier/provider.go``):

1. :func:`config_schema`: the base schema (``registryv1bundleconfig.json``, shipped next to this module and
   generated from Kubernetes' OpenAPI document by ``tools/gen_registryv1_schema.py``; see its docstring to
   regenerate) with ``watchNamespace`` replaced, made required, or removed according to the install modes.
2. :func:`validation_messages`: the configuration checked against that schema, with OLM v1's messages
   (:mod:`.configerrors` owns the checking and the wording).
3. :func:`parse_config`: both, then ``deploymentConfig`` decoded, once, with Go's ``json.Unmarshal`` into
   OLM's ``SubscriptionConfig`` (:func:`.deploymentconfig.decode_deployment_config`), as OLM's
   ``GetDeploymentConfig`` does; the renderer merges that typed value, it does not decode again.

:func:`load_config_file` reads a configuration file as Kubernetes reads YAML (:mod:`.documents`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from common.contract.objects import Obj

from .configerrors import FORMAT_OWN_NAMESPACE, FORMAT_SINGLE_NAMESPACE, config_refusal
from .confighints import dropped_keys, quantity_hints
from .deploymentconfig import (
    DEPLOYMENT_CONFIG,
    DEPLOYMENT_CONFIG_PREFIX,
    DeploymentConfig,
    decode_deployment_config,
)
from .documents import read_file_documents
from .gotext import json_type_name
from .model import BundleInputError, ConfigurationError, RegistryV1

SCHEMA_RESOURCE: Final = "registryv1bundleconfig.json"
WATCH_NAMESPACE: Final = "watchNamespace"
NAMESPACE_PATTERN: Final = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
NAMESPACE_MAX_LENGTH: Final = 63
WATCH_NAMESPACE_DESCRIPTION: Final = "The namespace that the operator should watch for custom resources"

# The prefix OLM v1's provider puts before a refused configuration (a refused deploymentConfig has
# DEPLOYMENT_CONFIG_PREFIX).
CONFIG_PREFIX: Final = "invalid ClusterExtension configuration: "

ALL_NAMESPACES, OWN_NAMESPACE, SINGLE_NAMESPACE = "AllNamespaces", "OwnNamespace", "SingleNamespace"


@dataclass(frozen=True, slots=True)
class BundleConfig:
    """A validated configuration: the namespace to watch (``None``: all namespaces) and the decoded
    ``deploymentConfig`` (``None`` when not given), which the renderer merges as it is."""

    watch_namespace: str | None
    deployment_config: DeploymentConfig | None


# --- the schema --------------------------------------------------------------------------------------------


@functools.cache
def _base_schema_text() -> str:
    return resources.files(__package__).joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")


def base_schema() -> dict[str, Any]:
    """A fresh copy of the base schema (callers may change it)."""
    schema: dict[str, Any] = json.loads(_base_schema_text())
    return schema


def supported_install_modes(csv: Obj) -> frozenset[str]:
    """The install mode types the CSV marks ``supported: true`` (OLM's set of ``{type, supported}`` pairs,
    asked for ``supported: true``)."""
    modes = ((csv.get("spec") or {}).get("installModes") or []) if isinstance(csv.get("spec"), dict) else []
    if not isinstance(modes, list):
        return frozenset()
    return frozenset(m["type"] for m in modes
                     if isinstance(m, dict) and isinstance(m.get("type"), str) and m.get("supported") is True)


def config_schema(bundle: RegistryV1) -> dict[str, Any]:
    """The JSON Schema (draft-07) a configuration of ``bundle`` must satisfy (spec §2's table).

    OLM v1's ``buildBundleConfigSchema``: AllNamespaces only (or none of Own/Single) removes ``watchNamespace``;
    otherwise it is a DNS-1123 label (1-63 characters), required unless AllNamespaces is supported (then
    ``null`` is allowed too), with format ``ownNamespaceInstallMode`` when OwnNamespace is supported without
    SingleNamespace and ``singleNamespaceInstallMode`` for the reverse.
    """
    modes = supported_install_modes(bundle.csv)
    schema = base_schema()
    properties: dict[str, Any] = schema["properties"]
    own, single = OWN_NAMESPACE in modes, SINGLE_NAMESPACE in modes
    if not (own or single):
        properties.pop(WATCH_NAMESPACE, None)
        _set_required(schema, required=False)
        return schema
    value: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": NAMESPACE_MAX_LENGTH,
                             "pattern": NAMESPACE_PATTERN}
    if own != single:
        value["format"] = FORMAT_OWN_NAMESPACE if own else FORMAT_SINGLE_NAMESPACE
    required = ALL_NAMESPACES not in modes
    if required:
        properties[WATCH_NAMESPACE] = {"description": WATCH_NAMESPACE_DESCRIPTION, **value}
    else:
        properties[WATCH_NAMESPACE] = {"description": WATCH_NAMESPACE_DESCRIPTION,
                                       "anyOf": [{"type": "null"}, value]}
    _set_required(schema, required=required)
    return schema


def watch_namespace_choices(bundle: RegistryV1, install_namespace: str) -> str:
    """What ``watchNamespace`` may be for ``bundle`` installed in ``install_namespace``, in words: spec §2's table
    for the one who got it wrong. (OLM's messages say it in parts, and one says "only supports OwnNamespace" of a
    bundle that supports AllNamespaces too.)"""
    modes = supported_install_modes(bundle.csv)
    own, single = OWN_NAMESPACE in modes, SINGLE_NAMESPACE in modes
    named = [mode for mode in (ALL_NAMESPACES, OWN_NAMESPACE, SINGLE_NAMESPACE) if mode in modes]
    choices = []
    if ALL_NAMESPACES in modes or not (own or single):
        choices.append(f"leave {WATCH_NAMESPACE} out{' (or null)' if own or single else ''} to watch all namespaces")
    if own and single:
        choices.append(f'give the namespace to watch: "{install_namespace}" (the install namespace) or another '
                       "existing one")
    elif own:
        choices.append(f'give "{install_namespace}" (the install namespace)')
    elif single:
        choices.append(f'give an existing namespace other than "{install_namespace}" (the install namespace)')
    supports = " and ".join(named) if named else "none of AllNamespaces, OwnNamespace and SingleNamespace"
    return f"this bundle supports {supports}: " + ", or ".join(choices)


def _set_required(schema: dict[str, Any], *, required: bool) -> None:
    """Add ``watchNamespace`` to, or remove it from, the top-level ``required`` list, keeping the others."""
    current = [name for name in schema.get("required", []) if name != WATCH_NAMESPACE]
    if required:
        current.append(WATCH_NAMESPACE)
    if current:
        schema["required"] = current
    else:
        schema.pop("required", None)



# --- the public steps --------------------------------------------------------------------------------------


def validation_messages(bundle: RegistryV1, config: Any, install_namespace: str) -> list[str]:
    """The schema's complaints about ``config`` in OLM's words (without prefixes), in order; empty when valid.
    ``None`` is an empty configuration, as OLM reads an absent one."""
    return _refusal(bundle, config, install_namespace)[0]


def _refusal(bundle: RegistryV1, config: Any, install_namespace: str) -> tuple[list[str], list[str]]:
    """:func:`validation_messages`, and the failed checks they leave unnamed (for ``cause:`` lines), from one
    validation."""
    instance = {} if config is None else config
    try:
        return config_refusal(config_schema(bundle), instance, install_namespace)
    except RecursionError:
        return ["nested too deeply"], []


def parse_config(bundle: RegistryV1, config: dict[str, Any] | None, install_namespace: str) -> BundleConfig:
    """Validate ``config`` for ``bundle`` installed in ``install_namespace`` and decode it, as OLM v1 does.

    ``None`` and ``{}`` are the same (no configuration). Raises :class:`ConfigurationError` with OLM's whole
    message: ``invalid ClusterExtension configuration: invalid configuration: ...`` for what the schema refuses
    (one error, or ``multiple errors found:`` and one ``\\n  - `` line each), ``invalid deploymentConfig:
    failed to unmarshal deploymentConfig: ...`` for what decoding refuses (a quantity, an integer too large for
    its Go type).
    """
    problems, hints = _refusal(bundle, config, install_namespace)
    if problems:
        detail = problems[0] if len(problems) == 1 else "multiple errors found:\n  - " + "\n  - ".join(problems)
        if install_namespace and any(f'"{WATCH_NAMESPACE}"' in problem for problem in problems):
            hints.append(watch_namespace_choices(bundle, install_namespace))
        raise ConfigurationError(f"{CONFIG_PREFIX}invalid configuration: {detail}", hints)
    data: dict[str, Any] = config or {}
    watch = data.get(WATCH_NAMESPACE)
    try:
        deployment_config = decode_deployment_config(data.get(DEPLOYMENT_CONFIG))
    except ConfigurationError as exc:
        raise ConfigurationError(str(exc), quantity_hints(data)) from None
    return BundleConfig(watch_namespace=None if watch is None else str(watch), deployment_config=deployment_config)


CONFIG_FILE_MAX_BYTES = 1 << 20
"""A configuration file longer than this is refused, read no further (``/dev/zero`` never ends). No usable one
comes near it: a revision records its configuration in an annotation, and all of an object's annotations together
may not exceed 256 KiB."""


def load_config_file(path: str | Path, warnings: list[str] | None = None) -> dict[str, Any] | None:
    """The configuration in the YAML or JSON file ``path``, read as Kubernetes reads YAML; ``None`` when the
    file is empty (or holds only ``null``), which is no configuration.

    An unreadable or unparseable file or several documents raise :class:`BundleInputError` naming the file. A
    value that is not an object is refused as OLM's configuration code refuses it (:class:`ConfigurationError`:
    ``invalid ClusterExtension configuration: invalid configuration: invalid type: got array, want object``;
    the API server would refuse such an ``inline`` before OLM saw it). ``warnings``, when given, receives what
    the file says that OLM would take without a word: a key written twice (the last value is used), a key of
    ``deploymentConfig`` that Go's decoder drops (:func:`.confighints.dropped_keys`).
    """
    name = str(path)
    found = read_file_documents(name, "configuration file", max_bytes=CONFIG_FILE_MAX_BYTES, warnings=warnings,
                                error=BundleInputError)
    if len(found) > 1:
        raise BundleInputError(f"{name}: a configuration is one document, found {len(found)}")
    if not found:
        return None
    value = found[0][1]
    if not isinstance(value, dict):
        raise ConfigurationError(
            f"{CONFIG_PREFIX}invalid configuration: invalid type: got {json_type_name(value)}, want object")
    config: dict[str, Any] = value
    if warnings is not None:
        warnings.extend(f"{name}: {note}" for note in dropped_keys(config))
    return config


__all__ = [
    "CONFIG_PREFIX",
    "DEPLOYMENT_CONFIG_PREFIX",
    "BundleConfig",
    "base_schema",
    "config_schema",
    "load_config_file",
    "parse_config",
    "supported_install_modes",
    "validation_messages",
]
