/*
 * sft_conf_doc.h -- the directive reference: every directive of a cycle's
 * modules with its context, syntax, default and description, as
 * "siftpd --directives" prints it for "make docs".
 */

#ifndef _SFT_CONF_DOC_H_INCLUDED_
#define _SFT_CONF_DOC_H_INCLUDED_


#include <sft_config.h>
#include <sft_core.h>


/*
 * One line a directive, fields separated by tabs: module, context (a
 * comma-separated list), name, syntax, default, description.
 */
sft_int_t sft_conf_doc_print(sft_cycle_t *cycle, FILE *out);


#endif /* _SFT_CONF_DOC_H_INCLUDED_ */
