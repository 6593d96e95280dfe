#!/usr/bin/env bash
# Checks the lock rules written in the code's types: compiles the
# translation units under src/ (tests excluded) with clang's thread-safety
# analysis (-Wthread-safety as errors), syntax only. The project builds
# with GCC, which ignores ABSL_GUARDED_BY and friends; this is where they
# bite.
#
# Reads the GCC build's compile commands (build/compile_commands.json: run
# it after scripts/setup.sh has built), swaps the compiler for clang++-14,
# drops the output, optimisation and warning flags, and runs the units in
# parallel. Only units that can break a lock rule are compiled: those that
# include (by the build's own dependency record, `ninja -t deps`) or are a
# file of the project that uses an annotation (core/mutex.h does); the
# analysis has nothing to check in the others. --all compiles every unit
# under src/. Exits 1 with clang's diagnostics on any error (a lock rule
# broken, or a unit clang cannot parse).
#
# Usage: scripts/check_thread_safety.sh [--all] [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
all=0
if [ "${1:-}" = "--all" ]; then
  all=1
  shift
fi
build=${1:-build}
clang=${CLANG:-clang++-14}

if ! command -v "$clang" >/dev/null; then
  echo "check_thread_safety: $clang not found (scripts/setup.sh installs clang-14)" >&2
  exit 1
fi
if [ ! -f "$build/compile_commands.json" ]; then
  echo "check_thread_safety: no $build/compile_commands.json (build first: scripts/setup.sh)" >&2
  exit 1
fi
deps=""
if [ "$all" -eq 0 ] && [ -f "$build/build.ninja" ] && command -v ninja >/dev/null; then
  deps=$(mktemp)
  ninja -C "$build" -t deps > "$deps"
fi

work=$(mktemp -d)
trap 'rm -rf "$work" ${deps:+"$deps"}' EXIT

# One small script per unit (cd to its directory, run clang on it).
python3 - "$build" "$root" "$clang" "$work" "$deps" <<'EOF'
import json, os, re, shlex, sys

build, root, clang, work, deps_file = sys.argv[1:]
src = os.path.join(root, "src") + os.sep
build_abs = os.path.realpath(build)

# What the analysis reads: the annotations and abseil's annotated mutex.
uses_locks = re.compile(
    rb"\bABSL_[A-Z_]*(GUARDED_BY|LOCKS?_|LOCK_FUNCTION|LOCKABLE|ACQUIRED_|"
    rb"CAPABILITY|THREAD_SAFETY)|\babsl::(\w*Mutex\w*|CondVar)\b")
marked = set()
for dirpath, dirnames, filenames in os.walk(src):
    for name in filenames:
        path = os.path.join(dirpath, name)
        with open(path, "rb") as f:
            if uses_locks.search(f.read()):
                marked.add(os.path.realpath(path))

# The build's record of what each object included (Ninja's deps log).
included = {}
if deps_file:
    obj = None
    for line in open(deps_file):
        if not line.startswith(" "):
            obj = line.split(": #deps")[0] if ": #deps" in line else None
            if obj is not None:
                included[obj] = []
        elif obj is not None and line.strip():
            included[obj].append(line.strip())

def may_break_a_rule(path, out):
    if not deps_file or os.path.realpath(path) in marked:
        return True
    headers = included.get(out)
    if headers is None:  # not built yet: cannot tell, so check it
        return True
    return any(os.path.realpath(os.path.join(build_abs, h)) in marked
               for h in headers)

def keep(arg):
    return not (arg == "-c" or arg.startswith("-O") or arg.startswith("-W")
                or arg.startswith("-fdiagnostics") or arg == "-g")

seen = {}
for entry in json.load(open(os.path.join(build, "compile_commands.json"))):
    path = entry["file"]
    if not path.startswith(src) or path.endswith("_test.cc"):
        continue
    args = entry.get("arguments") or shlex.split(entry["command"])
    # A source compiled by several targets (a test target may build a
    # src/ file with its own defines): prefer the library's command.
    out = args[args.index("-o") + 1] if "-o" in args else ""
    from_test = out.startswith("tests/") or "_test.dir/" in out
    if path in seen and (from_test or not seen[path][0]):
        continue
    seen[path] = (from_test, entry["directory"], args, out)

total = 0
for n, (path, (_, directory, args, out)) in enumerate(sorted(seen.items())):
    if not may_break_a_rule(path, out):
        continue
    total += 1
    flags, skip = [], False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg == "-o":
            skip = True
        elif arg != path and keep(arg):
            flags.append(arg)
    cmd = [clang, "-fsyntax-only", "-Wno-everything", "-Wthread-safety",
           "-Werror=thread-safety", *flags, path]
    with open(os.path.join(work, f"{n:04d}.sh"), "w") as f:
        f.write(f"cd {shlex.quote(directory)} && exec {shlex.join(cmd)}\n")
with open(os.path.join(work, "counts"), "w") as f:
    f.write(f"{total} {len(seen)}\n")
EOF

read -r units in_src < "$work/counts"
if [ "$units" -eq 0 ]; then
  echo "check_thread_safety: no translation unit to check under src/ in $build/compile_commands.json" >&2
  exit 1
fi

start=$(date +%s)
# Each unit's diagnostics go to its own log, printed whole on failure.
find "$work" -name '*.sh' -print0 | sort -z |
  xargs -0 -P "$(nproc)" -I{} sh -c 'bash "$1" > "$1.log" 2>&1 || echo "$1" >> "$2/failed"' _ {} "$work"
elapsed=$(( $(date +%s) - start ))

if [ -s "$work/failed" ]; then
  sort "$work/failed" | while read -r script; do
    cat "$script.log" >&2
  done
  echo "check_thread_safety: FAILED: $(wc -l < "$work/failed") of $units translation unit(s) break a lock rule or do not parse with $clang (diagnostics above)" >&2
  exit 1
fi
echo "check_thread_safety: $units of $in_src translation units under src/ pass $clang -Wthread-safety (${elapsed} s; the others use no lock annotation)"
