"""The reasons a spec gives for its values: the comments of its TOML text, by key.

`fslab reproduce` writes every scaling and every change to the report's
workload as a comment on the key it sets ("scaled: the reporter's 27.5MiB per
job x 2048 jobs = 54.9GiB; 4MiB x 2048 = 8GiB fits half the device"), and the
presets comment theirs. The campaign stores the TOML text as written
(campaigns.spec_toml), so a reply drafted later can say how the experiment
was scaled in the spec's own words. A comment belongs to the key or table
that follows it, or to the key it ends the line of.
"""

from __future__ import annotations

from dataclasses import dataclass

import tomlkit
from tomlkit.container import Container
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Comment, Table, Whitespace


@dataclass(frozen=True)
class SpecComment:
    """What the spec says about one key (or one table, for a table's own comment)."""

    path: tuple[str, ...]  # ("workload", "options", "filesize")
    reason: str  # the comment's lines as one sentence

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


def spec_comments(toml_text: str) -> list[SpecComment]:
    """Every commented key and table of the spec, in the order written; [] if unreadable."""
    try:
        document = tomlkit.parse(toml_text)
    except TOMLKitError:
        return []
    found: list[SpecComment] = []
    _walk(document, (), found)
    return found


def _walk(container: Container, path: tuple[str, ...], found: list[SpecComment]) -> None:
    pending: list[str] = []
    for key, item in container.body:
        if key is None:
            if isinstance(item, Comment):
                pending.append(item.as_string())
            elif isinstance(item, Whitespace) and item.as_string().count("\n") > 1:
                pending = []  # a blank line ends a comment block that belongs to nothing
            continue
        here = (*path, key.key)
        if isinstance(item, AoT):
            pending = []
            continue
        if isinstance(item, Table):
            # a table's own comment is the block above its first key
            _add(found, here, pending)
            _walk(item.value, here, found)
        else:
            _add(found, here, [*pending, item.trivia.comment])
        pending = []


def _add(found: list[SpecComment], path: tuple[str, ...], lines: list[str]) -> None:
    words = [line.strip().removeprefix("#").strip() for line in lines]
    reason = " ".join(w for w in words if w)
    if reason:
        found.append(SpecComment(path, reason))
