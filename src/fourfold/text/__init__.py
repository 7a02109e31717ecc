"""Pure text utilities: tokenizing, BM25 ranking, dates, detecting secrets and personal details,
chatter detection."""

from fourfold.text.bm25 import BM25Index
from fourfold.text.chatter import is_chatter
from fourfold.text.dates import DATE_KEYS, memory_date, parse_date, time_words
from fourfold.text.redact import POLICIES, Policy, detect, redact
from fourfold.text.tokenize import STOPWORDS, tokenize

__all__ = [
    "DATE_KEYS",
    "POLICIES",
    "STOPWORDS",
    "BM25Index",
    "Policy",
    "detect",
    "is_chatter",
    "memory_date",
    "parse_date",
    "redact",
    "time_words",
    "tokenize",
]
