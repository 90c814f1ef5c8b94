/*
 * sft_suggest.h -- "did you mean": the closest of a set of known words to
 * a misspelt one, by edit distance, when it is close enough.
 */

#ifndef _SFT_SUGGEST_H_INCLUDED_
#define _SFT_SUGGEST_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


/* longer words are compared with nothing */
#define SFT_SUGGEST_MAX_LEN  64


typedef struct {
    sft_str_t    word;        /* the misspelt word */
    sft_str_t    best;        /* the closest candidate so far, or empty */
    sft_uint_t   distance;
} sft_suggest_t;


/*
 * The optimal string alignment distance: insertions, deletions,
 * substitutions and swaps of two neighbours, each costing 1;
 * SFT_SUGGEST_MAX_LEN + 1 when a word is longer than SFT_SUGGEST_MAX_LEN.
 */
sft_uint_t sft_edit_distance(const u_char *a, size_t alen, const u_char *b,
    size_t blen);

void sft_suggest_init(sft_suggest_t *s, sft_str_t *word);
void sft_suggest_add(sft_suggest_t *s, sft_str_t *candidate);

/*
 * The closest candidate, if it is close enough to be what was meant: at
 * most 2 edits and at most a third of the longer word; else NULL.
 */
sft_str_t *sft_suggest_best(sft_suggest_t *s);


#endif /* _SFT_SUGGEST_H_INCLUDED_ */
