/*
 * sft_cidr.h -- networks: user allow lists, ban exemptions, pasv_address
 * by client network, proxy_protocol_from.
 */

#ifndef _SFT_CIDR_H_INCLUDED_
#define _SFT_CIDR_H_INCLUDED_


typedef struct {
    sft_uint_t         family;         /* AF_INET or AF_INET6 */
    u_char             addr[16];
    u_char             mask[16];
    sft_str_t          text;
} sft_cidr_t;


sft_int_t sft_cidr_parse(sft_str_t *text, sft_cidr_t *cidr);
sft_uint_t sft_cidr_match(sft_cidr_t *cidr, struct sockaddr *sa);
char *sft_cidr_conf_add(sft_conf_t *cf, sft_array_t *list);


#endif /* _SFT_CIDR_H_INCLUDED_ */
