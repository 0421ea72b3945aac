/* Error reporting shared by every layer: a status plus a per-thread detail. */
#ifndef OC_ERROR_H
#define OC_ERROR_H

#include "offcoll.h"

/* Records a printf-style detail for oc_last_error() and returns status. */
oc_status_t oc_error(oc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends to the current detail (used to add context on the way up). */
void oc_error_append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The calling thread's detail, kept aside while it works for others (the
 * inline engine progresses every operation, whose failures have their own
 * records), so that a call that succeeds leaves the detail as it was; or
 * carried to another thread (the engine's oc_pe_call to its caller). */
typedef struct {
    char text[1024];
} oc_error_saved_t;
void oc_error_save(oc_error_saved_t *saved);
void oc_error_restore(const oc_error_saved_t *saved);

/* The same for the engine's passes, many an operation: the detail is copied
 * aside only when the work between begin and end records one, so a pass
 * that fails nowhere costs no copy. Guards nest; end them in reverse order
 * of their begins, on the thread that began them. */
typedef struct oc_error_guard {
    struct oc_error_guard *outer;
    int kept; /* saved holds the detail as it was at begin */
    oc_error_saved_t saved;
} oc_error_guard_t;
void oc_error_guard_begin(oc_error_guard_t *g);
void oc_error_guard_end(oc_error_guard_t *g);

/* One-line notice on stderr, prefixed "offcoll: ", when verbose (OC_VERBOSE). */
void oc_notice(int verbose, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line on stderr, prefixed "offcoll: warning: ", whatever OC_VERBOSE says:
 * for what the application cannot learn from a status (data lost on the
 * progress thread, a connection that failed). */
void oc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
