"""The secret detector: linear time by construction (RE2 only), structure before vendor lists,
and the crafted inputs that once held a write for tens of seconds.

The shapes here are written from the formats themselves (RFC 7617 Basic, DER, the SSH wire
format, ISO 13616 IBANs), not from the rules: a test of the rules' own wording would pass
whatever the rules missed.
"""

from __future__ import annotations

import ast
import base64
import random
import string
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import re2
from fastapi.testclient import TestClient

from fourfold import Memory
from fourfold.embeddings import HashEmbedder
from fourfold.service.app import create_app
from fourfold.service.keys import KeyStore
from fourfold.service.tenancy import Tenants
from fourfold.stores import InMemoryVectorStore
from fourfold.text import redact
from fourfold.text._gitleaks import GITLEAKS_VERSION
from fourfold.text._rules import compile_re2, is_re2
from fourfold.text._secret_rules import STRUCTURE_PATTERNS, vendored
from fourfold.text.redact import rules, structure_only

TEXT = Path(__file__).resolve().parents[1] / "src" / "fourfold" / "text"
_rng = random.Random(36)
_ALNUM = string.ascii_letters + string.digits


def _r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


# -- linear time by construction ------------------------------------------------------------------


def _all_patterns() -> list[object]:
    found: list[object] = list(STRUCTURE_PATTERNS)
    for policy in ("secrets", "personal"):
        for rule in rules(policy):  # type: ignore[arg-type]
            assert rule.patterns, f"{rule.kind} declares no patterns"
            found += [*rule.patterns, *([rule.gate] if rule.gate is not None else [])]
    return found


def test_every_pattern_of_every_rule_is_compiled_by_re2() -> None:
    patterns = _all_patterns()
    assert len(patterns) > 250
    assert [p for p in patterns if not is_re2(p)] == []


def test_no_detector_module_uses_pythons_re() -> None:
    """No rule can fall back to Python's backtracking engine: the modules do not import it."""
    modules = [p for p in TEXT.glob("*.py") if p.name.startswith("_") and p.name != "__init__.py"] + [TEXT / "redact.py"]
    users = []
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module in ("re", "regex"):
                names = ["re"]
            if {"re", "regex"} & set(names):
                users.append(module.name)
    assert len(modules) >= 9 and users == []


def test_re2_refuses_a_lookaround_instead_of_falling_back() -> None:
    with pytest.raises(re2.error):
        compile_re2(r"(?<!\w)secret")


# Finding 1: runs of one separator before a credential word, base64 lines after an armour line,
# runs of IBAN-like groups. Each held one write for 20-46 s; each must finish at once.
_CRAFTED = {
    "separator run before a credential word": "a-" * 9_997 + "token",
    "credential words joined by one separator": "token-" * 3_333,
    "separator run before a password word": "x_" * 9_996 + "password",
    "base64 lines after an armour line": "-----BEGIN PRIVATE KEY-----\n" + "QUFB QUFB QUFB QUFB\n" * 990,
    "IBAN-like groups": "DE89 " + " ".join(["AB12"] * 3_990),
}
_DEADLINE_S = 10.0  # a liveness bound (over 20 times what a write takes now), not a measurement


def _finishes(call: Callable[[], object]) -> bool:
    done = threading.Event()

    def run() -> None:
        call()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(_DEADLINE_S)


@pytest.mark.parametrize("name", list(_CRAFTED))
def test_a_crafted_memory_sized_input_does_not_hold_a_write(name: str, tmp_path: Path) -> None:
    text = _CRAFTED[name][:20_000]
    with Memory.open(tmp_path, embedder=HashEmbedder()) as mem:
        assert _finishes(lambda: mem.long_term.remember(text, scope="customer:1"))


def test_a_crafted_request_does_not_stall_the_service(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    tenants = Tenants(tmp_path, embedder=embedder, vector_store=lambda _t: InMemoryVectorStore(embedder_identity=embedder.identity))
    keys = KeyStore(tmp_path / "keys.sqlite3")
    client = TestClient(create_app(tenants, keys, mount_mcp=False), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {keys.create('acme')[1]}"}
    body = {"text": "token-" * 1_666, "scope": "customer:1"}  # 10 KB
    responses: list[int] = []
    assert _finishes(lambda: responses.append(client.post("/v1/memories", json=body, headers=headers).status_code))
    assert responses and responses[0] < 300


# -- vendor formats only from the vendored public rule file --------------------------------------


def test_the_vendored_rule_file_is_versioned_and_compiled() -> None:
    header = (TEXT / "vendor" / "gitleaks.toml").read_text(encoding="utf-8").splitlines()[:3]
    assert GITLEAKS_VERSION in header[0] and "83d9cd684c87d95d656c1458ef04895a7f1cbd8e" in header[1]
    loaded = vendored()
    assert len(loaded.rules) >= 200 and set(loaded.skipped) == {"pkcs12-file"}  # a file-path rule


def test_structure_only_switches_the_vendored_rules_off() -> None:
    with structure_only():
        assert not any(r.vendored for r in rules("secrets"))
    assert any(r.vendored for r in rules("secrets"))


# Literals quoted in the findings, and the vendor prefixes the hand-written table used to list:
# none may stand in the hand-written detector (prefixes come from the vendored file only).
_QUOTED = [r"\b[A-Za-z0-9_\-]*", "*?", "(?:[ ]?[A-Z0-9]{1,4}){3,9}"]
_PREFIXES = [
    "AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA", "AIza", "dop_v1", "dapi", "hvs.", "hvb.", "AGE-SECRET-KEY", "ghp_", "gho_",
    "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "glptt-", "gldt-", "glrt-", "gloas-", "ATBB", "npm_", "pypi-", "rubygems_",
    "dckr_pat_", "ATATT3", "PMAK-", "lin_api_", "glsa_", "glc_", "sntry", "NRAK-", "figd_", "sk-ant-", "sk_live", "rk_live",
    "xoxb", "xoxp", "hooks.slack", "webhook.office", "shpat_", "sq0atp", "ntn_", "eyJ", "T3BlbkFJ", "twilio",
]


def test_no_quoted_literal_or_vendor_prefix_stands_in_hand_written_source() -> None:
    sources = {p.name: p.read_text(encoding="utf-8") for p in TEXT.glob("*.py")}
    sources |= {p.name: p.read_text(encoding="utf-8") for p in TEXT.glob("*.toml")}
    found = [(name, lit) for name, src in sources.items() for lit in _QUOTED if lit in src]
    found += [(name, p) for name, src in sources.items() for p in _PREFIXES if p.lower() in src.lower()]
    assert found == []


# -- structure ----------------------------------------------------------------------------------


def _der_private_key() -> bytes:
    """A PKCS#1 RSAPrivateKey's DER: SEQUENCE { INTEGER 0 (version), INTEGER n, ... }."""
    modulus = b"\x00" + bytes(_rng.randrange(256) for _ in range(256))
    body = b"\x02\x01\x00" + b"\x02\x82\x01\x01" + modulus + b"\x02\x03\x01\x00\x01"
    return b"\x30\x82" + len(body).to_bytes(2, "big") + body


def _ssh_public_key() -> str:
    blob = b"\x00\x00\x00\x07ssh-rsa" + b"\x00\x00\x00\x03\x01\x00\x01" + b"\x00\x00\x01\x01" + bytes(_rng.randrange(256) for _ in range(257))
    return "ssh-rsa " + base64.b64encode(blob).decode() + " ops@example"


_WRAPPED_KEY = base64.b64encode(_der_private_key()).decode()
_SECRET = _r(_ALNUM, 32)
_CASES = [
    ("zero-width chars inside a token", f"token: {_SECRET[:10]}\u200b{_SECRET[10:20]}\u2060{_SECRET[20:]}", [_SECRET[:10], _SECRET[20:]]),
    ("no-break space in a card", "card 4111\u00a01111\u00a01111\u00a01111 on file", ["4111\u00a01111"]),
    ("a token wrapped across lines", f"The nightly job of the CI, the one that publishes the site, uses {_SECRET[:16]}\n"
     f"{_SECRET[16:]} to log in.", [_SECRET[:16], _SECRET[16:]]),
    ("a key without its armour lines", "the deploy key:\n" + "\n".join(_WRAPPED_KEY[i : i + 64] for i in range(0, len(_WRAPPED_KEY), 64)),
     [_WRAPPED_KEY[64:128]]),
    ("base64 of a config line", "see " + base64.b64encode(f"db_password={_SECRET}".encode()).decode(), [_SECRET[:12]]),
    ("base64 of user:password", "creds " + base64.b64encode(b"deploy:Hx8-qLw2!zz").decode(), ["ZGVwbG95"]),
    ("a password flag", f"mysql --host db --password={_SECRET} shop", [_SECRET]),
    ("a short password flag", f"sshpass -p '{_SECRET[:12]}' ssh ops@10.0.0.1", [_SECRET[:12]]),
    ("curl user flag", f"curl -u deploy:{_SECRET[:14]} https://api.example.com", [_SECRET[:14]]),
    ("a header of another scheme", f'curl -H "Authorization: Token {_SECRET}" https://api.example.com', [_SECRET]),
    ("a custom key header", f"X-Api-Key: {_SECRET}", [_SECRET]),
    ("a cookie", f"Cookie: theme=dark; session_id={_SECRET}", [_SECRET]),
    ("a signed query parameter", f"GET https://cdn.example.com/f.pdf?expires=1700000000&signature={_SECRET}", [_SECRET]),
    ("URL userinfo", f"amqp://app:{_SECRET[:16]}@mq.internal:5672/", [_SECRET[:16]]),
    ("yaml", f"database:\n  user: app\n  password: {_SECRET[:12]}\n", [_SECRET[:12]]),
    ("toml", f'[smtp]\nsmtp_pass = "{_SECRET[:12]}"', [_SECRET[:12]]),
    ("ini", f"[db]\nPwd={_SECRET[:12]}", [_SECRET[:12]]),
    ("xml", f"<password>{_SECRET[:12]}</password>", [_SECRET[:12]]),
    ("k8s env pair", f"- name: STRIPE_SECRET\n  value: {_SECRET}", [_SECRET]),
    ("powershell", f'$env:DEPLOY_TOKEN = "{_SECRET}"', [_SECRET]),
    ("german", "Mein Passwort lautet Sommer2024! für das Portal.", ["Sommer2024"]),
    ("french", "Le mot de passe est Qx7!bien.", ["Qx7!bien"]),
    ("spanish", "la contraseña es Luna#4821", ["Luna#4821"]),
    ("chinese", "我的密码是Abc12345", ["Abc12345"]),
    ("another phrasing", "Use Zk93!pqLm as the password for the VPN.", ["Zk93!pqLm"]),
    ("polish copula", "moje hasło to 3c3hXr5It!n0, login a.nowak", ["3c3hXr5It!n0"]),
    ("turkish possessive", "yönetici şifresi kWYjAZ7LdQ*7 ama sistem kabul etmiyor", ["kWYjAZ7LdQ*7"]),
    ("words before the mark", "ti scrivo la pw della VPN qui così non la perdi: Pizza540!IB", ["Pizza540!IB"]),
    ("a markdown table", "| service | user | password |\n|---|---|---|\n| grafana | admin | `OVRjbZYVrd8sYUC0ND` |", ["OVRjbZYVrd8sYUC0ND"]),
    ("quoted-printable soft break", "Content-Transfer-Encoding: quoted-printable\n\nPasswort f=C3=BCr den Shop lautet sszzp9orTy=\nyF=3D1jXNDgJWsN", ["sszzp9orTy", "yF=3D1jX"]),
    ("a secret query parameter", "GET https://graph.example.com/v19.0/me?access_token=EAAGNHmSzstZMIk6hi3KxMfXT2bcp4dzy0V8lrdtsXVV", ["EAAGNHmSzst"]),
    ("a token in a URL path", "curl https://api.example.org/bot140615072:AAUdkPD6XR68y0jU7KIYH3uA4VYTViftjpB/getMe", ["AAUdkPD6XR68"]),
    ("card with mixed separators", "Numero de tarjeta: 5576 6260-3775 2289, caduca 03/28", ["6260-3775"]),
    ("card with dots", "card 4111.1111.1111.1111 exp 09/28", ["1111.1111"]),
    ("card with slashes", "Visa 4111/1111/1111/1111 please", ["1111/1111"]),
    ("IBAN with dashes", "IBAN DE89-3704-0044-0532-0130-00 for the refund", ["0044-0532"]),
    ("lowercase IBAN", "refund to gb82 west 1234 5698 7654 32 please", ["5698 7654"]),
]


@pytest.mark.parametrize(("name", "text", "pieces"), _CASES, ids=[c[0] for c in _CASES])
def test_structure_alone_catches_shapes_no_rule_names(name: str, text: str, pieces: list[str]) -> None:
    with structure_only():
        out, found = redact(text)
    assert found and [p for p in pieces if p in out] == []


_CODE_AND_TALK = [
    "hashed_password = generate_password_hash(form.password.data)",
    "password = request.form['password']",
    "app.config['SECRET_KEY'] = 'your_secret_key_here'",
    "const web = new WebClient(process.env.SLACK_BOT_TOKEN);",
    "config.set(trt.BuilderFlag.FP16); cipher TLS_AES_256_GCM_SHA384",
    "const comparePassword = async (username, candidatePassword) => {",
    "password: String,",
    "Password: <input type=\"password\" name=\"password\">",
    "SELECT username, password FROM users WHERE username = :username",
    "Send a password reset link to the user's email address.",
    "The `_hash_password` method is a static method; passwords are securely hashed.",
    "python -m unittest discover -s tests -p 'test_*.py' and virtualenv -p python3.10 venv",
    "You can pass the required arguments to the `flake8` command.",
    "Publishable key pk_test_TYooMQauvdEDq54NiTphI7jx is what the docs use.",
    "password: ******** (hidden), the key ends in ...x7Qa",
    "Instance i-0a1b2c3d4e5f67890 in subnet-0123456789abcdef0; files upload_9e6b19c0d856.jpg.",
    "The payload is eyJldmVudCI6ICJ0aWNrZXQuY3JlYXRlZCJ9 (base64 of the event).",
]


_PUBLIC = [
    "Commit 3f2a9c8e1b7d6f5a4e3d2c1b0a9f8e7d6c5b4a3f fixed it; the checksum is "
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.",
    "Request 123e4567-e89b-12d3-a456-426614174000 failed with error E_CONN_RESET (code 0x80070005).",
    f"My public key is {_ssh_public_key()}",
    "The integrity attribute is sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC.",
    "Tracking 1Z999AA10123456784 shows it in Memphis; build 2024.06.11-rc2 is live.",
    "Use #1e90ff for links and #FFF for the background.",
    "The image digest is sha256:4d6f1c2e9b8a7f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d.",
    "Send it to 1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2, our donation address.",
    "The key is to restart the router first, then the password reset link works.",
    "Error TOKEN_EXPIRED means the session ended; SharedAccessKeyName=RootManageSharedAccessKey is fine.",
    "The class getUserAccountSettingsForTenant throws HTTPServerErrorHandlerV2 errors.",
]


@pytest.mark.parametrize("text", _PUBLIC + _CODE_AND_TALK)
def test_public_identifiers_code_and_talk_about_credentials_pass_untouched(text: str) -> None:
    assert redact(text) == (text, ())


# -- every string in a JSON value: keys and values at any depth ------------------------------------

_TOKEN = "ghp_" + _r(_ALNUM, 36)


def test_a_secret_in_a_nested_metadata_key_is_refused_and_nested_values_are_redacted(tmp_path: Path) -> None:
    from fourfold import InvalidInput

    with Memory.open(tmp_path, embedder=HashEmbedder()) as mem:
        with pytest.raises(InvalidInput, match="metadata key"):
            mem.long_term.remember("form attached", scope="customer:1", metadata={"form": {"fields": [{_TOKEN: "x"}]}})
        mid = mem.long_term.remember("form attached", scope="customer:1", metadata={"form": {"a": [{"b": f"use {_TOKEN}"}]}})
        assert _TOKEN not in repr(mem.long_term.get(mid).metadata)


def test_a_secret_in_a_fact_values_key_is_refused(tmp_path: Path) -> None:
    from fourfold import InvalidInput

    with Memory.open(tmp_path, embedder=HashEmbedder()) as mem:
        with pytest.raises(InvalidInput, match="secret"):
            mem.facts.set("plans", {"rows": [{_TOKEN: 1}]})
        with pytest.raises(InvalidInput, match="secret"):
            mem.facts.set("plans", {"a": {"b": [f"token {_TOKEN}"]}})
        assert mem.facts.list() == []


def test_a_secret_anywhere_in_a_threads_message_is_redacted() -> None:
    from fourfold.shortterm.threads import Thread, thread_payload

    message = {"role": "assistant", "content": [{"type": "tool_use", "input": {"headers": {_TOKEN: f"Bearer {_TOKEN}"}}}]}
    payload = thread_payload(Thread(scope="customer:1", messages=(message,), extras={"ticket": {"note": _TOKEN}}))
    assert _TOKEN not in repr(payload)


def test_fourfold_s_own_record_ids_are_not_tokens() -> None:
    """A memory's id in another's metadata or in a note names a record; a word stuck to the same
    hex digits that is not one of fourfold's kinds is still a token's shape."""
    from fourfold.longterm.store import memory_id
    from fourfold.text import redact

    for made in (memory_id("customer:acme", "Prefers email"), memory_id(None, "x", prefix="doc")):
        assert redact(f"supersedes {made}")[0] == f"supersedes {made}"
    assert "REDACTED" in redact("mailer-" + memory_id(None, "x").split("_")[1])[0]


def test_the_vendored_rules_json_form_is_the_toml_file() -> None:
    """The detector reads gitleaks' rules from their JSON form; it must be the released file's
    data exactly (regenerate with `python -m fourfold.text._gitleaks`)."""
    from fourfold.text._gitleaks import parsed, parsed_toml

    assert parsed() == parsed_toml()


def test_a_password_that_ends_like_a_credential_word_is_still_a_password() -> None:
    """A variable named for a credential (`hashed_password`) is code; a value with a digit that
    happens to end in such a word is a literal."""
    from fourfold.text import redact

    assert redact("db password=hunter2secret for staging")[0] == "db password=[REDACTED:password] for staging"
    assert redact("password=hashed_password")[0] == "password=hashed_password"
