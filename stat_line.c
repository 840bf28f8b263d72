/*
 * stat_line.c: formats one `stats` line for an ADD_STAT callback
 * (stat_line.h).  No state, no locks.
 */
#include "config.h"
#include "stat_line.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void append_stat(const char *name, ADD_STAT add_stats, void *c,
                 const char *fmt, ...)
{
    char val[256];
    va_list ap;
    va_start(ap, fmt);
    int vlen = vsnprintf(val, sizeof(val), fmt, ap);
    va_end(ap);
    if (vlen < 0) {
        return;
    }
    if ((size_t)vlen >= sizeof(val)) {
        vlen = sizeof(val) - 1;
    }
    add_stats(name, strlen(name), val, vlen, c);
}
