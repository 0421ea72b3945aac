/* Error reporting of the AWP-ODC patch: a failing call returns -1 and leaves
 * a message naming the problem (the scenario key, the argument, the call that
 * failed) for the calling thread, as offcoll's oc_last_error does. */
#ifndef AWP_ERROR_H
#define AWP_ERROR_H

/* Records the message and returns -1, so that "return awp_fail(...)" reads well. */
int awp_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The last message recorded on this thread ("" if none). */
const char *awp_last_error(void);

#endif
