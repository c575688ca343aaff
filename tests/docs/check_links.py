#!/usr/bin/env python3
"""The user docs hold together: every relative link in README.md, CHANGELOG.md and the Markdown
under docs/, bench/ and tests/chaos/ points at a file or folder that exists (and at a heading that
exists, for #anchors), and README.md stays a short page (200 lines at most).

    check_links.py SOURCE_DIR
"""
import os
import re
import sys

src = sys.argv[1]
pages = ["README.md", "CHANGELOG.md", "bench/README.md", "tests/chaos/README.md", "deploy/README.md"]
for root in ["docs"]:
    for dirpath, _, files in os.walk(os.path.join(src, root)):
        pages += [os.path.relpath(os.path.join(dirpath, f), src) for f in files if f.endswith(".md")]

link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
heading = re.compile(r"^#+\s+(.*)$", re.M)


def anchors(path):
    text = open(path, encoding="utf-8").read()
    out = set()
    for h in heading.findall(text):
        slug = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


bad = []
for page in pages:
    path = os.path.join(src, page)
    if not os.path.exists(path):
        continue
    text = open(path, encoding="utf-8").read()
    for target in link.findall(text):
        if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
            continue
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            bad.append(f"{page}: link to {target}: {os.path.relpath(dest, src)} does not exist")
        elif anchor and os.path.isfile(dest) and anchor not in anchors(dest):
            bad.append(f"{page}: link to {target}: no heading #{anchor} in {os.path.relpath(dest, src)}")

readme = open(os.path.join(src, "README.md"), encoding="utf-8").read().count("\n")
if readme > 200:
    bad.append(f"README.md: {readme} lines; keep it a short page (at most 200) and move the rest to docs/")
for b in bad:
    print(b)
print(f"docs: {len(pages)} pages checked, {len(bad)} problems")
sys.exit(1 if bad else 0)
