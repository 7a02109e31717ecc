"""What a value is made of: how random it looks, and what it decodes to.

A secret is made to be guessed by nobody, so it reads as noise: many distinct characters,
letters and digits mixed with no pattern. A word, an identifier in camelCase, a date or a
version do not. Encoded values are decoded and judged by their structure: DER and OpenSSH
private keys, OpenPGP secret-key packets, base58check WIF keys and "user:password" pairs are
key material or credentials; SSH and X.509 public keys, addresses and checksums are not.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import math
from collections import Counter
from typing import Literal

from fourfold.text._rules import compile_re2

__all__ = ["decoded", "entropy", "is_hex", "is_uuid", "key_material", "looks_random", "placeholder", "printable_credentials"]

_UUID = compile_re2(r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_PLACEHOLDER = compile_re2(
    r"<[^<>]*>|\[[^\[\]]*\]|\$\{[^}]*\}|\$\(?[A-Za-z_][A-Za-z0-9_]*\)?|%[A-Za-z_][A-Za-z0-9_]*%|\{\{[^}]*\}\}|\{[A-Za-z_][A-Za-z0-9_]*\}"
)
PATTERNS = (_UUID, _PLACEHOLDER)


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


# How many characters of a value `looks_random` reads.
_SAMPLE = 96


def _char_class(char: str) -> int:
    return 0 if char.islower() else 1 if char.isupper() else 2 if char.isdigit() else 3


def looks_random(value: str, *, min_len: int = 16) -> bool:
    """Noise, not language: long enough, letters and digits (or cases) switching often, and
    many distinct characters. Words, camelCase identifiers, versions and dates fail: a step
    into a capital counts (a word has one, at its start), a step out of one does not."""
    value = value.rstrip("=")
    if len(value) < min_len:
        return False
    value = value[:_SAMPLE]  # a long value's head tells as much, at a bounded cost
    if any(c.isspace() for c in value):
        return False
    classes = [_char_class(c) for c in value]
    if len(set(classes) - {3}) < 2:
        return False
    if 2 not in classes:
        # Letters only: words in capitals or camelCase switch case often too; random letters
        # mix both cases in about equal measure, and are long.
        upper = classes.count(1) / len(classes)
        if len(value) < 24 or not 0.3 <= upper <= 0.7:
            return False
    switches = sum(b == 1 or (a != b and 2 in (a, b) and 3 not in (a, b)) for a, b in itertools.pairwise(classes))
    return switches / (len(value) - 1) >= 0.26 and entropy(value) >= min(3.6, math.log2(len(value)) - 0.6)


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def is_uuid(value: str) -> bool:
    return len(value) == 36 and value.count("-") == 4 and _UUID.fullmatch(value) is not None


def is_hex(value: str) -> bool:
    digits = value[2:] if value[:2] in ("0x", "0X") else value
    return bool(digits) and all(c in _HEX_DIGITS for c in digits)


def placeholder(value: str) -> bool:
    """`<your-key>`, `${TOKEN}`, `$TOKEN`, `%TOKEN%`, `{{ token }}`, `****`, `xxxx`: no value yet."""
    if value[:1] in ("<", "[", "$", "%", "{") and _PLACEHOLDER.fullmatch(value) is not None:
        return True
    return len(set(value.lower())) <= 2


def decoded(value: str) -> bytes | None:
    """The bytes a base64 (standard or URL-safe, padded or not) value holds, or None."""
    text = value.strip("=")
    if len(text) < 8 or len(text) % 4 == 1:
        return None
    alphabet_url = "-" in text or "_" in text
    try:
        raw = text + "=" * (-len(text) % 4)
        return base64.urlsafe_b64decode(raw) if alphabet_url else base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None


def printable_credentials(raw: bytes) -> bool:
    """`user:password` in plain text (what HTTP Basic and many configs encode)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    user, sep, password = text.partition(":")
    return bool(sep) and text.isprintable() and " " not in text and 0 < len(user) <= 128 and len(password) >= 3


def _der_length(raw: bytes, at: int) -> tuple[int, int] | None:
    """(length, offset of the content) of the DER element whose length byte is at `at`."""
    if at >= len(raw):
        return None
    first = raw[at]
    if first < 0x80:
        return first, at + 1
    count = first & 0x7F
    if not 1 <= count <= 3 or at + 1 + count > len(raw):
        return None
    return int.from_bytes(raw[at + 1 : at + 1 + count], "big"), at + 1 + count


KeyKind = Literal["private", "public", "none"]


def _der_kind(raw: bytes) -> KeyKind:
    """A DER SEQUENCE whose first element is the version INTEGER 0 or 1 followed by more is a
    private key (PKCS#1, PKCS#8, SEC1, DSA); one that starts with an algorithm SEQUENCE
    followed by an OCTET STRING is an encrypted private key; with a BIT STRING it is a public
    key, and certificates nest deeper still."""
    if len(raw) < 16 or raw[0] != 0x30:
        return "none"
    outer = _der_length(raw, 1)
    if outer is None:
        return "none"
    at = outer[1]
    if raw[at : at + 3] in (b"\x02\x01\x00", b"\x02\x01\x01") and at + 3 < len(raw) and raw[at + 3] in (0x02, 0x04, 0x30):
        return "private"
    if raw[at] == 0x30:
        inner = _der_length(raw, at + 1)
        if inner is not None and inner[1] + inner[0] < len(raw):
            following = raw[inner[1] + inner[0]]
            if following == 0x04:
                return "private"
            if following in (0x03, 0x02, 0xA0):
                return "public"
    return "none"


def key_material(raw: bytes) -> KeyKind:
    """What the decoded bytes of a blob are: private key material, a public key, or neither."""
    if raw.startswith(b"openssh-key-v1\x00"):
        return "private"
    if len(raw) > 11 and raw[:3] == b"\x00\x00\x00" and raw[4:8] in (b"ssh-", b"ecds", b"sk-s", b"sk-e"):
        return "public"  # the SSH wire format of a public key: a length-prefixed key type
    der = _der_kind(raw)
    if der != "none":
        return der
    version = _pgp_secret_key_version(raw)
    return "private" if version in (3, 4, 5, 6) else "none"


def _pgp_secret_key_version(raw: bytes) -> int | None:
    """The version byte of an OpenPGP secret-key or secret-subkey packet (tags 5 and 7)."""
    if len(raw) < 8:
        return None
    tag = raw[0]
    if tag & 0xC0 == 0x80 and (tag >> 2) & 0x0F in (5, 7):  # old format: 1, 2 or 4 length bytes
        at = 1 + (1, 2, 4, 0)[tag & 3]
    elif tag in (0xC5, 0xC7):  # new format: 1, 2 or 5 length bytes
        at = 2 if raw[1] < 192 else 3 if raw[1] < 224 else 6
    else:
        return None
    return raw[at] if at < len(raw) else None


_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58)}


def base58check(value: str) -> bytes | None:
    """The payload of a base58check string (Bitcoin addresses and WIF keys), or None."""
    if not 25 <= len(value) <= 60 or any(c not in _B58_INDEX for c in value):
        return None
    number = 0
    for c in value:
        number = number * 58 + _B58_INDEX[c]
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    raw = b"\x00" * (len(value) - len(value.lstrip("1"))) + raw
    payload, check = raw[:-4], raw[-4:]
    if len(payload) < 20 or hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] != check:
        return None
    return payload


def base58_kind(value: str) -> KeyKind:
    """A WIF private key (version 0x80 or 0xEF, 32 key bytes) or a public address."""
    payload = base58check(value)
    if payload is None:
        return "none"
    if payload[0] in (0x80, 0xEF) and len(payload) in (33, 34):
        return "private"
    return "public"


_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def bech32(value: str) -> bool:
    """Whether `value` is a bech32/bech32m string with a valid checksum (BIP-173/350):
    addresses and public identifiers, never secrets of their own."""
    lowered = value.lower()
    at = lowered.rfind("1")
    if value not in (lowered, value.upper()) or at < 1 or len(value) - at < 7 or len(value) > 90:
        return False
    hrp, data = lowered[:at], lowered[at + 1 :]
    if any(c not in _BECH32 for c in data):
        return False
    values = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + [_BECH32.index(c) for c in data]
    check = 1
    for v in values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ v
        for i, g in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            if (top >> i) & 1:
                check ^= g
    return check in (1, 0x2BC830A3)
