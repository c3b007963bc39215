#!/bin/bash
# cuco cc: the object cache around one compiler command (gcc here; the
# suite runs nvcc through it).  A second identical compile is a hit (same
# object, the compiler's warnings replayed), a changed header or flag is a
# miss, a corrupted or truncated entry is rebuilt, a failed compile passes
# its exit status through and is never stored.
. "$(dirname "$0")/lib.sh"
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || { ok "# SKIP no C compiler"; done_testing; exit 0; }
D=$TMP/src C=$TMP/cache
export CUCO_CC_LOG=$TMP/cc.log
mkdir -p "$D"
printf '#define A 1\n' >"$D/a.h"
printf '#include "a.h"\n#warning "a replayed warning"\nint x = A;\n' >"$D/s.c"
cd "$D" || exit 1
last() { tail -1 "$CUCO_CC_LOG" | cut -d' ' -f1; }
ccc() { "$CUCO" cc --cache-dir "$C" -- "$CC" "$@"; }

expect_rc "first compile" 0 ccc -c s.c -o "$TMP/1.o"
[ "$(last)" = miss ] && ok "first compile is a miss" || not_ok "first compile is a miss" "$(cat "$CUCO_CC_LOG")"
expect_grep "the compiler's warning is shown" "$TMP/err" "a replayed warning"
perm=$(stat -c %a "$C")
[ "$perm" = 700 ] && ok "cache folder mode 0700" || not_ok "cache folder mode 0700" "$perm"
expect_rc "second identical compile" 0 ccc -c s.c -o "$TMP/2.o"
[ "$(last)" = hit ] && ok "second identical compile is a hit" || not_ok "second identical compile is a hit" "$(cat "$CUCO_CC_LOG")"
cmp -s "$TMP/1.o" "$TMP/2.o" && ok "the hit writes the same object" || not_ok "the hit writes the same object" "differs"
expect_grep "the hit replays the warning" "$TMP/err" "a replayed warning"
expect_rc "other flags" 0 ccc -O1 -c s.c -o "$TMP/3.o"
[ "$(last)" = miss ] && ok "other flags are a miss" || not_ok "other flags are a miss" "$(last)"
printf '#define A 2\n' >"$D/a.h"
expect_rc "changed header" 0 ccc -c s.c -o "$TMP/4.o"
[ "$(last)" = miss ] && ok "a changed header is a miss" || not_ok "a changed header is a miss" "$(last)"
cmp -s "$TMP/1.o" "$TMP/4.o" && not_ok "the new object is the new header's" "same as before" || ok "the new object is the new header's"

# corrupt every entry: each is rebuilt, not trusted
for f in "$C"/o/*; do printf 'X' | dd of="$f" bs=1 seek=$(( $(stat -c %s "$f") - 2 )) conv=notrunc status=none; done
expect_rc "compile over a corrupted entry" 0 ccc -c s.c -o "$TMP/5.o"
[ "$(last)" = miss ] && ok "a corrupted entry is rebuilt" || not_ok "a corrupted entry is rebuilt" "$(last)"
cmp -s "$TMP/4.o" "$TMP/5.o" && ok "the rebuilt object is right" || not_ok "the rebuilt object is right" "differs"
for f in "$C"/o/*; do truncate -s 10 "$f"; done
expect_rc "compile over a truncated entry" 0 ccc -c s.c -o "$TMP/6.o"
[ "$(last)" = miss ] && ok "a truncated entry is rebuilt" || not_ok "a truncated entry is rebuilt" "$(last)"
expect_rc "and then found" 0 ccc -c s.c -o "$TMP/7.o"
[ "$(last)" = hit ] && ok "the rebuilt entry is a hit" || not_ok "the rebuilt entry is a hit" "$(last)"

printf 'int y = ;\n' >"$D/bad.c"
expect_rc "a failing compile exits as the compiler did" 1 ccc -c bad.c -o "$TMP/b.o"
expect_grep "with its error" "$TMP/err" "error"
expect_rc "again" 1 ccc -c bad.c -o "$TMP/b.o"
[ "$(last)" = fail ] && ok "a failed compile is never stored" || not_ok "a failed compile is never stored" "$(last)"
expect_rc "preprocess only runs uncached" 0 ccc -E s.c
[ "$(last)" = uncached ] && ok "-E is not cached" || not_ok "-E is not cached" "$(last)"
expect_grep "its output passes through" "$TMP/out" "int x = 2"
printf '[build]\ncache_dir = %s\n' "$TMP/cfgc" >"$TMP/c.ini"
expect_rc "with [build] cache_dir" 0 env -u CUCO_CACHE_DIR "$CUCO" --config "$TMP/c.ini" cc -- "$CC" -c s.c -o "$TMP/8.o"
[ -d "$TMP/cfgc/o" ] && [ -n "$(ls "$TMP/cfgc/o")" ] && ok "[build] cache_dir names the folder" ||
  not_ok "[build] cache_dir names the folder" "$(ls -R "$TMP" | head -20)"
expect_rc "with CUCO_CACHE_DIR too" 0 env CUCO_CACHE_DIR="$TMP/envc" "$CUCO" --config "$TMP/c.ini" cc -- "$CC" -c s.c -o "$TMP/9.o"
[ -d "$TMP/envc/o" ] && ok "CUCO_CACHE_DIR wins over [build] cache_dir" || not_ok "CUCO_CACHE_DIR wins over [build] cache_dir" "no $TMP/envc/o"
expect_rc "no compiler is a usage error" 2 "$CUCO" cc --cache-dir "$C"
done_testing
