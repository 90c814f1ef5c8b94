/*
 * test_suggest.c -- "did you mean": the edit distance (insertions,
 * deletions, substitutions, swaps of neighbours) and which candidate, if
 * any, is close enough to be named.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_suggest.h>
#include "sft_tap.h"


static sft_uint_t
dist(const char *a, const char *b)
{
    return sft_edit_distance((const u_char *) a, strlen(a),
                             (const u_char *) b, strlen(b));
}


/* the candidate suggested for word among the NULL-terminated list, or "" */

static const char *
suggest(const char *word, const char *const *list)
{
    static char     best[SFT_SUGGEST_MAX_LEN + 1];
    sft_str_t       w, c, *b;
    sft_suggest_t   s;

    w.data = (u_char *) word;
    w.len = strlen(word);
    sft_suggest_init(&s, &w);

    for ( /* void */ ; *list; list++) {
        c.data = (u_char *) *list;
        c.len = strlen(*list);
        sft_suggest_add(&s, &c);
    }

    b = sft_suggest_best(&s);
    snprintf(best, sizeof(best), "%.*s", b ? (int) b->len : 0,
             b ? (char *) b->data : "");

    return best;
}


int
main(void)
{
    char  long_word[SFT_SUGGEST_MAX_LEN + 2];

    static const char *const  directives[] = {
        "listen", "storage", "server", "sendfile", "splice",
        "worker_processes", "worker_connections", NULL
    };

    printf("1..14\n");

    ok(dist("listen", "listen") == 0, "equal words: 0");
    ok(dist("", "abc") == 3 && dist("abc", "") == 3, "from nothing: length");
    ok(dist("listne", "listen") == 1, "swapped neighbours: 1");
    ok(dist("lsten", "listen") == 1, "a letter missing: 1");
    ok(dist("listenn", "listen") == 1, "a letter too many: 1");
    ok(dist("lusten", "listen") == 1, "a letter changed: 1");
    ok(dist("kitten", "sitting") == 3, "kitten, sitting: 3");
    ok(dist("ca", "abc") == 3, "no swap across an insertion: 3");

    memset(long_word, 'a', sizeof(long_word) - 1);
    long_word[sizeof(long_word) - 1] = '\0';
    ok(dist(long_word, "a") == SFT_SUGGEST_MAX_LEN + 1,
       "a word over the limit is compared with nothing");

    ok(strcmp(suggest("listne", directives), "listen") == 0,
       "listne: listen");
    ok(strcmp(suggest("worker_conections", directives),
              "worker_connections") == 0,
       "worker_conections: worker_connections");
    ok(strcmp(suggest("foo", directives), "") == 0,
       "foo: nothing close enough");
    ok(strcmp(suggest("sto", directives), "") == 0,
       "sto: four edits from storage, nothing");
    ok(strcmp(suggest("listen", directives), "") == 0,
       "a known word: no suggestion");

    return failed ? 1 : 0;
}
