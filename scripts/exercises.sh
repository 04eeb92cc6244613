# exercises.sh: what every chapter's check_exercises.sh [ANSWERS] starts
# with, sourced: here (the chapter's folder), root (the suite's), answers
# (ANSWERS, or the chapter's answers.txt), refused when missing; and
#   check PROGRAM [AWK OPTIONS...]
# which grades the answers file with scripts/check_answers.awk and the
# chapter's PROGRAM (a BEGIN that calls want() for every answer, an END).
# ANSWERS_TABLE=1 (scripts/answers.sh) prints the expected values instead.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
answers=${1:-$here/answers.txt}
if [ ! -f "$answers" ]; then
    echo "error: no answers file $answers: copy ${here#"$root"/}/answers.sample to it and fill it in" >&2
    exit 2
fi
check() {
    local program=$1
    shift
    awk -v table="${ANSWERS_TABLE:-0}" "$@" -f "$root/scripts/check_answers.awk" -f <(printf '%s\n' "$program") "$answers"
}
