#!/bin/sh
# expect_refusal.sh NEEDLE COMMAND...: COMMAND must be refused before it
# starts: exit status 2 (not a crash, not a run) and a message naming NEEDLE.
needle=$1
shift
out=$("$@" 2>&1)
rc=$?
if [ "$rc" -ne 2 ]; then
    printf 'exit status %d, expected 2; output:\n%s\n' "$rc" "$out"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -qF -- "$needle"; then
    printf 'the message does not name "%s"; output:\n%s\n' "$needle" "$out"
    exit 1
fi
printf 'refused as expected: %s\n' "$(printf '%s\n' "$out" | grep -F -- "$needle" | head -n 1)"
