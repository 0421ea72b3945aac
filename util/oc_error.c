#include "oc_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[sizeof(((oc_error_saved_t *)0)->text)];
static _Thread_local oc_error_guard_t *guard; /* the innermost, NULL outside any */

/* Before last_error changes: the innermost guard keeps what it held. */
static void will_write(void)
{
    if (guard != NULL && !guard->kept) {
        oc_error_save(&guard->saved);
        guard->kept = 1;
    }
}

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
    will_write();
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return status;
}

void oc_error_append(const char *fmt, ...)
{
    size_t len;
    va_list ap;
    will_write();
    len = strlen(last_error);
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
    will_write();
    memcpy(last_error, saved->text, strlen(saved->text) + 1);
}

void oc_error_guard_begin(oc_error_guard_t *g)
{
    g->outer = guard;
    g->kept = 0;
    guard = g;
}

/* An inner guard's end puts back what its begin saw, which is what any
 * outer guard that kept nothing would put back too. */
void oc_error_guard_end(oc_error_guard_t *g)
{
    guard = g->outer;
    if (g->kept)
        memcpy(last_error, g->saved.text, strlen(g->saved.text) + 1);
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
