"""No Robots (``HuggingFaceH4/no_robots``, splits ``train`` then ``test``) -> ``no_robots.jsonl``.

data_io ``pipe/clean_no_robots.py`` loads the whole dataset and, split by split, keeps the first
exchange of each conversation as one ``cot`` row:
- conversations of fewer than two messages give nothing;
- a leading ``system`` message is put before the user's text, followed by a blank line
  (``system + "\\n\\n" + user``);
- the next two messages must be ``user`` then ``assistant``, else nothing; the instruction is
  the (system-prefixed) user text, the response the assistant text, neither stripped.

Local mirror: ``HuggingFaceH4/no_robots/data/{train,test}-*.parquet`` (see ``hub_splits``).

No deliberate differences. (A message whose ``content`` is null would crash data_io; the
framework counts such a record as a malformed raw record.)
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources.hub_splits import HubSplitsLayout
from hrm_assets.cleaning.sources.spec import Record, SourceSpec

SYSTEM_SEPARATOR = "\n\n"


def clean_no_robots(record: Record, part: str) -> Iterator[Row]:
    messages = record["messages"]
    if len(messages) < 2:
        return
    system, start = "", 0
    if messages[0]["role"] == "system":
        system, start = messages[0]["content"] + SYSTEM_SEPARATOR, 1
    if (
        len(messages) > start + 1
        and messages[start]["role"] == "user"
        and messages[start + 1]["role"] == "assistant"
    ):
        yield Row("cot", system + messages[start]["content"], messages[start + 1]["content"])


# -- demo corpus: invented instruction/response conversations in the Hub schema --------------

_CATEGORIES = ["Generation", "Open QA", "Brainstorm", "Chat", "Rewrite", "Summarize", "Classify"]
_REQUESTS = [
    (
        "Write a haiku about {thing}.",
        "Quiet {thing} waits\nunder a pale winter sky\nsnow keeps its secret",
    ),
    (
        "Give me three fun facts about {thing}.",
        "1. {Thing} are older than you think.\n2. They vary a lot.\n3. People love them.",
    ),
    (
        "Rewrite this more politely: 'Send me the {thing} now.'",
        "Could you please send me the {thing} when you have a moment?",
    ),
    (
        "Résume en une phrase : les {thing} sont utiles au quotidien.",
        "Les {thing} nous servent tous les jours.",
    ),
    ("用一句话介绍{thing}。", "{thing}是一种常见而有趣的东西。"),
]
_THINGS = ["lighthouses", "teapots", "bicycles", "owls", "maps", "violins", "glaciers"]


def _conversation(rng: random.Random, index: int) -> list[dict]:
    thing = rng.choice(_THINGS)
    request, reply = _REQUESTS[index % len(_REQUESTS)]
    user = {"role": "user", "content": request.format(thing=thing)}
    assistant = {
        "role": "assistant",
        "content": reply.format(thing=thing, Thing=thing.capitalize()),
    }
    shape = index % 10
    if shape == 1:
        system = {"role": "system", "content": f"You are a cheerful assistant who loves {thing}."}
        return [system, user, assistant]
    if shape == 4:  # multi-turn: only the first exchange is kept
        follow_up = {"role": "user", "content": "Thanks! One more, please."}
        return [user, assistant, follow_up, dict(assistant)]
    if shape == 7:  # a lone system message and user: no exchange
        return [{"role": "system", "content": "Be brief."}, user]
    if shape == 9:  # assistant speaks first, or a lone message: no row
        return [assistant, user] if index % 20 == 9 else [user]
    return [user, assistant]


def demo_no_robots(rng: random.Random) -> dict[str, list[dict]]:
    parts: dict[str, list[dict]] = {}
    for split, count in (("train", 200), ("test", 40)):
        records = []
        for index in range(count):
            messages = _conversation(rng, index)
            records.append(
                {
                    "prompt": messages[0]["content"],
                    "prompt_id": f"{split}-{index:05d}",
                    "messages": messages,
                    "category": _CATEGORIES[index % len(_CATEGORIES)],
                }
            )
        parts[split] = records
    return parts


NO_ROBOTS = SourceSpec(
    name="no_robots",
    hub_id="HuggingFaceH4/no_robots",
    configs=("default",),
    split="train+test",
    output="no_robots.jsonl",
    format="jsonl",
    clean=clean_no_robots,
    layout=HubSplitsLayout(config_dir="data"),
    demo=demo_no_robots,
    description="No Robots human-written first exchanges, system prompt included (cot).",
)

SPECS = (NO_ROBOTS,)
