/*
 * sft_xfer_eol.h -- the line-ending filter of text transfers: LF to CRLF
 * for downloads, CRLF to LF for uploads.
 */

#ifndef _SFT_XFER_EOL_H_INCLUDED_
#define _SFT_XFER_EOL_H_INCLUDED_


size_t sft_xfer_eol_to_crlf(const u_char *in, size_t len, size_t *used,
    u_char *out, size_t size);
size_t sft_xfer_eol_from_crlf(u_char *dst, const u_char *src, size_t len,
    sft_uint_t *cr);


#endif /* _SFT_XFER_EOL_H_INCLUDED_ */
