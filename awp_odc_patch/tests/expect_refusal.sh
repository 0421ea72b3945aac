#!/bin/sh
# expect_refusal.sh [--status N] NEEDLE COMMAND...: COMMAND must fail with
# exit status N (default 2: refused before it starts; not a crash, not a
# run) and a message naming NEEDLE.
status=2
if [ "$1" = "--status" ]; then
    status=$2
    shift 2
fi
needle=$1
shift
out=$("$@" 2>&1)
rc=$?
if [ "$rc" -ne "$status" ]; then
    printf 'exit status %d, expected %d; output:\n%s\n' "$rc" "$status" "$out"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -qF -- "$needle"; then
    printf 'the message does not name "%s"; output:\n%s\n' "$needle" "$out"
    exit 1
fi
printf 'exit status %d as expected: %s\n' "$rc" "$(printf '%s\n' "$out" | grep -F -- "$needle" | head -n 1)"
