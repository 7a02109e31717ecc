"""False positives of the secret detector on conversations nobody wrote for fourfold.

    python benchmarks/secrets_false_positives.py --data /path/to/BEAM [--locomo bench/locomo/locomo-dev.json]
                                                 [--beam-sizes 100K] [--beam-conversations 1-10]

Every message of LoCoMo's dev conversations and of BEAM's chats (its tune split by default:
conversations 1-10 of the chosen sizes) goes through `redact` one at a time, as a support
agent stores it. Each finding is printed as a Markdown table row (source, kind, the finding
with 40 characters around it) for review; then one line:

    false-positives: messages=N chars=N hits=N

`--data` is BEAM's repository: a checkout (with `chats/`) or a bare git directory (read with
`git show`); BEAM states no licence, so nothing of it is copied here. `--structure-only`
turns the vendored rule file off.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from fourfold.text import redact
from fourfold.text.redact import structure_only

_LOCOMO = Path("/work/shared/bench/locomo/locomo-dev.json")


def _locomo(path: Path) -> Iterator[tuple[str, str]]:
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        turns = conversation["conversation"]
        for key, session in turns.items():
            if not key.startswith("session_") or not isinstance(session, list):
                continue
            for turn in session:
                for field in ("text", "blip_caption", "query"):
                    if isinstance(turn.get(field), str):
                        yield f"locomo {conversation['sample_id']} {turn.get('dia_id')}", turn[field]


def _read(data: Path, relative: str) -> str:
    if (data / "chats").is_dir():
        return (data / relative).read_text(encoding="utf-8")
    return subprocess.run(["git", f"--git-dir={data}", "show", f"HEAD:{relative}"], check=True,
                          capture_output=True, text=True).stdout


def _messages(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every message's content in a BEAM chat (batches of turns of messages)."""
    if isinstance(value, dict):
        if isinstance(value.get("content"), str) and "role" in value:
            yield f"{where} #{value.get('id')}", value["content"]
            return
        for item in value.values():
            yield from _messages(item, where)
    elif isinstance(value, list):
        for item in value:
            yield from _messages(item, where)


def _beam(data: Path, sizes: list[str], conversations: range) -> Iterator[tuple[str, str]]:
    for size in sizes:
        for n in conversations:
            relative = f"chats/{size}/{n}/chat.json"
            yield from _messages(json.loads(_read(data, relative)), f"beam {size}/{n}")


def _span(text: str, start: int, end: int) -> str:
    before, after = text[max(0, start - 40) : start], text[end : end + 40]
    shown = f"{before}⟦{text[start:end]}⟧{after}".replace("\n", "⏎").replace("|", "\\|")
    return shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="BEAM's repository (checkout or bare git dir)")
    parser.add_argument("--locomo", type=Path, default=_LOCOMO)
    parser.add_argument("--beam-sizes", default="100K")
    parser.add_argument("--beam-conversations", default="1-10")
    parser.add_argument("--structure-only", action="store_true")
    args = parser.parse_args(argv)
    first, _, last = args.beam_conversations.partition("-")
    conversations = range(int(first), int(last or first) + 1)
    messages = chars = hits = 0
    print("| source | kind | finding in context |")
    print("|---|---|---|")
    with structure_only() if args.structure_only else nullcontext():
        sources = [_locomo(args.locomo), _beam(args.data, args.beam_sizes.split(","), conversations)]
        for source in sources:
            for where, text in source:
                messages += 1
                chars += len(text)
                for found in redact(text)[1]:
                    hits += 1
                    print(f"| {where} | {found.kind} | {_span(text, found.start, found.end)} |")
    print(f"false-positives: messages={messages} chars={chars} hits={hits}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
