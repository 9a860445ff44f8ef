#!/usr/bin/env python3
"""Checks the internal links of README.md and the book (docs/src/**/*.md):
every relative link names a file that exists, and every #anchor one of
that page's headings (its id as mdBook makes it). External links
(http:, https:, mailto:) are not followed. Links inside code (fenced
blocks, inline code) are not links. Exits 1 naming each broken link as
file:line. Standard library only."""

import re
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_REF = re.compile(r"""<(?:img|a)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']+)["']""")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def mdbook_id(text):
    """A heading's id as mdBook 0.5 makes it from the heading's text."""
    out = []
    for ch in text.strip().lower():
        if ch.isalnum() or ch in "_-":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def heading_text(raw):
    """The text a heading renders: code spans and emphasis marks dropped,
    a link reduced to its text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|\*)", "", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text


def lines_outside_code(path):
    """(line number, line) of each line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r"(```+|~~~+)", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
                continue
            if stripped.startswith(fence) and stripped.strip() == stripped.strip()[0] * len(stripped.strip()):
                fence = None
                continue
        if fence is None:
            yield number, line


_anchors = {}


def anchors(path):
    """Every id the page's headings get (duplicates numbered as mdBook does)."""
    if path not in _anchors:
        used = set()
        for _, line in lines_outside_code(path):
            m = HEADING.match(line)
            if not m:
                continue
            base = mdbook_id(heading_text(m.group(2)))
            candidate, n = base, 0
            while candidate in used:
                n += 1
                candidate = f"{base}-{n}"
            used.add(candidate)
        # Explicit anchors: <a id="…"> or <a name="…">.
        for _, line in lines_outside_code(path):
            for m in re.finditer(r"""<a\s+(?:id|name)\s*=\s*["']([^"']+)["']""", line):
                used.add(m.group(1))
        _anchors[path] = used
    return _anchors[path]


def check(path):
    problems = []
    for number, line in lines_outside_code(path):
        text = INLINE_CODE.sub("", line)
        targets = [m.group(1) for m in LINK.finditer(text)]
        targets += [m.group(1) for m in HTML_REF.finditer(text)]
        for target in targets:
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # http:, https:, mailto:: not followed
            where = f"{path.relative_to(ROOT)}:{number}"
            file_part, _, anchor = target.partition("#")
            file_part = unquote(file_part)
            dest = path if not file_part else (path.parent / file_part).resolve()
            if file_part and not dest.exists():
                problems.append(f"{where}: {target}: no file {file_part}")
                continue
            if anchor:
                if dest.suffix != ".md" or not dest.is_file():
                    problems.append(f"{where}: {target}: an anchor in a file that is not Markdown")
                elif unquote(anchor) not in anchors(dest):
                    problems.append(f"{where}: {target}: {dest.relative_to(ROOT)} has no heading #{anchor}")
    return problems


def main():
    files = [ROOT / "README.md"] + sorted((ROOT / "docs" / "src").rglob("*.md"))
    problems = [p for f in files for p in check(f)]
    for p in problems:
        print(p, file=sys.stderr)
    print(f"links: {len(files)} files checked, {len(problems)} broken", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
