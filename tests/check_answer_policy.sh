#!/usr/bin/env bash
# The one answer policy (COURSE.md, "Exercises and answers"): answers live in
# each chapter's answers.md and with the instructor, never in a README nor
# in a checker's output.
#   readmes   no tracked Markdown file but an answers.md holds an answer
#             block (<details>)
#   checkers  every chapter's checker, on an empty answers file and on one
#             with every answer wrong, prints no formula of its answers
#             (want()'s hints) and, on the empty file, no expected value
# Each offence is printed; exit status 1 when there is one.
set -uo pipefail
cd "$(dirname "$0")/.."
bad=0
case "${1:-}" in
readmes)
    git ls-files '*.md' | grep -v '/answers\.md$' | xargs grep -n -i -F '<details' && bad=1
    [ $bad = 0 ] && echo "no answer block in $(git ls-files '*.md' | grep -vc '/answers\.md$') Markdown files" ;;
checkers)
    d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
    : > "$d/blank"
    for c in [0-9][0-9]_*/check_exercises.sh; do
        ANSWERS_TABLE=1 bash "$c" "$d/blank" | grep '^| `' > "$d/table"
        [ -s "$d/table" ] || { echo "$c: its table of answers is empty"; bad=1; continue; }
        awk -F' [|] ' '{ n = $1; sub(/^[|] `/, "", n); sub(/`$/, "", n); print n " = 1e-30" }' "$d/table" > "$d/wrong"
        # what the checker prints about each answer, its name taken out
        SCALING_CSV=/nonexistent bash "$c" "$d/blank" 2>&1 | awk '{ $1 = $2 = ""; print }' > "$d/out_blank"
        SCALING_CSV=/nonexistent bash "$c" "$d/wrong" 2>&1 | awk '{ $1 = $2 = ""; print }' > "$d/out_wrong"
        while IFS=$'\t' read -r name value hint; do
            if [ ${#hint} -ge 8 ] && grep -qF -- "$hint" "$d/out_blank" "$d/out_wrong"; then
                echo "$c: prints the formula of $name: $hint"; bad=1; fi
            if [ ${#value} -ge 3 ] && grep -qwF -- "$value" "$d/out_blank"; then
                echo "$c: prints the value of $name, $value, for a blank answer"; bad=1; fi
        done < <(awk -F' [|] ' '{ n = $1; sub(/^[|] `/, "", n); sub(/`$/, "", n); h = $4; sub(/ [|]$/, "", h)
                                  print n "\t" $2 "\t" h }' "$d/table")
    done
    [ $bad = 0 ] && echo "no checker prints a value or a formula" ;;
*) echo "error: usage: bash tests/check_answer_policy.sh readmes|checkers" >&2; exit 2 ;;
esac
exit $bad
