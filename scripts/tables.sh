#!/usr/bin/env bash
# The READMEs' tables of measured numbers, generated from the data committed
# beside the figures, so that a table and its chart always come from one run.
# A generated table sits between two comments in a chapter's README.md (or
# another of its pages, such as 03_ddp/part4_local_sgd.md):
#   <!-- table: NAME -->
#   ...
#   <!-- end table -->
# and is the output of scripts/tables/NAME.awk on the chapter's
# figures/data/CHART.csv, CHART being NAME up to its first '-' (the table
# "tp-links" reads tp.csv).
#   bash scripts/tables.sh           rewrite every generated table (make tables)
#   bash scripts/tables.sh --check   regenerate them and fail, showing the difference,
#                                    where a README differs (the test docs_tables_...)
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && check=1
tmp=$(mktemp -d /tmp/tables.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
status=0 count=0
for readme in [0-9][0-9]_*/*.md; do
    grep -q '^<!-- table: ' "$readme" || continue
    chapter=${readme%/*}
    out=$tmp/$(basename "$chapter")_$(basename "$readme")
    : > "$out"
    inside=
    while IFS= read -r line; do
        if [[ $line =~ ^\<!--\ table:\ ([a-z0-9_-]+)\ --\>$ ]]; then
            name=${BASH_REMATCH[1]}
            csv=$chapter/figures/data/${name%%-*}.csv
            gen=scripts/tables/$name.awk
            [ -e "$gen" ] || { echo "error: $readme: no generator $gen for table $name" >&2; exit 2; }
            [ -s "$csv" ] || { echo "error: $readme: table $name needs $csv" >&2; exit 2; }
            printf '%s\n' "$line" >> "$out"
            awk -F, -f "$gen" "$csv" >> "$out"
            inside=1; count=$((count + 1))
            continue
        fi
        if [ -n "$inside" ]; then
            [ "$line" = '<!-- end table -->' ] || continue
            inside=
        fi
        printf '%s\n' "$line" >> "$out"
    done < "$readme"
    [ -z "$inside" ] || { echo "error: $readme: table $name has no <!-- end table -->" >&2; exit 2; }
    if ! cmp -s "$out" "$readme"; then
        if [ $check = 1 ]; then
            echo "$readme: a generated table differs from its data (bash scripts/tables.sh rewrites it):"
            diff "$readme" "$out" || true
            status=1
        else
            cp "$out" "$readme"
            echo "rewrote the tables of $readme"
        fi
    fi
done
[ $count -gt 0 ] || { echo "error: no generated table (<!-- table: NAME -->) in any chapter README" >&2; exit 2; }
[ $check = 0 ] || [ $status = 1 ] || echo "$count generated tables match their data"
exit $status
