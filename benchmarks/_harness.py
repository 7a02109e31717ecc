"""The workloads the benchmarks share with fourfold's tests (`tests/harness`), which fourfold does
not ship: the crash and concurrency cycles, sharing one data dir, the secrets corpus through every
channel, and the generated episode desk."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import episode_desk, off_topic, reliability, secrets_channels, sharing

__all__ = ["episode_desk", "off_topic", "reliability", "secrets_channels", "sharing"]
