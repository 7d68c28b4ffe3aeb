"""Test doubles: the in-memory API server (:mod:`.memcluster`) the engine and producer tests run against.

Only tests and benchmarks import this package; production code never does (an import-linter contract).
May import: :mod:`common.contract` and :mod:`common.cluster`'s interface.
"""
