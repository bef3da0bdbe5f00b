#!/usr/bin/env bash
# Runs every test suite of `make test` and ends with one line "N passed, M failed" summed over all of them.
# Usage: test_all.sh DENO
set -u
DENO=${1:-deno}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
failed_runs=()
run() {
  echo "== $*"
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "== FAILED (exit $rc): $*"; status=1; failed_runs+=("$* (exit $rc)"); }
}
run "$DENO" task test
# Then every task named test:* (crash campaign, bounded fuzzing, real-VM tests...), in name order.
for t in $("$DENO" eval --quiet 'const j = JSON.parse(Deno.readTextFileSync("deno.json")); console.log(Object.keys(j.tasks).filter((k) => k.startsWith("test:")).sort().join(" "))'); do
  run "$DENO" task "$t"
done
# deno test prints "ok | 12 passed (3 steps) | 0 failed | 2 ignored (1s)" or "FAILED | 3 passed | 1 failed (2s)".
# Strip ANSI colours before summing; the ignored (skipped) tests are counted too and printed, never dropped.
read -r passed failed ignored < <(sed -e 's/\x1b\[[0-9;]*m//g' "$log" | awk '
  /^(ok|FAILED) \| [0-9]+ passed/ {
    for (i = 1; i <= NF; i++) {
      if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) g += $i
    }
  }
  END { print p + 0, f + 0, g + 0 }')
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
# A failure scrolls far above the end of a long run, and CI may keep only the end: repeat, just before the summary,
# which runs failed and deno test's own FAILURES list of each (test name => file:line).
if [ "$status" -ne 0 ]; then
  echo "== what failed"
  for r in "${failed_runs[@]}"; do echo "  $r"; done
  sed -e 's/\x1b\[[0-9;]*m//g' "$log" | awk '
    /^ *FAILURES *$/ { on = 1; next }
    /^(ok|FAILED) \| [0-9]+ passed/ { on = 0 }
    on && NF { print "  " $0 }'
fi
echo "$passed passed, $failed failed, $ignored skipped"
exit "$status"
