#!/usr/bin/env bash
# For instructors: every chapter's numeric exercise answers, as its checker
# computes them (NN_*/check_exercises.sh), one Markdown table per chapter:
# name, value, tolerance, formula. Beside each chapter's answers.md (the
# worked answers); `make assignment` leaves both out of a student copy.
#
#   scripts/answers.sh [NN...]      make answers [CH="04 07"]
set -euo pipefail
cd "$(dirname "$0")/.."
chapters=("$@")
[ ${#chapters[@]} -gt 0 ] || chapters=($(ls -d [0-9][0-9]_*/ | cut -c1-2))
empty=$(mktemp); trap 'rm -f "$empty"' EXIT
for c in "${chapters[@]}"; do
    d=$(ls -d "$c"_*/ 2>/dev/null | head -n 1) || true
    [ -n "$d" ] && [ -f "$d/check_exercises.sh" ] || { echo "error: no chapter $c with a checker" >&2; exit 2; }
    echo "## ${d%/}"; echo
    echo "| answer | value | tolerance | formula |"; echo "|---|---|---|---|"
    ANSWERS_TABLE=1 bash "$d/check_exercises.sh" "$empty" | grep '^| ' || true
    echo
done
