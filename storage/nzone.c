/*
 * nzone.c: the N-zone's persistent layout (nzone.h; doc/restart.md "The
 * N-zone on disk").
 *
 * Owns the superblock (zone offset 0) and the page table (offset
 * NZONE_TABLE_OFF, one byte per zone page: the class the page was given
 * to, 0 for none), the decision between a warm and a cold start, the
 * format of a cold one, the words the running server updates (the run
 * state, the clock and cas at an orderly stop, and flush_all), and the
 * mark a run that does not use the zone leaves on it (nzone_disown).
 *
 * Format, in the order that keeps a crash during it harmless: the magic
 * is cleared first and written last, so a half-written superblock is
 * never taken for a zone; the page table is zeroed, so no page of an
 * earlier layout counts as given.  Each layout draws a random seal, the
 * seed of every N item's checksum (nitem.h), which keeps every item of an
 * earlier layout out of a later one's recovery; the seals of the layouts
 * before it are kept, so that recovery can tell their remnants (a format
 * does not wipe the pages) from corrupt items.
 *
 * The run state (how the last run ended, its clock and cas counter,
 * flush_all's state) is kept twice, each copy one line with a sequence
 * number and a CRC-32C.  Every update writes both copies in turn, each
 * durable before the next: a crash tears at most the one being written
 * and leaves the other whole, and once an update has returned (flush_all
 * replies after it) both hold it, so a line the medium later loses does
 * not undo it.  Attach takes the valid copy with the higher sequence.
 *
 * Every byte goes through nvm.h's counted accessors (class 0) and is
 * made durable with nvm_persist in the order recovery relies on.
 *
 * Locks: see nzone.h; the cached copy of the static superblock fields is
 * written only by nzone_attach; run_lock orders the updates of the run
 * state (flush_all may run on several workers at once).
 */
#include "config.h"
#include "nzone.h"

#include "crc32c.h"
#include "nvm.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define NZONE_SUPER_BYTES 4096
#define NZONE_TABLE_OFF NZONE_SUPER_BYTES
#define NZONE_BYTE_ORDER 0x01020304u

static const char nzone_magic[8] = { 'T', 'I', 'E', 'R', 'N', 'Z', 'O',
                                     'N' };

enum nzone_state {
    STATE_RUNNING = 1,
    STATE_STOPPED = 2
};

/* The superblock's fields up to `seal` are laid out as in version 1, so
 * that a format can read the seal of a zone of either version. */
struct nzone_super {
    char magic[8];
    uint32_t layout_version;
    uint32_t byte_order;          /* NZONE_BYTE_ORDER as the writer saw it */
    uint64_t zone_bytes;
    uint64_t page_size;
    uint32_t item_size_max;
    uint32_t chunk_size_min;
    uint64_t factor_millionths;
    uint32_t nclasses;
    uint32_t item_header_bytes;
    uint32_t chunk_sizes[MAX_NUMBER_OF_SLAB_CLASSES];
    int64_t epoch;                /* process_started of the formatting run */
    uint32_t seal;
    uint32_t earlier_seals[NZONE_EARLIER_SEALS]; /* 0: none */
    uint32_t checksum;            /* CRC-32C of every field above */
};

/* The words the running server updates, one copy per line. */
struct nzone_run {
    uint64_t seq;                 /* the newer copy has the higher; 0: none */
    uint64_t max_cas;             /* cas counter at the last orderly stop */
    uint64_t oldest_cas;          /* flush_all */
    uint32_t state;
    uint32_t last_time;           /* clock at the last orderly stop */
    uint32_t oldest_live;         /* flush_all */
    uint32_t checksum;            /* CRC-32C, seeded with the layout's
                                   * seal, of the fields above */
};

#define NZONE_RUN_OFF 1024        /* the copies: two lines from here */
#define NZONE_RUN_COPIES 2

_Static_assert(sizeof(struct nzone_super) <= NZONE_RUN_OFF,
               "the superblock ends before the run state");
_Static_assert(sizeof(struct nzone_run) <= NVM_LINE_SIZE,
               "a copy of the run state is one line");
_Static_assert(NZONE_RUN_OFF + NZONE_RUN_COPIES * NVM_LINE_SIZE
               <= NZONE_SUPER_BYTES, "the run state fits the block");

static struct {
    bool attached;
    uint32_t seal;
    uint32_t earlier_seals[NZONE_EARLIER_SEALS];
    uint64_t pages;
    struct nzone_super *super;    /* in the zone */
    struct nzone_run *run;        /* in the zone: NZONE_RUN_COPIES */
    uint8_t *table;               /* in the zone */
    struct nzone_run cur;         /* the state both copies hold */
} nz;

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t static_checksum(const struct nzone_super *s)
{
    return crc32c(0, s, offsetof(struct nzone_super, checksum));
}

static uint32_t run_checksum(const struct nzone_run *r, uint32_t seal)
{
    return crc32c(seal, r, offsetof(struct nzone_run, checksum));
}

static uint64_t factor_millionths(double factor)
{
    return (uint64_t)(factor * 1e6 + 0.5);
}

static void write_word(void *dst, const void *src, size_t n)
{
    nvm_write(dst, src, n);
    nvm_persist(dst, n);
}

/* ---- start-up ---- */

static bool geometry_mismatch(const struct nzone_super *s,
                              const struct nzone_geometry *g,
                              char *why, size_t len)
{
    if (s->zone_bytes != g->zone_bytes) {
        snprintf(why, len, "nvm_size changed (was %llu bytes, now %llu)",
                 (unsigned long long)s->zone_bytes,
                 (unsigned long long)g->zone_bytes);
    } else if (s->page_size != g->page_size) {
        snprintf(why, len, "slab_page_size changed (was %llu, now %llu)",
                 (unsigned long long)s->page_size,
                 (unsigned long long)g->page_size);
    } else if (s->item_size_max != g->item_size_max) {
        snprintf(why, len, "-I changed (was %u, now %u)", s->item_size_max,
                 g->item_size_max);
    } else if (s->chunk_size_min != g->chunk_size_min) {
        snprintf(why, len, "-n changed (was %u, now %u)", s->chunk_size_min,
                 g->chunk_size_min);
    } else if (s->factor_millionths != factor_millionths(g->factor)) {
        snprintf(why, len, "-f changed (was %.2f, now %.2f)",
                 (double)s->factor_millionths / 1e6, g->factor);
    } else if (s->nclasses != g->nclasses
               || memcmp(s->chunk_sizes, g->chunk_sizes,
                         sizeof(g->chunk_sizes)) != 0) {
        snprintf(why, len, "the slab classes changed (slab_chunk_max)");
    } else if (s->item_header_bytes != g->item_header_bytes) {
        snprintf(why, len, "the item header changed (was %u bytes, now %u)",
                 s->item_header_bytes, g->item_header_bytes);
    } else {
        return false;
    }
    return true;
}

/* Given pages form a prefix of the table (pages are given in order and
 * each entry is durable before its page is used), of known classes; the
 * metadata's own pages are never given. */
static bool table_is_sane(const struct nzone_geometry *g, uint64_t first,
                          char *why, size_t len)
{
    uint8_t buf[4096];
    bool ended = false;
    for (uint64_t base = 0; base < nz.pages; base += sizeof(buf)) {
        size_t n = nz.pages - base < sizeof(buf) ? (size_t)(nz.pages - base)
                                                 : sizeof(buf);
        nvm_read(buf, &nz.table[base], n);
        for (size_t i = 0; i < n; i++) {
            uint64_t page = base + i;
            unsigned int id = buf[i];
            if (id == 0) {
                ended = ended || page >= first;
                continue;
            }
            if (page < first || ended || id > g->nclasses
                    || g->chunk_sizes[id] == 0) {
                snprintf(why, len, "the page table is corrupt at page %llu",
                         (unsigned long long)page);
                return false;
            }
        }
    }
    return true;
}

/* The valid copy of the run state with the higher sequence, or -1 when
 * neither is valid. */
static int newest_run(const struct nzone_run *copies, uint32_t seal)
{
    int best = -1;
    for (int i = 0; i < NZONE_RUN_COPIES; i++) {
        const struct nzone_run *r = &copies[i];
        if (r->seq != 0 && r->checksum == run_checksum(r, seal)
                && (best < 0 || r->seq > copies[best].seq)) {
            best = i;
        }
    }
    return best;
}

static void read_runs(struct nzone_run *copies)
{
    nvm_read(copies, nz.run, NZONE_RUN_COPIES * sizeof(*copies));
}

/* Why the zone cannot be used warm ("" when it can); true when it holds
 * no layout at all (a new zone). */
static bool judge(const struct nzone_geometry *g, uint64_t first,
                  char *why, size_t len)
{
    struct nzone_super s;
    struct nzone_run runs[NZONE_RUN_COPIES];
    static const char zeros[8];
    nvm_read(&s, nz.super, sizeof(s));
    read_runs(runs);
    why[0] = '\0';
    if (memcmp(s.magic, zeros, sizeof(zeros)) == 0) {
        snprintf(why, len, "it holds no N-zone yet");
        return true;
    }
    if (memcmp(s.magic, nzone_magic, sizeof(nzone_magic)) != 0) {
        snprintf(why, len, "it is not a tiercached N-zone (unknown header)");
    } else if (s.byte_order != NZONE_BYTE_ORDER) {
        snprintf(why, len, "it was written with another byte order");
    } else if (s.layout_version != NZONE_LAYOUT_VERSION) {
        snprintf(why, len, "its layout version is %u; this build reads %u",
                 s.layout_version, NZONE_LAYOUT_VERSION);
    } else if (s.checksum != static_checksum(&s) || s.seal == 0) {
        snprintf(why, len, "its superblock is corrupt (checksum)");
    } else if (newest_run(runs, s.seal) < 0) {
        /* neither copy: whether a flush_all was acknowledged is unknown,
         * so no item can be trusted to be live */
        snprintf(why, len, "its run state is corrupt (checksum)");
    } else if (!geometry_mismatch(&s, g, why, len)) {
        table_is_sane(g, first, why, len);
    }
    return false;
}

static bool is_earlier_seal(const uint32_t *earlier, uint32_t v)
{
    for (int i = 0; i < NZONE_EARLIER_SEALS; i++) {
        if (earlier[i] != 0 && earlier[i] == v) {
            return true;
        }
    }
    return false;
}

/* Never 0, never an earlier layout's: none of their items can match. */
static uint32_t random_seal(const uint32_t *earlier)
{
    uint32_t v = 0;
    while (v == 0 || is_earlier_seal(earlier, v)) {
        if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
            v = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16) ^ v;
        }
    }
    return v;
}

/* The seals of the layout the zone holds and of those before it, newest
 * first, as a new layout's earlier seals (version 1 kept only its own). */
static void seals_before_format(const struct nzone_super *s, uint32_t *out)
{
    memset(out, 0, NZONE_EARLIER_SEALS * sizeof(*out));
    if (memcmp(s->magic, nzone_magic, sizeof(s->magic)) != 0
            || s->byte_order != NZONE_BYTE_ORDER) {
        return;
    }
    out[0] = s->seal;
    if (s->layout_version == NZONE_LAYOUT_VERSION) {
        memcpy(out + 1, s->earlier_seals,
               (NZONE_EARLIER_SEALS - 1) * sizeof(*out));
    }
}

/* Write both copies of the run state r, one after the other, each
 * durable before the next (nzone.c's header).  Caller holds run_lock or
 * runs alone (start-up, the stop). */
static void write_runs(struct nzone_run r)
{
    for (int i = 0; i < NZONE_RUN_COPIES; i++) {
        r.seq = nz.cur.seq + 1;
        r.checksum = run_checksum(&r, nz.seal);
        nvm_write(&nz.run[i], &r, sizeof(r));
        nvm_persist(&nz.run[i], sizeof(r));
        nz.cur = r;
    }
}

static void format(const struct nzone_geometry *g, time_t epoch)
{
    struct nzone_super s;
    nvm_read(&s, nz.super, sizeof(s));
    uint32_t earlier[NZONE_EARLIER_SEALS];
    seals_before_format(&s, earlier);
    memset(&s, 0, sizeof(s));
    write_word(nz.super->magic, s.magic, sizeof(s.magic));
    nvm_memset(nz.table, 0, nz.pages);
    nvm_persist(nz.table, nz.pages);
    s.layout_version = NZONE_LAYOUT_VERSION;
    s.byte_order = NZONE_BYTE_ORDER;
    s.zone_bytes = g->zone_bytes;
    s.page_size = g->page_size;
    s.item_size_max = g->item_size_max;
    s.chunk_size_min = g->chunk_size_min;
    s.factor_millionths = factor_millionths(g->factor);
    s.nclasses = g->nclasses;
    s.item_header_bytes = g->item_header_bytes;
    memcpy(s.chunk_sizes, g->chunk_sizes, sizeof(s.chunk_sizes));
    s.epoch = (int64_t)epoch;
    s.seal = random_seal(earlier);
    memcpy(s.earlier_seals, earlier, sizeof(earlier));
    memcpy(s.magic, nzone_magic, sizeof(nzone_magic));
    s.checksum = static_checksum(&s);
    nvm_write((char *)nz.super + sizeof(s.magic), (char *)&s + sizeof(s.magic),
              sizeof(s) - sizeof(s.magic));
    nvm_persist(nz.super, sizeof(s));
    nz.seal = s.seal;
    memcpy(nz.earlier_seals, earlier, sizeof(earlier));
    memset(&nz.cur, 0, sizeof(nz.cur));
    write_runs((struct nzone_run){ .state = STATE_RUNNING });
    write_word(nz.super->magic, nzone_magic, sizeof(nzone_magic));
}

static void read_warm_state(struct nzone_attach_result *out)
{
    struct nzone_super s;
    struct nzone_run runs[NZONE_RUN_COPIES];
    nvm_read(&s, nz.super, sizeof(s));
    read_runs(runs);
    nz.seal = s.seal;
    memcpy(nz.earlier_seals, s.earlier_seals, sizeof(nz.earlier_seals));
    nz.cur = runs[newest_run(runs, s.seal)];    /* judge found one */
    out->start = nz.cur.state == STATE_STOPPED ? NZONE_WARM_CLEAN
                                               : NZONE_WARM_CRASH;
    out->epoch = (time_t)s.epoch;
    out->last_time = nz.cur.last_time;
    out->max_cas = nz.cur.max_cas;
    out->oldest_live = nz.cur.oldest_live;
    out->oldest_cas = nz.cur.oldest_cas;
}

int nzone_attach(const struct nzone_geometry *g, enum tier_restart mode,
                 bool persistent, time_t epoch,
                 struct nzone_attach_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    memset(&nz, 0, sizeof(nz));
    nz.pages = g->zone_bytes / g->page_size;
    uint64_t meta = NZONE_TABLE_OFF + nz.pages;
    uint64_t first = (meta + g->page_size - 1) / g->page_size;
    if (first >= nz.pages) {
        snprintf(err, errlen, "nvm_size: an N-zone of %llu bytes holds no "
                 "page for items after its metadata (at least %llu bytes)",
                 (unsigned long long)g->zone_bytes,
                 (unsigned long long)((first + 1) * g->page_size));
        return -1;
    }
    nz.super = (struct nzone_super *)nvm_zone.base;
    nz.run = (struct nzone_run *)((char *)nvm_zone.base + NZONE_RUN_OFF);
    nz.table = (uint8_t *)nvm_zone.base + NZONE_TABLE_OFF;
    out->first_page = first;
    out->pages = nz.pages;
    if (persistent && mode != TIER_RESTART_NO) {
        out->fresh = judge(g, first, out->why_cold, sizeof(out->why_cold));
    } else if (persistent) {
        snprintf(out->why_cold, sizeof(out->why_cold), "nvm_restart=no");
    }
    if (persistent && out->why_cold[0] == '\0') {
        read_warm_state(out);
    } else if (persistent && mode == TIER_RESTART_REQUIRE) {
        snprintf(err, errlen, "nvm_restart=require: cannot restart warm "
                 "from the N-zone: %s", out->why_cold);
        return -1;
    } else {
        format(g, epoch);
        out->start = NZONE_COLD;
        out->epoch = epoch;
    }
    nz.attached = true;
    return 0;
}

bool nzone_attached(void)
{
    return nz.attached;
}

uint32_t nzone_seal(void)
{
    return nz.seal;
}

/* ---- the page table ---- */

unsigned int nzone_page_class(uint64_t page)
{
    uint8_t id = 0;
    if (nz.attached && page < nz.pages) {
        nvm_read(&id, &nz.table[page], 1);
    }
    return id;
}

void nzone_set_page_class(uint64_t page, unsigned int id)
{
    if (nz.attached && page < nz.pages) {
        uint8_t b = (uint8_t)id;
        write_word(&nz.table[page], &b, 1);
    }
}

/* ---- the running server's words ---- */

void nzone_mark_running(time_t epoch)
{
    if (!nz.attached) {
        return;
    }
    struct nzone_super s;
    nvm_read(&s, nz.super, sizeof(s));
    if (s.epoch != (int64_t)epoch) {
        /* a cold zone whose clock a restored memory file chose: the
         * magic goes while the checksummed fields change */
        s.epoch = (int64_t)epoch;
        s.checksum = static_checksum(&s);
        write_word(nz.super->magic, (char[8]){ 0 }, sizeof(s.magic));
        write_word(&nz.super->epoch, &s.epoch, sizeof(s.epoch));
        write_word(&nz.super->checksum, &s.checksum, sizeof(s.checksum));
        write_word(nz.super->magic, nzone_magic, sizeof(nzone_magic));
    }
    pthread_mutex_lock(&run_lock);
    struct nzone_run r = nz.cur;
    r.state = STATE_RUNNING;
    write_runs(r);
    pthread_mutex_unlock(&run_lock);
}

void nzone_mark_stopped(rel_time_t now, uint64_t max_cas)
{
    if (!nz.attached) {
        return;
    }
    pthread_mutex_lock(&run_lock);
    struct nzone_run r = nz.cur;
    r.last_time = now;
    r.max_cas = max_cas;
    r.state = STATE_STOPPED;
    write_runs(r);
    pthread_mutex_unlock(&run_lock);
}

void nzone_note_flush(rel_time_t oldest_live, uint64_t oldest_cas)
{
    if (!nz.attached) {
        return;
    }
    pthread_mutex_lock(&run_lock);
    struct nzone_run r = nz.cur;
    r.oldest_live = oldest_live;
    r.oldest_cas = oldest_cas;
    write_runs(r);
    pthread_mutex_unlock(&run_lock);
}

unsigned int nzone_earlier_seals(uint32_t *out)
{
    unsigned int n = 0;
    for (int i = 0; i < NZONE_EARLIER_SEALS; i++) {
        if (nz.earlier_seals[i] != 0) {
            out[n++] = nz.earlier_seals[i];
        }
    }
    return n;
}

/* ---- a run that does not use the zone ---- */

bool nzone_disown(void)
{
    char seen[sizeof(nzone_magic)];
    if (nvm_zone.base == NULL || nvm_zone.size < NZONE_SUPER_BYTES) {
        return false;
    }
    nvm_read(seen, nvm_zone.base, sizeof(seen));
    if (memcmp(seen, nzone_magic, sizeof(nzone_magic)) != 0) {
        return false;
    }
    write_word(nvm_zone.base, (char[sizeof(nzone_magic)]){ 0 },
               sizeof(nzone_magic));
    /* a file in the page cache: survive power loss too, since this run
     * will never sync the zone again */
    nvm_zone_sync(&nvm_zone);
    return true;
}

const char *nzone_start_name(enum nzone_start start)
{
    switch (start) {
    case NZONE_COLD: return "cold";
    case NZONE_WARM_CLEAN: return "warm";
    case NZONE_WARM_CRASH: return "crash_recovery";
    }
    return "unknown";
}
