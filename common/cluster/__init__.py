"""Access to a Kubernetes API server.

Owns the :class:`~common.cluster.interface.Cluster` interface the engine and the producer are written against,
the ``ApiError`` family that carries the server's ``Status`` (:mod:`.interface`), the production adapter over
the ``kubernetes`` client with discovery, server-side apply, watches, the one retry policy and views writing
with another identity's bearer token (:mod:`.kube`), ServiceAccount tokens from the TokenRequest API, cached
and renewed (:mod:`.tokens`), and the managedFields upgrade after a plain create (:mod:`.ownership`).

May import: :mod:`common.contract` and the ``kubernetes`` client. Never :mod:`common.bundle`,
:mod:`common.cosctl` or a test double.
"""
