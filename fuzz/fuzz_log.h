/*
 * fuzz_log.h -- the log of the libFuzzer targets: every level, written to
 * /dev/null, so messages are formatted (and their handler runs) without
 * flooding the fuzzer's output.
 */

#ifndef _FUZZ_LOG_H_INCLUDED_
#define _FUZZ_LOG_H_INCLUDED_


#include <assert.h>


static sft_log_file_t  fuzz_log_file;
static sft_log_t       fuzz_log;


static void
fuzz_log_init(sft_log_handler_pt handler)
{
    fuzz_log_file.fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    assert(fuzz_log_file.fd != -1);
    fuzz_log_file.plain = 1;

    fuzz_log.file = &fuzz_log_file;
    fuzz_log.log_level = SFT_LOG_DEBUG;
    fuzz_log.handler = handler;
}


#endif /* _FUZZ_LOG_H_INCLUDED_ */
