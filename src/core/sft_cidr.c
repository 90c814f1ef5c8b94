/*
 * sft_cidr.c -- networks written as ADDR[/BITS], IPv4 or IPv6, and whether
 * an address lies in one (an IPv4 network also holds the IPv4-mapped IPv6
 * addresses); the networks a directive lists.
 */

#include <sft_config.h>
#include <sft_core.h>
#include <sft_cidr.h>


sft_int_t
sft_cidr_parse(sft_str_t *text, sft_cidr_t *cidr)
{
    u_char      buf[64], *slash;
    sft_int_t   bits, max, i;

    if (text->len == 0 || text->len >= sizeof(buf)) {
        return SFT_ERROR;
    }

    sft_memcpy(buf, text->data, text->len);
    buf[text->len] = '\0';

    sft_memzero(cidr, sizeof(sft_cidr_t));
    cidr->text = *text;

    slash = (u_char *) strchr((char *) buf, '/');

    if (slash) {
        *slash++ = '\0';
    }

    if (inet_pton(AF_INET, (char *) buf, cidr->addr) == 1) {
        cidr->family = AF_INET;
        max = 32;

    } else if (inet_pton(AF_INET6, (char *) buf, cidr->addr) == 1) {
        cidr->family = AF_INET6;
        max = 128;

    } else {
        return SFT_ERROR;
    }

    bits = max;

    if (slash) {
        bits = sft_atoi(slash, sft_strlen(slash));

        if (bits == SFT_ERROR || bits > max) {
            return SFT_ERROR;
        }
    }

    for (i = 0; i < max / 8; i++) {
        if (bits >= 8) {
            cidr->mask[i] = 0xff;
            bits -= 8;

        } else {
            cidr->mask[i] = (u_char) (0xff00 >> bits);
            bits = 0;
        }

        cidr->addr[i] &= cidr->mask[i];
    }

    return SFT_OK;
}


sft_uint_t
sft_cidr_match(sft_cidr_t *cidr, struct sockaddr *sa)
{
    u_char               *a;
    sft_uint_t            i, n;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    if (sa->sa_family == AF_INET) {
        if (cidr->family != AF_INET) {
            return 0;
        }

        sin = (struct sockaddr_in *) sa;
        a = (u_char *) &sin->sin_addr;
        n = 4;

    } else if (sa->sa_family == AF_INET6) {
        sin6 = (struct sockaddr_in6 *) sa;
        a = sin6->sin6_addr.s6_addr;
        n = 16;

        if (cidr->family == AF_INET) {
            if (!IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
                return 0;
            }

            a += 12;
            n = 4;
        }

    } else {
        return 0;
    }

    for (i = 0; i < n; i++) {
        if ((a[i] & cidr->mask[i]) != cidr->addr[i]) {
            return 0;
        }
    }

    return 1;
}

/* "DIRECTIVE NETWORK ...": each network into list, a bad one at its line */

char *
sft_cidr_conf_add(sft_conf_t *cf, sft_array_t *list)
{
    sft_str_t   *value;
    sft_uint_t   i;
    sft_cidr_t  *cidr;

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        cidr = sft_array_push(list);
        if (cidr == NULL) {
            return SFT_CONF_ERROR;
        }

        if (sft_cidr_parse(&value[i], cidr) != SFT_OK) {
            sft_conf_log_error(SFT_LOG_EMERG, cf, 0,
                               "invalid network \"%.*s\" in \"%.*s\"",
                               SFT_STR_FMT(&value[i]),
                               SFT_STR_FMT(&value[0]));
            return SFT_CONF_ERROR;
        }
    }

    return SFT_CONF_OK;
}
