#!/usr/bin/env bash
# check_docs.sh tokens|links: the repository's Markdown files as a reader
# sees them on the repository page.
#   tokens  no file holds an unfilled template token, @@ then a NAME of
#           capitals, digits and underscores, then @@
#   links   every image and relative link (inline [text](target), image
#           ![alt](target), reference [name]: target) outside code names a
#           file or a folder that git tracks: a file that is only present
#           here (a chart in the ignored plots/, a build output) is a dead
#           link on the repository page
# The files checked are the Markdown files git tracks (outside a git
# checkout, those present). Each offence is printed as FILE:LINE: what is
# wrong; the exit status is 1 when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: bash scripts/check_docs.sh tokens|links"
case "${1:-}" in
    -h|--help) echo "$usage"; exit 0 ;;
    tokens|links) ;;
    *) echo "error: $usage" >&2; exit 2 ;;
esac
tracked=$(mktemp); trap 'rm -f "$tracked"' EXIT
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files > "$tracked"
else
    # A copy without git (an unpacked archive): the files present stand in
    # for the tracked ones, less the build's outputs and the user's charts.
    echo "note: not a git checkout: checking against the files present" >&2
    find . -type f ! -path './build/*' ! -path './plots/data/*' ! -path './plots/*.png' |
        sed 's|^\./||' | sort > "$tracked"
fi
mapfile -t docs < <(grep -E '\.md$' "$tracked")
[ ${#docs[@]} -gt 0 ] || { echo "error: no Markdown file here" >&2; exit 2; }

if [ "$1" = tokens ]; then
    if grep -nHE '@@[A-Z0-9_]+@@' "${docs[@]}" | sed -E 's/^([^:]*:[0-9]+):.*(@@[A-Z0-9_]+@@).*/\1: unfilled \2/' | grep .; then
        exit 1
    fi
    echo "no unfilled token in ${#docs[@]} Markdown files"
    exit 0
fi

# links: the tracked files first (with every folder above them), then the
# Markdown files, line by line.
awk '
function report(target, why) { printf "%s:%d: %s %s\n", FILENAME, FNR, target, why; bad++ }
function resolve(target,    base, n, parts, i, out, k) {
    # The path from the repository root, or "" when it climbs out of it.
    if (target ~ /^\//) base = substr(target, 2)
    else { base = FILENAME; sub(/[^\/]*$/, "", base); base = base target }
    n = split(base, parts, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "" || parts[i] == ".") continue
        if (parts[i] == "..") { if (k == 0) return ""; k--; continue }
        out[++k] = parts[i]
    }
    base = ""
    for (i = 1; i <= k; i++) base = base (i > 1 ? "/" : "") out[i]
    return base
}
function check(target,    path) {
    sub(/^</, "", target); sub(/>$/, "", target)
    if (target == "" || target ~ /^#/ || target ~ /^[A-Za-z][A-Za-z0-9+.-]*:/) return   # anchor, URL
    sub(/[#?].*$/, "", target)
    path = resolve(target)
    if (path == "") { report(target, "climbs out of the repository"); return }
    if (path in file || path in folder) return
    if ((getline junk < path) >= 0) { close(path); report(target, "is here but not tracked by git (ignored or never added): a dead link on the repository page") }
    else report(target, "does not exist")
}
FNR == NR { n = split($0, p, "/"); file[$0] = 1; d = ""
            for (i = 1; i < n; i++) { d = d (i > 1 ? "/" : "") p[i]; folder[d] = 1 }
            next }
FNR == 1 { fence = "" }
/^ ? ? ?(```|~~~)/ { f = substr($0, match($0, /[`~]/), 3)             # a code fence opens or closes
                     if (fence == "") fence = f; else if (f == fence) fence = ""
                     next }
fence != "" { next }
{
    line = $0
    gsub(/``[^`]*``|`[^`]*`/, "", line)          # code spans are not links
    if (match(line, /^ ? ? ?\[[^]]+\]:[ \t]*[^ \t]+/)) {
        t = substr(line, RSTART, RLENGTH); sub(/^[^]]*\]:[ \t]*/, "", t); check(t); links++
    }
    while (match(line, /\]\([^)]*\)/)) {
        t = substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
        sub(/^[ \t]+/, "", t); sub(/[ \t].*$/, "", t)  # a title after the target
        check(t); links++
    }
}
END { if (bad) exit 1; printf "%d links and images in %d Markdown files, each naming a tracked file or folder\n", links, ARGC - 2 }
' "$tracked" "${docs[@]}"
