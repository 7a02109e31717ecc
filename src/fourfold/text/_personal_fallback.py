"""The personal-details rules that came before the reader, kept beside it as a second line.

`fourfold.text._personal_rules` runs them after the reader's own rules: a name, address or
order, account or ticket number that either finds is removed from a shared case, because a
span the reader misses would reach another customer. They go once the reader finds all they
find (`benchmarks/learning.py` counts leaks with and without them).
"""

from __future__ import annotations

from collections.abc import Iterator

from fourfold.text._rules import Rule, compile_re2, regex_rule
from fourfold.text.names import GIVEN_NAMES, NOT_A_NAME

__all__ = ["PERSONAL_RULES"]

# Regions whose national formats are tried besides international (+...) numbers.
_PHONE_REGIONS = ("US", "GB")
# "Maria", "O'Sullivan", "Vasquez-Lindqvist", "McDonald", "d'Arcy" is left to the cues.
_NAME_WORD = r"(?:[A-Z][a-zà-ÿ]+(?:[A-Z][a-zà-ÿ]+)?|[A-Z]['’][A-Z][a-zà-ÿ]+)(?:['’\-][A-Za-zà-ÿ][a-zà-ÿ]+)*"
_TITLE = r"(?:(?:Mr|Mrs|Ms|Mx|Miss|Dr|Prof)\.?\s+)"


def _find_phones(text: str) -> Iterator[tuple[int, int]]:
    # Imported on first use: its metadata tables slow every cold command (`fourfold recall`),
    # and only the "personal" policy looks for phone numbers.
    import phonenumbers

    for region in _PHONE_REGIONS:
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            yield match.start, match.end


# Numbers written like a phone number even when no numbering plan knows them (unassigned
# area codes, fictional ranges): 9-15 digits in groups, but not a date, a card or a version.
# RE2 has no lookarounds: what may not stand before or after the number is checked on each match.
_PHONE_SHAPE = compile_re2(r"(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,5}\)[ .\-]?|\d{2,5}[ .\-])\d{2,6}(?:[ .\-]\d{2,6}){0,3}")
_DATE_SHAPE = compile_re2(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}")


def _find_phone_shapes(text: str) -> Iterator[tuple[int, int]]:
    for match in _PHONE_SHAPE.finditer(text):
        start, end = match.span()
        before, after = text[start - 1 : start], text[end : end + 2]
        if before and (before.isalnum() or before in "_+.-/"):
            continue
        if after[:1] and (after[0].isalnum() or after[0] in "_-/" or (after[0] == "." and after[1:2].isdigit())):
            continue
        value = match.group()
        digits = sum(c.isdigit() for c in value)
        if 9 <= digits <= 15 and not _DATE_SHAPE.fullmatch(value):
            yield start, end


_NAME_AFTER_CUE = compile_re2(
    r"(?i:\b(?:my name is|name:|i am|i'm|this is|call(?:ed)?|spoke (?:to|with)|talked to|ask(?:ed)? for|"
    r"e-?mailed|texted|messaged|wrote to|replied to|rang|phoned|"
    r"hi|hello|hey|dear|thanks|thank you|mr\.?|mrs\.?|ms\.?|miss|dr\.?|customer|contact|cc|"
    r"regards,?|cheers,?|best,?|signed,?)\s+)"
    rf"{_TITLE}?({_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}})"
)
# "Thandiwe confirmed ...", "Oluwaseun Adeyemi here.": a capitalized word reporting something,
# or introducing themselves, is a person, known name or not.
_NAME_BEFORE_VERB = compile_re2(
    rf"({_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}})\s+(?:confirmed|said|says|reported|wrote|asked|replied|agreed|"
    r"mentioned|emailed|phoned|told|explained|noticed|complained|tried|prefers|wants|needs)\b|"
    rf"({_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}})\s+here[.,!:]"  # "Oluwaseun Adeyemi here."
)
_CAPITALIZED_RUN = compile_re2(rf"\b{_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}}")


_WORD = compile_re2(r"\S+")


def _name_span(text: str, start: int, end: int, *, need_given: bool) -> tuple[int, int] | None:
    """Trim a run of capitalized words to the words that look like a name."""
    words = [(m.start() + start, m.end() + start) for m in _WORD.finditer(text[start:end])]
    kept = []
    for i, (s, e) in enumerate(words):
        word = text[s:e]
        if word in NOT_A_NAME:
            break
        if i == 0 and need_given and word not in GIVEN_NAMES:
            return None
        kept.append((s, e))
    return (kept[0][0], kept[-1][1]) if kept else None


def _find_names(text: str) -> Iterator[tuple[int, int]]:
    for match in _NAME_AFTER_CUE.finditer(text):
        span = _name_span(text, *match.span(1), need_given=False)
        if span:
            yield span
    for match in _NAME_BEFORE_VERB.finditer(text):
        span = _name_span(text, *match.span(match.lastindex or 1), need_given=False)
        if span:
            yield span
    for match in _CAPITALIZED_RUN.finditer(text):
        span = _name_span(text, *match.span(), need_given=True)
        if span:
            yield span


_STREET = (
    r"Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Boulevard|Blvd|Drive|Dr|Way|Court|Ct|Place|Pl|"
    r"Terrace|Close|Crescent|Parkway|Pkwy|Highway|Hwy|Square|Sq|Circle|Cir|Trail|Row|Walk|"
    r"Grove|Gardens|Mews|Hill|Park"
)
_US_STATES = (
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH "
    "NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY"
).replace(" ", "|")
_UK_POSTCODE = r"[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2}"
_ADDRESS_TAIL = (
    r"(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|Flat|Floor|Fl|\#)\.?\s*[\w\-]+)?"
    # City words have a lowercase letter, so "Leeds LS1 4DY" leaves the postcode to its rule below.
    r"(?:,\s*[A-Z][a-z][A-Za-z'’.\-]*(?:\s[A-Z][a-z][A-Za-z'’.\-]*){0,2}){0,2}"
    rf"(?:,?\s+(?:(?:{_US_STATES})\s+\d{{5}}(?:-\d{{4}})?|{_UK_POSTCODE}))?"
)

_ADDRESSES = (
    regex_rule(
        "postal_address",
        rf"\b\d{{1,6}}[A-Za-z]?(?:[-/]\d+)?,?\s+(?:[A-Z][A-Za-z'’.\-]*\s+){{1,4}}(?:{_STREET})\b\.?{_ADDRESS_TAIL}",
        gate=r"\d", policy="personal",
    ),
    regex_rule(
        "postal_address",
        r"(?:^|[^\pL\pN_])([A-ZÄÖÜ][a-zäöüß]+(?:straße|strasse|str\.|weg|gasse|platz|allee|ring|damm)\s+\d{1,4}[a-z]?\b"
        r"(?:,\s*\d{5}\s+[A-ZÄÖÜ][a-zäöüß]+)?)",
        triggers=("straße", "strasse", "str.", "weg ", "gasse", "platz", "allee", "ring ", "damm"), group=1, policy="personal",
    ),
    regex_rule(
        "postal_address",
        r"\b\d{1,4}(?:\s?(?:bis|ter))?,?\s+(?:rue|avenue|boulevard|chemin|place|allée|impasse|quai)\s+"
        r"(?:(?:de la|des|du|de|d'|l')\s?)?[A-Z][\pL\pN_'’\-]+(?:\s+[A-Z][\pL\pN_'’\-]+)*",
        triggers=("rue ", "avenue ", "boulevard ", "chemin ", "place ", "allée ", "impasse ", "quai "), policy="personal",
    ),
    regex_rule("postal_address", r"\bP\.?\s?O\.?\s+Box\s+\d+", triggers=("box",), policy="personal", ignore_case=True),
    regex_rule("postal_address", rf"\b{_UK_POSTCODE}\b", gate=r"[A-Z]\d", policy="personal"),
    regex_rule("postal_address", rf"\b(?:{_US_STATES})\s+\d{{5}}(?:-\d{{4}})?\b", gate=r"[A-Z]{2}\s+\d{5}", policy="personal"),
)

_ID = r"(\#?[A-Za-z]{0,6}[\-#]?\d[\w\-/]*(?:[ ]\d{2,}){0,4})"
_IDENTIFIERS = (
    regex_rule(
        "order_number",
        r"\b(?:order|tracking|invoice|booking|reservation|confirmation|rma|reference|ref|receipt|shipment|parcel|transaction|txn)"
        rf"(?:\s*(?:number|no\.?|num|id|code))?\s*(?:is|was|:|=)?\s*{_ID}",
        triggers=("order", "tracking", "invoice", "booking", "reservation", "rma", "ref", "receipt", "shipment", "parcel", "transaction", "txn"),
        group=1, check=lambda v: sum(c.isdigit() for c in v) >= 3, ignore_case=True, policy="personal",
    ),
    regex_rule(
        "account_number",
        r"\b(?:account|acct|customer|member(?:ship)?|policy|contract|subscription|loyalty|user|client)"
        rf"(?:\s*(?:number|no\.?|num|id))?\s*(?:is|was|:|=)?\s*{_ID}",
        triggers=("account", "acct", "customer", "member", "policy", "contract", "subscription", "loyalty", "user", "client"),
        group=1, check=lambda v: sum(c.isdigit() for c in v) >= 3, ignore_case=True, policy="personal",
    ),
    regex_rule(
        "ticket_number",
        rf"\b(?:ticket|case|claim|incident|issue)(?:\s*(?:number|no\.?|num|id))?\s*(?:is|was|:|=)?\s*{_ID}",
        triggers=("ticket", "case", "claim", "incident", "issue"),
        group=1, check=lambda v: sum(c.isdigit() for c in v) >= 3, ignore_case=True, policy="personal",
    ),
    regex_rule(
        "order_number",
        r"(?:^|[^\w#])((?:ORD|ORDER|INV|REF|RMA|PO|SO|BK|TRK)[\-#]?\d[\w\-]*|\#\d{4,}|[A-Z]-\d{4,})",
        gate=r"\d{3}", group=1, policy="personal",
    ),
    regex_rule("ticket_number", r"(?:^|[^\w#])((?:TKT|TICKET|CASE|INC|SR)[\-#]?\d[\w\-]*)", gate=r"\d", group=1, policy="personal"),
    regex_rule("account_number", r"(?:^|[^\w#])((?:ACC|ACCT|CUST|CID|MBR)[\-#]?\d[\w\-]*)", gate=r"\d", group=1, policy="personal"),
    regex_rule("card_number", r"\b(?:card|visa|mastercard|amex)\s+(?:ending|ends)\s+(?:in|with)\s+(\d{4})\b", triggers=("ending", "ends"), group=1, ignore_case=True, policy="personal"),
)

_CONTACT = r"(?:contact|call|e-?mail|text|phone|ring|message|write)"
_CHANNEL = r"(?:contact|call|e-?mail|text|phone|ring|message|write|send|reach|mail|use|reply|answer)"
# A stated preference runs from its cue to the end of the clause: "please always contact me by
# email, never by phone". It says how to treat this one customer, so it is never shared.
_PREFERENCE_CUE = (
    r"(?i:\bI(?:'d|’d| would)? (?:prefer|rather)\b|\bmy (?:preferred|favou?rite)\b|\bI (?:always|only) (?:use|want)\b"
    rf"|\b(?:please )?(?:always|only|never|don't|don’t|do not) (?:\w+ ){{0,2}}?{_CONTACT}\b"
    rf"|\b{_CHANNEL} me (?:only |instead |always )?(?:by|via|through|over|on|in|instead)\b"
    r"|\bplease (?:e-?mail|text|message|whatsapp|sms) me\b"
    r"|\b(?:reply|answer|respond|write|speak|talk)(?: to me)? (?:only |always )?in (?:english|spanish|french|german"
    r"|italian|portuguese|dutch|polish|turkish|arabic|chinese|japanese|korean|russian|hindi|swedish|danish)\b)"
)
_PREFERENCES = (
    # To the clause's end: a "." inside a word (an email address, "v2.1") does not end it.
    regex_rule("preference", _PREFERENCE_CUE + r"(?:[^.!?\n;]|[.!?]\w)*", gate=_PREFERENCE_CUE, policy="personal"),
)

_PHONES_GATE = compile_re2(r"\d(?:\D{0,3}\d){6}")
_SHAPES_GATE = compile_re2(r"\d[ .\-)]\(?\d")

PERSONAL_RULES: tuple[Rule, ...] = (
    regex_rule("email", r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b", triggers=("@",), policy="personal"),
    Rule("phone", _find_phones, "personal", gate=_PHONES_GATE, patterns=(_PHONES_GATE,)),
    Rule("phone", _find_phone_shapes, "personal", gate=_SHAPES_GATE, patterns=(_SHAPES_GATE, _PHONE_SHAPE, _DATE_SHAPE)),
    regex_rule(
        "phone",
        r"\b(?:call|phone|tel|telephone|mobile|cell|text|sms|whatsapp|fax)\b\D{0,12}?(\+?\d[\d\s().\-]{5,}\d)",
        triggers=("call", "phone", "tel", "mobile", "cell", "text", "sms", "whatsapp", "fax"),
        group=1, ignore_case=True, policy="personal",
    ),
    *_ADDRESSES,
    *_IDENTIFIERS,
    Rule("name", _find_names, "personal", patterns=(_NAME_AFTER_CUE, _NAME_BEFORE_VERB, _CAPITALIZED_RUN, _WORD)),
    *_PREFERENCES,
)
