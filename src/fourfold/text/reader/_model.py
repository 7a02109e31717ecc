"""The reader's weights (package data) and the heads that apply them."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from fourfold.errors import ModelError

__all__ = ["KEYS", "KEY_CLASSES", "ROLES", "SPAN_KINDS", "WEIGHTS", "Heads", "heads"]

#: What a sentence does in a support conversation.
ROLES = ("problem", "fix", "preference", "preference_change", "contact", "question", "chatter")
#: The preference keys the model was trained on; a scope's own keys extend them (`read(keys=)`).
KEYS = ("contact_channel", "language", "time_of_day", "day_of_week", "payment_method", "delivery",
        "document_format", "units", "currency", "theme", "notification_frequency")
#: The key head's classes: `KEYS`, and a preference of another kind (its key is read elsewhere).
KEY_CLASSES = (*KEYS, "other")
#: What a span of identifying text is.
SPAN_KINDS = ("person", "organisation", "place", "street_address", "account", "order", "tenant", "host", "user_name",
              "birth_date", "spelled_number", "network_address", "credential", "email", "phone")
WEIGHTS = Path(__file__).with_name("reader.npz")


class Heads:
    """Three linear heads over hashed features: token kinds, sentence roles, preference keys."""

    def __init__(self, path: Path) -> None:
        try:
            with np.load(path) as data:
                self.tokens = _dequantized(data["tokens"], data["tokens_scale"])
                self.roles = _dequantized(data["roles"], data["roles_scale"])
                self.keys = _dequantized(data["keys"], data["keys_scale"])
        except (OSError, KeyError, ValueError) as exc:
            raise ModelError(f"the reader's weights at {path} cannot be read ({exc}); "
                             "retrain with python -m fourfold.text.reader.train") from exc
        if self.tokens.shape[1] != 1 + len(SPAN_KINDS) or self.roles.shape[1] != len(ROLES):
            raise ModelError(f"the reader's weights at {path} do not match this version's labels")

    @staticmethod
    def scores(weights: np.ndarray, rows: list[list[int]]) -> np.ndarray:
        """Class probabilities of each row of feature buckets."""
        if not rows:
            return np.zeros((0, weights.shape[1]), dtype=np.float32)
        logits = np.stack([weights[row].sum(axis=0) for row in rows]) + weights[-1]
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        probs: np.ndarray = exp / exp.sum(axis=1, keepdims=True)
        return probs


def _dequantized(weights: np.ndarray, scale: np.ndarray) -> np.ndarray:
    out: np.ndarray = weights.astype(np.float32) * scale
    return out


@cache
def heads() -> Heads:
    """The shipped weights, loaded once."""
    return Heads(WEIGHTS)
