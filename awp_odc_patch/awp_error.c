#include "awp_error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[512];

int awp_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return -1;
}

const char *awp_last_error(void)
{
    return last_error;
}
