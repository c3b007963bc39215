/* report.h - `cuco report`: a run database as one self-contained HTML page
 * (inline SVG, no script, no network) or a Markdown summary. */
#ifndef CUCO_REPORT_H
#define CUCO_REPORT_H

#include "buf.h"
#include "err.h"

struct rundb;

enum report_format { REPORT_HTML, REPORT_MD };

/* Append the report of db's run to out.  Every string from the database
 * is escaped.  Returns 0, ERR_DB/ERR_NOMEM (message in *e) or the buffer's
 * ERR_TOOBIG. */
int report_render(struct rundb *db, enum report_format fmt, struct buf *out,
                  struct err *e) WARN_UNUSED;

#endif
