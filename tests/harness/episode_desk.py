"""A generated support desk's past tickets and help articles, for the relevance of
`similar_successes` and document search (`benchmarks/episodes_relevance.py`, and its tests).

Problem types × wordings: each type has several ways a resolved ticket's goal and outcome were
written and several ways a new customer words the same problem (49 of the 140 share no content
word with any ticket of the type). Customers' scopes hold 1 to 40 resolved tickets of various types,
so the relevance is checked across scope sizes. Off-topic queries are chatter and commands sent
to a support agent, unrelated questions (`harness.off_topic.OFF_TOPIC`), and *unanswerable* ones:
a desk problem of a type the scope has no ticket of.

Half the problem types and half the chatter are the *dev* half (tuned on), the rest the *test*
half (only reported), as in the benchmarks' `_paraphrase_data`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.off_topic import OFF_TOPIC

__all__ = ["CHATTER", "TYPES", "Query", "Scope", "build", "split_of"]


@dataclass(frozen=True, slots=True)
class ProblemType:
    name: str
    goals: tuple[str, ...]  # how a resolved ticket's goal was written
    outcomes: tuple[str, ...]  # how it was resolved
    queries: tuple[str, ...]  # how a new customer words the same problem
    article: str  # a help-centre article about it


def _lines(block: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in block.strip().splitlines() if s.strip())


def _p(name: str, goals: str, outcomes: str, queries: str, article: str) -> ProblemType:
    return ProblemType(name, _lines(goals), _lines(outcomes), _lines(queries), " ".join(_lines(article)))


TYPES: tuple[ProblemType, ...] = (
    _p("double_charge", """
        Customer was charged twice for the March invoice
        Duplicate payment taken for one order
        Card billed two times for a single subscription renewal
        Same amount debited twice on the customer's statement
        """, """
        Refunded the duplicate charge and confirmed with the bank reference
        Voided the second transaction; the customer sees one payment now
        Reversed the extra debit within the day
        """, """
        I see the same payment two times on my bank statement
        you took my money twice this month
        why is there a second identical debit from you?
        my card shows two identical transactions for one purchase
        I paid once but my account was debited again
        there are two withdrawals of the same sum from my account
        got billed double for my renewal
        """, """
        If you were charged twice, the second payment is usually a pending authorisation that
        disappears within three working days. If both payments have settled, contact support with
        your order number and we will refund the duplicate charge to the original card.
        """),
    _p("password_reset", """
        Password reset email never arrived
        Customer could not reset her password
        Reset link expired before the customer used it
        Forgotten password, reset message went to spam
        """, """
        Sent a fresh reset link and whitelisted our sender address
        Reset the password manually and asked the customer to change it at first login
        Found the reset mail in the spam folder; customer signed in
        """, """
        I forgot my login and the recovery email doesn't come
        can't get back into my account, no mail with the link
        the link to choose a new passcode never shows up
        how do I sign in if I don't remember my credentials?
        I never receive the message to recover access
        locked out because I lost my passphrase
        the recovery link you sent has stopped working
        """, """
        To reset your password, choose "Forgot password" on the sign-in page and enter your email.
        The reset link is valid for one hour. If it does not arrive within five minutes, check your
        spam folder and add our sender address to your contacts.
        """),
    _p("late_delivery", """
        Parcel not delivered after two weeks
        Order stuck in transit with the courier
        Package marked as shipped but never arrived
        Delivery is late and tracking has not updated
        """, """
        Opened a trace with the carrier and reshipped the order by express
        Courier found the parcel at the depot; delivered the next day
        Refunded the shipping fee and sent a replacement
        """, """
        where is my stuff? it's been ages since I ordered
        my box still hasn't shown up
        the tracking page hasn't moved in ten days
        I'm still waiting for what I bought last month
        nothing has come to my door yet
        has my purchase been lost by the postman?
        when will my order finally get here?
        """, """
        Most orders arrive within five working days. If your tracking has not changed for more
        than seven days, the parcel may be held at a depot: we open a trace with the courier and,
        if it cannot be found, ship a replacement at no cost.
        """),
    _p("damaged_item", """
        Item arrived broken
        Product was damaged in shipping
        Customer received a cracked screen in the box
        The glass vase came shattered
        """, """
        Sent a replacement and a prepaid label for the broken one
        Refunded in full after the customer sent photos
        Shipped a new unit with extra packaging
        """, """
        the thing I got is smashed
        it came in pieces
        the box was crushed and what's inside doesn't work
        my new lamp has a big crack in it
        opened the parcel and the contents were destroyed
        what do I do if it showed up in bad shape?
        the mug had a chip when it reached me
        """, """
        If your item arrived damaged, take a photo of it and of the packaging and send them to
        support within thirty days. We replace or refund damaged goods and send a prepaid label so
        you can return the broken item free of charge.
        """),
    _p("refund_status", """
        Customer waiting for a refund that has not appeared
        Refund approved but not received after ten days
        Asked where the refund for the returned order is
        Money back not credited to the card
        """, """
        Confirmed the refund was issued and shared the bank reference; it posted two days later
        Found the refund stuck in processing and pushed it through
        Explained card refunds take up to ten working days; it arrived on day eight
        """, """
        I returned it weeks ago and still have no money back
        when will I get reimbursed?
        you said you'd pay me back but nothing yet
        my account still hasn't been credited for the return
        how long until the money returns to my card?
        still no reimbursement for the jacket I sent back
        is my compensation on its way?
        """, """
        Refunds are issued within two days of your return reaching our warehouse. Your bank may take
        up to ten working days to show the money on your statement. Ask support for the refund
        reference if it has not appeared by then.
        """),
    _p("cancel_subscription", """
        Customer wants to cancel the subscription
        Cancel the monthly plan before the next renewal
        Stop automatic renewal of the annual membership
        Customer asked to end the subscription and not be billed again
        """, """
        Cancelled the subscription; access continues until the end of the period
        Turned off auto-renewal and emailed the confirmation
        Cancelled and refunded the renewal taken yesterday
        """, """
        I don't want to keep paying every month
        how do I quit my membership?
        please stop taking money from me each month
        I'd like to end my plan
        don't renew me next year
        how can I leave your service?
        I'm done with this, shut my account's billing off
        """, """
        You can cancel at any time under Account, Billing, Cancel subscription. You keep access until
        the end of the period you paid for and you will not be charged again. Renewals charged in
        the last 48 hours can be refunded on request.
        """),
    _p("app_crash", """
        Mobile app crashes on launch
        The app closes immediately after opening
        Android app keeps crashing after the update
        iPhone app freezes and quits on start
        """, """
        Asked the customer to reinstall; the crash stopped with version 4.2.1
        Cleared the app cache and data; it opens normally now
        Known bug in the update, fixed by the hotfix released the same day
        """, """
        every time I tap the icon it shuts down straight away
        your program on my phone won't stay open
        it just quits the moment I start it
        the thing blinks and disappears when I open it on my tablet
        since yesterday's version I can't use it on my mobile
        it dies as soon as I launch it
        why does it keep shutting itself on my handset?
        """, """
        If the app closes as soon as it opens, update it to the latest version from your app store.
        If that does not help, clear the app's cache and data, or uninstall and reinstall it. Your
        data is kept in your account and returns when you sign in again.
        """),
    _p("sync", """
        Data not syncing between laptop and phone
        Changes made on the web do not appear in the app
        Notes missing on the second device
        Sync stopped working after changing the password
        """, """
        Signed out and back in on both devices; sync resumed
        Resolved a conflict in the account; everything showed up again
        Re-enabled background refresh on the phone
        """, """
        what I edit on my computer doesn't show on my mobile
        my two gadgets don't agree with each other
        the stuff I added at work isn't there at home
        updates from the browser never reach the phone
        my tablet is missing everything I wrote yesterday
        why aren't my devices in step?
        entries vanish when I switch from desktop to handset
        """, """
        Your data syncs whenever a device is online and signed in to the same account. If changes do
        not appear, sign out and sign in again on each device and make sure background refresh is
        allowed for the app.
        """),
    _p("invoice_vat", """
        Customer needs an invoice with the company VAT number
        Invoice missing the business tax ID
        Requested a corrected invoice with the company name
        Asked for a VAT invoice for the accounting department
        """, """
        Added the VAT number to the billing profile and reissued the invoice
        Generated a corrected invoice with the company details
        Sent a PDF invoice showing the tax ID
        """, """
        my accountant says the bill lacks our tax registration
        can I get a receipt with my firm's details on it?
        the paperwork needs our business number for the books
        please redo the bill in my company's name
        the document you sent can't be used for our expenses
        I need proper paperwork for our finance team
        how do I put our registration code on the receipt?
        """, """
        Invoices are issued in the name on your billing profile. Add your company name and VAT
        number under Account, Billing, Details before the payment, or ask support to reissue an
        invoice already sent.
        """),
    _p("address_change", """
        Change the shipping address of an order already placed
        Customer moved and needs the order sent elsewhere
        Wrong delivery address entered at checkout
        Update the address before the order ships
        """, """
        Updated the address before dispatch; the order left the next morning
        The order had shipped; asked the courier to redirect it
        Cancelled and placed the order again with the new address
        """, """
        I typed the wrong street when I bought it
        can you send my purchase to my new flat instead?
        I've moved house since I ordered
        my parcel is going to my old place, help
        please deliver to my office rather than home
        I made a typo in where it should go
        can I redirect what I bought to my parents' house?
        """, """
        You can change where an order goes until it is dispatched: open the order and choose Edit
        address. Once it has shipped, support can ask the courier to redirect it, which may take a
        day longer.
        """),
    _p("two_factor", """
        Lost phone with the two-factor authenticator
        Customer cannot get the 2FA code
        Two-step verification codes not arriving by SMS
        New phone, authenticator app not set up
        """, """
        Verified identity and disabled two-factor so the customer could set it up again
        Customer used a backup code and re-enrolled the new phone
        Switched the verification to email codes
        """, """
        my old mobile is gone and now I can't pass the security step
        the six-digit number never reaches me
        I changed handsets and can't confirm it's me
        the extra check at sign in blocks me
        no text with the verification number arrives
        I dropped my phone in the sea and now the login wants a code
        how do I get past the second check without my device?
        """, """
        If you lost the device you use for two-factor authentication, sign in with one of your backup
        codes and set up the new device under Security. Without backup codes, support can verify
        your identity and turn two-factor off for you.
        """),
    _p("export_data", """
        Customer wants to export all data to CSV
        Download a copy of the account data
        Export of reports fails with a timeout
        Needs a spreadsheet of all transactions
        """, """
        Ran the export on our side and sent the download link
        Explained the export under Settings; the CSV downloaded fine
        Split the export by year so each file finished
        """, """
        how can I get everything out into a spreadsheet?
        I want a file with all my records
        can I take my history with me to another tool?
        the download of my reports never finishes
        is there a way to pull my entries into Excel?
        give me a copy of all my stuff
        I need my past activity as a file for my auditor
        """, """
        You can download your data as CSV files under Settings, Data, Export. Large accounts are
        exported in the background and you receive a link by email when the files are ready.
        """),
    _p("promo_code", """
        Discount code not accepted at checkout
        Promo code says expired
        Coupon did not apply to the order total
        Voucher from the newsletter rejected
        """, """
        Applied the discount manually and refunded the difference
        The code had expired; issued a new one
        Code was for new customers only; offered a loyalty discount instead
        """, """
        the money-off thing from your email isn't working
        it won't take my voucher when I pay
        I was promised 20 percent off but paid full price
        your offer didn't reduce what I was billed
        the special deal number gets an error
        why didn't I get the reduction I was promised?
        the gift card number is refused
        """, """
        A discount code applies to the items it names and only until its end date. Enter it on the
        payment page before you pay. If a valid code was not applied, support can refund the
        difference.
        """),
    _p("slow_performance", """
        Website very slow to load
        Dashboard takes a minute to open
        Pages time out during busy hours
        App is sluggish with a large account
        """, """
        Traced it to a browser extension; disabled, pages load in two seconds
        Our server had a slow database; fixed and confirmed with the customer
        Archived old projects; the dashboard opens quickly again
        """, """
        everything takes forever on your site
        it's crawling, I wait ages for each screen
        the spinning wheel never stops
        why is it so laggy today?
        it used to be snappy and now it's painfully sluggish
        opening my main screen takes over a minute
        things hang for a long time before showing up
        """, """
        If pages load slowly, try a private window to rule out browser extensions, and check our
        status page for incidents. Very large accounts load faster when old projects are archived.
        """),
    _p("email_notifications", """
        Too many notification emails
        Customer wants to unsubscribe from marketing emails
        Stop the daily digest messages
        Notifications still arriving after opting out
        """, """
        Turned off the digest and marketing emails in the profile
        Removed the address from the mailing list and confirmed
        Fixed the preference that had not saved; emails stopped
        """, """
        you're flooding my inbox
        I get messages from you every single day, make it stop
        how do I stop hearing from you so often?
        I opted out but the newsletters keep coming
        way too much mail from your company
        please remove me from your mailing lists
        I don't want any more of those updates in my inbox
        """, """
        Choose which emails you receive under Profile, Notifications. Marketing emails have an
        unsubscribe link at the bottom. Changes can take a day to apply to messages already queued.
        """),
    _p("wrong_item", """
        Received the wrong item
        Got a different size than ordered
        Order contained someone else's product
        Wrong colour shipped
        """, """
        Sent the correct item by express with a return label for the wrong one
        Exchanged for the right size at no cost
        Refunded and let the customer keep the wrong item
        """, """
        this isn't what I bought
        you sent me a blue one but I picked red
        the shoes are two sizes off from my order
        there's a stranger's purchase in my box
        I ordered a kettle and got a toaster
        the contents don't match my receipt
        what I unpacked is not my order
        """, """
        If you received something other than what you ordered, tell support within thirty days. We
        send the right item by express and a prepaid label to return the wrong one.
        """),
    _p("upgrade_plan", """
        Customer wants to upgrade to the business plan
        Add more seats to the team subscription
        Move from monthly to annual billing
        Needs more storage than the current plan allows
        """, """
        Upgraded the plan and charged the prorated difference
        Added five seats; invoice sent for the difference
        Switched to annual billing with the discount applied
        """, """
        we've grown and need room for more colleagues
        how do I get the bigger package?
        I'm out of space, what are my options?
        can we pay yearly instead?
        we hired three people, can they join our account?
        I want the premium tier
        what does it cost to move up a level?
        """, """
        You can change plans at any time under Account, Billing, Plan. Upgrades take effect at once
        and you pay the prorated difference; seats can be added one by one. Annual billing saves two
        months.
        """),
    _p("card_declined", """
        Payment card declined at checkout
        Card rejected when renewing the subscription
        Payment failed although the card is valid
        Bank declined the transaction
        """, """
        The bank had blocked an online payment; the customer approved it and paid
        Updated the expired card details; renewal succeeded
        Offered payment by invoice instead
        """, """
        it says my payment didn't go through
        my visa keeps getting refused by your site
        why won't it let me pay?
        the renewal failed even though I have funds
        the transaction bounces every time
        my purchase is blocked at the last step
        I can't complete the order, the bank says no
        """, """
        A declined payment is usually blocked by the bank's fraud check: approve the payment in your
        banking app and try again. Check that the card has not expired and that the billing address
        matches the one your bank has.
        """),
    _p("delete_account", """
        Customer asked to delete the account and all data
        GDPR erasure request
        Close the account permanently
        Remove personal data after cancelling
        """, """
        Deleted the account and its data; confirmation sent within 30 days as required
        Processed the erasure request and removed backups on schedule
        Closed the account after the final invoice was paid
        """, """
        I want you to erase everything you hold about me
        wipe my profile completely
        please forget me, I'm leaving for good
        under data protection law remove all my information
        how do I get rid of my user for ever?
        I don't want you keeping any record of me
        destroy my records and close me down
        """, """
        You can close your account under Account, Privacy, Delete account. We erase your personal
        data within thirty days, apart from invoices we must keep by law. Support can process an
        erasure request for you.
        """),
    _p("account_locked", """
        Account locked after too many failed sign-in attempts
        Customer blocked from logging in
        Account suspended for suspicious activity
        Login disabled after several wrong passwords
        """, """
        Unlocked the account after verifying identity
        The lock expired after an hour; customer signed in
        Lifted the suspension after checking recent activity
        """, """
        it says I've been blocked after a few tries
        I'm shut out of my profile, it's frozen
        your system thinks I'm a hacker and won't let me in
        I entered it wrong a few times and now it's barred
        why has my access been suspended?
        it tells me my user is disabled
        I can't get in, there's a red banner saying restricted
        """, """
        After five failed sign-in attempts an account is locked for an hour to protect it. Wait for
        the lock to expire or reset your password. If it was suspended for unusual activity, support
        will verify your identity and unlock it.
        """),
)


#: Chatter and commands to a support agent that no past ticket or article answers (written for
#: this set; `benchmarks/_handwritten.py`'s OFF_TOPIC stays a separate check set, never used here).
CHATTER: tuple[str, ...] = (
    "hello",
    "hey, how are you doing?",
    "thank you so much!",
    "ok bye",
    "good afternoon",
    "brb",
    "haha that's funny",
    "nice weather today",
    "can you tell me a story",
    "what's your name?",
    "who made you?",
    "I had pizza for lunch",
    "ping",
    "are you still there?",
    "never mind",
    "cool, thanks",
    "see you tomorrow",
    "yes",
    "no thanks",
    "one moment please",
    "I'm just browsing",
    "what day is it today?",
    "sing me a song",
    "how old are you?",
    "my son has a football match tonight",
    "open the calendar",
    "send a message to Tom",
    "turn the lights off",
    "write a limerick about a frog",
    "let me think about it",
    "great job",
    "I'm so tired today",
    "where do you live?",
    "whatever",
    "can we talk about movies?",
    "what's trending on twitter",
    "order me a taxi",
    "good night",
    "sorry, my mistake",
    "hmm",
)


@dataclass(frozen=True, slots=True)
class Scope:
    id: str
    tickets: tuple[tuple[str, str, str], ...]  # (type, goal, outcome)


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    scope: str
    type: str | None  # the problem type asked about (also of an unanswerable query); None: off-topic
    kind: str  # "on-topic", "unanswerable", "chatter" or "unrelated"


#: Scope sizes: a lone ticket, a few, many (every type several times).
SIZES = (1, 2, 3, 5, 8, 12, 20, 40)


def split_of(query: Query) -> str:
    """"dev" or "test": half the problem types, half the chatter and half the unrelated questions."""
    if query.kind == "chatter":
        return ("dev", "test")[CHATTER.index(query.text) % 2]
    if query.kind == "unrelated":
        return ("dev", "test")[OFF_TOPIC.index(query.text) % 2]
    assert query.type is not None
    return "dev" if [t.name for t in TYPES].index(query.type) % 2 == 0 else "test"


def build(n_scopes: int = 160, seed: int = 19) -> tuple[list[Scope], list[Query]]:
    """Scopes of every size in `SIZES`, each with on-topic, unanswerable and off-topic queries."""
    rng = random.Random(seed)
    by_name = {t.name: t for t in TYPES}
    scopes: list[Scope] = []
    queries: list[Query] = []
    for i in range(n_scopes):
        size = SIZES[i % len(SIZES)]
        sid = f"c{i:04d}"
        # a scope's types: at most half of all types when small, so some are unanswerable
        n_types = min(max(1, size // 2 + 1), len(TYPES) // 2)
        chosen = rng.sample([t.name for t in TYPES], n_types)
        tickets = []
        for j in range(size):
            t = by_name[chosen[j % n_types]]
            goal = rng.choice(t.goals)
            tickets.append((t.name, goal, rng.choice(t.outcomes)))
        scopes.append(Scope(sid, tuple(tickets)))
        for name in chosen:
            queries.append(Query(rng.choice(by_name[name].queries), sid, name, "on-topic"))
        absent = [t.name for t in TYPES if t.name not in chosen]
        gone = rng.choice(absent)
        queries.append(Query(rng.choice(by_name[gone].queries), sid, gone, "unanswerable"))
        queries.append(Query(rng.choice(CHATTER), sid, None, "chatter"))
        queries.append(Query(rng.choice(OFF_TOPIC), sid, None, "unrelated"))
    return scopes, queries
