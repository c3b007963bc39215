/* tests/fuzz/replay.c - a main() for a fuzz target without libFuzzer:
 * runs LLVMFuzzerTestOneInput once on every file named on the command line
 * and prints TAP (one line per file), so `make test` replays the corpus
 * and every crash a fuzzer ever found (saved under corpus/NAME/) with gcc
 * alone. */
#include <stdio.h>

#include "fuzz.h"

int main(int argc, char **argv)
{
  int i;

  for (i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    static uint8_t data[1 << 20];
    size_t n;
    if (!f) {
      printf("not ok %d - %s: cannot open\n", i, argv[i]);
      continue;
    }
    n = fread(data, 1, sizeof(data), f);
    fclose(f);
    LLVMFuzzerTestOneInput(data, n);
    printf("ok %d - %s (%zu bytes)\n", i, argv[i], n);
  }
  printf("1..%d\n", argc - 1);
  return 0;
}
