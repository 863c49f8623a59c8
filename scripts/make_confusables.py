"""Make the confusables table that ``llm_marl_envs.leaderboard.names`` reads (maintainers' script).

Reads Unicode's ``confusables.txt`` (the data of Unicode Technical Standard #39, "Unicode
Security Mechanisms", section 4 Confusable Detection: https://www.unicode.org/reports/tr39/)
and writes ``llm_marl_envs/leaderboard/confusables.txt``: one mapping a line, a source code point
and its prototype (one or more code points) in hex, separated by a tab, sorted by source
(``0430<TAB>0061``: CYRILLIC SMALL LETTER A looks like LATIN SMALL LETTER A).

The header keeps the source's name, date, version, copyright and terms-of-use lines (the data is
Unicode's, redistributed under its terms of use: http://www.unicode.org/terms_of_use.html) and
says how to make the table again. The output depends on the source file alone, so running the
script twice on one file writes the same bytes.

Usage: ``python scripts/make_confusables.py SOURCE [--out PATH]``, SOURCE being e.g.
https://www.unicode.org/Public/security/latest/confusables.txt saved to disk.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "llm_marl_envs/leaderboard/confusables.txt"
TERMS = "http://www.unicode.org/terms_of_use.html"

#: A data line: ``SRC ; TARGET ; TYPE # comment``, TARGET one or more hex code points.
_LINE = re.compile(r"^\s*([0-9A-Fa-f]{4,6})\s*;\s*([0-9A-Fa-f]{4,6}(?:\s+[0-9A-Fa-f]{4,6})*)\s*;")


class SourceError(ValueError):
    """The source file is not a confusables.txt this script understands."""


def parse(text: str) -> tuple[list[str], dict[int, tuple[int, ...]]]:
    """The header comment lines and the mappings (source code point to its prototype).

    The header is every ``#`` line before the first data line, without its ``#``. A line that is
    neither blank, a comment nor a mapping, a code point outside Unicode's range, or a source
    that is mapped twice raises :class:`SourceError` naming the line.
    """
    header: list[str] = []
    mappings: dict[int, tuple[int, ...]] = {}
    for number, raw in enumerate(text.lstrip("\ufeff").splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            if not mappings:
                header.append(line.lstrip("#").strip())
            continue
        if not line:
            continue
        match = _LINE.match(line)
        if match is None:
            raise SourceError(f"line {number} is not 'SRC ; TARGET ; TYPE': {line[:60]!r}")
        source = int(match.group(1), 16)
        target = tuple(int(part, 16) for part in match.group(2).split())
        if max(source, *target) > sys.maxunicode:
            raise SourceError(f"line {number} names a code point beyond U+10FFFF")
        if source in mappings:
            raise SourceError(f"line {number} maps U+{source:04X} a second time")
        mappings[source] = target
    if not mappings:
        raise SourceError("no mappings found; is this Unicode's confusables.txt?")
    return header, mappings


def _header_field(header: list[str], pattern: str) -> str | None:
    """The first header line that matches ``pattern`` (a regular expression), if any."""
    return next((line for line in header if re.match(pattern, line, re.IGNORECASE)), None)


def render(header: list[str], mappings: dict[int, tuple[int, ...]], source_name: str) -> str:
    """The table's text: ``#`` lines naming the source and its terms, then one mapping a line."""
    version_line = _header_field(header, r"version:") or "Version: unknown"
    version = version_line.partition(":")[2].strip()
    kept = [
        _header_field(header, r"confusables\.txt") or source_name,
        _header_field(header, r"date:"),
        version_line,
        _header_field(header, r"(\u00a9|\(c\)|copyright)"),
        _header_field(header, r"for terms of use") or f"For terms of use, see {TERMS}",
    ]
    lines = [f"# {line}" for line in kept if line]
    lines += [
        "#",
        "# Unicode's data of UTS #39 Unicode Security Mechanisms, section 4 Confusable Detection",
        "# (https://www.unicode.org/reports/tr39/), redistributed under Unicode's terms of use.",
        "# Each line: a source code point, a tab, its prototype (code points in hex).",
        f"# Made from https://www.unicode.org/Public/security/{version}/confusables.txt with:",
        f"#   python scripts/make_confusables.py {source_name}",
    ]
    for source in sorted(mappings):
        target = " ".join(f"{cp:04X}" for cp in mappings[source])
        lines.append(f"{source:04X}\t{target}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="Unicode's confusables.txt")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the table to write")
    args = parser.parse_args(argv)
    try:
        header, mappings = parse(args.source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SourceError) as error:
        print(f"error: {args.source}: {error}", file=sys.stderr)
        return 1
    args.out.write_text(render(header, mappings, args.source.name), encoding="utf-8")
    print(f"wrote {len(mappings)} mappings to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
