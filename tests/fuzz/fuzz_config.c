/* fuzz_config.c - the INI parser (config.c over inih): any bytes must give
 * 0 or an error with a message, never a crash or a leak. */
#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct config *c = config_new();
  struct err e = {0, ""};
  char *text = fuzz_cstr(data, size);

  if (c && text) {
    if (config_load_string(c, "fuzz.ini", text, &e) == 0) {
      long v = 0;
      double d = 0;
      /* a typed getter over an untrusted value: an error needs a message */
      if (config_get_long(c, "evolve", "islands", 4, 1, 64, &v, &e) &&
          !e.msg[0])
        abort();
      if (config_get_double(c, "evolve", "budget_usd", 0, 0, 1e6, &d, &e) &&
          !e.msg[0])
        abort();
    } else if (!e.msg[0]) {
      abort(); /* an error must say what was wrong */
    }
  }
  free(text);
  config_free(c);
  return 0;
}
