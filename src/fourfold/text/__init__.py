"""Pure text utilities: tokenizing, dates, detecting secrets and personal details, chatter
detection. (BM25 lives with the ranker, in `fourfold.ranking`.)"""

from fourfold.text.chatter import is_chatter
from fourfold.text.dates import DATE_KEYS, memory_date, parse_date, time_words
from fourfold.text.redact import POLICIES, Policy, detect, redact
from fourfold.text.tokenize import STOPWORDS, tokenize

__all__ = [
    "DATE_KEYS",
    "POLICIES",
    "STOPWORDS",
    "Policy",
    "detect",
    "is_chatter",
    "memory_date",
    "parse_date",
    "redact",
    "time_words",
    "tokenize",
]
