#!/usr/bin/env bash
# expect_fail.sh PATTERN CMD...: passes when CMD fails (non-zero exit, no
# time-out) and its output matches the extended regex PATTERN; otherwise
# prints what happened and fails. For the tests proving that the CUDA
# emulator catches a bug.
set -u
pattern=$1; shift
out=$("$@" 2>&1); rc=$?
if [ $rc -eq 0 ]; then
    echo "expected '$*' to fail, but it exited 0:"; echo "$out" | tail -n 20; exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "'$*' failed (exit $rc) but without a message matching /$pattern/:"; echo "$out" | tail -n 20; exit 1
fi
echo "caught (exit $rc): $(grep -Em1 -- "$pattern" <<<"$out")"
