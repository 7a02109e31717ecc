"""The shared case base on a generated support desk: does a fix reach the next customer, and
does anything personal, or any failed attempt, reach them with it?

32 problem types. For each, a customer first tries a fix that fails (resolved with
success=False), then another customer meets the problem giving several kinds of personal
details (name, email, phone in one of many formats, postal address, order, account or ticket
number, card, IBAN, a stated preference), and the operator's outcome names them too ("Called
Maria back on ..."); half of them type their introduction in lowercase, with a surname and a
town that are dictionary words ("hi, ambrose baker here from reading"; `--intros` picks those
wordings: design, held-out, fresh). Later, three other customers ask about the same problem in
other words.
Every later customer's system prompt is checked for

- fix_reached: the share whose prompt carries the fix;
- failed_offered: later prompts that carry a failed attempt's outcome (goal: 0);

and every prompt of every customer (the first customers' too) for

- pii_leaked: personal details of another customer that reached the prompt (goal: 0), each
  detail counted once per prompt, attributed by source (`_attributed`): a detail counts for
  the customer who disclosed it (their messages or the operators' outcomes of their tickets
  hold it) wherever a prompt line carries it, unless another text explains the line: the
  operators' generic fix texts ("matching it by amount" names no one), the documentation,
  the asker's own memories and episodes where the asker wrote the word, or a case derived
  from another customer who wrote it (their word). A case derived from the owner's ticket,
  a case without a source and a line that does not line up with the turn's report explain
  nothing. Before the real runs, a self-check writes one customer's case unmasked
  (`Unmasked`) and stops unless the attributed count sees it;
- raw (`raw_pii`, `raw_unlisted`): the word-level count, each other customer's detail value
  anywhere in a prompt outside the generic fix texts and the asker's own message, whoever
  wrote it and whether or not its owner ever typed it (the generator gives every customer a
  lowercase surname and town, which only half of them write).

Variants: `detector` (the personal detector and the taint only), `shared-words` (plus the
offline lever: a customer's word travels only if 3 customers' tickets, the docs, the facts
or the operator's outcome hold it; the default), and `model` (a stand-in chat model writes
each case: it copies the operator's outcome, details included, so the detector's check is
what is measured). Also printed: the details the detector alone missed in the first
customers' messages, by kind. The last line is the default variant's:

    cases: fix_reached=X failed_offered=N pii_leaked=N unlisted_leaked=N raw_pii=N raw_unlisted=N

    python benchmarks/cases.py [--embedder hash|minilm] [--types N] [--seed N] [--variants ...] [--verbose]
                               [--intros design|held-out|fresh]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fourfold import Memory
from fourfold.agent import SupportAgent, TurnReport, customer_scope
from fourfold.agent.cases import CASE_TAG, CaseBase
from fourfold.agent.deidentify import Ticket
from fourfold.agent.prompt import DATA_CLOSE, DATA_OPEN, SECTION_TITLES
from fourfold.embeddings import Embedder, HashEmbedder
from fourfold.episodic import SHARED_SCOPE
from fourfold.episodic.codec import build_episode
from fourfold.models import OfflineModel, ScriptedModel
from fourfold.models.base import ChatModel, ChatResponse
from fourfold.text import redact, tokenize
from fourfold.text.gazetteer import known
from fourfold.types import Episode

# (first customer's wording, three later wordings, the operator's fix, the fix's key phrase,
#  a failed attempt's outcome)
PROBLEMS: list[tuple[str, tuple[str, str, str], str, str, str]] = [
    ("downloading my invoice as PDF fails with error 502",
     ("the invoice PDF will not download, I get a 502", "502 error whenever I try to save an invoice as PDF",
      "can't get the PDF of my bill, server says 502"),
     "cleared the browser cache and the invoice PDF downloaded", "cleared the browser cache",
     "asked the customer to try another invoice; still 502"),
    ("the mobile app crashes as soon as I open the orders screen",
     ("app closes itself when I tap on orders", "orders page makes the phone app crash",
      "every time I go to my orders the app quits"),
     "updating the app to version 5.2 stopped the crash on the orders screen", "updating the app to version 5.2",
     "rebooting the phone did not stop the crash"),
    ("password reset emails never arrive in my inbox",
     ("I requested a new password but no email came", "the reset link email is not showing up",
      "forgot my password and the reset mail never comes"),
     "the reset email was in the spam folder; whitelisting noreply fixed delivery", "whitelisting noreply",
     "resending the reset email twice did not help"),
    ("two-factor codes by SMS are not being delivered",
     ("I don't receive the 2FA text message", "login verification SMS never shows up",
      "the security code text is not coming through"),
     "switched two-factor to the authenticator app, which works without SMS", "switched two-factor to the authenticator app",
     "re-entering the phone number in settings did not help"),
    ("my card payment is declined at checkout although the card works elsewhere",
     ("checkout refuses my card but it is fine in other shops", "payment keeps failing at the last step",
      "the card gets rejected when I pay on your site"),
     "disabling the VPN let the 3-D Secure check complete and the payment went through", "disabling the VPN",
     "trying the payment again an hour later failed again"),
    ("I was charged twice for the same order",
     ("there are two identical charges on my statement", "your shop billed me double for one purchase",
      "duplicate payment taken for a single order"),
     "the second charge was a pre-authorisation hold that drops off within 5 business days", "pre-authorisation hold",
     "asked the bank to reverse both charges, which was refused"),
    ("the parcel tracking page shows no updates for a week",
     ("tracking hasn't moved in seven days", "my shipment status is stuck",
      "delivery tracking is frozen since last week"),
     "the carrier had relabelled the parcel; the new tracking link was sent from the carrier portal", "carrier had relabelled the parcel",
     "refreshing the tracking page did not show anything new"),
    ("the CSV export of my transactions is empty",
     ("exporting transactions gives me a blank CSV file", "the spreadsheet export has no rows",
      "downloaded CSV contains only headers"),
     "the date filter defaulted to today; widening the date range filled the export", "widening the date range",
     "exporting in Excel format was also empty"),
    ("I cannot log in, it says my account is locked",
     ("login blocked, account locked message", "too many attempts and now I'm locked out",
      "the site says my account is locked when I sign in"),
     "the lock clears automatically after 30 minutes; the unlock link in the security email clears it at once", "unlock link in the security email",
     "trying again with the old password kept it locked"),
    ("the promo code is rejected at checkout",
     ("discount code says invalid", "my voucher won't apply to the basket",
      "coupon not accepted when I pay"),
     "the promo code only applies to full-price items; removing sale items let it apply", "removing sale items",
     "typing the code in lower case was still rejected"),
    ("notifications stopped working on my Android phone",
     ("I no longer get push alerts", "the app doesn't notify me anymore",
      "push notifications disappeared on my phone"),
     "battery optimisation was killing the app; excluding it from battery optimisation restored notifications", "excluding it from battery optimisation",
     "logging out and in did not bring notifications back"),
    ("the video call drops after exactly ten minutes",
     ("my calls disconnect at the 10 minute mark", "video meetings end by themselves after ten minutes",
      "calls always cut off at 10 minutes"),
     "the free plan limits calls to ten minutes; the trial of the pro plan removed the limit", "trial of the pro plan",
     "switching browsers did not keep the call alive"),
    ("my subscription renewed although I cancelled it",
     ("I was billed for a renewal after cancelling", "cancelled but still got charged for next year",
      "auto renewal happened even though I stopped my plan"),
     "the cancellation was saved as pause; cancelling from the billing page and refunding the renewal fixed it", "cancelling from the billing page",
     "asking the customer to wait for the next cycle did not help"),
    ("the printer integration prints blank pages",
     ("labels come out empty from the printer", "printing shipping labels gives white pages",
      "my label printer spits out blank sheets"),
     "setting the label size to 4x6 in the print dialog fixed the blank pages", "label size to 4x6",
     "reinstalling the printer driver still printed blank pages"),
    ("the website is extremely slow to load product pages",
     ("product pages take ages to open", "your shop pages load very slowly for me",
      "item pages are crawling"),
     "an ad blocker rule was stalling the image CDN; allowing the CDN domain made pages fast", "allowing the CDN domain",
     "clearing cookies did not speed it up"),
    ("I can't change the delivery address on an open order",
     ("the address field is greyed out on my order", "need to edit where my order ships",
      "unable to update shipping address after ordering"),
     "orders can be redirected only before dispatch; the carrier's redirect form changed the destination", "carrier's redirect form",
     "editing the address in the profile did not change the order"),
    ("the refund has not arrived after two weeks",
     ("still waiting for my money back", "refund is taking too long to show up",
      "where is my refund, it's been 14 days"),
     "the refund went to the expired card; the bank forwards it to the new card within 10 days", "bank forwards it to the new card",
     "reissuing the refund failed because it was already paid"),
    ("the smart thermostat shows offline in the app",
     ("my thermostat appears disconnected", "the app says the thermostat is offline",
      "thermostat lost connection to the app"),
     "the router moved the thermostat to the 5 GHz band; pinning it to 2.4 GHz brought it back online", "pinning it to 2.4 GHz",
     "resetting the app data did not reconnect it"),
    ("the sync between desktop and phone is missing recent notes",
     ("my latest notes aren't on my phone", "notes don't sync across devices",
      "new notes from the laptop never reach the mobile app"),
     "the desktop client was signed into a second workspace; switching to the main workspace synced the notes", "switching to the main workspace",
     "reinstalling the phone app did not sync the notes"),
    ("the gift card balance shows zero although I never used it",
     ("my gift voucher says no balance left", "unused gift card reports 0",
      "gift card empty but I haven't spent it"),
     "the card had not been activated at the till; activating it from the receipt restored the balance", "activating it from the receipt",
     "re-entering the card number still showed zero"),
    ("I get error 403 when uploading a profile photo",
     ("profile picture upload is forbidden", "403 when I try to change my avatar",
      "can't upload my photo, access denied"),
     "photos over 5 MB are refused; resizing the image under 5 MB uploaded it", "resizing the image under 5 MB",
     "uploading from another browser also gave 403"),
    ("the calendar invites arrive one hour late",
     ("meeting times are off by an hour", "my events show the wrong hour",
      "calendar entries are shifted one hour"),
     "the account time zone was still on winter time; setting the time zone to automatic fixed the invites", "setting the time zone to automatic",
     "recreating the event kept the wrong time"),
    ("the loyalty points from my last purchase are missing",
     ("I didn't get points for my order", "reward points not credited",
      "bonus points never showed up after buying"),
     "points post 14 days after delivery once the return window closes", "points post 14 days after delivery",
     "adding the points by hand was refused by the system"),
    ("the e-book I bought won't open on my e-reader",
     ("my purchased ebook fails to open on the reader", "ebook file is not readable on my device",
      "can't read the book I bought on my Kindle"),
     "the reader needed the EPUB version; downloading the EPUB instead of PDF worked", "downloading the EPUB instead of PDF",
     "restarting the e-reader did not open it"),
    ("the bank transfer payment is not showing as received",
     ("I paid by transfer but the order is unpaid", "wire payment not matched to my order",
      "transfer went out days ago but order still pending"),
     "the transfer lacked the payment reference; matching it by amount released the order", "matching it by amount",
     "waiting another day did not match it"),
    ("the headphones disconnect from bluetooth every few minutes",
     ("my wireless earbuds keep dropping", "bluetooth headset cuts out constantly",
      "the headphones lose connection all the time"),
     "a firmware update from the companion app fixed the bluetooth drops", "firmware update from the companion app",
     "unpairing and pairing again did not stop the drops"),
    ("the API returns 429 too many requests for my integration",
     ("we hit rate limits on the API", "our integration gets 429 errors",
      "API calls are being throttled with 429"),
     "batching requests and honouring the Retry-After header stopped the 429 errors", "honouring the Retry-After header",
     "rotating the API key did not lift the limit"),
    ("the invoice shows the wrong VAT number",
     ("my tax number on the bill is incorrect", "VAT ID printed wrong on invoices",
      "invoices carry an outdated VAT registration"),
     "the VAT number is taken from billing details; updating billing details and regenerating the invoice fixed it", "regenerating the invoice",
     "editing the PDF by hand was not accepted by the accountant"),
    ("the washing machine shows error E21 and won't drain",
     ("washer stuck with E21 code", "my washing machine won't pump out water, E21",
      "E21 on the display and water stays in the drum"),
     "cleaning the drain pump filter behind the front flap cleared error E21", "cleaning the drain pump filter",
     "running a rinse cycle did not clear E21"),
    ("the streaming video keeps buffering in HD",
     ("HD videos stall all the time", "constant buffering when I watch in high quality",
      "movies pause to load every few seconds"),
     "hardware acceleration in the browser was off; turning it on stopped the buffering", "turning it on stopped the buffering",
     "lowering the volume did nothing for the buffering"),
    ("the shared family plan members can't see the shared playlists",
     ("family members don't see our shared playlists", "playlists aren't visible to my family plan",
      "people on my family subscription can't access shared lists"),
     "members must accept the family invite from their own account before shared playlists appear", "accept the family invite",
     "re-creating the playlists did not make them visible"),
    ("the scanner app saves documents upside down",
     ("scanned pages come out rotated", "my scans are upside down",
      "document scans are saved the wrong way up"),
     "turning off auto-rotate in the scan settings saved pages the right way up", "turning off auto-rotate",
     "rescanning the document gave the same result"),
]

FIRST_NAMES = ["Maria", "Thandiwe", "Oluwaseun", "Siobhan", "Anneliese", "Bartholomew", "Priya", "Kenji", "Ingrid",
               "Matteo", "Zofia", "Emeka", "Lucia", "Radu", "Aoife", "Dmitri", "Fatima", "Joaquin", "Mireille",
               "Tariq", "Wilhelmina", "Yusuf", "Beatriz", "Cormac", "Dagny", "Ezinne", "Folasade", "Gideon",
               "Halvard", "Ilse", "Jovana", "Kwame", "Leontine", "Mauricio", "Nkechi", "Orla", "Pieter", "Quentin",
               "Rosalind", "Soren", "Tamsin", "Ulrike", "Valentin", "Wanjiru", "Ximena", "Yannick", "Zainab",
               "Agnieszka", "Benedikt", "Cressida", "Desmond", "Eamon", "Fenella", "Gaspard", "Hrafn", "Isidora",
               "Jarrah", "Katarzyna", "Lorcan", "Marisol", "Niamh", "Osvaldo", "Perpetua", "Rafferty", "Saoirse",
               "Teodor", "Ursula", "Vesna", "Wendell", "Xanthe", "Yevgenia", "Zebedee", "Alasdair", "Bronagh",
               "Casimir", "Delphine", "Evander", "Florentyna", "Gwendolyn", "Horatio", "Ifeoma", "Jessamy", "Konstantin",
               "Lavinia", "Mordecai", "Nanami", "Ottilie", "Peregrine", "Rhiannon", "Seraphina", "Thaddeus", "Umberto",
               "Violetta", "Wolfram", "Yolanda", "Zephyrine", "Ambrose", "Brunhilde", "Clementine", "Dashiell",
               "Eulalia", "Fitzgerald", "Guinevere", "Hyacinth", "Ignatius", "Juniper", "Leopold", "Marguerite",
               "Nikolai", "Octavia", "Philippa", "Roderick", "Sebastiano", "Tallulah", "Ulysses", "Vivienne",
               "Winifred", "Xavier", "Ysolde", "Zbigniew", "Anastasia", "Barnaby", "Cordelia", "Dorothea", "Emmerich",
               "Florian", "Gertrude", "Hamish", "Imogen", "Jacinta", "Kasimir", "Lysander", "Magdalena", "Nathaniel",
               "Ophelia", "Percival", "Quintessa", "Reinhardt", "Sigrid", "Tobias", "Ottoline", "Valentina", "Wystan",
               "Adaeze", "Bjorn", "Chidi", "Dervla", "Elodie", "Fionnuala", "Grainne", "Hedda", "Ishaan", "Jolanta",
               "Kaito", "Liesel", "Malachy", "Nuala", "Oisin", "Paloma", "Ragnhild", "Sunniva", "Torvald", "Unnur",
               "Vidar", "Wiebke", "Yorick", "Zuzana", "Aurelio", "Berit"]
SURNAMES = ["Okonkwo", "Vasquez-Lindqvist", "Nakamura", "O'Sullivan", "Brandtner", "Achterberg", "Szymanska",
            "Adeyemi", "Castellanos", "Fitzwilliam", "Haugland", "Iwasaki", "Jankowski", "Kowalczyk", "Lindahl",
            "Mbeki", "Nieuwenhuis", "Oyelaran", "Papadopoulos", "Quarshie", "Rasmussen", "Sauerbrunn",
            "Thorvaldsen", "Ugwu", "Valderrama", "Wojcik", "Xiong", "Yilmaz", "Zielinski", "Abernathy",
            "Blackwood", "Cavendish", "Delacroix", "Eriksdottir", "Fairweather", "Grimaldi", "Holloway"]
STREETS = ["Oak St", "Maple Avenue", "Harbour Road", "Kingfisher Lane", "Elm Drive", "Bramble Close", "Mill Way"]
CITIES = [("Portland", "OR 97205"), ("Austin", "TX 78701"), ("Leeds", "LS1 4DY"), ("Bristol", "BS1 5TR")]
PREFERENCES = [("Please only contact me by post", "by post"), ("I prefer phone calls after 7pm", "after 7pm"),
               ("Please reply in Portuguese", "in Portuguese"), ("Never call me before noon", "before noon"),
               ("Text me on WhatsApp instead of email", "on WhatsApp"), ("I'd rather you wrote to my work address", "my work address")]
# Lowercase details: a relative's and a pet's name, a street typed in lowercase. Ordinary
# dictionary words among them ("pepper", "oak street") test the ordinary-vocabulary rule.
RELATIVES = [("husband", "john"), ("wife", "sarah"), ("son", "david"), ("daughter", "emma"), ("partner", "kenji")]
PETS = [("dog", "biscuit"), ("cat", "pepper"), ("dog", "waffles"), ("cat", "mochi"), ("dog", "noodle")]
LOWER_STREETS = ["oak street", "maple avenue", "harbour road", "elm drive", "mill lane"]
# Lowercase surnames and towns that are ordinary dictionary words ("maria baker here from
# reading"): the detector knows neither, and each word alone is ordinary vocabulary.
LOWER_SURNAMES = ["baker", "hunter", "fisher", "carpenter", "mason", "porter", "stone", "wood", "bird", "rose",
                  "king", "hill", "marsh", "bell", "frost", "shepherd", "fox", "lamb", "forest", "moon"]
LOWER_TOWNS = ["reading", "bath", "nice", "split", "derby", "deal", "hope", "wells", "orange", "march",
               "battle", "ely", "rugby"]
# Held out from the name and place lists of `fourfold.text.gazetteer` (a test checks that it
# knows none of them): lowercase dictionary words borne as surnames (Sugar, Treasure, Onions)
# and small towns (Sandwich in Kent, Mold in Wales, Peculiar in Missouri, Accident in
# Maryland...), written down before they were measured. Leaks of these show what the rules
# catch without the lists (`--names unlisted`, and the `unlisted_leaked` of the last line).
UNLISTED_SURNAMES = ["sugar", "treasure", "onions", "cheese", "mustard", "pocket", "bottle", "candle", "ladder",
                     "lantern", "thistle", "pudding", "cabbage", "ribbon", "satin", "linen", "owl", "goose",
                     "weasel", "rabbit"]
UNLISTED_TOWNS = ["sandwich", "mold", "peculiar", "accident", "eclectic", "chicken", "romance", "happy", "success",
                  "protection", "climax", "wool", "matching"]
#: Where the lowercase surnames and towns come from (`--names`).
LOWER_WORDS: dict[str, tuple[list[str], list[str]]] = {
    "listed": (LOWER_SURNAMES, LOWER_TOWNS), "unlisted": (UNLISTED_SURNAMES, UNLISTED_TOWNS),
}
#: How those customers introduce themselves and say where they are: the wordings the position
#: rules of `fourfold.agent._ordinary` were written against, and others they never saw
#: (`--intros held-out`).
LOWER_INTROS: dict[str, tuple[list[str], list[str]]] = {
    "design": (["hi, {first} {plain} here from {town}.", "hello, this is {first} {plain} in {town}.",
                "hi there, i'm {first} {plain}, based in {town}.", "{first} {plain} from {town} again."],
               ["{problem} here in {town}", "{problem} since we moved to {town}"]),
    "held-out": (["{first} {plain} ({town}) here.", "greetings from {town}, {first} {plain} writing.",
                  "{first} {plain}, {town}.", "yo, {first} {plain} in {town} again.", "it's {first} {plain} of {town}."],
                 ["{problem} at our office in {town}", "{problem} ever since i got to {town}"]),
    # written after the rules were last changed, and measured with them unchanged
    "fresh": (["{first} {plain} reporting from {town}.", "hiya! {first} {plain} here, {town} branch.",
               "sent by {first} {plain}, {town}", "dear support, {first} {plain} of {town} writing.",
               "{first} {plain} - {town} office."],
              ["{problem} in our {town} shop", "{problem} at home in {town}"]),
    # written after the name and place recogniser's rules were final, measured with them unchanged
    "late": (["morning all, {first} {plain} checking in from {town}.", "{first} {plain} ({town}) again, sorry to bother you.",
              "quick one from {first} {plain} in {town}:", "greetings - {first} {plain}, {town} store.",
              "{town} customer here, {first} {plain}."],
             ["{problem} at the {town} branch", "{problem} for our team in {town}"]),
}
INTROS = "design"
PHONE_FORMATS = ["+1 {a} {b} {c}", "({a}) {b}-{c}", "{a}.{b}.{c}", "+1-{a}-{b}-{c}", "{a} {b} {c}", "+44 20 7946 0{c3}",
                 "07700 900{c3}", "+49 30 {b}{c}"]

EMBEDDER_NAMES = ("hash", "minilm", "minilm:exact")
VERBOSE = False


@dataclass
class Customer:
    cid: str
    message: str
    details: dict[str, str]  # kind -> value, as the customer gave them (and the operator repeated)
    markers: dict[str, str] = field(default_factory=dict)  # what to look for, by kind (`_markers`)
    first_turn: int = 0  # when the customer first wrote (the run's turn counter)
    #: What the desk was told on this customer's tickets so far (their messages and the
    #: operators' outcomes), lowercased, without the operators' generic fix texts. A detail
    #: none of them holds was never disclosed, so cannot leak.
    _said: str = ""

    @property
    def scope(self) -> str:
        return customer_scope(self.cid)

    def told(self, text: str) -> None:
        self._said += "\n" + _without_operators(text.lower())

    def wrote(self, kind: str, value: str) -> bool:
        """Did this customer's tickets hold the detail (outside the operators' generic fix texts)?"""
        return _carries(self._said, kind, value)


@dataclass(frozen=True)
class Leak:
    """A detail of `owner`'s found in `asker`'s prompt and not explained by anyone else's text."""

    asker: str
    owner: str
    kind: str
    value: str
    source: str | None  # the customer scope the prompt line's case was derived from (None: not a case)
    line: str
    turn: int  # the turn whose prompt carried it


@dataclass
class Tally:
    later: int = 0
    reached: int = 0
    failed_offered: int = 0
    #: Leaks attributed by source (`_attributed`), by kind: the issue's measure.
    leaks: Counter[str] = field(default_factory=Counter)
    #: The word-level count (`_raw`): another customer's detail value anywhere in a prompt,
    #: whoever's text put it there ("matching" counts for every customer whose town it is).
    raw: Counter[str] = field(default_factory=Counter)
    found: list[Leak] = field(default_factory=list)
    prompts: int = 0  # prompts checked for leaks (every turn's)
    written_by: Counter[str] = field(default_factory=Counter)
    #: Of the first cases, the problem's words that the case kept, and all of them: what
    #: masking costs the case itself (stems, stopwords aside).
    kept: int = 0
    words: int = 0

    def line(self, name: str) -> str:
        leaks = ", ".join(f"{k}={v}" for k, v in sorted(self.leaks.items())) or "none"
        raw = ", ".join(f"{k}={v}" for k, v in sorted(self.raw.items())) or "none"
        return (f"  {name:<13} fix_reached={self.reached / max(self.later, 1):.2f} ({self.reached}/{self.later}) "
                f"failed_offered={self.failed_offered} pii_leaked={sum(self.leaks.values())} ({leaks}) "
                f"raw={sum(self.raw.values())} ({raw}) in {self.prompts} prompts "
                f"problem_words_kept={self.kept / max(self.words, 1):.2f} cases by {dict(self.written_by)}")


def _luhn_complete(prefix: str) -> str:
    digits = [int(d) for d in prefix]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 0:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return prefix + str((10 - total % 10) % 10)


def _iban(rng: random.Random) -> str:
    bban = "".join(rng.choice("0123456789") for _ in range(18))
    numeric = int(bban + "131400")  # DE00
    check = 98 - numeric % 97
    raw = f"DE{check:02d}{bban}"
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def _details(rng: random.Random, first: str, surname: str, lower: str = "listed") -> dict[str, str]:
    a, b, c = rng.randint(201, 989), rng.randint(200, 989), rng.randint(1000, 9999)
    phone = rng.choice(PHONE_FORMATS).format(a=a, b=b, c=c, c3=str(c)[:3])
    city, post = rng.choice(CITIES)
    pref, pref_marker = rng.choice(PREFERENCES)
    card = _luhn_complete("4" + "".join(rng.choice("0123456789") for _ in range(14)))
    return {
        "name": f"{first} {surname}",
        "surname": surname,
        "email": f"{first.lower()}.{surname.lower().replace(chr(39), '')}@{rng.choice(['example.com', 'mail.example.org'])}",
        "phone": phone,
        "postal_address": f"{rng.randint(2, 998)} {rng.choice(STREETS)}, {city} {post}",
        "order_number": rng.choice([f"ORD-{rng.randint(10000, 99999)}", f"#{rng.randint(100000, 999999)}",
                                    f"order {rng.randint(1000000, 9999999)}"]),
        "account_number": f"{rng.randint(10000000, 99999999)}",
        "ticket_number": f"TKT-{rng.randint(1000, 9999)}",
        "card_number": " ".join(card[i : i + 4] for i in range(0, 16, 4)),
        "iban": _iban(rng),
        "preference": pref,
        "_pref_marker": pref_marker,
        "relative": " ".join(rng.choice(RELATIVES)),
        "pet": " ".join(rng.choice(PETS)),
        "lowercase_street": f"{rng.randint(2, 998)} {rng.choice(LOWER_STREETS)}",
        "lower_surname": rng.choice(LOWER_WORDS[lower][0]),
        "lower_town": rng.choice(LOWER_WORDS[lower][1]),
    }


def _markers(details: Mapping[str, str]) -> dict[str, str]:
    """What to look for in another customer's prompt, by kind (the distinctive part of each)."""
    out = {k: v for k, v in details.items() if not k.startswith("_") and k not in ("preference", "order_number")}
    out["order_number"] = details["order_number"].split()[-1].lstrip("#")
    out["preference"] = details["_pref_marker"]
    out["first_name"] = details["name"].split()[0]
    out["card_number"] = details["card_number"][-9:]  # the last two groups
    out["relative"] = details["relative"].split()[-1]
    out["pet"] = details["pet"].split()[-1]
    return out


#: Details that are dictionary words, looked for as whole words (a "king" is not in "making").
WORD_MARKERS = frozenset({"lower_surname", "lower_town"})


def _carries(text: str, kind: str, value: str) -> bool:
    if kind in WORD_MARKERS:
        return re.search(rf"\b{re.escape(value.lower())}\b", text) is not None
    return value.lower() in text


def _first_message(rng: random.Random, problem: str, d: Mapping[str, str]) -> str:
    first, plain, town = d["name"].split()[0].lower(), d["lower_surname"], d["lower_town"]
    if rng.random() < 0.5:  # typed in lowercase, with a surname and a town that are dictionary words
        intros, wheres = LOWER_INTROS[INTROS]
        intro = rng.choice(intros).format(first=first, plain=plain, town=town)
        problem = rng.choice([problem, *(w.format(problem=problem, town=town) for w in wheres)])
    else:
        intro = rng.choice([f"Hi, I'm {d['name']}.", f"Hello, this is {d['name']}.", f"{d['name']} here.",
                            f"Hi there, my name is {d['name']}."])
    parts = [
        f"My account number is {d['account_number']} and it's about {d['order_number']}.",
        f"I wrote before as {d['ticket_number']}, no answer.",
        f"You can reach me at {d['email']} or on {d['phone']}.",
        f"I live at {d['postal_address']}.",
        f"I paid with my card {d['card_number']}; refunds can go to {d['iban']}.",
        f"{d['preference']}.",
        f"My {d['relative']} set up the account for me.",
        f"Sorry for the delay, our {d['pet']} chewed the cable.",
        f"Parcels go to my sister, she lives at {d['lowercase_street']}.",
    ]
    rng.shuffle(parts)
    return f"{intro} {problem[:1].upper()}{problem[1:]}. {' '.join(parts)}"


def _outcome(rng: random.Random, fix: str, d: Mapping[str, str]) -> str:
    first, surname = d["name"].split()[0], d["surname"]
    lead = rng.choice([f"Called {first} back on {d['phone']}:", f"Emailed {first} {surname} at {d['email']}:",
                       f"Spoke with Ms. {surname} about {d['order_number']}:", f"{first} confirmed on {d['phone']}:"])
    return f"{lead} {fix}"


class CaseWriter:
    """A stand-in chat model: answers turns briefly, keeps no memories, and writes each case by
    copying the operator's outcome as the fix (details included) for the detector to check."""

    name = "case-writer"

    def __init__(self, problems: Mapping[str, str]) -> None:  # any wording -> the generic one
        self.problems = problems

    def respond(self, messages: Sequence[Mapping[str, Any]], system: str, tools: Sequence[Mapping[str, Any]]) -> ChatResponse:
        text = messages[-1].get("content")
        text = text if isinstance(text, str) else ""
        if "Operator outcome: " in text:
            problem = next((g for w, g in self.problems.items() if w.lower() in text.lower()), "a problem")
            problem = " ".join(problem.split()[:6])  # a model's summary, not the customer's sentence
            return ChatResponse(json.dumps({"problem": problem, "fix": text.split("Operator outcome: ", 1)[1]}))
        if '{"memories"' in text:
            return ChatResponse(json.dumps({"memories": []}))
        return ChatResponse("Let me look into that.")


def _prompt_data(system: str) -> str:
    start, end = system.index(DATA_OPEN), system.rindex(DATA_CLOSE)
    lines = system[start + len(DATA_OPEN) : end].splitlines()
    return "\n".join(json.loads(line) if line.startswith('"') else line for line in lines)


def _fix_text_only(data: str) -> str:
    """What the prompt offers as other customers' fixes (the cases section)."""
    head = "# Similar resolved tickets of other customers"
    if head not in data:
        return ""
    return data.split(head, 1)[1].split("\n# ", 1)[0]


def _without_operators(text: str) -> str:
    """A lowercased text without the operators' generic fix and failed-attempt texts, which
    the generator writes the same for every customer with that problem: a held-out word inside
    them ("matching it by amount", and a town called Matching) is no detail of anyone's."""
    for p in PROBLEMS:
        text = text.replace(p[2].lower(), " ").replace(p[4].lower(), " ")
    return text


#: The prompt's sections (`fourfold.agent.prompt.assemble_system`) by what their lines come from.
SECTIONS = dict(zip((f"# {title}" for title in SECTION_TITLES), ("own", "own", "case", "docs"), strict=True))


def _prompt_lines(report: TurnReport, sources: Mapping[str, str]) -> list[tuple[str, str | None, str]]:
    """Each line of a prompt's data as (where it comes from, the customer scope a case line was
    derived from, the lowercased line). A line is one item of the report (a memory, an episode,
    a case, a document) only where its section has exactly as many lines as the report has
    items there; every other line (a section that does not line up, anything outside one) is
    "unknown"."""
    system = report.system_prompt
    raw = system[system.index(DATA_OPEN) + len(DATA_OPEN) : system.rindex(DATA_CLOSE)].splitlines()
    items: dict[str, Sequence[Any]] = {"own": [*report.memories, *report.episodes], "case": report.cases,
                                       "docs": report.docs}
    sections: list[tuple[str, list[str]]] = [("unknown", [])]
    for line in raw:
        if line in SECTIONS:
            sections.append((SECTIONS[line], []))
        elif line != '"(none)"':
            sections[-1][1].append(str(json.loads(line)).lower() if line.startswith('"') else line.lower())
    counted = {kind: sum(len(ls) for k, ls in sections if k == kind) for kind in items}
    out: list[tuple[str, str | None, str]] = []
    cases = iter(report.cases)
    for kind, lines in sections:
        lined_up = kind in items and counted[kind] == len(items[kind])
        for line in lines:
            if not lined_up:
                out.append(("unknown", None, line))
            elif kind == "case":
                out.append((kind, sources.get(next(cases).id), line))
            else:
                out.append((kind, None, line))
    return out


def _attributed(asker: Customer, others: Mapping[str, Customer], report: TurnReport, sources: Mapping[str, str],
                turn: int) -> list[Leak]:
    """The details of other customers that `asker`'s prompt carries, attributed by source.

    Only details their owner disclosed count (`Customer.wrote`). A prompt line carrying one is
    a leak of its owner unless something else explains it: the operators' generic fix texts
    (removed first), the documentation, the asker's own memories and episodes where the
    asker's own tickets hold the word, or a case derived from another customer whose tickets
    hold it (that customer's word: a leak of theirs if it is their detail, a coincidence if it
    is their ordinary vocabulary). A case derived from the owner's ticket, a case without a
    source, and any line not lined up with the report explain nothing."""
    by_scope = {c.scope: c for c in others.values()}
    lines = [(kind, source, _without_operators(line)) for kind, source, line in _prompt_lines(report, sources)]
    whole = "\n".join(line for _, _, line in lines)
    found: list[Leak] = []
    for owner in others.values():
        if owner.cid == asker.cid:
            continue
        for kind, value in owner.markers.items():
            if not _carries(whole, kind, value) or not owner.wrote(kind, value):
                continue
            for where, source, line in lines:
                if not _carries(line, kind, value) or where == "docs" or (where == "own" and asker.wrote(kind, value)):
                    continue
                if where == "case" and source not in (None, owner.scope) and source in by_scope \
                        and by_scope[source].wrote(kind, value):
                    continue
                found.append(Leak(asker.cid, owner.cid, kind, value, source, line, turn))
                break  # one leak per detail and prompt
    return found


def _raw(asker: Customer, others: Mapping[str, Customer], data: str) -> Counter[str]:
    """The word-level count: each other customer's detail value found in the prompt (outside
    the operators' generic fix texts, for the dictionary words) and not in the asker's own
    message, disclosed or not, whoever's text holds it."""
    lowered = data.lower()
    operators = _without_operators(lowered)
    raw: Counter[str] = Counter()
    for other in others.values():
        if other.cid == asker.cid:
            continue
        for kind, value in other.markers.items():
            seen = operators if kind in WORD_MARKERS else lowered
            if _carries(seen, kind, value) and not _carries(asker.message.lower(), kind, value):
                raw[kind] += 1
    return raw


class Unmasked:
    """A case base that writes one customer's case as their ticket stands, details and all
    (the self-check's planted leak), and passes every other ticket to the real one."""

    def __init__(self, real: CaseBase, scope: str) -> None:
        self.real, self.scope = real, scope

    def add(self, ticket: Ticket, *, source_scope: str) -> Episode | None:
        if source_scope != self.scope:
            return self.real.add(ticket, source_scope=source_scope)
        item = {"goal": ticket.goal, "actions": list(ticket.actions), "outcome": ticket.outcome, "success": True,
                "tags": [CASE_TAG, "planted"]}
        episode = replace(build_episode(item, ts=time.time()), scope=SHARED_SCOPE)
        self.real.memory.episodes.insert([episode], derived_from={episode.id: source_scope})
        return episode

    def similar(self, situation: str, *, k: int, exclude_source: str | None = None,
                min_score: float | None = None) -> list[Episode]:
        return self.real.similar(situation, k=k, exclude_source=exclude_source, min_score=min_score)


def run(embedder: Embedder, variant: str, n_types: int, seed: int = 14, lower: str = "listed", *,
        plant: str | None = None) -> Tally:
    """The desk on `n_types` problems; `plant` names a customer ("c4") whose case is written
    unmasked (`Unmasked`): the attributed count must see it."""
    rng = random.Random(seed)
    firsts = rng.sample(FIRST_NAMES, k=len(FIRST_NAMES))  # every customer has a first name of their own
    names = iter((f, SURNAMES[i % len(SURNAMES)]) for i, f in enumerate(firsts))
    problems = PROBLEMS[:n_types]
    tally = Tally()
    everyone: dict[str, Customer] = {}
    with tempfile.TemporaryDirectory(prefix="fourfold-cases-") as tmp, Memory.open(Path(tmp), embedder=embedder) as mem:
        model: ChatModel = OfflineModel()
        if variant == "model":
            writer = CaseWriter({w: p[0] for p in problems for w in (p[0], *p[1])})
            model = ScriptedModel(writer.respond, name="case-writer")
        agent = SupportAgent(mem, model)
        assert isinstance(agent.cases, CaseBase)
        if variant == "detector":
            agent.cases.min_customers = None
        if plant is not None:
            agent.cases = Unmasked(agent.cases, customer_scope(plant))
        n = turns = 0

        def customer(problem: str) -> Customer:
            nonlocal n
            n += 1
            first, surname = next(names)
            d = _details(rng, first, surname, lower)
            everyone[f"c{n}"] = who = Customer(f"c{n}", _first_message(rng, problem, d), d, _markers(d))
            return who

        def turn(who: Customer, message: str) -> str:
            """One turn; its prompt is checked for other customers' details. Returns the prompt's data."""
            nonlocal turns
            turns += 1
            who.first_turn = who.first_turn or turns
            who.told(message)
            report = agent.turn(who.cid, message).report
            sources = mem.episodes.sources([c.id for c in report.cases]) if report.cases else {}
            data = _prompt_data(report.system_prompt)
            tally.prompts += 1
            tally.raw += _raw(who, everyone, data)
            for leak in _attributed(who, everyone, report, sources, turns):
                tally.leaks[leak.kind] += 1
                tally.found.append(leak)
                if VERBOSE and plant is None:  # the self-check's planted leaks are expected
                    owner = everyone[leak.owner]
                    print(f"    leak of {leak.owner}'s {leak.kind}={leak.value!r} (they first wrote at turn "
                          f"{owner.first_turn}) in {leak.asker}'s prompt at turn {turns}, a line from "
                          f"{leak.source or 'no case'}: {leak.line[:300]}")
            return data

        def resolve(who: Customer, outcome: str, success: bool = True) -> Episode | None:
            who.told(outcome)
            return agent.resolve(who.cid, outcome, success=success).case

        for first, _, fix, _, failed in problems:  # a failed attempt, then the first successful ticket
            loser = customer(first)
            turn(loser, loser.message)
            resolve(loser, _outcome(rng, failed, loser.details), success=False)
            winner = customer(first)
            turn(winner, winner.message)
            turn(winner, "Thanks, that worked.")
            case = resolve(winner, _outcome(rng, fix, winner.details))
            tally.written_by[case.tags[-1] if case else "none"] += 1
            problem_words = set(tokenize(first))
            tally.words += len(problem_words)
            tally.kept += len(problem_words & set(tokenize(case.goal))) if case else 0
        for _, later, fix, key, _ in problems:
            for wording in later:
                asker = customer(wording)
                # Half of them give details of their own, which later prompts must not carry either.
                question = f"{wording[:1].upper()}{wording[1:]}, what can I do?"
                message = asker.message.replace(wording[:1].upper() + wording[1:], question) if rng.random() < 0.5 else question
                asker.message = message
                data = turn(asker, message)
                tally.later += 1
                reached = key.lower() in _fix_text_only(data).lower()
                tally.reached += reached
                if VERBOSE and not reached:
                    print(f"    missed {key!r} for {wording!r}: {_fix_text_only(data).strip()[:400]!r}")
                tally.failed_offered += sum(p[4].lower() in data.lower() for p in PROBLEMS)
                resolve(asker, _outcome(rng, fix, asker.details))
    return tally


#: The self-check's planted customer: the first problem's first successful ticket.
PLANTED = "c2"


def self_check(embedder: Embedder, seed: int = 14, lower: str = "listed", n_types: int = 4) -> Tally:
    """The same desk on a few problems, with `PLANTED`'s case written unmasked: the attributed
    count must find that customer's details, in lines of the case derived from their ticket
    (SystemExit otherwise: a count that cannot see a real leak measures nothing)."""
    tally = run(embedder, "shared-words", n_types, seed, lower, plant=PLANTED)
    planted = [leak for leak in tally.found if leak.owner == PLANTED and leak.source == customer_scope(PLANTED)]
    if not planted or not tally.raw:
        raise SystemExit(f"self-check failed: a case written unmasked from {PLANTED}'s ticket was not counted "
                         f"({len(planted)} attributed, {sum(tally.raw.values())} raw)")
    return tally


def detector_misses(n_types: int, seed: int = 14, lower: str = "listed") -> Counter[str]:
    """Details of the first customers that the detector alone leaves in their message."""
    rng = random.Random(seed)
    misses: Counter[str] = Counter()
    for i, (first, *_) in enumerate(PROBLEMS[:n_types]):
        f, s = FIRST_NAMES[i % len(FIRST_NAMES)], SURNAMES[i % len(SURNAMES)]
        d = _details(rng, f, s, lower)
        message = _first_message(rng, first, d)
        out = redact(message, policy="personal")[0].lower()
        for kind, value in _markers(d).items():
            misses[kind] += _carries(out, kind, value)
    return misses


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES, default="minilm")
    parser.add_argument("--types", type=int, default=len(PROBLEMS))
    parser.add_argument("--verbose", action="store_true", help="Print each leak and each missed fix with its prompt line.")
    parser.add_argument("--variants", default="detector,shared-words,model", help="Comma-separated variants to run.")
    parser.add_argument("--seed", type=int, default=14, help="Seed of the generated customers and their details.")
    parser.add_argument("--intros", choices=sorted(LOWER_INTROS), default="design",
                        help="How lowercase-typing customers introduce themselves (held-out: wordings no rule saw).")
    parser.add_argument("--names", choices=("both", *LOWER_WORDS), default="both",
                        help="Where their lowercase surnames and towns come from: lists the gazetteer holds, ones it "
                             "does not (unlisted), or both (the variants on the listed, shared-words on the unlisted too).")
    args = parser.parse_args(argv)
    global VERBOSE, INTROS
    VERBOSE, INTROS = args.verbose, args.intros
    if args.embedder in ("minilm", "minilm:exact"):  # the library's default (int8 queries), or exact queries
        from fourfold.embeddings.spec import embedder_from_spec

        embedder: Embedder = embedder_from_spec(args.embedder)
    else:
        embedder = HashEmbedder()
    n_types = max(1, min(args.types, len(PROBLEMS)))
    print(f"cases benchmark: {n_types} problem types, 1 failed + 1 first + 3 later customers each, embedder {embedder.identity}")
    names = "listed" if args.names == "both" else args.names
    listed = [w for w in UNLISTED_SURNAMES + UNLISTED_TOWNS if known(w)]
    if listed:  # they would no longer be held out
        parser.error(f"the gazetteer now knows these 'unlisted' words: {', '.join(listed)}")
    misses = detector_misses(n_types, args.seed, names)
    print("  detector alone missed, in the first customers' messages: "
          + (", ".join(f"{k}={v}" for k, v in sorted(misses.items()) if v) or "nothing"))
    check = self_check(embedder, args.seed, names)
    kinds = Counter(leak.kind for leak in check.found if leak.owner == PLANTED)
    print(f"  self-check: {PLANTED}'s case written unmasked is counted: {sum(kinds.values())} leaks of theirs "
          f"({', '.join(f'{k}={v}' for k, v in sorted(kinds.items()))}) in {check.prompts} prompts, "
          f"raw={sum(check.raw.values())}")
    results: dict[str, Tally] = {}
    for variant in args.variants.split(","):
        started = time.perf_counter()
        results[variant] = run(embedder, variant, n_types, args.seed, names)
        print(results[variant].line(variant) + f" [{time.perf_counter() - started:.0f}s]")
    best = results.get("shared-words") or next(iter(results.values()))
    unlisted, raw = "", f" raw_pii={sum(best.raw.values())}"
    if args.names == "both":  # the same customers with surnames and towns no list of the gazetteer holds
        started = time.perf_counter()
        held_out = run(embedder, "shared-words", n_types, args.seed, "unlisted")
        print(held_out.line("unlisted") + f" [{time.perf_counter() - started:.0f}s]")
        unlisted = f" unlisted_leaked={sum(held_out.leaks.values())}"
        raw += f" raw_unlisted={sum(held_out.raw.values())}"
    print(f"cases: fix_reached={best.reached / max(best.later, 1):.2f} failed_offered={best.failed_offered} "
          f"pii_leaked={sum(best.leaks.values())}{unlisted}{raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
