"""A registry+v1 bundle as a revision: OLM v1's whole path from bundle to objects, and what the COS records.

:func:`render_bundle` is what a ClusterExtension does with a bundle (spec §3, §4): OLM v1's pre-render refusals
(:func:`.render.check_supported`), the configuration validated against the bundle's schema
(:func:`.config.parse_config`), then the renderer (:func:`.render.render`), each step with OLM v1's message.

:class:`InstallOptions` is everything besides the bundle that decides the objects (the install namespace, the
configuration, the certificate provider) plus ``--create-namespace``. The producer records it on the revision
(:data:`~common.contract.api.ANNOTATION_BUNDLE_OPTIONS`, one JSON value), so that publishing the next bundle
version of an owner can render it with the same options without the admin repeating them: the revision is the
one place that says how it was made. The configuration is kept there in clear, as OLM v1 keeps it in a
ClusterExtension's ``spec.config``: values that must stay secret belong in Secrets the Deployment references.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from common.bundle.phasing import clean
from common.contract import api, names
from common.contract.objects import Obj, ObjectRef

from .config import parse_config
from .model import BundleInputError, RegistryV1, RenderError
from .render import NO_PROVIDER, check_supported, render
from .typed import decode

# Spellings `--cert-provider` accepts; "none" means no provider (OLM v1 then refuses bundles with webhooks).
CERT_PROVIDERS = (NO_PROVIDER, "cert-manager", "openshift-serviceca")


@dataclass(frozen=True, slots=True)
class InstallOptions:
    """How a bundle is installed: what OLM v1's ClusterExtension says besides the bundle, plus ours."""

    namespace: str
    config: Obj | None = None
    cert_provider: str = NO_PROVIDER
    create_namespace: bool = False

    def to_annotation(self) -> str:
        """Compact JSON with sorted keys: the same options always give the same bytes (publish compares)."""
        value: dict[str, Any] = {"namespace": self.namespace}
        if self.config:
            value["config"] = self.config
        if self.cert_provider != NO_PROVIDER:
            value["certProvider"] = self.cert_provider
        if self.create_namespace:
            value["createNamespace"] = True
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_annotation(cls, text: str, *, where: str) -> InstallOptions:
        """The options recorded by :meth:`to_annotation`; ``where`` names the revision in the error."""
        problem = f"{where}: annotation {api.ANNOTATION_BUNDLE_OPTIONS} is not what cosctl records"
        try:
            value = json.loads(text)
        except ValueError:
            raise BundleInputError(f"{problem} (not JSON)") from None
        if not isinstance(value, dict) or not isinstance(value.get("namespace"), str) or not value["namespace"]:
            raise BundleInputError(f"{problem} (no namespace)")
        config = value.get("config")
        provider = value.get("certProvider", NO_PROVIDER)
        create = value.get("createNamespace", False)
        if (config is not None and not isinstance(config, dict)) or provider not in CERT_PROVIDERS \
                or not isinstance(create, bool):
            raise BundleInputError(f"{problem} (config, certProvider or createNamespace malformed)")
        return cls(value["namespace"], config or None, provider, create)


def check_install_namespace(namespace: str) -> None:
    """Refuse an install namespace no ClusterExtension can name (its CRD: a DNS-1123 label of at most 63
    characters), as the API server would refuse the Namespace itself, before anything is rendered."""
    problems = names.is_dns1123_label(namespace)
    if problems:
        raise BundleInputError(f"install namespace {namespace!r} (-n/--namespace) is not a valid namespace name: "
                               + "; ".join(problems))


def render_bundle(bundle: RegistryV1, options: InstallOptions) -> list[Obj]:
    """The objects OLM v1 applies for ``bundle`` installed with ``options``, in its order; with
    ``create_namespace``, the install Namespace first. Raises what each step raises, with OLM v1's messages:
    :class:`~.model.RenderError` (unsupported bundle, validators, target namespaces) and
    :class:`~.model.ConfigurationError` (the configuration) and :class:`~.model.BundleInputError` (a part of
    the bundle that does not decode into OLM v1's Go types)."""
    check_install_namespace(options.namespace)
    typed = decode(bundle)  # once: the refusals and the renderer read the same decoded bundle
    check_supported(typed, options.cert_provider)
    config = parse_config(bundle, options.config, options.namespace)
    objects = render(typed, options.namespace, watch_namespace=config.watch_namespace,
                     deployment_config=config.deployment_config, cert_provider=options.cert_provider)
    if options.create_namespace:
        objects.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": options.namespace}})
    return objects


def revision_objects(objects: list[Obj]) -> tuple[list[Obj], list[str]]:
    """The rendered ``objects`` as a revision can hold them (:func:`unique_objects`), and the notes to print;
    refuses an object no API server accepts, which OLM v1 renders as the bundle ships it (its install then fails
    on it): a manifest without ``apiVersion``, ``kind`` or ``metadata.name``."""
    for obj in objects:
        raw = obj.get("metadata")
        meta: Obj = raw if isinstance(raw, dict) else {}
        missing = [field for field, value in (("apiVersion", obj.get("apiVersion")), ("kind", obj.get("kind")),
                                              ("metadata.name", meta.get("name")))
                   if not isinstance(value, str) or not value]
        if missing:
            what = f"{obj.get('kind') or 'an object'} {meta.get('name') or ''}".rstrip()
            raise RenderError(f"the bundle's {what} has no {' or '.join(missing)}: no API server accepts it (OLM v1 "
                              "renders it as the bundle ships it, and the install fails on it)")
    return unique_objects(objects)


def unique_objects(objects: list[Obj]) -> tuple[list[Obj], list[str]]:
    """``objects`` with each object once, and a note for each one merged away; for a revision, which holds an
    object once (the API refuses the same object twice in a ClusterObjectSet).

    OLM v1 renders some real bundles with an object twice: a bundle that ships its own ServiceAccount manifest
    also gets the one OLM v1 generates from the CSV's permissions, which says nothing but its name
    (reportportal-operator 0.0.7, opentelemetry-operator 0.27.0 and cert-manager 1.4.0 are three of them).
    Applying both leaves the object with everything either says; when one says nothing the other does not
    (compared as a revision cleans objects), that is the other one, which is kept at the first one's place.
    Two that contradict each other would leave the result to the order of writes: refused, naming the object.
    """
    index: dict[ObjectRef, int] = {}
    kept: list[Obj] = []
    notes: list[str] = []
    for obj in objects:
        ref = ObjectRef.of(obj)
        if ref not in index:
            index[ref] = len(kept)
            kept.append(obj)
            continue
        earlier, later = clean(kept[index[ref]]), clean(obj)
        if _within(later, earlier):
            outcome = "the same both times" if later == earlier else "the first says all the second does"
        elif _within(earlier, later):
            kept[index[ref]] = obj
            outcome = "the second says all the first does and more"
        else:
            raise RenderError(f"the rendered bundle holds {ref} twice, with different content; a revision holds "
                              "each object once, so one of the two must go")
        notes.append(f"{ref} is rendered twice, {outcome}: the revision holds it once")
    return kept, notes


def _within(small: object, large: object) -> bool:
    """Whether every field ``small`` sets is set to the same in ``large`` (lists compare whole)."""
    if isinstance(small, dict) and isinstance(large, dict):
        return all(k in large and _within(v, large[k]) for k, v in small.items())
    return small == large


def revision_annotations(bundle: RegistryV1, options: InstallOptions) -> dict[str, str]:
    """The annotations a revision of ``bundle`` carries: OLM v1's package, bundle name and version, the image it
    was pulled from (by digest), the CSV's ``olm.properties`` (which operator-controller copies onto its revisions
    for whoever reads bundle properties, such as maxOpenShiftVersion), and the options it was rendered with."""
    annotations = {
        api.ANNOTATION_PACKAGE_NAME: bundle.package_name,
        api.ANNOTATION_BUNDLE_NAME: bundle.csv_name,
        api.ANNOTATION_BUNDLE_OPTIONS: options.to_annotation(),
    }
    properties = ((bundle.csv.get("metadata") or {}).get("annotations") or {}).get(api.ANNOTATION_OLM_PROPERTIES)
    if isinstance(properties, str):
        annotations[api.ANNOTATION_OLM_PROPERTIES] = properties
    if bundle.version:
        annotations[api.ANNOTATION_BUNDLE_VERSION] = bundle.version
    if bundle.image:
        annotations[api.ANNOTATION_BUNDLE_REFERENCE] = bundle.image
    return annotations


# kubectl's copy of an object, which operator-controller strips from every object of a revision.
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def owned_objects(objects: list[Obj], *, owner: str, owner_kind: str, annotations: dict[str, str]) -> list[Obj]:
    """``objects`` as operator-controller puts them in a revision (``SimpleRevisionGenerator.GenerateRevision``):
    each labelled with the owner's kind and name, annotated with the bundle version and package name the revision's
    ``annotations`` say, and without kubectl's last-applied-configuration. Why: every object of a revision
    operator-controller made carries these, so the same bundle published by cosctl must carry them too, or taking
    over an extension's revisions would rewrite every object (and the labels say, on each object, whose it is)."""
    labels = {api.LABEL_OWNER_KIND: owner_kind, api.LABEL_OWNER_NAME: owner}
    extra = {key: annotations[key] for key in (api.ANNOTATION_BUNDLE_VERSION, api.ANNOTATION_PACKAGE_NAME)
             if annotations.get(key)}
    owned = []
    for obj in objects:
        meta = dict(obj.get("metadata") or {})
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
        notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
        notes.update(extra)
        if notes:
            meta["annotations"] = notes
        else:
            meta.pop("annotations", None)
        owned.append({**obj, "metadata": meta})
    return owned


def recorded_options(cos: Obj) -> InstallOptions | None:
    """The options a revision was rendered with, or ``None`` when it was not made from a bundle by cosctl."""
    annotations = (cos.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(api.ANNOTATION_BUNDLE_OPTIONS)
    if not isinstance(text, str):
        return None
    return InstallOptions.from_annotation(text, where=f"ClusterObjectSet {cos['metadata'].get('name')}")
