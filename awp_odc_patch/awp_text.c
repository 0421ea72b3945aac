#include "awp_text.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "awp_error.h"

int awp_read_line(FILE *f, char *buf, int size, const char *path, int *lineno)
{
    int c, n = 0;
    errno = 0;
    while ((c = getc(f)) != EOF && c != '\n') {
        /* the rest of the line would be invisible to the string functions */
        if (c == '\0')
            return awp_fail("%s:%d: a NUL byte in the line", path, *lineno + 1);
        if (n == size - 1)
            return awp_fail("%s:%d: line longer than %d characters", path, *lineno + 1,
                            size - 1);
        buf[n++] = (char)c;
    }
    if (c == EOF && ferror(f)) /* a folder, say */
        return awp_fail("%s: cannot read: %s", path, strerror(errno));
    if (c == EOF && n == 0)
        return 0;
    ++*lineno;
    if (n > 0 && buf[n - 1] == '\r') /* CRLF */
        n--;
    buf[n] = '\0';
    /* a line break of old Mac files, which would join two lines */
    if (memchr(buf, '\r', (size_t)n) != NULL)
        return awp_fail("%s:%d: a carriage return inside the line", path, *lineno);
    return 1;
}

/* The number at the start of p (after blanks); NULL if it is none. */
static const char *parse_number(const char *p, double *out)
{
    size_t len;
    char *end;
    p += strspn(p, " \t");
    len = strcspn(p, " \t");
    if (len == 0 || strspn(p, "+-.0123456789eE") < len)
        return NULL;
    errno = 0;
    *out = strtod(p, &end);
    /* "20.0.92" is not a number, nor two */
    return end == p + len && errno == 0 && isfinite(*out) ? end : NULL;
}

int awp_parse_doubles(const char *v, double *out, int n)
{
    const char *p = v;
    int i;
    for (i = 0; i < n && p != NULL; i++)
        p = parse_number(p, &out[i]);
    if (p == NULL || strspn(p, " \t") != strlen(p))
        return awp_fail("expected %d number%s, got '%s'", n, n > 1 ? "s" : "", v);
    return 0;
}
