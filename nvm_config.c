/*
 * nvm_config.c: the N-zone's options (nvm_config.h): their defaults and
 * the parsers of their values, shared by the server's settings and the
 * unit tests.  No locks: called at start-up only.
 */
#include "config.h"
#include "nvm_config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

void nvm_config_init(struct nvm_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->node = -1;
    cfg->dram_node = -1;
}

/* decimal digits only (strtoull alone would take "-1", " 5" and "0x10") */
static bool parse_decimal(const char *s, const char **end, uint64_t *out) {
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *stop;
    unsigned long long v = strtoull(s, &stop, 10);
    if (errno == ERANGE)
        return false;
    *end = stop;
    *out = v;
    return true;
}

static int size_suffix_shift(char c) {
    switch (tolower((unsigned char)c)) {
    case 'k': return 10;
    case 'm': return 20;
    case 'g': return 30;
    case 't': return 40;
    default: return -1;
    }
}

bool nvm_parse_size(const char *s, size_t *out) {
    const char *end;
    uint64_t v;
    if (s == NULL || !parse_decimal(s, &end, &v) || v == 0)
        return false;
    int shift = 0;
    if (*end != '\0') {
        shift = size_suffix_shift(*end);
        if (shift < 0 || end[1] != '\0')
            return false;
    }
    if (v > (uint64_t)(SIZE_MAX >> shift))
        return false;
    *out = (size_t)(v << shift);
    return true;
}

bool nvm_parse_emulate(const char *s, uint32_t *read_ns, uint32_t *write_ns) {
    const char *end;
    uint64_t r, w;
    if (s == NULL || !parse_decimal(s, &end, &r) || *end != ':')
        return false;
    if (!parse_decimal(end + 1, &end, &w) || *end != '\0')
        return false;
    if (r > UINT32_MAX || w > UINT32_MAX)
        return false;
    *read_ns = (uint32_t)r;
    *write_ns = (uint32_t)w;
    return true;
}

bool nvm_parse_node(const char *s, int *node, bool *is_auto) {
    if (s == NULL)
        return false;
    if (strcmp(s, "auto") == 0) {
        *is_auto = true;
        *node = -1;
        return true;
    }
    const char *end;
    uint64_t v;
    if (!parse_decimal(s, &end, &v) || *end != '\0' || v > INT_MAX)
        return false;
    *is_auto = false;
    *node = (int)v;
    return true;
}
