"""``cos-reconciler``: rolls ClusterObjectSets out phase by phase and tears them down (``shared/spec/reconciler.md``).

The COS controller, and only it. The engine is plain functions over the :class:`~common.cluster.interface.Cluster`
interface: one reconcile (:mod:`.engine`), resolving content (:mod:`.resolve`), digests (:mod:`.digest`), the
collision table (:mod:`.collisions`), rolling one object out (:mod:`.rollout`), drift (:mod:`.drift`) and teardown
(:mod:`.teardown`); the conditions it writes are the contract's (:mod:`common.contract.conditions`). What it is
given and gives back is typed in :mod:`.result`. The process (:mod:`.process`) runs it on the generic controller
machinery of :mod:`common.runtime` (caches, work queue, leader election, health, Events), with the watches the
COSs need and the COSs a watch event wakes (:mod:`.watches`), its metrics (:mod:`.metrics`), the CLI
(:mod:`.cli`) and the start-up guard against OLM v1's operator-controller (:mod:`.olm_guard`); :mod:`.demo` runs
the examples on a cluster.

May import: :mod:`common.contract`, :mod:`common.cluster`, :mod:`common.runtime`, :mod:`common.bundle` (ref
resolution). Never ``webhook`` (an import-linter contract) and never a test double.
"""
