/*
 * memfile_durable.c: the durable block of the -e memory file
 * (doc/restart.md "Crash recovery of the memory file").
 *
 * Owns the block's layout and its updates.  The block follows the item
 * memory (at -m rounded up to 4 KiB) and holds:
 *   - at 0, the superblock: the magic, the block's version, the byte
 *     order, the settings the items' layout depends on (-m, the page
 *     size, -I, -n, slab_chunk_max, -f, -C, the item header's size, the
 *     page count), the run's clock epoch, and their CRC-32C;
 *   - at 1024, the flush state twice, one 64-byte line each: a sequence
 *     number, flush_all's oldest_live and oldest_cas, and their CRC-32C.
 *     An update writes the first copy whole, then the second, so a kill
 *     in the middle of one leaves the other valid, holding the update or
 *     the state before it (which was never acknowledged);
 *   - at 4096, the page table: one byte per page of item memory, the
 *     class that owns the page (0: none, or the global pool).  slabs.c
 *     writes it (slabs_region_track).
 *
 * What it promises is the survival of a crash of the process (kill -9, a
 * fault), not of a power loss: the file's pages outlive the process in
 * the page cache (tmpfs, or any file system) or on the DAX medium, and
 * every store the process made is there, in the order it made them, once
 * the compiler keeps that order (atomic_signal_fence below).  Nothing is
 * flushed, so the write path pays no flush.
 *
 * Locks: flush_lock serialises mfd_note_flush; everything else runs on
 * the main thread at start-up or shutdown.
 */
#include "config.h"
#include "memfile_durable.h"

#include "crc32c.h"
#include "item.h"
#include "settings.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define MFD_MAGIC "TIERMEMF"
/* A change of the superblock, the flush lines or the table takes a new
 * version; a block of another version is not used (a cold start). */
#define MFD_VERSION 1
#define MFD_BYTE_ORDER 0x01020304u
#define MFD_FLUSH_OFF 1024
#define MFD_FLUSH_COPIES 2
#define MFD_TABLE_OFF 4096
#define MFD_ALIGN 4096

struct mfd_super {
    char magic[8];
    uint32_t version;
    uint32_t byte_order;
    uint64_t item_bytes;
    uint64_t page_size;
    uint64_t factor_millionths;
    uint32_t item_size_max;
    uint32_t chunk_size_min;
    uint32_t slab_chunk_max;
    uint32_t use_cas;
    uint32_t item_header_bytes;
    uint32_t table_pages;
    int64_t epoch;
    uint32_t checksum;            /* CRC-32C of every field above */
};

struct mfd_flush {
    uint64_t seq;                 /* the newer copy has the higher */
    uint64_t oldest_cas;
    uint32_t oldest_live;
    uint32_t checksum;            /* CRC-32C of the fields above */
};

_Static_assert(sizeof(struct mfd_super) <= MFD_FLUSH_OFF,
               "the superblock ends before the flush state");
_Static_assert(MFD_FLUSH_OFF + MFD_FLUSH_COPIES * 64 <= MFD_TABLE_OFF,
               "the flush state ends before the page table");

static struct {
    char *block;
    struct mfd_super want;        /* this run's layout, epoch aside */
    struct mfd_flush cur;
} md;

static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;

/* The stores before it reach the file before the stores after it, should
 * the process die in between: the CPU retires them in order, so only the
 * compiler could reorder them. */
static void keep_order(void)
{
    atomic_signal_fence(memory_order_seq_cst);
}

static struct mfd_super *super_of(void)
{
    return (struct mfd_super *)md.block;
}

static struct mfd_flush *flush_copy(int i)
{
    return (struct mfd_flush *)(md.block + MFD_FLUSH_OFF + 64 * i);
}

static uint8_t *table_of(void)
{
    return (uint8_t *)md.block + MFD_TABLE_OFF;
}

static uint32_t super_checksum(const struct mfd_super *s)
{
    return crc32c(0, s, offsetof(struct mfd_super, checksum));
}

static uint32_t flush_checksum(const struct mfd_flush *f)
{
    return crc32c(0, f, offsetof(struct mfd_flush, checksum));
}

size_t mfd_block_offset(size_t item_bytes)
{
    return (item_bytes + MFD_ALIGN - 1) / MFD_ALIGN * MFD_ALIGN;
}

size_t mfd_block_bytes(size_t item_bytes, size_t page_size)
{
    size_t pages = item_bytes / page_size;
    return (MFD_TABLE_OFF + pages + MFD_ALIGN - 1) / MFD_ALIGN * MFD_ALIGN;
}

static void layout_of_this_run(size_t item_bytes, size_t page_size,
                               struct mfd_super *s)
{
    memset(s, 0, sizeof(*s));
    memcpy(s->magic, MFD_MAGIC, sizeof(s->magic));
    s->version = MFD_VERSION;
    s->byte_order = MFD_BYTE_ORDER;
    s->item_bytes = item_bytes;
    s->page_size = page_size;
    s->factor_millionths = (uint64_t)(settings.factor * 1e6 + 0.5);
    s->item_size_max = (uint32_t)settings.item_size_max;
    s->chunk_size_min = (uint32_t)settings.chunk_size;
    s->slab_chunk_max = (uint32_t)settings.slab_chunk_size_max;
    s->use_cas = settings.use_cas;
    s->item_header_bytes = sizeof(item);
    s->table_pages = (uint32_t)(item_bytes / page_size);
}

/* Why the block's layout is not this run's, or NULL. */
static const char *layout_differs(const struct mfd_super *was,
                                  const struct mfd_super *now)
{
    if (was->item_bytes != now->item_bytes) {
        return "-m changed";
    }
    if (was->page_size != now->page_size
            || was->table_pages != now->table_pages) {
        return "the slab page size changed";
    }
    if (was->item_size_max != now->item_size_max) {
        return "-I changed";
    }
    if (was->chunk_size_min != now->chunk_size_min) {
        return "-n changed";
    }
    if (was->factor_millionths != now->factor_millionths) {
        return "-f changed";
    }
    if (was->slab_chunk_max != now->slab_chunk_max) {
        return "slab_chunk_max changed";
    }
    if (was->use_cas != now->use_cas) {
        return "-C changed";
    }
    if (was->item_header_bytes != now->item_header_bytes) {
        return "the item header changed";
    }
    return NULL;
}

/* The valid copy with the higher sequence number, or -1. */
static int newest_flush(void)
{
    int best = -1;
    for (int i = 0; i < MFD_FLUSH_COPIES; i++) {
        const struct mfd_flush *f = flush_copy(i);
        if (f->seq != 0 && f->checksum == flush_checksum(f)
                && (best < 0 || f->seq > flush_copy(best)->seq)) {
            best = i;
        }
    }
    return best;
}

static bool judge(const struct mfd_super *s, char *why, size_t len)
{
    const char *differs;
    if (memcmp(s->magic, MFD_MAGIC, sizeof(s->magic)) != 0) {
        why[0] = '\0';            /* new, or a stop that kept nothing */
        return false;
    }
    if (s->version != MFD_VERSION) {
        snprintf(why, len, "its block's version is %u; this build reads %u",
                 (unsigned)s->version, (unsigned)MFD_VERSION);
        return false;
    }
    if (s->byte_order != MFD_BYTE_ORDER
            || s->checksum != super_checksum(s)) {
        snprintf(why, len, "its block is corrupt (checksum)");
        return false;
    }
    if ((differs = layout_differs(s, &md.want)) != NULL) {
        snprintf(why, len, "%s", differs);
        return false;
    }
    if (newest_flush() < 0) {
        snprintf(why, len, "its flush state is corrupt (checksum)");
        return false;
    }
    return true;
}

void mfd_attach(char *block, size_t item_bytes, size_t page_size,
                struct mfd_found *out)
{
    memset(out, 0, sizeof(*out));
    md.block = block;
    layout_of_this_run(item_bytes, page_size, &md.want);
    const struct mfd_super *s = super_of();
    out->usable = judge(s, out->why_not, sizeof(out->why_not));
    if (!out->usable) {
        return;
    }
    md.cur = *flush_copy(newest_flush());
    out->epoch = (time_t)s->epoch;
    out->oldest_live = md.cur.oldest_live;
    out->oldest_cas = md.cur.oldest_cas;
    out->table = table_of();
    out->table_pages = s->table_pages;
}

static void write_flush(rel_time_t oldest_live, uint64_t oldest_cas)
{
    struct mfd_flush f = md.cur;
    f.seq++;
    f.oldest_live = oldest_live;
    f.oldest_cas = oldest_cas;
    f.checksum = flush_checksum(&f);
    for (int i = 0; i < MFD_FLUSH_COPIES; i++) {
        keep_order();
        *flush_copy(i) = f;
    }
    keep_order();
    md.cur = f;
}

static void lay_out(time_t epoch)
{
    struct mfd_super s = md.want;
    struct mfd_super *dst = super_of();
    memset(dst->magic, 0, sizeof(dst->magic));
    keep_order();
    memset(table_of(), 0, s.table_pages);
    memset(md.block + MFD_FLUSH_OFF, 0, MFD_FLUSH_COPIES * 64);
    memset(&md.cur, 0, sizeof(md.cur));
    s.epoch = (int64_t)epoch;
    s.checksum = super_checksum(&s);
    memset(s.magic, 0, sizeof(s.magic));
    *dst = s;
    write_flush(0, 0);
    keep_order();
    memcpy(dst->magic, MFD_MAGIC, sizeof(dst->magic));
}

uint8_t *mfd_take_over(time_t epoch, rel_time_t oldest_live,
                       uint64_t oldest_cas, unsigned int *table_pages)
{
    char why[8];
    const struct mfd_super *s = super_of();
    if (!judge(s, why, sizeof(why)) || s->epoch != (int64_t)epoch) {
        lay_out(epoch);
    } else {
        md.cur = *flush_copy(newest_flush());
    }
    write_flush(oldest_live, oldest_cas);
    *table_pages = md.want.table_pages;
    return table_of();
}

void mfd_note_flush(rel_time_t oldest_live, uint64_t oldest_cas)
{
    if (md.block == NULL) {
        return;
    }
    pthread_mutex_lock(&flush_lock);
    write_flush(oldest_live, oldest_cas);
    pthread_mutex_unlock(&flush_lock);
}

void mfd_discard(void)
{
    if (md.block != NULL) {
        memset(super_of()->magic, 0, sizeof(super_of()->magic));
    }
}
