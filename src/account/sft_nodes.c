/*
 * sft_nodes.c -- where the list of nodes comes from: the fleet store that
 * registered itself, or none.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_nodes.h>


static sft_int_t  (*sft_nodes_store)(sft_nodes_req_t *req);


void
sft_nodes_lister(sft_int_t (*list)(sft_nodes_req_t *req))
{
    sft_nodes_store = list;
}


sft_int_t
sft_nodes_list(sft_nodes_req_t *req)
{
    if (sft_nodes_store == NULL) {
        return SFT_DECLINED;
    }

    return sft_nodes_store(req);
}
