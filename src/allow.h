/* allow.h - the symbol allowlist: a candidate is judged by what the
 * compiler produced, not by its text (docs/contracts.md, "What a candidate
 * can reach").
 *
 * After an implementation is built, every undefined symbol of its object
 * (runtime workloads: the implementation's .o; freeform workloads: the
 * dynamic symbols the program imports) must match a pattern of the list
 * kept beside the runtime (runtime/symbols.allow), and its host code may
 * hold no raw system call (syscall, sysenter, int $0x80).
 *
 * The list file: one pattern a line, matched against the symbol's
 * demangled name and its raw name ('*' any run of characters, '?' one
 * character; nothing else is special).  '#' starts a comment line.  A line
 * "!PATTERN" denies what it matches, before any pattern allows it.  Section
 * lines say whom the following lines concern: "[all]" (the default) every
 * implementation, "[candidate]" device candidates only (seeds, cheats,
 * search candidates: e.g. "!ncclAllGather", host collectives), "[baseline]"
 * host-driven baselines only, "[freeform]" the programs of freeform
 * workloads only, before every other section (allow_match_program).  A
 * workload widens the list with
 * workload.ini `[allow] symbols = PATTERN, PATTERN` (allowing, for every
 * implementation; it cannot deny).
 */
#ifndef CUCO_ALLOW_H
#define CUCO_ALLOW_H

#include <stddef.h>

#include "err.h"

#define ALLOW_FILE "symbols.allow"

struct allow;

/* Load the list at PATH.  NULL with *e set: ERR_IO (unreadable),
 * ERR_PARSE ("PATH:LINE: ..." for an unknown [section] or a pattern over
 * 255 bytes), ERR_NOMEM.  Free with allow_free(). */
struct allow *allow_load(const char *path, struct err *e);
void allow_free(struct allow *a);

/* Add the comma-separated patterns of LIST (workload.ini's [allow]
 * symbols), allowing for every implementation (denials still win).  0, or
 * ERR_PARSE (a "!" pattern, one over 255 bytes)/ERR_NOMEM. */
int allow_widen(struct allow *a, const char *list, struct err *e) WARN_UNUSED;

/* Whether a symbol (its raw NAME and DEMANGLED form, which may be NULL) is
 * allowed for a baseline (BASELINE) or a device candidate (!BASELINE): no
 * denial of its scope matches either form, and an allowing pattern does. */
int allow_match(const struct allow *a, const char *name, const char *demangled,
                int baseline);

/* allow_match() for a whole program when FREEFORM (a freeform workload's,
 * allow_check's DYNAMIC): the list's [freeform] lines decide first, a
 * denial there before an allowance, over every other section (such a
 * program sets up its own devices and communicators, which a runtime
 * implementation may not). */
int allow_match_program(const struct allow *a, const char *name,
                        const char *demangled, int baseline, int freeform);

/* What `nm -C` prints for the raw symbol NAME ("_ZNSt6vectorIiSaIiEED1Ev",
 * "_Z1fv@GLIBCXX_3.4"), truncated to fit OUT (N bytes); a name that does
 * not demangle is copied as it is. */
void allow_demangle(const char *name, char *out, size_t n);

/* '*' / '?' glob match of the whole NAME. */
int allow_glob(const char *pat, const char *name);

/* Judge the built file PATH (LABEL names it in messages, e.g.
 * "candidate.o").  DYNAMIC: an executable or shared object (its imported
 * dynamic symbols) rather than a relocatable object.  0 when every symbol
 * is allowed, no strong global definition takes a name the list allows
 * (it would replace the library's: cudaEventElapsedTime, clock_gettime;
 * wl_setup/wl_step/wl_teardown/main exempt) and no raw system call is
 * found; ERR_CHECK with one line ("candidate.o calls 'system' (not on
 * LIST)", "candidate.o defines 'clock_gettime', a name on LIST ...",
 * "candidate.o makes a raw system call ('syscall' in 'f')"; for a
 * program (DYNAMIC), a call off the list ends with the workload.ini line
 * that would allow it: "; to allow it, add `symbols = rand` under [allow]
 * in workload.ini");
 * ERR_PROC/ERR_NOTFOUND when nm or objdump could not run (the check could not
 * be done).  LIST_NAME is how the list is named in messages. */
int allow_check(const struct allow *a, const char *path, const char *label,
                int dynamic, int baseline, const char *list_name,
                struct err *e) WARN_UNUSED;

#endif
