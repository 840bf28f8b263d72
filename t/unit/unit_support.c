/*
 * unit_support.c: what the storage unit tests set up around the engine.
 *
 * Owns: the settings' defaults for a test, opening the N-zone for a test
 * and a capturing ADD_STAT.  Nothing of the daemon is linked: the
 * settings (settings.c), the clock (clock.c), the item locks
 * (item_locks.c) and append_stat (stat_line.c) are the server's own.
 * Locks: none.
 */
#include "config.h"
#include "unit_support.h"
#include "clock.h"
#include "item_lock.h"
#include "nvm.h"
#include "settings.h"
#include "stat_line.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void unit_nvm_open(size_t size)
{
    char err[256];
    if (nvm_zone.base != NULL) {
        nvm_zone_close(&nvm_zone);
    }
    nvm_config_init(&settings.nvm);
    settings.nvm.size = size;
    if (nvm_zone_open(&settings.nvm, &nvm_zone, err, sizeof(err)) != 0) {
        fprintf(stderr, "cannot open the N-zone: %s\n", err);
        exit(2);
    }
}

void unit_settings_defaults(void)
{
    /* a clock well past memcached's reserved 0 and 1, with room below */
    atomic_store(&current_time, 100);
    process_started = 1000000;
    memset(&settings, 0, sizeof(settings));
    settings.maxbytes = 64 * 1024 * 1024;
    settings.factor = 1.25;
    settings.chunk_size = 48;
    settings.item_size_max = 1024 * 1024;
    settings.slab_page_size = 1024 * 1024;
    settings.slab_chunk_size_max = settings.slab_page_size / 2;
    settings.use_cas = true;
    settings.evict_to_free = 1;
    settings.hash_expand = true;
    settings.lru_crawler = false;
    settings.lru_crawler_sleep = 0;
    settings.lru_crawler_tocrawl = 0;
    /* the server's tier defaults; no N-zone */
    nvm_config_init(&settings.nvm);
    tier_config_init(&settings.tier);
}

void unit_locks_init(unsigned int power)
{
    if (!item_locks_init(power)) {
        fprintf(stderr, "out of memory for item locks\n");
        exit(2);
    }
}

void capture_stat(const char *key, uint16_t klen, const char *val,
                  uint32_t vlen, const void *cookie)
{
    struct stat_capture *cap = (struct stat_capture *)cookie;
    int n = snprintf(cap->buf + cap->len, sizeof(cap->buf) - cap->len,
                     "%.*s %.*s\n", (int)klen, key, (int)vlen, val);
    if (n > 0 && cap->len + (size_t)n < sizeof(cap->buf)) {
        cap->len += (size_t)n;
    }
}

const char *captured_value(const struct stat_capture *cap, const char *key,
                           char *out, size_t outlen)
{
    size_t klen = strlen(key);
    const char *p = cap->buf;
    while (p < cap->buf + cap->len) {
        const char *eol = memchr(p, '\n', (size_t)(cap->buf + cap->len - p));
        if (eol == NULL) {
            break;
        }
        if ((size_t)(eol - p) > klen && memcmp(p, key, klen) == 0
                && p[klen] == ' ') {
            size_t vlen = (size_t)(eol - p) - klen - 1;
            if (vlen >= outlen) {
                vlen = outlen - 1;
            }
            memcpy(out, p + klen + 1, vlen);
            out[vlen] = '\0';
            return out;
        }
        p = eol + 1;
    }
    return NULL;
}
