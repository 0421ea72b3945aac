#include "oc_env.h"
#include "oc_error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

oc_status_t oc_env_uint(const char *var, unsigned long long min, unsigned long long max,
                        unsigned long long *out)
{
    const char *v = getenv(var);
    char *end;
    unsigned long long x;
    if (v == NULL || *v == '\0')
        return OC_OK;
    errno = 0;
    x = strtoull(v, &end, 10);
    /* strtoull skips blanks and accepts a sign: insist on digits only. */
    if (v[0] < '0' || v[0] > '9' || errno != 0 || *end != '\0' || x < min || x > max)
        return oc_error(OC_ERR_INVALID_ARG, "%s=%s: expected an integer from %llu to %llu", var,
                        v, min, max);
    *out = x;
    return OC_OK;
}

oc_status_t oc_env_enum(const char *var, const char *const *names, int count, int *out)
{
    const char *v = getenv(var);
    int i;
    if (v == NULL || *v == '\0')
        return OC_OK;
    for (i = 0; i < count; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return OC_OK;
        }
    oc_error(OC_ERR_INVALID_ARG, "%s=%s: expected one of", var, v);
    for (i = 0; i < count; i++)
        oc_error_append("%s %s", i ? "," : "", names[i]);
    return OC_ERR_INVALID_ARG;
}
