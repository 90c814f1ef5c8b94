/*
 * sft_string.h -- length-counted strings and bounded formatting helpers.
 */

#ifndef _SFT_STRING_H_INCLUDED_
#define _SFT_STRING_H_INCLUDED_


typedef struct {
    size_t      len;
    u_char     *data;
} sft_str_t;


#define sft_string(str)     { sizeof(str) - 1, (u_char *) str }
#define sft_null_string     { 0, NULL }
#define sft_str_set(str, text)                                               \
    (str)->len = sizeof(text) - 1; (str)->data = (u_char *) text
#define sft_str_null(str)   (str)->len = 0; (str)->data = NULL

/* "%.*s" argument pair for a sft_str_t */
#define SFT_STR_FMT(s)      (int) (s)->len, (char *) (s)->data

#define sft_strncmp(s1, s2, n)  strncmp((const char *) s1, (const char *) s2, n)
#define sft_strcmp(s1, s2)  strcmp((const char *) s1, (const char *) s2)
#define sft_strlen(s)       strlen((const char *) s)
#define sft_memzero(buf, n)     (void) memset(buf, 0, n)
#define sft_memcpy(dst, src, n) (void) memcpy(dst, src, n)
#define sft_cpymem(dst, src, n) (((u_char *) memcpy(dst, src, n)) + (n))
#define sft_memcmp(s1, s2, n)   memcmp(s1, s2, n)

#define sft_str_eq(s, lit)                                                    \
    ((s)->len == sizeof(lit) - 1 && memcmp((s)->data, lit, (s)->len) == 0)

#define sft_str_caseeq(s, lit)                                                \
    ((s)->len == sizeof(lit) - 1                                              \
     && strncasecmp((char *) (s)->data, lit, (s)->len) == 0)


u_char *sft_slprintf(u_char *buf, u_char *last, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
u_char *sft_vslprintf(u_char *buf, u_char *last, const char *fmt,
    va_list args);

sft_int_t sft_atoi(u_char *line, size_t n);
ssize_t sft_parse_size(sft_str_t *line);
off_t sft_parse_offset(sft_str_t *line);
sft_int_t sft_parse_time(sft_str_t *line, sft_uint_t is_sec);

void sft_explicit_memzero(void *buf, size_t n);


#endif /* _SFT_STRING_H_INCLUDED_ */
