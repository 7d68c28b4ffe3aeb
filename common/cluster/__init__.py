"""Access to a Kubernetes API server.

Owns the :class:`~common.cluster.interface.Cluster` interface the engine and the producer are written against,
the ``ApiError`` family that carries the server's ``Status`` (:mod:`.interface`), the production adapter over
the ``kubernetes`` client with discovery, server-side apply, watches and the one retry policy (:mod:`.kube`),
and the managedFields upgrade after a plain create (:mod:`.ownership`).

May import: :mod:`common.contract` and the ``kubernetes`` client. Never :mod:`common.bundle`,
:mod:`common.cosctl` or a test double.
"""
