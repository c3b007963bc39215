/* runtime/rt_phase.h - wall time per phase class of one rank (issue 26;
 * plain C: rt_boot.cu and tests/unit/test_phase.c include it).
 *
 * cuco eval spends about a minute per candidate; RESULT.json's
 * "phases_ms" says how much of it each phase of a rank takes.  A stage is
 * what rt_progress writes to the progress file ("init", "timed 3",
 * "perturb-hog"); its class is its leading lower-case letters ("timed",
 * "perturb").  The time between two stages goes to the class of the
 * earlier one; rt_phases_move takes time spent inside the open class out
 * of it and into another ("judge").  Classes keep the order in which they
 * first occurred; times are in milliseconds of a caller-given clock.
 * rt_phase_since_start_ms gives "start", the time before main. */
#ifndef CUCO_RT_PHASE_H
#define CUCO_RT_PHASE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RT_PHASE_MAX 16
#define RT_PHASE_NAME 16

struct rt_phases {
  int n;                                 /* classes seen */
  char name[RT_PHASE_MAX][RT_PHASE_NAME];
  double ms[RT_PHASE_MAX];
  int cur;                               /* open class, -1 before the first mark */
  double since;                          /* when the open class began */
};

static inline void rt_phases_init(struct rt_phases *p) {
  memset(p, 0, sizeof *p);
  p->cur = -1;
}

/* Length of the class of STAGE: its leading 'a'..'z'. */
static inline size_t rt_phase_class_len(const char *stage) {
  size_t n = 0;
  while (stage[n] >= 'a' && stage[n] <= 'z') n++;
  return n;
}

/* Index of the class named by the first LEN bytes of NAME, added when new;
 * -1 when LEN is 0 or too long, or the table is full (the time is then not
 * counted: a report, not a check). */
static inline int rt_phases_slot(struct rt_phases *p, const char *name, size_t len) {
  if (len == 0 || len >= RT_PHASE_NAME) return -1;
  for (int i = 0; i < p->n; i++)
    if (strlen(p->name[i]) == len && !memcmp(p->name[i], name, len)) return i;
  if (p->n >= RT_PHASE_MAX) return -1;
  memcpy(p->name[p->n], name, len);
  p->name[p->n][len] = 0;
  p->ms[p->n] = 0;
  return p->n++;
}

/* Add MS to class NAME (e.g. "start", measured before the first mark). */
static inline void rt_phases_add(struct rt_phases *p, const char *name, double ms) {
  int i = rt_phases_slot(p, name, strlen(name));
  if (i >= 0) p->ms[i] += ms;
}

/* Charge NOW - since to the open class, then open the class of STAGE. */
static inline void rt_phases_mark(struct rt_phases *p, const char *stage, double now) {
  if (p->cur >= 0) p->ms[p->cur] += now - p->since;
  p->cur = rt_phases_slot(p, stage, rt_phase_class_len(stage));
  p->since = now;
}

/* MS of the open class were spent on NAME: move them there.  The open
 * class may go negative until its interval is charged at the next mark. */
static inline void rt_phases_move(struct rt_phases *p, const char *name, double ms) {
  int i = rt_phases_slot(p, name, strlen(name));
  if (i < 0 || i == p->cur) return;
  p->ms[i] += ms;
  if (p->cur >= 0) p->ms[p->cur] -= ms;
}

/* Print ',\n "phases_ms": {"start": 12.3, ...}' to F: every class seen,
 * the open one up to NOW, 4 significant digits. */
static inline void rt_phases_json(const struct rt_phases *p, FILE *f, double now) {
  fprintf(f, ",\n \"phases_ms\": {");
  for (int i = 0; i < p->n; i++) {
    double v = p->ms[i] + (i == p->cur ? now - p->since : 0);
    fprintf(f, "%s\"%s\": %.4g", i ? ", " : "", p->name[i], v > 0 ? v : 0.0);
  }
  fputc('}', f);
}

/* Milliseconds from this process's start (fork, then exec, dynamic
 * loading, static initialisers) to now: /proc/self/stat field 22 is the
 * start in clock ticks since boot (10 ms resolution), CLOCK_BOOTTIME the
 * same clock now.  0, or -1 when /proc cannot tell. */
static inline int rt_phase_since_start_ms(double *out) {
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  /* Field 2, the command name, may hold blanks and ')': fields 3.. follow
   * its last ')', one blank before each. */
  const char *s = strrchr(buf, ')');
  if (!s) return -1;
  for (int field = 3; field <= 22; field++)
    if (!(s = strchr(s + 1, ' '))) return -1;
  char *end;
  errno = 0;
  unsigned long long ticks = strtoull(s + 1, &end, 10);
  long hz = sysconf(_SC_CLK_TCK);
  struct timespec now;
  if (errno || end == s + 1 || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0)
    return -1;
  double ms = now.tv_sec * 1e3 + now.tv_nsec / 1e6 - (double)ticks * 1e3 / hz;
  *out = ms > 0 ? ms : 0;
  return 0;
}

#endif /* CUCO_RT_PHASE_H */
