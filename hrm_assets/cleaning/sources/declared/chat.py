"""Chat-format records (OpenAI ``{"messages": [{"role", "content"}, ...]}``) as instruction and
response pairs.

The rule (docs/SOURCES.md, "Chat format"):

- ``messages`` is a non-empty list of objects, each with a ``role`` of ``system``, ``user`` or
  ``assistant`` and a string ``content``; anything else makes the conversation malformed, and it
  is skipped under one of the ``MALFORMED_*`` reasons (counted, with examples).
- ``turns: last`` (default): the last assistant turn is the response; the messages before it
  are the context (messages after it, an unanswered user turn, are not used).
  ``turns: each``: every assistant turn that follows a user turn gives a row, its context being
  every message before it (an assistant turn before any user turn, a greeting, is context only).
- The instruction is the context rendered as follows. When it holds exactly one user turn
  (and any system messages): the system contents then the user content, joined by
  ``separator`` (``"\\n\\n"``), no role names. Otherwise (a multi-turn history): every message
  rendered with ``history_template`` (``"{role}: {content}"``), joined by ``separator``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from hrm_assets.cleaning.sources.declared.template import parse_template
from hrm_assets.cleaning.sources.spec import SkipRecord

ROLES = ("system", "user", "assistant")

MALFORMED_NOT_A_LIST = "chat: messages is not a list"
MALFORMED_EMPTY = "chat: messages is empty"
MALFORMED_MESSAGE = "chat: a message is not an object with role and content"
MALFORMED_ROLE = "chat: unknown role"
MALFORMED_CONTENT = "chat: content is not a string"
MALFORMED_NO_ASSISTANT = "chat: no assistant turn"
MALFORMED_NO_USER = "chat: no user turn before an assistant turn"

MALFORMED_REASONS = (
    MALFORMED_NOT_A_LIST,
    MALFORMED_EMPTY,
    MALFORMED_MESSAGE,
    MALFORMED_ROLE,
    MALFORMED_CONTENT,
    MALFORMED_NO_ASSISTANT,
    MALFORMED_NO_USER,
)


@dataclass(frozen=True)
class Turn:
    role: str
    content: str


@dataclass(frozen=True)
class ChatRendering:
    """How a conversation becomes rows (see the module docstring)."""

    turns: str = "last"
    history_template: str = "{role}: {content}"
    separator: str = "\n\n"

    def __post_init__(self) -> None:
        if self.turns not in ("last", "each"):
            raise ValueError(f"turns must be 'last' or 'each', not {self.turns!r}")
        parse_template(self.history_template)


def conversation_turns(messages: object) -> list[Turn]:
    """The turns of a ``messages`` value; SkipRecord under a ``MALFORMED_*`` reason, its detail
    naming the message (0-based) and what it holds."""
    if not isinstance(messages, list):
        kind = "null" if messages is None else type(messages).__name__
        raise SkipRecord(MALFORMED_NOT_A_LIST, f"messages is {kind}")
    if not messages:
        raise SkipRecord(MALFORMED_EMPTY, "messages is []")
    turns = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            shown = sorted(message) if isinstance(message, Mapping) else type(message).__name__
            raise SkipRecord(MALFORMED_MESSAGE, f"message {index}: {shown}")
        role, content = message["role"], message["content"]
        if role not in ROLES:
            raise SkipRecord(
                MALFORMED_ROLE, f"message {index}: role {role!r} (known: {', '.join(ROLES)})"
            )
        if not isinstance(content, str):
            kind = "null" if content is None else type(content).__name__
            raise SkipRecord(MALFORMED_CONTENT, f"message {index} ({role}): content is {kind}")
        turns.append(Turn(role, content))
    return turns


def render_context(context: list[Turn], rendering: ChatRendering) -> str:
    """The instruction made of the turns before a response (the rule of the module)."""
    spoken = [turn for turn in context if turn.role != "system"]
    if len(spoken) == 1 and spoken[0].role == "user":
        return rendering.separator.join(turn.content for turn in context)
    template = parse_template(rendering.history_template)
    return rendering.separator.join(
        template.render({"role": turn.role, "content": turn.content}) for turn in context
    )


def conversation_pairs(messages: object, rendering: ChatRendering) -> Iterator[tuple[str, str]]:
    """``(instruction, response)`` of a conversation: one pair (``turns: last``) or one per
    answered user turn (``turns: each``). SkipRecord when the conversation is malformed."""
    turns = conversation_turns(messages)
    answers = [index for index, turn in enumerate(turns) if turn.role == "assistant"]
    if not answers:
        raise SkipRecord(MALFORMED_NO_ASSISTANT, f"roles {[turn.role for turn in turns]}")
    first_user = next((i for i, turn in enumerate(turns) if turn.role == "user"), None)
    answered = [i for i in answers if first_user is not None and i > first_user]
    if not answered:
        raise SkipRecord(MALFORMED_NO_USER, f"roles {[turn.role for turn in turns]}")
    chosen = answered[-1:] if rendering.turns == "last" else answered
    pairs = [(render_context(turns[:i], rendering), turns[i].content) for i in chosen]
    yield from pairs
