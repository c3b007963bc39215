/* progid.h - a candidate's identity: the program it compiles to.
 *
 * Two candidates are one program when the compiler is handed the same
 * thing: the source preprocessed with the build's -D flags (its directives
 * and params), comments and whitespace gone.  progid runs a preprocessor
 * of its own, enough of C's for that: object- and function-like macros
 * with # and ## (hide sets, as C specifies rescanning), #if expressions,
 * #ifdef, #undef, and #include "..." of the workload's and the runtime's
 * headers, processed in place.  So a param the code never reads, or reads
 * only in a branch that another param turned off, gives the same identity
 * for every value.  What it cannot know is kept apart, never merged:
 *
 *  - a name no file it reads defines (a compiler's or a system header's
 *    macro): a condition on it keeps every branch it could take, each in
 *    the identity with the condition as expanded; a macro that such
 *    branches define differently may not be used afterwards (below);
 *  - #include <...> is opaque: the identity records the header and every
 *    macro defined at that point (fully expanded), on two assumptions: a
 *    system header reads and defines no CUCO_* name (cuco's -D flags) and
 *    does not redefine a macro the source defined;
 *  - a CUCO_* name that no file defines and no flag gives is undefined
 *    (only cuco's command line defines them);
 *  - anything else (a quoted header not found, a computed #include, a
 *    paste that forms no token, __VA_OPT__, a macro the branches it cannot
 *    decide define differently, a limit reached): the identity falls back
 *    to the source's tokens (comments and whitespace gone) and every
 *    flag, which keeps apart all that the text and the flags do.
 *
 * __LINE__, __FILE__ and __COUNTER__ are not expanded: a program that
 * differs only in where its lines are is the same program.
 */
#ifndef CUCO_PROGID_H
#define CUCO_PROGID_H

#include <stddef.h>

#include "err.h"

struct progid;

/* The compiler's own macros that decide branches, for defs below: nvcc
 * on a .cu file (__CUDACC__, __NVCC__, __cplusplus, C++17) or a C
 * compiler (none of them; __CUDA_ARCH__ stays undecided on a .cu: the
 * host and the device passes both count). */
extern const char *const progid_nvcc_defs[];
extern const char *const progid_cc_defs[];
#define PROGID_COMPILER_DEFS 4

/* A context that reads quoted headers from dirs[0..ndirs) (after the
 * including header's own folder) and keeps them (at most a few dozen,
 * each up to 1 MiB) for later calls: the headers must not change while
 * it lives.  NULL on allocation failure.  Not thread-safe: one caller at
 * a time.  Free with progid_free (NULL-safe). */
struct progid *progid_new(const char *const *dirs, int ndirs);
void progid_free(struct progid *p);

enum { PROGID_TEXT = 0, PROGID_EXACT = 1 };

/* The identity of code compiled with the flags defs[0..ndefs) ("NAME",
 * "NAME=VALUE", with or without a leading "-D"; "-UNAME": NAME is known
 * to be undefined, and no system header defines it), as 16 hex digits of
 * an XXH64 into out.  Returns PROGID_EXACT (preprocessed) or PROGID_TEXT
 * (the fallback above; why, if given, says what stopped the
 * preprocessor), or ERR_NOMEM. */
int progid_compute(struct progid *p, const char *code, const char *const *defs,
                   int ndefs, char out[17], char *why, size_t whyn);

#endif
