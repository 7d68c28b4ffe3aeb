"""The cyclic garbage collector set up for a long-running process that decodes large JSON documents.

Both programs hold what they keep for their lifetime as plain data and bytes with no reference cycles, and handle
documents of tens of thousands of dicts and lists at a time (a 1,000-object ClusterObjectSet is some 32,000):
reference counting frees nearly all of their garbage, and Python's default young collection, every 700 net
container allocations, only scans the document being decoded or judged again and again while it is alive,
holding the GIL each time. So once everything made at start-up is made, it is moved out of the collector's reach
(``gc.freeze``: full collections no longer scan it), and young collections are made rarer; each program says how
rare, from what it measured (``cos-reconciler``: ``reconciler.process``, ``cos-webhook``: ``webhook.server``).
The older generations keep Python's thresholds: what does form cycles (exceptions with their tracebacks, a
framework's request contexts) is still collected.
"""

from __future__ import annotations

import gc


def tune_collector(young_every: int) -> None:
    """Freeze everything made so far and run a young collection every ``young_every`` net container
    allocations (Python's default: 700). Process-wide: call it once, just before the process starts its work
    (in a pre-forked server, in each worker once its application is loaded)."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(young_every, older, oldest)
