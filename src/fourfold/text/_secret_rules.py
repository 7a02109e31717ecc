"""The secrets policy: credentials, keys and payment numbers, removed from everything stored.

Each rule lists its triggers: lowercase substrings that every match contains. Each trigger
has a case in tests/secrets_corpus.py whose text holds no other trigger of the rule,
so dropping a trigger fails a test instead of silently letting a secret through.
"""

from __future__ import annotations

import base64
import binascii
import re

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


def _prefixed(kind: str, pattern: str, *triggers: str, flags: int = 0) -> Rule:
    """A token that starts with a fixed, documented prefix."""
    return regex_rule(kind, pattern, triggers=triggers, flags=flags)


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
    triggers=("-----end",),
)

_URL_PASSWORD = regex_rule(
    "url_password", r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:([^\s/@]+(?:@[^\s/@]+)*)@[^\s@]", triggers=("://",), group=1, flags=_I
)

_CLOUD = (
    _prefixed("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[A-Z0-9]{16}\b", "akia", "asia", "abia", "acca", "aida", "aroa"),
    regex_rule(
        "aws_secret_key",
        r"\baws\b[\w\s\"'\-]{0,40}?\b(?:secret|key)\b[^A-Za-z0-9/+=\n]{0,12}(?:\s(?:is|was)\s+)?[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        r"|\baws_?secret\w*[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        triggers=("aws",), group=-1, flags=_I,
    ),
    regex_rule("azure_storage_key", r"\b(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,}={0,2})", triggers=("accesskey", "accountkey"), group=1, flags=_I),
    regex_rule("azure_sas_signature", r"[?&]sig=([A-Za-z0-9%+/]{20,}(?:%3D|=){0,2})", triggers=("sig=",), group=1, flags=_I),
    _prefixed("azure_client_secret", r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", "q~"),
    regex_rule("gcp_private_key_id", r"\bprivate_key_id[\"']?\s*[:=]\s*[\"']?([0-9a-f]{40})\b", triggers=("private_key_id",), group=1, flags=_I),
    _prefixed("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", "aiza"),
    _prefixed("digitalocean_token", r"\bdo[opr]_v1_[a-f0-9]{64}\b", "_v1_"),
    _prefixed("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b", "dapi"),
    _prefixed("vault_token", r"\bhv[sb]\.[A-Za-z0-9_\-]{24,}", "hvs.", "hvb."),
    _prefixed("age_secret_key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b", "age-secret-key-"),
    _prefixed("firebase_server_key", r"\bAAAA[A-Za-z0-9_\-]{7}:[A-Za-z0-9_\-]{140}", "aaaa"),
)

_CODE_AND_PACKAGES = (
    _prefixed("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    _prefixed("gitlab_token", r"\bgl(?:pat|ptt|dt|rt|oas)-[A-Za-z0-9_\-]{20,}", "glpat-", "glptt-", "gldt-", "glrt-", "gloas-"),
    _prefixed("bitbucket_token", r"\bATBB[A-Za-z0-9]{32,}", "atbb"),
    _prefixed("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", "npm_"),
    _prefixed("pypi_token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", "pypi-"),
    _prefixed("rubygems_key", r"\brubygems_[a-f0-9]{48}\b", "rubygems_"),
    _prefixed("docker_token", r"\bdckr_pat_[A-Za-z0-9_\-]{20,}", "dckr_pat_"),
    _prefixed("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b", "hf_"),
    _prefixed("atlassian_token", r"\bATATT3[A-Za-z0-9_\-=]{60,}", "atatt3"),
    _prefixed("postman_key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", "pmak-"),
    _prefixed("linear_key", r"\blin_api_[A-Za-z0-9]{40}\b", "lin_api_"),
    _prefixed("grafana_token", r"\b(?:glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})", "glsa_", "glc_"),
    _prefixed("sentry_token", r"\bsntry[su]_[A-Za-z0-9+/=_]{40,}", "sntry"),
    _prefixed("newrelic_key", r"\bNRAK-[A-Z0-9]{27}\b", "nrak-"),
    _prefixed("figma_token", r"\bfigd_[A-Za-z0-9_\-]{40}", "figd_"),
)

_SAAS = (
    _prefixed("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", "sk-ant-"),
    _prefixed("openai_key", r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", "sk-"),
    _prefixed("stripe_key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}", "_live_", "_test_"),
    _prefixed("slack_token", r"\bxox[abprse]-[A-Za-z0-9\-]{10,}", "xox"),
    _prefixed("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}", "hooks.slack.com"),
    _prefixed("discord_webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,}", "discord"),
    _prefixed("teams_webhook", r"https://[a-z0-9\-]+\.webhook\.office\.com/webhook\w*/\S+", "webhook.office.com"),
    _prefixed("telegram_bot_token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b", ":aa"),
    _prefixed("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b", "sg."),
    _prefixed("twilio_api_key", r"\bSK[0-9a-f]{32}\b", "sk"),
    regex_rule("twilio_auth_token", r"\btwilio\b[^\n]{0,40}?\b([0-9a-f]{32})\b", triggers=("twilio",), group=1, flags=_I),
    _prefixed("mailgun_key", r"\bkey-[0-9a-f]{32}\b", "key-"),
    _prefixed("mailchimp_key", r"\b[0-9a-f]{32}-us\d{1,2}\b", "-us"),
    _prefixed("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", "shp"),
    _prefixed("square_token", r"\bsq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}", "sq0"),
    _prefixed("notion_token", r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})\b", "secret_", "ntn_"),
    _prefixed("jwt", r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*", "eyj"),
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
    *_CLOUD,
    *_CODE_AND_PACKAGES,
    *_SAAS,
    *_HEADERS,
    *_PASSWORDS,
    *_GENERIC,
    Rule("card_number", find_cards, gate=re.compile(r"\d(?:[ -]?\d){12}")),
    Rule("iban", find_ibans, gate=re.compile(r"\b[A-Za-z]{2}\d{2}")),
)
