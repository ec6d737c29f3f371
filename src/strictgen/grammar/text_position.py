"""Line and column of an offset in a grammar text, for GrammarSyntaxError (GBNF and Lark alike)."""

from __future__ import annotations

from bisect import bisect_right

from strictgen.errors import GrammarSyntaxError


class LineIndex:
    """Maps 0-based offsets of `text` to 1-based (line, column), columns counted in code points.
    A line ends at \\n, \\r\\n or a lone \\r. The line starts are found once, on the first error."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: list[int] | None = None

    def location(self, pos: int) -> tuple[int, int]:
        if self._starts is None:
            t, n = self.text, len(self.text)
            starts = [0]
            for i, c in enumerate(t):
                if c == "\n" or (c == "\r" and not (i + 1 < n and t[i + 1] == "\n")):
                    starts.append(i + 1)
            self._starts = starts
        line = bisect_right(self._starts, pos) - 1
        return line + 1, pos - self._starts[line] + 1

    def error(self, message: str, pos: int) -> GrammarSyntaxError:
        line, column = self.location(pos)
        return GrammarSyntaxError(message, line, column)
