#!/usr/bin/env python3
"""Check the links of the docs book (docs/src/**/*.md), README.md and CHANGELOG.md.

Fails (exit 1, one line per problem) on: a relative link to a file that does not exist; an
#anchor that is no heading (nor id="...") of the page it points into; a link from a page of the
book to a file outside docs/src/ (the built book would not have it); an {{#include}} of a
missing file. Pages are read with their includes in place, as mdBook renders them; links into
the network are not fetched. Run from anywhere: python3 tests/docs/links.py
"""
import os
import re
import sys
import unicodedata

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BOOK = os.path.join(ROOT, "docs", "src")

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
INCLUDE = re.compile(r"(?<!\\)\{\{#include\s+([^}\s:]+)[^}]*\}\}")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"""\bid\s*=\s*["']([^"']+)["']""")


def expand(path, seen=()):
    """The text of a page with its {{#include}} files in place, and the missing includes."""
    text = open(path, encoding="utf-8").read()
    missing = []

    def sub(m):
        target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
        if not os.path.isfile(target):
            missing.append(m.group(1))
            return ""
        if target in seen:
            return ""
        inner, miss = expand(target, seen + (target,))
        missing.extend(miss)
        return inner

    return INCLUDE.sub(sub, text), missing


def slug(title):
    """A heading's anchor, as mdBook (and GitHub) make it."""
    title = re.sub(r"<[^>]*>", "", title)  # inline HTML
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # links: their text
    out = []
    for ch in title.strip().lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch == " ":
            out.append("-")
        elif unicodedata.category(ch).startswith("M"):
            out.append(ch)
    return "".join(out)


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            mark = m.group(1)
            if fence is None:
                fence = mark[0] * len(mark)
                continue
            if line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
                fence = None
                continue
        if fence is None:
            yield n, line


def anchors(text):
    found, counts = set(), {}
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if m:
            s = slug(m.group(2).replace("`", ""))
            n = counts.get(s, 0)
            counts[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
        found.update(HTML_ID.findall(INLINE_CODE.sub("", line)))
    return found


def links(text):
    """(line number, target) of every inline link and link definition outside code; a link's
    text may span lines."""
    prose = [""] * (text.count("\n") + 1)
    for n, line in prose_lines(text):
        prose[n - 1] = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
    joined = "\n".join(prose)
    for m in LINK.finditer(joined):
        yield joined.count("\n", 0, m.start()) + 1, m.group(1)
    for n, line in enumerate(prose, 1):
        m = REFDEF.match(line)
        if m:
            yield n, m.group(1)


def pages():
    for base, _, files in os.walk(BOOK):
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(base, f)
    for f in ("README.md", "CHANGELOG.md"):
        if os.path.isfile(os.path.join(ROOT, f)):
            yield os.path.join(ROOT, f)


def check():
    problems = []
    cache = {}

    def page_anchors(path):
        if path not in cache:
            cache[path] = anchors(expand(path)[0])
        return cache[path]

    count = 0
    for page in pages():
        rel = os.path.relpath(page, ROOT)
        text, missing = expand(page)
        for inc in missing:
            problems.append(f"{rel}: includes {inc}, which does not exist")
        in_book = os.path.commonpath([page, BOOK]) == BOOK
        for n, target in links(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
                continue
            count += 1
            where = f"{rel}:{n}: {target}"
            path, _, anchor = target.partition("#")
            dest = page if not path else os.path.normpath(os.path.join(os.path.dirname(page), path))
            if path and not os.path.exists(dest):
                problems.append(f"{where}: no such file")
                continue
            if path and in_book and os.path.commonpath([dest, BOOK]) != BOOK:
                problems.append(f"{where}: outside the book (docs/src/); write the path as code")
                continue
            if anchor and dest.endswith(".md") and anchor not in page_anchors(dest):
                problems.append(f"{where}: no heading or id `{anchor}` in {os.path.relpath(dest, ROOT)}")
    return count, problems


def main():
    count, problems = check()
    for p in problems:
        print(p)
    if problems:
        print(f"links: {len(problems)} of {count} links do not resolve")
        return 1
    print(f"links: all {count} relative links and anchors resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
