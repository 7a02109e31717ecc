"""The reader: one trained model for sentence roles, preference keys and identifying spans."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

from fourfold.errors import ModelError
from fourfold.text.reader import ROLES, SPAN_KINDS, credential_spans, read
from fourfold.text.reader._model import Heads

SRC = Path(__file__).resolve().parent.parent / "src"

#: Quoted in the findings the reader was built from: the model has to find these, the code may not name them.
FINDINGS = ("acme-prod-eu", "I now prefer", "Okonkwo", "ORD-88412", "Priya", "overriding the timer",
            "IdP metadata", "prefer email again", "(nothing worth remembering)", "customer:acme")


def test_no_literal_from_the_findings_in_the_source() -> None:
    for path in SRC.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".toml", ".txt", ".md", ".json", ".html", ".js"):
            text = path.read_text(encoding="utf-8", errors="ignore").lower()
            for literal in FINDINGS:
                assert literal.lower() not in text, f"{literal!r} is written in {path}"


def kinds(text: str) -> dict[str, str]:
    return {text[s.start : s.end]: s.kind for s in read(text).spans}


def roles(text: str) -> list[str]:
    return [s.role for s in read(text).sentences]


def test_the_findings_are_read_by_the_model() -> None:
    note = kinds("Re-uploaded IdP metadata for tenant acme-prod-eu; Priya confirmed")
    assert note.get("acme-prod-eu") == "tenant" and note.get("Priya") == "person"
    (sentence,) = read("I now prefer email again.").sentences
    assert sentence.role == "preference_change" and sentence.key == "contact_channel"
    opening = read("Hi, I'm Alice Okonkwo (order ORD-88412). Downloading my invoice as PDF fails with error 502.")
    assert [s.role for s in opening.sentences] == ["contact", "problem"]
    assert {opening.text[s.start : s.end] for s in opening.spans} == {"Alice Okonkwo", "ORD-88412"}


def test_a_capitalised_first_word_is_no_name() -> None:
    assert kinds("Disabling the sleep mode so it stops overriding the timer fixed it.") == {}
    assert roles("Disabling the sleep mode so it stops overriding the timer fixed it.") == ["fix"]


@pytest.mark.parametrize(("text", "kind"), [
    ("my number is four one five five five five zero one four two", "spelled_number"),
    ("the box answers on 10.20.31.7 but not from outside", "network_address"),
    ("Restarted the sync agent on db-07.corp and it caught up.", "host"),
])
def test_identifying_spans(text: str, kind: str) -> None:
    assert kind in kinds(text).values()


def test_roles_of_unseen_wordings() -> None:
    assert roles("The thermostat app shows the wrong room temperature since Tuesday.") == ["problem"]
    assert roles("Could you tell me where the export button went?") == ["question"]
    assert roles("cheers, much appreciated") == ["chatter"]
    assert roles("From next month please send my statements by post instead of email.") == ["preference_change"]


def test_a_scope_key_is_reused() -> None:
    (sentence,) = read("I'd prefer a window seat on long flights.", keys=("seat",)).sentences
    assert sentence.role == "preference" and sentence.key == "seat"


def test_credential_context() -> None:
    text = "I can't sign in, my password is marble-otter-42 and it says invalid."
    assert [text[s.start : s.end] for s in credential_spans(text)] == ["marble-otter-42"]
    assert credential_spans("The marble counter arrived with a crack.") == ()


def test_unreadable_weights_are_a_model_error(tmp_path: Path) -> None:
    bad = tmp_path / "reader.npz"
    bad.write_bytes(b"not an archive")
    with pytest.raises(ModelError):
        Heads(bad)
    np.savez(bad, tokens=np.zeros((3, 2), np.int8), tokens_scale=np.ones(2, np.float32), roles=np.zeros((3, 2), np.int8),
             roles_scale=np.ones(2, np.float32), keys=np.zeros((3, 2), np.int8), keys_scale=np.ones(2, np.float32))
    with pytest.raises(ModelError):
        Heads(bad)


# -- invariance: variants of a text read as the text does ---------------------------------------------
BASES = (
    "Since the firmware update our label printer skips every second label. Regards, Ingrid Solberg",
    "Turning off band steering stopped the laptop from dropping the Wi-Fi.",
    "Going forward please phone me rather than sending emails.",
    "I'd like all invoices as PDF, please.",
    "Hello, Tomasz Wierzbicki from Gdansk here. The payroll export misses the overtime column.",
    "Reset the SSO certificate for tenant nordwind-prod-eu; Lars confirmed logins work again.",
    "The kiosk at 22 Mill Lane, Bristol keeps rebooting. You can reach me at 07700 900 421.",
    "My date of birth is 14/03/1987 and the portal still says my account is locked.",
    "Please write to me in German from now on.",
    "The VPN drops whenever I connect from 172.16.4.20 at the office.",
)


def variants(text: str, rng: random.Random) -> list[str]:
    out = [text[:1].upper() + text[1:], text.lower(), f"Hi there! {text}"]
    parts = re.split(r"(?<=[.!?])\s+", text)
    if len(parts) > 1:
        out.append(" ".join(parts[1:] + parts[:1]))
    words = list(re.finditer(r"\b[a-z]{5,}\b", text))
    m = rng.choice(words)
    w = m.group()
    out.append(text[: m.start()] + w[0] + w[2] + w[1] + w[3:] + text[m.end() :])
    return out


def signature(text: str) -> tuple[object, ...]:
    reading = read(text)
    prefs = sorted((s.role, s.key) for s in reading.of_role("preference", "preference_change"))
    spans = sorted(text[s.start : s.end].lower() for s in reading.spans)
    return tuple(prefs), tuple(spans)


def test_variants_agree_with_the_original() -> None:
    rng = random.Random(3)
    pairs = [(base, v) for base in BASES for v in variants(base, rng)]
    agree = sum(signature(base) == signature(v) for base, v in pairs)
    assert agree / len(pairs) >= 0.95, [(b, v) for b, v in pairs if signature(b) != signature(v)]


def test_labels_are_the_documented_ones() -> None:
    assert "problem" in ROLES and "preference_change" in ROLES and len(ROLES) == 7
    assert {"person", "tenant", "host", "birth_date", "spelled_number", "network_address"} <= set(SPAN_KINDS)
