"""Workloads fourfold's own tests and benchmarks share: crash and concurrency cycles, sharing one
data dir, the secrets corpus through every channel, and the generated support desks.

They are not shipped: what a user needs to test an agent is in `fourfold.testing`. Tests import
them as `harness.*` (pytest puts `tests/` on the path); benchmarks through `benchmarks/_harness.py`.
"""
