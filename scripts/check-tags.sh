#!/usr/bin/env bash
# Fail unless every invariant tag is defined once and cited in code
# (docs/architecture.md, "Where invariants live"). A tag is `doc.RULE`: a
# lowercase name, a dot, capitals and a number (swap.P1, evac.P3). It is
# defined where a bold span in docs/*.md starts with it (**swap.P1 ...**)
# and cited wherever a source file outside docs/ names it. Fails, naming
# file and line, when a tag is defined twice, when code cites a tag no doc
# defines, or when a defined tag is cited nowhere and is not listed, with
# its reason, in scripts/tags-exempt.txt. Reads sources only.
#
# usage: scripts/check-tags.sh [ROOT]   (default: this script's checkout)
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
exec python3 - "$root" <<'PY'
import os, re, sys

root = sys.argv[1]
TAG = r"[a-z]+\.[A-Z]+[0-9]+"
define_re = re.compile(r"(?<!`)\*\*(" + TAG + r")\b")  # not an example in `code`
cite_re = re.compile(r"(?<![A-Za-z0-9_./-])(" + TAG + r")(?![A-Za-z0-9_])")
SOURCES = (".c", ".h", ".sh", ".py", ".txt", "meson.build")
SKIP = {".git", "docs", "build", "subprojects"}
errors = []

defined = {}  # tag -> "file:line" of its definition
docs = os.path.join(root, "docs")
for name in sorted(os.listdir(docs)):
    if not name.endswith(".md"):
        continue
    with open(os.path.join(docs, name)) as f:
        for n, line in enumerate(f, 1):
            for tag in define_re.findall(line):
                where = f"docs/{name}:{n}"
                if tag in defined:
                    errors.append(f"{where}: {tag} defined again (first at {defined[tag]})")
                else:
                    defined[tag] = where

exempt = {}
with open(os.path.join(root, "scripts", "tags-exempt.txt")) as f:
    for n, line in enumerate(f, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        tag, _, why = line.partition(" ")
        if not why.strip():
            errors.append(f"scripts/tags-exempt.txt:{n}: {tag} needs a reason")
        exempt[tag] = n

cited = set()
for top, dirs, files in os.walk(root):
    rel_top = os.path.relpath(top, root)
    dirs[:] = [d for d in dirs if d not in SKIP and not d.startswith("build")
               and not (rel_top == "." and d.startswith("."))]
    for name in files:
        # The checker, its self-test and its exemptions name tags as data.
        if not name.endswith(SOURCES) or name == "tags-exempt.txt" or name.startswith("check-tags"):
            continue
        path = os.path.join(top, name)
        rel = os.path.relpath(path, root)
        with open(path, errors="replace") as f:
            for n, line in enumerate(f, 1):
                for tag in cite_re.findall(line):
                    cited.add(tag)
                    if tag not in defined:
                        errors.append(f"{rel}:{n}: cites {tag}, which no doc defines")

for tag, where in sorted(defined.items()):
    if tag not in cited and tag not in exempt:
        errors.append(f"{where}: {tag} is cited by no code (cite it where it is kept, "
                      "or list it in scripts/tags-exempt.txt with the reason)")
for tag, n in sorted(exempt.items()):
    if tag not in defined:
        errors.append(f"scripts/tags-exempt.txt:{n}: {tag} is defined by no doc")
    elif tag in cited:
        errors.append(f"scripts/tags-exempt.txt:{n}: {tag} is cited, so not exempt")

for e in errors:
    print(e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"tags: {len(defined)} defined, {len(defined) - len(exempt)} cited, {len(exempt)} exempt")
PY
