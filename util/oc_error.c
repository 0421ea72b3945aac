#include "oc_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[sizeof(((oc_error_saved_t *)0)->text)];

const char *oc_status_string(oc_status_t status)
{
    switch (status) {
    case OC_OK:                return "OC_OK: success";
    case OC_INPROGRESS:        return "OC_INPROGRESS: operation in progress";
    case OC_ERR_INVALID_ARG:   return "OC_ERR_INVALID_ARG: invalid argument";
    case OC_ERR_NO_MEMORY:     return "OC_ERR_NO_MEMORY: out of memory";
    case OC_ERR_BUSY:          return "OC_ERR_BUSY: request or object is active";
    case OC_ERR_TIMEOUT:       return "OC_ERR_TIMEOUT: timed out";
    case OC_ERR_UNAVAILABLE:   return "OC_ERR_UNAVAILABLE: not available on this system";
    case OC_ERR_BACKEND:       return "OC_ERR_BACKEND: network layer error";
    case OC_ERR_MISMATCH:      return "OC_ERR_MISMATCH: peers disagree";
    case OC_ERR_OUT_OF_BOUNDS: return "OC_ERR_OUT_OF_BOUNDS: access outside a buffer";
    case OC_ERR_INTERNAL:      return "OC_ERR_INTERNAL: internal error";
    }
    return "unknown oc_status_t value";
}

const char *oc_last_error(void)
{
    return last_error;
}

oc_status_t oc_set_last_error(oc_status_t status, const char *detail)
{
    return oc_error(status, "%s", detail != NULL ? detail : "");
}

oc_status_t oc_error(oc_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return status;
}

void oc_error_append(const char *fmt, ...)
{
    size_t len = strlen(last_error);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error + len, sizeof(last_error) - len, fmt, ap);
    va_end(ap);
}

void oc_error_save(oc_error_saved_t *saved)
{
    memcpy(saved->text, last_error, strlen(last_error) + 1);
}

void oc_error_restore(const oc_error_saved_t *saved)
{
    memcpy(last_error, saved->text, strlen(saved->text) + 1);
}

static void print_line(const char *prefix, const char *fmt, va_list ap)
{
    fputs(prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void oc_notice(int verbose, const char *fmt, ...)
{
    va_list ap;
    if (!verbose)
        return;
    va_start(ap, fmt);
    print_line("offcoll: ", fmt, ap);
    va_end(ap);
}

void oc_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    print_line("offcoll: warning: ", fmt, ap);
    va_end(ap);
}
