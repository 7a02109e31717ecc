"""Writes tests/data/desk-before-profile.tar.gz: a support desk's data dir as fourfold wrote it
before episodes kept a problem and a fix, and before a scope's keys met in one namespace.

Run it once with that fourfold (the fixture is committed; this file says how it was made):

    PYTHONPATH=<that fourfold's src> python tests/data/make_desk_before_profile.py
"""

from __future__ import annotations

import sys
import tarfile
import tempfile
from pathlib import Path

from fourfold import Memory
from fourfold.agent import SupportAgent, customer_scope
from fourfold.embeddings import HashEmbedder
from fourfold.models import OfflineModel

NAME = "desk-before-profile"


def fill(mem: Memory) -> None:
    agent = SupportAgent(mem, OfflineModel(), share_cases=False)
    # ann: a preference stated in her first message, changed in her second ticket
    agent.turn("ann", "Hi there! This is Ann Smith. Please call me on the phone. My label printer is offline.")
    agent.resolve("ann", "Reinstalled the printer driver; the label printer prints again.")
    agent.turn("ann", "From now on please email me instead of calling. The label printer shows a paper jam.")
    agent.resolve("ann", "Cleared the jam and reset the feeder.")
    # bea: an operator set her contact preference under a key of their own
    mem.long_term.remember("Reach Bea by phone", scope=customer_scope("bea"), kind="preference", key="contact",
                           valid_from=1_700_000_000)
    mem.long_term.remember("Bea is on the annual plan", scope=customer_scope("bea"), kind="fact", key="plan",
                           valid_from=1_700_000_000)
    # cy: an operator's key and a detected one for one kind, both current (as fourfold then kept them)
    mem.long_term.remember("Reach Cy by phone", scope=customer_scope("cy"), kind="preference", key="contact",
                           valid_from=1_700_000_000)
    agent.turn("cy", "Actually text me on my mobile from now on. My parcel is late.")
    agent.resolve("cy", "Rebooked the courier.")
    mem.facts.set("refund_window_days_annual", 60, description="Days to ask for a refund on an annual plan")
    mem.facts.set("refund_window_days_monthly", 14, description="Days to ask for a refund on a monthly plan")
    mem.facts.set("support_hours", "9-17 CET", description="When the desk answers")


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / NAME
        mem = Memory.open(data, embedder=HashEmbedder())
        try:
            fill(mem)
        finally:
            mem.close()
        with tarfile.open(out, "w:gz") as tar:
            tar.add(data, arcname=NAME)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name(f"{NAME}.tar.gz"))
