# shellcheck shell=bash
# tests/gpu/cheats.sh - sourced by the GPU scripts that build cheats with
# nvcc themselves: a workload's cheats are edits of its seed
# (cheats/NAME.edit, applied by cuco's patch code) or whole files
# (NAME.cu), so they are written out as whole sources first.
#   gpu_cheats WL DIR [--verify-only]: DIR/NAME.cu for every cheat of WL, with
#   `cuco eval WL --write-cheats DIR`; cuco is $CUCO, else the repository's
#   ./cuco (what tests/gpu/run-all.sh makes from scripts/gpu-bundle.sh's
#   build-gpu), build-gpu/cuco or build/cuco.  --verify-only leaves out the
#   cheats rejected only at the bench stage.  Non-zero, saying why
#   on stderr, when it cannot.
gpu_cheats() {
  local wl=$1 dir=$2 only=${3:-} c root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  for c in "${CUCO:-}" "$root/cuco" "$root/build-gpu/cuco" "$root/build/cuco"; do
    [ -n "$c" ] && [ -x "$c" ] && "$c" --version >/dev/null 2>&1 && break
    c=
  done
  if [ -z "$c" ]; then
    echo "gpu_cheats: no runnable cuco (set CUCO, or carry build-gpu from scripts/gpu-bundle.sh)" >&2
    return 2
  fi
  rm -rf "$dir"
  "$c" eval "$wl" --write-cheats "$dir" >/dev/null || return
  # --verify-only: for scripts that run binaries in verify mode only; a
  # cheat that only the bench exposes (CUCO-EXPECT-REJECT: bench ...) is
  # then cuco eval --cheats' to judge.
  [ "$only" = --verify-only ] || return 0
  for c in "$dir"/*.cu; do
    if head -1 "$c" | grep -q '^// CUCO-EXPECT-REJECT: bench '; then rm -f "$c"; fi
  done
}
