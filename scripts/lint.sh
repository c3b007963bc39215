#!/bin/bash
# make lint: formatting (.clang-format), the banned-functions list
# (docs/c-style.md habit 9) and cppcheck.  Exit non-zero on any finding.
cd "$(dirname "$0")/.." || exit 2
status=0
files=$(ls src/*.c src/*.h tests/unit/*.c 2>/dev/null)

if ! clang-format --dry-run -Werror $files 2>/tmp/cuco-lint-fmt; then
  echo "lint: formatting differs from .clang-format (run 'make format'):"
  grep -E '^[^ ].*(warning|error):' /tmp/cuco-lint-fmt | cut -d: -f1,2 | sort -u | head -20
  status=1
fi

banned='gets|strcpy|strcat|sprintf|vsprintf|strtok|atoi|atol|system|popen|tmpnam'
# A call is NAME followed by '('; snprintf/strtok_r/... are other names.
# A line may opt out with a trailing "cuco: allow NAME" comment (tests only).
# The banned list covers the CUDA side too: runtime/, workloads/, bench/
# and the GPU tests (their .cu/.cuh/.h/.c files), not only the tool.
cuda_files=$(ls runtime/* bench/*.cu bench/*.cuh bench/*.h workloads/*/*.cu \
  workloads/*/*.cuh workloads/*/*.h workloads/*/*.c tests/gpu/*.cu tests/gpu/*.cuh \
  2>/dev/null | grep -v '/cheats/')
hits=$(grep -nE "(^|[^a-zA-Z0-9_])($banned)[[:space:]]*\(" $files $cuda_files |
       grep -v 'cuco: allow' || true)
if [ -n "$hits" ]; then
  echo "lint: banned functions used:"
  echo "$hits"
  status=1
fi

if command -v cppcheck >/dev/null; then
  if ! cppcheck -q --error-exitcode=1 --enable=warning,portability \
       --inline-suppr --suppress=missingIncludeSystem --suppress=unknownMacro --suppress=toomanyconfigs \
       -Isrc -D__GNUC__ src 2>&1; then
    echo "lint: cppcheck found problems"
    status=1
  fi
fi
[ $status -eq 0 ] && echo "lint: clean"
exit $status
