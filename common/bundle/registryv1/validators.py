"""OLM v1's registry+v1 bundle validators, in its order, with its messages byte for byte.

OLM v1 runs every validator of its ``BundleValidator`` list before it renders anything and refuses the bundle
with all their errors joined by newlines (Go's ``errors.Join``). Each validator orders its own errors as OLM v1
does (sorted by name where OLM sorts), so the joined message is deterministic. ``%v`` of a Go slice prints
``[a b]`` (:func:`.gotext.go_list`) and ``%q`` a Go-quoted string (:func:`.gotext.go_quote`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from .gotext import go_list, go_quote
from .typed import ALL_NAMESPACES, CONVERSION_WEBHOOK, TypedBundle

# operator-registry's IsSupported: the kinds a registry+v1 bundle may carry, and whether each is namespaced (as
# operator-registry says: VerticalPodAutoscaler is listed cluster-scoped there, and OLM v1 follows it).
SUPPORTED_KINDS: Final[dict[str, bool]] = {
    "ClusterServiceVersion": True,
    "CustomResourceDefinition": False,
    "ClusterRole": False,
    "ClusterRoleBinding": False,
    "Service": True,
    "ServiceAccount": True,
    "Role": True,
    "RoleBinding": True,
    "PrometheusRule": True,
    "ServiceMonitor": True,
    "Secret": True,
    "ConfigMap": True,
    "PodDisruptionBudget": True,
    "PriorityClass": False,
    "VerticalPodAutoscaler": False,
    "ConsoleYAMLSample": False,
    "ConsoleQuickStart": False,
    "ConsoleCLIDownload": False,
    "ConsoleLink": False,
    "ConsolePlugin": False,
    "NetworkPolicy": True,
    "PodMonitor": True,
}

_DNS1123_LABEL: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN: Final = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN)
_DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    f"start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_DNS1123_SUBDOMAIN}')"
)

_FORBIDDEN_API_GROUPS: Final = frozenset({"olm.operatorframework.io", "*"})
_FORBIDDEN_ADMISSION_RESOURCES: Final = frozenset({
    "*",
    "mutatingwebhookconfiguration",
    "mutatingwebhookconfigurations",
    "validatingwebhookconfiguration",
    "validatingwebhookconfigurations",
})


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Kubernetes' ``validation.IsDNS1123Subdomain``: its messages, sorted as OLM v1 sorts them."""
    errs = []
    if len(value.encode()) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_DNS1123_SUBDOMAIN_MSG)
    return sorted(errs)


def _duplicates(names: list[str]) -> list[str]:
    seen: set[str] = set()
    dups: set[str] = set()
    for name in names:
        if name in seen:
            dups.add(name)
        seen.add(name)
    return sorted(dups)


def check_deployment_spec_uniqueness(b: TypedBundle) -> list[str]:
    return [
        f"cluster service version contains duplicate strategy deployment spec '{name}'"
        for name in _duplicates([d.name for d in b.deployments])
    ]


def check_deployment_name_is_dns1123_subdomain(b: TypedBundle) -> list[str]:
    errs = {d.name: dns1123_subdomain_errors(d.name) for d in b.deployments}
    return [
        f"invalid cluster service version strategy deployment name '{name}': {', '.join(errs[name])}"
        for name in sorted(errs)
        if errs[name]
    ]


def check_crd_resource_uniqueness(b: TypedBundle) -> list[str]:
    names = [str(crd.get("metadata", {}).get("name", "")) for crd in b.crds]
    return [f"bundle contains duplicate custom resource definition '{name}'" for name in _duplicates(names)]


def check_owned_crd_existence(b: TypedBundle) -> list[str]:
    present = {str(crd.get("metadata", {}).get("name", "")) for crd in b.crds}
    missing = {name for name in b.owned_crd_names if name not in present}
    return [
        f"cluster service definition references owned custom resource definition '{name}' not found in bundle"
        for name in sorted(missing)
    ]


def check_package_name_not_empty(b: TypedBundle) -> list[str]:
    return ["package name is empty"] if b.package_name == "" else []


def check_conversion_webhook_support(b: TypedBundle) -> list[str]:
    names = [wh["generateName"] for wh in b.webhooks if wh["type"] == CONVERSION_WEBHOOK]
    modes = b.supported_install_modes()
    if not names or modes == {ALL_NAMESPACES}:
        return []
    return [
        f"bundle contains conversion webhook {go_quote(name)} and supports install modes {go_list(sorted(modes))}"
        " - conversion webhooks are only supported for bundles that only support AllNamespaces install mode"
        for name in names
    ]


def check_webhook_deployment_referential_integrity(b: TypedBundle) -> list[str]:
    deployments = {d.name for d in b.deployments}
    dangling = [wh for wh in b.webhooks if wh.get("deploymentName", "") not in deployments]
    dangling.sort(key=lambda wh: (wh.get("deploymentName", ""), wh["type"], wh["generateName"]))
    return [
        f"webhook of type '{wh['type']}' with name '{wh['generateName']}' references non-existent deployment "
        f"'{wh.get('deploymentName', '')}'"
        for wh in dangling
    ]


def check_webhook_name_uniqueness(b: TypedBundle) -> list[str]:
    by_type: dict[str, list[str]] = {}
    for wh in b.webhooks:
        by_type.setdefault(wh["type"], []).append(wh["generateName"])
    return [
        f"duplicate webhook '{name}' of type '{wh_type}'"
        for wh_type in sorted(by_type)
        for name in _duplicates(by_type[wh_type])
    ]


def check_webhook_name_is_dns1123_subdomain(b: TypedBundle) -> list[str]:
    invalid: dict[str, dict[str, list[str]]] = {}
    for wh in b.webhooks:
        errs = dns1123_subdomain_errors(wh["generateName"])
        if errs:
            invalid.setdefault(wh["type"], {})[wh["generateName"]] = errs
    return [
        f"webhook of type '{wh_type}' has invalid name '{name}': {','.join(invalid[wh_type][name])}"
        for wh_type in sorted(invalid)
        for name in sorted(invalid[wh_type])
    ]


def check_conversion_webhook_crd_reference_uniqueness(b: TypedBundle) -> list[str]:
    by_crd: dict[str, list[str]] = {}
    for wh in b.webhooks:
        if wh["type"] == CONVERSION_WEBHOOK:
            for crd in wh.get("conversionCRDs", []):
                by_crd.setdefault(crd, []).append(wh["generateName"])
    return [
        f"conversion webhooks [{','.join(sorted(by_crd[crd]))}] reference same custom resource definition '{crd}'"
        for crd in sorted(by_crd)
        if len(by_crd[crd]) > 1
    ]


def check_conversion_webhooks_reference_owned_crds(b: TypedBundle) -> list[str]:
    owned = set(b.owned_crd_names)
    conversion = sorted(
        (wh for wh in b.webhooks if wh["type"] == CONVERSION_WEBHOOK), key=lambda wh: wh["generateName"]
    )
    return [
        f"conversion webhook '{wh['generateName']}' references custom resource definition '{crd}' not owned bundle"
        for wh in conversion
        for crd in sorted(wh.get("conversionCRDs", []))
        if crd not in owned
    ]


def check_webhook_rules(b: TypedBundle) -> list[str]:
    errs = []
    for wh in b.webhooks:
        if wh["type"] == CONVERSION_WEBHOOK:
            continue  # rules do not apply to conversion webhooks
        name = go_quote(wh["generateName"])
        for rule in wh.get("rules", []):
            for group in rule.get("apiGroups", []):
                if group in _FORBIDDEN_API_GROUPS:
                    errs.append(
                        f"webhook {name} contains forbidden rule: admission webhook rules cannot reference API group "
                        f"{go_quote(group)}"
                    )
                if group == "admissionregistration.k8s.io":
                    errs.extend(
                        f"webhook {name} contains forbidden rule: admission webhook rules cannot reference resource "
                        f"{go_quote(resource)} for API group {go_quote(group)}"
                        for resource in rule.get("resources", [])
                        if resource.lower() in _FORBIDDEN_ADMISSION_RESOURCES
                    )
    return errs


def check_object_support(b: TypedBundle) -> list[str]:
    errs = []
    for obj in b.others:
        kind = obj.get("kind")
        kind = kind if isinstance(kind, str) else ""
        if kind not in SUPPORTED_KINDS:
            name = (obj.get("metadata") or {}).get("name")
            errs.append(f"unsupported resource {go_quote(name if isinstance(name, str) else '')} with kind "
                        f"{go_quote(kind)}")
    return errs


# OLM v1's BundleValidator, in its order.
BUNDLE_VALIDATORS: Final[tuple[Callable[[TypedBundle], list[str]], ...]] = (
    check_deployment_spec_uniqueness,
    check_deployment_name_is_dns1123_subdomain,
    check_crd_resource_uniqueness,
    check_owned_crd_existence,
    check_package_name_not_empty,
    check_conversion_webhook_support,
    check_webhook_deployment_referential_integrity,
    check_webhook_name_uniqueness,
    check_webhook_name_is_dns1123_subdomain,
    check_conversion_webhook_crd_reference_uniqueness,
    check_conversion_webhooks_reference_owned_crds,
    check_webhook_rules,
    check_object_support,
)


def validate(b: TypedBundle) -> list[str]:
    """Every validator's errors, in OLM v1's order; OLM v1 joins them with newlines into one error."""
    return [err for validator in BUNDLE_VALIDATORS for err in validator(b)]
