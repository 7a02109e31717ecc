"""The garbage collector of a long-running service process, set once its models are loaded.

CPython's cyclic collector runs a young collection every 700 container allocations, and
each one walks the objects a worker holds for good. After start-up, everything loaded so far
(the models' Python objects, FastAPI's routes, the modules) lives as long as the process:
frozen, the collector never walks it again. Cycles made later are still collected, every
20,000 allocations instead of 700, which leaves a worker's peak memory where it was.

Only processes fourfold runs as a service call this: the library never changes the collector of
an application that imports it.
"""

from __future__ import annotations

import gc

__all__ = ["SERVICE_THRESHOLDS", "settle_heap"]

#: (young, middle, old) thresholds for a service process; CPython's default is (700, 10, 10).
SERVICE_THRESHOLDS = (20_000, 50, 100)


def settle_heap() -> None:
    """Collect once, freeze what start-up made, and collect young objects less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVICE_THRESHOLDS)
