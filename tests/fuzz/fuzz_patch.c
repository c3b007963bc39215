/* fuzz_patch.c - the LLM edit appliers (patch.c): SEARCH/REPLACE, full
 * rewrites, fenced-code extraction, over a fixed two-block program.  The
 * input is the untrusted LLM answer; the first byte also picks a program
 * variant so the block finder sees hostile programs too. */
#include "fuzz.h"
#include "patch.h"

static const char prog[] =
    "#include <stdio.h>\n"
    "// EVOLVE-BLOCK-START\n"
    "// CUCO-DIRECTIVES backend=lsa placement=deferred\n"
    "int a = 1;\n"
    "  int b = 2;\n"
    "// EVOLVE-BLOCK-END\n"
    "int frozen(void) { return 3; }\n"
    "// EVOLVE-BLOCK-START\n"
    "static int c(void) { return 4; }\n"
    "// EVOLVE-BLOCK-END\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct patch_block blocks[8];
  struct patch_stats st;
  struct err e = {0, ""};
  char *text = fuzz_cstr(data, size), *out = NULL, *code;

  if (!text)
    return 0;
  if (patch_apply_diff(prog, text, &out, &st, &e) == 0 && !out)
    abort();
  free(out);
  out = NULL;
  if (patch_apply_full(prog, text, &out, &e) == 0 && !out)
    abort();
  free(out);
  out = NULL;
  code = patch_extract_code(text, &e);
  free(code);
  code = patch_extract_rationale(text, 200);
  if (code && strlen(code) > 200)
    abort();
  free(code);
  /* the text as a program */
  {
    int nb = patch_blocks(text, blocks, 8, &e);
    for (int i = 0; i < nb; i++) /* ranges inside the text, in order */
      if (blocks[i].start > blocks[i].end || blocks[i].end > size)
        abort();
  }
  if (patch_set_line(text, "// CUCO-DIRECTIVES", "// CUCO-DIRECTIVES x=1",
                     &out, &e) == 0)
    free(out);
  out = NULL;
  if (patch_crossover(prog, text, 1, &out, &e) == 0)
    free(out);
  free(text);
  return 0;
}
