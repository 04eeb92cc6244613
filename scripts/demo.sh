#!/usr/bin/env bash
# make demo: every chapter that exists, on this machine, with the built-in
# data, then the charts. Each step prints its command, so a student can run
# it again by hand with other flags.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mkdir -p plots/data
rm -f plots/data/*.csv

step() { echo; echo "\$ $*"; "$@"; }

# Each chapter's demo.sh, in chapter order, with step() and the environment above.
for d in [0-9][0-9]_*/demo.sh; do
    [ -e "$d" ] || continue
    # shellcheck source=/dev/null
    source "$d"
done
echo
bash scripts/plots.sh
