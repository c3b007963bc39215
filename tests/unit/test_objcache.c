/* Unit tests for objcache.c: a second identical compile is a hit, a
 * changed input is a miss, a corrupted or truncated entry is rebuilt,
 * never trusted. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "objcache.h"

static char root[64];

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *f)
{
  (void)st;
  (void)flag;
  (void)f;
  return remove(p);
}

static void put_file(const char *name, const char *text)
{
  char p[256];
  FILE *f;

  snprintf(p, sizeof(p), "%s/%s", root, name);
  f = fopen(p, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static char *get_file(const char *path)
{
  static char text[4096];
  FILE *f = fopen(path, "rb");
  size_t n;

  if (!f)
    return NULL;
  n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = '\0';
  return text;
}

/* The one entry under cache/o (its path). */
static void entry_path(char *out, size_t n)
{
  char d[256];
  DIR *dir;
  struct dirent *de;

  snprintf(d, sizeof(d), "%s/cache/o", root);
  dir = opendir(d);
  assert_non_null(dir);
  out[0] = '\0';
  while ((de = readdir(dir)))
    if (de->d_name[0] != '.')
      snprintf(out, n, "%s/%s", d, de->d_name);
  closedir(dir);
  assert_true(out[0] != '\0');
}

/* Open the compile ARGV (SRC: the source it names, or NULL) with FLAGS
 * and look it up; the lookup's result. */
static int lookup_at(struct objcache *c, const char *const *argv, int argc,
                     const char *src, unsigned flags, struct buf *err)
{
  char dir[128], out[128];
  struct err e = {0, ""};

  snprintf(dir, sizeof(dir), "%s/cache", root);
  snprintf(out, sizeof(out), "%s/out.o", root);
  unlink(out);
  assert_int_equal(objcache_open(c, dir, "cc 1.0", argv, argc, src, flags, &e),
                   0);
  return objcache_get(c, out, NULL, err, &e);
}

static int lookup(struct objcache *c, const char *const *argv, int argc,
                  struct buf *err)
{
  return lookup_at(c, argv, argc, NULL, 0, err);
}

/* "Compile": the object OBJ_TEXT, the dependency list DEPS a compiler
 * would write, and its warning WARN. */
static void store_deps(struct objcache *c, const char *deps,
                       const char *obj_text, const char *warn)
{
  char dep[128], obj[128];
  struct err e = {0, ""};

  snprintf(dep, sizeof(dep), "%s/out.d", root);
  snprintf(obj, sizeof(obj), "%s/out.o", root);
  put_file("out.o", obj_text);
  put_file("out.d", deps);
  assert_int_equal(objcache_put(c, dep, obj, "", 0, warn, strlen(warn), &e),
                   0);
}

static void store(struct objcache *c, const char *obj_text)
{
  store_deps(c, "out.o : src.c \\\n  a.h\n", obj_text, "a warning\n");
}

static void test_hit_miss(void **state)
{
  const char *argv[] = {"cc", "-c", "src.c"};
  const char *argv2[] = {"cc", "-O1", "-c", "src.c"};
  struct buf err = BUF_INIT(4096);
  struct objcache c;
  struct stat st;
  char p[256], out[128];
  (void)state;

  assert_int_equal(lookup(&c, argv, 3, &err), 0); /* empty cache */
  store(&c, "OBJECT-1");
  assert_int_equal(lookup(&c, argv, 3, &err), 1); /* identical: a hit */
  snprintf(out, sizeof(out), "%s/out.o", root);
  assert_string_equal(get_file(out), "OBJECT-1");
  assert_string_equal(buf_str(&err), "a warning\n"); /* replayed */
  assert_int_equal(lookup(&c, argv2, 4, NULL), 0);   /* other flags */

  put_file("a.h", "#define A 2\n"); /* a changed header: a miss */
  assert_int_equal(lookup(&c, argv, 3, NULL), 0);
  snprintf(out, sizeof(out), "%s/out.o", root);
  assert_int_not_equal(access(out, F_OK), 0); /* nothing written */
  put_file("a.h", "#define A 1\n");           /* back as it was: found again */
  assert_int_equal(lookup(&c, argv, 3, NULL), 1);
  put_file("src.c", "int x = A + 1;\n"); /* the source too */
  assert_int_equal(lookup(&c, argv, 3, NULL), 0);
  put_file("src.c", "#include \"a.h\"\nint x = A;\n");

  snprintf(p, sizeof(p), "%s/cache", root);
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  buf_release(&err);
}

static void test_corrupt(void **state)
{
  const char *argv[] = {"cc", "-c", "src.c"};
  struct objcache c;
  char ent[512], *text, out[128];
  FILE *f;
  (void)state;

  assert_int_equal(lookup(&c, argv, 3, NULL), 1);
  entry_path(ent, sizeof(ent));
  /* one byte of the object changed: its hash no longer matches */
  text = get_file(ent);
  assert_non_null(text);
  text[strlen(text) - 1] ^= 1;
  f = fopen(ent, "wb");
  fputs(text, f);
  fclose(f);
  assert_int_equal(lookup(&c, argv, 3, NULL), 0);
  assert_int_not_equal(access(ent, F_OK), 0); /* removed */
  store(&c, "OBJECT-2");                      /* rebuilt */
  assert_int_equal(lookup(&c, argv, 3, NULL), 1);
  snprintf(out, sizeof(out), "%s/out.o", root);
  assert_string_equal(get_file(out), "OBJECT-2");
  /* truncated (a crash while writing, a full disk) */
  entry_path(ent, sizeof(ent));
  assert_int_equal(truncate(ent, 20), 0);
  assert_int_equal(lookup(&c, argv, 3, NULL), 0);
  store(&c, "OBJECT-3");
  assert_int_equal(lookup(&c, argv, 3, NULL), 1);
  assert_string_equal(get_file(out), "OBJECT-3");
}

static void test_bad_deps(void **state)
{
  const char *argv[] = {"cc", "-c", "other.c"};
  struct objcache c;
  struct err e = {0, ""};
  char dep[128], obj[128];
  (void)state;

  assert_int_equal(lookup(&c, argv, 3, NULL), 0);
  snprintf(dep, sizeof(dep), "%s/bad.d", root);
  snprintf(obj, sizeof(obj), "%s/out.o", root);
  put_file("out.o", "X");
  put_file("bad.d", "no colon here\n");
  assert_int_not_equal(objcache_put(&c, dep, obj, "", 0, "", 0, &e), 0);
  put_file("bad.d", "out.o: missing.h\n");
  assert_int_not_equal(objcache_put(&c, dep, obj, "", 0, "", 0, &e), 0);
  assert_non_null(strstr(e.msg, "missing.h"));
  assert_int_equal(lookup(&c, argv, 3, NULL), 0); /* nothing stored */
}

/* The working directory is in the key (a relative path means something
 * else elsewhere), unless every path is absolute and the caller asks. */
static void test_any_dir(void **state)
{
  char src[128], sub[128], d[512];
  const char *argv[] = {"cc", "-c", src};
  struct objcache c;
  (void)state;

  snprintf(src, sizeof(src), "%s/src.c", root);
  snprintf(sub, sizeof(sub), "%s/elsewhere", root);
  assert_int_equal(mkdir(sub, 0700), 0);
  assert_int_equal(lookup_at(&c, argv, 3, NULL, OBJCACHE_RELOCATE, NULL), 0);
  snprintf(d, sizeof(d), "out.o : %s %s/a.h\n", src, root);
  store_deps(&c, d, "OBJECT-ABS", "");
  assert_int_equal(lookup_at(&c, argv, 3, NULL, OBJCACHE_RELOCATE, NULL), 1);
  assert_int_equal(chdir(sub), 0);
  /* from another folder: found with the flag, not without it */
  assert_int_equal(lookup_at(&c, argv, 3, NULL, OBJCACHE_RELOCATE, NULL), 1);
  assert_int_equal(lookup_at(&c, argv, 3, NULL, 0, NULL), 0);
  assert_int_equal(chdir(root), 0);
}

/* A compile keyed by its source's name and text (cuco eval's builds): the
 * same k.cu in two folders, each with its own h.h beside it, is two
 * compiles; a fresh folder with the same k.cu and h.h is the first one. */
static int lookup_src(struct objcache *c, const char *folder)
{
  const char *argv[] = {"cc", "-c", "SRC=k.c"};
  char src[128];

  snprintf(src, sizeof(src), "%s/%s/k.c", root, folder);
  return lookup_at(c, argv, 3, src, OBJCACHE_RELOCATE, NULL);
}

static void store_src(struct objcache *c, const char *folder,
                      const char *obj_text)
{
  char d[512];

  snprintf(d, sizeof(d), "out.o : %s/%s/k.c %s/%s/h.h %s/a.h\n", root, folder,
           root, folder, root);
  store_deps(c, d, obj_text, "");
}

static void make_dirs(const char *names)
{
  for (; *names; names++) {
    char d[128];
    snprintf(d, sizeof(d), "%s/%c", root, *names);
    assert_int_equal(mkdir(d, 0700), 0);
  }
}

static void test_src_dir(void **state)
{
  struct objcache c;
  char out[128];
  (void)state;

  snprintf(out, sizeof(out), "%s/out.o", root);
  make_dirs("ABC");
  put_file("A/k.c", "#include \"h.h\"\n");
  put_file("A/h.h", "#define H 1\n");
  put_file("B/k.c", "#include \"h.h\"\n");
  put_file("B/h.h", "#define H 2\n");
  put_file("C/k.c", "#include \"h.h\"\n");
  put_file("C/h.h", "#define H 1\n");
  assert_int_equal(lookup_src(&c, "A"), 0);
  store_src(&c, "A", "OBJECT-A");
  assert_int_equal(lookup_src(&c, "A"), 1);
  /* B's h.h differs: not A's object, though k.c and the key are A's */
  assert_int_equal(lookup_src(&c, "B"), 0);
  /* C holds what A held: A's object */
  assert_int_equal(lookup_src(&c, "C"), 1);
  assert_string_equal(get_file(out), "OBJECT-A");
  /* an input not beside the source is checked where it is */
  put_file("a.h", "#define A 9\n");
  assert_int_equal(lookup_src(&c, "C"), 0);
  put_file("a.h", "#define A 1\n");
}

/* OBJCACHE_RELOCATE: the -I folders by their place.  A copy of the
 * workload folder (cuco init's scaffold) finds the original's compile
 * while its headers have the same text, and not once one differs. */
static int lookup_wl(struct objcache *c, const char *wl, unsigned flags)
{
  char src[128], inc[128];
  const char *argv[] = {"", inc, "-c", src};

  snprintf(src, sizeof(src), "%s/S/k.c", root);
  snprintf(inc, sizeof(inc), "-I%s/%s", root, wl);
  return lookup_at(c, argv, 4, src, flags, NULL);
}

static void test_relocate(void **state)
{
  struct objcache c;
  char d[512];
  (void)state;

  make_dirs("SXY");
  put_file("S/k.c", "#include <w.h>\n");
  put_file("X/w.h", "#define W 1\n");
  put_file("Y/w.h", "#define W 1\n");
  assert_int_equal(lookup_wl(&c, "X", OBJCACHE_RELOCATE), 0);
  snprintf(d, sizeof(d), "out.o : %s/S/k.c %s/X/w.h\n", root, root);
  store_deps(&c, d, "OBJECT-X", "");
  assert_int_equal(lookup_wl(&c, "Y", OBJCACHE_RELOCATE), 1);
  assert_int_equal(lookup_wl(&c, "Y", 0), 0); /* by path */
  put_file("Y/w.h", "#define W 2\n");
  assert_int_equal(lookup_wl(&c, "Y", OBJCACHE_RELOCATE), 0);
  assert_int_equal(lookup_wl(&c, "X", OBJCACHE_RELOCATE), 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hit_miss), cmocka_unit_test(test_corrupt),
      cmocka_unit_test(test_bad_deps), cmocka_unit_test(test_any_dir),
      cmocka_unit_test(test_src_dir),  cmocka_unit_test(test_relocate),
  };
  int rc;

  snprintf(root, sizeof(root), "/tmp/cuco-oc.XXXXXX");
  if (!mkdtemp(root) || chdir(root))
    return 1;
  put_file("a.h", "#define A 1\n");
  put_file("src.c", "#include \"a.h\"\nint x = A;\n");
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (chdir("/") == 0)
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return rc;
}
