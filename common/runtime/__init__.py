"""The controller machinery: what a Kubernetes controller process needs, whatever it reconciles.

Watch-fed caches (informers, :mod:`.cache`), the cache-backed client that reads from them and writes to the API
server (:mod:`.client`), the work queue with client-go's guarantees (:mod:`.queue`), leader election on a Lease
(:mod:`.leader`), the ``/healthz`` and ``/readyz`` server (:mod:`.health`), Event recording (:mod:`.recorder`),
bounded concurrency for independent writes (:mod:`.parallel`), and two things the webhook uses too: the one JSON
log line format (:mod:`.logs`) and the garbage collector's set-up for a process decoding large documents
(:mod:`.collector`). The same split as controller-runtime's ``pkg/cache``, ``pkg/client``,
``pkg/leaderelection``, ``pkg/recorder`` and ``pkg/manager``: the controller (``reconciler``) wires them to what
it reconciles.

May import: :mod:`common.cluster` and the generic part of :mod:`common.contract` (objects, label selectors);
never the ``kubernetes`` client directly, the ClusterObjectSet API (names, rules, conditions), :mod:`common.bundle`,
:mod:`common.cosctl`, either program or a test double (an import-linter contract).
"""
