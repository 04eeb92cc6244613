#!/usr/bin/env bash
# Grades a class's submissions (ASSIGNMENTS.md, "Grading a class"): for each
# folder in SUBMISSIONS (one per student: the copy they were given, or just
# the files they changed, at their paths), a clean copy of this suite with
# only the marked regions of the named assignments taken from the
# submission; everything else (the tests, their parameters,
# tests/assignments.list, the held-out groups, the rest of each marked
# file) is the suite's. Then scripts/grade.sh there, and one table of
# scores: a row per submission, a column per assignment, the total.
#
#   scripts/regrade.sh [--names "NAME..."] [--reports DIR] SUBMISSIONS
#   make regrade SUBMISSIONS=DIR [NAME="07-1f1b ..."]
#
# --names: the assignments graded (default: every registered one). A
# region a submission lacks (a file missing, markers removed or moved) is
# graded as its stub and named on stderr. --reports DIR keeps each
# submission's full grade report as DIR/SUBMISSION.txt. One grading copy
# is made, with the suite's build (the objects and the programs the
# assignments' tests need), and the submissions are graded in it in turn:
# each one's regions replace the last one's, and make recompiles only the
# files that differ. Exit status 0 once every submission is graded, 2 for
# bad arguments.
set -uo pipefail
REG=tests/assignments.list
err() { echo "error: $*" >&2; exit 2; }
names="" reports="" subs=""
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --names) [ $# -ge 2 ] || err "--names needs a list"; names=$2; shift 2 ;;
        --reports) [ $# -ge 2 ] || err "--reports needs a directory"; reports=$2; shift 2 ;;
        -*) err "unknown flag '$1' (see --help)" ;;
        *) [ -z "$subs" ] || err "one folder of submissions, not '$subs' and '$1'"; subs=$1; shift ;;
    esac
done
[ -n "$subs" ] || err "no folder of submissions named (SUBMISSIONS=DIR)"
[ -d "$subs" ] || err "$subs is not a folder"
subs=$(cd "$subs" && pwd)
case $reports in ""|/*) ;; *) reports=$PWD/$reports ;; esac
cd "$(dirname "$0")/.."
known=$(awk '$1 == "assignment" { printf "%s%s", s, $2; s = " " }' $REG)
[ -n "$names" ] || names=$known
for n in $names; do
    case " $known " in *" $n "*) ;; *) err "unknown assignment '$n' (known: $known)" ;; esac
done
students=$(cd "$subs" && find . -mindepth 1 -maxdepth 1 -type d | sed 's|^\./||' | sort)
[ -n "$students" ] || err "$subs holds no submission folder"
[ -z "$reports" ] || mkdir -p "$reports" || err "cannot write $reports"

sel=$(printf '/* ASSIGNMENT %s:\n' $names)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files --cached --others --exclude-standard | sort -u)
else
    files=$(find . -path ./build -prune -o -path ./.git -prune -o -type f -print | sed 's|^\./||' | sort)
fi
marked=$(printf '%s\n' "$files" | grep -E '\.(c|h|cu|cuh)$' | xargs -d '\n' grep -l -F -f <(echo "$sel") -- | sort)

# The grading copy: the suite's files and build (not the emulator's, nor
# the test programs grading does not make), and the checksums grade.sh
# keeps of the marked files as built, so that only a file a submission
# changes is recompiled.
tmp=$(mktemp -d) || err "no scratch folder"
trap 'rm -rf "$tmp"' EXIT
copy=$tmp/copy
mkdir -p "$copy" && printf '%s\n' "$files" | xargs -d '\n' cp -p --parents -t "$copy" -- || err "cannot copy the suite"
if [ -d build ]; then
    mkdir -p "$copy/build"
    for p in build/*; do case $p in build/emu|build/tests) ;; *) cp -a "$p" "$copy/build/" ;; esac; done
    for t in $(awk -v sel=" $names " '$1 == "build" && index(sel, " " $2 " ") { $1 = $2 = ""; print }' $REG); do
        [ -e "$t" ] && cp -p --parents "$t" "$copy"
    done
    for f in $marked; do echo "$f $(cksum < "$f")"; done > "$copy/build/assignment.sums"
fi

# splice SUITE_FILE SUBMISSION_FILE: the suite's file with each selected
# region's body taken from the submission's same region (the k-th selected
# region of the file from the k-th); when the submission's regions do not
# match the suite's one for one, every region of the file is its stub.
splice='
    function begin(line) { return match(line, /\/\* ASSIGNMENT [0-9A-Za-z-]+:/) && index(sel, " " substr(line, RSTART + 14, RLENGTH - 15) " ") }
    FNR == 1 && FILENAME != ARGV[1] { in_r = 0 }
    FILENAME == ARGV[1] && !in_r && begin($0) { in_r = 1; ns++; name[ns] = $0; next }
    FILENAME == ARGV[1] && in_r && /\/\* END ASSIGNMENT / { in_r = 0; next }
    FILENAME == ARGV[1] && in_r { body[ns] = body[ns] $0 "\n"; next }
    FILENAME == ARGV[1] { next }
    !in_r && begin($0) { in_r = 1; nr++; print; stub = ""; kept = nr <= ns && name[nr] == $0; next }
    in_r && /\/\* END ASSIGNMENT / { in_r = 0
        if (kept) printf "%s", body[nr]; else { printf "%s", stub; missing = 1 }
        print; next }
    in_r && /\/\* STUB: / { l = $0; sub(/\/\* STUB: /, "", l); sub(/ *\*\/ *$/, "", l); stub = stub l "\n"; next }
    in_r { next }
    { print }
    END { if (missing || nr != ns) exit 3 }'

printf '%-16s' submission; for n in $names; do printf ' %12s' "$n"; done; printf ' %9s\n' total
for st in $students; do
    for f in $marked; do
        src=$subs/$st/$f; [ -f "$src" ] || src=/dev/null
        awk -v sel=" $names " "$splice" "$src" "$f" > "$tmp/spliced"
        [ $? = 3 ] && echo "$st: $f: the regions of $names do not match the suite's: graded as the stub" >&2
        cmp -s "$tmp/spliced" "$copy/$f" || cp "$tmp/spliced" "$copy/$f"
    done
    out=$(cd "$copy" && bash scripts/grade.sh $names 2>&1)
    [ -z "$reports" ] || echo "$out" > "$reports/$st.txt"
    printf '%-16s' "$st"
    for n in $names; do
        echo "$out" | awk -v n="$n" '$1 == n && match($0, /, [0-9]+ of [0-9]+ points$/) {
            split(substr($0, RSTART + 2), f, " "); p += f[1]; m += f[3] }
            END { printf " %12s", m ? p "/" m : "no grade" }'
    done
    echo "$out" | awk '/^score: / { t = $2 "/" $4 } END { printf " %9s\n", t ? t : "no grade" }'
done
