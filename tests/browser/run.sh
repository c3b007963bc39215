#!/bin/bash
# Browser tests of `cuco serve` and `cuco report` in Debian's chromium,
# driven by playwright-core (tests/browser/package.json, locked).
#   tests/browser/run.sh [RUN.db]
# Without RUN.db a realistic fixture database is generated.  Prints TAP.
# The screenshot of the main view and the report land in
# tests/browser/artifacts/ (ignored by git).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CHROMIUM=${CUCO_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
  echo "not ok 1 - chromium is installed ($CHROMIUM missing: run scripts/install-deps.sh)"
  echo "1..1"
  exit 1
fi
if [ ! -f "$HERE/node_modules/playwright-core/package.json" ]; then
  # npm ci installs exactly the locked version; quietly, into tests/browser.
  if ! (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >&2); then
    echo "not ok 1 - npm ci installed playwright-core"
    echo "1..1"
    exit 1
  fi
fi
export CUCO_BIN=${CUCO_BIN:-$ROOT/build/cuco} CUCO_CHROMIUM=$CHROMIUM
exec node "$HERE/test.mjs" "$@"
