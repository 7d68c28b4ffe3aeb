"""Access to a Kubernetes API server.

Owns the :class:`~common.cluster.interface.Cluster` interface the engine and the producer are written against,
the ``ApiError`` family that carries the server's ``Status`` (:mod:`.interface`), and the one client: where the
API server is and the options a client is made with (:mod:`.connection`), the production adapter over the
``kubernetes`` client with discovery, server-side apply, watches, the one retry policy and views writing with
another identity's bearer token (:mod:`.kube`), ServiceAccount tokens from the TokenRequest API, cached and
renewed for those views (:mod:`.tokens`), and the managedFields upgrade after a plain create (:mod:`.ownership`).
Every retry and reconnect waits by the one backoff (:mod:`.backoff`), and every watch is followed by the one
watch loop (:mod:`.watch`).

May import: :mod:`common.contract` and the ``kubernetes`` client. Never :mod:`common.bundle`,
:mod:`common.cosctl`, :mod:`common.runtime` or a test double.
"""
