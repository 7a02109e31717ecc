"""What a preference is about: an attribute and the value it takes ("prefers email" -> contact_channel = email).

Two wordings of one preference share their slot even when an embedder scores them apart
("Prefers email" / "Likes to be contacted by e-mail": cosine 0.62), and two values of one
attribute ("Prefers email" / "Prefers phone calls") are distinct facts however close they
embed. Consolidation uses both (`fourfold.longterm.consolidate`), and the offline distiller
gives a preference of a kind no rule lists the attribute as its `key`, so an unsignalled
change ("I'd prefer the light theme") still replaces the old value.

The attribute is a kind `fourfold.text.preferences.preference_key` lists, else a generic
one read from the sentence's shape: the head noun of what is preferred ("prefers the *dark*
theme" -> theme = dark, "prices in *euros*" -> price = euros), "my favourite N is V",
"N: V". Values named after "not", "instead of", "rather than", "over" are what the
preference is *not*, and are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fourfold.text.preferences import PREFERENCE_KEYS, preference_key

__all__ = ["Slot", "attribute_key", "derived_key", "key_kind", "slot_of"]


@dataclass(frozen=True, slots=True)
class Slot:
    """A preference's attribute, the values it names (normalised), and whether a rule lists the attribute."""

    attribute: str
    values: frozenset[str]
    listed: bool
    #: the values of the other listed kinds the text names ("email in the *morning*")
    also: frozenset[tuple[str, str]] = frozenset()
    #: what the preference is for ("email *for invoices*"); None when it does not say
    context: frozenset[str] | None = None
    #: the values it says it is not ("text me instead of *email*")
    dropped: frozenset[str] = frozenset()

    def replaces(self, other: Slot) -> bool:
        """Does this preference name `other`'s value as the one it is not ("text me instead of email")?"""
        return self.attribute == other.attribute and bool(other.values) and other.values <= self.dropped

    def agrees(self, other: Slot) -> bool | None:
        """True: the same attribute and value; False: the same attribute, another value (of
        it, or of another listed kind both name), or the same value for other things ("email
        for invoices" / "email for marketing": a multi-valued attribute); None: nothing to
        say (another attribute, a value not named, or only one says what it is for)."""
        if self.attribute != other.attribute or not self.values or not other.values:
            return None
        mine, theirs = _by_key(self.also), _by_key(other.also)
        if self.values != other.values or any(mine[k] != theirs[k] for k in mine.keys() & theirs.keys()):
            return False
        if self.context is None and other.context is None:
            return True
        if self.context is None or other.context is None:
            return None  # one is narrower than the other: the embedder decides
        return self.context == other.context


def _by_key(pairs: frozenset[tuple[str, str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for key, value in pairs:
        out.setdefault(key, set()).add(value)
    return out


_WORD = re.compile(r"[a-z0-9][a-z0-9'’\-]*")
#: Words before a value (at most `_NEGATION_REACH` words back) that say the preference is not it.
_NEGATORS = frozenset({"not", "no", "never", "instead", "than", "over", "longer", "don't", "dont", "stop", "without"})
_NEGATION_REACH = 3
#: Words a listed kind's rule matches that name the attribute, not a value ("contact", "payment").
_GENERIC = frozenset({"contact", "contacted", "language", "pay", "paying", "payment", "deliver", "delivery",
                      "deliveries", "shipping"})
#: Spellings of one value (after lowercasing and dropping hyphens and a plural "s").
_SAME = {"emailed": "email", "mail": "post", "letter": "post", "phoned": "phone", "call": "phone",
         "calling": "phone", "texting": "text", "sms": "text", "noon": "midday", "lunchtime": "midday"}

# -- the generic attribute ------------------------------------------------------------------------
#: A preference cue; what follows it is what is preferred.
_CUE = re.compile(
    r"\b(?:prefers?|preferring|preferred option is|preference is(?: for)?|rather [a-z]+"
    r"|would like|'d like|likes?|wants?|always (?:use|want)|only (?:use|want)|go(?:es)? for|choose|chooses|opt for)\b"
)
#: "my favourite font is ...", "their preferred seat is ...": the attribute is named.
_NAMED = re.compile(r"\b(?:my|our|their|his|her) (?:preferred|favou?rite|usual) ([a-z][\w\-]*(?: [a-z][\w\-]*)?) (?:is|are)\b")
#: Who said it, before what was said ("Customer said: ...", the distiller's wording).
_SPEAKER = re.compile(r"^\s*(?:[a-z]+ ){0,2}(?:said|says|wrote|asked)\s*:\s*")
#: "Preferred font: serif", "seat: aisle".
_LABEL = re.compile(r"^(?:preferred |favou?rite )?([a-z][\w\-]*(?: [a-z][\w\-]*)?)\s*[:=]\s*")
#: "The dark theme is their preferred look", "Prices in euros are what they prefer": the subject is what is preferred.
_SUBJECT = re.compile(
    r"^(.{1,60}?) (?:is|are) (?:(?:my|our|their|his|her|the) (?:preferred|favou?rite)"
    r"|what (?:i|we|they|he|she) (?:prefers?|wants?|likes?))\b"
)
#: Words a noun phrase does not start with.
_LEADING = frozenset({"a", "an", "the", "my", "our", "your", "their", "his", "her", "some", "to", "be", "have", "get",
                      "use", "see", "receive", "it", "me", "us", "them", "having", "getting", "using", "always", "only",
                      "please", "just", "really", "much", "more", "also", "still"})
#: Prepositions a preferred phrase may start with ("would rather sit *in* a window seat").
_LEADING_PREPOSITION = frozenset({"in", "on", "at", "with", "by", "for", "to", "into"})
#: Words that end a noun phrase: a preposition, a conjunction, a change signal.
_BOUNDARY = frozenset({"in", "at", "on", "for", "of", "when", "while", "with", "by", "via", "instead", "rather", "than",
                       "over", "from", "now", "not", "and", "or", "but", "to", "please", "if", "because", "so",
                       "anymore", "any", "as", "these", "going", "whenever", "where", "since", "until", "is", "are",
                       "thanks", "thank", "too", "again", "then"})
#: A participle after the phrase says what to do with it ("the dark theme turned on", "prices shown in euros").
_PARTICIPLES = frozenset({"turned", "switched", "set", "enabled", "shown", "used", "selected", "applied", "kept",
                          "displayed", "written", "sent", "given", "listed"})
#: Prepositions whose object is the value of a bare attribute ("prices in euros", "invoices as paper").
_VALUE_PREPOSITION = frozenset({"in", "as", "by", "via", "on", "with"})
#: Attribute words too vague to name one ("my preferred option is ...", "prefers things ...").
_VAGUE = frozenset({"option", "choice", "thing", "things", "one", "way", "kind", "type", "setting", "look", "style"})
_MAX_PHRASE = 4


def slot_of(text: str) -> Slot | None:
    """The attribute and value a preference states; None when it names none this can read."""
    lowered = _SPEAKER.sub("", text.lower().replace("’", "'"), count=1)
    key = preference_key(lowered)
    context = _context(lowered)
    if key in _LISTED:
        also = frozenset((k, v) for k, _ in PREFERENCE_KEYS if k != key for v in _listed_values(k, lowered))
        dropped = _listed_values(key, lowered, negated=True)
        return Slot(key, _listed_values(key, lowered), True, also, context, dropped)
    found = _generic(lowered)
    if key is not None:  # a kind the reader names but no value list has: its values by the sentence's shape
        return Slot(key, found[1] if found is not None else frozenset(), False, context=context)
    return Slot(found[0], found[1], False, context=context) if found is not None else None


_LISTED = dict(PREFERENCE_KEYS)


def attribute_key(text: str) -> str | None:
    """A `key` for a preference of a kind no rule lists: its generic attribute ("theme"), or None."""
    if preference_key(text) is not None:
        return None
    found = _generic(_SPEAKER.sub("", text.lower().replace("’", "'"), count=1))
    # without a value read apart, the "attribute" may be the value itself ("I'd prefer vegan")
    return found[0] if found is not None and found[1] else None


def derived_key(text: str) -> str | None:
    """A stated preference's key: the kind a rule lists (`preference_key`), else its generic attribute."""
    return preference_key(text) or attribute_key(text)


def key_kind(key: str) -> str:
    """What a memory key is about: the listed kind (`PREFERENCE_KEYS`) its name names
    ("contact", "preferred_contact" -> contact_channel), else the key itself. Keys of one kind
    name one value of a scope (`fourfold.longterm.namespace`). The name is read by the kinds'
    own patterns: a bare key is no sentence for the reader to read."""
    words = key.replace("_", " ").replace("-", " ")
    return next((kind for kind, pattern in PREFERENCE_KEYS if kind == key or pattern.search(words)), key)


_CONTEXT_CUE = re.compile(r"\b(?:for|about|regarding|when it comes to)\b")


def _context(text: str) -> frozenset[str] | None:
    """The words of what a preference is for ("for order updates" -> {order, update}), or None."""
    cue = _CONTEXT_CUE.search(text)
    if cue is None:
        return None
    words = _phrase(text[cue.end():])[0]
    return frozenset(_normal(w) for w in words) or None


def _normal(word: str) -> str:
    word = word.replace("-", "").replace(" ", "").replace("'", "")
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return _SAME.get(word, word)


def _negated(text: str, start: int) -> bool:
    before = _WORD.findall(text[:start])[-_NEGATION_REACH:]
    return any(w in _NEGATORS for w in before)


def _listed_values(key: str, text: str, *, negated: bool = False) -> frozenset[str]:
    """The values of a listed kind the text names (with `negated`, those it says it is not)."""
    pattern = dict(PREFERENCE_KEYS)[key]
    return frozenset(
        _normal(m.group()) for m in pattern.finditer(text)
        if m.group() not in _GENERIC and _negated(text, m.start()) == negated
    )


def _generic(text: str) -> tuple[str, frozenset[str]] | None:
    """(attribute, values) from the sentence's shape, or None."""
    named = _NAMED.search(text)
    if named is not None and named.group(1).split()[-1] not in _VAGUE:
        values = _phrase(text[named.end():])[0]
        return _attribute(named.group(1).split()), frozenset(_normal(v) for v in values)
    label = _LABEL.match(text)
    if label is not None and label.group(1).split()[-1] not in _VAGUE:
        values = _phrase(text[label.end():])[0]
        return _attribute(label.group(1).split()), frozenset(_normal(v) for v in values)
    subject = _SUBJECT.match(text)
    if subject is not None:
        return _split(subject.group(1) + " .")
    cue = _CUE.search(text)
    if cue is not None:
        return _split(text[cue.end():])
    return None


def _phrase(text: str) -> tuple[list[str], str | None, str]:
    """The noun phrase `text` starts with (leading words dropped), the word that ended it, and the rest."""
    words: list[str] = []
    pos = 0
    for match in _WORD.finditer(text):
        gap = text[pos:match.start()]
        if words and any(c in gap for c in ",;.!?:("):
            return words, None, text[match.start():]
        word = match.group().strip("'-")
        pos = match.end()
        if not words and (word in _LEADING or word in _LEADING_PREPOSITION):
            continue
        if word in _BOUNDARY or word in _PARTICIPLES or len(words) == _MAX_PHRASE:
            return words, word, text[match.end():]
        words.append(word)
    return words, None, ""


def _split(text: str) -> tuple[str, frozenset[str]] | None:
    """A preferred noun phrase as (head noun, its modifiers), or a bare one with its
    prepositional object as the value ("prices in euros")."""
    words, ended, rest = _phrase(text)
    if ended in _PARTICIPLES:  # "prices shown in euros": what follows the participle
        after = _WORD.match(rest.lstrip())
        ended, rest = (after.group(), rest.lstrip()[after.end():]) if after is not None else (None, "")
    if not words or words[-1] in _VAGUE:
        if words and len(words) > 1:  # "the dark option": the modifiers still say something
            words = words[:-1]
        else:
            return None
    if len(words) > 1:
        return _attribute(words[-1:]), frozenset(_normal(w) for w in words[:-1])
    if ended in _VALUE_PREPOSITION:
        values, _, _ = _phrase(rest)
        return _attribute(words), frozenset(_normal(w) for w in values)
    return _attribute(words), frozenset()


def _attribute(words: list[str]) -> str:
    return "_".join(_normal(w) for w in words if w not in _LEADING) or "preference"
