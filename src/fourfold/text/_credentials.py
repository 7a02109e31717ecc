"""The words that make a context a credential's, in the languages support text comes in.

A value is a secret by its context (a field named for a credential, a sentence about one) or
by its shape (`_shapes`). These are the nouns of that context, and the nouns that name a
public identifier instead (a commit, a checksum, a tracking number), so that a random-looking
value after "checksum" stays while one after "token" goes. Field names are split into words
(snake_case, kebab-case, camelCase, dotted) and judged by their head, the last word:
`token_ttl` is a duration, `session_token` a secret.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

__all__ = ["CONTEXT_WORDS", "COPULAS", "PUBLIC_WORDS", "SEPARATORS", "SKIP_WORDS", "NameKind", "name_kind", "name_words"]

NameKind = Literal["password", "secret", "key"]

# Nouns for a password in many languages (lowercase, as written; accents both ways).
PASSWORD_WORDS = frozenset(
    """
    password passwords passwd pwd pw pass passcode passphrase passwort kennwort kenwort contraseña
    contrasena contraseñas senha senhas wachtwoord lösenord losenord lösenordet salasana hasło
    haslo heslo jelszó jelszo jelszava şifre sifre şifrem şifresi sifresi şifreniz parola parolası parolasi
    parolanız parolă passord adgangskode hasła hasłem passwortes kennworts
    kodeord mdp motdepasse пароль пароля паролем парола лозинка κωδικός συνθηματικό
    密码 密碼 口令 パスワード 暗証番号 비밀번호 암호 סיסמה סיסמא पासवर्ड รหัสผ่าน
    """.split()
) | {"mot de passe", "palavra-passe", "palavra passe", "kata sandi", "kata laluan", "parola d'ordine", "mật khẩu",
     "كلمة المرور", "كلمة السر", "pass phrase", "pass code"}
# Nouns for other credentials: tokens, keys, secrets, signatures, sessions.
SECRET_WORDS = frozenset(
    """
    secret secrets token tokens apikey apikeys credential credentials creds cred auth
    authorization authorisation signature sig jwt bearer cookie privatekey secretkey
    accesskey authkey sessionid sessiontoken otp totp mfa
    jeton jetons clé clef clave llave chave chiave schlüssel schluessel sleutel nyckel nøgle
    nøkkel avain klucz klíč kulcs anahtar cheie secreto segredo segreto geheimnis geheim
    ключ токен секрет 密钥 密鑰 令牌 秘钥 トークン 秘密鍵 シークレット 토큰 비밀키
    """.split()
)
# "key" is a credential only with one of these before it (api_key, AccountKey, ssh key);
# a sort key, a primary key or a cache key is not.
KEY_MODIFIERS = frozenset(
    """
    api access secret private signing sign encryption encrypt decryption master auth account
    client app application service license licence ssh hmac deploy consumer subscription
    storage crypto session shared root admin write read server integration management mgmt
    live prod production test sandbox user personal webhook ingest ingestion publishable
    restricted recovery backup wallet seed gpg pgp age jwt token
    """.split()
)
KEY_WORDS = frozenset({"key", "keys", "schlüssel", "clé", "clave", "chave", "chiave", "sleutel", "ключ"})
# Head words after which a field holds a setting about a credential, not the credential.
SETTING_WORDS = frozenset(
    """
    id ids name names type types ttl expires expiry expiration expired timeout length len size
    count max min limit limits version url uri endpoint path file dir header prefix suffix
    format mode enabled disabled required policy policies scope scopes alias label hint
    algorithm algo kind rotation rotated created updated age lifetime duration days hours
    minutes seconds attempts retries strength rules rule reset validity valid set
    """.split()
)
# Words that may end a field name after the credential's own noun (`password_value`).
VALUE_SUFFIXES = frozenset("value val str string b64 base64 hex raw text data enc encoded plain plaintext clear".split())
# Words naming a public identifier: a random-looking value after one is not a secret.
PUBLIC_WORDS = frozenset(
    """
    id ids identifier uuid guid sha sha1 sha256 sha512 hash hashes checksum checksums digest
    md5 crc commit commits revision rev build builds version release tracking shipment parcel
    order invoice transaction txn reference ref serial etag fingerprint thumbprint public
    pubkey address color colour hex integrity trace span request correlation image tag branch hostname
    host domain url link path file filename blob object number no nr sku isbn ean upc imei
    container pod artifact package doi asin vin ticket case
    incident account customer member
    """.split()
)
# Words that say "the value follows", in English and the other languages above; and the
# marks that do, alone or at the start of the value ("密码是x", "password:x").
COPULAS = frozenset(
    """
    is was are equals reads es era est était ist lautet lautete war è é são var är blev jest to
    olarak olur это là adalah ialah sera será wird c'est è: 是 为 為 は 는 은 이 です
    """.split()
)
SEPARATORS = (":", "=", "：", "->", "=>", "是", "为", "為", "は", "는", "은", "が")
# Words between the copula and the value ("is now x", "was changed to x").
SKIP_WORDS = frozenset("now still currently set changed reset updated to just simply actually temporarily".split())
# Every word above that may stand in running prose, for the one pass that finds them.
CONTEXT_WORDS = PASSWORD_WORDS | SECRET_WORDS | KEY_WORDS


@lru_cache(maxsize=16384)  # names and their parts repeat, within a text and across texts
def name_words(name: str) -> tuple[str, ...]:
    """A field name's words, lowercased: `x-api-key`, `AccountKey`, `DB_PASSWORD` -> [.., key].

    Words break at anything not a letter or digit, and before a capital that follows a
    lowercase letter or digit, or that starts a word after a run of capitals ("APIKey")."""
    words: list[str] = []
    current: list[str] = []
    for i, char in enumerate(name):
        if not char.isalnum():
            if current:
                words.append("".join(current))
                current = []
            continue
        if char.isupper() and current:
            previous = name[i - 1]
            following = name[i + 1] if i + 1 < len(name) else ""
            if previous.islower() or previous.isdigit() or (previous.isupper() and following.islower()):
                words.append("".join(current))
                current = []
        current.append(char)
    if current:
        words.append("".join(current))
    return tuple(w.lower() for w in words)


@lru_cache(maxsize=8192)  # the same few field names and words come back in every text
def name_kind(name: str) -> NameKind | None:
    """What a field named `name` holds: a password, another secret, a key, or none of them."""
    words = name_words(name)
    while len(words) > 1 and words[-1] in VALUE_SUFFIXES:
        words = words[:-1]
    if not words:
        return None
    head = words[-1]
    joined = "".join(words)
    if head in PASSWORD_WORDS or joined in PASSWORD_WORDS:
        return "password"
    if head in SECRET_WORDS or joined in SECRET_WORDS:
        return "secret"
    if head in KEY_WORDS:
        return "key" if len(words) > 1 and words[-2] in KEY_MODIFIERS else None
    if head.endswith(("password", "passwd", "passwort", "secret", "token")):
        return "password" if "pass" in head else "secret"  # "dbpassword", "clientsecret"
    if head.endswith("key") and head[:-3] in KEY_MODIFIERS:
        return "key"  # "apikey", "accountkey"
    return None
