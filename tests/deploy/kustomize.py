"""A small, offline kustomize renderer for the features deploy/ uses, so CI can render every overlay without a
network or a Go binary.

It implements the subset of kustomize that deploy/ relies on, with kustomize's semantics, and refuses
everything else with a clear error (naming the kustomization file and field) instead of silently rendering
something ``kubectl apply -k`` would not:

- ``resources``: files (all YAML documents) and directories holding a kustomization; files must be inside or
  below the kustomization's directory (kustomize's default load restriction); directories may be anywhere
  except the kustomization's own directory or a parent of it (kustomize calls that a cycle);
- ``patches``: JSON6902 patches (a YAML list of operations, applied with ``jsonpatch``) to every resource the
  ``target`` selects, and strategic-merge patches that either delete a whole resource (``$patch: delete``) or
  merge maps (lists in a strategic-merge patch are refused: their merge semantics depend on the schema);
  a patch that matches no resource is an error, as in kustomize;
- ``namespace``: sets ``metadata.namespace`` on namespaced kinds (and on subjects named ``default`` of role
  bindings, as kustomize does);
- ``images``: ``newName`` / ``newTag`` / ``digest`` on containers and init containers of pod templates.

Output is sorted in kustomize's "legacy" order (namespaces and CRDs first, webhook configurations last),
the order ``kubectl apply -k`` creates objects in.

Run ``python -m tests.deploy.kustomize DIR`` to print a rendering as multi-document YAML.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

Obj = dict[str, Any]

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SUPPORTED_FIELDS = {"apiVersion", "kind", "resources", "patches", "namespace", "images"}

# Kinds kustomize knows to be cluster-scoped (from its built-in OpenAPI data); kinds it does not know,
# such as custom resources, are treated as namespaced.
CLUSTER_SCOPED = {
    "APIService", "CSIDriver", "CSINode", "CertificateSigningRequest", "ClusterRole", "ClusterRoleBinding",
    "ComponentStatus", "CustomResourceDefinition", "FlowSchema", "IngressClass", "MutatingWebhookConfiguration",
    "Namespace", "Node", "PersistentVolume", "PodSecurityPolicy", "PriorityClass", "PriorityLevelConfiguration",
    "RuntimeClass", "StorageClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration", "VolumeAttachment",
}

# kustomize's legacy sort order (api/resource/ordering): these kinds first, in this order ...
ORDER_FIRST = [
    "Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
    "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap", "Secret",
    "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume", "PersistentVolumeClaim",
    "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
]
# ... these last, everything else in between.
ORDER_LAST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]

POD_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Pod": ("spec",),
}


class RenderError(Exception):
    """A kustomization that this renderer (or kustomize itself) cannot render; the message names the file."""


def resource_id(obj: Obj) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name): kustomize's identity of a resource (the version does not count)."""
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.rpartition("/")[0]
    meta = obj.get("metadata") or {}
    return group, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", ""))


def describe(obj: Obj) -> str:
    group, kind, ns, name = resource_id(obj)
    gk = f"{kind}.{group}" if group else kind
    return f"{gk} {ns + '/' if ns else ''}{name}"


def _kustomization_file(directory: Path) -> Path:
    for candidate in KUSTOMIZATION_FILES:
        if (directory / candidate).is_file():
            return directory / candidate
    raise RenderError(f"{directory}: no kustomization.yaml in this directory")


def _load_documents(path: Path) -> list[Obj]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except (OSError, yaml.YAMLError) as exc:
        raise RenderError(f"{path}: cannot read YAML: {exc}") from None
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
            raise RenderError(f"{path}: document {index} is not a Kubernetes object with apiVersion and kind")
        if doc["kind"].endswith("List") and "items" in doc:
            raise RenderError(f"{path}: document {index}: List objects are not supported")
        if not (doc.get("metadata") or {}).get("name"):
            raise RenderError(f"{path}: document {index} ({doc['kind']}) has no metadata.name")
    return docs


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _selects(target: Obj, obj: Obj) -> bool:
    """kustomize's patch target selector: group, version, kind, name, namespace (anchored regexes)."""
    api_version = str(obj.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    meta = obj.get("metadata") or {}
    actual = {"group": group, "version": version, "kind": obj.get("kind", ""),
              "name": meta.get("name", ""), "namespace": meta.get("namespace") or ""}
    for key, wanted in target.items():
        if key not in actual:
            raise RenderError(f"patch target field {key!r} is not supported by this renderer")
        if not re.fullmatch(str(wanted), str(actual[key])):
            return False
    return True


def _merge_maps(base: Obj, patch: Obj, where: str) -> Obj:
    out = dict(base)
    for key, value in patch.items():
        if isinstance(key, str) and key.startswith("$"):
            raise RenderError(f"{where}: strategic-merge directive {key!r} is only supported as "
                              "'$patch: delete' of a whole resource")
        if isinstance(value, list):
            raise RenderError(f"{where}: strategic-merge patches with lists ({key!r}) are not supported by "
                              "this renderer; use a JSON6902 patch")
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_maps(out[key], value, where)
        elif value is None:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _apply_patch(resources: list[Obj], entry: Obj, directory: Path, where: str) -> list[Obj]:
    unknown = set(entry) - {"path", "patch", "target"}
    if unknown:
        raise RenderError(f"{where}: unsupported patch field(s) {sorted(unknown)}")
    if ("path" in entry) == ("patch" in entry):
        raise RenderError(f"{where}: a patch needs exactly one of 'path' and 'patch'")
    if "path" in entry:
        patch_file = directory / entry["path"]
        if not _inside(patch_file, directory):
            raise RenderError(f"{where}: patch file {entry['path']} is not in or below {directory}")
        try:
            text = patch_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise RenderError(f"{where}: cannot read patch file: {exc}") from None
    else:
        text = entry["patch"]
    try:
        body = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RenderError(f"{where}: patch is not valid YAML: {exc}") from None
    target = entry.get("target")

    if isinstance(body, list):  # JSON6902
        if not isinstance(target, dict):
            raise RenderError(f"{where}: a JSON6902 patch needs a 'target'")
        try:
            ops = jsonpatch.JsonPatch(body)
        except (jsonpatch.JsonPatchException, TypeError, KeyError) as exc:
            raise RenderError(f"{where}: invalid JSON6902 patch: {exc}") from None
        out, hits = [], 0
        for obj in resources:
            if not _selects(target, obj):
                out.append(obj)
                continue
            hits += 1
            try:
                out.append(ops.apply(obj))
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise RenderError(f"{where}: JSON6902 patch failed on {describe(obj)}: {exc}") from None
        if not hits:
            raise RenderError(f"{where}: patch target {target} matches no resource")
        return out

    if not isinstance(body, dict):
        raise RenderError(f"{where}: a patch must be a YAML list (JSON6902) or a map (strategic merge)")
    delete = body.get("$patch") == "delete"
    if "$patch" in body and not delete:
        raise RenderError(f"{where}: only '$patch: delete' is supported")
    smp = {k: v for k, v in body.items() if k != "$patch"}

    def hit(obj: Obj) -> bool:
        if target is not None:
            return _selects(target, obj)
        group, kind, ns, name = resource_id(obj)
        p_group, p_kind, p_ns, p_name = resource_id(smp)
        return (group, kind, name) == (p_group, p_kind, p_name) and (not p_ns or p_ns == ns)

    out, hits = [], 0
    for obj in resources:
        if not hit(obj):
            out.append(obj)
            continue
        hits += 1
        if not delete:
            out.append(_merge_maps(obj, smp, where))
    if not hits:
        raise RenderError(f"{where}: patch for {describe(smp)} matches no resource")
    return out


def _set_namespace(resources: list[Obj], namespace: str) -> list[Obj]:
    out = []
    for original in resources:
        obj = copy.deepcopy(original)
        if obj["kind"] not in CLUSTER_SCOPED:
            obj.setdefault("metadata", {})["namespace"] = namespace
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            for subject in obj.get("subjects") or []:
                if subject.get("name") == "default":
                    subject["namespace"] = namespace
        out.append(obj)
    return out


def _set_images(resources: list[Obj], images: list[Obj], where: str) -> list[Obj]:
    for image in images:
        if not isinstance(image, dict) or "name" not in image:
            raise RenderError(f"{where}: every images entry needs a 'name'")
        unknown = set(image) - {"name", "newName", "newTag", "digest"}
        if unknown:
            raise RenderError(f"{where}: unsupported images field(s) {sorted(unknown)}")
    out = []
    for original in resources:
        obj = copy.deepcopy(original)
        path = POD_TEMPLATE_PATHS.get(obj["kind"])
        pod: Any = obj
        for key in path or ():
            pod = pod.get(key) if isinstance(pod, dict) else None
        if path and isinstance(pod, dict):
            for container in (pod.get("initContainers") or []) + (pod.get("containers") or []):
                ref = str(container.get("image", ""))
                name, tag, digest = ref, "", ""
                if "@" in name:
                    name, digest = name.split("@", 1)
                if ":" in name.rpartition("/")[2]:
                    name, tag = name.rsplit(":", 1)
                for image in images:
                    if image["name"] != name:
                        continue
                    new = image.get("newName", name)
                    if "digest" in image:
                        container["image"] = f"{new}@{image['digest']}"
                    elif "newTag" in image:
                        container["image"] = f"{new}:{image['newTag']}"
                    else:
                        container["image"] = new + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
        out.append(obj)
    return out


def _order_key(obj: Obj) -> tuple[int, str, str, str]:
    kind = obj["kind"]
    if kind in ORDER_FIRST:
        rank = ORDER_FIRST.index(kind)
    elif kind in ORDER_LAST:
        rank = len(ORDER_FIRST) + 1 + ORDER_LAST.index(kind)
    else:
        rank = len(ORDER_FIRST)
    group, _, ns, name = resource_id(obj)
    return rank, f"{group}/{kind}", ns, name


def _render(directory: Path, stack: tuple[Path, ...]) -> list[Obj]:
    directory = directory.resolve()
    if directory in stack:
        raise RenderError(f"{directory}: kustomization cycle through {' -> '.join(map(str, stack))}")
    kfile = _kustomization_file(directory)
    try:
        spec = yaml.safe_load(kfile.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise RenderError(f"{kfile}: not valid YAML: {exc}") from None
    if not isinstance(spec, dict):
        raise RenderError(f"{kfile}: must be a map")
    unknown = set(spec) - SUPPORTED_FIELDS
    if unknown:
        raise RenderError(f"{kfile}: field(s) {sorted(unknown)} not supported by this renderer")

    resources: list[Obj] = []
    for index, entry in enumerate(spec.get("resources") or []):
        where = f"{kfile}: resources[{index}]"
        if not isinstance(entry, str) or "://" in entry or entry.startswith("github.com/"):
            raise RenderError(f"{where}: only local paths are supported (got {entry!r})")
        path = directory / entry
        if path.is_dir():
            visited = (*stack, directory)
            for root in visited:
                if _inside(root, path):
                    raise RenderError(f"{where}: cycle detected: candidate root {path.resolve()} contains "
                                      f"visited root {root} (kustomize refuses a kustomization that includes "
                                      "its own directory or a parent of it)")
            resources.extend(_render(path, visited))
        elif path.is_file():
            if not _inside(path, directory):
                raise RenderError(f"{where}: security; file {entry} is not in or below {directory} "
                                  "(kustomize refuses it too)")
            resources.extend(copy.deepcopy(_load_documents(path)))
        else:
            raise RenderError(f"{where}: {entry} does not exist")

    seen: dict[tuple[str, str, str, str], int] = {}
    for obj in resources:
        rid = resource_id(obj)
        if rid in seen:
            raise RenderError(f"{kfile}: resource {describe(obj)} is listed twice")
        seen[rid] = 1

    for index, entry in enumerate(spec.get("patches") or []):
        if not isinstance(entry, dict):
            raise RenderError(f"{kfile}: patches[{index}] must be a map")
        resources = _apply_patch(resources, entry, directory, f"{kfile}: patches[{index}]")
    if spec.get("namespace"):
        resources = _set_namespace(resources, str(spec["namespace"]))
    if spec.get("images"):
        resources = _set_images(resources, spec["images"], f"{kfile}: images")
    return resources


def render(directory: str | Path) -> list[Obj]:
    """Render the kustomization in ``directory`` to a list of objects, in ``kubectl apply -k`` order."""
    return sorted(_render(Path(directory), ()), key=_order_key)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.deploy.kustomize DIR", file=sys.stderr)
        return 2
    try:
        objs = render(argv[0])
    except RenderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(yaml.safe_dump_all(objs, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
