#!/usr/bin/env bash
# Fail on any use across directories that scripts/layers.txt does not
# declare: an #include of another unit's file, a meson.build reference to a
# library or dependency another unit's meson.build defines, or a meson path
# ('../../x/y.c') into another unit. Every failure names the file, the line
# and the arrow. Reads sources only, so CI runs it before any build.
#
# usage: scripts/check-layers.sh [--unused] [--build BUILD] [ROOT]
#   ROOT      the source tree (default: this script's checkout)
#   --unused  also list declared arrows that nothing uses (no failure)
#   --build   also check calls: every object file of the build directory
#             BUILD may refer only to symbols its unit may use (the
#             functions librheap.so exports count as include/'s, the
#             public API). Objects compiled from another unit's sources
#             (tests/fuzz) are left to the meson path check.
set -euo pipefail
unused=0 build=
while [ $# -gt 0 ]; do
	case $1 in
	--unused) unused=1 ;;
	--build) build=$2; shift ;;
	*) break ;;
	esac
	shift
done
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
exec python3 - "$root" "$unused" "$build" <<'PY'
import os, re, subprocess, sys

root, want_unused, build = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
layers_path = os.path.join(root, "scripts", "layers.txt")
errors = []

def fail(where, msg):
    errors.append(f"{where}: {msg}")

# --- the declared arrows ---------------------------------------------------
allowed = {}   # unit -> set of units
var_unit = {}  # meson variable -> unit it counts as
with open(layers_path) as f:
    for n, line in enumerate(f, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"scripts/layers.txt:{n}"
        m = re.fullmatch(r"var\s+([\w\s]+?)\s*:\s*(\S+)", line)
        if m:
            for v in m.group(1).split():
                var_unit[v] = m.group(2)
            continue
        m = re.fullmatch(r"([\w/]+)\s*:\s*(.*)", line)
        if not m or m.group(1) in allowed:
            fail(where, f"not 'UNIT: UNITS...' or a unit declared twice: {line}")
            continue
        allowed[m.group(1)] = set(m.group(2).split())
for u, tos in allowed.items():
    for t in sorted(tos - set(allowed)):
        fail("scripts/layers.txt", f"{u} may use {t}, which is not a declared unit")
for v, u in var_unit.items():
    if u not in allowed:
        fail("scripts/layers.txt", f"var {v} counts as {u}, which is not a declared unit")

def unit_of(rel):
    """The longest declared unit holding rel (a path from root), or None."""
    best = None
    for u in allowed:
        if rel == u or rel.startswith(u + "/"):
            if best is None or len(u) > len(best):
                best = u
    return best

used = set()

def arrow(where, src, dst, what):
    if dst is None or dst == src:
        return
    used.add((src, dst))
    if dst not in allowed.get(src, ()):
        fail(where, f"{src} -> {dst} is not declared in scripts/layers.txt ({what})")

# --- the files ---------------------------------------------------------------
def walk():
    for d, dirs, files in os.walk(root):
        # Hidden directories and build directories are not sources.
        dirs[:] = sorted(x for x in dirs if not x.startswith(".")
                         and not os.path.exists(os.path.join(d, x, "build.ninja")))
        for name in sorted(files):
            yield os.path.relpath(os.path.join(d, name), root)

sources, mesons = [], []
for rel in walk():
    if rel.endswith((".c", ".h")):
        sources.append(rel)
    elif os.path.basename(rel) == "meson.build" and os.path.dirname(rel):
        mesons.append(rel)  # the top-level one composes them all
for rel in sources + mesons:
    if unit_of(rel) is None:
        fail(rel, "belongs to no unit declared in scripts/layers.txt")

# --- includes ----------------------------------------------------------------
inc_re = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')

def resolve(rel, quote, name):
    """The file an include names, as a path from root, or None (system)."""
    here = os.path.dirname(rel)
    cands = [os.path.join(here, name)] if quote == '"' else []
    # The include path every target has: include/ and the root.
    cands += [os.path.join("include", name), name]
    for c in cands:
        c = os.path.normpath(c)
        if not c.startswith("..") and os.path.isfile(os.path.join(root, c)):
            return c
    return None

for rel in sources:
    src = unit_of(rel)
    with open(os.path.join(root, rel), errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = inc_re.match(line)
            if not m:
                continue
            target = resolve(rel, m.group(1), m.group(2))
            if target is None and m.group(1) == '"':
                # Quoted includes found through a target's own
                # include_directories (benchmarks/suite -> ../gc): any file
                # of that name under the including unit.
                target = next((s for s in sources if unit_of(s) == src
                               and s.endswith("/" + m.group(2))), None)
                if target is None:
                    fail(f"{rel}:{n}", f'cannot find "{m.group(2)}" in the tree')
                    continue
            if target is not None:
                arrow(f"{rel}:{n}", src, unit_of(target), f"#include {m.group(2)}")

# --- meson.build -------------------------------------------------------------
tok_re = re.compile(r"'''.*?'''|'(?:\\.|[^'\\\n])*'|#[^\n]*|[A-Za-z_]\w*|\n|\S", re.S)
lib_calls = {"static_library", "shared_library", "library", "both_libraries",
             "declare_dependency"}

def tokens(rel):
    with open(os.path.join(root, rel)) as f:
        text = f.read()
    n, out = 1, []
    for t in tok_re.findall(text):
        if not t.startswith("#") and t != "\n":
            out.append((t, n))
        n += t.count("\n")
    return out

toks = {rel: tokens(rel) for rel in mesons}
defined = {}  # library variable -> (unit, where)
for rel, ts in toks.items():
    for i, (t, n) in enumerate(ts[:-2]):
        if not re.fullmatch(r"[A-Za-z_]\w*", t) or ts[i + 1][0] != "=":
            continue
        if (ts[i + 2][0] in lib_calls or re.search(r"_(lib|dep|deps)$", t)) \
                and t not in defined:
            defined[t] = (var_unit.get(t, unit_of(rel)), f"{rel}:{n}")

for rel, ts in toks.items():
    src = unit_of(rel)
    here = os.path.dirname(rel)
    for i, (t, n) in enumerate(ts):
        where = f"{rel}:{n}"
        nxt = ts[i + 1][0] if i + 1 < len(ts) else ""
        prev = ts[i - 1][0] if i else ""
        if t in defined and nxt not in ("=", ":") and prev != ".":
            arrow(where, src, defined[t][0], f"{t}, defined at {defined[t][1]}")
        elif t.startswith("'../"):
            path = os.path.normpath(os.path.join(here, t.strip("'")))
            if not path.startswith(".."):
                arrow(where, src, unit_of(path), f"path {t}")

# --- calls, from the objects of a build ----------------------------------------
def nm(args, files):
    """(file, symbol) pairs from nm -A over files, in batches."""
    out = []
    for i in range(0, len(files), 200):
        r = subprocess.run(["nm", "-A"] + args + files[i:i + 200], capture_output=True,
                           text=True, check=True)
        for line in r.stdout.splitlines():
            f, _, rest = line.partition(":")
            if rest.split():
                out.append((f, rest.split()[-1]))
    return out

n_objects = 0
if build:
    objects = {}  # object file -> unit
    for d, dirs, files in os.walk(build):
        dirs[:] = [x for x in dirs if x != "meson-private"]
        if not d.endswith(".p"):
            continue
        unit = unit_of(os.path.relpath(os.path.dirname(d), build))
        for name in files:
            # ".._.._x_y.c.o" is a source of another directory, compiled here.
            if name.endswith(".o") and not name.startswith(".._") and unit:
                objects[os.path.join(d, name)] = unit
    n_objects = len(objects)
    owners = {}
    for f, sym in nm(["-g", "--defined-only"], sorted(objects)):
        owners.setdefault(sym, set()).add(objects[f])
    api = os.path.join(build, "runtime", "librheap.so")
    if os.path.exists(api):
        for _, sym in nm(["-D", "--defined-only"], [api]):
            owners[sym] = {"include"}
    for f, sym in nm(["-u"], sorted(objects)):
        dst = owners.get(sym, set())
        if len(dst) == 1:  # defined once (main and the like are not calls)
            arrow(os.path.relpath(f, build), objects[f], next(iter(dst)), f"calls {sym}")

if want_unused:
    for u in sorted(allowed):
        for t in sorted(allowed[u]):
            if (u, t) not in used:
                print(f"layers: {u} -> {t} is declared but unused")
for e in errors:
    print(f"layers: {e}")
if errors:
    sys.exit(1)
print(f"layers: {len(sources)} sources, {len(mesons)} meson.build files"
      + (f", {n_objects} objects" if build else "")
      + f", {len(used)} arrows used, all declared")
PY
