/*
 * What the scenario and layers parsers share, so that both refuse the same
 * things: lines read whole, and numbers in plain decimal notation.
 */
#ifndef AWP_TEXT_H
#define AWP_TEXT_H

#include <stdio.h>

/* Reads the next whole line of f into buf, without its line break (LF or
 * CRLF), and counts it in *lineno. Returns 1, 0 at the end of the file, or
 * -1 with the reason ("PATH:LINE: ..."): a line longer than size - 1
 * characters (fgets would hand its tail back as the next line), a NUL byte
 * or a carriage return inside it (which would hide or join text), a file
 * that cannot be read (a folder). */
int awp_read_line(FILE *f, char *buf, int size, const char *path, int *lineno);

/* Exactly n numbers in v, separated by blanks: digits with an optional sign,
 * point and exponent ("-1.5e3"), finite. strtod alone would also take "0x1c",
 * "inf" and "nan". */
int awp_parse_doubles(const char *v, double *out, int n);

#endif
