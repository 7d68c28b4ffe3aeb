"""The controller machinery: what a Kubernetes controller process needs, whatever it reconciles.

Watch-fed caches (informers, :mod:`.cache`), the cache-backed client that reads from them and writes to the API
server (:mod:`.client`), the work queue with client-go's guarantees (:mod:`.queue`), leader election on a Lease
(:mod:`.leader`), the ``/healthz`` and ``/readyz`` server (:mod:`.health`) and bounded concurrency for independent
writes (:mod:`.parallel`). The same split as controller-runtime's ``pkg/cache``, ``pkg/client``,
``pkg/leaderelection`` and ``pkg/manager``: the controller (``reconciler``) wires them to what it reconciles.

May import: :mod:`common.cluster` and :mod:`common.contract`. Never :mod:`common.bundle`, :mod:`common.cosctl`,
either program or a test double.
"""
