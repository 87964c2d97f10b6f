/* Forced into lib/string.c for host builds (-include) so that its functions get
 * names of their own and can be tested beside the C library's. */
#pragma once
#define memset sprig_memset
#define memcpy sprig_memcpy
#define memmove sprig_memmove
#define memcmp sprig_memcmp
#define strlen sprig_strlen
#define strnlen sprig_strnlen
#define strcmp sprig_strcmp
#define strncmp sprig_strncmp
#define strchr sprig_strchr
#define strrchr sprig_strrchr
