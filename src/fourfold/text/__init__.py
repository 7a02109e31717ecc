"""Pure text utilities: tokenizing, BM25 ranking, dates, secret redaction, chatter detection."""

from fourfold.text.bm25 import BM25Index
from fourfold.text.chatter import is_chatter
from fourfold.text.dates import DATE_KEYS, memory_date, parse_date, time_words
from fourfold.text.redact import redact
from fourfold.text.tokenize import STOPWORDS, tokenize

__all__ = [
    "DATE_KEYS",
    "STOPWORDS",
    "BM25Index",
    "is_chatter",
    "memory_date",
    "parse_date",
    "redact",
    "time_words",
    "tokenize",
]
