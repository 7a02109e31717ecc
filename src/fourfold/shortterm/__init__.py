"""Short-term memory: strategies that bound the message list sent on each model call."""

from fourfold.shortterm.compaction import Summarize
from fourfold.shortterm.messages import SUMMARY_PREFIX, TurnGroup, group_turns, is_summary
from fourfold.shortterm.strategies import (
    TRUNCATION_MARKER,
    Pipeline,
    SlidingWindow,
    Strategy,
    TokenBudget,
)
from fourfold.shortterm.summarizers import ExtractiveSummarizer, ModelSummarizer, Summarizer
from fourfold.shortterm.tokens import AnthropicCounter, EstimateCounter, TokenCounter

__all__ = [
    "SUMMARY_PREFIX",
    "TRUNCATION_MARKER",
    "AnthropicCounter",
    "EstimateCounter",
    "ExtractiveSummarizer",
    "ModelSummarizer",
    "Pipeline",
    "SlidingWindow",
    "Strategy",
    "Summarize",
    "Summarizer",
    "TokenBudget",
    "TokenCounter",
    "TurnGroup",
    "group_turns",
    "is_summary",
]
