"""The commented TOML a written spec is made of (tomlkit items).

Every section of a spec `fslab reproduce` writes states its choices in
comments: these helpers put a key beside its reason, wrap a comment to the
page, and turn a model's dump into TOML tables, arrays and inline tables.
"""

from __future__ import annotations

import textwrap
from typing import Any

import tomlkit
from tomlkit.items import Table


def toml_value(value: Any) -> Any:
    text = str(value)
    return int(text) if text.isdigit() and len(text) < 12 else text


def toml_tree(value: Any, *, top: bool = True) -> Any:
    """model_dump output as tomlkit items: a list of records is an array of tables at the
    top of [reported], an array of inline tables below it."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value) and top:
        aot = tomlkit.aot()
        for item in value:
            table = tomlkit.table()
            for key, sub in item.items():
                table[key] = toml_tree(sub, top=False)
            aot.append(table)
        return aot
    if isinstance(value, list):
        array = tomlkit.array()
        array.extend(toml_tree(item, top=False) for item in value)
        return array
    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        inline.update(value)
        return inline
    return value


def add(table: Table, key: str, value: Any, comment: str) -> None:
    """A key with its reason: inline when short, as comment lines above it when long."""
    if comment and len(comment) > 56:
        for line in wrap(comment):
            table.add(tomlkit.comment(line))
    table[key] = value
    if comment and len(comment) <= 56:
        item = table.item(key)  # the item itself: table[key] unwraps a bool to True
        assert isinstance(item, tomlkit.items.Item), key
        item.comment(comment)


def wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=86, subsequent_indent="  ") or [""]
