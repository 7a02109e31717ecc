"""Does the desk learn from resolved tickets, and do its memories stay right over time?

On sets generated here (issue 14, part 8):

- learn, wrong_fix, pii_leaks: the shared case base (`benchmarks/cases.py`, its default
  variant): the share of later customers whose prompt carries an earlier customer's fix,
  failed attempts offered as fixes, and personal details of another customer in a prompt.
- pref_current: customers who state a preference, resolve, later change it and resolve
  again, through `SupportAgent` offline: the share whose current memories hold the new
  preference and not the old one. Kinds the distiller lists (contact channel, language, time
  of day, ...) and kinds it does not (units, currency, theme, ...) are reported apart; the
  last line counts both.
- dup_rate: five wordings of each of many facts written one by one into a customer's scope,
  with the default consolidation: (memories left - facts) / (writes - facts); 0 is no pile-up.
- false_merge: a fact and a distinct near-miss of it (same wording, another value: "owns a
  dog" / "owns a cat") written one after the other: the share where the second superseded
  the first.

dup_rate and false_merge are measured on values held out from the calibration
(`--calibrate` sweeps the similarity threshold on the other half and prints the trade-off).
The last line:

    learning: learn=X wrong_fix=N pii_leaks=N pref_current=X dup_rate=X false_merge=X

    python benchmarks/learning.py [--embedder minilm|hash] [--calibrate] [--types N] [--seed N]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fourfold import Memory
from fourfold.agent import SupportAgent, customer_scope
from fourfold.embeddings import Embedder, HashEmbedder
from fourfold.longterm import LongTermMemory
from fourfold.longterm.consolidate import DEFAULT_THRESHOLD, SimilarityConsolidator
from fourfold.models import OfflineModel
from fourfold.stores import InMemoryVectorStore

sys.path.insert(0, str(Path(__file__).parent))
import cases  # the shared case base benchmark, reused

# -- facts in five wordings, for consolidation --------------------------------------------------

#: (five wordings of one fact about {v}, values): each value makes a distinct fact, and
#: two values of one attribute are the near-miss pairs (every attribute here can hold several).
FACTS: list[tuple[tuple[str, str, str, str, str], list[str]]] = [
    (("Has a {v} at home", "Owns a {v}", "There is a {v} in their household", "Keeps a {v} as a pet",
      "Their pet is a {v}"),
     ["dog", "cat", "parrot", "rabbit", "hamster", "tortoise", "goldfish", "horse", "ferret", "canary"]),
    (("Uses a {v} for work", "Works on a {v}", "Their work computer is a {v}", "Does their job on a {v}",
      "Has a {v} as the main work device"),
     ["MacBook Air", "ThinkPad", "Chromebook", "Surface tablet", "Dell desktop", "iPad Pro", "Linux workstation",
      "HP EliteBook", "Mac mini", "gaming laptop"]),
    (("Has an office in {v}", "Runs a branch office in {v}", "Their company has a site in {v}",
      "Operates an office located in {v}", "One of their offices is in {v}"),
     ["Lisbon", "Oslo", "Denver", "Osaka", "Nairobi", "Krakow", "Montreal", "Perth", "Bogota", "Cairo"]),
    (("Bought the {v} last year", "Purchased a {v} from us", "Owns our {v}", "Has one of our {v} units",
      "Is the owner of a {v}"),
     ["X200 router", "Z5 printer", "smart thermostat", "mesh Wi-Fi kit", "label printer", "barcode scanner",
      "security camera", "NAS drive", "docking station", "webcam"]),
    (("Speaks {v}", "Can talk in {v}", "Is fluent in {v}", "Knows {v} well", "Converses in {v}"),
     ["Spanish", "German", "Japanese", "Polish", "Arabic", "Hindi", "Swahili", "Korean", "Greek", "Turkish"]),
    (("Plays {v} on weekends", "Spends weekends playing {v}", "Enjoys {v} at the weekend", "Is into {v} on Saturdays",
      "Their weekend hobby is {v}"),
     ["tennis", "chess", "golf", "football", "the violin", "badminton", "poker", "volleyball", "squash", "the piano"]),
    (("Is allergic to {v}", "Has an allergy to {v}", "Cannot be around {v} because of an allergy",
      "Gets allergic reactions from {v}", "Suffers from a {v} allergy"),
     ["peanuts", "pollen", "penicillin", "shellfish", "latex", "dust mites", "bee stings", "gluten", "soy", "eggs"]),
    (("Ships orders to the {v} warehouse", "Sends their orders to the {v} warehouse",
      "Their deliveries go to the {v} warehouse", "Receives stock at the {v} warehouse",
      "Has goods delivered to the {v} warehouse"),
     ["Lyon", "Rotterdam", "Leeds", "Austin", "Gdansk", "Porto", "Turin", "Brno", "Malmo", "Ghent"]),
]


def fact_sets(half: int) -> list[tuple[list[str], str]]:
    """(five wordings, attribute) per fact, for the values of one half (0: calibration, 1: held out)."""
    out = []
    for n, (templates, values) in enumerate(FACTS):
        for v in values[half::2]:
            out.append(([t.format(v=v) for t in templates], f"attr{n}"))
    return out


def calibrate(embedder: Embedder) -> float:
    """Sweep the threshold on the calibration half: paraphrase pairs merged vs distinct pairs merged."""
    facts = fact_sets(0)
    texts = [w for wordings, _ in facts for w in wordings]
    vectors = dict(zip(texts, embedder.embed_many(texts), strict=True))
    same = [float(vectors[a] @ vectors[b]) for wordings, _ in facts
            for i, a in enumerate(wordings) for b in wordings[i + 1:]]
    near = [float(vectors[a[k]] @ vectors[b[k]]) for i, (a, attr_a) in enumerate(facts)
            for b, attr_b in facts[i + 1:] if attr_a == attr_b for k in range(5)]
    print(f"calibration ({embedder.identity}): {len(same)} paraphrase pairs, {len(near)} near-miss pairs "
          "(same wording, another value)")
    print("  threshold  paraphrases_merged  distinct_merged")
    chosen = None
    for t in np.arange(0.60, 0.97, 0.02):
        hit, false = np.mean(np.array(same) >= t), np.mean(np.array(near) >= t)
        mark = ""
        if chosen is None and false <= 0.01:
            chosen, mark = float(t), "  <- lowest with distinct_merged <= 1%"
        print(f"  {t:9.2f}  {hit:18.3f}  {false:15.3f}{mark}")
    return chosen if chosen is not None else 0.95


def consolidation(embedder: Embedder, threshold: float) -> tuple[float, float]:
    """(dup_rate, false_merge) on the held-out half, by writing as a user would."""
    facts = fact_sets(1)
    judge = SimilarityConsolidator(threshold)
    lt = LongTermMemory(InMemoryVectorStore(embedder_identity=embedder.identity), embedder, consolidator=judge)
    writes = 0
    for n, (wordings, _) in enumerate(facts):
        for text in wordings:
            lt.remember(text, scope=f"dup:{n}", kind="fact")
            writes += 1
    kept = sum(len(lt.all(scope=f"dup:{n}")) for n in range(len(facts)))
    dup_rate = (kept - len(facts)) / (writes - len(facts))
    merged = pairs = 0
    rng = random.Random(5)
    for i, (a, attr_a) in enumerate(facts):
        for j, (b, attr_b) in enumerate(facts):
            if j <= i or attr_a != attr_b:
                continue
            k = rng.randrange(5)
            first = lt.remember(a[k], scope=f"pair:{i}:{j}", kind="fact")
            second = lt.remember(b[k], scope=f"pair:{i}:{j}", kind="fact")
            pairs += 1
            merged += second.supersedes == (first,)
    return dup_rate, merged / pairs


# -- preferences that change ---------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    kind: str
    listed: bool  # a kind the offline distiller names
    before: str
    after: str


def changes(rng: random.Random, per_kind: int) -> list[Change]:
    listed = {
        "contact_channel": [("Please always contact me by {a}.", "Please {b} me instead from now on.")],
        "language": [("Please reply in {a}.", "Please reply in {b} from now on.")],
        "time_of_day": [("I'd prefer calls in the {a}.", "I'd rather be called in the {b} now.")],
        "day_of_week": [("I'd prefer deliveries on {a}.", "I'd rather get deliveries on {b} from now on.")],
        "payment_method": [("I'd prefer to pay by {a}.", "I'd rather pay by {b} from now on.")],
        "document_format": [("I'd prefer invoices as {a}.", "I'd rather get invoices as {b} now.")],
    }
    unlisted = {
        "units": [("I'd prefer {a} units in reports.", "I'd rather see {b} units in reports now.")],
        "currency": [("I'd prefer prices in {a}.", "I'd rather see prices in {b} now.")],
        "theme": [("I'd prefer the {a} theme in the app.", "I'd rather use the {b} theme in the app now.")],
        "summary_frequency": [("I'd prefer a {a} summary of my account.", "I'd rather get a {b} summary of my account now.")],
        "packaging": [("I'd prefer {a} packaging.", "I'd rather get {b} packaging from now on.")],
    }
    values = {
        "contact_channel": [("email", "text"), ("phone", "email"), ("post", "email"), ("email", "WhatsApp")],
        "language": [("Spanish", "English"), ("French", "German"), ("English", "Dutch"), ("Polish", "English")],
        "time_of_day": [("morning", "evening"), ("afternoon", "morning"), ("evening", "afternoon"), ("morning", "afternoon")],
        "day_of_week": [("Mondays", "Fridays"), ("Saturdays", "Tuesdays"), ("weekdays", "weekends"), ("Fridays", "Mondays")],
        "payment_method": [("credit card", "bank transfer"), ("PayPal", "credit card"), ("bank transfer", "PayPal"),
                           ("debit card", "cash")],
        "document_format": [("PDF", "paper copies"), ("paper copies", "PDF"), ("PDF", "CSV"), ("CSV", "PDF")],
        "units": [("metric", "imperial"), ("imperial", "metric")] * 2,
        "currency": [("euros", "dollars"), ("pounds", "euros"), ("dollars", "yen"), ("francs", "euros")],
        "theme": [("dark", "light"), ("light", "dark"), ("high-contrast", "dark"), ("dark", "high-contrast")],
        "summary_frequency": [("weekly", "daily"), ("monthly", "weekly"), ("daily", "monthly"), ("weekly", "monthly")],
        "packaging": [("plastic-free", "standard"), ("gift", "plain"), ("standard", "recyclable"), ("plain", "gift")],
    }
    out = []
    for table, is_listed in ((listed, True), (unlisted, False)):
        for kind, forms in table.items():
            for a, b in rng.sample(values[kind], min(per_kind, len(values[kind]))):
                before, after = rng.choice(forms)
                out.append(Change(kind, is_listed, before.format(a=a), after.format(b=b)))
    return out


def preferences(embedder: Embedder, per_kind: int, seed: int) -> dict[bool, list[bool]]:
    """listed? -> per customer: does only the new preference hold now?"""
    results: dict[bool, list[bool]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="fourfold-learning-") as tmp, Memory.open(Path(tmp), embedder=embedder) as mem:
        agent = SupportAgent(mem, OfflineModel(), share_cases=False)
        for n, change in enumerate(changes(random.Random(seed), per_kind)):
            cid = f"pref{n}"
            agent.turn(cid, f"My order arrived damaged. {change.before}")
            agent.resolve(cid, "Sent a replacement")
            agent.turn(cid, f"The replacement is fine, thanks. {change.after}")
            agent.resolve(cid, "Confirmed the replacement")
            current = [m.text for m in mem.long_term.all(scope=customer_scope(cid), kinds=("preference",))]
            ok = any(change.after in t for t in current) and not any(change.before in t for t in current)
            results[change.listed].append(ok)
            if cases.VERBOSE and not ok:
                print(f"    not current: {change.kind}: {change.before!r} -> {change.after!r}; now {current}")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--calibrate", action="store_true", help="Sweep the consolidation threshold first.")
    parser.add_argument("--types", type=int, default=len(cases.PROBLEMS), help="Problem types of the case base.")
    parser.add_argument("--per-kind", type=int, default=4, help="Customers per preference kind.")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cases.VERBOSE = args.verbose
    if args.embedder == "minilm":
        from fourfold.embeddings.minilm import default_embedder

        embedder: Embedder = default_embedder()
    else:
        embedder = HashEmbedder()
    threshold = DEFAULT_THRESHOLD
    if args.calibrate:
        threshold = calibrate(embedder)
        print(f"  calibrated threshold {threshold:.2f} (the library's default is {DEFAULT_THRESHOLD:.2f})")
    started = time.perf_counter()
    dup_rate, false_merge = consolidation(embedder, threshold)
    print(f"consolidation at {threshold:.2f} on held-out values: dup_rate={dup_rate:.3f} false_merge={false_merge:.3f} "
          f"[{time.perf_counter() - started:.0f}s]")
    started = time.perf_counter()
    prefs = preferences(embedder, args.per_kind, args.seed)
    listed, unlisted = prefs[True], prefs[False]
    print(f"preferences changed: listed kinds {sum(listed)}/{len(listed)} current, "
          f"kinds the distiller does not list {sum(unlisted)}/{len(unlisted)} current "
          f"[{time.perf_counter() - started:.0f}s]")
    started = time.perf_counter()
    tally = cases.run(embedder, "shared-words", max(1, min(args.types, len(cases.PROBLEMS))), args.seed)
    print(tally.line("shared cases") + f" [{time.perf_counter() - started:.0f}s]")
    both = listed + unlisted
    print(f"learning: learn={tally.reached / max(tally.later, 1):.2f} wrong_fix={tally.failed_offered} "
          f"pii_leaks={sum(tally.leaks.values())} pref_current={sum(both) / max(len(both), 1):.2f} "
          f"dup_rate={dup_rate:.2f} false_merge={false_merge:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
