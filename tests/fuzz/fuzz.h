/* tests/fuzz/fuzz.h - shared by the fuzz targets: each defines
 * LLVMFuzzerTestOneInput().  Built two ways (Makefile):
 *   make fuzz   clang -fsanitize=fuzzer,address,undefined: a time-boxed
 *               coverage-guided run over tests/fuzz/corpus/NAME/
 *   make test   gcc with replay.c's main: every corpus file once (a
 *               regression check that needs no clang) */
#ifndef CUCO_FUZZ_H
#define CUCO_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated malloc'd copy of the input (the parsers take strings);
 * NULL when out of memory. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);

  if (s) {
    memcpy(s, data, size);
    s[size] = '\0';
  }
  return s;
}

#endif
