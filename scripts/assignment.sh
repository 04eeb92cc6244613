#!/usr/bin/env bash
# Writes a student copy of the suite with the code of one or more graded
# assignments left out (ASSIGNMENTS.md): every file of this tree (a git
# checkout's tracked and untracked-but-not-ignored files, otherwise every file
# outside build/) copied with its times kept, and in the marked files each
# region
#     /* ASSIGNMENT NAME: what (where) */
#     /* STUB: code */ ...        the stub, one or more lines
#     ...                         the solution
#     /* END ASSIGNMENT NAME */
# replaced by its markers around the stub code. Then every solution line
# (trimmed, 12 characters or more, and found in no C/CUDA source outside the
# marked regions) is searched for in the copy: one found there is refused.
#
#   scripts/assignment.sh [--dir DIR] [--with-build] NAME...
#   make assignment NAME="01-tiled 02-ring" [DIR=...]
#
# The copy leaves out what stays with the instructor: tests/heldout.tests,
# the heldout lines of tests/assignments.list, every chapter's answers.md,
# tests/answers.tests and scripts/answers.sh.
#
# --with-build (make assignment WITH_BUILD=1) also copies build/ (without
# the CUDA emulator's objects) and the programs the assignments' graders
# need, with their times, so the copy recompiles only the stripped files.
set -euo pipefail
REG=tests/assignments.list

usage() {
    cat <<'USAGE'
usage: scripts/assignment.sh [--dir DIR] [--with-build] NAME...
Writes a copy of the suite with each named assignment's code replaced by a
stub (several names: a problem set). DIR defaults to ../suite-NAME+NAME.
Assignments: see tests/assignments.list or ASSIGNMENTS.md.
USAGE
}
err() { echo "error: $*" >&2; exit 2; }

dir="" with_build=0 names=()
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) usage; exit 0 ;;
        --dir) [ $# -ge 2 ] || err "--dir needs a directory"; dir=$2; shift 2 ;;
        --with-build) with_build=1; shift ;;
        -*) err "unknown flag '$1' (see --help)" ;;
        *) names+=("$1"); shift ;;
    esac
done
# DIR is taken from where the command runs; the rest works from the top.
case $dir in ""|/*) ;; *) dir=$PWD/$dir ;; esac
cd "$(dirname "$0")/.."
[ ${#names[@]} -gt 0 ] || err "no assignment named (NAME=...; known: $(awk '$1 == "assignment" { printf "%s%s", s, $2; s = " " }' $REG))"
for n in "${names[@]}"; do
    awk -v n="$n" '$1 == "assignment" && $2 == n { f = 1 } END { exit !f }' $REG ||
        err "unknown assignment '$n' (known: $(awk '$1 == "assignment" { printf "%s%s", s, $2; s = " " }' $REG))"
done
[ -n "$dir" ] || dir=../suite-$(IFS=+; echo "${names[*]}")
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then err "$dir exists and is not empty"; fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files --cached --others --exclude-standard | sort -u)
else
    files=$(find . -path ./build -prune -o -path ./.git -prune -o -type f -print | sed 's|^\./||' | sort)
fi

# Marker syntax, checked in every C/CUDA file that has a marker: each region begins
# and ends with the same registered name, does not nest, and has a stub.
marked=$(printf '%s\n' "$files" | grep -E '\.(c|h|cu|cuh)$' | xargs -d '\n' grep -l -F -e '/* ASSIGNMENT ' -e '/* END ASSIGNMENT ' -- || true)
registered=$(awk '$1 == "assignment" { print $2 }' $REG)
awk -v registered="$registered" '
    BEGIN { split(registered, r, "\n"); for (i in r) known[r[i]] = 1 }
    FNR == 1 && open != "" { printf "%s:%d: ASSIGNMENT %s begins but never ends\n", pf, pl, open; bad = 1; open = "" }
    FNR == 1 { pf = FILENAME }
    match($0, /\/\* ASSIGNMENT [0-9A-Za-z-]+:/) {
        n = substr($0, RSTART + 14, RLENGTH - 15)
        if (open != "") { printf "%s:%d: ASSIGNMENT %s begins inside %s\n", FILENAME, FNR, n, open; bad = 1 }
        if (!(n in known)) { printf "%s:%d: ASSIGNMENT %s is not in tests/assignments.list\n", FILENAME, FNR, n; bad = 1 }
        open = n; pl = FNR; stub = 0; next }
    /\/\* STUB: / && open != "" { stub = 1; next }
    match($0, /\/\* END ASSIGNMENT [0-9A-Za-z-]+ \*\//) {
        n = substr($0, RSTART + 18, RLENGTH - 21)
        if (open != n) { printf "%s:%d: END ASSIGNMENT %s without its beginning\n", FILENAME, FNR, n; bad = 1 }
        else if (!stub) { printf "%s:%d: ASSIGNMENT %s has no /* STUB: ... */ line\n", FILENAME, pl, n; bad = 1 }
        open = "" }
    END { if (open != "") { printf "%s:%d: ASSIGNMENT %s begins but never ends\n", pf, pl, open; bad = 1 }
          exit bad }' $marked >&2 || err "bad assignment markers (above)"
for n in "${names[@]}"; do
    grep -q -F "/* ASSIGNMENT $n:" $marked || err "no marked region for assignment '$n' in the sources"
done

# What stays with the instructor: the held-out tests and their groups, the
# chapters' worked answers (NN_*/answers.md), the tests that hold the right
# answers to the exercises and the script that prints them.
files=$(printf '%s\n' "$files" | grep -v -x -E 'tests/(heldout|answers)\.tests|scripts/answers\.sh|[0-9][0-9]_[a-z_]+/answers\.md')
mkdir -p "$dir" && printf '%s\n' "$files" | xargs -d '\n' cp -p --parents -t "$dir" -- ||
    err "cannot write the copy in $dir"
awk '$1 != "heldout"' $REG > "$dir/$REG" && touch -r $REG "$dir/$REG"
# strip FILE OUT REMOVED: the selected regions of FILE replaced by their stubs
strip='
    BEGIN { split(sel, s, " "); for (i in s) want[s[i]] = 1 }
    match($0, /\/\* ASSIGNMENT [0-9A-Za-z-]+:/) { n = substr($0, RSTART + 14, RLENGTH - 15)
        if (n in want) { in_r = 1; indent = $0; sub(/[^ \t].*/, "", indent); print; next } }
    in_r && /\/\* END ASSIGNMENT / { in_r = 0; print; next }
    in_r && /\/\* STUB: / { line = $0; sub(/.*\/\* STUB: /, "", line); sub(/ *\*\/ *$/, "", line)
        print indent line; next }
    in_r { print >> removed; next }
    { print }'
removed=$(mktemp); allowed=$(mktemp); trap 'rm -f "$removed" "$allowed" "$removed.k"' EXIT
for f in $marked; do
    if grep -q -F -f <(printf '/* ASSIGNMENT %s:\n' "${names[@]}") "$f"; then
        awk -v sel="${names[*]}" -v removed="$removed" "$strip" "$f" > "$dir/$f" || err "cannot write $dir/$f"
    fi
done
# Lines outside every selected region of the C/CUDA sources: the student has
# them anyway, so they give nothing away.
printf '%s\n' "$files" | grep -E '\.(c|h|cu|cuh)$' | xargs -d '\n' awk -v sel="${names[*]}" -v removed=/dev/null "$strip" |
    sed 's/^[ \t]*//; s/[ \t]*$//' | sort -u > "$allowed"
sed 's/^[ \t]*//; s/[ \t]*$//' "$removed" | awk 'length($0) >= 12' | sort -u | comm -23 - "$allowed" > "$removed.k"
if [ -s "$removed.k" ]; then
    leaks=$(cd "$dir" && printf '%s\n' "$files" | xargs -d '\n' grep -I -n -F -f "$removed.k" -- 2>/dev/null | cut -d: -f1,2 || true)
    if [ -n "$leaks" ]; then
        rm -rf "$dir"
        err "solution text left in the copy: $(echo "$leaks" | head -n 5 | tr '\n' ' ')"
    fi
fi

if [ $with_build = 1 ] && [ -d build ]; then
    mkdir -p "$dir/build"
    # the objects and the assignment's own targets; not the emulator's
    # build nor every test binary (build/tests), which grading never makes
    for p in build/*; do
        case $p in build/emu|build/tests) ;; *) cp -a "$p" "$dir/build/" || err "cannot copy $p to $dir" ;; esac
    done
    for t in $(awk -v sel=" ${names[*]} " '$1 == "build" && index(sel, " " $2 " ") { $1 = $2 = ""; print }' $REG); do
        [ -e "$t" ] && cp -p --parents "$t" "$dir"
    done
fi
echo "wrote $dir: ${names[*]} stripped ($(echo $marked | wc -w) marked files checked, no solution text left)"
