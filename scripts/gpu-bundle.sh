#!/bin/bash
# Build ./cuco for the GPU machine (Ubuntu, no -dev packages, no network):
# build-gpu/cuco with an rpath to build-gpu/libs, which holds every shared
# library it needs except glibc's own.  Carry build-gpu with the device
# call.  Nothing is exported through LD_LIBRARY_PATH, so the children cuco
# starts (nvcc, workload binaries) keep the machine's own libraries.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s BUILD=build-gpu \
  CFLAGS="-O2 -g -Wl,--disable-new-dtags,-rpath,\\\$\$ORIGIN/libs" \
  build-gpu/cuco build-gpu/tests/fakellm
rm -rf build-gpu/libs && mkdir -p build-gpu/libs
ldd build-gpu/cuco build-gpu/cuco-confine | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$lib" build-gpu/libs/ ;;
  esac
done
# The GPU machines have no bubblewrap (issue 47): carry this machine's,
# which needs only libselinux, libcap and libpcre2 (in every Ubuntu base).
mkdir -p build-gpu/bin
cp -L "$(command -v bwrap)" build-gpu/bin/bwrap
du -sh build-gpu
