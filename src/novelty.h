/* novelty.h - how close a candidate is to programs already evaluated.
 *
 * Offline: the set of hashed k-token shingles of the EVOLVE block
 * contents (comments and whitespace dropped), compared by Jaccard
 * similarity.  With an embedding endpoint: cosine similarity of vectors.
 * A candidate at or above the threshold against any evaluated correct
 * program of its island is rejected before evaluation.
 */
#ifndef CUCO_NOVELTY_H
#define CUCO_NOVELTY_H

#include <stddef.h>
#include <stdint.h>

#define NOVELTY_K 5 /* tokens per shingle */

struct novelty_sig {
  size_t n;
  uint64_t *h; /* sorted, unique shingle hashes; malloc'd */
};

/* Build the signature of code's EVOLVE blocks (the whole code when it has
 * none).  Returns 0, or ERR_NOMEM. */
int novelty_sig_init(struct novelty_sig *s, const char *code);
void novelty_sig_release(struct novelty_sig *s);

/* Jaccard similarity |A n B| / |A u B| in [0, 1]; 1 for two empty sets. */
double novelty_jaccard(const struct novelty_sig *a,
                       const struct novelty_sig *b);

/* Cosine similarity of two vectors of length dim (0 if either is 0). */
double novelty_cosine(const float *a, const float *b, size_t dim);

#endif
