"""``deploymentConfig``: an admin's changes to every install-strategy Deployment, merged as OLM v1 merges them.

This is what OLM v0's Subscription ``spec.config`` did, and OLM v1 keeps OLM v0's merge rules (its
``applyCustomConfigToDeployment``) except for volumes and volume mounts, which it overrides by name instead of
appending. The rules, applied in this order to the Deployment as the generator built it:

- ``env``: per container, a variable with the name of an existing one replaces it in place, others are appended;
- ``envFrom``: per container, appended unless an equal source is already there;
- ``volumes`` (pod) and ``volumeMounts`` (per container): replace the one with the same name, else appended;
- ``tolerations``: appended unless an equal toleration is already there;
- ``resources``: replaces every container's resources, as a whole (``{}`` clears them);
- ``nodeSelector``: replaces the pod's node selector (``{}`` clears it);
- ``affinity``: ``{}`` erases the pod's affinity; otherwise each of ``nodeAffinity``, ``podAffinity``,
  ``podAntiAffinity`` that is given replaces the pod's, or erases it when it is given empty; an affinity left
  with nothing is removed;
- ``annotations``: added to the Deployment's and to the pod template's annotations, never overriding one.

Only ``containers`` are touched, never ``initContainers`` (as OLM). Equality ("equal source", "equal
toleration") is Go's ``reflect.DeepEqual`` on the decoded structs, which is equality of their Go encodings.

The configuration is decoded once, as OLM v1 decodes it: ``json.Unmarshal`` of the JSON object of
``spec.config.inline.deploymentConfig`` into its Go type (:func:`decode_deployment_config`, over
:mod:`.gounmarshal`), after the schema accepted it (:func:`.config.parse_config`). The merge then works on that
typed value (:class:`DeploymentConfig`), so quantities, case-folded keys and unknown fields come out as OLM v1's
do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from common.contract.objects import Obj, copy_json

from .gounmarshal import UnmarshalError, unmarshal_fields
from .model import ConfigurationError

DEPLOYMENT_CONFIG: Final = "deploymentConfig"  # its key in a configuration
DEPLOYMENT_CONFIG_TYPE: Final = "olm.SubscriptionConfig"  # OLM v1's DeploymentConfig is v0's SubscriptionConfig
# The prefix OLM v1's provider puts before a deploymentConfig its GetDeploymentConfig step refuses.
DEPLOYMENT_CONFIG_PREFIX: Final = "invalid deploymentConfig: "


@dataclass(frozen=True, slots=True)
class DeploymentConfig:
    """OLM v1's ``DeploymentConfig`` as ``json.Unmarshal`` left it (:func:`decode_deployment_config`).

    ``fields`` are the fields it set, each as Go prints it: only known fields, under their own names (``Value``
    given for ``value`` is ``value``), quantities canonical (``0.5Gi`` -> ``512Mi``), integers as ``int``,
    ``omitempty`` fields of nested structs left out. A nil field is absent, an empty one kept: the merge tells a
    ``nodeSelector: {}`` (clears the pod's) from none at all (keeps it), as OLM's ``!= nil`` does.
    """

    fields: Obj


def decode_deployment_config(config: Any) -> DeploymentConfig | None:
    """``deploymentConfig`` decoded as OLM v1's ``GetDeploymentConfig`` decodes it (``json.Unmarshal`` into
    ``SubscriptionConfig``); ``None`` for ``null`` (not configured).

    What Go refuses is OLM v1's configuration error, in Go's words (:class:`ConfigurationError`: ``invalid
    deploymentConfig: failed to unmarshal deploymentConfig: ...``): a quantity that does not parse, an integer
    too large for its Go type, a value of the wrong JSON type (which the schema refuses first on the product
    path).
    """
    if config is None:
        return None
    try:
        return DeploymentConfig(unmarshal_fields(DEPLOYMENT_CONFIG_TYPE, config))
    except UnmarshalError as exc:
        raise ConfigurationError(f"{DEPLOYMENT_CONFIG_PREFIX}failed to unmarshal deploymentConfig: {exc}") from None


def apply_deployment_config(deployment: Obj, decoded: DeploymentConfig | None) -> None:
    """Merge the decoded configuration into ``deployment`` (in place), OLM v1's
    ``applyCustomConfigToDeployment``."""
    if decoded is None:
        return
    config = decoded.fields
    pod = deployment["spec"]["template"].setdefault("spec", {})
    containers = pod.get("containers") or []
    _apply_env(containers, config.get("env") or [])
    _apply_env_from(containers, config.get("envFrom") or [])
    if config.get("volumes"):
        pod["volumes"] = _override_by_name(pod.get("volumes") or [], config["volumes"])
    for container in containers:
        if config.get("volumeMounts"):
            container["volumeMounts"] = _override_by_name(container.get("volumeMounts") or [], config["volumeMounts"])
    for toleration in config.get("tolerations") or []:
        existing = pod.setdefault("tolerations", [])
        if toleration not in existing:
            existing.append(copy_json(toleration))
    if "resources" in config:
        for container in containers:
            container["resources"] = copy_json(config["resources"])
    if "nodeSelector" in config:
        if config["nodeSelector"]:
            pod["nodeSelector"] = copy_json(config["nodeSelector"])
        else:
            pod.pop("nodeSelector", None)
    if "affinity" in config:
        _apply_affinity(pod, config["affinity"])
    if config.get("annotations"):
        _add_annotations(deployment.setdefault("metadata", {}), config["annotations"])
        _add_annotations(deployment["spec"]["template"].setdefault("metadata", {}), config["annotations"])


def _apply_env(containers: list[Obj], env: list[Obj]) -> None:
    if not env:
        return
    for container in containers:
        current = container.get("env") or []
        index = {var.get("name", ""): i for i, var in enumerate(current)}  # the last of a duplicated name wins
        for var in env:
            if var.get("name", "") in index:
                current[index[var.get("name", "")]] = copy_json(var)
            else:
                current.append(copy_json(var))
        container["env"] = current


def _apply_env_from(containers: list[Obj], env_from: list[Obj]) -> None:
    if not env_from:
        return
    for container in containers:
        current = container.get("envFrom") or []
        for source in env_from:
            if source not in current:
                current.append(copy_json(source))
        container["envFrom"] = current


def _override_by_name(current: list[Obj], given: list[Obj]) -> list[Obj]:
    """Items of ``given`` replace the item of ``current`` with the same name, or are appended.

    As in OLM, the names are those of ``current`` before the merge: two given items with one new name are both
    appended.
    """
    out = list(current)
    index = {item.get("name", ""): i for i, item in enumerate(current)}
    for item in given:
        if item.get("name", "") in index:
            out[index[item.get("name", "")]] = copy_json(item)
        else:
            out.append(copy_json(item))
    return out


def _node_affinity_empty(affinity: Obj) -> bool:
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    return not (required and required.get("nodeSelectorTerms")) and not affinity.get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    )


def _pod_affinity_empty(affinity: Obj) -> bool:
    return not affinity.get("requiredDuringSchedulingIgnoredDuringExecution") and not affinity.get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    )


_SUB_AFFINITIES = (
    ("nodeAffinity", _node_affinity_empty),
    ("podAffinity", _pod_affinity_empty),
    ("podAntiAffinity", _pod_affinity_empty),
)


def _apply_affinity(pod: Obj, given: Obj) -> None:
    if not any(key in given for key, _ in _SUB_AFFINITIES):
        pod.pop("affinity", None)  # affinity: {} erases the pod's affinity
        return
    affinity = pod.setdefault("affinity", {})
    for key, is_empty in _SUB_AFFINITIES:
        if key not in given:
            continue
        if is_empty(given[key]):
            affinity.pop(key, None)
        else:
            affinity[key] = copy_json(given[key])
    if all(key not in affinity or is_empty(affinity[key]) for key, is_empty in _SUB_AFFINITIES):
        del pod["affinity"]


def _add_annotations(metadata: Obj, annotations: dict[str, str]) -> None:
    current = metadata.get("annotations") or {}
    for key, value in annotations.items():
        current.setdefault(key, value)
    metadata["annotations"] = current
