#!/bin/bash
# make install PREFIX=... (and DESTDIR=...): cuco, cuco-confine and what
# cuco reads at run time (runtime/, the workloads, the examples, the docs
# the transform prompts carry) land where the installed binary finds them
# (issue 48).  And a quiet make: "CC src/x.c", "LD build/cuco"; V=1 the
# whole commands; -s nothing.
. "$(dirname "$0")/lib.sh"

BUILD=${BUILD:-build}
if ! command -v make >/dev/null; then
  echo "ok 1 # SKIP make not found"; echo "1..1"; exit 0
fi
# the make of `make test` must not leak its flags (-s) into ours
MK=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" --no-print-directory)
# -o: install the binaries the other tests run, as they are (never rebuilt
# here, whatever the sources' times)
OLD=(-o "$BUILD/cuco" -o "$BUILD/cuco-confine")
# the installed binary knows nothing of this checkout
RUN=(env -u CUCO_ROOT -u CUCO_RUNTIME_DIR -u CUCO_CONFIG)

P=$TMP/prefix
expect_rc "make install PREFIX=..." 0 "${MK[@]}" "${OLD[@]}" install BUILD="$BUILD" PREFIX="$P"
expect_grep "make install says what it installs, in short" "$TMP/out" "^  INSTALL +$P/bin/cuco$"
for f in bin/cuco bin/cuco-confine; do
  if [ -x "$P/$f" ]; then ok "$f installed, executable"; else not_ok "$f installed, executable" "missing"; fi
done
for f in runtime/runtime.h runtime/symbols.allow workloads/gemm_allgather/workload.ini \
  workloads/gemm_allgather/seed.cu examples/cpu_matmul/workload.ini docs/backend-lsa.md \
  docs/strategy.md; do
  if cmp -s "$ROOT/$f" "$P/share/cuco/$f"; then ok "share/cuco/$f installed"
  else not_ok "share/cuco/$f installed" "missing or different"; fi
done
expect_rc "installed cuco --version" 0 "${RUN[@]}" "$P/bin/cuco" --version
expect_grep "installed cuco prints its version" "$TMP/out" "^cuco [0-9]"
expect_rc "installed cuco help eval" 0 "${RUN[@]}" "$P/bin/cuco" help eval
expect_rc "installed cuco doctor" 0 "${RUN[@]}" "$P/bin/cuco" doctor
expect_no_grep "installed cuco finds cuco-confine beside it" "$TMP/out" "cuco-confine is missing"
# a workload outside any checkout (its ../../runtime does not exist): the
# runtime (symbols.allow) is found from the binary, in PREFIX/share/cuco
mkdir -p "$TMP/elsewhere/a"
cp -r "$P/share/cuco/examples/cpu_matmul" "$TMP/elsewhere/a/"
(cd "$TMP/elsewhere" && "${RUN[@]}" "$P/bin/cuco" eval a/cpu_matmul --no-bench) >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "^  allowlist ok" "$TMP/out"; then ok "installed cuco evaluates a workload with its installed runtime"
else not_ok "installed cuco evaluates a workload with its installed runtime" "exit $rc: $(tail -c 400 "$TMP/err")"; fi

expect_rc "make install DESTDIR=... PREFIX=/opt/cuco" 0 \
  "${MK[@]}" "${OLD[@]}" install BUILD="$BUILD" DESTDIR="$TMP/stage" PREFIX=/opt/cuco
if [ -x "$TMP/stage/opt/cuco/bin/cuco" ] && [ -f "$TMP/stage/opt/cuco/share/cuco/runtime/runtime.h" ]; then
  ok "DESTDIR stages under DESTDIR/PREFIX"
else not_ok "DESTDIR stages under DESTDIR/PREFIX" "$(find "$TMP/stage" -maxdepth 4 | head)"; fi
expect_rc "make uninstall" 0 "${MK[@]}" uninstall BUILD="$BUILD" PREFIX="$P"
if [ ! -e "$P/bin/cuco" ] && [ ! -e "$P/share/cuco" ]; then ok "make uninstall removes what install put"
else not_ok "make uninstall removes what install put" "$(find "$P" | head)"; fi

# --- quiet make ------------------------------------------------------------
B=$TMP/b
expect_rc "make one object" 0 "${MK[@]}" BUILD="$B" "$B/obj/units.o"
if [ "$(cat "$TMP/out")" = "  CC      src/units.c" ]; then ok "make prints 'CC src/units.c', not the command"
else not_ok "make prints 'CC src/units.c', not the command" "$(head -c 400 "$TMP/out")"; fi
rm -rf "$B"
expect_rc "make V=1 one object" 0 "${MK[@]}" V=1 BUILD="$B" "$B/obj/units.o"
expect_grep "V=1 prints the whole compiler command" "$TMP/out" "-std=c11 .* -c -o $B/obj/units.o src/units.c$"
expect_no_grep "V=1 prints no short line" "$TMP/out" "^  CC "
rm -rf "$B"
expect_rc "make -s one object" 0 "${MK[@]}" -s BUILD="$B" "$B/obj/units.o"
if [ ! -s "$TMP/out" ]; then ok "make -s prints nothing"; else not_ok "make -s prints nothing" "$(head -c 300 "$TMP/out")"; fi
# the link alone: this build's objects, as they are, in a folder of ours
mkdir -p "$B"
cp -a "$ROOT/$BUILD/obj" "$ROOT/$BUILD/gen" "$ROOT/$BUILD/cuco-confine" "$B/"
expect_rc "make links cuco" 0 "${MK[@]}" BUILD="$B" "$B/cuco"
expect_grep "make prints 'LD .../cuco'" "$TMP/out" "^  LD +$B/cuco$"
expect_no_grep "... and no compiler command" "$TMP/out" "(gcc|cc) .*-o "
done_testing
