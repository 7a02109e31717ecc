"""Text utilities: tokenizing, BM25, redaction of secrets, chatter detection."""

from __future__ import annotations

import math
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourfold.errors import InvalidInput
from fourfold.ranking.bm25 import BM25Index
from fourfold.text import (
    STOPWORDS,
    is_chatter,
    memory_date,
    parse_date,
    redact,
    time_words,
    tokenize,
)
from secrets_corpus import ORDINARY as CORPUS_ORDINARY
from secrets_corpus import PERSONAL as CORPUS_PERSONAL
from secrets_corpus import SECRETS as CORPUS_SECRETS

# -- tokenize -------------------------------------------------------------------------


def test_stopwords_are_a_full_lowercase_english_list() -> None:
    assert 170 <= len(STOPWORDS) <= 320
    assert all(word == word.lower() for word in STOPWORDS)
    assert {"the", "and", "is", "of", "you're", "don't"} <= STOPWORDS


def test_tokenize_lowercases_stems_and_drops_stopwords() -> None:
    assert tokenize("The Deploys were FAILING with 502 errors") == [
        "deploy",
        "fail",
        "502",
        "error",
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["running", "runs", "refunds", "Refunded", "invoices", "parcel", "the", "café",
                                 "généralement", "x", "2023", "cats"]), max_size=12).map(" ".join) | st.text(max_size=30))
def test_tokenize_stems_as_the_snowball_stemmer_does_each_time(text: str) -> None:
    """Stems come from a memo of words seen before: the same as asking the stemmer, every time."""
    import Stemmer

    words = tokenize(text, stem=False)
    assert tokenize(text) == tokenize(text) == Stemmer.Stemmer("english").stemWords(words)


def test_the_tokens_tag_names_these_rules() -> None:
    """Stores keep tokens under `TOKENS_TAG` and trust those of the same tag: a change of the
    rules (stop-words, apostrophes, the word pattern) must bump `_RULES`, and this digest with it.
    The stemmer's release and the Unicode version are in the tag by themselves."""
    import hashlib
    import unicodedata

    import Stemmer

    from fourfold.text.tokenize import _APOSTROPHES, _RULES, _WORD, STOPWORDS, TOKENS_TAG

    sample = [
        "The Deploys were FAILING with 502 errors", "I'm sure we can't ship Zoë's café order to O’Brien's naïve façade",
        "l'été “quoted” 3.5 x_y e-mail ＦＵＬＬ width",
        "Resolved: the webhook to the CRM charges the card twice; clearing the browser cache fixed it.",
        "they'd've rock'n'roll don't DON'T ''' 'tis", "Straße İstanbul ΣΊΣΥΦΟΣ 東京 ١٢٣",
    ]
    made = repr([tokenize(t, stem=False) for t in sample])
    rules = repr((sorted(STOPWORDS), _WORD.pattern, sorted(_APOSTROPHES.items())))
    digest = hashlib.sha256((made + rules).encode()).hexdigest()[:16]
    assert (_RULES, digest) == (1, "63cc0246e231696a"), "tokenize changed: bump _RULES in fourfold.text.tokenize"
    assert TOKENS_TAG == f"t{_RULES}-{Stemmer.version()}-u{unicodedata.unidata_version}"
    assert not any(c.isspace() for c in TOKENS_TAG)


def test_tokenize_without_stemming_keeps_words_whole() -> None:
    assert tokenize("Restarted the workers", stem=False) == ["restarted", "workers"]


def test_tokenize_splits_apostrophes_sensibly() -> None:
    assert tokenize("the customer's card doesn't work", stem=False) == ["customer", "card", "work"]
    assert tokenize("O\u2019Brien can\u2019t log in", stem=False) == ["brien", "log"]


def test_tokenize_keeps_numbers_and_unicode_words_and_splits_underscores() -> None:
    assert tokenize("Order 10293 for Müller, api_key rotated", stem=False) == [
        "order",
        "10293",
        "müller",
        "api",
        "key",
        "rotated",
    ]


def test_tokenize_of_empty_or_stopword_only_text_is_empty() -> None:
    assert tokenize("") == []
    assert tokenize("it is what it is!!") == []


# -- BM25 -----------------------------------------------------------------------------


def _reference_bm25(
    docs: dict[str, list[str]], query: list[str], k1: float = 0.9, b: float = 0.4
) -> dict[str, float]:
    """Textbook Okapi BM25 computed from scratch, for comparison."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n if n else 0.0
    out: dict[str, float] = {}
    for doc_id, tokens in docs.items():
        score = 0.0
        for term in query:
            tf = tokens.count(term)
            if not tf:
                continue
            df = sum(1 for d in docs.values() if term in d)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(tokens) / avgdl))
        if score > 0:
            out[doc_id] = score
    return out


def test_bm25_matches_the_textbook_formula() -> None:
    docs = {
        "a": ["deploy", "502", "worker", "restart"],
        "b": ["refund", "visa", "card"],
        "c": ["deploy", "deploy", "rollback"],
    }
    index = BM25Index()
    for doc_id, tokens in docs.items():
        index.add(doc_id, tokens)
    got = index.scores(["deploy", "502", "deploy"])
    assert got == pytest.approx(_reference_bm25(docs, ["deploy", "502", "deploy"]))
    assert set(got) == {"a", "c"}  # "b" shares no term and is left out


def test_bm25_add_replaces_and_remove_is_idempotent() -> None:
    index = BM25Index()
    index.add("x", ["refund"])
    index.add("x", ["deploy"])
    assert len(index) == 1
    assert "x" in index and "y" not in index
    assert index.scores(["refund"]) == {}
    index.remove("x")
    index.remove("x")
    index.remove("never-added")
    assert len(index) == 0
    assert index.scores(["deploy"]) == {}


def test_bm25_top_orders_best_first_and_breaks_ties_by_id() -> None:
    index = BM25Index()
    index.add("b", ["refund", "card"])
    index.add("a", ["refund", "card"])
    index.add("c", ["refund", "refund", "refund"])
    index.add("d", ["shipping"])
    top = index.top(["refund"], 3)
    assert [doc_id for doc_id, _ in top] == ["c", "a", "b"]
    assert top[0][1] > top[1][1] == top[2][1]
    assert index.top(["refund"], 1) == top[:1]
    assert index.top(["nothing"], 5) == []


def test_bm25_rejects_bad_arguments() -> None:
    index = BM25Index()
    with pytest.raises(InvalidInput):
        index.top(["x"], -1)
    with pytest.raises(InvalidInput):
        index.add("x", "a string is not a token list")
    with pytest.raises(InvalidInput):
        BM25Index(b=2.0)


def test_bm25_weighted_documents_equal_counted_ones_and_scale_smoothly() -> None:
    counted, weighted = BM25Index(), BM25Index()
    counted.add("a", ["deploy", "deploy", "worker"])
    weighted.add_weighted("a", {"deploy": 2, "worker": 1.0, "ignored": 0})
    for index in (counted, weighted):
        index.add("b", ["refund", "card"])
    assert weighted.scores(["deploy", "worker"]) == pytest.approx(counted.scores(["deploy", "worker"]))
    assert weighted.scores(["ignored"]) == {}
    # a word carried at a fraction of a count scores less than one written out
    weighted.add_weighted("c", {"refund": 0.4, "shipping": 1.0})
    scores = weighted.scores(["refund"])
    assert 0 < scores["c"] < scores["b"]
    weighted.remove("c")
    assert weighted.scores(["refund"]) == pytest.approx(counted.scores(["refund"]))
    for bad in ({"x": float("nan")}, {"x": "1"}, {"x": True}):
        with pytest.raises(InvalidInput):
            weighted.add_weighted("d", bad)  # type: ignore[arg-type]


# -- dates -------------------------------------------------------------------------


def test_dates_parse_iso_and_unix_seconds_and_name_month_year_weekday() -> None:
    monday = parse_date("2023-05-08T13:56")
    assert monday is not None and time_words(monday) == ["may", "2023", "monday"]
    assert parse_date("2023-05-08") == monday.replace(hour=0, minute=0)
    zoned = parse_date("2023-05-08T23:30:00-05:00")  # still Monday where it happened
    assert zoned is not None and time_words(zoned)[2] == "monday"
    assert parse_date(0) is not None and time_words(parse_date(0))[:2] == ["january", "1970"]  # type: ignore[arg-type]
    for bad in ("8 May 2023", "", None, True, float("inf"), [2023]):
        assert parse_date(bad) is None
    assert memory_date({"date": "garbage", "occurred_at": "2024-02-29"}) == parse_date("2024-02-29")
    assert memory_date({"date": "2024-02-29"}) == parse_date("2024-02-29")
    assert memory_date({"when": "2024-02-29"}) is None


_ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.sampled_from("abcdefgh"),
            st.lists(st.sampled_from("pqrstuvw"), max_size=8),
        ),
        st.tuples(st.just("remove"), st.sampled_from("abcdefgh"), st.just([])),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(ops=_ops, query=st.lists(st.sampled_from("pqrstuvwz"), min_size=1, max_size=6))
def test_bm25_incremental_equals_rebuilt_from_scratch(
    ops: list[tuple[str, str, list[str]]], query: list[str]
) -> None:
    index = BM25Index()
    docs: dict[str, list[str]] = {}
    for op, doc_id, tokens in ops:
        if op == "add":
            index.add(doc_id, tokens)
            docs[doc_id] = tokens
        else:
            index.remove(doc_id)
            docs.pop(doc_id, None)
    fresh = BM25Index()
    for doc_id, tokens in docs.items():
        fresh.add(doc_id, tokens)
    assert len(index) == len(docs)
    assert index.scores(query) == pytest.approx(fresh.scores(query))
    assert index.scores(query) == pytest.approx(_reference_bm25(docs, query))


# -- redact: secrets ---------------------------------------------------------------------

_rng = random.Random(20240611)


def _rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


_ALNUM = string.ascii_letters + string.digits
_UPPER_NUM = string.ascii_uppercase + string.digits
_B64URL = _ALNUM + "-_"
_JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
_PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu"

# (text, the secret that must vanish, the kind reported)
SECRETS: list[tuple[str, str, str]] = [
    (f"our key is AKIA{_rand(_UPPER_NUM, 16)} in us-east-1", "", "aws_access_key"),
    (f"temporary creds ASIA{_rand(_UPPER_NUM, 16)} expire soon", "", "aws_access_key"),
    (f"aws_secret_access_key = {_rand(_ALNUM + '/+', 40)}", "", "aws_secret_key"),
    (f'AWS_SECRET_ACCESS_KEY="{_rand(_ALNUM + "/+", 40)}"', "", "aws_secret_key"),
    (f"use ghp_{_rand(_ALNUM, 36)} to clone", "", "github_token"),
    (f"oauth token gho_{_rand(_ALNUM, 36)}", "", "github_token"),
    (f"the PAT is github_pat_{_rand(_ALNUM, 22)}_{_rand(_ALNUM, 59)}", "", "github_token"),
    (f"ANTHROPIC_API_KEY sk-ant-api03-{_rand(_B64URL, 93)}AA", "", "anthropic_key"),
    (f"my key sk-ant-admin01-{_rand(_B64URL, 40)} works", "", "anthropic_key"),
    (f"set OPENAI key sk-{_rand(_ALNUM, 48)} please", "", "openai_key"),
    (f"project key sk-proj-{_rand(_B64URL, 120)}", "", "openai_key"),
    (
        f"slack bot xoxb-{_rand(string.digits, 12)}-{_rand(string.digits, 13)}-{_rand(_ALNUM, 24)}",
        "",
        "slack_token",
    ),
    (
        f"user token xoxp-{_rand(string.digits, 11)}-{_rand(string.digits, 11)}-{_rand(_ALNUM, 32)}",
        "",
        "slack_token",
    ),
    (f"stripe sk_live_{_rand(_ALNUM, 24)} in prod", "", "stripe_key"),
    (f"restricted rk_live_{_rand(_ALNUM, 24)}", "", "stripe_key"),
    (f"publishable pk_live_{_rand(_ALNUM, 24)}", "", "stripe_key"),
    (f"maps key AIza{_rand(_B64URL, 35)} restricted to our domain", "", "google_api_key"),
    (f"session {_JWT} expired", _JWT, "jwt"),
    (
        "Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c",
        "9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c",
        "bearer_token",
    ),
    (
        f"-----BEGIN RSA PRIVATE KEY-----\n{_PEM_BODY}\n-----END RSA PRIVATE KEY-----",
        _PEM_BODY,
        "private_key",
    ),
    (
        f"key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{_PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----\nthanks",
        _PEM_BODY,
        "private_key",
    ),
    ("login with password=hunter2 then retry", "hunter2", "password"),
    ("pwd: x7Qz!pl", "x7Qz!pl", "password"),
    ("my password is Tr0ub4dor&3 if that helps", "Tr0ub4dor&3", "password"),
    ("the passcode is 48213.", "48213", "password"),
    ("DB_PASSWORD='s3cr3t pass'", "s3cr3t pass", "password"),
    ("Password: correcthorsebattery", "correcthorsebattery", "password"),
    ("my password was changed to Blue#Whale77", "Blue#Whale77", "password"),
    ("connect to postgres://admin:S3cr3tPw@db.internal:5432/app", "S3cr3tPw", "url_password"),
    ("repo at https://deploy:p@ss:w0rd@git.example.com/x.git", "p@ss:w0rd", "url_password"),
    ("export api_key=4f9a8b7c6d5e", "4f9a8b7c6d5e", "secret"),
    ('{"client_secret": "Zx81kq02LmNn77aa"}', "Zx81kq02LmNn77aa", "secret"),
    ("refresh_token=1//0gAbCdEfGhIjK", "1//0gAbCdEfGhIjK", "secret"),
    ("card 4111 1111 1111 1111 exp 12/27", "4111 1111 1111 1111", "card_number"),
    ("charge 5500-0000-0000-0004 now", "5500-0000-0000-0004", "card_number"),
    ("amex 3782 822463 10005 on file", "3782 822463 10005", "card_number"),
    ("number 4012888888881881", "4012888888881881", "card_number"),
]


def _secret_of(case: tuple[str, str, str]) -> str:
    """The explicit secret, or the token-like word the kind's prefix starts."""
    text, secret, _ = case
    if secret:
        return secret
    prefixes = (
        "AKIA",
        "ASIA",
        "ghp_",
        "gho_",
        "github_pat_",
        "sk-",
        "xox",
        "sk_",
        "rk_",
        "pk_",
        "AIza",
    )
    for word in text.replace('"', " ").split():
        if word.startswith(prefixes) or len(word) == 40:
            return word
    raise AssertionError(f"no secret in {text!r}")


def test_secret_corpus_is_broad() -> None:
    assert len(SECRETS) >= 30
    assert len({kind for _, _, kind in SECRETS}) >= 10


@pytest.mark.parametrize(
    "case", SECRETS, ids=[f"{kind}-{i}" for i, (_, _, kind) in enumerate(SECRETS)]
)
def test_each_secret_is_gone_from_the_output(case: tuple[str, str, str]) -> None:
    text, _, kind = case
    secret = _secret_of(case)
    out, found = redact(text)
    assert secret not in out
    assert found and all(f"[REDACTED:{r.kind}]" in out for r in found)
    if kind in ("jwt", "bearer_token", "private_key", "password", "url_password", "card_number"):
        assert kind in {r.kind for r in found}  # what structure names; vendors' tokens by gitleaks' rule ids


def test_redaction_reports_original_offsets_and_keeps_the_rest() -> None:
    text = "user bob, password=hunter2, ticket TKT-555-0192"
    out, found = redact(text)
    assert out == "user bob, password=[REDACTED:password], ticket TKT-555-0192"
    (r,) = found
    assert text[r.start : r.end] == "hunter2"
    assert r.placeholder == "[REDACTED:password]"


def test_url_credentials_keep_user_and_host() -> None:
    out, _ = redact("mysql://reporting:Xy9zz@10.0.0.5/db")
    assert out == "mysql://reporting:[REDACTED:url_password]@10.0.0.5/db"


def test_several_secrets_in_one_text_are_all_removed() -> None:
    text = "password=hunter2 and card 4242 4242 4242 4242 and AKIAQYLPMN5HHHFPZAM2"
    out, found = redact(text)
    assert "hunter2" not in out and "4242" not in out and "AKIAQYLPMN5HHHFPZAM2" not in out
    assert [r.kind for r in found] == ["password", "card_number", "aws_access_token"]


# -- redact: ordinary support text ------------------------------------------------------


def _luhn_fails(digits: str) -> bool:
    total = sum(
        int(d) if i % 2 == 0 else sum(divmod(int(d) * 2, 10))
        for i, d in enumerate(reversed(digits))
    )
    return total % 10 != 0


def _ordinary_sentences(n: int) -> list[str]:
    rng = random.Random(7)
    templates = [
        "Hi, my order #{oid} placed on {date} still hasn't shipped.",
        "Order {ord} was charged {amount} twice, please refund one.",
        "Ticket {tkt}: customer says the password reset email never arrived.",
        "I forgot my password and can't log in since {date}.",
        "Please call me back at {phone} about invoice INV-{n5}.",
        "The refund of {amount} for order #{oid} was processed on {date}.",
        "Tracking number {tracking} shows delivered but nothing came.",
        "My password is incorrect according to the app, ticket {tkt}.",
        "Customer {name} prefers email over phone; reachable at {phone}.",
        "Account {n8} was upgraded to the Pro plan for {amount} per month.",
        "The token expired at {time} on {date}, so the sync stopped.",
        "Reference number {ref} for the wire transfer of {amount}.",
        "Order {ord} split into two parcels, the second ships {date}.",
        "The secret to fixing it was clearing the cache, thanks!",
        "Your password must be at least 12 characters long.",
    ]
    names = ["Alice Meyer", "Bob O'Neil", "Chen Wei", "Dana Ruiz", "Émile Roux"]
    out = []
    for i in range(n):
        fields = {
            "oid": f"A-{rng.randint(10000, 99999)}",
            "ord": f"ORD-{rng.randint(2019, 2025)}-{rng.randint(100000, 999999)}",
            "date": rng.choice(
                [
                    f"{rng.randint(2019, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    f"{rng.randint(1, 12)}/{rng.randint(1, 28)}/{rng.randint(2019, 2025)}",
                    "March 3, 2024",
                ]
            ),
            "amount": rng.choice(
                [
                    f"${rng.randint(1, 9)},{rng.randint(100, 999)}.{rng.randint(0, 99):02d}",
                    f"€{rng.randint(5, 999)}.00",
                    f"{rng.randint(10, 500)} USD",
                ]
            ),
            "tkt": f"TKT-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
            "phone": rng.choice(
                [
                    f"+1 {rng.randint(200, 999)} {rng.randint(200, 999)} {rng.randint(1000, 9999)}",
                    f"({rng.randint(200, 999)}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
                    f"+44 20 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
                ]
            ),
            "n5": str(rng.randint(10000, 99999)),
            "n8": str(rng.randint(10_000_000, 99_999_999)),
            "tracking": _failing_16_digits(rng),
            "name": rng.choice(names),
            "time": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
            "ref": f"REF{rng.randint(100000, 999999)}",
        }
        out.append(templates[i % len(templates)].format(**fields))
    return out


def _failing_16_digits(rng: random.Random) -> str:
    while True:
        digits = "".join(str(rng.randint(0, 9)) for _ in range(16))
        if _luhn_fails(digits):
            return digits


ORDINARY = _ordinary_sentences(240)


def test_ordinary_support_text_passes_unchanged() -> None:
    assert len(set(ORDINARY)) >= 200
    changed = [(s, redact(s)[0]) for s in ORDINARY if redact(s) != (s, ())]
    assert changed == []


@pytest.mark.parametrize(
    "sentence",
    [
        "I forgot my password",
        "The password is incorrect, please help",
        "password reset link expired",
        "the bearer of this card is my husband",
        "token: expired",
        "Call 555-0192 or 1-800-555-0199 before 2024-12-31",
        "Card ending in 4242 was declined",
        "Serial 1234567812345678 does not register",
    ],
)
def test_near_misses_are_not_redacted(sentence: str) -> None:
    assert redact(sentence) == (sentence, ())


# -- chatter ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "hi",
        "Hello there!",
        "thanks!",
        "Thank you so much!!",
        "ok",
        "OK thanks",
        "sounds good",
        "lol",
        "hahaha",
        "you're welcome",
        "You\u2019re welcome :)",
        "bye",
        "see you later",
        "👍",
        "🙏🙏",
        "...",
        "?!",
        "",
        "   ",
        "thanksss",
        "got it, thanks",
        "no worries",
        "cool cool",
        "Hi there!",
        "hi, thanks",
    ],
)
def test_pleasantries_are_chatter(text: str) -> None:
    assert is_chatter(text)


@pytest.mark.parametrize(
    "text",
    [
        "thanks, the refund to my Visa worked",
        "prefers email over phone",
        "ok, ship it to Berlin",
        "hi, my order A-10293 never arrived",
        "thanks 👍 card ending 4242 works now",
        "42",
        "bye, cancel my subscription",
        "sounds good, upgrade me to Pro",
    ],
)
def test_messages_with_content_are_not_chatter(text: str) -> None:
    assert not is_chatter(text)


_CORPUS = [c.text for c in CORPUS_SECRETS + CORPUS_PERSONAL] + CORPUS_ORDINARY
_PROSE = ["the parcel arrived late", "refund issued on 2024-03-01", "order 1234 5678 9012", "call +44 20 7946 0958",
          "invoice INV-2024-00042", "ticket TKT-555-0192", "dark mode on ios", "Bearer of bad news", "keyboard",
          "passport renewal", "the apiary", "xoxo from Lyon", "4111 1111 1111 1111", "AKIAIOSFODNN7EXAMPLE"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from([t for t, _, _ in SECRETS] + _CORPUS + _PROSE), st.text(max_size=40)), max_size=6),
    st.sampled_from(["secrets", "personal"]),
)
def test_the_cheap_prefilter_never_changes_what_is_redacted(parts: list[str], policy: str) -> None:
    from fourfold.text.redact import _select

    text = " ".join(parts)
    assert _select(text, policy=policy) == _select(text, policy=policy, prefilter=False)  # type: ignore[arg-type]


def test_the_prefilter_skips_text_without_any_trigger() -> None:
    from fourfold.text.redact import _plan

    assert _plan("secrets").applicable("the parcel arrived late and the customer wants a refund") == set()


@pytest.mark.parametrize("text", [
    "Please text me instead.", "I'd prefer the light theme from now on.", "I no longer want paper invoices.",
    "I'd rather have prices in dollars now.",
    pytest.param("I'd prefer metric rather than imperial units.",
                 marks=pytest.mark.xfail(reason="the reader reads it as a first statement", strict=True)),
    "Switch me to the weekly summary.", "I changed my mind: I'd prefer a window seat.",
    "I'd rather have plain packaging, not gift wrap anymore.",
])
def test_a_change_of_preference_is_signalled(text: str) -> None:
    from fourfold.text.preferences import signals_change

    assert signals_change(text)


@pytest.mark.parametrize("text", [
    "I'd prefer the dark theme in the app.", "Please always contact me by email.", "My preferred option is an aisle seat.",
    "I know the monthly summary well.",
    pytest.param("Nowhere in the app can I change the theme.",
                 marks=pytest.mark.xfail(reason="the reader reads it as a change of preference", strict=True)),
])
def test_a_first_statement_is_not_a_change(text: str) -> None:
    from fourfold.text.preferences import signals_change

    assert not signals_change(text)
