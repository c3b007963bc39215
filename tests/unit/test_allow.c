/* Unit tests for allow.c: globs, the list file, denials and scopes, and
 * the check of a real object (cc builds one; nm/objdump judge it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allow.h"
#include "proc.h"

static char dir[64];

static void write_file(const char *name, const char *text, char *path,
                       size_t n)
{
  FILE *f;

  snprintf(path, n, "%s/%s", dir, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_glob(void **state)
{
  (void)state;
  assert_true(allow_glob("cuda*", "cudaMalloc"));
  assert_true(allow_glob("cuda*", "cuda"));
  assert_false(allow_glob("cuda*", "__cudaRegisterFatBinary"));
  assert_true(allow_glob("rt_stream(wl_ctx*)", "rt_stream(wl_ctx*)"));
  assert_true(allow_glob("operator new(*", "operator new(unsigned long)"));
  assert_true(allow_glob("a?c", "abc"));
  assert_false(allow_glob("a?c", "ac"));
  assert_true(allow_glob("*x*y", "__x__y"));
  assert_false(allow_glob("rt_fail", "rt_fail2"));
  /* '[' is an ordinary character (demangled names hold [abi:cxx11]) */
  assert_true(allow_glob("f[abi:cxx11]()", "f[abi:cxx11]()"));
}

static void test_list(void **state)
{
  char p[128];
  struct err e = {0, ""};
  struct allow *a;
  (void)state;
  write_file("l1",
             "# comment\n"
             "cuda*\n"
             "!cudaDeviceReset\n"
             "nccl*\n"
             "  rt_stream(wl_ctx*)  \n"
             "[candidate]\n"
             "!ncclAllGather\n"
             "[baseline]\n"
             "printf\n",
             p, sizeof(p));
  a = allow_load(p, &e);
  assert_non_null(a);
  assert_true(allow_match(a, "cudaMalloc", NULL, 0));
  assert_false(allow_match(a, "cudaDeviceReset", NULL, 0));
  assert_false(allow_match(a, "cudaDeviceReset", NULL, 1));
  assert_true(allow_match(a, "_Z9rt_streamP6wl_ctx", "rt_stream(wl_ctx*)", 0));
  assert_false(allow_match(a, "_Z8rt_mix64m", "rt_mix64(unsigned long)", 0));
  /* host collectives: baselines only */
  assert_false(allow_match(a, "ncclAllGather", NULL, 0));
  assert_true(allow_match(a, "ncclAllGather", NULL, 1));
  assert_false(allow_match(a, "printf", NULL, 0));
  assert_true(allow_match(a, "printf", NULL, 1));
  /* a workload widens, but cannot lift a denial or deny */
  assert_int_equal(allow_widen(a, " fopen , fclose,", &e), 0);
  assert_true(allow_match(a, "fopen", NULL, 0));
  assert_true(allow_match(a, "fclose", NULL, 0));
  assert_int_equal(allow_widen(a, "cudaDeviceReset", &e), 0);
  assert_false(allow_match(a, "cudaDeviceReset", NULL, 0));
  assert_int_equal(allow_widen(a, "!cudaMalloc", &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, "cannot deny"));
  allow_free(a);

  write_file("l2", "cuda*\n[nope]\n", p, sizeof(p));
  assert_null(allow_load(p, &e));
  assert_int_equal(e.code, ERR_PARSE);
  assert_non_null(strstr(e.msg, "l2:2: unknown section '[nope]'"));
  assert_null(allow_load("/nonexistent/symbols.allow", &e));
  assert_int_equal(e.code, ERR_IO);
}

/* [freeform]: what a whole program may call beyond a runtime
 * implementation (its own devices and communicators), decided before the
 * other sections, and only for freeform programs */
static void test_freeform_scope(void **state)
{
  char p[128];
  struct err e = {0, ""};
  struct allow *a;
  (void)state;
  write_file("l3",
             "cuda*\n"
             "!cudaSetDevice\n"
             "nccl*\n"
             "!ncclCommInit*\n"
             "[candidate]\n"
             "!ncclAllGather\n"
             "[freeform]\n"
             "cudaSetDevice\n"
             "ncclCommInit*\n"
             "ncclAllGather\n"
             "!cudaIpc*\n",
             p, sizeof(p));
  a = allow_load(p, &e);
  assert_non_null(a);
  /* a runtime implementation: the denials stand */
  assert_false(allow_match(a, "cudaSetDevice", NULL, 1));
  assert_false(allow_match(a, "ncclCommInitAll", NULL, 0));
  assert_false(allow_match(a, "ncclAllGather", NULL, 0));
  assert_false(allow_match_program(a, "cudaSetDevice", NULL, 0, 0));
  /* a freeform program, baseline or candidate: [freeform] decides first */
  assert_true(allow_match_program(a, "cudaSetDevice", NULL, 1, 1));
  assert_true(allow_match_program(a, "cudaSetDevice", NULL, 0, 1));
  assert_true(allow_match_program(a, "ncclCommInitRank", NULL, 0, 1));
  assert_true(allow_match_program(a, "ncclAllGather", NULL, 0, 1));
  /* its denials too, over an allowance elsewhere */
  assert_true(allow_match(a, "cudaIpcOpenMemHandle", NULL, 1));
  assert_false(allow_match_program(a, "cudaIpcOpenMemHandle", NULL, 1, 1));
  /* names it does not mention go by the other sections */
  assert_true(allow_match_program(a, "cudaMalloc", NULL, 0, 1));
  assert_false(allow_match_program(a, "fopen", NULL, 0, 1));
  assert_int_equal(allow_widen(a, "fopen, cudaIpcOpenMemHandle", &e), 0);
  assert_true(allow_match_program(a, "fopen", NULL, 0, 1));
  assert_false(allow_match_program(a, "cudaIpcOpenMemHandle", NULL, 0, 1));
  allow_free(a);
}

/* cc -c SRC into DIR/NAME.o; skipped when there is no cc */
static int cc_obj(const char *name, const char *src, char *obj, size_t n)
{
  char c[128];
  int ok;
  char *out;

  write_file(name, src, c, sizeof(c));
  snprintf(obj, n, "%s.o", c);
  {
    const char *argv[] = {"cc", "-O1", "-c", c, "-o", obj, NULL};
    out = proc_capture(argv, 65536, &ok);
  }
  free(out);
  return ok ? 0 : -1;
}

static void test_check_object(void **state)
{
  char p[128], obj[160];
  struct err e = {0, ""};
  struct allow *a;
  (void)state;
  if (!proc_which("nm", NULL, p, sizeof(p)) ||
      !proc_which("objdump", NULL, p, sizeof(p)) ||
      !proc_which("cc", NULL, p, sizeof(p)))
    skip();
  write_file("l3", "memcpy\nstrlen\n", p, sizeof(p));
  a = allow_load(p, &e);
  assert_non_null(a);
  assert_int_equal(cc_obj("ok.c",
                          "#include <string.h>\n"
                          "unsigned long f(char *d, const char *s) {\n"
                          "  memcpy(d, s, strlen(s)); return strlen(d); }\n",
                          obj, sizeof(obj)),
                   0);
  assert_int_equal(allow_check(a, obj, "ok.o", 0, 0, "L", &e), 0);
  /* the name is pasted together: the text never says "system" */
  assert_int_equal(cc_obj("paste.c",
                          "#include <stdlib.h>\n#define CAT(a, b) a##b\n"
                          "int g(void) { return CAT(sys, tem)(\"true\"); }\n",
                          obj, sizeof(obj)),
                   0);
  assert_int_equal(allow_check(a, obj, "paste.o", 0, 0, "L", &e), ERR_CHECK);
  assert_string_equal(e.msg, "paste.o calls 'system' (not on L)");
  assert_int_equal(cc_obj("many.c",
                          "int open(const char *, int, ...);\n"
                          "long write(int, const void *, unsigned long);\n"
                          "int close(int);\n"
                          "int h(void) { int fd = open(\"x\", 0);\n"
                          "  write(fd, \"y\", 1); return close(fd); }\n",
                          obj, sizeof(obj)),
                   0);
  assert_int_equal(allow_check(a, obj, "many.o", 0, 0, "L", &e), ERR_CHECK);
  assert_non_null(strstr(e.msg, "many.o calls 'open' (not on L; also "));
  assert_non_null(strstr(e.msg, "'write'"));
  assert_int_equal(cc_obj("asm.c",
                          "long s(long n) { long r;\n"
                          "  __asm__ volatile(\"syscall\" : \"=a\"(r) : "
                          "\"a\"(n) : \"rcx\", \"r11\", \"memory\");\n"
                          "  return r; }\n",
                          obj, sizeof(obj)),
                   0);
  assert_int_equal(allow_check(a, obj, "asm.o", 0, 0, "L", &e), ERR_CHECK);
  assert_string_equal(e.msg,
                      "asm.o makes a raw system call ('syscall' in 's')");
  /* defining a listed name replaces the library's; the ABI is exempt */
  assert_int_equal(
      cc_obj("def.c",
             "#include <string.h>\n"
             "size_t strlen(const char *s) { (void)s; return 0; }\n"
             "int wl_step(void *c) { (void)c; return 0; }\n",
             obj, sizeof(obj)),
      0);
  assert_int_equal(allow_check(a, obj, "def.o", 0, 0, "L", &e), ERR_CHECK);
  assert_non_null(strstr(e.msg, "def.o defines 'strlen', a name on L"));
  assert_int_equal(cc_obj("abi.c",
                          "int wl_step(void *c) { (void)c; return 0; }\n"
                          "int my_helper(int x) { return x + 1; }\n",
                          obj, sizeof(obj)),
                   0);
  assert_int_equal(allow_check(a, obj, "abi.o", 0, 0, "L", &e), 0);
  /* the reference's hooks, whatever the spelling in the source */
  assert_int_equal(cc_obj("hook.c",
                          "#define CAT(a, b) a##b\n"
                          "int CAT(wl_input, _post)(void) { return 0; }\n",
                          obj, sizeof(obj)),
                   0);
  assert_int_equal(allow_check(a, obj, "hook.o", 0, 0, "L", &e), ERR_CHECK);
  assert_string_equal(e.msg, "hook.o defines 'wl_input_post', which only the "
                             "trusted reference may define");
  assert_int_equal(
      cc_obj("int80.c", "void t(void) { __asm__ volatile(\"int $0x80\"); }\n",
             obj, sizeof(obj)),
      0);
  assert_int_equal(allow_check(a, obj, "int80.o", 0, 0, "L", &e), ERR_CHECK);
  assert_non_null(strstr(e.msg, "('int $0x80' in 't')"));
  allow_free(a);
  /* a C++ function whose name starts like a C pattern's ("exp*") replaces
   * nothing; operator new does */
  write_file("l4", "exp*\noperator new(*\n", p, sizeof(p));
  a = allow_load(p, &e);
  assert_non_null(a);
  if (cc_obj("cxx.cc",
             "int expert_kernel(const float *x) { return (int)x[0]; }\n", obj,
             sizeof(obj)) == 0) {
    assert_int_equal(allow_check(a, obj, "cxx.o", 0, 0, "L", &e), 0);
    assert_int_equal(
        cc_obj("new.cc",
               "#include <cstddef>\n"
               "void *operator new(std::size_t n) { (void)n; return 0; }\n",
               obj, sizeof(obj)),
        0);
    assert_int_equal(allow_check(a, obj, "new.o", 0, 0, "L", &e), ERR_CHECK);
    assert_non_null(
        strstr(e.msg, "new.o defines 'operator new(unsigned long)'"));
  }
  assert_int_equal(cc_obj("cexp.c", "double expm2(double x) { return x; }\n",
                          obj, sizeof(obj)),
                   0);
  assert_int_equal(allow_check(a, obj, "cexp.o", 0, 0, "L", &e), ERR_CHECK);
  assert_non_null(strstr(e.msg, "cexp.o defines 'expm2'"));
  allow_free(a);
}

/* Issue 47: code before or after main in a candidate's object; nvcc's own
 * registration (here a stand-in of the same name) is the one exception. */
static void test_ctors(void **state)
{
  static const struct {
    const char *name, *src, *msg;
  } cases[] = {
      {"ctor.c",
       "volatile int v;\n"
       "__attribute__((constructor)) static void evil(void) { v = 1; }\n",
       "ctor.o runs 'evil' before main"},
      {"dtor.c",
       "volatile int v;\n"
       "__attribute__((destructor)) void after(void) { v = 2; }\n",
       "dtor.o runs 'after' after main (a destructor)"},
      {"prio.c",
       "volatile int v;\n"
       "__attribute__((constructor(101))) void early(void) { v = 3; }\n",
       "prio.o runs 'early' before main"},
      {"initsec.c",
       "__asm__(\".section .init,\\\"ax\\\"\\n nop\\n .text\");\n",
       "initsec.o has a .init section"},
      {"nvcc.c",
       "volatile int v;\n"
       "__attribute__((constructor)) static void "
       "__sti____cudaRegisterAll(void)"
       " { v = 4; }\nint f(int x) { return x; }\n",
       NULL},
  };
  char p[128], obj[160];
  struct err e = {0, ""};
  struct allow *a;
  (void)state;
  if (!proc_which("readelf", NULL, p, sizeof(p)) ||
      !proc_which("cc", NULL, p, sizeof(p)))
    skip();
  write_file("l4", "memcpy\n", p, sizeof(p));
  a = allow_load(p, &e);
  assert_non_null(a);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char label[64];
    assert_int_equal(cc_obj(cases[i].name, cases[i].src, obj, sizeof(obj)), 0);
    snprintf(label, sizeof(label), "%.*so", (int)strlen(cases[i].name) - 1,
             cases[i].name);
    e.msg[0] = '\0';
    if (!cases[i].msg) {
      assert_int_equal(allow_check(a, obj, label, 0, 0, "L", &e), 0);
      continue;
    }
    assert_int_equal(allow_check(a, obj, label, 0, 0, "L", &e), ERR_CHECK);
    if (!strstr(e.msg, cases[i].msg))
      fail_msg("%s: %s", cases[i].name, e.msg);
    /* a baseline (trusted) is not held to it */
    assert_int_equal(allow_check(a, obj, label, 0, 1, "L", &e), 0);
  }
  allow_free(a);
}

/* Run ARGV (a compiler) and fail the test unless it succeeds. */
static void must_run(const char *const *argv)
{
  int ok;
  free(proc_capture(argv, 65536, &ok));
  assert_true(ok);
}

/* allow_demangle against `nm -C` itself, line by line, on a g++ object and
 * a dynamic executable (templates, std::, operators, lambdas, versioned
 * imports such as "...@GLIBCXX_3.4.21"): the allowlist's demangled names
 * must be what nm -C printed before it was no longer run. */
static void compare_nm(const char *path, int dynamic)
{
  const char *raw_argv[] = {"nm", "--no-sort", path, NULL, NULL};
  const char *dem_argv[] = {"nm", "--no-sort", "-C", path, NULL, NULL};
  char *raw, *dem, *p, *q;
  int ok, lines = 0, mangled = 0, versioned = 0;

  if (dynamic) {
    raw_argv[2] = "-D";
    raw_argv[3] = path;
    dem_argv[3] = "-D";
    dem_argv[4] = path;
  }
  raw = proc_capture(raw_argv, 1 << 20, &ok);
  assert_true(ok);
  dem = proc_capture(dem_argv, 1 << 20, &ok);
  assert_true(ok);
  for (p = raw, q = dem; *p && *q;) {
    size_t pl = strcspn(p, "\n"), ql = strcspn(q, "\n");
    /* "VALUE(16 or blanks) T NAME" */
    if (pl > 19 && ql > 19) {
      char name[1024], want[1024], got[1024];
      snprintf(name, sizeof(name), "%.*s", (int)(pl - 19), p + 19);
      snprintf(want, sizeof(want), "%.*s", (int)(ql - 19), q + 19);
      allow_demangle(name, got, sizeof(got));
      assert_string_equal(got, want);
      lines++;
      mangled += strcmp(name, want) != 0;
      versioned += strchr(name, '@') != NULL && strcmp(name, want) != 0;
    }
    p += pl + (p[pl] != '\0');
    q += ql + (q[ql] != '\0');
  }
  assert_true(*p == '\0' && *q == '\0');
  assert_true(lines > 10 && mangled > 5);
  if (dynamic)
    assert_true(versioned > 0);
  free(raw);
  free(dem);
}

static void test_demangle(void **state)
{
  static const char src[] =
      "#include <map>\n#include <string>\n#include <vector>\n"
      "#include <algorithm>\n#include <cstdio>\n"
      "namespace { struct K { int v; }; }\n"
      "template <class T> T twice(T x) { return x + x; }\n"
      "struct P { bool operator<(const P &o) const { return a < o.a; }\n"
      "  int a; };\n"
      "int main(int argc, char **argv) {\n"
      "  std::map<std::string, std::vector<P>> m;\n"
      "  std::string s(argv[0]); m[s].push_back(P{argc});\n"
      "  std::vector<K> k(3); auto f = [&](int x) { return x + k[0].v; };\n"
      "  std::sort(m[s].begin(), m[s].end());\n"
      "  std::printf(\"%d %f\\n\", twice(f(argc)), twice(1.5));\n"
      "  return (int)m.size(); }\n";
  char p[128], exe[160];
  (void)state;
  if (!proc_which("nm", NULL, p, sizeof(p)) ||
      !proc_which("g++", NULL, p, sizeof(p)))
    skip();
  write_file("dm.cc", src, p, sizeof(p));
  snprintf(exe, sizeof(exe), "%s.o", p);
  {
    const char *argv[] = {"g++", "-O0", "-c", p, "-o", exe, NULL};
    must_run(argv);
  }
  compare_nm(exe, 0);
  snprintf(exe, sizeof(exe), "%s.exe", p);
  {
    const char *argv[] = {"g++", "-O0", p, "-o", exe, NULL};
    must_run(argv);
  }
  compare_nm(exe, 1);
  /* what nm -C keeps as it is */
  allow_demangle("memcpy@GLIBC_2.14", p, sizeof(p));
  assert_string_equal(p, "memcpy@GLIBC_2.14");
  allow_demangle("_Znot_mangled", p, sizeof(p));
  assert_string_equal(p, "_Znot_mangled");
  /* truncated to fit, never overrun */
  allow_demangle("_ZNSt6vectorIiSaIiEED1Ev", p, 12);
  assert_string_equal(p, "std::vector");
}

/* nm runs without bfd's plugins (fast), except for compiler IR: an LTO
 * object's calls live in its IR, and must not vanish from the check. */
static void test_lto(void **state)
{
  static const char src[] = "#include <unistd.h>\n"
                            "int f(void) { return getpid(); }\n";
  char p[128], c[128], obj[160];
  struct err e = {0, ""};
  struct allow *a;
  int i;
  (void)state;
  if (!proc_which("nm", NULL, p, sizeof(p)) ||
      !proc_which("gcc", NULL, p, sizeof(p)))
    skip();
  write_file("lto.list", "memcpy\n", p, sizeof(p));
  a = allow_load(p, &e);
  assert_non_null(a);
  write_file("lto.c", src, c, sizeof(c));
  for (i = 0; i < 2; i++) {
    /* gcc's slim LTO object: nm without the plugin sees only
     * __gnu_lto_slim; clang's: LLVM bitcode, no ELF at all */
    const char *cc = i ? "clang" : "gcc";
    snprintf(obj, sizeof(obj), "%s.%s.o", c, cc);
    if (i && !proc_which("clang", NULL, p, sizeof(p)))
      break;
    {
      const char *argv[] = {cc, "-O2", "-flto", "-c", c, "-o", obj, NULL};
      must_run(argv);
    }
    e.code = 0;
    /* clang's without LLVMgold.so in bfd-plugins cannot be read at all:
     * an error, never a pass */
    assert_int_not_equal(allow_check(a, obj, "lto.o", 0, 0, "L", &e), 0);
    if (e.code == ERR_CHECK)
      assert_string_equal(e.msg, "lto.o calls 'getpid' (not on L)");
    else
      assert_true(i == 1);
  }
  allow_free(a);
}

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/cuco-allow.XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
  const char *argv[] = {"rm", "-rf", dir, NULL};
  int ok;
  (void)state;
  free(proc_capture(argv, 1024, &ok));
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_glob),
      cmocka_unit_test(test_list),
      cmocka_unit_test(test_freeform_scope),
      cmocka_unit_test(test_check_object),
      cmocka_unit_test(test_ctors),
      cmocka_unit_test(test_demangle),
      cmocka_unit_test(test_lto),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
