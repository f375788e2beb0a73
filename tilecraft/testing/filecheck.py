"""Ordered checks of generated source, in the style of LLVM's FileCheck.

A test states what it expects as directive lines, usually comments of the golden kernel itself::

    @T.prim_func
    def stage(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        # CHECK: s[tx] = A[
        # CHECK-NEXT: barrier(
        # CHECK-NOT: barrier(
        # CHECK: B[tx] = s[
        ...

    filecheck(generated_source_of(stage), stage)

Directives, matched in order against the text (`CHECK` is the default prefix):

* `CHECK: pat` - the first match of `pat` after the end of the previous match (the same line or later);
* `CHECK-NEXT: pat` - a match on the line right after the previous match's line;
* `CHECK-SAME: pat` - a match on the previous match's line, after it;
* `CHECK-EMPTY:` - the line right after the previous match's line is blank;
* `CHECK-NOT: pat` - no match between the previous match and the next positive match (or the end of the
  text when none follows).

A pattern is literal text: surrounding whitespace is ignored, a run of whitespace matches any run of
spaces and tabs, and `{{regex}}` embeds a regular expression. As in FileCheck, a `CHECK:` takes the
first match and is never revisited: when a later `CHECK-NEXT:` or `CHECK-SAME:` fails because `CHECK:`
matched an earlier, similar line, make the `CHECK:` pattern specific enough to find the intended one. Failures raise `FileCheckError` (an
`AssertionError`) saying which directive failed, where the search was, and the text around it; a pattern
that does occur, but before the previous match, is reported as out of order.
"""

from __future__ import annotations

import difflib
import inspect
import linecache
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Directive", "FileCheckError", "check_directives", "filecheck"]

KINDS = ("", "-NEXT", "-SAME", "-NOT", "-EMPTY")
CONTEXT_LINES = 3


class FileCheckError(AssertionError):
    """A directive did not hold; the message shows the directive, the position and the text around it."""


@dataclass(frozen=True)
class Directive:
    """One check line: its kind (`CHECK`, `CHECK-NEXT`, ...), the pattern and where it was written."""

    kind: str
    pattern: str
    where: str
    regex: re.Pattern[str]

    def __str__(self) -> str:
        return f"{self.kind}: {self.pattern}".rstrip() + f"  ({self.where})"


@dataclass(frozen=True)
class _Match:
    line: int  # 0-based line of the text
    start: int
    end: int
    directive: Directive


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Literal text with `{{regex}}` parts; whitespace runs match any run of blanks."""
    parts = re.split(r"\{\{(.*?)\}\}", pattern.strip())
    out = []
    for k, part in enumerate(parts):
        if k % 2:
            out.append(f"(?:{part})")
        else:
            out.append(r"[ \t]+".join(re.escape(word) for word in re.split(r"\s+", part)))
    try:
        return re.compile("".join(out))
    except re.error as err:
        raise FileCheckError(f"bad regular expression in check pattern {pattern!r}: {err}") from None


def check_directives(checks: Any, prefix: str = "CHECK") -> list[Directive]:
    """The directives written in `checks`: a string, a Python function, or a kernel (`PrimFunc`) whose
    source carries them in comments. A misspelled directive (`CHECK-NXT:`) is an error, not ignored."""
    text, origin, first = _check_text(checks)
    found = []
    marker = re.compile(rf"(?<![\w-]){re.escape(prefix)}(-[A-Z]+)?:(.*)$")
    for k, line in enumerate(text.splitlines()):
        m = marker.search(line)
        if m is None:
            continue
        suffix, pattern = m.group(1) or "", m.group(2).strip()
        where = f"{origin}:{first + k}"
        if suffix not in KINDS:
            known = ", ".join(prefix + kind for kind in KINDS)
            raise FileCheckError(f"{where}: unknown directive {prefix}{suffix}: (known: {known})")
        if suffix == "-EMPTY" and pattern:
            raise FileCheckError(f"{where}: {prefix}-EMPTY: takes no pattern, found {pattern!r}")
        if suffix != "-EMPTY" and not pattern:
            raise FileCheckError(f"{where}: {prefix}{suffix}: has an empty pattern")
        found.append(Directive(prefix + suffix, pattern, where, compile_pattern(pattern)))
    if not found:
        raise FileCheckError(
            f"no {prefix}: lines found in {origin}: a check without directives tests nothing"
        )
    return found


def filecheck(text: str, checks: Any, *, prefix: str = "CHECK", name: str = "text") -> None:
    """Check `text` against the directives in `checks` (see the module docstring); raises FileCheckError."""
    _Checker(text, name, prefix).run(check_directives(checks, prefix))


def _check_text(checks: Any) -> tuple[str, str, int]:
    """(text holding the directives, where it comes from, the number of its first line)."""
    if isinstance(checks, str):
        return checks, "checks", 1
    span = getattr(checks, "span", None)
    if span is not None and getattr(span, "file", None):
        # a kernel (PrimFunc): its span is the `def` line of its source
        lines = linecache.getlines(span.file)[span.line - 1 :]
        if lines:
            return "".join(inspect.getblock(lines)), span.file, span.line
    if isinstance(checks, Iterable):
        return "\n".join(checks), "checks", 1
    try:
        lines, first = inspect.getsourcelines(checks)
    except (OSError, TypeError) as err:
        raise FileCheckError(f"cannot read the check lines of {checks!r}: {err}") from None
    return "".join(lines), inspect.getsourcefile(checks) or "<source>", first


class _Checker:
    def __init__(self, text: str, name: str, prefix: str) -> None:
        self.lines = text.splitlines()
        self.name = name
        self.prefix = prefix

    def run(self, directives: list[Directive]) -> None:
        previous: _Match | None = None
        line, col = 0, 0
        nots: list[Directive] = []
        for d in directives:
            if d.kind.endswith("-NOT"):
                nots.append(d)
                continue
            match = self._positive(d, previous, line, col)
            self._check_nots(nots, previous, line, col, match)
            nots = []
            previous, line, col = match, match.line, match.end
        self._check_nots(nots, previous, line, col, None)

    # ------------------------------------------------------------------ positive directives

    def _positive(self, d: Directive, previous: _Match | None, line: int, col: int) -> _Match:
        kind = d.kind.removeprefix(self.prefix)
        if kind in ("-NEXT", "-SAME", "-EMPTY") and previous is None:
            raise FileCheckError(f"{d}: {d.kind} cannot be the first directive (it is relative to a match)")
        if kind == "":
            return self._search(d, previous, line, col)
        if kind == "-SAME":
            return self._on_line(d, previous, previous.line, previous.end, "on the same line as")
        target = previous.line + 1
        if kind == "-EMPTY":
            if target < len(self.lines) and not self.lines[target].strip():
                return _Match(target, 0, 0, d)
            self._fail(d, previous, target, "expected a blank line right after the previous match")
        return self._on_line(d, previous, target, 0, "on the line after")

    def _search(self, d: Directive, previous: _Match | None, line: int, col: int) -> _Match:
        for k in range(line, len(self.lines)):
            m = d.regex.search(self.lines[k], col if k == line else 0)
            if m is not None:
                return _Match(k, m.start(), m.end(), d)
        earlier = self._before(d.regex, line, col)
        if earlier is not None:
            problem = (
                f"not found after the previous match; it occurs earlier, at line {earlier + 1} "
                "(out of order?)"
            )
        else:
            problem = "not found" + (" after the previous match" if previous else "") + self._closest(d, line)
        self._fail(d, previous, line, problem)

    def _on_line(self, d: Directive, previous: _Match, target: int, col: int, relation: str) -> _Match:
        if target < len(self.lines):
            m = d.regex.search(self.lines[target], col)
            if m is not None:
                return _Match(target, m.start(), m.end(), d)
        later = self._after(d.regex, previous.line, previous.end)
        hint = f"; it occurs at line {later + 1}" if later is not None and later != target else ""
        shown = target if target < len(self.lines) else previous.line
        self._fail(
            d, previous, shown, f"not found {relation} the previous match (line {previous.line + 1}){hint}"
        )

    # ------------------------------------------------------------------ CHECK-NOT

    def _check_nots(
        self, nots: list[Directive], previous: _Match | None, line: int, col: int, until: _Match | None
    ) -> None:
        """No CHECK-NOT pattern of `nots` matches between (line, col) and the start of `until`."""
        for d in nots:
            found = self._not_match(d.regex, line, col, until)
            if found is not None:
                after = _described(previous, "the start of the text")
                before = _described(until, "the end of the text")
                self._fail(d, previous, found, f"matched at line {found + 1}, between {after} and {before}")

    def _not_match(self, regex: re.Pattern[str], line: int, col: int, until: _Match | None) -> int | None:
        last = until.line if until is not None else len(self.lines) - 1
        for k in range(line, last + 1):
            lo = col if k == line else 0
            hi = until.start if until is not None and k == until.line else len(self.lines[k])
            if lo <= hi and regex.search(self.lines[k], lo, hi):
                return k
        return None

    # ------------------------------------------------------------------ reporting

    def _before(self, regex: re.Pattern[str], line: int, col: int) -> int | None:
        """The first line where `regex` matches before (line, col)."""
        for k in range(min(line, len(self.lines) - 1) + 1):
            if regex.search(self.lines[k][:col] if k == line else self.lines[k]):
                return k
        return None

    def _after(self, regex: re.Pattern[str], line: int, col: int) -> int | None:
        """The first line where `regex` matches after (line, col)."""
        for k in range(line, len(self.lines)):
            if regex.search(self.lines[k], col if k == line else 0):
                return k
        return None

    def _closest(self, d: Directive, line: int) -> str:
        candidates = [s.strip() for s in self.lines[line:]]
        close = difflib.get_close_matches(d.pattern.strip(), candidates, n=1, cutoff=0.5)
        if not close:
            return ""
        at = line + candidates.index(close[0]) + 1
        return f"; the closest line is {at}: {close[0]!r}"

    def _fail(self, d: Directive, previous: _Match | None, line: int, problem: str) -> None:
        where = _described(previous, "none (the start of the text)")
        raise FileCheckError(
            f"{d}\n  {problem}\n  previous match: {where}\n  {self.name} around line {line + 1}:\n"
            + self._excerpt(line, previous)
        )

    def _excerpt(self, line: int, previous: _Match | None) -> str:
        if not self.lines:
            return "    (the text is empty)"
        line = min(line, len(self.lines) - 1)
        lo = max(0, min(line, previous.line if previous else line) - CONTEXT_LINES)
        lo = max(lo, line - 2 * CONTEXT_LINES)
        hi = min(len(self.lines), line + CONTEXT_LINES + 1)
        width = len(str(hi))
        out = []
        for k in range(lo, hi):
            mark = ">" if k == line else ("*" if previous is not None and k == previous.line else " ")
            out.append(f"  {mark} {k + 1:>{width}} | {self.lines[k]}")
        return "\n".join(out)


def _described(match: _Match | None, otherwise: str) -> str:
    if match is None:
        return otherwise
    return f"the match of {match.directive.kind}: {match.directive.pattern} (line {match.line + 1})"
