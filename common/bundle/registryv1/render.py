"""Rendering a registry+v1 bundle into the objects OLM v1 applies, object for object, refusals word for word.

OLM v1's path, and where each step lives here:

0. the bundle decoded into Go's types, once (:func:`.typed.decode`): both steps below read the decoded bundle, as
   OLM v1's provider and renderer both read the one ``RegistryV1`` it loaded;
1. :func:`check_supported`: what OLM v1's manifest provider refuses before rendering (API service definitions,
   webhooks without a certificate provider, no usable install mode);
2. (the configuration is validated against the bundle's schema: :mod:`.config`);
3. :func:`render`: every validator (:mod:`.validators`), the target namespaces checked against the install
   modes, then every generator in OLM v1's order (:mod:`.generators`), which also apply the certificate provider
   (:mod:`.certproviders`) and the ``deploymentConfig`` (:mod:`.deploymentconfig`).

Each install-strategy deployment becomes a Deployment with ``revisionHistoryLimit: 1``, the CSV's annotations
merged under the pod template's own, ``olm.targetNamespaces`` (the watched namespaces joined by commas, ``""``
for all) and ``olm.operatorNamespace`` (the install namespace; operator-controller v1.11.0 and later);
permissions become Roles in each watched namespace, or ClusterRoles (with a rule to read namespaces) when the
operator watches all of them.

The output is OLM v1's, object for object, with these decisions about what Go's serialization adds:

- kept, because they are OLM's output and not what the spec lets us drop: everything the typed round trip does
  to the CSV's deployments and the CRDs (unknown fields dropped, canonical quantities, ``resources: {}``,
  ``strategy: {}``, ``divisor: "0"``; see :mod:`.gounstructured`) and a generated Service's ``status: {loadBalancer:
  {}}``;
- left out, as the spec allows: ``null``-valued keys of typed objects (``creationTimestamp: null``,
  ``selector: null``), a generated Deployment's and cert-manager object's ``status: {}``, a CRD's blank
  status, and ``metadata.namespace`` on the generated webhook configurations (cluster-scoped);
- other manifests are passed through untouched, as OLM does (their own ``creationTimestamp: null`` or
  ``status`` included).

Where OLM's order comes from Go map iteration (several ServiceAccounts, several cert-manager Issuer/Certificate
pairs) it changes from run to run; here it is the CSV's order (see :mod:`.generators`).
"""

from __future__ import annotations

from typing import Final

from common.contract.objects import Obj

from .certproviders import PROVIDERS
from .deploymentconfig import DeploymentConfig
from .generators import RESOURCE_GENERATORS, Options
from .gotext import go_list
from .model import ANNOTATIONS_FILE, PACKAGE_ANNOTATION, RenderError
from .typed import (
    ALL_NAMESPACES,
    MULTI_NAMESPACE,
    OWN_NAMESPACE,
    SINGLE_NAMESPACE,
    TypedBundle,
)
from .validators import validate

NO_PROVIDER: Final = "none"

UNSUPPORTED_API_SERVICES: Final = "unsupported bundle: apiServiceDefintions are not supported"  # sic, OLM v1's
UNSUPPORTED_WEBHOOKS: Final = "unsupported bundle: webhookDefinitions are not supported"
UNSUPPORTED_INSTALL_MODES: Final = (
    "unsupported bundle: bundle must support at least one of [AllNamespaces SingleNamespace OwnNamespace] install modes"
)


def _provider(cert_provider: str | None) -> str | None:
    if cert_provider is None or cert_provider == NO_PROVIDER:
        return None
    if cert_provider not in PROVIDERS:
        raise ValueError(f"unknown certificate provider {cert_provider!r}; one of none, {', '.join(PROVIDERS)}")
    return cert_provider


def check_supported(typed: TypedBundle, cert_provider: str | None) -> None:
    """Refuse, with OLM v1's message, a bundle OLM v1's manifest provider does not render.

    In OLM v1 webhook support is on exactly when a certificate provider is configured, so without one a bundle
    with webhook definitions gets the plain "not supported" message. ``cert_provider`` is ``None``/``"none"``,
    ``"cert-manager"`` or ``"openshift-serviceca"``.
    """
    if typed.owned_apiservices > 0:
        raise RenderError(UNSUPPORTED_API_SERVICES)
    if typed.webhooks and _provider(cert_provider) is None:
        raise RenderError(UNSUPPORTED_WEBHOOKS, [
            f"the bundle defines {len(typed.webhooks)} webhook(s), whose serving certificates come from a provider "
            "the cluster runs: give --cert-provider cert-manager or openshift-serviceca"])
    if not typed.supported_install_modes() & {ALL_NAMESPACES, SINGLE_NAMESPACE, OWN_NAMESPACE}:
        raise RenderError(UNSUPPORTED_INSTALL_MODES)


def default_target_namespaces(bundle: TypedBundle) -> list[str]:
    """What OLM v1 watches when the configuration names no namespace: all (``[""]``) if the bundle supports
    AllNamespaces, otherwise nothing, which the target namespace check then refuses."""
    return [""] if ALL_NAMESPACES in bundle.supported_install_modes() else []


def target_namespaces_error(bundle: TypedBundle, install_namespace: str, targets: list[str]) -> str | None:
    """OLM v1's check of the target namespaces against the supported install modes; the problem, or ``None``."""
    modes = bundle.supported_install_modes()
    unique = set(targets)
    modes_text = go_list(sorted(modes))
    if not unique:
        if MULTI_NAMESPACE in modes:
            return "at least one target namespace must be specified"
        return "exactly one target namespace must be specified"
    if unique == {""}:
        if ALL_NAMESPACES in modes:
            return None
        return f"supported install modes {modes_text} do not support targeting all namespaces"
    if len(unique) == 1:
        if targets[0] == install_namespace:
            if OWN_NAMESPACE not in modes:
                return f"supported install modes {modes_text} do not support targeting own namespace"
            return None
        if SINGLE_NAMESPACE in modes:
            return None
    else:
        if OWN_NAMESPACE not in modes and install_namespace in unique:
            return f"supported install modes {modes_text} do not support targeting own namespace"
        if MULTI_NAMESPACE in modes and "" not in unique:
            return None
    return f"supported install modes {modes_text} do not support target namespaces {go_list(targets)}"


def render(
    typed: TypedBundle,
    install_namespace: str,
    *,
    watch_namespace: str | None = None,
    deployment_config: DeploymentConfig | None = None,
    cert_provider: str | None = None,
) -> list[Obj]:
    """The objects OLM v1 renders for the decoded bundle ``typed`` installed in ``install_namespace``, in its
    generator order.

    ``watch_namespace`` is the configuration's ``watchNamespace`` (``None``: OLM's default, all namespaces when
    the bundle supports it); ``deployment_config`` the configuration's ``deploymentConfig`` as
    :func:`.config.parse_config` decoded it (OLM v1 decodes it once, before rendering, and merges the typed
    value). Raises :class:`RenderError` with OLM v1's message when a validator or the target namespaces refuse
    the bundle. ``typed`` is not changed: the objects are new.

    Webhooks without a provider render (without certificates), as OLM v1's renderer does; refusing them is
    :func:`check_supported`'s.
    """
    provider = _provider(cert_provider)
    errors = validate(typed)
    if errors:
        hints = [f"the bundle's {ANNOTATIONS_FILE} names no package ({PACKAGE_ANNOTATION})"
                 for e in errors if e == "package name is empty"]
        raise RenderError("\n".join(errors), hints)
    targets = [watch_namespace] if watch_namespace is not None else default_target_namespaces(typed)
    problem = target_namespaces_error(typed, install_namespace, targets)
    if problem is not None:
        raise RenderError(f"invalid option(s): invalid target namespaces {go_list(targets)}: {problem}")
    opts = Options(
        install_namespace=install_namespace,
        target_namespaces=targets,
        cert_provider=provider,
        deployment_config=deployment_config,
    )
    return [obj for generate in RESOURCE_GENERATORS for obj in generate(typed, opts)]
