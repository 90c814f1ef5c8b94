/*
 * sft_suggest.c -- "did you mean": the edit distance between two words and
 * the pick of the closest known word to a misspelt one.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_suggest.h>


sft_uint_t
sft_edit_distance(const u_char *a, size_t alen, const u_char *b, size_t blen)
{
    size_t       i, j;
    sft_uint_t   rows[3][SFT_SUGGEST_MAX_LEN + 1], *prev2, *prev, *cur, *t;
    sft_uint_t   d;

    if (alen > SFT_SUGGEST_MAX_LEN || blen > SFT_SUGGEST_MAX_LEN) {
        return SFT_SUGGEST_MAX_LEN + 1;
    }

    prev2 = rows[0];
    prev = rows[1];
    cur = rows[2];

    for (j = 0; j <= blen; j++) {
        prev[j] = j;
    }

    for (i = 1; i <= alen; i++) {
        cur[0] = i;

        for (j = 1; j <= blen; j++) {
            d = prev[j - 1] + (a[i - 1] != b[j - 1]);
            d = sft_min(d, prev[j] + 1);
            d = sft_min(d, cur[j - 1] + 1);

            if (i > 1 && j > 1 && a[i - 1] == b[j - 2]
                && a[i - 2] == b[j - 1])
            {
                d = sft_min(d, prev2[j - 2] + 1);
            }

            cur[j] = d;
        }

        t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }

    return prev[blen];
}


void
sft_suggest_init(sft_suggest_t *s, sft_str_t *word)
{
    s->word = *word;
    s->best.len = 0;
    s->best.data = NULL;
    s->distance = SFT_SUGGEST_MAX_LEN + 1;
}


void
sft_suggest_add(sft_suggest_t *s, sft_str_t *candidate)
{
    sft_uint_t  d;

    d = sft_edit_distance(s->word.data, s->word.len, candidate->data,
                          candidate->len);

    if (d < s->distance) {
        s->distance = d;
        s->best = *candidate;
    }
}


sft_str_t *
sft_suggest_best(sft_suggest_t *s)
{
    size_t  longer;

    longer = sft_max(s->word.len, s->best.len);

    if (s->best.len == 0 || s->distance == 0 || s->distance > 2
        || s->distance * 3 > longer)
    {
        return NULL;
    }

    return &s->best;
}
