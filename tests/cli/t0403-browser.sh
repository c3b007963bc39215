#!/bin/bash
# Browser tests of cuco serve and cuco report (tests/browser/): Debian's
# chromium driven by playwright-core.  With CUCO_SKIP_BROWSER=1 the test is
# skipped (say so, never silently).  Prints the browser test's own TAP.
cd "${CUCO_ROOT:-$PWD}" || exit 1
if [ "${CUCO_SKIP_BROWSER:-0}" = 1 ]; then
  echo "ok 1 - # SKIP browser tests (CUCO_SKIP_BROWSER=1)"
  echo "1..1"
  exit 0
fi
DB=${CUCO_BROWSER_DB:-}
exec timeout 300 tests/browser/run.sh $DB
