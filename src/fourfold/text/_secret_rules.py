"""The secrets policy: credentials, keys and payment numbers, removed from everything stored.

Each rule lists its triggers: lowercase substrings that every match contains. Each trigger
has a case in tests/secrets_corpus.py whose text holds no other trigger of the rule,
so dropping a trigger fails a test instead of silently letting a secret through.
"""

from __future__ import annotations

import base64
import binascii
import re
import tomllib
from importlib import resources

from fourfold.text._numbers import find_cards, find_ibans
from fourfold.text._rules import (
    VALUE,
    Rule,
    long_or_mixed,
    number_like,
    plausible_value,
    regex_rule,
)

__all__ = ["SECRET_RULES"]

_I = re.IGNORECASE
_PASSWORD_WORD = r"(?:pass(?:word|wd|code)|pwd)"
_SECRET_NAME = r"(?:api[_\-]?key|apikey|secret|token|access[_\-]?key|auth[_\-]?key|account[_\-]?key)"
_PASSWORD_TRIGGERS = ("pass", "pwd")
_FIELD = r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'<>;&]+(?<![.,:)]))"
_SECRET_TRIGGERS = ("api", "secret", "token", "access", "auth", "account")


def _basic_credentials(value: str) -> bool:
    """`Authorization: Basic` carries base64 of "user:password"."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _assigned_secret(value: str) -> bool:
    return len(value) >= 4 and plausible_value(value) and not number_like(value)


def _prefixed_tokens() -> tuple[Rule, ...]:
    """The tokens that start with a fixed, documented prefix: a table, in secret_tokens.toml."""
    table = tomllib.loads(resources.files(__package__).joinpath("secret_tokens.toml").read_text(encoding="utf-8"))
    return tuple(regex_rule(t["kind"], t["pattern"], triggers=tuple(t["triggers"]), flags=0) for t in table["token"])


_PEM = regex_rule(
    "private_key",
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    triggers=("-----begin",),
    flags=re.DOTALL,
)
# The tail of a key whose header was cut off (a paste, a split message): base64 lines up to
# the END line. Documents are redacted whole, but text can arrive in pieces anywhere.
_PEM_TAIL = regex_rule(
    "private_key",
    r"(?:[A-Za-z0-9+/=]{16,}(?:\\n|\s)+)*[A-Za-z0-9+/=]*(?:\\n|\s)*"
    r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    triggers=("-----end",), flags=0,
)

_URL_PASSWORD = regex_rule(
    "url_password", r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:([^\s/@]+(?:@[^\s/@]+)*)@[^\s@]", triggers=("://",), group=1, flags=_I
)

# Cloud and SaaS secrets known by their context, not a prefix.
_CLOUD = (
    regex_rule(
        "aws_secret_key",
        r"\baws\b[\w\s\"'\-]{0,40}?\b(?:secret|key)\b[^A-Za-z0-9/+=\n]{0,12}(?:\s(?:is|was)\s+)?[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        r"|\baws_?secret\w*[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        triggers=("aws",), group=-1, flags=_I,
    ),
    regex_rule("azure_storage_key", r"\b(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,}={0,2})", triggers=("accesskey", "accountkey"), group=1, flags=_I),
    regex_rule("azure_sas_signature", r"[?&]sig=([A-Za-z0-9%+/]{20,}(?:%3D|=){0,2})", triggers=("sig=",), group=1, flags=_I),
    regex_rule("gcp_private_key_id", r"\bprivate_key_id[\"']?\s*[:=]\s*[\"']?([0-9a-f]{40})\b", triggers=("private_key_id",), group=1, flags=_I),
)

_SAAS = (
    regex_rule("twilio_auth_token", r"\btwilio\b[^\n]{0,40}?\b([0-9a-f]{32})\b", triggers=("twilio",), group=1, flags=_I),
)

_HEADERS = (
    regex_rule(
        "bearer_token",
        r"\bbearer\s+((?=[A-Za-z0-9\-._~+/]*\d|[A-Za-z0-9\-._~+/]{20})[A-Za-z0-9\-._~+/]{8,}=*)",
        triggers=("bearer",), group=1, flags=_I,
    ),
    regex_rule("basic_auth", r"\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", triggers=("basic",), group=1, check=_basic_credentials, flags=_I),
)

_PASSWORDS = (
    regex_rule("password", rf"\b[A-Za-z0-9_\-]*?{_PASSWORD_WORD}[\"']?\s*=\s*{VALUE}", triggers=_PASSWORD_TRIGGERS, group=1, flags=_I),
    regex_rule("password", rf"\b[A-Za-z0-9_\-]*?{_PASSWORD_WORD}[\"']?\s*:\s*{VALUE}", triggers=_PASSWORD_TRIGGERS, group=1, check=plausible_value, flags=_I),
    regex_rule(
        "password",
        rf"\b{_PASSWORD_WORD}\s+(?:is|was|=)\s+(?:now\s+|still\s+)?(?:(?:set|changed|reset)\s+to\s+)?{VALUE}"
        rf"|\b{_PASSWORD_WORD}\s+(?:(?:was|has\s+been|got)\s+)?(?:set|changed|reset)\s+to\s+{VALUE}"
        rf"|--{_PASSWORD_WORD}\s+{VALUE}",
        triggers=_PASSWORD_TRIGGERS, group=-1, check=plausible_value, flags=_I,
    ),
    regex_rule("password", rf"\bpw\b\s*(?:[:=]|\s(?:is|was)\s)?\s*{VALUE}", triggers=("pw",), group=1, check=plausible_value, flags=_I),
    # A passphrase is several words: everything up to the end of the clause.
    regex_rule(
        "passphrase",
        r"\b(?:pass\s?phrase|seed\s+phrase|recovery\s+phrase|mnemonic)\s*(?:is|was|:|=)\s*((?:(?!\s(?:and|but|so|then|if)\s)[^.;!?\n,])+)",
        triggers=("phrase", "mnemonic"), group=1, check=plausible_value, flags=_I,
    ),
)

_GENERIC = (
    # In connection strings ";" ends a field; a name like SharedAccessKeyName or token_type holds no secret.
    regex_rule("secret", rf"\b[A-Za-z0-9_\-]*{_SECRET_NAME}(?!_?(?:name|id|type)\b)[A-Za-z0-9_\-]*[\"']?\s*=\s*{_FIELD}", triggers=_SECRET_TRIGGERS, group=1, check=_assigned_secret, flags=_I),
    regex_rule("secret", rf"\b[A-Za-z0-9_\-]*{_SECRET_NAME}[A-Za-z0-9_\-]*[\"']?\s*:\s*{VALUE}", triggers=_SECRET_TRIGGERS, group=1, check=long_or_mixed, flags=_I),
    regex_rule(
        "secret",
        r"\b(?:api\s+key|secret(?:\s+key)?|(?:access|auth|session|refresh)\s+token|token|access\s+key|client\s+secret)\s+(?:is|was)\s+"
        rf"(?:now\s+|still\s+)?{VALUE}",
        triggers=("api", "secret", "token", "access"), group=1, check=long_or_mixed, flags=_I,
    ),
)

SECRET_RULES: tuple[Rule, ...] = (
    _PEM,
    _PEM_TAIL,
    _URL_PASSWORD,
    *_prefixed_tokens(),
    *_CLOUD,
    *_SAAS,
    *_HEADERS,
    *_PASSWORDS,
    *_GENERIC,
    Rule("card_number", find_cards, gate=re.compile(r"\d(?:[ -]?\d){12}")),
    Rule("iban", find_ibans, gate=re.compile(r"\b[A-Za-z]{2}\d{2}")),
)
