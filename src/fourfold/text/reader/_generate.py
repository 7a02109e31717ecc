"""Training data for the reader: support messages and operator notes with fake identities
(Faker, many locales), surrounded by real dialogue (LoCoMo's dev conversations, BEAM's chats).

Every sentence is built from segments, plain text or (text, span kind), and carries its role
and, for a preference, its key; variations (lower case, a typo, an added greeting, reordered
sentences, another register) are applied per segment, so the labels follow the text. Only the
training script imports this module (Faker is a training-time dependency).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Example", "Generator", "dialogue"]

Segment = str | tuple[str, str]
_PLACE_CACHE: list[str] = []
_INDUSTRIES = ["Logistics", "Bakery", "Insurance", "Ceramics", "Software Studio", "Health", "Design Studio", "Transport",
               "Outfitters", "Dental", "Clinic", "Architects", "Arkitekter", "Consulting", "Motors", "Foods", "Textiles",
               "Homestay", "Hotel", "Pharmacy", "Legal", "Media", "Print", "Solar", "Farms", "Studio", "Garage", "Café",
               "Electric", "Plumbing", "Joinery", "Marine", "Analytics", "Capital", "Labs", "Systems", "Pediatric Clinic",
               "Vindteknik", "Tekstil", "Outdoor", "Ventures", "Bistro", "Dairy", "Realty", "Shipping", "Group"]
_LEGAL = ["Ltd", "GmbH", "AS", "SL", "Sp. z o.o.", "S.A.", "LLC", "Inc.", "BV", "AB", "Oy", "Pty Ltd", "KG", "SARL", "plc",
          "S.r.l.", "A/S", "Sp. j.", "Co.", "Kft.", "s.r.o.", "Ltda", "AG"]
_LOCALES = ["en_US", "en_GB", "en_IN", "en_AU", "de_DE", "fr_FR", "es_ES", "it_IT", "pt_BR", "nl_NL", "pl_PL",
            "tr_TR", "sv_SE", "da_DK", "fi_FI", "cs_CZ", "ro_RO", "hu_HU", "en_IE", "es_MX", "fr_CA", "id_ID"]


@dataclass
class Example:
    """One sentence: its segments, its role and (a preference's) key."""

    segments: list[Segment]
    role: str
    key: str | None = None


# -- what customers and operators talk about ----------------------------------------------------
_THINGS = """router|printer|invoice download|mobile app|dashboard|thermostat|VPN client|single sign-on|payroll export|
smart lock|label printer|password reset link|checkout page|barcode scanner|mesh Wi-Fi|webcam|sync client|calendar
integration|backup job|email forwarding|two-factor prompt|shared inbox|billing page|report scheduler|API token|
webhook|TV box|smart speaker|espresso machine|robot vacuum|e-reader|doorbell camera|card reader|POS terminal|
desktop app|browser extension|Outlook plugin|Android app|iPhone app|Teams integration|Slack bot|timesheet module|
CSV import|data export|search index|SSO login|license key activation|firmware update|parcel tracking page|
loyalty points|subscription renewal|gift card|refund request|delivery slot|order confirmation email|
heating schedule|sleep timer|night mode|auto-update|battery saver|screen mirroring|voice assistant|
meter reading|direct debit|statement PDF|VAT invoice|shipping label|return label|coupon code|upload form""".replace("\n", " ")
THINGS = [t.strip() for t in _THINGS.split("|") if t.strip()]
_SYMPTOMS = """keeps disconnecting|fails with error {code}|won't turn on|shows a blank page|stopped syncing|
keeps ignoring the schedule|charges me twice|times out after a few seconds|crashes on startup|is stuck on loading|
doesn't accept my card|sends the wrong amount|shows the old price|never arrives|loops back to the login screen|
drops every evening|resets itself overnight|is greyed out|prints blank pages|freezes when I open it|
rejects the file as invalid|says the link expired|shows someone else's name|reports the wrong temperature|
logs me out every few minutes|won't pair with my phone|is extremely slow since the update|displays garbled text|
keeps asking for the code again|turns itself back on|overrides my settings|shows error {code} at checkout|
won't let me download anything|goes offline at random|double-books the same slot|is missing half the entries""".replace("\n", " ")
SYMPTOMS = [s.strip() for s in _SYMPTOMS.split("|") if s.strip()]
FEATURES = ["power saving", "the sleep mode", "auto-sync", "the firewall rule", "IPv6", "the battery optimisation",
            "the night schedule", "hardware acceleration", "the old profile", "smart routing", "the eco mode",
            "the ad blocker", "background refresh", "the legacy protocol", "auto-brightness", "the proxy setting",
            "the offline cache", "the second factor", "the scheduled scan", "quiet hours", "the holiday mode",
            "compatibility mode", "the DNS override", "the cookie", "the beta channel", "band steering"]
ACTIONS = ["restarted", "reinstalled", "re-synced", "reset", "updated", "rolled back", "reconfigured", "re-issued",
           "re-uploaded", "cleared", "replaced", "re-enabled", "disabled", "migrated", "re-linked", "rebooted",
           "patched", "unlocked", "refreshed", "re-sent", "regenerated", "re-registered"]
GERUNDS = ["Disabling", "Turning off", "Switching off", "Clearing", "Resetting", "Updating", "Reinstalling",
           "Re-pairing", "Rebooting", "Enabling", "Rolling back", "Removing", "Re-uploading", "Replacing",
           "Unplugging", "Regenerating", "Deleting", "Re-linking", "Downgrading", "Renewing"]
_CODES = ["502", "404", "500", "403", "E42", "0x80070005", "401", "E-17", "503", "429", "1603", "SSL_ERROR"]
_VERSIONS = ["2.4.1", "v3.2", "1.18", "5.0.2", "build 4410", "v11", "7.3", "2024.2"]
_WHEN = ["since Monday", "since the last update", "after the power cut", "for two days", "this morning",
         "since yesterday", "every night", "after I moved", "since the firmware update", "all week", "since March"]

# -- preferences: key -> (values, object phrases about {v}) -------------------------------------
PREFERENCES: dict[str, tuple[list[str], list[str]]] = {
    "contact_channel": (["email", "e-mail", "phone", "a phone call", "text message", "SMS", "WhatsApp", "post",
                         "letter", "Slack", "Telegram", "chat", "voicemail", "Signal"],
                        ["to be contacted by {v}", "{v}", "updates by {v}", "you to reach me via {v}",
                         "hearing from you by {v}", "{v} for anything urgent", "contact over {v}"]),
    "language": (["Spanish", "German", "French", "English", "Polish", "Japanese", "Dutch", "Italian", "Portuguese",
                  "Turkish", "Arabic", "Korean", "Swedish", "Greek", "Hindi"],
                 ["replies in {v}", "to be answered in {v}", "support in {v}", "{v}", "emails written in {v}",
                  "to speak {v} with the agent"]),
    "time_of_day": (["morning", "afternoon", "evening", "late evening", "lunchtime", "early morning"],
                    ["calls in the {v}", "to be called in the {v}", "a {v} call", "appointments in the {v}",
                     "{v} visits from the engineer", "you to ring in the {v}"]),
    "day_of_week": (["Mondays", "Fridays", "weekends", "weekdays", "Saturdays", "Tuesdays", "Thursdays"],
                    ["deliveries on {v}", "visits on {v}", "the engineer to come on {v}", "appointments on {v}",
                     "callbacks on {v}"]),
    "payment_method": (["credit card", "PayPal", "bank transfer", "direct debit", "debit card", "Apple Pay",
                        "cash on delivery", "invoice"],
                       ["to pay by {v}", "paying with {v}", "to settle invoices by {v}", "{v} for payments",
                        "billing via {v}"]),
    "delivery": (["a parcel locker", "the courier", "pickup in store", "the neighbour", "the back door",
                  "the post office", "a safe place", "the reception desk"],
                 ["deliveries left at {v}", "parcels sent to {v}", "delivery to {v}", "to collect from {v}",
                  "my packages dropped at {v}"]),
    "document_format": (["PDF", "paper copies", "CSV", "printed copies", "spreadsheets", "Word documents"],
                        ["invoices as {v}", "statements in {v}", "reports as {v}", "receipts as {v}",
                         "documents sent as {v}"]),
    "units": (["metric", "imperial", "Celsius", "Fahrenheit", "kilometres", "miles"],
              ["{v} units in reports", "temperatures in {v}", "distances in {v}", "{v} on the dashboard"]),
    "currency": (["euros", "dollars", "pounds", "yen", "Swiss francs", "zloty"],
                 ["prices in {v}", "to be billed in {v}", "quotes in {v}", "amounts shown in {v}"]),
    "theme": (["dark", "light", "high-contrast", "sepia"],
              ["the {v} theme", "{v} mode in the app", "a {v} colour scheme", "the {v} layout"]),
    "notification_frequency": (["daily", "weekly", "monthly", "instant", "fortnightly"],
                               ["a {v} summary", "{v} notifications", "{v} digests", "updates on a {v} basis"]),
    # a kind of its own: the key is read from the sentence's shape by the caller
    "other": (["the blue colour", "green", "a quiet ringtone", "jazz", "tea", "the QWERTZ layout", "the large mug",
               "the corner table", "oat milk", "the standard wallpaper", "matte finish", "the short version",
               "the compact view", "landscape orientation", "red", "the newer model", "classical music"],
              ["{v}", "{v} for the lobby", "{v} as the default", "{v} on my profile", "{v} when possible"]),
}
_STATE = [
    "I prefer {x}.", "I'd prefer {x}.", "I would rather have {x}.", "I'd rather get {x}.", "Please use {x}.",
    "{X} works best for me.", "I like {x} best.", "My preference is {x}.", "We want {x}.", "Going with {x} suits me.",
    "For future reference, I prefer {x}.", "I'm more comfortable with {x}.", "Please always use {x}.",
    "I always want {x}.", "If possible, {x}, please.", "{X} is what I prefer.", "Only {x} please.",
    "i prefer {x} tbh", "pls {x}", "Kindly arrange {x}.", "Just so you know, I'd like {x}.",
    "My favourite option is {x}.", "It's easier for me with {x}.", "We'd appreciate {x}.", "Best for me: {x}.",
]
_CHANGE = [
    "Actually, {x} instead of {old} from now on.", "Please switch me to {x}.", "I've changed my mind: {x}.",
    "No more {old}, please use {x}.", "Going forward, {x} please.", "Scratch that, {x}.",
    "These days I'd rather have {x} than {old}.", "Can we change it to {x}?", "From today, {x} please.",
    "Not {old} anymore, {x} please.", "Let's go back to {x}.", "I'd like {x} again, not {old}.",
    "Update my preference to {x}.", "I no longer want {old}; {x} instead.", "Change of plan: {x}.",
    "Instead of {old}, {x} from here on.", "Forget {old}, {x} is better for me now.", "From now on I want {x}.",
    "{X} again please, {old} didn't work out.", "Switch back to {x}, please.", "These days I prefer {x} again.",
    "Please stop using {old} and use {x}.", "Now I'd rather have {x}.", "New preference: {x}.",
    "pls move me over to {x} from now", "I'd like to change to {x} going forward.",
]
#: What a customer asks never to happen, by key ("never call before 9am").
_AVOID: dict[str, list[str]] = {
    "contact_channel": ["call me", "phone me", "text me", "send me letters", "email my work address", "leave voicemails",
                        "ring my mobile", "message me on WhatsApp"],
    "time_of_day": ["call before 10am", "ring after 8pm", "phone during lunch", "call me at night",
                    "book visits in the early morning"],
    "day_of_week": ["deliver on weekends", "book visits on Mondays", "call on Sundays"],
    "document_format": ["send paper copies", "post printed invoices", "send spreadsheets"],
    "delivery": ["leave parcels outside", "hand packages to the neighbours", "use the parcel locker"],
    "payment_method": ["charge my credit card", "take direct debits", "bill my company card"],
}
_AVOID_FRAMES = ["Please never {x}.", "Don't {x}, please.", "Oh and never {x}, I work nights.", "Do not {x}.",
                 "I'd rather you didn't {x}.", "never {x} pls", "Please don't {x} again."]
_GREETINGS = ["Hi", "Hello", "Hey", "Good morning", "Good afternoon", "Dear support", "Hi there", "Hello team",
              "Morning", "Evening all", "Hey folks", "Greetings", "Hallo", "Hola", "Bonjour", "Buongiorno",
              "Guten Tag", "Dzień dobry", "Hej", "Olá", "Buenas", "Salut", "Dear Sir or Madam", "To whom it may concern"]
_SIGN_OFFS = ["Regards", "Best", "Thanks", "Cheers", "Kind regards", "Best wishes", "Many thanks", "Yours sincerely",
              "Mit freundlichen Grüßen", "Gracias", "Merci", "Grazie", "Pozdrawiam", "Obrigado", "Saludos", "Danke",
              "Thank you", "Ta", "BR", "Sent from my phone,"]
_THANKS = ["Thanks!", "Thank you so much.", "Cheers.", "Much appreciated!", "ok great", "Perfect, thanks.",
           "thx", "Sounds good.", "Got it, thank you!", "Brilliant, cheers.", "Okay.", "No worries.", "lol ok",
           "Thanks again for your help.", "Sorry for the long message.", "Appreciate it!", "You can close the ticket.",
           "Ticket can be closed.", "Called back, no answer, left vm.", "Weird, but fine.", "plz hurry, I need it tomorrow",
           "Cash flow reasons.", "thanks for the quick reply yesterday", "gm, picked up from night queue.",
           "Anyway, not a big deal.", "Long story.", "Same as before really.", "No rush.", "I know, I know.",
           "Not sure if that matters.", "Just FYI.", "Closing this one.", "Waiting on the customer."]
_FAREWELLS = ["Have a good evening!", "Have a great weekend!", "Talk soon.", "Let me know if anything else comes up.",
              "Hope you're well.", "That's all, have a nice day.", "Looking forward to hearing from you.",
              "Speak soon.", "Best of luck.", "Take care!"]
_DEVICES = ["a galaxy s23", "an iPhone 12", "a Pixel 7", "a ThinkPad", "a MacBook Air", "a Fire TV stick", "an old iPad"]
_CONTEXT = ["phone is {d}.", "it's {d}.", "We have {n} users on Windows 11.", "the console is on HDMI {n}.",
            "model {code}, bought at the local store", "it's the one in the garden facing the street",
            "We use it for about {n} hours a day.", "it's a {y} model.", "The office has {n} desks.",
            "we're on the {p} plan.", "I've had it since {y}.", "My kids use it mostly.", "It's on the second floor."]


class Generator:
    """Seeded generator of labelled sentences and messages."""

    def __init__(self, seed: int, dialogue_lines: list[tuple[list[str], str]] | None = None) -> None:
        from faker import Faker

        self.rng = random.Random(seed)
        self.fakers = [Faker(loc) for loc in _LOCALES]
        for n, fake in enumerate(self.fakers):
            fake.seed_instance(seed + n)
        self.dialogue = dialogue_lines or []

    @property
    def fake(self) -> Any:
        return self.rng.choice(self.fakers)

    # -- identities -------------------------------------------------------------------------
    def person(self) -> str:
        fake, r = self.fake, self.rng.random()
        if r < 0.5:
            return f"{fake.first_name()} {fake.last_name()}"
        if r < 0.8:
            return str(fake.first_name())
        if r < 0.9:
            return f"{self.rng.choice(['Mr', 'Mrs', 'Ms', 'Dr'])} {fake.last_name()}"
        return str(fake.last_name())

    def org(self) -> str:
        r, fake = self.rng, self.fake
        base = r.choice([str(fake.last_name()), str(fake.word()).title(), str(fake.first_name()), self._real_place()])
        industry = r.choice(_INDUSTRIES)
        forms = [str(fake.company()).replace(",", ""), f"{base} {industry}", f"{base} {industry} {r.choice(_LEGAL)}",
                 f"{base} & {fake.last_name()}", f"{base} {r.choice(_LEGAL)}", f"{fake.word().title()}{industry.split()[0].lower()}"]
        return r.choice(forms)

    def _real_place(self) -> str:
        from fourfold.text.gazetteer import _places

        if not _PLACE_CACHE:
            _PLACE_CACHE.extend(sorted(" ".join(w.capitalize() for w in p) for p in _places()))
        return self.rng.choice(_PLACE_CACHE)

    def place(self) -> str:
        return self._real_place() if self.rng.random() < 0.5 else str(self.fake.city())

    def street(self) -> str:
        fake = self.fake
        address = str(fake.street_address())
        if self.rng.random() < 0.4:
            address += f", {fake.city()}"
        if self.rng.random() < 0.2:
            address += f" {fake.postcode()}"
        if self.rng.random() < 0.1:
            return str(self.fakers[self.rng.choice([0, 1])].postcode())
        return address

    def account(self) -> str:
        r, d = self.rng, self.rng.randint
        if r.random() < 0.1:
            return f"{d(1000, 9999)}"
        forms = [f"{r.choice(['ACC', 'CUST', 'AC', 'CID', 'MBR', 'ACCT'])}-{d(1000, 9999999)}", str(d(10000000, 999999999)),
                 f"{d(100, 999)}-{d(100, 999)}-{d(1000, 9999)}", f"{r.choice('ABCDEFGHKLMNPRSTUVWXYZ')}{d(100000, 9999999)}", str(d(1000, 99999)),
                 f"{self.fake.license_plate()}"]
        return r.choice(forms)

    def order(self) -> str:
        r, d = self.rng, self.rng.randint
        forms = [f"{r.choice(['ORD', 'SO', 'PO', 'INV', 'RMA', 'TKT', 'CASE', 'REF'])}-{d(1000, 999999)}", f"#{d(10000, 9999999)}",
                 f"{d(100, 999)}-{d(1000000, 9999999)}-{d(1000000, 9999999)}", f"{d(10000000, 99999999)}", str(d(1000, 99999)), f"{r.choice(['INC', 'SR', 'TKT', 'CS'])}-{d(100, 99999)}",
                 "".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(r.randint(6, 10)))]
        return r.choice(forms)

    def tenant(self) -> str:
        r, fake = self.rng, self.fake
        base = re.sub(r"[^a-z0-9-]", "", str(fake.domain_word()).lower()) or "tenant"
        forms = [f"{base}-{r.choice(['prod', 'staging', 'dev', 'test', 'live', 'main'])}-{r.choice(['eu', 'us', 'uk', 'apac', 'de', 'east', 'west', '2'])}",
                 f"{base}-{r.choice(['prod', 'corp', 'hq', 'intl', 'group'])}", f"{base}{r.randint(1, 99)}", base,
                 f"{base}.{r.choice(['onmicrosoft.com', 'my.site', 'okta.com', 'atlassian.net', 'slack.com'])}"]
        return r.choice(forms)

    def host(self) -> str:
        r, fake = self.rng, self.fake
        svc = r.choice(['db', 'web', 'app', 'mail', 'vpn', 'fs', 'dc', 'build', 'nas', 'pg', 'batch', 'prn', 'k8s', 'redis', 'api'])
        forms = [f"{svc}-{r.choice(['main', 'ro', 'rw', 'pr', 'eu', 'us', 'prod', 'stg', 'gdy', 'lon', 'fra'])}-{r.randint(1, 30)}",
                 f"{svc.upper()}-{r.choice(['GDY', 'LON', 'FRA', 'NYC', 'BER', 'WAW'])}-{r.randint(1, 9):02d}",
                 f"{r.choice(['shop', 'reg', 'portal', 'mail', 'vpn', 'api'])}.{fake.domain_name()}",
                 str(fake.hostname()), f"{r.choice(['db', 'web', 'app', 'mail', 'vpn', 'fs', 'dc', 'build', 'nas'])}"
                 f"{r.choice(['', '-'])}{r.randint(1, 40):02d}", f"{fake.domain_word()}.{r.choice(['internal', 'local', 'corp', 'lan'])}",
                 f"{r.choice(['srv', 'host', 'node', 'pc', 'laptop'])}-{r.randint(1, 999)}.{fake.domain_name()}"]
        return r.choice(forms)

    def user_name(self) -> str:
        fake, r = self.fake, self.rng
        word = re.sub(r"\W", "", str(fake.word())) or "moon"
        other = re.sub(r"\W", "", str(fake.word())) or "kestrel"
        return r.choice([str(fake.user_name()), f"{fake.first_name()[0].lower()}{fake.last_name().lower()}",
                         f"{word.capitalize()}{other.capitalize()}",
                         f"{fake.first_name()[0].lower()}{fake.last_name().lower()}_{fake.word()}",
                         f"{word[:3]}{r.randint(1, 9)}{fake.word()[:3]}_{r.choice(['blaze', 'fox', 'x', 'pro', '99'])}",
                         f"{fake.first_name().lower()}.{fake.last_name().lower()}"])

    def dob(self) -> str:
        day = self.fake.date_of_birth(minimum_age=18, maximum_age=90)
        forms: list[str] = [day.strftime("%d/%m/%Y"), day.strftime("%m/%d/%Y"), day.isoformat(), day.strftime("%d %B %Y"),
                 day.strftime("%B %d, %Y"), day.strftime("%d.%m.%Y"), day.strftime("%-d %b %Y")]
        return str(self.rng.choice(forms))

    def spelled(self) -> str:
        digits = "zero one two three four five six seven eight nine".split()
        r = self.rng
        groups, out = r.choice([(3, 3, 4), (4, 3, 3), (2, 4, 4), (5, 6)]), []
        for g in groups:
            out.append(" ".join(r.choice(digits + ["oh"] * (r.random() < 0.1)) for _ in range(g)))
        text = r.choice([", ", " ", " - "]).join(out)
        if r.random() < 0.2:
            text = "double " + text
        return text

    def network(self) -> str:
        fake, r = self.fake, self.rng
        return r.choice([str(fake.ipv4()), str(fake.ipv4_private()), str(fake.ipv6()), str(fake.mac_address()),
                         f"{fake.ipv4()}:{r.choice([22, 443, 8080, 3389])}", f"{fake.ipv4_private()}/24"])

    def credential(self) -> str:
        fake, r = self.fake, self.rng
        word = re.sub(r"\W", "", str(fake.word())) or "spring"
        return r.choice([str(fake.password(length=r.randint(8, 16))), f"{word.capitalize()}{r.randint(10, 9999)}!",
                         f"{word}-{fake.word()}-{r.randint(1, 99)}", str(r.randint(1000, 999999)),
                         "sk_" + "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(24)),
                         str(fake.sha1())[: r.randint(16, 40)]])

    def email(self) -> str:
        return str(self.fake.email())

    def phone(self) -> str:
        r = self.rng
        if r.random() < 0.25:
            return f"{r.randint(200, 999)}-{r.randint(1000, 9999)}"
        return str(self.fake.phone_number())

    # -- sentences --------------------------------------------------------------------------
    def thing(self) -> str:
        return self.rng.choice(THINGS)

    def symptom(self) -> str:
        return self.rng.choice(SYMPTOMS).replace("{code}", self.rng.choice(_CODES))

    def problem(self) -> Example:
        r = self.rng
        t, s, when = self.thing(), self.symptom(), r.choice(_WHEN)
        frames: list[list[Segment]] = [
            [f"My {t} {s}."], [f"The {t} {s} {when}."], [f"Since the update, our {t} {s}."],
            [f"i think the {t} {s}"], [f"Our {t} {s} every time I try to log in."],
            [f"Problem: {t} {s}."], [f"For some reason the {t} {s}."], [f"Ever since {when[6:] if when.startswith('since') else 'last week'} the {t} {s}."],
            [f"The {t} on ", (self.host(), "host"), f" {s}."],
            ["Users on tenant ", (self.tenant(), "tenant"), f" report that the {t} {s}."],
            ["Order ", (self.order(), "order"), f" {r.choice(['never arrived', 'was charged twice', 'shows the wrong address', 'is stuck in processing'])}."],
            ["I can't log in as ", (self.user_name(), "user_name"), f", the {t} {s}."],
            ["Since we moved our office to ", (self.place(), "place"), f", the {t} {s}."],
            [f"The {t} {s} when I connect from ", (self.network(), "network_address"), "."],
            [f"Hey, the {t} {s} again and I need it fixed today."],
            [f"It {s.split(' ', 1)[0]} {s.split(' ', 1)[1] if ' ' in s else ''}, the {t} I mean.".replace("  ", " ")],
            [f"We're having trouble: the {t} {s}."], [f"Whenever I open the {t} it {s}."],
            [f"{t.capitalize()} {s} {when}."], [f"my {t} {s} again!!"],
            ["I can't log in with my password ", (self.credential(), "credential"), f", the {t} {s}."],
            ["Since ", (self.person(), "person"), f" changed the settings, the {t} {s}."],
            [f"The {t} at ", (self.org(), "organisation"), f" {s}."],
        ]
        if r.random() < 0.35:
            g = r.choice(GERUNDS)
            f = r.choice(FEATURES)
            host, place, ref = self.host(), self.place(), self.order()
            frames = [
                [f"I am writing to inform you that the {t} {s}."], [f"{g} {f} has not helped."], [f"{g} {f} did nothing."],
                [f"Tried {g.lower()} {f} but no luck."], [f"The {t} still {s}."], [f"{t.capitalize()} {s} AGAIN."],
                ["Third time this week."], ["We received no refund yet."], [f"Customers are complaining about the {t}."],
                [f"Cust reports {t} {s}."], ["Cust in ", (place, "place"), f" reported the {t} {s}."],
                [f"Root cause: {t} {s} on host ", (host, "host"), "."], ["Ref ", (ref, "order"), f": cust reports {t} {s}."],
                [f"i {r.choice(['buy', 'got', 'have'])} the {t} and it {s}"], [f"In the office the {t} works normally, at home it {s}."],
                [f"Separately, the {t} {s}."], [f"We got charged because the {t} {s}."], [f"{g} {f} didn't change anything."],
                [f"even after {g.lower()} {f} the {t} {s}"], [f"The {t} {s} although we set everything up correctly."],
            ]
        return Example(r.choice(frames), "problem")

    def fix(self) -> Example:
        r = self.rng
        t, f, a, g = self.thing(), r.choice(FEATURES), r.choice(ACTIONS), r.choice(GERUNDS)
        verb = r.choice(["overriding", "resetting", "blocking", "draining", "dropping", "changing", "ignoring"])
        frames: list[list[Segment]] = [
            [f"{g} {f} fixed it."], [f"{g} {f} so it stops {verb} the {t}."], [f"{a.capitalize()} the {t}; it works now."],
            [f"{a.capitalize()} the {t} for tenant ", (self.tenant(), "tenant"), "; ", (self.person(), "person"), " confirmed."],
            [f"{a.capitalize()} the {t} on ", (self.host(), "host"), f" and turned off {f}."],
            [f"Fixed by {g.lower()} {f} and then {a} the {t}."], [f"That worked: after {g.lower()} {f} the {t} is fine again."],
            [f"Resolved: {a} the {t} to version {r.choice(_VERSIONS)}."], [f"We {a} the {t} and {g.lower()} {f} solved it."],
            ["Refunded order ", (self.order(), "order"), " and sent a new label."],
            [f"{a.capitalize()} the {t} for user ", (self.user_name(), "user_name"), f", then {r.choice(ACTIONS)} {f}."],
            ["Told ", (self.person(), "person"), f" to {g.lower().removesuffix('ing')} {f}; the {t} works."],
            ["Whitelisted ", (self.network(), "network_address"), f" and {a} the {t}."],
            [f"{g} {f} did the trick, the {t} has been stable since."], [f"the fix was {g.lower()} {f}"],
            [f"Once we {a} the {t} everything came back."], [f"{a.capitalize()} {f}, issue gone."],
            ["Credited account ", (self.account(), "account"), f" and {a} the {t}."],
            [f"Update: {g.lower()} {f} fixed the {t} for me."], [f"Turned off {f} and the {t} stopped misbehaving."],
            ["Escalated to ", (self.org(), "organisation"), f", who {a} the {t}."],
            [f"{g} {f} in the settings made the {t} work again."], [f"It works now that I {a} the {t}."],
        ]
        if r.random() < 0.35:
            frames = [
                [f"Advised to {g.lower().removesuffix('ing')} {f}; {t} fine per cust."], [f"{a.capitalize()} {f}, {t} green."],
                [f"Killed job {r.randint(1000, 99999)}, rerun OK."], ["Failover to ", (self.host(), "host"), f" done, {t} correct now."],
                [f"The {t} now works again."], [f"The refund should arrive within {r.randint(1, 5)} business days."],
                ["It was held for a check and was released this morning."], ["Please allow 3-5 days for it to appear."],
                [f"Restarting your {t} should fix it; I've also re-sent the settings."], [f"{g} {f} sorted it."],
                [f"Once {f} was off, the {t} behaved."], [f"Root cause fixed: {a} the {t}."], [f"{a.capitalize()} the {t}, all good now."],
                [f"Workaround: {g.lower()} {f}."], [f"Solution was to {g.lower().removesuffix('ing')} {f}."],
            ]
        return Example(r.choice(frames), "fix")

    def _pref_phrase(self, key: str) -> tuple[str, str, str]:
        values, phrases = PREFERENCES[key]
        new, old = self.rng.sample(values, 2)
        phrase = self.rng.choice(phrases)
        return phrase.format(v=new), phrase.format(v=old), new

    def _other_preference(self, change: bool) -> Example:
        """A preference of a kind no key names: a random attribute and value ("my favourite
        lamp is amber"), so the key head learns what none of its keys looks like."""
        r, fake = self.rng, self.fake
        attr, value, old = str(fake.word()), f"{r.choice(['', 'the ', 'a '])}{fake.word()}", str(fake.word())
        frames = (["Would rather {verb} {v}.", "My favourite {a} is {v}.", "Preferred {a}: {v}", "I'd prefer {v}.",
                   "I like {v} for the {a}.", "Please use {v} as my {a}.", "I'd rather have a {v} {a}.",
                   "Wants {v} {a}", "{V} {a} suits me best."] if not change else
                  ["Actually, {v} instead of {old} from now on.", "Please switch my {a} to {v}.",
                   "I'd rather have a {v} {a} now.", "No more {old}, {v} please.", "Change my {a} to {v}."])
        text = r.choice(frames).format(verb=r.choice(["sit in", "get", "use", "have", "keep"]), v=value.strip(), a=attr,
                                       V=value.strip().capitalize(), old=old)
        return Example([text], "preference_change" if change else "preference", "other")

    def preference(self, change: bool) -> Example:
        if self.rng.random() < 0.15:
            return self._other_preference(change)
        if not change and self.rng.random() < 0.15:
            key = self.rng.choice(list(_AVOID))
            text = self.rng.choice(_AVOID_FRAMES).replace("{x}", self.rng.choice(_AVOID[key]))
            return Example([text], "preference", key)
        key = self.rng.choice(list(PREFERENCES))
        x, old, _ = self._pref_phrase(key)
        if self.rng.random() < 0.3:
            old = old.split()[-1]
        frame = self.rng.choice(_CHANGE if change else _STATE)
        text = frame.replace("{X}", x[:1].upper() + x[1:]).replace("{x}", x).replace("{old}", old)
        return Example([text], "preference_change" if change else "preference", key)

    def contact(self) -> Example:
        r = self.rng
        g = r.choice(_GREETINGS)
        frames: list[list[Segment]] = [
            [f"{g}, I'm ", (self.person(), "person"), "."], [f"{g}, this is ", (self.person(), "person"), " from ", (self.org(), "organisation"), "."],
            [f"{g}!"], [f"{g},"], ["You can reach me at ", (self.email(), "email"), "."], ["My number is ", (self.phone(), "phone"), "."],
            ["Call me on ", (self.spelled(), "spelled_number"), "."], ["I live at ", (self.street(), "street_address"), "."],
            [f"{r.choice(_SIGN_OFFS)}, ", (self.person(), "person")], [f"{r.choice(_SIGN_OFFS)} ", (self.person(), "person")],
            [(self.person(), "person"), " here."], [f"{r.choice(_SIGN_OFFS)},"],
            [f"{g}, ", (self.person(), "person"), " from ", (self.org(), "organisation"), " here."],
            ["I'm writing from ", (self.place(), "place"), "."], ["I was born on ", (self.dob(), "birth_date"), "."],
            ["Extension ", (str(r.randint(100, 9999)), "phone"), ", ask for ", (self.person(), "person"), "."],
            [f"{r.choice(_SIGN_OFFS)}, ", (self.person(), "person"), ", ", (self.org(), "organisation")],
            ["I'm ", (self.person(), "person"), ", I run a small ", r.choice(["shop", "bakery", "clinic", "studio", "garage"]),
             " in ", (self.place(), "place"), "."],
            ["My account number is ", (self.account(), "account"), "."], ["Order number: ", (self.order(), "order"), "."],
            ["My date of birth is ", (self.dob(), "birth_date"), "."], ["DOB ", (self.dob(), "birth_date")],
            ["Ship it to ", (self.street(), "street_address"), ", please."], ["I'm based in ", (self.place(), "place"), "."],
            [f"{g}, ", (self.person(), "person"), " from ", (self.place(), "place"), " again."],
            ["my mobile is ", (self.spelled(), "spelled_number")], ["Username: ", (self.user_name(), "user_name")],
            ["I'm the IT admin at ", (self.org(), "organisation"), ", ", (self.place(), "place"), "."],
            ["Thanks, ", (self.person(), "person"), " (", (self.org(), "organisation"), ")"],
            [f"{g} ", (self.person(), "person"), ","], ["Reg plate ", (self.account(), "account"), "."],
            [f"{g}, my name is ", (self.person(), "person"), " and my order is ", (self.order(), "order"), "."],
            ["Contact: ", (self.person(), "person"), ", ", (self.phone(), "phone")],
            ["Lead guest: ", r.choice(["Mrs. ", "Mr. ", "Ms. ", "Dr. "]), (self.person(), "person"), "."],
            ["Spoke with ", r.choice(["Ms. ", "Mr. ", "Dr. ", ""]), (self.person(), "person"), " about the order."],
            ["Thanks in advance. ", (self.person(), "person")], ["Call ", (self.person(), "person"), " on extension ",
                                                                   (str(r.randint(100, 999)), "phone"), "."],
            ["Customer ID ", (self.account(), "account"), " asked again."], ["Mail goes to ", (f"P.O. Box {r.randint(10, 9999)}", "street_address"), "."],
            ["Ship it to ", (self.street(), "street_address"), " please."], [f"{g} ", (self.person(), "person"), ", "],
            [f"Use {r.choice(['phone', 'tel', 'sms', 'whatsapp', 'fax', 'mobile', 'the landline'])} ", (self.phone(), "phone"),
             f" {r.choice(['after lunch', 'in the evening', 'any time', 'if urgent', ''])}".rstrip() + "."],
        ]
        return Example(r.choice(frames), "contact")

    def question(self) -> Example:
        r = self.rng
        t, f = self.thing(), r.choice(FEATURES)
        frames: list[list[Segment]] = [
            [f"How do I turn off {f}?"], [f"Can you tell me whether the {t} supports {f}?"], [f"is there a way to reset the {t}"],
            ["What's the status of order ", (self.order(), "order"), "?"], [f"Do you know why the {t} does this?"],
            [f"Should I {r.choice(ACTIONS).removesuffix('ed')} the {t} first?"], [f"Where can I find the {t} settings?"],
            ["Could you check account ", (self.account(), "account"), " for me?"], [f"When will the {t} be fixed?"],
            ["Any idea what causes this?"], [f"Is {f} safe to disable?"], ["Can someone call me back today?"],
            ["Did ", (self.person(), "person"), " already look into this?"], [f"how long does a {t} refund take?"],
            ["Please look at ", r.choice(["order ", "reservation ", "issue ", "invoice ", "ticket ", "case "]),
             (self.order(), "order"), r.choice([" today.", ".", " asap", " when you can."])],
            ["Please advise urgently."], ["Please advise."], [f"Please check the {t} again."], ["Kindly help."],
            [f"Please fix the {t} asap."], [f"Please look into the {t}."], [f"Could someone have a look at the {t}?"],
            ["Please confirm once it's done."], [f"Please send someone to check the {t}."], ["Any update on this?"],
        ]
        return Example(r.choice(frames), "question")

    def chatter(self) -> Example:
        r = self.rng
        if self.dialogue and r.random() < 0.6:
            line = self._dialogue_line()
            last = line[-1] if isinstance(line[-1], str) else line[-1][0]
            return Example(line, "question" if last.rstrip().endswith("?") else "chatter")
        if r.random() < 0.35:
            text = r.choice(_CONTEXT).format(d=r.choice(_DEVICES), n=r.randint(1, 40), y=r.randint(2012, 2024),
                                             code=f"{r.choice('ABCDRX')}{r.choice('FSTX')}-{r.randint(100, 999)}",
                                             p=r.choice(["basic", "family", "pro", "business"]))
            return Example([text], "chatter")
        return Example([r.choice(_THANKS)], "chatter")

    def _dialogue_line(self) -> list[Segment]:
        """A real line of dialogue; the speakers' names in it become fake ones, tagged."""
        names, line = self.rng.choice(self.dialogue)
        segments: list[Segment] = []
        pos = 0
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b") if names else None
        for m in pattern.finditer(line) if pattern else ():
            segments.append(line[pos : m.start()])
            segments.append((self.person(), "person"))
            pos = m.end()
        segments.append(line[pos:])
        return [s for s in segments if s]

    def mention(self) -> Example:
        """An identifier of any kind in a carrier sentence: what makes it one is the value and
        its context, not a fixed frame."""
        r = self.rng
        kinds = {"person": self.person, "organisation": self.org, "place": self.place, "street_address": self.street,
                 "account": self.account, "order": self.order, "tenant": self.tenant, "host": self.host,
                 "user_name": self.user_name, "network_address": self.network, "birth_date": self.dob}
        cues = {"person": ["", "colleague ", "my manager "], "organisation": ["", "the firm ", "our supplier "],
                "place": ["", "the office in ", "our branch in "], "street_address": ["", "the shop at ", "the flat at ", "I live at ", "postcode ", "the label says "],
                "account": ["account ", "customer number ", "contract ", "member ID ", "plate ", "card ending in ", "meter no. ",
                            "policy ", "CUST-", "acct "],
                "order": ["order ", "booking ", "invoice ", "ticket ", "reference ", "case "],
                "tenant": ["tenant ", "workspace ", "org ", "instance "], "host": ["", "server ", "host ", "machine ", "the box "],
                "user_name": ["user ", "username ", "login ", "handle ", "account name "],
                "network_address": ["", "IP ", "address ", "the IP ", "gateway "],
                "birth_date": ["born ", "born on ", "date of birth ", "DOB: ", "birthday "]}
        kind = r.choice(list(kinds))
        cue = r.choice(cues[kind])
        value = (cue, (kinds[kind](), kind))
        carriers: list[tuple[list[Segment], str]] = [
            ([*value, " answers but nothing loads"], "problem"), (["the error only happens for ", *value], "problem"),
            (["We checked ", *value, " and the logs are clean."], "fix"), (["Moved ", *value, " to the new plan."], "fix"),
            (["Can you look at ", *value, "?"], "question"), (["It's about ", *value, "."], "contact"),
            (["Same issue with ", *value, " as last week."], "problem"), (["", *value, " was updated yesterday."], "fix"),
            (["Details: ", *value], "contact"), (["also ", *value, " is affected"], "problem"),
            (["Merged ", *value, " into the other profile."], "fix"), (["See ", *value, " for the notes."], "fix"),
            (["Please check ", *value, " again"], "question"), (["Noted ", *value, " in the ticket."], "fix"),
        ]
        if kind == "person" and not cue:
            carriers += [(["FYI ", *value, "."], "chatter"), (["escalated to L2 (", *value, ")."], "chatter"),
                         (["Owner ", *value, " notified by mail."], "fix"), (["Handled w/ ", *value, "."], "chatter"),
                         (["spoke w/ ", *value, ", all sorted."], "fix"), (["ask for ", *value], "contact"),
                         (["I'm writing for my dad, ", *value, "."], "contact"), (["Checked with ", *value, " on it."], "fix")]
            carriers += [([*value, f" {v} ", r.choice(['it works', 'the fix', 'on the phone: all good', 'the printer is back'])],
                          "fix") for v in ("confirmed", "says", "reported", "agreed", "checked")]
        if kind == "place":
            carriers += [(["Cust in ", *value, " reported it too."], "problem"), (["our ", *value, " branch is affected"], "problem"),
                         (["Greetings from ", *value, "!"], "contact"), (["shipped from ", *value, " yesterday"], "chatter"),
                         (["the ", *value, " office"], "chatter"), (["We are a small team in ", *value, "."], "contact")]
        segments, role = r.choice(carriers)
        return Example([x for x in segments if x], role)

    def credentials(self) -> Example:
        r = self.rng
        secret = (self.credential(), "credential")
        frames: list[list[Segment]] = [
            ["my password is ", secret], ["I can't sign in, the password is ", secret, " and it says invalid."],
            ["pw: ", secret], ["The PIN is ", secret, "."], ["API key ", secret, " stopped working."],
            ["login ", (self.user_name(), "user_name"), " / ", secret], ["passcode ", secret, " doesn't work anymore"],
            ["I reset it to ", secret, " but it still fails."], ["temp password set to ", secret, ", user must change it."],
            ["the wifi key is ", secret], ["token: ", secret], ["My security answer is ", secret, "."],
        ]
        return Example(r.choice(frames), r.choice(["problem", "problem", "fix"]) if r.random() < 0.5 else "problem")

    def sentence(self) -> Example:
        r = self.rng.random()
        if r < 0.08:
            return self.mention()
        if r < 0.11:
            return self.credentials()
        r = self.rng.random()
        if r < 0.2:
            return self.problem()
        if r < 0.38:
            return self.fix()
        if r < 0.5:
            return self.preference(change=False)
        if r < 0.62:
            return self.preference(change=True)
        if r < 0.78:
            return self.contact()
        if r < 0.86:
            return self.question()
        return self.chatter()

    def message(self) -> list[Example]:
        """A message of one to five sentences, varied (see `vary`)."""
        n = self.rng.choice([1, 1, 2, 2, 3, 3, 4, 5])
        return vary([self.sentence() for _ in range(n)], self.rng, self)


# -- variations -----------------------------------------------------------------------------------
def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 1)
    kind = rng.random()
    if kind < 0.4:
        return word[:i] + word[i + 1 :]
    if kind < 0.8:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + word[i] + word[i:]


def _map_text(segments: list[Segment], f: Any) -> list[Segment]:
    return [f(s) if isinstance(s, str) else (f(s[0]), s[1]) for s in segments]


def vary(examples: list[Example], rng: random.Random, gen: Generator | None = None) -> list[Example]:
    """Lower case, a typo, a capitalised first word, an added greeting, reordered sentences."""
    out = list(examples)
    if rng.random() < 0.3:
        rng.shuffle(out)
    if gen is not None and rng.random() < 0.15:
        out.insert(0, Example([f"{rng.choice(_GREETINGS)},"], "contact"))
    varied = []
    for ex in out:
        segs = list(ex.segments)
        if rng.random() < 0.2:  # a typo in a plain word
            idx = [i for i, s in enumerate(segs) if isinstance(s, str)]
            if idx:
                i = rng.choice(idx)
                ws = str(segs[i]).split(" ")
                j = rng.randrange(len(ws))
                ws[j] = _typo(ws[j], rng)
                segs[i] = " ".join(ws)
        if rng.random() < 0.1 and isinstance(segs[0], str) and segs[0]:
            first = str(segs[0])
            segs[0] = first[:1].upper() + first[1:]
        varied.append(Example(segs, ex.role, ex.key))
    if rng.random() < 0.25:
        varied = [Example(_map_text(e.segments, str.lower), e.role, e.key) for e in varied]
    elif rng.random() < 0.05:
        varied = [Example(_map_text(e.segments, str.upper), e.role, e.key) for e in varied]
    if rng.random() < 0.2:
        varied = [Example(_map_text(e.segments, lambda s: s.rstrip(".!")), e.role, e.key) for e in varied]
    return varied


def render(examples: list[Example]) -> tuple[str, list[tuple[int, int, str, str | None]], list[tuple[int, int, str]]]:
    """The message's text, its sentences (start, end, role, key) and its spans (start, end, kind)."""
    parts: list[str] = []
    pos = 0
    sents, spans = [], []
    for n, ex in enumerate(examples):
        if n:
            parts.append(" ")
            pos += 1
        start = pos
        for seg in ex.segments:
            text, kind = (seg, None) if isinstance(seg, str) else seg
            if kind is not None:
                spans.append((pos, pos + len(text), kind))
            parts.append(text)
            pos += len(text)
        sents.append((start, pos, ex.role, ex.key))
    return "".join(parts), sents, spans


# -- real dialogue ---------------------------------------------------------------------------------
def dialogue(locomo: Path | None, beam: Path | None, *, limit: int = 6000, seed: int = 0) -> list[tuple[list[str], str]]:
    """Lines of real dialogue, each with the speaker names it may hold: LoCoMo's dev
    conversations (a JSON file) and BEAM's chats (a git directory or a folder of chat.json)."""
    lines: list[tuple[list[str], str]] = []
    if locomo is not None and locomo.exists():
        for sample in json.loads(locomo.read_text()):
            conv = sample["conversation"]
            names = [conv["speaker_a"], conv["speaker_b"]]
            names += [n[:3] for n in names if len(n) > 4]
            for key, turns in conv.items():
                if key.startswith("session_") and isinstance(turns, list):
                    lines += [(names, t["text"]) for t in turns if 3 <= len(t["text"].split()) <= 40]
    # Lines whose capitalised words are all speaker names or sentence openers: another proper
    # noun in them (a friend's name, a town) would be taught as ordinary text.
    lines = [(n, t) for n, t in lines if not _OTHER_PROPER.search(_strip(t, n))]
    for text in _beam_user_turns(beam):
        lines.append(([], text))
    rng = random.Random(seed)
    rng.shuffle(lines)
    return [(n, t) for n, t in lines[:limit]]


_OTHER_PROPER = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")


def _strip(text: str, names: list[str]) -> str:
    for name in names:
        text = re.sub(rf"\b{re.escape(name)}\b", "x", text)
    return re.sub(r"\bI\b", "i", text)


def _beam_user_turns(beam: Path | None) -> Iterator[str]:
    if beam is None or not beam.exists():
        return
    if (beam / "HEAD").exists():  # a bare git directory
        listing = subprocess.run(["git", "-C", str(beam), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True,
                                 text=True, check=True).stdout.split()
        files = [f for f in listing if f.startswith("chats/100K/") and f.endswith("chat.json")][:10]
        texts = [subprocess.run(["git", "-C", str(beam), "show", f"HEAD:{f}"], capture_output=True, text=True,
                                check=True).stdout for f in files]
    else:
        texts = [p.read_text() for p in sorted(beam.glob("chats/100K/*/chat.json"))[:10]]
    for raw in texts:
        for batch in json.loads(raw):
            for turn in (t for group in batch.get("turns", []) for t in group):
                if turn.get("role") == "user":
                    content = re.sub(r"\s*->->.*$", "", turn["content"]).strip()
                    for sentence in re.split(r"(?<=[.!?])\s+", content):
                        if 4 <= len(sentence.split()) <= 40:
                            yield sentence
