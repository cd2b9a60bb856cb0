"""Lines that wrap inside their block: a hanging indent for each logical line of terminal text."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

_NARROWEST = 20  # a continuation never gets fewer columns than this, however deep its indent


def say(console: Console, markup: str, indent: int = 0, hang: int | None = None) -> None:
    """Print one logical line (rich markup) at `indent`, wrapped to the console's width; its
    continuation lines start at `hang` (default: two columns deeper), so a wrapped line reads as
    part of its block instead of starting again at column 0. A line break in the text starts a
    new line at `hang` too."""
    hang = indent + 2 if hang is None else hang
    at = indent
    for paragraph in Text.from_markup(markup).split("\n", allow_blank=True):
        cuts = breaks(paragraph.plain, console.width - at, console.width - hang)
        if not cuts:  # an empty line stays empty, without trailing blanks
            console.print()
        for start, end in cuts:
            console.print(Text(" " * at).append_text(paragraph[start:end]), soft_wrap=True)
            at = hang
        at = hang


def labelled(console: Console, label: str, markup: str, indent: int = 0) -> None:
    """`label` then `markup` (both rich markup), continuation lines under the text after the label
    ("evidence: " -> the evidence wraps into a column of its own)."""
    say(console, label + markup, indent, indent + len(Text.from_markup(label).plain))


def breaks(plain: str, first_width: int, rest_width: int) -> list[tuple[int, int]]:
    """Where to cut `plain` into lines: (start, end) offsets, the first line at most `first_width`
    long, the others `rest_width`. Cuts at spaces (dropped there); a word longer than a whole
    line (a path, a scoped op name) is cut where the line ends."""
    first_width, rest_width = max(_NARROWEST, first_width), max(_NARROWEST, rest_width)
    out: list[tuple[int, int]] = []
    pos, n, width = 0, len(plain), first_width
    while pos < n:
        if out:
            while pos < n and plain[pos] == " ":
                pos += 1
            if pos == n:
                break
        if n - pos <= width:
            out.append((pos, n))
            break
        cut = plain.rfind(" ", pos + 1, pos + width + 1)
        if cut == -1:
            cut = pos + width
        end = cut
        while end > pos and plain[end - 1] == " ":
            end -= 1
        out.append((pos, end))
        pos, width = cut, rest_width
    return out
