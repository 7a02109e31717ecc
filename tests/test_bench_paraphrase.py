"""The paraphrase benchmark's generated desk: what its questions claim about themselves holds."""

from __future__ import annotations

import re
import sys
from pathlib import Path

# benchmarks/ is a folder of scripts, not a package: import its modules the way the script does.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _paraphrase_data as data
from fourfold.text import tokenize


def test_the_desk_is_the_same_for_a_seed_and_has_both_kinds_of_question() -> None:
    desk = data.build(customers=60, seed=3)
    assert desk == data.build(customers=60, seed=3)
    on = desk.on_topic()
    kinds = {q.paraphrase for q in on}
    assert kinds == {True, False}
    assert 0.3 < sum(q.paraphrase for q in on) / len(on) < 0.9


def test_a_paraphrase_question_shares_no_content_word_with_its_memory_and_an_overlap_one_does() -> None:
    for q in data.build(customers=60, seed=4).on_topic():
        shared = set(tokenize(q.text)) & set(tokenize(q.answer or ""))
        assert (not shared) == q.paraphrase, q


def test_a_customers_orders_are_told_apart_by_their_numbers() -> None:
    desk = data.build(customers=200, seed=5)
    several = 0
    for customer in desk.customers:
        numbers = [m for memory, t in zip(customer.memories, customer.types, strict=True) if t == "order"
                   for m in re.findall(r"order (\d{5})", memory)]
        assert len(numbers) == len(set(numbers))
        several += len(numbers) > 1
    assert several > 0
    named = [q for q in desk.on_topic() if q.type == "order" and re.search(r"\d{5}", q.text)]
    assert named and all(re.search(r"\d{5}", q.text).group() in (q.answer or "") for q in named)  # type: ignore[union-attr]


def test_every_on_topic_question_asks_about_one_of_its_customers_memories() -> None:
    desk = data.build(customers=40, seed=6)
    memories = {c.id: set(c.memories) for c in desk.customers}
    assert all(q.answer in memories[q.customer] for q in desk.on_topic())
    assert all(q.answer is None and q.text in data.OFF_TOPIC for q in desk.off_topic())
    assert set(data.type_names()) | {"order"} == set().union(*data.folds())
