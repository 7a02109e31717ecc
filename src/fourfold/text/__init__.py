"""Pure text utilities: tokenizing, BM25 ranking, secret redaction, chatter detection."""

from fourfold.text.bm25 import BM25Index
from fourfold.text.chatter import is_chatter
from fourfold.text.redact import redact
from fourfold.text.tokenize import STOPWORDS, tokenize

__all__ = ["STOPWORDS", "BM25Index", "is_chatter", "redact", "tokenize"]
