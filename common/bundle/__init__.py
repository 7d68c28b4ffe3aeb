"""Bundles: from manifest files to a published revision, and from a ``ref`` back to its manifest.

Owns loading manifests the way ``kubectl apply -f`` reads them (:mod:`.manifests`), sorting them into phases
(:mod:`.phasing`), packing them into content-addressed immutable object-data Secrets (:mod:`.packing`),
crash-safe publishing of revisions and retention (:mod:`.publish`), resolving a ``ref`` to the manifest a
Secret key holds (:mod:`.refs`, shared with the reconciler), reading a whole revision's content back
(:mod:`.contents`), comparing two revisions object by object (:mod:`.diff`), rolling back forward
(:mod:`.rollback`), the CRD upgrade safety check of a revision's CRDs (OLM v1's comparisons,
:mod:`.crdsafety`; against a cluster, :mod:`.crdcheck`), whether a catalog allows a bundle over what an
owner's revisions installed (OLM v1's upgrade edges, :mod:`.catalogcheck`), which bundle of a package to install and
where it was resolved from (:mod:`.catalogsource`; across the cluster's ClusterCatalogs, :mod:`.clustercatalogs`), a
ClusterExtension manifest read as options (:mod:`.extension`), the RBAC a revision needs and whether a
ServiceAccount holds it (:mod:`.permissions`, :mod:`.permcheck`), what a bundle depends on and whether the cluster
has it (:mod:`.dependencies`), and uninstalling an owner without losing custom resources unasked
(:mod:`.uninstall`). Spec:
``shared/spec/producer.md`` and section 2 (refs) of ``shared/spec/reconciler.md``.

May import: :mod:`common.contract` and :mod:`common.cluster`'s interface. Never :mod:`common.cosctl` or a
test double.
"""
