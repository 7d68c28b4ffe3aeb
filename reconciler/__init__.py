"""``cos-reconciler``: rolls ClusterObjectSets out phase by phase and tears them down (``shared/spec/reconciler.md``).

Two halves. The engine is plain functions over the :class:`~common.cluster.interface.Cluster` interface:
one reconcile (:mod:`.engine`), resolving content (:mod:`.resolve`), digests (:mod:`.digest`), the collision
table (:mod:`.collisions`), rolling one object out (:mod:`.rollout`), teardown (:mod:`.teardown`) and the
conditions (:mod:`.conditions`). The process around it gives the engine watch-fed caches (:mod:`.cache`),
the work queue (:mod:`.queue`), leader election (:mod:`.leader`), health, metrics, Events and the CLI.

May import: :mod:`common.contract`, :mod:`common.cluster`, :mod:`common.bundle` (ref resolution). Never
``webhook`` (an import-linter contract) and never a test double.
"""
