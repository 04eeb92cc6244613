#!/usr/bin/env bash
# Grades one or more assignments (ASSIGNMENTS.md): builds what their tests
# need, runs their test groups (tests/assignments.list) through tests/run.sh
# in one go, and prints per group "k/n tests passed, p of P points" and the
# total. A group's points count only when every one of its tests passes.
# It grades this tree as it is (a student's own check); an instructor grades
# submissions with scripts/regrade.sh, which runs this in a clean copy of
# the suite, held-out groups included.
#
#   scripts/grade.sh NAME...          make grade NAME="01-tiled 02-ring"
#
# Exit status 0 once graded (whatever the score), 2 for an unknown name or a
# group that selects no test, 1 when the build fails.
set -uo pipefail
cd "$(dirname "$0")/.."
REG=tests/assignments.list
err() { echo "error: $*" >&2; exit 2; }
known=$(awk '$1 == "assignment" { printf "%s%s", s, $2; s = " " }' $REG)

case "${1:-}" in
    -h|--help) echo "usage: scripts/grade.sh NAME...   (assignments: $known)"; exit 0 ;;
    "") err "no assignment named (NAME=...; known: $known)" ;;
esac
for n in "$@"; do
    case " $known " in *" $n "*) ;; *) err "unknown assignment '$n' (known: $known)" ;; esac
done
sel=" $* "
targets=$(awk -v sel="$sel" '$1 == "build" && index(sel, " " $2 " ") { $1 = $2 = ""; print }' $REG)
# name<TAB>points<TAB>regex<TAB>description, one line per group
# (a held-out group, in the instructor's suite only, is marked so)
groups=$(awk -v sel="$sel" '($1 == "group" || $1 == "heldout") && index(sel, " " $2 " ") {
    d = $0; sub(/^[a-z]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", d); if ($1 == "heldout") d = "(held out) " d
    printf "%s\t%s\t%s\t%s\n", $2, $3, $4, d }' $REG)
# A file copied in with its old time (cp -p, an archive) looks older than the
# stub's objects, and make would keep them: every file holding a graded region
# whose content is not what the last grade built is touched first.
sums=build/assignment.sums
marked=$(grep -rlF --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' --exclude-dir=build \
         -f <(printf '/* ASSIGNMENT %s:\n' "$@") . | sed 's|^\./||' | sort)
for f in $marked; do
    grep -qxF "$f $(cksum < "$f")" "$sums" 2>/dev/null || touch "$f"
done
# shellcheck disable=SC2086
make -s --no-print-directory -j"$(nproc)" SANITIZE="${SANITIZE:-0}" $targets || { echo "error: the build failed, nothing graded" >&2; exit 1; }
mkdir -p build
{ grep -vF -f <(printf '%s \n' $marked) "$sums" 2>/dev/null
  for f in $marked; do echo "$f $(cksum < "$f")"; done; } > "$sums.new" && mv "$sums.new" "$sums"

regex=$(printf '%s\n' "$groups" | cut -f3 | paste -sd'|')
t0=$(date +%s)
out=$(TESTS="$regex" bash tests/run.sh 2>&1)
# the groups' tests and what a failing one printed, without the runner's other lines
echo "$out" | awk -v re="$regex" '/^(PASS|FAIL) / { show = $2 ~ re } show && /^(PASS|FAIL|     \|)/'
echo
total=0 max=0
while IFS=$'\t' read -r name points re desc; do
    k=0 n=0
    while read -r status test _; do
        [[ "$test" =~ $re ]] || continue
        n=$((n + 1)); [ "$status" = PASS ] && k=$((k + 1))
    done < <(echo "$out" | grep -E '^(PASS|FAIL) ')
    [ $n -gt 0 ] || err "group '$desc' of $name selects no test ($re)"
    p=0; [ $k -eq $n ] && p=$points
    total=$((total + p)); max=$((max + points))
    printf '%s %s: %d/%d tests passed, %d of %d points\n' "$name" "$desc" $k $n $p "$points"
done <<< "$groups"
echo "score: $total / $max  ($*, graded in $(($(date +%s) - t0)) s)"
