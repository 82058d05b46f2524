"""What a file's text says of its class statements before anything parses it: each one's header, and the names the
file imports under another name. The subclass searches read only these (planning/subclasses.py), so a search costs
a lookup, not a pass over the repo's text; a worker reads them with the prefilter (files.prefilter).

A class statement names its bases in its header: after its name, up to a `)` and a `:` that end a line, or at most
HEADER characters on (a base list that long is read no further). Bases hold colons too (a string,
`class Sub[T: Bound](Parent)`), so no other end is taken. A text's `class` that starts no statement (a comment, a
string, `subclass Foo`) only adds a file to parse: the parsed tree decides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

HEADER = 400
_CLASS = re.compile(r"class\s+(\w+)(\s*[(\[])?")  # starts with a literal: `re` scans for it at C speed
_HEADER_END = re.compile(r"\)[ \t]*:[ \t]*(?:#[^\n]*)?\n")
_AS = re.compile(r"as\s+(\w+)")
_NAME_AT_START = re.compile(r"\w*")


class Heads(NamedTuple):
    """A file's class headers and its aliases (a named tuple: a worker returns one per file, pickled)."""

    headers: tuple[tuple[str, str], ...]  # (class name, the header's text after the name: "" without bases)
    aliases: tuple[tuple[str, str], ...]  # (name, alias) for each `name as alias`

    @classmethod
    def of(cls, text: str) -> Heads:
        headers = []
        for match in _words(_CLASS, text):
            if match.group(2) is None:  # no `(` or `[` after its name: no bases
                headers.append((match.group(1), ""))
                continue
            start = match.end(1)
            end = _HEADER_END.search(text, start, start + HEADER + 64)
            stop = end.start() + 1 if end is not None and end.start() <= start + HEADER else start + HEADER
            stop += len(_NAME_AT_START.match(text, stop, stop + 128).group())  # a name the limit cuts is read whole
            headers.append((match.group(1), text[start:stop]))
        aliases = []
        for match in _words(_AS, text):
            before = text[max(match.start() - 128, 0) : match.start()].rstrip()
            name = before[len(before) - len(_name_at_end(before)) :]
            if name and len(before) < match.start() - max(match.start() - 128, 0):  # a name, then white space
                aliases.append((name, match.group(1)))
        return cls(tuple(headers), tuple(aliases))

    def words(self) -> Iterator[str]:
        """Every name a class header of the file holds."""
        for _, header in self.headers:
            yield from re.findall(r"\w+", header)

    def text(self) -> str:
        """The class statements as far as their headers go, one a line (what a pattern over `class ...` reads)."""
        return "\n".join(f"class {name}{header}" for name, header in self.headers)


def _name_at_end(text: str) -> str:
    """The name a text ends with ("" if it ends otherwise)."""
    at = len(text)
    while at and (text[at - 1].isalnum() or text[at - 1] == "_"):
        at -= 1
    return text[at:]


def _words(pattern: re.Pattern, text: str) -> Iterator[re.Match]:
    """The pattern's matches that start a word (`class` in `dataclass` does not)."""
    at = 0
    while (match := pattern.search(text, at)) is not None:
        if match.start() and (text[match.start() - 1].isalnum() or text[match.start() - 1] == "_"):
            at = match.start() + 1
            continue
        yield match
        at = match.end()


class HeadIndex:
    """For a repo's files: which of them hold a class header naming a name, by itself or by an alias the file
    imports it as."""

    def __init__(self, files: Iterable[tuple[str, Heads]]):
        """`files`: (a file's key, its heads)."""
        self._naming: dict[str, set[str]] = {}
        self._aliased: dict[str, set[tuple[str, str]]] = {}
        for key, heads in files:
            for word in heads.words():
                self._naming.setdefault(word, set()).add(key)
            for name, alias in heads.aliases:
                self._aliased.setdefault(name, set()).add((key, alias))

    def naming(self, name: str) -> set[str]:
        """The files with a class header that names `name`, or a name the file imports `name` as."""
        through = {key for key, alias in self._aliased.get(name, ()) if key in self._naming.get(alias, ())}
        return self._naming.get(name, set()) | through
