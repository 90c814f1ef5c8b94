/*
 * sft_perm.h -- what a user may do, as one bitmask shared by the user store,
 * the virtual filesystem and every protocol.
 */

#ifndef _SFT_PERM_H_INCLUDED_
#define _SFT_PERM_H_INCLUDED_


#define SFT_PERM_LIST        0x0001
#define SFT_PERM_DOWNLOAD    0x0002
#define SFT_PERM_UPLOAD      0x0004
#define SFT_PERM_OVERWRITE   0x0008
#define SFT_PERM_DELETE      0x0010
#define SFT_PERM_RENAME      0x0020
#define SFT_PERM_MKDIR       0x0040
#define SFT_PERM_RMDIR       0x0080
#define SFT_PERM_CHMOD       0x0100

#define SFT_PERM_READ        (SFT_PERM_LIST|SFT_PERM_DOWNLOAD)
#define SFT_PERM_ALL         0x01ff

/* names as written in the user store, in bit order */
#define SFT_PERM_NAMES                                                        \
    { "list", "download", "upload", "overwrite", "delete", "rename",          \
      "mkdir", "rmdir", "chmod", NULL }


#endif /* _SFT_PERM_H_INCLUDED_ */
