"""The fact store as a model tool: Anthropic and OpenAI schemas, and the call handler."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fourfold.errors import InvalidInput
from fourfold.protocols import FactsLike
from fourfold.semantic.keys import UNKNOWN, check_tool_description, validate_key
from fourfold.types import Fact

__all__ = [
    "DEFAULT_DESCRIPTION",
    "NO_MATCH",
    "SEARCH_DESCRIPTION",
    "PolicyTool",
    "openai_function_schema",
    "policy_search_schema",
    "policy_tool_schema",
]

DEFAULT_DESCRIPTION = (
    "Return an authoritative company policy value. Always use this for refund windows, "
    "limits, and supported options instead of relying on memory."
)
SEARCH_DESCRIPTION = (
    "Find the policy values that answer a question, by what they are about: pass the question in plain "
    "words ('money back on the annual plan'). The answer lists the nearest policies, one a line, as "
    "'key: value (what it is)', or NO MATCH. Use it when no key of lookup_policy plainly names what is asked."
)
#: What the search answers when no recorded policy is near the question.
NO_MATCH = "NO MATCH — no recorded policy is about that"
_KEY_DESCRIPTION = "Which policy value to return; one of the listed keys."
_NO_KEYS_DESCRIPTION = "Which policy value to return."
_NO_KEYS_NOTE = " No policies are recorded yet, so every lookup answers UNKNOWN."
# Anthropic and OpenAI both accept tool names of this shape.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def policy_tool_schema(
    keys: Sequence[str] | Mapping[str, str], *, name: str = "lookup_policy", description: str = DEFAULT_DESCRIPTION
) -> dict[str, Any]:
    """An Anthropic tool-use schema whose `key` is an enum of the given (sorted, unique) keys.

    `keys` may map each key to the description the operator wrote for it (`facts set
    --description`); the `key` parameter's description then tells the model what each
    key means, so it can pick the right one. With no keys the enum is left out (an empty
    enum is rejected in practice) and the description says that nothing is recorded yet.
    """
    _check_tool(name, description)
    if isinstance(keys, str):
        raise InvalidInput("keys must be a sequence of fact keys, not one string")
    described = {validate_key(key): text for key, text in keys.items()} if isinstance(keys, Mapping) else {}
    enum = sorted({validate_key(key) for key in keys})
    key_schema: dict[str, Any] = {"type": "string"}
    if enum:
        meanings = " ".join(f"{key}: {described[key].strip()}." for key in enum if described.get(key, "").strip())
        key_schema.update(enum=enum, description=f"{_KEY_DESCRIPTION} {meanings}".strip())
    else:
        key_schema["description"] = _NO_KEYS_DESCRIPTION
        description += _NO_KEYS_NOTE
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {"key": key_schema},
            "required": ["key"],
            "additionalProperties": False,
        },
    }


def policy_search_schema(*, name: str = "search_policy", description: str = SEARCH_DESCRIPTION) -> dict[str, Any]:
    """An Anthropic tool-use schema for searching the facts by a question (`FactStore.search`)."""
    _check_tool(name, description)
    query = {"type": "string", "description": "The question, in plain words."}
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": {"query": query}, "required": ["query"],
                         "additionalProperties": False},
    }


def openai_function_schema(anthropic_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The same tool in OpenAI's function-calling shape (a deep copy, safe to mutate)."""
    try:
        name = anthropic_schema["name"]
        parameters = anthropic_schema["input_schema"]
    except (KeyError, TypeError):
        raise InvalidInput(
            "expected an Anthropic tool schema with 'name' and 'input_schema'"
        ) from None
    function = {
        "name": name,
        "description": anthropic_schema.get("description", ""),
        "parameters": copy.deepcopy(dict(parameters)),
    }
    return {"type": "function", "function": function}


class PolicyTool:
    """A fact store (local or remote) bound as a tool: `schema` lists the current keys, `handle`
    answers calls.

    With no `description`, the schema carries the one stored with the facts
    (`FactStore.set_tool_description`), re-read like the keys.
    """

    def __init__(
        self,
        facts: FactsLike,
        *,
        name: str = "lookup_policy",
        description: str | None = None,
        search_name: str | None = "search_policy",
    ) -> None:
        """`search_name` names the tool that finds policies by a question (None: not offered)."""
        _check_tool(name, DEFAULT_DESCRIPTION if description is None else description)
        if search_name is not None:
            _check_tool(search_name, SEARCH_DESCRIPTION)
            if search_name == name:
                raise InvalidInput("the lookup and the search tool need two names")
        self.facts = facts
        self.name = name
        self.description = description
        self.search_name = search_name

    def schema(self) -> dict[str, Any]:
        """The Anthropic schema, re-reading the keys so new facts show up in the enum."""
        return self.facts.tool_schema(name=self.name, description=self.description)

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool offered: the lookup, and the search once there are policies to find."""
        lookup = self.schema()
        keyed = bool(lookup["input_schema"]["properties"]["key"].get("enum"))
        return [lookup, policy_search_schema(name=self.search_name)] if keyed and self.search_name else [lookup]

    def handles(self, name: str) -> bool:
        """Whether a tool call of this name is one of this tool's."""
        return name == self.name or (self.search_name is not None and name == self.search_name)

    def run(self, name: str, tool_input: Mapping[str, Any] | str) -> str:
        """Answer a call of the lookup (`handle`) or of the search: the nearest policies as
        'key: value (description)' lines, or NO_MATCH."""
        if name != self.search_name:
            return self.handle(tool_input)
        if isinstance(tool_input, str):
            tool_input = _parse_arguments(tool_input)
        query = tool_input.get("query") if isinstance(tool_input, Mapping) else None
        if not isinstance(query, str) or not query.strip():
            return NO_MATCH
        found = self.facts.search(query[:_MAX_QUERY])
        return "\n".join(_policy_line(f) for f in found) or NO_MATCH

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function schema, with the current keys."""
        return openai_function_schema(self.schema())

    def handle(self, tool_input: Mapping[str, Any] | str) -> str:
        """Answer one tool call: the value as text, or UNKNOWN for any key or input it cannot use.

        `tool_input` is Anthropic's `input` dict, or OpenAI's `arguments` JSON string.
        """
        if isinstance(tool_input, str):
            tool_input = _parse_arguments(tool_input)
        if not isinstance(tool_input, Mapping):
            return UNKNOWN
        return self.facts.lookup(tool_input.get("key"))


#: The longest question the search reads (a model's runaway argument is cut).
_MAX_QUERY = 2000


def _policy_line(fact: Fact) -> str:
    value = fact.value if isinstance(fact.value, str) else json.dumps(fact.value, ensure_ascii=False)
    return f"{fact.key}: {value}" + (f" ({fact.description.strip()})" if fact.description.strip() else "")


def _parse_arguments(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):  # a model's malformed arguments are UNKNOWN
        return None


def _check_tool(name: object, description: object) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(f"tool names are 1-64 letters, digits, '_' or '-'; got {name!r:.80}")
    check_tool_description(description)
