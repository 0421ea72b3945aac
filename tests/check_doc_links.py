#!/usr/bin/env python3
"""Checks the relative links of the repository's Markdown files: each target
file or folder exists, and each #anchor names a heading of its file as
GitHub spells it. Links to the web and to ../shared (outside the repository)
are not checked. Prints every broken link and exits 1 if there is one.

Usage: check_doc_links.py REPO_ROOT"""
import functools
import os
import re
import sys

# [text](target) or [text](target "title"); the text may hold one level of
# brackets and span lines.
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def outside_fences(path):
    """The file's lines, those inside fenced code blocks (and the fences)
    blanked to a newline, so that line numbers hold."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
                yield "\n"
            else:
                yield "\n" if fenced else line


def prose(path):
    """The file's text outside code blocks, code spans blanked out too."""
    return re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), "".join(outside_fences(path)))


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation
    dropped (letters, digits, '-' and '_' stay), spaces made '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # link -> its text
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors(path):
    """The anchors of a file's headings; a repeated heading gets -1, -2..."""
    names = set()
    for line in outside_fences(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = name = slug(m.group(1))
            count = 0
            while name in names:
                count += 1
                name = f"{base}-{count}"
            names.add(name)
    return names


def check(root, rel):
    """Prints this file's broken links; returns (links checked, broken)."""
    path = os.path.join(root, rel)
    shared = os.path.join(os.path.dirname(os.path.abspath(root)), "shared")
    text = prose(path)
    checked = broken = 0
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue  # http:, https:, mailto:
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
            if file_part else path
        inside = os.path.abspath(dest).startswith(os.path.abspath(root) + os.sep)
        if not inside and os.path.abspath(dest).startswith(shared + os.sep):
            continue  # the workplace's ../shared: not this repository's
        checked += 1
        why = None
        if not inside:
            why = "outside the repository"
        elif not os.path.exists(dest):
            why = "no such file"
        elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
            why = f"no heading #{anchor} in {os.path.relpath(dest, root)}"
        if why:
            broken += 1
            line = text.count("\n", 0, m.start(1)) + 1
            print(f"{rel}:{line}: ({target}): {why}")
    return checked, broken


def markdown_files(root):
    """The repository's Markdown files, found by walking the tree rather than
    asking git, which a fresh machine or an unpacked tarball may not have:
    hidden folders, meson build folders (whatever their name) and results/
    (benchmark output) are left out."""
    files = []
    for top, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and
                         not os.path.exists(os.path.join(top, d, "meson-private")) and
                         not (top == root and d == "results"))
        files += [os.path.relpath(os.path.join(top, n), root) for n in sorted(names)
                  if n.endswith(".md")]
    return files


def main(root):
    files = markdown_files(root)
    if not files:
        print(f"check_doc_links: no Markdown files under {root}")
        return 1
    checked = broken = 0
    for rel in files:
        c, b = check(root, rel)
        checked += c
        broken += b
    print(f"check_doc_links: {checked} links in {len(files)} files, {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
