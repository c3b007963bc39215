/* Unit tests for progid.c: a candidate is identified by what it compiles
 * to.  Comments and whitespace do not count, a param the code never reads
 * (or reads only in a branch another param turned off) does not count,
 * everything the compiler would see does; what the preprocessor cannot
 * decide is kept apart, never merged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "progid.h"

static struct progid *P;

/* The identity of code under flags (a NULL-ended list); *mode gets
 * PROGID_EXACT or PROGID_TEXT. */
static void id_of(const char *code, const char *const *flags, char out[17],
                  int *mode)
{
  char why[200];
  int n = 0, rc;

  while (flags && flags[n])
    n++;
  rc = progid_compute(P, code, flags, n, out, why, sizeof(why));
  assert_true(rc == PROGID_EXACT || rc == PROGID_TEXT);
  if (mode)
    *mode = rc;
  if (rc == PROGID_TEXT && getenv("PROGID_DEBUG"))
    fprintf(stderr, "fallback: %s\n", why);
}

/* Same identity for code under flags a and b? Both must be exact when
 * `exact`. */
static int same(const char *code, const char *const *a, const char *const *b,
                int exact)
{
  char x[17], y[17];
  int ma, mb;

  id_of(code, a, x, &ma);
  id_of(code, b, y, &mb);
  if (exact) {
    assert_int_equal(ma, PROGID_EXACT);
    assert_int_equal(mb, PROGID_EXACT);
  }
  return !strcmp(x, y);
}

static int setup(void **state)
{
  (void)state;
  P = progid_new(NULL, 0);
  return P ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  progid_free(P);
  return 0;
}

static void test_comments_and_whitespace(void **state)
{
  const char *a = "#include <stdio.h>\n// EVOLVE-BLOCK-START\n"
                  "// CUCO-PARAM tile=64\nint f(int x) { return x*2; }\n";
  const char *b = "#include  <stdio.h>\n// EVOLVE-BLOCK-START\n"
                  "// CUCO-PARAM tile=128 (a comment)\n"
                  "int f(int x)\n{\n  /* doubled */ return x * 2;\n}\n";
  const char *c = "#include <stdio.h>\nint f(int x) { return x*3; }\n";
  char x[17], y[17], z[17];
  int m;

  (void)state;
  id_of(a, NULL, x, &m);
  assert_int_equal(m, PROGID_EXACT);
  id_of(b, NULL, y, NULL);
  id_of(c, NULL, z, NULL);
  assert_string_equal(x, y);
  assert_string_not_equal(x, z);
  /* tokens, not characters: a + +b is not a++b */
  id_of("int g(int a,int b){return a+ +b;}", NULL, x, NULL);
  id_of("int g(int a,int b){return a++b;}", NULL, y, NULL);
  assert_string_not_equal(x, y);
}

/* The CPU example's shape: order picks a loop nest, kunroll is read only
 * in the ikj nest, extra is read nowhere. */
static const char *const MATMUL =
    "#define CAT_(a, b) a##b\n"
    "#define CAT(a, b)  CAT_(a, b)\n"
    "#define ORDER_ijk 1\n#define ORDER_ikj 2\n"
    "// CUCO-PARAM order=ijk\n"
    "#ifndef CUCO_PARAM_order\n#define CUCO_PARAM_order ijk\n#endif\n"
    "#ifndef CUCO_PARAM_kunroll\n#define CUCO_PARAM_kunroll 1\n#endif\n"
    "#define ORDER CAT(ORDER_, CUCO_PARAM_order)\n"
    "#define KU CUCO_PARAM_kunroll\n"
    "void mm(float *c, int n) {\n"
    "#if ORDER == ORDER_ikj\n"
    "  for (int k = 0; k < n; k += KU) c[k] = 0;\n"
    "#else\n"
    "  for (int k = 0; k < n; k++) c[k] = 1;\n"
    "#endif\n"
    "}\n";

static void test_inert_param(void **state)
{
  const char *ijk1[] = {"-DCUCO_PARAM_order=ijk", "-DCUCO_PARAM_kunroll=1",
                        "-DCUCO_PARAM_extra=1", NULL};
  const char *ijk4[] = {"-DCUCO_PARAM_order=ijk", "-DCUCO_PARAM_kunroll=4",
                        "-DCUCO_PARAM_extra=1", NULL};
  const char *ijk_x[] = {"-DCUCO_PARAM_order=ijk", "-DCUCO_PARAM_kunroll=1",
                         "-DCUCO_PARAM_extra=7", NULL};
  const char *ikj1[] = {"-DCUCO_PARAM_order=ikj", "-DCUCO_PARAM_kunroll=1",
                        "-DCUCO_PARAM_extra=1", NULL};
  const char *ikj4[] = {"-DCUCO_PARAM_order=ikj", "-DCUCO_PARAM_kunroll=4",
                        "-DCUCO_PARAM_extra=1", NULL};

  (void)state;
  assert_true(same(MATMUL, ijk1, ijk_x, 1)); /* never read */
  assert_true(same(MATMUL, ijk1, ijk4, 1));  /* read in a dead branch */
  assert_false(same(MATMUL, ikj1, ikj4, 1)); /* read where it counts */
  assert_false(same(MATMUL, ijk1, ikj1, 1)); /* a different nest */
  assert_true(same(
      MATMUL, ikj1,
      (const char *[]){"CUCO_PARAM_order=ikj", "CUCO_PARAM_kunroll=1", NULL},
      1));
}

static void test_macros(void **state)
{
  const char *str = "#define S(x) #x\nconst char *s = S(CUCO_PARAM_t);\n";
  const char *xstr = "#define S(x) #x\n#define XS(x) S(x)\n"
                     "const char *s = XS(CUCO_PARAM_t);\n";
  const char *t1[] = {"CUCO_PARAM_t=1", NULL},
             *t2[] = {"CUCO_PARAM_t=2", NULL};
  const char *va = "#define F(fmt, ...) g(fmt, ##__VA_ARGS__)\n"
                   "int h(void) { return F(1) + F(2, CUCO_PARAM_t); }\n";
  const char *rec = "#define foo foo + CUCO_PARAM_t\nint x = foo;\n";
  const char *fnobj = "#define f(x) (x * CUCO_PARAM_t)\n#define g f\n"
                      "int y = g(3);\n";
  char x[17], y[17];

  (void)state;
  assert_true(same(str, t1, t2, 1));   /* # does not expand its argument */
  assert_false(same(xstr, t1, t2, 1)); /* ... through a second macro it does */
  assert_false(same(va, t1, t2, 1));
  assert_false(same(rec, t1, t2, 1)); /* foo is not expanded twice */
  assert_false(same(fnobj, t1, t2, 1));
  /* what a macro expands to, not how it is written */
  id_of("#define TWO 2\nint z = TWO;\n", NULL, x, NULL);
  id_of("#define DUO 2\nint z = DUO;\n", NULL, y, NULL);
  assert_string_equal(x, y);
}

static void test_undecided(void **state)
{
  const char *t1[] = {"CUCO_PARAM_t=1", NULL},
             *t2[] = {"CUCO_PARAM_t=2", NULL};
  /* a compiler's macro: both branches count */
  const char *arch = "#ifdef __CUDA_ARCH__\nint a = CUCO_PARAM_t;\n#else\n"
                     "int a = 0;\n#endif\n";
  /* the condition itself mixes the unknown and the param */
  const char *mix = "#if __X__ + CUCO_PARAM_t == 3\nint a;\n#endif\n";
  /* an unknown that cannot change the outcome */
  const char *dead = "#if defined(__X__) && CUCO_PARAM_t > 5\nint a;\n"
                     "#endif\nint b;\n";
  /* branches define a macro differently: using it falls back */
  const char *poison = "#ifdef __X__\n#define T CUCO_PARAM_t\n#else\n"
                       "#define T 1\n#endif\nint a = T;\n";
  char x[17], y[17];
  int m;

  (void)state;
  assert_false(same(arch, t1, t2, 1));
  assert_false(same(mix, t1, t2, 1));
  assert_true(same(dead, t1, t2, 1));
  id_of(poison, t1, x, &m);
  assert_int_equal(m, PROGID_TEXT);
  id_of(poison, t2, y, NULL);
  assert_string_not_equal(x, y);
  /* a CUCO_ name nothing defines is undefined, not unknown */
  assert_true(same("#ifdef CUCO_VRANKS\nint v;\n#endif\nint w = "
                   "CUCO_PARAM_t;\n",
                   t1, t1, 1));
}

static void test_system_header(void **state)
{
  const char *t1[] = {"CUCO_PARAM_t=1", NULL},
             *t2[] = {"CUCO_PARAM_t=2", NULL};
  /* a macro defined before <...> from a param: the header may read it */
  const char *before = "#define N CUCO_PARAM_t\n#include <x.h>\nint a;\n";
  const char *after = "#include <x.h>\n#define N CUCO_PARAM_t\nint a;\n";

  (void)state;
  assert_false(same(before, t1, t2, 1));
  assert_true(same(after, t1, t2, 1));
}

static void test_fallback(void **state)
{
  const char *t1[] = {"CUCO_PARAM_t=1", NULL},
             *t2[] = {"CUCO_PARAM_t=2", NULL};
  const char *code = "#include HEADER\nint a; // x\n";
  const char *code2 = "#include HEADER\nint  a; /* y */\n";
  char x[17], y[17];
  int m;

  (void)state;
  id_of(code, t1, x, &m);
  assert_int_equal(m, PROGID_TEXT);
  id_of(code, t2, y, NULL);
  assert_string_not_equal(x, y); /* every flag counts */
  id_of(code2, t1, y, NULL);
  assert_string_equal(x, y); /* comments and whitespace do not */
  /* a quoted header that is not found */
  id_of("#include \"nowhere.h\"\nint a;\n", t1, x, &m);
  assert_int_equal(m, PROGID_TEXT);
}

/* Quoted headers are read from the given folders and preprocessed in
 * place: one that reads the param makes it count, one that does not
 * leaves it inert. */
static const char READS[] = "#pragma once\nint r = CUCO_PARAM_t;\n";
static const char QUIET[] = "#ifndef QUIET_H\n#define QUIET_H\n"
                            "#define HALF(x) ((x) / 2)\n#endif\n";

static void test_quoted_header(void **state)
{
  char dir[] = "/tmp/test_progid.XXXXXX", path[256];
  const char *dirs[1];
  const char *t1[] = {"CUCO_PARAM_t=1", NULL},
             *t2[] = {"CUCO_PARAM_t=2", NULL};
  struct progid *p0 = P;
  struct err e;

  (void)state;
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof(path), "%s/reads.h", dir);
  assert_int_equal(file_write(path, READS, strlen(READS), &e), 0);
  snprintf(path, sizeof(path), "%s/quiet.h", dir);
  assert_int_equal(file_write(path, QUIET, strlen(QUIET), &e), 0);
  dirs[0] = dir;
  P = progid_new(dirs, 1);
  assert_non_null(P);
  assert_false(same("#include \"reads.h\"\nint a;\n", t1, t2, 1));
  assert_true(same("#include \"quiet.h\"\n#include \"quiet.h\"\n"
                   "int a = HALF(4);\n",
                   t1, t2, 1));
  assert_false(
      same("#include \"quiet.h\"\nint a = HALF(CUCO_PARAM_t);\n", t1, t2, 1));
  progid_free(P);
  P = p0;
  snprintf(path, sizeof(path), "%s/reads.h", dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/quiet.h", dir);
  unlink(path);
  rmdir(dir);
}

/* The shipped seeds: the CPU example is preprocessed exactly, and its
 * kunroll is inert in the ijk and jki nests only; every GPU seed is
 * preprocessed exactly against the runtime's headers. */
static void test_shipped_seeds(void **state)
{
  const char *root = getenv("CUCO_ROOT");
  static const char *const gpu[] = {"gemm_allgather", "kv_transfer",
                                    "moe_dsv3", "flash_attn_cp", NULL};
  char path[1024], rt[1024], wl[1024], x[17], y[17], why[200];
  struct err e;
  char *code;
  int i;

  (void)state;
  if (!root)
    root = ".";
  snprintf(path, sizeof(path), "%s/examples/cpu_matmul/seed.c", root);
  code = file_read(path, 1 << 20, NULL, &e);
  if (!code) {
    skip();
    return;
  }
  {
    const char *a[] = {"CUCO_PARAM_order=ijk", "CUCO_PARAM_tile=64",
                       "CUCO_PARAM_kunroll=1", NULL};
    const char *b[] = {"CUCO_PARAM_order=ijk", "CUCO_PARAM_tile=64",
                       "CUCO_PARAM_kunroll=4", NULL};
    const char *c[] = {"CUCO_PARAM_order=ikj", "CUCO_PARAM_tile=64",
                       "CUCO_PARAM_kunroll=1", NULL};
    const char *d[] = {"CUCO_PARAM_order=ikj", "CUCO_PARAM_tile=64",
                       "CUCO_PARAM_kunroll=4", NULL};
    const char *t[] = {"CUCO_PARAM_order=ijk", "CUCO_PARAM_tile=32",
                       "CUCO_PARAM_kunroll=1", NULL};
    assert_true(same(code, a, b, 1));
    assert_false(same(code, c, d, 1));
    assert_false(same(code, a, t, 1));
  }
  free(code);
  snprintf(rt, sizeof(rt), "%s/runtime", root);
  for (i = 0; gpu[i]; i++) {
    const char *dirs[2] = {wl, rt};
    struct progid *p;
    int m;
    snprintf(wl, sizeof(wl), "%s/workloads/%s", root, gpu[i]);
    snprintf(path, sizeof(path), "%s/seed.cu", wl);
    code = file_read(path, 1 << 22, NULL, &e);
    if (!code)
      continue;
    p = progid_new(dirs, 2);
    assert_non_null(p);
    m = progid_compute(p, code, progid_nvcc_defs, PROGID_COMPILER_DEFS, x, why,
                       sizeof(why));
    if (m != PROGID_EXACT)
      fail_msg("%s: %s", gpu[i], why);
    {
      /* a virtual-rank build (vnccl.cuh in place of NCCL's device API)
       * is preprocessed exactly too, and is another program */
      const char *v[] = {progid_nvcc_defs[0], progid_nvcc_defs[1],
                         progid_nvcc_defs[2], progid_nvcc_defs[3],
                         "-DCUCO_VRANKS",     "-URT_HOST_ONLY"};
      char z[17];
      m = progid_compute(p, code, v, 6, z, why, sizeof(why));
      if (m != PROGID_EXACT)
        fail_msg("%s with vranks: %s", gpu[i], why);
      assert_string_not_equal(x, z);
    }
    /* the second time from the header cache, the same */
    assert_int_equal(progid_compute(p, code, progid_nvcc_defs,
                                    PROGID_COMPILER_DEFS, y, why, sizeof(why)),
                     PROGID_EXACT);
    assert_string_equal(x, y);
    progid_free(p);
    free(code);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_comments_and_whitespace),
      cmocka_unit_test(test_inert_param),
      cmocka_unit_test(test_macros),
      cmocka_unit_test(test_undecided),
      cmocka_unit_test(test_system_header),
      cmocka_unit_test(test_fallback),
      cmocka_unit_test(test_quoted_header),
      cmocka_unit_test(test_shipped_seeds),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
