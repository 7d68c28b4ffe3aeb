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

The configuration arrives as the plain JSON object of ``spec.config.inline.deploymentConfig`` and is decoded
into OLM's Go type first (:func:`decode_deployment_config`), so quantities and unknown fields come out as OLM v1's
do.
"""

from __future__ import annotations

from typing import Any

from common.contract.objects import Obj, copy_json

from .gounstructured import GoTypeError, roundtrip
from .model import ConfigurationError


def decode_deployment_config(config: Any) -> Obj | None:
    """``deploymentConfig`` decoded into OLM's ``SubscriptionConfig`` and encoded back, ``None`` for ``null``.

    A ``nodeSelector`` given as ``{}`` is kept (the Go encoding would drop it, but an empty map still replaces
    the pod's). A value Go refuses (a quantity that does not parse) is OLM v1's configuration error. The input may
    be the raw configuration or what :func:`.config.parse_config` decoded (decoding again changes nothing); only
    ``parse_config`` refuses an integer too large for its Go type, as OLM's ``json.Unmarshal`` does (here it
    narrows as Go's converter would).
    """
    if config is None:
        return None
    try:
        decoded: Obj = roundtrip("olm.SubscriptionConfig", config, "deploymentConfig")
    except GoTypeError as exc:
        # Go's json.Unmarshal names no field for a quantity, only the parse error; other mismatches (which the
        # schema refuses first) say where they are.
        problem = exc.problem if exc.quantity else str(exc)
        raise ConfigurationError(f"invalid deploymentConfig: failed to unmarshal deploymentConfig: {problem}") from None
    if isinstance(config, dict) and config.get("nodeSelector") == {}:
        decoded["nodeSelector"] = {}
    return decoded


def apply_deployment_config(deployment: Obj, config: Obj | None) -> None:
    """Merge the decoded ``config`` into ``deployment`` (in place), OLM v1's ``applyCustomConfigToDeployment``."""
    if config is None:
        return
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
