"""A support desk's memories and the questions an agent asks about them, generated from a seed.

Each customer has 3-8 memories, one per attribute type (contact channel, language, plan...).
Memories carry the ordinary words of a support desk ("customer", "account", "ticket",
"order"...) in varied framings, so a question's generic words also appear in the customer's
other memories: lexical evidence that points at the wrong memory. Each memory gets one
question, phrased from the type's pool of questions; a question is a *paraphrase* when it
shares no content word (after stemming and stop-words, `fourfold.text.tokenize`) with the
memory it asks about, else an *overlap* question. Each customer also gets off-topic questions
none of their memories answers, of two kinds: *unrelated* ones (world trivia, recipes...) and
*unanswerable* ones, the desk's own questions about an attribute type the customer has no
memory of ("which language do they speak?" of a customer whose language was never noted). The
second kind is what a support agent actually asks and is the hard one: the question is about
the account, in the desk's words, and the customer's other memories are about the account too.

Attribute types are the unit of cross-validation (`folds`): a type brings its own memory
templates and question phrasings, so a held-out fold is wording never tuned on.
Free of models, so tests of it run in milliseconds.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from _harness import off_topic
from fourfold.text import tokenize

OFF_TOPIC = off_topic.OFF_TOPIC

__all__ = ["TYPES", "Customer", "Dataset", "Question", "build", "dev_folds", "dev_half", "folds", "split_of"]


@dataclass(frozen=True, slots=True)
class AttributeType:
    name: str
    memories: tuple[str, ...]  # one is picked per customer
    questions: tuple[str, ...]  # phrasings an agent would use


def _t(name: str, memories: str, questions: str) -> AttributeType:
    split = lambda block: tuple(line.strip() for line in block.strip().splitlines() if line.strip())  # noqa: E731
    return AttributeType(name, split(memories), split(questions))


TYPES: tuple[AttributeType, ...] = (
    _t("contact", """
        prefers email over phone calls
        wants to be contacted by text message only
        likes a phone call rather than an email
        asked that we only write via the in-app chat
        does not read email; reach her by SMS
        """, """
        how should we get in touch?
        what is the best way to reach them?
        which channel do they like for updates?
        how do they want us to communicate?
        should I ring them or send something written?
        how can we notify this customer about the fix?
        what contact method do they prefer?
        is email fine for this customer?
        can I phone them about the refund?
        """),
    _t("language", """
        speaks Portuguese and reads replies best in Portuguese
        native French speaker, English answers take him a while
        writes in German and wants answers in German
        Spanish is her first language
        is more comfortable in Japanese than English
        """, """
        which tongue should replies be written in?
        what language do they understand best?
        do we need a translator for this person?
        is English okay for this account?
        where is the person from, linguistically?
        which language do they speak?
        should I answer in English?
        do they speak Spanish?
        """),
    _t("location", """
        lives in Sydney, ten hours ahead of our office
        based in Denver on Mountain Time
        located in Singapore, so mornings here are evenings there
        works from Lisbon, one hour behind Berlin
        is in Toronto on Eastern Time
        """, """
        where are they?
        which time zone is the customer in?
        what city is this account in?
        what region should the callback be scheduled for?
        what country does the client reside in?
        what time zone are they on?
        where does the customer live?
        which city are they based in?
        """),
    _t("plan", """
        on the Enterprise plan with 40 seats
        pays for the Basic tier, billed monthly
        upgraded to Pro last spring
        still on the free trial, which ends on the 30th
        has the Team subscription for five users
        """, """
        which subscription do they have?
        what level of service did they buy?
        how much does this account cost per year?
        are they a premium client?
        what package is the customer on?
        what plan are they on?
        is this account on the Enterprise plan?
        how many seats do they pay for?
        """),
    _t("payment", """
        pays with a corporate Amex card
        settles invoices by bank transfer within 30 days
        uses PayPal for every purchase
        the card on file expires next month
        prefers to be invoiced and pays by cheque
        """, """
        how do they usually settle the bill?
        what payment method is on the account?
        how does this client pay us?
        which card or wallet do they use for orders?
        how are their charges handled?
        does this customer pay by card?
        what do they use to pay invoices?
        when does their card expire?
        """),
    _t("device", """
        uses an iPhone 13 with the latest iOS
        runs our app on an old Android tablet
        works on a Windows laptop with Chrome
        has a MacBook and uses Safari
        only uses the app on a Samsung Galaxy phone
        """, """
        what hardware is the customer on?
        which phone or computer do they have?
        what browser or operating system should I troubleshoot?
        is the person on mobile or desktop?
        what gadget do they open our product with?
        which phone does the customer use?
        do they use the app on Android or iPhone?
        what laptop are they on?
        """),
    _t("access", """
        is blind and relies on a screen reader
        hard of hearing, so avoid voice calls
        has dyslexia; keep messages short and plain
        colour blind and cannot tell red from green alerts
        has a tremor and struggles with small buttons
        """, """
        does this customer need any accommodations?
        is there a disability we should keep in mind?
        anything about their health that changes how we help?
        do they need accessibility support?
        should our replies be adapted in some way for them?
        do they use a screen reader?
        can we call them or are voice calls a problem?
        are there accessibility needs on the account?
        """),
    _t("delivery", """
        leave parcels with the neighbour at number 12
        deliveries must go to the back door because the front bell is broken
        packages should go to the office reception, not home
        do not leave boxes outside; they get stolen
        courier should call on arrival, the gate is locked
        """, """
        where should shipments be dropped off?
        any instructions for the courier?
        how do we get orders to this customer safely?
        what should the driver know?
        where do we ship to?
        where should the courier leave parcels?
        any delivery instructions?
        can packages be left outside?
        """),
    _t("name", """
        goes by Sam, not Samantha
        prefers to be called Dr. Okafor
        likes to be addressed by first name, Jo
        uses they/them pronouns
        wants Mr. Lindqvist in formal letters
        """, """
        how do we address them?
        what should we say in the greeting?
        what name do they like?
        which pronouns are right?
        how should I open my reply to this customer?
        what name should I use for the customer?
        which pronouns does the customer use?
        how do they like to be called?
        """),
    _t("hours", """
        only free after 6 pm on weekdays
        reachable mornings before 10
        works nights, sleeps until noon
        unavailable on Fridays for religious reasons
        can talk during lunch, 12 to 1
        """, """
        when is a good time to phone?
        what time of day works for them?
        when can we schedule the callback?
        at what hour should I try to get hold of them?
        is there a moment in the week that suits them?
        when is the customer free for a call?
        are they reachable in the mornings?
        which weekdays are they unavailable?
        """),
    _t("history", """
        was double charged in March and got a refund
        had a damaged blender delivered last winter
        waited three weeks for a replacement in 2022
        lost a parcel at Christmas and received store credit
        had an account lockout that took two days to fix
        """, """
        have they had problems with us before?
        any previous trouble on this account?
        what went wrong for them in the past?
        is this their first complaint?
        did we ever mess up an order for this customer?
        were they ever double charged?
        did they get a refund before?
        has a parcel of theirs been lost?
        """),
    _t("tenure", """
        has been with us since 2015
        signed up two months ago
        one of our first hundred users
        came back last year after leaving for a competitor
        a member for about a decade
        """, """
        how long have they been a customer?
        are they new?
        when did they first join?
        is this a loyal long-time client?
        how many years of business have we had with them?
        when did they sign up?
        how long have they been a member?
        are they one of our first users?
        """),
    _t("job", """
        runs a bakery with three locations
        works at a law firm as an office manager
        is a nurse on rotating shifts
        owns a small landscaping company
        teaches maths at a secondary school
        """, """
        what do they do for a living?
        what is their occupation?
        what kind of business are they?
        where does the person work?
        what is their profession?
        where does the customer work?
        do they run a business?
        what company do they own?
        """),
    _t("dislikes", """
        gets annoyed by long hold times
        hates automated phone menus
        finds upselling pushy and rude
        dislikes being transferred between agents
        irritated by scripted apologies
        """, """
        what frustrates them?
        what should we avoid doing?
        what makes this customer upset?
        is there anything that bothers them about our service?
        what are their pet peeves?
        what annoys the customer?
        do they dislike being transferred?
        do they hate phone menus?
        """),
    _t("diet", """
        allergic to peanuts; flag every order
        vegan, no animal products in the meal box
        needs gluten-free items because of coeliac disease
        does not eat pork
        lactose intolerant, swap dairy for oat milk
        """, """
        are there foods they can't eat?
        any dietary restrictions?
        what should the kitchen know about their meals?
        which ingredients must we exclude?
        do they have an intolerance we need to respect?
        is the customer allergic to anything?
        is their meal box vegan?
        do they need gluten-free items?
        """),
    _t("marketing", """
        opted out of newsletters and promotions
        happy to receive discount offers by email
        asked to stop the weekly promo texts
        subscribed to product launch announcements
        unsubscribed from all mailing lists after the spam complaint
        """, """
        can we send them deals?
        do they want advertising from us?
        is it okay to include them in a campaign?
        have they consented to marketing?
        may I tell them about the sale?
        did they opt out of newsletters?
        can we send promo texts?
        are they subscribed to announcements?
        """),
    _t("pets", """
        owns a golden retriever and buys large-breed dog food
        has two cats, one on a kidney diet
        keeps a parrot that needs special seed mix
        fosters rescue puppies now and then
        has an elderly beagle on joint supplements
        """, """
        do they have animals?
        what kind of pet is in the household?
        which creature are they shopping for?
        is there a dog or cat at home?
        who are the supplies for?
        which dog food do they buy?
        do they own a dog?
        how many cats do they have?
        """),
    _t("budget", """
        very price-sensitive and always asks for discounts
        cost is no object, wants the fastest option
        on a tight budget this quarter
        compares our prices with competitors before each purchase
        asks for the cheapest shipping every time
        """, """
        do they care about money?
        how much are they willing to spend?
        should I offer a cheaper alternative?
        are they frugal?
        would a coupon help win them over?
        do they ask for discounts?
        should I suggest the cheapest shipping?
        are they price-sensitive?
        """),
    _t("approver", """
        their IT admin Priya approves all purchases
        needs sign-off from the finance director before renewals
        her manager Tom must be copied on refunds
        the owner, Mrs. Chen, makes the final decisions
        procurement handles anything above 500 dollars
        """, """
        who signs off on spending?
        whose permission is needed to buy?
        who has the final say?
        who else should be cc'd on decisions?
        who authorises expenses there?
        who approves purchases for this customer?
        who must be copied on refunds?
        who makes the final decisions?
        """),
    _t("returns", """
        returned a sofa because the colour was wrong
        sent back two pairs of shoes that did not fit
        asked for an exchange on a broken kettle
        refused a refund and wanted store credit instead
        keeps the original packaging for easy exchanges
        """, """
        have they given anything back?
        did they send something back recently?
        what did they exchange?
        has the client asked for their money back?
        what came back from them?
        what did they return?
        have they asked for an exchange?
        did they want store credit instead of a refund?
        """),
)

# Orders: a customer has several, told apart by their number and item, so a question that
# names one is where word matching wins (dense vectors barely tell order 48213 from 51877).
ORDER_ITEMS = (
    "standing desk", "espresso machine", "winter jacket", "wireless router", "office chair",
    "blender", "running shoes", "bookshelf", "air purifier", "electric kettle", "mattress",
    "gaming monitor", "baby stroller", "vacuum cleaner", "garden hose", "bike helmet",
)
# (what went wrong, a question about it that names neither the order nor the item)
ORDER_PROBLEMS = (
    ("arrived with a cracked frame", "which delivery came broken?"),
    ("was delivered to the wrong address", "did a shipment end up at someone else's house?"),
    ("is stuck in customs", "is anything held up at the border?"),
    ("was charged twice at checkout", "were they billed double for something?"),
    ("came without the power cable", "was a part missing from a box?"),
    ("was cancelled by mistake", "did we call off a purchase by accident?"),
    ("is three weeks late", "which package is overdue?"),
    ("was the wrong colour", "did they get an item in a shade they didn't pick?"),
)
ORDER_QUESTIONS = (
    "what happened with order {n}?",
    "any update on {n}?",
    "what is the status of the {item} order?",
    "what was the problem with the {item}?",
    "customer asks about order {n}, what do we know?",
)

# Framings of a memory: the generic words of a support desk, shared across a customer's memories.
FRAMES = (
    "{}",
    "Customer {}.",
    "Customer says she {}.",
    "Noted on the account: {}.",
    "From the last support ticket: customer {}.",
    "Mentioned during an order call: {}.",
    "Account note: {}.",
    "Support agent note, customer {}.",
    "Per the ticket history, the customer {}.",
    "Told support on a call that he {}.",
)

ORDER_FRAMES = ("{}", "Noted on the account: {}.", "Account note: {}.", "From the last support ticket: {}.",
                "Customer called: {}.", "Per the ticket history, {}.")


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    customer: str
    answer: str | None  # the memory text asked about; None for off-topic questions
    type: str  # attribute type (also of an unanswerable question), or "off-topic" (unrelated)
    paraphrase: bool  # shares no content word with the answer

    @property
    def kind(self) -> str:
        """"on-topic", "unrelated" (off-topic, world trivia) or "unanswerable" (off-topic: a desk
        question about an attribute type the customer has no memory of)."""
        if self.answer is not None:
            return "on-topic"
        return "unrelated" if self.type == "off-topic" else "unanswerable"


@dataclass(frozen=True, slots=True)
class Customer:
    id: str
    memories: tuple[str, ...]
    types: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Dataset:
    customers: tuple[Customer, ...]
    questions: tuple[Question, ...]

    def on_topic(self) -> list[Question]:
        return [q for q in self.questions if q.answer is not None]

    def off_topic(self) -> list[Question]:
        return [q for q in self.questions if q.answer is None]


def _shares_word(question: str, memory: str) -> bool:
    return bool(set(tokenize(question)) & set(tokenize(memory)))


def build(
    *, customers: int = 300, seed: int = 19, off_topic_per_customer: int = 2, unanswerable_per_customer: int = 2
) -> Dataset:
    """The data set: deterministic for a seed. The unanswerable questions are drawn from their own
    random stream, after the rest, so adding them left every other question as it was."""
    rng = random.Random(seed)
    people: list[Customer] = []
    questions: list[Question] = []
    for c in range(customers):
        cid = f"cust-{c:04d}"
        chosen = rng.sample(TYPES, rng.randint(3, 8))
        memories = [rng.choice(FRAMES).format(rng.choice(t.memories)) for t in chosen]
        asked = [rng.choice(t.questions) for t in chosen]
        names = [t.name for t in chosen]
        orders = rng.randint(0, 4)
        for item, (problem, described) in zip(
            rng.sample(ORDER_ITEMS, orders), rng.sample(ORDER_PROBLEMS, orders), strict=True
        ):
            n = rng.randint(10000, 99999)
            memories.append(rng.choice(ORDER_FRAMES).format(f"order {n} ({item}) {problem}"))
            asked.append(rng.choice((*ORDER_QUESTIONS, described)).format(n=n, item=item))
            names.append("order")
        order = rng.sample(range(len(memories)), len(memories))  # orders are not always last
        memories, asked, names = [memories[i] for i in order], [asked[i] for i in order], [names[i] for i in order]
        people.append(Customer(cid, tuple(memories), tuple(names)))
        for text, memory, name in zip(asked, memories, names, strict=True):
            questions.append(Question(text, cid, memory, name, not _shares_word(text, memory)))
        for text in rng.sample(OFF_TOPIC, off_topic_per_customer):
            questions.append(Question(text, cid, None, "off-topic", False))
    lacking_rng = random.Random(f"{seed}-unanswerable")
    for person in people:
        lacking = [t for t in TYPES if t.name not in person.types]
        for t in lacking_rng.sample(lacking, min(unanswerable_per_customer, len(lacking))):
            questions.append(Question(lacking_rng.choice(t.questions), person.id, None, t.name, False))
    return Dataset(tuple(people), tuple(questions))


def split_of(question: Question) -> str:
    """"dev" or "test": half the attribute types (`folds(2)`) and half the unrelated texts are
    tuned on, the other half only reported. A type's unanswerable questions go with its type."""
    if question.kind == "unrelated":
        return ("dev", "test")[OFF_TOPIC.index(question.text) % 2]
    return "dev" if question.type in folds(2)[0] else "test"


def dev_half(dataset: Dataset) -> Dataset:
    """The dataset's dev half (`split_of`): every customer, only the dev half's questions."""
    return Dataset(dataset.customers, tuple(q for q in dataset.questions if split_of(q) == "dev"))


def dev_folds(n: int = 5) -> list[frozenset[str]]:
    """The dev half's attribute types split into n folds (round robin), for cross-validation."""
    names = sorted(folds(2)[0])
    return [frozenset(names[i::n]) for i in range(n)]


def folds(n: int = 5) -> list[frozenset[str]]:
    """Attribute types split into n folds (round robin): each fold's wording is unseen by the rest."""
    names = [*(t.name for t in TYPES), "order"]
    return [frozenset(names[i::n]) for i in range(n)]


def type_names(types: Sequence[AttributeType] = TYPES) -> list[str]:
    return [t.name for t in types]
