"""The secrets corpus: 40+ formats of secret, each in otherwise neutral prose, ordinary support
sentences that must come back unchanged, and personal details for the "personal" policy.

Shared by tests (test_detect.py, test_reliability_secrets.py) and benchmarks/reliability.py.
All values are generated from a fixed seed; none is a real credential.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

__all__ = ["ORDINARY", "PERSONAL", "SECRETS", "Case"]


@dataclass(frozen=True, slots=True)
class Case:
    kind: str  # the kind the detector must report
    text: str  # the secret in prose
    secret: str  # what must not survive anywhere


_rng = random.Random(15)
_LOWER_NUM = string.ascii_lowercase + string.digits
_ALNUM = string.ascii_letters + string.digits
_UPPER_NUM = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_B64URL = _ALNUM + "-_"


def _r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _pem_body(lines: int = 6) -> str:
    return "\n".join(_r(_B64, 64) for _ in range(lines))


def _case(kind: str, template: str, secret: str) -> Case:
    return Case(kind, template.format(s=secret), secret)


def _luhn_complete(prefix: str, length: int) -> str:
    """prefix + random digits + the Luhn check digit, `length` digits in all."""
    body = prefix + _r(string.digits, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


def _group4(digits: str) -> str:
    return " ".join(digits[i : i + 4] for i in range(0, len(digits), 4))


_PEM_RSA = _pem_body()
_PEM_SSH = _pem_body(4)
_PEM_PGP = _pem_body(3)
_PEM_TAIL = _pem_body(3)
_GCP_BODY = _pem_body(5).replace("\n", "\\n")
_GCP_JSON = (
    '{"type": "service_account", "project_id": "shop-prod", "private_key_id": "'
    + _r(_HEX, 40)
    + '", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
    + _GCP_BODY
    + '\\n-----END PRIVATE KEY-----\\n", "client_email": "bot@shop-prod.iam.gserviceaccount.com"}'
)
_BASIC = base64.b64encode(f"deploy:{_r(_ALNUM, 14)}".encode()).decode()

SECRETS: list[Case] = [
    # cloud keys
    *[
        _case("aws_access_key", "We found {s} in the old deploy script.", prefix + _r(_UPPER_NUM, 16))
        for prefix in ("AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA")
    ],
    _case("aws_secret_key", "The AWS secret is {s} and it still works.", _r(_B64, 40)),
    _case("aws_secret_key", "export AWS_SECRET_ACCESS_KEY={s}", _r(_B64, 40)),
    _case(
        "azure_storage_key",
        "Connection: DefaultEndpointsProtocol=https;AccountName=shop;AccountKey={s};EndpointSuffix=core.windows.net",
        _r(_B64, 86) + "==",
    ),
    _case("azure_storage_key", "Endpoint=sb://shop.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={s}", _r(_B64, 43) + "="),
    _case("azure_sas_signature", "Download https://shop.blob.core.windows.net/c/f.pdf?sv=2022-11-02&sp=r&sig={s} today.", _r(_ALNUM, 40) + "%3D"),
    _case("azure_client_secret", "The app registration uses {s} for now.", _r(_ALNUM, 3) + "8Q~" + _r(_ALNUM + "_~.-", 34)),
    _case("gcp_private_key_id", 'The JSON file has "private_key_id": "{s}" near the top.', _r(_HEX, 40)),
    Case("private_key", f"Here is the service file: {_GCP_JSON}", _GCP_BODY),
    _case("google_api_key", "The maps widget uses {s} on the site.", "AIza" + _r(_B64URL, 35)),
    _case("digitalocean_token", "The droplet script reads {s} from disk.", "dop_v1_" + _r(_HEX, 64)),
    _case("databricks_token", "The notebook job uses {s} to run.", "dapi" + _r(_HEX, 32)),
    _case("vault_token", "Vault login with {s} worked.", "hvs." + _r(_B64URL, 90)),
    _case("vault_token", "The batch login gave {s} back.", "hvb." + _r(_B64URL, 90)),
    _case("age_secret_key", "The backup is sealed with {s} here.", "AGE-SECRET-KEY-1" + _r(_UPPER_NUM, 58)),
    _case("firebase_server_key", "Push messages use {s} in the app.", "AAAA" + _r(_B64URL, 7) + ":" + _r(_B64URL, 140)),
    # version control and package registries
    *[
        _case("github_token", "The CI job clones with {s} every night.", prefix + _r(_ALNUM, 36))
        for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
    ],
    _case("github_token", "The fine-grained one is {s} now.", "github_pat_" + _r(_ALNUM, 22) + "_" + _r(_ALNUM, 59)),
    *[
        _case("gitlab_token", "The runner pulls with {s} each time.", prefix + _r(_B64URL, 20))
        for prefix in ("glpat-", "glptt-", "gldt-", "glrt-", "gloas-")
    ],
    _case("bitbucket_token", "The mirror job uses {s} for pushes.", "ATBB" + _r(_ALNUM, 32)),
    _case("npm_token", "Publishing needs {s} in the CI.", "npm_" + _r(_ALNUM, 36)),
    _case("pypi_token", "Upload with {s} from the build box.", "pypi-AgEIcHlwaS5vcmc" + _r(_B64URL, 60)),
    _case("rubygems_key", "Gem pushes use {s} here.", "rubygems_" + _r(_HEX, 48)),
    _case("docker_token", "The registry login is {s} for the bot.", "dckr_pat_" + _r(_B64URL, 27)),
    _case("huggingface_token", "The model download uses {s} today.", "hf_" + _r(string.ascii_letters, 34)),
    _case("atlassian_token", "The Jira sync uses {s} here.", "ATATT3" + _r(_B64URL, 180)),
    _case("postman_key", "The collection runner uses {s} here.", "PMAK-" + _r(_HEX, 24) + "-" + _r(_HEX, 34)),
    _case("linear_key", "The issue sync uses {s} today.", "lin_api_" + _r(_ALNUM, 40)),
    _case("grafana_token", "Dashboards load with {s} here.", "glsa_" + _r(_ALNUM, 32) + "_" + _r(_HEX, 8)),
    _case("grafana_token", "The cloud stack uses {s} here.", "glc_" + _r(_ALNUM, 60) + "=="),
    _case("sentry_token", "Release uploads use {s} from CI.", "sntrys_" + _r(_ALNUM, 60)),
    _case("newrelic_key", "Metrics go out with {s} now.", "NRAK-" + _r(_UPPER_NUM, 27)),
    _case("figma_token", "Design export uses {s} nightly.", "figd_" + _r(_B64URL, 40)),
    # AI, payment and messaging providers
    _case("anthropic_key", "The chat bot runs on {s} in prod.", "sk-ant-api03-" + _r(_B64URL, 93) + "AA"),
    _case("openai_key", "The old bot ran on {s} last year.", "sk-proj-" + _r(_B64URL, 120)),
    _case("stripe_key", "Charges go through {s} in prod.", "sk_live_" + _r(_ALNUM, 24)),
    _case("stripe_key", "The staging shop uses {s} now.", "rk_test_" + _r(_ALNUM, 24)),
    _case("slack_token", "The bot posts with {s} in the channel.", f"xoxb-{_r(string.digits, 12)}-{_r(string.digits, 13)}-{_r(_ALNUM, 24)}"),
    _case("slack_webhook", "Alerts post to {s} when it fails.", f"https://hooks.slack.com/services/T{_r(_UPPER_NUM, 8)}/B{_r(_UPPER_NUM, 10)}/{_r(_ALNUM, 24)}"),
    _case("discord_webhook", "Alerts post to {s} as well.", f"https://discord.com/api/webhooks/{_r(string.digits, 18)}/{_r(_B64URL, 68)}"),
    _case("teams_webhook", "Alerts post to {s} for the ops room.", f"https://shop.webhook.office.com/webhookb2/{_r(_HEX, 32)}@{_r(_HEX, 32)}/IncomingWebhook/{_r(_HEX, 32)}"),
    _case("telegram_bot_token", "The bot was made with {s} here.", f"{_r(string.digits, 10)}:AA{_r(_B64URL, 33)}"),
    _case("sendgrid_key", "Mail goes out with {s} now.", f"SG.{_r(_B64URL, 22)}.{_r(_B64URL, 43)}"),
    _case("twilio_api_key", "The SMS job uses {s} for the sender.", "SK" + _r(_HEX, 32)),
    _case("twilio_auth_token", "The Twilio one is {s} for the sender.", _r(_HEX, 32)),
    _case("mailgun_key", "The mail relay uses {s} for now.", "key-" + _r(_HEX, 32)),
    _case("mailchimp_key", "The newsletter uses {s} here.", _r(_HEX, 32) + "-us12"),
    _case("shopify_token", "The store app uses {s} for orders.", "shpat_" + _r(_HEX, 32)),
    _case("square_token", "The till uses {s} for sales.", "sq0atp-" + _r(_B64URL, 22)),
    _case("notion_token", "The wiki sync uses {s} for now.", "secret_" + _r(_ALNUM, 43)),
    _case("notion_token", "The new wiki sync uses {s} now.", "ntn_" + _r(_ALNUM, 46)),
    _case("jwt", "The session was {s} before it ended.", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9." + _r(_B64URL, 43)),
    # headers
    _case("bearer_token", "Send Authorization: Bearer {s} with it.", _r(_HEX, 40)),
    _case("basic_auth", "Send Authorization: Basic {s} with it.", _BASIC),
    # private keys
    _case("private_key", "Paste: -----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY----- done.", _PEM_RSA),
    _case("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----", _PEM_SSH),
    _case("private_key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{s}\n-----END PGP PRIVATE KEY BLOCK-----", _PEM_PGP),
    _case("private_key", "The rest of it:\n{s}\n-----END PRIVATE KEY-----", _PEM_TAIL),
    # passwords in URLs, connection strings, JSON and prose
    _case("url_password", "The app talks to postgres://shop:{s}@db.internal:5432/app today.", _r(_ALNUM, 14)),
    _case("url_password", "Cache at redis://:{s}@cache.internal:6379/0 for now.", _r(_ALNUM, 16)),
    _case("url_password", "Cluster mongodb+srv://app:{s}@c0.mongodb.net/shop here.", _r(_ALNUM, 18)),
    _case("password", "Server=db;Database=shop;User Id=app;Password={s};", _r(_ALNUM, 12) + "9"),
    _case("password", '{{"user": "app", "password": "{s}"}}', _r(_ALNUM, 12)),
    _case("password", "My password is {s} if that helps.", "Tr0ub4dor&3"),
    _case("password", "Log in with pwd={s} on the box.", _r(_ALNUM, 10)),
    _case("password", "The router pw {s} from the sticker.", "Kx7" + _r(_ALNUM, 7)),
    _case("password", "For the box, pwd: {s} works.", _r(_ALNUM, 10)),
    _case("password", "The pwd is {s} on that box.", _r(_ALNUM, 10)),
    _case("passphrase", "My passphrase is {s}.", "correct horse battery staple"),
    _case("passphrase", "The wallet seed phrase: {s}", "abandon ability able about above absent absorb abstract absurd abuse access accident"),
    _case("passphrase", "The mnemonic is {s}.", "orbit river maple candle anchor velvet"),
    # generic names in config and prose
    _case("secret", "In the env file: api_key={s}", _r(_HEX, 24)),
    _case("secret", "In the env file: client_secret={s}", _r(_ALNUM, 24)),
    _case("secret", "In the env file: storage_access_key={s}", _r(_ALNUM, 24)),
    _case("secret", "In the env file: hmac_auth_key={s}", _r(_ALNUM, 24)),
    _case("secret", "In the env file: storage_account_key={s}", _r(_ALNUM, 24)),
    _case("secret", "In the yaml: api_key: {s}", _r(_ALNUM, 24)),
    _case("secret", "In the yaml: session_token: {s}", _r(_ALNUM, 24)),
    _case("secret", "In the yaml: hmac_auth_key: {s}", _r(_ALNUM, 24)),
    _case("secret", "In the yaml: storage_account_key: {s}", _r(_ALNUM, 24)),
    _case("secret", "The api key is {s} for the shop.", _r(_ALNUM, 24)),
    _case("secret", "The client secret is {s} for the shop.", _r(_ALNUM, 24)),
    _case("secret", "The access key is {s} for the shop.", _r(_ALNUM, 24)),
    _case("secret", '{{"client_secret": "{s}"}}', _r(_ALNUM, 20)),
    _case("secret", "refresh_token={s}", "1//0g" + _r(_ALNUM, 30)),
    _case("secret", "storage_access_key: {s}", _r(_ALNUM, 24)),
    _case("secret", "The session token is {s} for today.", _r(_ALNUM, 20) + "7"),
    # payment and bank numbers
    _case("card_number", "Please charge {s} exp 12/27.", _group4(_luhn_complete("4", 16))),
    _case("card_number", "Mastercard {s} on file.", _group4(_luhn_complete("53", 16))),
    _case("card_number", "It was {s} in the form.", _luhn_complete("4", 16)),
    _case("iban", "Refund to IBAN {s} please.", "DE89 3704 0044 0532 0130 00"),
    _case("iban", "Wire it to {s} today.", "GB82WEST12345698765432"),
    _case("iban", "Our bank: {s}.", "FR14 2004 1010 0505 0001 3M02 606"),
]

ORDINARY: list[str] = [
    "order 4417 1234 5678 9113 was refunded",
    "Order 4111 1111 1111 1111 shipped in two parcels.",
    "Tracking 4012 8888 8888 1881 shows it in Memphis.",
    "The phone's IMEI 356938035643809 is on the blocklist.",
    "IMEI: 490154203237518, model X200.",
    "Set max_tokens=1024 in the config and retry.",
    "We use token_ttl=3600 for sessions.",
    "token_type=bearer and expires_in=3600",
    "api_version=2024-06-01 is the one we pin.",
    "session_token_expires: 2025-01-01T10:00:00Z",
    "Upgrade to v2.14.3 fixed the crash.",
    "Commit 3f2a9c8e1b7d6f5a4e3d2c1b0a9f8e7d6c5b4a3f introduced the bug.",
    "Request id 123e4567-e89b-12d3-a456-426614174000 failed at 10:42.",
    "Please call me back at +1 415 555 0142 after 5pm.",
    "My number is (415) 555-0100, office hours only.",
    "Call +44 20 7946 0958 for the London office.",
    "The key is to restart the router first.",
    "The secret to fixing it was clearing the cache.",
    "Basic plan costs $10 per month.",
    "I forgot my password and the reset link expired.",
    "The password is incorrect according to the app.",
    "Your password must be at least 12 characters long.",
    "Card ending in 4242 was declined twice.",
    "Invoice INV-2024-00042 was paid on 2024-03-01.",
    "Ticket TKT-555-0192 is waiting on the warehouse.",
    "The SKU 123456789012 is out of stock.",
    "Serial 1234567812345678 does not register.",
    "timeout: 30 and retries: 5 in settings.yaml",
    "The access point is on channel 11.",
    "Our API returns 429 when the limit is hit.",
    "The bearer of this card is my husband.",
    "Passport renewal takes six weeks.",
    "xoxo from Lyon, thanks for the help!",
    "Use the basic search, not the advanced one.",
    "The gateway at 10.0.0.1:8080 answers slowly.",
    "The account page shows the wrong plan since Monday.",
    "The phrase 'out of stock' appears on the page.",
    "Order #A-10293 never arrived, please check.",
    "Backup at https://example.com/docs/faq#refunds explains it.",
    "The build 2024.06.11-rc2 passed all checks.",
]

PERSONAL: list[Case] = [
    Case("name", "My name is Alice Smith and the PDF export fails.", "Alice Smith"),
    Case("name", "Called Maria back about the refund.", "Maria"),
    Case("name", "Maria Gonzalez reported the same issue.", "Maria Gonzalez"),
    Case("name", "Thanks Jonathan, that worked.", "Jonathan"),
    Case("email", "Write to alice.smith@example.org for details.", "alice.smith@example.org"),
    Case("phone", "Reach her at +1 415 555 0142 tomorrow.", "+1 415 555 0142"),
    Case("phone", "Her line is (415) 555-0100 at work.", "(415) 555-0100"),
    Case("phone", "Reach him on 415.555.0100 at home.", "415.555.0100"),
    Case("phone", "The London desk is +44 20 7946 0958.", "+44 20 7946 0958"),
    Case("phone", "The UK desk is 020 7946 0958.", "020 7946 0958"),
    Case("phone", "Berlin is +49 30 1234567 for now.", "+49 30 1234567"),
    Case("phone", "Please call 555-0192 after lunch.", "555-0192"),
    Case("phone", "Text 0176 2345 6789 with the code.", "0176 2345 6789"),
    Case("postal_address", "Ship it to 12 Oak St please.", "12 Oak St"),
    Case("postal_address", "Send it to 1600 Amphitheatre Parkway, Mountain View, CA 94043.", "1600 Amphitheatre Parkway"),
    Case("postal_address", "She lives at 221B Baker Street, London NW1 6XE.", "221B Baker Street"),
    Case("postal_address", "Deliver to Hauptstraße 5, 10115 Berlin.", "Hauptstraße 5"),
    Case("postal_address", "Deliver to 12 rue de la Paix in Paris.", "12 rue de la Paix"),
    Case("postal_address", "Mail goes to P.O. Box 4711 in town.", "P.O. Box 4711"),
    Case("order_number", "order 4417 1234 5678 9113 was refunded", "4417 1234 5678 9113"),
    Case("order_number", "Order #A-10293 never arrived.", "A-10293"),
    Case("order_number", "Invoice INV-2024-00042 is paid.", "INV-2024-00042"),
    Case("order_number", "The tracking number is 1Z999AA10123456784.", "1Z999AA10123456784"),
    Case("account_number", "Account 84512399 was upgraded.", "84512399"),
    Case("account_number", "Customer ID CUST-99812 asked again.", "CUST-99812"),
    Case("ticket_number", "Ticket TKT-555-0192 is open.", "TKT-555-0192"),
    Case("ticket_number", "See case 4471-22 for the notes.", "4471-22"),
    Case("card_number", "Card ending in 4242 was declined.", "4242"),
    Case("iban", "Refund to DE89 3704 0044 0532 0130 00 please.", "DE89 3704 0044 0532 0130 00"),
    Case("card_number", "Visa ends with 4242 on file.", "4242"),
    Case("postal_address", "Postcode SW1A 1AA on the label.", "SW1A 1AA"),
    Case("postal_address", "The label says CA 94043 only.", "CA 94043"),
    Case("order_number", "We found ORD-2024-5531 in the system.", "ORD-2024-5531"),
    Case("phone", "The number 444.806.9916 is the old one.", "444.806.9916"),
    Case("phone", "Or on 07700 900485 after work.", "07700 900485"),
    Case("phone", "Text 5550123456 with the code.", "5550123456"),
    Case("name", "Spoke with Ms. O'Sullivan about the order.", "O'Sullivan"),
    Case("name", "Thandiwe confirmed on the phone: it works.", "Thandiwe"),
    Case("name", "Emailed Bartholomew O'Sullivan the new link.", "Bartholomew O'Sullivan"),
    Case("name", "Oluwaseun Adeyemi here, my parcel is late.", "Oluwaseun Adeyemi"),
    Case("name", "Hello, this is Maria Vasquez-Lindqvist again.", "Vasquez-Lindqvist"),
    Case("postal_address", "I live at 671 Mill Way, Leeds LS1 4DY now.", "4DY"),
    Case("preference", "The PDF fails. Please always contact me by email, never by phone.", "contact me by email, never by phone"),
    Case("preference", "Fine. I'd rather get invoices on paper from now on.", "rather get invoices on paper"),
    Case("preference", "Thanks, text me instead of calling.", "text me instead of calling"),
    Case("preference", "Also please reply in Spanish if you can.", "reply in Spanish"),
    Case("preference", "My preferred carrier is DHL for parcels.", "preferred carrier is DHL"),
    Case("preference", "Oh and never call before 10am, I work nights.", "never call before 10am"),
    Case("preference", "Please only email me at ann.lee@example.com, thanks.", "ann.lee@example.com"),
    Case("ticket_number", "Escalated INC-20391 to tier two.", "INC-20391"),
    Case("account_number", "Merged CUST-10021 into the other profile.", "CUST-10021"),
    *[
        Case("phone", f"Use {cue} 555-01{i:02d} after lunch.", f"555-01{i:02d}")
        for i, cue in enumerate(("phone", "tel", "mobile", "cell", "sms", "whatsapp", "fax"))
    ],
    *[
        Case("postal_address", f"Deliver to {street} {i + 2} soon.", f"{street} {i + 2}")
        for i, street in enumerate(("Bahnhofstrasse", "Hauptstr.", "Birkenweg", "Schulgasse", "Marktplatz",
                                    "Lindenallee", "Mittelring", "Kurfürstendamm"))
    ],
    *[
        Case("postal_address", f"Deliver to {i + 2} {way} Voltaire soon.", f"{i + 2} {way} Voltaire")
        for i, way in enumerate(("avenue", "boulevard", "chemin", "place", "allée", "impasse", "quai"))
    ],
    *[
        Case(kind, f"Please look at {cue} {58213 + i} today.", str(58213 + i))
        for kind, cues in (
            ("order_number", ("invoice", "booking", "reservation", "confirmation", "rma", "ref", "receipt",
                              "shipment", "parcel", "transaction", "txn")),
            ("account_number", ("acct", "customer", "member", "policy", "contract", "subscription", "loyalty",
                                "user", "client")),
            ("ticket_number", ("ticket", "claim", "incident", "issue")),
        )
        for i, cue in enumerate(cues)
    ],
    # The reader's kinds beyond the ones rules used to find
    Case("tenant", "Rotated the SAML certificate for tenant borealis-prod-us; all logins work.", "borealis-prod-us"),
    Case("host_name", "Restarted the sync agent on db-07.corp and it caught up.", "db-07.corp"),
    Case("user_name", "Unlocked user jkowalski after three failed attempts.", "jkowalski"),
    Case("network_address", "The VPN drops whenever I connect from 172.16.4.20 at the office.", "172.16.4.20"),
    Case("birth_date", "My date of birth is 14/03/1987 and the portal says my account is locked.", "14/03/1987"),
    Case("spelled_number", "my number is oh seven seven zero zero nine double one two three four", "oh seven seven zero zero nine double one two three four"),
    Case("organisation", "I manage the tills at Harrow & Finch Outfitters and the card reader is offline.", "Harrow & Finch Outfitters"),
    Case("place", "Since we moved the office to Tampere, the label printer jams.", "Tampere"),
]
