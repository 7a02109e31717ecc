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
    assert set(data.type_names()) | {"order"} == set().union(*data.folds())


def test_an_off_topic_question_is_unrelated_trivia_or_a_desk_question_the_customer_cannot_answer() -> None:
    desk = data.build(customers=40, seed=6)
    types = {c.id: set(c.types) for c in desk.customers}
    pools = {t.name: t.questions for t in data.TYPES}
    kinds = {q.kind for q in desk.off_topic()}
    assert kinds == {"unrelated", "unanswerable"}
    for q in desk.off_topic():
        assert q.answer is None
        if q.kind == "unrelated":
            assert q.text in data.OFF_TOPIC
        else:  # a question of a type this customer has no memory of
            assert q.type not in types[q.customer] and q.text in pools[q.type]
    # adding the unanswerable questions changed no other question
    without = data.build(customers=40, seed=6, unanswerable_per_customer=0)
    assert [q for q in desk.questions if q.kind != "unanswerable"] == list(without.questions)


def test_the_dev_and_test_halves_share_no_attribute_type_and_no_unrelated_text() -> None:
    desk = data.build(customers=80, seed=7)
    halves: dict[str, list[data.Question]] = {"dev": [], "test": []}
    for q in desk.questions:
        halves[data.split_of(q)].append(q)
    for attr in ("type", "text"):
        seen = [{getattr(q, attr) for q in halves[h] if q.kind != "on-topic" or attr == "type"} for h in ("dev", "test")]
        if attr == "type":
            seen = [s - {"off-topic"} for s in seen]
        else:
            seen = [{t for t in s if t in data.OFF_TOPIC} for s in seen]
        assert seen[0] and seen[1] and not seen[0] & seen[1]
    assert {q.kind for q in halves["dev"]} == {q.kind for q in halves["test"]} == {"on-topic", "unrelated", "unanswerable"}


def test_cross_validation_folds_cover_the_dev_half_only() -> None:
    desk = data.dev_half(data.build(customers=40, seed=8))
    assert desk.questions and all(data.split_of(q) == "dev" for q in desk.questions)
    folds = data.dev_folds(5)
    assert all(folds) and set().union(*folds) == data.folds(2)[0]
    assert not set().union(*folds) & data.folds(2)[1]


def test_the_hand_written_check_asks_of_real_types_in_texts_found_nowhere_it_could_have_been_tuned() -> None:
    import _handwritten as hand
    from fourfold._background import TEXTS

    assert set(hand.ON_TOPIC) == {t.name for t in data.TYPES}
    asked = {q for qs in hand.ON_TOPIC.values() for q in qs}
    generated = {q for t in data.TYPES for q in t.questions} | set(data.OFF_TOPIC)
    assert not (asked | set(hand.OFF_TOPIC)) & (generated | set(TEXTS))
