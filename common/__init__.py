"""What the admission webhook, the reconciler and ``cosctl`` share, in four layers (lowest first) and
one wing beside them.

- :mod:`common.contract`: the ClusterObjectSet API as data and rules: names, the CRD rule table, validation,
  defaults, admission decisions, object-data decoding, readiness probes. Pure functions over plain ``dict``
  objects; no I/O, no cluster.
- :mod:`common.cluster`: access to a Kubernetes API server: the ``Cluster`` interface with errors that carry
  the Kubernetes ``Status``, and its production adapter over the ``kubernetes`` client.
- :mod:`common.bundle`: the producer's side of the format: manifests from files, phases, packing into
  object-data Secrets, ref resolution, crash-safe publishing.
- :mod:`common.cosctl`: the ``cosctl`` command line over the three layers below it.

:mod:`common.runtime`, beside :mod:`common.bundle` on :mod:`common.cluster`: the generic controller machinery
(informers, the cache-backed client, work queue, leader election, health). It knows nothing of
ClusterObjectSets; the reconciler wires it to them.

:mod:`common.testing` holds the in-memory API server, a test double only tests and benchmarks import.

``common`` imports neither ``webhook`` nor ``reconciler``; each layer imports only layers below it. The
contracts are checked by import-linter (``[tool.importlinter]`` in ``pyproject.toml``).
"""
