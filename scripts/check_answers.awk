# check_answers.awk: what an exercise checker needs besides its expected
# values: reading an answers file of "name = number" lines (# starts a
# comment, a blank value is "not yet") and grading each answer against its
# expected value within a relative tolerance. A wrong answer is told how far
# off it is, an unanswered one that it is not answered: never the value nor
# the formula (the hint of want(), which only the instructor's table shows).
# Used by NN_*/check_exercises.sh through scripts/exercises.sh's check, as
#   awk -f scripts/check_answers.awk -f <(the chapter's BEGIN and END) ANSWERS
# where BEGIN calls want() for every answer and END calls finish(), or
# grade() (one line per answer; returns the number right) and unknown()
# itself when some answers need more than a want(). With -v table=1
# (scripts/answers.sh, for instructors) grade() prints instead one row per
# answer: name, expected value, tolerance, formula.
function want(name, value, tol, hint) { order[++n] = name; expect[name] = value; tolerance[name] = tol; hints[name] = hint }
function num(k) { return (k in given) && given[k] ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
function grade(   i, k, d, right) {
    right = 0
    for (i = 1; i <= n; i++) {
        k = order[i]
        if (table) { printf "| `%s` | %.6g | %g%% | %s |\n", k, expect[k], 100 * tolerance[k], hints[k]; right++; continue }
        if (!(k in given) || given[k] == "") { printf "  --     %-34s not answered\n", k; continue }
        if (!num(k)) { printf "  WRONG  %-34s \"%s\" is not a number\n", k, given[k]; continue }
        d = (given[k] - expect[k]) / expect[k]
        if ((d < 0 ? -d : d) <= tolerance[k] + 1e-12) { printf "  ok     %-34s %s\n", k, given[k]; right++ }
        else printf "  WRONG  %-34s %s is %+.1f%% off\n", k, given[k], 100 * d
    }
    return right
}
# Names in the file that are no exercise's answer (except those matching skip).
function unknown(skip,   k) {
    for (k in seen) if (!(k in expect) && (skip == "" || k !~ skip)) printf "  ?      %-34s not an exercise answer\n", k
}
{   sub(/#.*/, "")
    if (!match($0, /^[[:space:]]*[A-Za-z0-9_]+[[:space:]]*=/)) next
    split($0, kv, "=")
    name = kv[1]; gsub(/[[:space:]]/, "", name)
    value = kv[2]; gsub(/[[:space:]]/, "", value)
    given[name] = value; seen[name] = 1
}
# The END of a checker whose every answer is a want(): one line per answer,
# the names that are no answer, the count, exit status 0 when all are right.
function finish(chapter,   right) {
    right = grade()
    unknown()
    printf "chapter %s: %d of %d answers right\n", chapter, right, n
    exit right == n ? 0 : 1
}
