"""Secrets found by their structure, whoever issued them.

A credential is recognised by where it stands and what it is made of, not by a list of
vendors: the value of a field or flag named for a credential (in any config, shell, header
or query syntax), the rest of an Authorization header of any scheme, a cookie, a URL's
userinfo, key material (armoured or not, found by decoding it), base64 that decodes to a
credential, and a random-looking token in a sentence about a credential. Random-looking
values that are named as public identifiers (a commit, a checksum, a UUID, a public key, an
address) stay.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterator
from typing import Any

from fourfold._ids import is_record_id
from fourfold.text import _shapes as shapes
from fourfold.text._credentials import (
    CONTEXT_WORDS,
    COPULAS,
    PASSWORD_WORDS,
    PUBLIC_WORDS,
    SEPARATORS,
    SKIP_WORDS,
    NameKind,
    name_kind,
    name_words,
)
from fourfold.text._rules import (
    NOT_A_VALUE,
    compile_re2,
    long_or_mixed,
    number_like,
    plausible_value,
)

__all__ = ["KINDS", "PATTERNS", "Finding", "find_structure"]

#: The kinds structure reports, the most specific first: of two findings with the same
#: span, the earlier kind here names it.
KINDS = (
    "private_key", "url_password", "url_token", "webhook_url", "bearer_token", "basic_auth", "authorization", "cookie",
    "jwt", "password", "passphrase", "encoded_secret", "secret", "token",
)

#: (start, end, kind) of one secret in the text searched.
Finding = tuple[int, int, str]
#: Finds secrets in a decoded text (the whole detector, so base64 hides nothing).
Nested = Callable[[str], bool]

_NAME = r"[A-Za-z_$@][A-Za-z0-9_.$\-]{0,80}"
_VALUE = r"\"[^\"\n]{0,400}\"|'[^'\n]{0,400}'|`[^`\n]{0,400}`|[^\s\"'`<>,;&]{1,400}"
# `name = value`, `name: value`, `"name": "value"`, `name := value`, `name => value`, with the
# name of an env var, a YAML/TOML/INI key, a JSON member, a header, a query parameter.
_ASSIGN = compile_re2(rf"({_NAME})[\"'\]]?[ \t]*(?::=|=>|->|=|:)[ \t]*({_VALUE})")
# `<password>value</password>`
_ELEMENT = compile_re2(rf"<({_NAME})>([^<\n]{{1,400}})</")
# `export NAME value` style with a space (Dockerfile ENV, fish's set -x, Windows setx).
_SPACED = compile_re2(rf"(?i)(?:^|\s)(?:env|setx|set -x|set -gx)[ \t]+({_NAME})[ \t]+({_VALUE})")
# A command-line flag with its value: `--db-password s3cret`, `--token=abc`, `-p'x'`.
_FLAG = compile_re2(rf"(?:^|[\s\"'])(--?[A-Za-z][A-Za-z0-9_\-]{{0,60}})(?:=|[ \t]+)({_VALUE})")
_SHORT_P = compile_re2(r"(?:^|\s)-p([^\s\-][^\s]{3,200})")
# Any Authorization header, any scheme: the scheme stays, the credentials go.
_AUTH_HEADER = compile_re2(
    r"(?i)([\"']?)(?:proxy-)?authori[sz]ation[\"']?[ \t]*[:=][ \t]*[\"']?(?:([A-Za-z][A-Za-z0-9_.\-]{0,30})[ \t]+)?([^\s\"'][^\n]{0,1000})"
)
_BEARER = compile_re2(r"(?i)\b(?:bearer|token)[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)")
_COOKIE = compile_re2(r"(?i)\b(set-)?cookie[\"']?[ \t]*[:=][ \t]*([^\n\"']{1,1000})")
_COOKIE_ATTRIBUTES = frozenset("path domain expires max-age samesite secure httponly priority partitioned version comment".split())
_URL = compile_re2(r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s<>\"'`]+")
_USERINFO = compile_re2(r"(?i)^[a-z][a-z0-9+.\-]{1,20}://([^\s:/@]*)(?::([^\s/]*))?@[^\s@/]")
_HOOK_PATH = compile_re2(r"(?i)hook")
_ARMOUR_BEGIN = compile_re2(r"-----BEGIN ([A-Z0-9 ]{1,60})-----")
_ARMOUR_END = compile_re2(r"-----END ([A-Z0-9 ]{1,60})-----")
_PUTTY = compile_re2(r"(?i)private-lines:[ \t]*\d+[ \t]*\r?\n((?:[A-Za-z0-9+/=]{8,}\r?\n?)+)")
_JWT = compile_re2(r"[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{0,1000}")
_TOKEN = compile_re2(r"[A-Za-z0-9+/_\-.~]{12,}={0,3}")
_CLAUSE_END = compile_re2(r"[.!?;\n]\s")
_CONTEXT = compile_re2("(?i)(" + "|".join(sorted((w.replace(" ", r"\s") for w in CONTEXT_WORDS), key=len, reverse=True)) + ")")
# The marks that join the words of a name: `a_b`, `a.b`, `a:b`, `a/b`, `a-b`.
_JOINS = str.maketrans(dict.fromkeys("_.:/-", "\x00"))
_AFFIXED_HEX = compile_re2(r"(?i)([a-z]{2,12})[-_]?([0-9a-f]{32,})|([0-9a-f]{32,})[-_]([a-z0-9]{1,6})")
_DIGEST_PREFIX = compile_re2(r"(?i)(?:sha(?:1|224|256|384|512)|sha3-\d+|md5|blake2[bs]?|xxh\d*)[-:_]")
_PHRASE_WORDS = compile_re2(r"(?i)\b(?:pass\s?phrase|seed\s+phrase|recovery\s+phrase|mnemonic|seed\s+words|recovery\s+words)\b")

PATTERNS = (
    _ASSIGN, _ELEMENT, _SPACED, _FLAG, _SHORT_P, _AUTH_HEADER, _BEARER, _COOKIE, _URL, _USERINFO,
    _HOOK_PATH, _ARMOUR_BEGIN, _ARMOUR_END, _PUTTY, _JWT, _TOKEN, _CLAUSE_END, _CONTEXT,
    _PHRASE_WORDS, _DIGEST_PREFIX, _AFFIXED_HEX,
)


def _unquoted(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without its quotes, and without the punctuation that ends a sentence."""
    if end - start >= 2 and text[start] in "\"'`“«" and text[end - 1] in "\"'`”»":
        return start + 1, end - 1
    while end > start and text[end - 1] in ".,;:)!?]}\"'`”»":
        end -= 1
    while start < end and text[start] in "\"'`“«(":
        start += 1
    return start, end


def _masked(value: str) -> bool:
    """`********`, `...x7Qa`, `••••1234`: a value shown masked, not the value."""
    return value.startswith(("...", "…", "*", "•", "x" * 4, "X" * 4)) or "****" in value or "••" in value


def _password_value(value: str) -> bool:
    if not value or shapes.placeholder(value) or not plausible_value(value) or "://" in value or value[0] == "<" or _masked(value):
        return False
    if _names_itself(value):
        return False
    if value.isdigit():
        return len(value) >= 4
    if number_like(value):
        return False
    return len(value) >= 4


def _names_itself(value: str) -> bool:
    """`newpassword`, `mysecretkey`: letters only, naming the credential they stand for (a
    sample's stand-in); a real one with a digit or a symbol is not excused."""
    lowered = value.lower()
    return value.isalpha() and any(word in lowered for word in ("pass", "secret", "token", "key", "pwd"))


def _secret_value(value: str) -> bool:
    return not _names_itself(value) and not shapes.placeholder(value) and not _masked(value) and "://" not in value and (long_or_mixed(value) or shapes.looks_random(value, min_len=8))


def _code(value: str, quoted: bool) -> bool:
    """A value that is code or a placeholder, not a literal: a call, an index, an attribute
    (`request.form['password']`, `process.env.API_KEY`), a template (`${{ secrets.X }}`,
    `f"{user}"`), a variable named for a credential (`hashed_password`), or words joined
    without a digit (`your_api_key_here`, `valid_token`)."""
    if "{" in value or "${" in value or value[:1] == "%":
        return True  # a template
    if value[:1] == "/" and value.count("/") >= 2 and not any(shapes.looks_random(p, min_len=16) for p in value.split("/")):
        return True  # a path
    if not quoted and (any(c in value for c in "()[]") or value[:1] in "$@"):
        return True
    if not quoted and name_kind(value) is not None and not any(c.isdigit() for c in value):
        return True  # a variable named for a credential; "hunter2secret" is a value that ends like one
    if not quoted and value.lower() in _CODE_WORDS:
        return True
    return _identifier([p for p in value.translate(_JOINS).split("\x00") if p])


# Keywords and type names that stand where a value would in code (`password: String`).
_CODE_WORDS = frozenset(
    "async await function lambda new self this cls null none nil true false undefined string str int integer "
    "number boolean bool object any bytes text varchar char required optional".split()
)


def _identifier(parts: list[str]) -> bool:
    """Parts of a constant, a dotted or a path-like name (`TLS_AES_256_GCM_SHA384`,
    `trt.BuilderFlag.FP16`, `arn:aws:acm:REGION:ACCOUNT_ID`): two or more, each made of a few
    words as camelCase splits them. A random token's parts split into many short scraps."""
    if not 2 <= len(parts) <= 64:
        return False
    for part in parts:
        if part.isdigit():
            continue
        if shapes.looks_random(part, min_len=10):
            return False
        words = name_words(part)
        if len(words) > 5 or any(len(w) > 24 or (len(w) < 2 and not w.isdigit() and len(words) > 1) for w in words):
            return False
        if any(len(w) > 12 and not w.isalpha() for w in words):
            return False
    return True


def _value_of(kind: NameKind, value: str) -> str | None:
    """The kind to report for `value` in a field of `kind`, or None if it holds no secret."""
    if kind == "password":
        return "password" if _password_value(value) else None
    return "secret" if _secret_value(value) else None


def _matches(text: str) -> Iterator[tuple[Any, int]]:
    """Every field match with the offset of the text it was found in. A value that holds
    another field ("Note: DB_PASSWORD='x'") is read again from its start, once."""
    for pattern in (_ASSIGN, _ELEMENT, _SPACED):
        for match in pattern.finditer(text):
            yield match, 0
            value_at = match.start(2)
            value_length = match.end(2) - value_at
            if pattern is _ASSIGN and any(c in match.group(2) for c in "=:"):
                line_end = text.find("\n", value_at)
                inner = text[value_at : min(len(text) if line_end < 0 else line_end, value_at + value_length + 200)]
                for nested in _ASSIGN.finditer(inner):
                    if nested.start() >= value_length:
                        break  # past the value: the outer search finds it
                    yield nested, value_at


def _assignments(text: str) -> Iterator[Finding]:
    pending: tuple[NameKind, int] | None = None  # a `name: DB_PASSWORD` whose `value:` follows
    for found, base in _matches(text):
        match = _Shifted(found, base, text)
        name = match.group(1)
        start, end = _unquoted(text, *match.span(2))
        value = text[start:end]
        if value.startswith("//") or "://" in value or "-----BEGIN" in value:
            continue  # a URL or armour: read as such
        if not value or _code(value, quoted=start > match.start(2)) or (" " in value and not _spaced_literal(value)):
            pending = None
            continue
        kind = name_kind(name)
        lowered = name.lower()
        if pending is not None and lowered in ("value", "secretvalue", "defaultvalue") and match.start() - pending[1] < 200:
            kind = pending[0]
        pending = None
        if lowered in ("name", "key", "parameterkey", "parametername", "variable", "id") and name_kind(value):
            pending = (name_kind(value) or "secret", match.end())
            continue
        if kind is None:
            if _random_unnamed(name, value):
                yield start, end, "secret"
            continue
        reported = _value_of(kind, value)
        if reported:
            yield start, end, reported


def _tables(text: str) -> Iterator[Finding]:
    """Markdown tables: a cell under a column named for a credential is that field's value."""
    if "|" not in text:
        return
    kinds: list[NameKind | None] = []
    at = 0
    for line in text.split("\n"):
        start = at
        at += len(line) + 1
        stripped = line.strip()
        if not stripped.startswith("|"):
            kinds = []
            continue
        cells = stripped.strip("|").split("|")
        if not kinds:
            kinds = [name_kind(c.strip().strip("`*_")) for c in cells]
            if not any(kinds):
                kinds = [None]  # a table, but no credential column: skip its rows
            continue
        if set(stripped) <= set("|-: "):
            continue
        offset = start + line.index("|") + 1
        for cell, kind in zip(cells, kinds, strict=False):
            value = cell.strip().strip("`")
            if kind and value and (reported := _value_of(kind, value)) and not _code(value, quoted=True):
                where = text.index(value, offset)
                yield where, where + len(value), reported
            offset += len(cell) + 1


class _Shifted:
    """A match in a slice of the text, read in the whole text's offsets."""

    __slots__ = ("_base", "_match", "_text")

    def __init__(self, match: Any, base: int, text: str) -> None:
        self._match, self._base, self._text = match, base, text

    def group(self, i: int = 0) -> str:
        return str(self._match.group(i))

    def span(self, i: int = 0) -> tuple[int, int]:
        start, end = self._match.span(i)
        return start + self._base, end + self._base

    def start(self, i: int = 0) -> int:
        return int(self._match.start(i)) + self._base

    def end(self, i: int = 0) -> int:
        return int(self._match.end(i)) + self._base


def _spaced_literal(value: str) -> bool:
    """A quoted value with spaces is a password ("s3cr3t pass") only when short and with a
    digit; otherwise it is a message or a command."""
    return len(value.split()) <= 4 and any(c.isdigit() for c in value) and not any(c in value for c in ";.")


def _random_unnamed(name: str, value: str) -> bool:
    """A machine-made value in a field whose head word is no credential's: a secret if the
    name still speaks of one (`private_key_id`) or the value is random and not named public."""
    words = name_words(name)
    if any(name_kind(w) or w in CONTEXT_WORDS for w in words[:-1]) and words[-1] not in ("name", "type", "url", "uri", "endpoint", "file", "path"):
        if (shapes.is_hex(value) and len(value) >= 32) or shapes.looks_random(value, min_len=20):
            return True
    if any(w in PUBLIC_WORDS for w in words[-1:]) or shapes.is_hex(value) or shapes.is_uuid(value) or _code(value, quoted=False):
        return False
    if value.startswith("=?") and value.endswith("?="):
        return False  # a MIME encoded word (RFC 2047): a header's text
    return shapes.looks_random(value, min_len=24) and not _decodes_public(value) and not _decodes_text(value)


def _decodes_text(value: str) -> bool:
    """Base64 of printable text (a webhook's JSON, a MIME header)."""
    raw = shapes.decoded(value)
    if raw is None:
        return False
    try:
        plain = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\n\r\t" for c in plain) and " " in plain


def _flags(text: str) -> Iterator[Finding]:
    for match in _FLAG.finditer(text):
        flag = match.group(1).lstrip("-")
        start, end = _unquoted(text, *match.span(2))
        value = text[start:end]
        if value.startswith("-"):
            continue
        if flag.lower() in ("u", "user", "proxy-user") and ":" in value:
            user, _, password = value.partition(":")
            if _password_value(password):
                yield start + len(user) + 1, end, "password"
            continue
        if flag in ("p", "P") and len(match.group(1)) == 2:
            if _password_value(value) and _mixed(value):
                yield start, end, "password"
            continue
        kind = name_kind(flag)
        if kind is None:
            if _random_unnamed(flag, value):
                yield start, end, "secret"
            continue
        reported = _value_of(kind, value) if not _code(value, quoted=start > match.start(2)) else None
        if reported:
            yield start, end, reported
    for match in _SHORT_P.finditer(text):
        start, end = _unquoted(text, *match.span(1))
        value = text[start:end]
        if _password_value(value) and _mixed(value):
            yield start, end, "password"


def _mixed(value: str) -> bool:
    """Three of lower case, upper case, digits and symbols (not the `./_-*` of file names and
    versions), or random-looking: what a short flag's value must be to be taken for a password
    (`-p 2222` is a port, `-p python3.10` an interpreter, `-p 'test_*.py'` a pattern)."""
    classes = (any(c.islower() for c in value) + any(c.isupper() for c in value) + any(c.isdigit() for c in value)
               + any(not c.isalnum() and c not in "./_-*" for c in value))
    return classes >= 3 or shapes.looks_random(value, min_len=8)


def _headers(text: str) -> Iterator[Finding]:
    for match in _AUTH_HEADER.finditer(text):
        start, end = match.span(3)
        quote = match.group(1) or (text[match.start(3) - 1] if text[match.start(3) - 1] in "\"'" else "")
        if quote and quote in text[start:end]:
            end = text.index(quote, start, end)  # a header inside a quoted argument ends with it
        first = text[start:end].split(None, 1)[0]
        if "=" not in text[start:end]:
            end = start + len(first)  # one token (Bearer, Basic, a bare key): prose may follow
        end = start + len(text[start:end].rstrip())
        start, end = _unquoted(text, start, end)
        value = text[start:end]
        if match.group(2) is None and not (long_or_mixed(value) or shapes.looks_random(value, min_len=8)):
            continue
        if len(value) >= 4 and plausible_value(value.split()[0]) and not shapes.placeholder(value) and not _code(value, quoted=False):
            scheme = (match.group(2) or "").lower()
            yield start, end, "bearer_token" if scheme == "bearer" else "basic_auth" if scheme == "basic" else "authorization"
    for match in _BEARER.finditer(text):
        value = match.group(1)
        if (any(c.isdigit() for c in value) or shapes.looks_random(value, min_len=20)) and not _code(value, quoted=False):
            yield *_unquoted(text, *match.span(1)), "bearer_token"
    for match in _COOKIE.finditer(text):
        at = match.start(2)
        for i, pair in enumerate(match.group(2).split(";")):
            name, sep, value = pair.partition("=")
            start = at + len(name) + 1 + (len(value) - len(value.lstrip()))
            at += len(pair) + 1
            value = value.strip().split(",")[0].split()[0] if value.strip() else ""
            if not sep or name.strip().lower() in _COOKIE_ATTRIBUTES or (match.group(1) and i > 0):
                continue
            if len(value) >= 8 and (long_or_mixed(value) or shapes.looks_random(value, min_len=8)):
                yield start, start + len(value), "cookie"


def _urls(text: str) -> Iterator[tuple[int, int]]:
    """Every URL's span; and the secrets in its userinfo or in a webhook's path."""
    for match in _URL.finditer(text):
        yield match.span()


def _url_secrets(text: str, spans: list[tuple[int, int]]) -> Iterator[Finding]:
    for start, end in spans:
        url = text[start:end].rstrip(".,;:)!?]}")
        info = _USERINFO.match(url)
        if info is not None:
            user, password = info.group(1), info.group(2)
            if password and _password_value(password) and not _code(password, quoted=True):
                yield start + info.start(2), start + info.end(2), "url_password"
            elif user and (shapes.looks_random(user, min_len=16) or (long_or_mixed(user) and len(user) >= 20)):
                yield start + info.start(1), start + info.end(1), "url_password"
        query_at = url.find("?")
        if query_at > 0:
            offset = start + query_at + 1
            for pair in url[query_at + 1 :].split("&"):
                name, sep, value = pair.partition("=")
                value = value.split("#", 1)[0]
                kind = name_kind(name) if sep else None
                reported = (_value_of(kind, value) if kind else ("secret" if _random_unnamed(name, value) else None)) if value else None
                if reported and not _code(value, quoted=False):
                    yield offset + len(name) + 1, offset + len(name) + 1 + len(value), reported
                offset += len(pair) + 1
        scheme_end = url.find("://") + 3
        path_at = url.find("/", scheme_end)
        segment_at = path_at
        for segment in url[path_at + 1 : query_at if query_at > 0 else len(url)].split("/") if path_at > 0 else ():
            segment_at += 1
            _, colon, right = segment.partition(":")
            if colon and shapes.looks_random(right, min_len=20):
                yield start + segment_at, start + segment_at + len(segment), "url_token"  # /bot<id>:<token>/
            segment_at += len(segment)
        if path_at > 0 and _HOOK_PATH.search(url[:path_at + 30]) is not None:
            # A webhook's URL is its credential: whoever holds it can post. Keep the host.
            query = url.find("?", path_at)
            tail = url[path_at + 1 : query if query > 0 else len(url)]
            if any(shapes.looks_random(p, min_len=16) or (p.isdigit() and len(p) >= 8) for p in tail.split("/")):
                yield start + path_at + 1, start + path_at + 1 + len(tail), "webhook_url"


def _armour(text: str) -> Iterator[Finding]:
    """PEM and OpenPGP armour of private or secret keys, to the END line (or the text's end)."""
    ends = [(m.start(), m.end(), m.group(1)) for m in _ARMOUR_END.finditer(text)]
    starts = [e[0] for e in ends]
    covered_ends: set[int] = set()
    for match in _ARMOUR_BEGIN.finditer(text):
        label = match.group(1).split()
        if "PRIVATE" not in label and "SECRET" not in label:
            continue
        i = bisect.bisect_left(starts, match.end())
        if i < len(ends):
            covered_ends.add(ends[i][0])
        yield match.start(), ends[i][1] if i < len(ends) else len(text), "private_key"
    for start, end, label in ends:
        words = label.split()
        if start in covered_ends or ("PRIVATE" not in words and "SECRET" not in words):
            continue
        # The tail of a key whose header was cut off (a paste, a split message).
        yield _body_before(text, start), end, "private_key"
    for match in _PUTTY.finditer(text):
        yield *match.span(1), "private_key"


def _body_before(text: str, at: int) -> int:
    """Where the base64 lines that end at `at` start (at most 200 lines back)."""
    start = at
    for _ in range(200):
        line_start = text.rfind("\n", 0, max(0, start - 1)) + 1
        line = text[line_start:start].strip().replace("\\n", "")
        if len(line) < 16 or shapes.decoded(line.rstrip("=")[: len(line) // 4 * 4]) is None:
            return start
        start = line_start
        if start == 0:
            return 0
    return start


def _jwts(text: str) -> Iterator[Finding]:
    for match in _JWT.finditer(text):
        header = shapes.decoded(match.group().split(".", 1)[0])
        if header is None:
            continue
        try:
            claims = json.loads(header)
        except ValueError:
            continue
        if isinstance(claims, dict) and ("alg" in claims or "typ" in claims or "enc" in claims):
            yield *match.span(), "jwt"


def _decodes_public(value: str) -> bool:
    raw = shapes.decoded(value)
    return (raw is not None and shapes.key_material(raw) == "public") or shapes.base58_kind(value) == "public" or shapes.bech32(value)


def _clause_before(text: str, start: int) -> list[str]:
    """The words of the clause before `start` (at most 80 characters back), lowercased, with
    ":" and "=" as words of their own. Plain string work: it runs once per token."""
    window = text[max(0, start - 80) : start]
    cut = max(window.rfind(mark) for mark in (". ", "! ", "? ", "; ", "\n"))
    words = []
    for word in window[cut + 1 :].replace(":", " : ").replace("=", " = ").replace("：", " ： ").split():
        bare = word.strip("\"'`()[]{},.!?*").lower()
        if bare or word in (":", "=", "："):
            words.append(bare or word)
    return words


def _context(words: list[str]) -> tuple[str | None, bool]:
    """The noun that labels a value ('secret', 'public' or None), and whether a copula or a
    separator stands right before the value. A public noun labels the value only as its
    nearest word ("commit 3f2a...", "the checksum is ..."); a credential's noun from a few
    words back ("the token we use for the CI is ...")."""
    copula = bool(words) and (words[-1] in COPULAS or words[-1] in SEPARATORS)
    nearest = True
    recent = words[-_CONTEXT_WORDS:]
    for i in range(len(recent) - 1, -1, -1):
        word, before = recent[i], recent[i - 1] if i else ""
        if word in CONTEXT_WORDS or name_kind(word) is not None:
            # "publishable key", "public key": made to be shown
            return ("public" if before in _PUBLIC_MODIFIERS else "secret"), copula
        if nearest and (word in PUBLIC_WORDS or name_words(word)[-1:] in _PUBLIC_HEADS):
            if word == "id" and (before in CONTEXT_WORDS or name_kind(before) is not None):
                return "secret", copula  # an access key's id travels with its secret
            return "public", copula
        if word not in COPULAS and word not in SEPARATORS and word not in _LABEL_FILLERS:
            nearest = False
    return None, copula


_PUBLIC_HEADS = frozenset((w,) for w in PUBLIC_WORDS)
_PUBLIC_MODIFIERS = frozenset("public publishable pub publishing verification verify".split())
_PLURALS = frozenset("passwords secrets tokens keys credentials apikeys cookies signatures".split())
# How many words before a value a credential's noun may stand.
_CONTEXT_WORDS = 6
# Words between a label and its value: "the commit's id is", "tracking number: ".
_LABEL_FILLERS = frozenset("the a an my your our this that its it's of number no nr # id".split())


# How long a random-looking token must be to be taken for a secret with nothing around it.
_ALONE = 20
# How many words before a value a credential's noun, or a public identifier's, may stand.
_CONTEXT_WORDS = 6
_LABEL_WORDS = 4


def _public_blocks(text: str) -> list[tuple[int, int]]:
    """Armoured blocks that are public by their label: public keys, certificates, signatures."""
    blocks = []
    for match in _ARMOUR_BEGIN.finditer(text):
        label = match.group(1).split()
        if "PRIVATE" in label or "SECRET" in label:
            continue
        end = text.find("-----END", match.end())
        blocks.append((match.start(), len(text) if end < 0 else end + 8))
    return blocks


def _tokens(text: str, urls: list[tuple[int, int]], nested: Nested | None) -> Iterator[Finding]:
    """Random-looking tokens: by what they decode to, by the noun before them, or alone."""
    urls = sorted(urls + _public_blocks(text))
    url_at = 0
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        while end > start and text[end - 1] in ".-~":
            end -= 1
        while url_at < len(urls) and urls[url_at][1] <= start:
            url_at += 1
        if url_at < len(urls) and urls[url_at][0] <= start:
            continue  # inside a URL: its userinfo, query and webhook path are checked apart
        token = text[start:end]
        kind = _token_kind(text, start, token, nested)
        if kind:
            yield start, end, kind


def _token_kind(text: str, start: int, token: str, nested: Nested | None) -> str | None:
    if len(token) < 12 or _named_file(token) or _resource_id(token) or _masked(token):
        return None
    decoded_kind = _decoded_kind(token, nested)
    if decoded_kind == "public":
        return None
    if decoded_kind is not None:
        return decoded_kind
    if start >= 6 and text[start - 7 : start].lower().endswith("base64,"):
        return None  # a data: URI's content
    if _DIGEST_PREFIX.match(token) is not None:
        return None  # a digest named by its algorithm (subresource integrity, image digests)
    noun, copula = _context(_clause_before(text, start))
    if noun == "public" or shapes.is_uuid(token):
        return None
    hexadecimal = shapes.is_hex(token)
    if noun == "secret":
        if _code(token, quoted=False):
            return None
        if shapes.looks_random(token, min_len=12) or (hexadecimal and len(token) >= 24):
            return "secret"
        return None
    if copula and ((hexadecimal and len(token) >= 32) or shapes.looks_random(token, min_len=20)) and not _code(token, quoted=False):
        return "secret"
    if (not hexadecimal and any(c.isupper() for c in token) and shapes.looks_random(token, min_len=_ALONE)
            and not _code(token, quoted=False)):
        return "token"  # alone, lower case and digits only is too often an id or an address
    if _affixed_hex(token):
        return "token"
    return None


def _named_file(token: str) -> bool:
    """`upload_9e6b19c0d856.jpg`, `weather-app.example.com`: a file or host name."""
    _, dot, extension = token.rpartition(".")
    return bool(dot) and 2 <= len(extension) <= 5 and extension.isalpha() and extension.islower() and token.count(".") <= 4




def _affixed_hex(token: str) -> bool:
    """A word stuck to 32+ hex digits (`key-9f3a...`, `9f3a...-us12`): a token's shape. A bare
    hex string is a checksum or a commit, and a word that names one makes it public."""
    match = _AFFIXED_HEX.fullmatch(token)
    if match is None or is_record_id(token):  # fourfold's own record ids name, they open nothing
        return False
    affix = (match.group(1) or match.group(4) or "").lower()
    return affix not in PUBLIC_WORDS and not shapes.is_hex(affix) and "sha" not in affix and "md" not in affix


def _resource_id(token: str) -> bool:
    """`subnet-0123456789abcdef0`, `i-0a1b2c3d4e5f67890`: a word and a short hex id (cloud
    resources, containers); a long hex body after a prefix stays a token."""
    for sep in "-_":
        prefix, found, body = token.rpartition(sep)
        if found and prefix.replace("-", "").replace("_", "").isalpha() and shapes.is_hex(body) and len(body) <= 20:
            return True
    return False


def _decoded_kind(token: str, nested: Nested | None) -> str | None:
    """'private_key', 'encoded_secret', 'public' (leave it), or None, by what `token` decodes to."""
    kind = shapes.base58_kind(token)
    if kind != "none":
        return "private_key" if kind == "private" else "public"
    if shapes.bech32(token):
        return "public"  # a bech32 address (Bitcoin, Lightning, Cosmos...); its checksum says so
    if len(token) < 16:
        return None
    raw = shapes.decoded(token)
    if raw is None:
        return None
    material = shapes.key_material(raw)
    if material != "none":
        return "private_key" if material == "private" else "public"
    if shapes.printable_credentials(raw):
        return "encoded_secret"
    if nested is not None and len(raw) >= 12:
        try:
            plain = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if plain.isprintable() or all(c.isprintable() or c in "\n\r\t" for c in plain):
            # Text that was base64 (a MIME header, a webhook's JSON): a secret only if the
            # text holds one; otherwise it is no token either.
            return "encoded_secret" if nested(plain) else "public"
    return None


def _prose(text: str) -> Iterator[Finding]:
    """A value told in a sentence: "my password is x", "le mot de passe est x", "PW: x"."""
    for match in _CONTEXT.finditer(text):
        start, end = match.span()
        word = match.group().lower()
        if start and (text[start - 1].isalnum() or text[start - 1] in "_.$") and word[0].isascii():
            continue
        if word in _PLURALS or word == "pass":
            continue  # "passwords are hashed", "pass the arguments": talk, not a value
        if text[max(0, start - 14) : start].lower().split()[-1:] in ([m] for m in _PUBLIC_MODIFIERS):
            continue  # "publishable key pk_...", "public key ...": made to be shown
        if end < len(text) and ((text[end].isalpha() and text[end].isascii()) or text[end] in "_->)]}"):
            continue  # part of a longer name, or a placeholder (`<password>`)
        kind = "password" if word in PASSWORD_WORDS else "secret"
        found = _told_value(text, end, kind) or _value_before(text, start, kind)
        if found:
            yield found
    for match in _PHRASE_WORDS.finditer(text):
        found = _told_phrase(text, match.end())
        if found:
            yield found


def _told_value(text: str, at: int, kind: str) -> Finding | None:
    """The value told after a credential's noun: after a copula or a mark (":", "=", "是"),
    past a few words ("the passphrase for the backup archive (restic) is ..."), or right
    after the noun if it looks made ("pw Kx7q2Lm9")."""
    tail = text[at : at + 200].split("\n", 1)[0]
    separated = explicit = False
    fillers = 0
    previous = ""
    in_parentheses = False
    for token in _tail_tokens(tail):
        raw = token.group()
        bare = raw.strip(",;()").lower()
        if in_parentheses or raw.startswith("("):
            in_parentheses = not raw.rstrip(",;:").endswith(")")
            continue
        if not separated:
            for mark in SEPARATORS:
                if raw.startswith(mark):
                    separated = explicit = True
                    raw = raw[len(mark) :]
                    break
            if explicit and fillers and _field_like(previous):
                return None  # "password FROM users WHERE username = x": the mark is another field's
            if separated and not raw:
                continue
            if not separated and bare in COPULAS and (bare != "to" or not fillers or previous.lower() in _TO_VERBS):
                separated = True  # "to" is a copula right after the noun (Polish "hasło to x") or a verb
                continue
            if not separated:
                if raw.endswith((":", "：")):
                    if fillers and _field_like(raw.rstrip(":：")):
                        return None
                    separated = explicit = True
                    continue
                fillers += 1
                previous = raw
                if fillers == 1 and _strong_value(raw):
                    return _finding(at, token.start(), token.end(), tail, kind, explicit=False)
                if fillers > _FILLERS:
                    return None
                continue
            found = _finding(at, token.end() - len(raw), token.end(), tail, kind, explicit=explicit)
            if found:
                return found
            separated = explicit = False
            fillers += 1
            continue
        if bare in SKIP_WORDS or bare in ("the", "my", "our", "your", "a", "new"):
            continue
        if raw.endswith((":", "：")) and len(raw) > 1:
            separated = explicit = True  # "as hex: 6743...": the value follows the label
            continue
        found = _finding(at, token.start(), token.end(), tail, kind, explicit=explicit)
        if found:
            return found
        separated = explicit = False  # "password to the portal is x": keep reading
        fillers += 1
        if fillers > _FILLERS:
            return None
    return None


_TO_VERBS = frozenset("set changed reset updated changing setting switched".split())
# How many words may stand between a credential's noun and the value told after it.
_FILLERS = 8
_FIELD_NAMES = frozenset("username user login email mail name id userid account host port database db".split())


def _field_like(word: str) -> bool:
    """A word that names another field ("username ="), not prose before a value."""
    bare = word.strip("\"'`()[]{},").lower()
    return bare in _FIELD_NAMES or "_" in bare or name_kind(bare) is not None


def _value_before(text: str, at: int, kind: str) -> Finding | None:
    """A value told before its noun: "use Zk93!pq as the password", "Zk93!pq is my password"."""
    window = text[max(0, at - 120) : at]
    words = window.split()
    while words and words[-1].lower() in ("the", "my", "our", "your", "new", "current", "admin", "a"):
        words.pop()
    if len(words) < 2 or words[-1].lower() not in ("as", "is", "was"):
        return None
    value = words[-2].strip("\"'`“”«»,;:()")
    if not _strong_value(value) or (kind == "password" and not _password_value(value)):
        return None
    start = window.rfind(value, 0, window.rfind(words[-1]))
    return (at - len(window) + start, at - len(window) + start + len(value), kind) if start >= 0 else None


class _Token:
    """A word of a tail and where it stands (what `_told_value` reads, made without a regex:
    it runs once per credential word)."""

    __slots__ = ("_end", "_start", "_text")

    def __init__(self, text: str, start: int, end: int) -> None:
        self._text, self._start, self._end = text, start, end

    def group(self) -> str:
        return self._text[self._start : self._end]

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end


_CLOSING = {'"': '"', "'": "'", "“": "”", "«": "»"}


def _tail_tokens(tail: str) -> Iterator[_Token]:
    """Whitespace-separated words; a quoted value ("s3cr3t pass") is one word. String
    methods only: this runs once per credential word, so its cost must stay small."""
    pos = 0
    words = tail.split(None, 12)[:12]
    i = 0
    while i < len(words):
        word = words[i]
        start = tail.find(word, pos)
        closing = _CLOSING.get(word[0])
        if closing and not (len(word) > 1 and word.endswith(closing)):
            end = tail.find(closing, start + 1)
            if end > start and "\n" not in tail[start:end]:
                yield _Token(tail, start, end + 1)
                pos = end + 1
                while i < len(words) and tail.find(words[i], start) < pos:
                    i += 1
                continue
        pos = start + len(word)
        yield _Token(tail, start, pos)
        i += 1


_NO_DIGITS = str.maketrans("", "", "0123456789")


def _has_digit(value: str) -> bool:
    return len(value.translate(_NO_DIGITS)) != len(value)


def _strong_value(value: str) -> bool:
    """A value that stands without a copula ("pw Kx7q2Lm9"): mixed letters and digits."""
    stripped = value.strip("\"'.,;:)")
    return (stripped[:1].isalnum() and "=" not in stripped.rstrip("=") and long_or_mixed(stripped) and not stripped.isdigit() and _has_digit(stripped)
            and stripped.lower() not in NOT_A_VALUE and not _code(stripped, quoted=False))


def _finding(at: int, start: int, end: int, tail: str, kind: str, *, explicit: bool) -> Finding | None:
    quoted = tail[start : start + 1] in ("\"", "'", "“", "«", "`")
    explicit = explicit or quoted
    start, end = _unquoted(tail, start, end)
    value = tail[start:end]
    if not value or not plausible_value(value) or shapes.placeholder(value):
        return None
    if _code(value, quoted=quoted) or _decodes_text(value) or "<" in value or ">" in value or value.endswith(("'s", "’s")):
        return None
    if kind == "password":
        # A plain word after "is" is usually a description ("is static"); after ":" or
        # in quotes it is the value.
        rest = tail[end:].lstrip()
        last = not rest or rest[0] in ",;)(.!?"
        ok = _password_value(value) and (not value.isalpha() or (explicit and last and value.islower() and len(value) >= 8))
    else:
        ok = _secret_value(value) and (_has_digit(value) or shapes.looks_random(value, min_len=12))
    return (at + start, at + end, kind) if ok else None


def _told_phrase(text: str, at: int) -> Finding | None:
    """A passphrase is several words: everything up to the end of the clause."""
    tail = text[at : at + 400]
    i = 0
    while i < len(tail) and (tail[i] in " \t:=：\"'" or tail[i:].lower().startswith(("is ", "was "))):
        i += 3 if tail[i:].lower().startswith("is ") else 4 if tail[i:].lower().startswith("was ") else 1
    end = i
    while end < len(tail) and tail[end] not in ".;!?\n,\"'":
        end += 1
    for joint in (" and ", " but ", " so ", " then ", " if "):
        cut = tail.find(joint, i, end)
        if cut >= 0:
            end = cut
    value = tail[i:end].strip()
    words = value.split()
    if len(words) < 3 or all(w.lower() in NOT_A_VALUE for w in words):
        return None
    return at + i, at + i + len(value), "passphrase"


def find_structure(text: str, nested: Nested | None = None) -> Iterator[Finding]:
    """Every secret the structure rules find in `text` (overlaps included)."""
    urls = list(_urls(text))
    yield from _armour(text)
    yield from _url_secrets(text, urls)
    yield from _headers(text)
    yield from _assignments(text)
    yield from _tables(text)
    yield from _flags(text)
    yield from _jwts(text)
    yield from _prose(text)
    yield from _tokens(text, urls, nested)
