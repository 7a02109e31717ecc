"""`fourfold chat`: a REPL for a support person; an error is reported and the chat goes on."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from fourfold.cli._common import _memory, _model, state
from fourfold.errors import FourfoldError

if TYPE_CHECKING:
    from fourfold.agent.support import SupportAgent

__all__ = ["ChatSession", "register"]

HELP = """\
Type a message to send it as the customer. Commands:
  /resolve WHAT FIXED IT   close the ticket as solved (recorded, and remembered for next time)
  /fail WHAT HAPPENED      close the ticket as not solved (recorded as a failed episode)
  /customer ID             talk as another customer
  /history                 show this customer's conversation so far
  /help                    this list
  /quit                    leave (Ctrl-D too); Ctrl-C cancels the line or the running turn
A message that starts with '/' is sent as //message."""


class ChatSession:
    """What one line does, apart from terminal I/O: messages go to the agent, /commands are handled here."""

    def __init__(self, agent: SupportAgent, customer_id: str, *, echo: Callable[[str], None], as_json: bool = False) -> None:
        self.agent = agent
        self.customer_id = customer_id
        self.echo = echo
        self.as_json = as_json

    def handle(self, line: str) -> bool:
        """Act on one input line; False when the chat should end. Errors are printed, never raised."""
        text = line.strip()
        if not text:
            return True
        try:
            if text.startswith("/") and not text.startswith("//"):
                return self._command(text)
            self._say(text.removeprefix("/"))
        except FourfoldError as exc:
            self._error(str(exc))
        return True

    def _say(self, text: str) -> None:
        from fourfold.cli.render import print_reply

        print_reply(self.agent.turn(self.customer_id, text), as_json=self.as_json)

    def _command(self, text: str) -> bool:
        name, _, arg = text.partition(" ")
        arg = arg.strip()
        if name in ("/quit", "/exit", "/q"):
            return False
        if name in ("/help", "/?"):
            self.echo(HELP)
        elif name in ("/resolve", "/fail"):
            self._close(arg, success=name == "/resolve")
        elif name == "/customer":
            self._switch(arg)
        elif name == "/history":
            self._history()
        else:
            self._error(f"unknown command {name}: /help lists the commands (send //{text[1:]} to say it to the agent)")
        return True

    def _close(self, outcome: str, *, success: bool) -> None:
        verb = "resolve" if success else "fail"
        if not outcome:
            self._error(f"say what happened: /{verb} {'WHAT FIXED IT' if success else 'WHAT HAPPENED'}")
            return
        res = self.agent.resolve(self.customer_id, outcome, success=success)
        word = "resolved" if success else "closed as failed"
        self._report({"closed": "resolved" if success else "failed", "episode": res.episode.id,
                      "memories": list(res.remembered)},
                     f"{word}: episode {res.episode.id}, {len(res.remembered)} memories written")

    def _switch(self, customer_id: str) -> None:
        if not customer_id:
            self._error(f"usage: /customer ID (now talking as {self.customer_id})")
            return
        self.customer_id = customer_id
        self._report({"customer": customer_id}, f"now talking as {customer_id}")

    def _history(self) -> None:
        from fourfold.models.content import block_text

        messages = self.agent.history(self.customer_id)
        lines = [f"{m.get('role', '?')}: {block_text(m.get('content', ''))}" for m in messages]
        self._report({"history": [dict(m) for m in messages]}, "\n".join(lines) or "(no conversation yet)")

    def _report(self, value: dict[str, object], human: str) -> None:
        self.echo(json.dumps(value, ensure_ascii=False) if self.as_json else human)

    def _error(self, message: str) -> None:
        self.echo(json.dumps({"error": {"message": message}}, ensure_ascii=False) if self.as_json else f"error: {message}")


def chat(
    customer_id: Annotated[str, typer.Argument(help="The customer you talk as: their memories live in scope customer:ID.")],
) -> None:
    """Talk to the support agent as CUSTOMER_ID (a REPL: /help lists the commands)."""
    from fourfold.agent import SupportAgent

    model = _model()
    with _memory(create=True) as mem:
        session = ChatSession(SupportAgent(mem, model), customer_id, echo=typer.echo, as_json=state.as_json)
        if not state.as_json:
            typer.echo(f"fourfold chat as {customer_id} (scope customer:{customer_id}) with {model.name}, "
                       f"data in {state.data_dir}. /help lists the commands, /quit ends.")
        for line in _lines(lambda: f"{shlex.quote(session.customer_id)}> "):
            try:
                if not session.handle(line):
                    break
            except KeyboardInterrupt:  # Ctrl-C during a turn cancels that turn only
                typer.echo("\n(cancelled)", err=True)


def _lines(prompt: Callable[[], str]) -> Iterator[str]:
    """Input lines: with a prompt and line editing on a terminal, plain lines from a pipe."""
    if not sys.stdin.isatty():
        yield from sys.stdin
        return
    import readline  # noqa: F401 - line editing and history for input()

    while True:
        try:
            yield input(prompt())
        except EOFError:
            typer.echo()
            return
        except KeyboardInterrupt:
            typer.echo("\n(Ctrl-D or /quit to leave)")


def register(app: typer.Typer) -> None:
    """Add `chat` to the fourfold command."""
    app.command("chat")(chat)
