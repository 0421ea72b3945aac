/* Numbers and names from OC_* environment variables, refused by name when
 * malformed. */
#ifndef OC_ENV_H
#define OC_ENV_H

#include "offcoll.h"

/* Reads var as a decimal integer in [min, max] into *out; an unset or empty
 * variable leaves *out as it is. Anything else (a sign, blanks, trailing
 * characters, out of range) is OC_ERR_INVALID_ARG naming var and the range. */
oc_status_t oc_env_uint(const char *var, unsigned long long min, unsigned long long max,
                        unsigned long long *out);

/* Reads var as one of names[0..count) into *out (its index); an unset or
 * empty variable leaves *out as it is. Anything else is OC_ERR_INVALID_ARG
 * naming var and listing the names. */
oc_status_t oc_env_enum(const char *var, const char *const *names, int count, int *out);

#endif
