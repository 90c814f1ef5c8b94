/*
 * sft_tap.h -- the Test Anything Protocol for the C unit tests: ok() prints
 * one numbered result; "failed" tells main() what to return.
 */

#ifndef _SFT_TAP_H_INCLUDED_
#define _SFT_TAP_H_INCLUDED_

#include <stdio.h>


static unsigned long  tests;
static unsigned long  failed;


static void
ok(int cond, const char *name)
{
    tests++;

    if (!cond) {
        failed++;
    }

    printf("%sok %lu - %s\n", cond ? "" : "not ", tests, name);
    fflush(stdout);
}


#endif /* _SFT_TAP_H_INCLUDED_ */
