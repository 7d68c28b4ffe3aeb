"""Names of the ClusterObjectSet API and the identity it stamps on objects.

Every string here is a compatibility promise with the OLM v1 implementation of the same API
(``shared/spec``): change none of them.
"""

from __future__ import annotations

from common.contract.objects import Obj

GROUP = "olm.operatorframework.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ClusterObjectSet"
LIST_KIND = "ClusterObjectSetList"
PLURAL = "clusterobjectsets"
SINGULAR = "clusterobjectset"
CRD_NAME = f"{PLURAL}.{GROUP}"

DEFAULT_SYSTEM_NAMESPACE = "olmv1-system"

# Object-data Secrets.
SECRET_TYPE = "olm.operatorframework.io/object-data"
LABEL_REVISION_NAME = "olm.operatorframework.io/revision-name"
MAX_DECOMPRESSED_BYTES = 10 * 1024 * 1024  # 10485760
# kube-apiserver reads no write body larger than this ("Request entity too large: limit is 3145728"; not
# configurable): an object whose JSON is larger can never be stored or applied, whatever etcd accepts.
API_SERVER_MAX_REQUEST_BYTES = 3 * 1024 * 1024

# Identity on managed objects and on COSs.
FIELD_MANAGER = "olm.operatorframework.io"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "olm.operatorframework.io"
LABEL_OWNER_NAME = "olm.operatorframework.io/owner-name"
LABEL_OWNER_KIND = "olm.operatorframework.io/owner-kind"
ANNOTATION_REVISION = "olm.operatorframework.io/revision"
ANNOTATION_BUNDLE_VERSION = "olm.operatorframework.io/bundle-version"
# A revision made from a registry+v1 bundle: OLM v1's names for the package and the bundle (the CSV name) ...
ANNOTATION_PACKAGE_NAME = "olm.operatorframework.io/package-name"
# The CSV's olm.properties (bundle properties such as olm.maxOpenShiftVersion), which operator-controller copies onto
# each revision of a bundle for whoever reads them.
ANNOTATION_OLM_PROPERTIES = "olm.properties"
ANNOTATION_BUNDLE_NAME = "olm.operatorframework.io/bundle-name"
# ... the bundle image it was pulled from, by digest (OLM v1 records its catalog's image reference there) ...
ANNOTATION_BUNDLE_REFERENCE = "olm.operatorframework.io/bundle-reference"
# ... and ours: the options it was rendered with (JSON: namespace, config, certProvider, createNamespace), so the
# next bundle version of the owner renders the same way (shared/spec/bundles.md §4).
ANNOTATION_BUNDLE_OPTIONS = "olm.operatorframework.io/bundle-options"
# ... and, when publish resolved it from a catalog by package name, ours again: where and within which bounds (JSON:
# catalog, packageName, channels, version, as a ClusterExtension's spec.source.catalog names them; not the upgrade
# constraint policy, a one-run override), so the next upgrade resolves within the same bounds.
ANNOTATION_BUNDLE_SOURCE = "olm.operatorframework.io/bundle-source"
FINALIZER_TEARDOWN = "olm.operatorframework.io/teardown"
# The ServiceAccount whose rights a revision's objects are written with (OLM v1 sets both from the
# ClusterExtension's spec.serviceAccount and spec.namespace).
ANNOTATION_SERVICE_ACCOUNT_NAME = "olm.operatorframework.io/service-account-name"
ANNOTATION_SERVICE_ACCOUNT_NAMESPACE = "olm.operatorframework.io/service-account-namespace"

# spec enums.
LIFECYCLE_ACTIVE = "Active"
LIFECYCLE_ARCHIVED = "Archived"
LIFECYCLE_STATES = (LIFECYCLE_ACTIVE, LIFECYCLE_ARCHIVED)
COLLISION_PREVENT = "Prevent"
COLLISION_IF_NO_CONTROLLER = "IfNoController"
COLLISION_NONE = "None"
COLLISION_PROTECTIONS = (COLLISION_PREVENT, COLLISION_IF_NO_CONTROLLER, COLLISION_NONE)


def owner_reference(cos: Obj) -> Obj:
    """The controller ownerReference a ClusterObjectSet puts on what it owns."""
    meta = cos.get("metadata") or {}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }
