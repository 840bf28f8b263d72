/*
 * slabs_tier.h: the N-zone side of the slab allocator (slabs_tier.c):
 * N pages per class and their chunks.  The layout of an item stored in a
 * chunk is nitem.h's.
 *
 * The N-zone mapping (nvm_zone, opened by main() before storage_init) is
 * carved into pages of the D-zone's page size; a slab class takes N pages
 * on demand until the zone is used up, exactly as it takes D pages up to
 * -m, and an N chunk has the size of the class's D chunk, so an item can
 * move between the zones without changing class.  Free and used chunks are
 * tracked in DRAM only (one bit per chunk); what lives in NVM is which
 * class each page was given to (nzone.h's page table), so that a warm
 * start can find the chunks again.  Chunks are named by their byte offset
 * from nvm_zone.base.
 *
 * All functions take the tier lock themselves, except the nitem_* helpers,
 * which touch only the item they are given (the caller holds its item
 * lock) and read the page table without a lock (see slabs_tier.c), and
 * the inline lookups of the page map below (no lock).
 */
#ifndef SLABS_TIER_H
#define SLABS_TIER_H

#include "clock.h"
#include "item.h"
#include "nvm.h"
#include "slab_class.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the allocator ---- */

/* Carve nvm_zone (settings.nvm.size > 0) into pages behind the zone's
 * metadata (nzone.h), formatting it or keeping its layout and page table
 * for a warm start as *start says; a no-op without an N-zone.  Call
 * after slabs_init (it uses the class table). */
struct nzone_attach_result;
void slabs_tier_init(uint32_t item_header_bytes,
                     struct nzone_attach_result *start);
void slabs_tier_destroy(void);
/* True when the allocator has an N-zone to give chunks from. */
bool slabs_tier_active(void);

/* A free chunk of class id (taking a new N page when the class has none
 * free); false when the class has no free chunk and the zone no page. */
bool slabs_tier_alloc(unsigned int id, uint64_t *off);
/* Whether slabs_tier_alloc would succeed now (no eviction needed). */
bool slabs_tier_can_alloc(unsigned int id);
void slabs_tier_free(uint64_t off);
/* Warm start, before any other thread touches the zone (no tier lock:
 * the scan marks millions of chunks): the recovery scan found an item in
 * the chunk at off (false when off is no chunk of a given page); then
 * slabs_tier_restore_done once, before the zone serves allocations. */
bool slabs_tier_restore_chunk(uint64_t off);
void slabs_tier_restore_done(void);
/* ---- the page map, read on every N hit ----
 * slabs_tier.c's; here so that the lookups below are inline and a hit
 * does not enter slabs_tier.c.  The geometry (active, page_size,
 * pages_total, pages, chunk_size) is set by slabs_tier_init before any
 * other thread starts and cleared by slabs_tier_destroy; a page's class
 * and bitmap are published with atomics (see slabs_tier.c's locks); the
 * other fields of a page are tier_lock's. */
struct npage {
    /* used chunks, one bit each, then the summary (tier_lock): bit w set
     * when bitmap word w has a free chunk; NULL: not given */
    _Atomic(_Atomic uint64_t *) bits;
    _Atomic uint8_t clsid;
    bool on_free_stack;
    bool moving;                 /* off every stack until its move ends */
    uint32_t free;               /* free chunks */
    uint32_t next_free;          /* free-page stack link: page + 1 */
};

struct slabs_tier_map {
    bool active;
    size_t page_size;
    uint64_t pages_total;
    struct npage *pages;
    /* a class's chunk size (slabs_chunk_size); 0: no such class */
    uint32_t chunk_size[MAX_NUMBER_OF_SLAB_CLASSES];
};
extern struct slabs_tier_map slabs_tier_map;

/* Class of the page holding off (0 when the page is not in use). */
static inline unsigned int slabs_tier_clsid(uint64_t off)
{
    uint64_t page = slabs_tier_map.page_size
        ? off / slabs_tier_map.page_size : 0;
    if (!slabs_tier_map.active || page >= slabs_tier_map.pages_total) {
        return 0;
    }
    return atomic_load_explicit(&slabs_tier_map.pages[page].clsid,
                                memory_order_relaxed);
}

/* The address of zone offset off, and the end of the chunk of class id
 * holding off (an item never crosses it; nitem.c's reads and writes go
 * through nvm.h's accessors with them). */
static inline char *slabs_tier_ptr(uint64_t off)
{
    return (char *)nvm_zone.base + off;
}

static inline uint64_t slabs_tier_chunk_end(uint64_t off, unsigned int id)
{
    unsigned int size = id < MAX_NUMBER_OF_SLAB_CLASSES
        ? slabs_tier_map.chunk_size[id] : 0;
    if (size == 0) {
        return nvm_zone.size;
    }
    uint64_t page = off / slabs_tier_map.page_size * slabs_tier_map.page_size;
    return page + ((off - page) / size + 1) * size;
}

/* ---- for the CLOCK hand (clock_nvm.c) ----
 * Zone pages are handed out in order, so pages [0, slabs_tier_pages_used())
 * belong to classes; a page keeps its class for the server's life. */
uint64_t slabs_tier_pages_used(void);
size_t slabs_tier_page_size(void);
/* Whether chunk `chunk` of zone page `page` holds an allocated chunk
 * (a relaxed read of the bitmap: may be stale, callers re-check under the
 * item lock). */
bool slabs_tier_chunk_used(uint64_t page, unsigned int chunk);

/* ---- a page changing class (clock_nvm.c) ----
 * Whether every page of the zone is given to a class. */
bool slabs_tier_zone_full(void);
/* Take a page of class `from` off its free stack: none of its chunks is
 * handed out until slabs_tier_move_end.  False when the class has no
 * page that is not moving already. */
bool slabs_tier_move_begin(unsigned int from, uint64_t *page);
/* Whether every chunk of the moving page is free now. */
bool slabs_tier_move_emptied(uint64_t page);
/* End the move: when every chunk is free the page becomes class `to`'s
 * (its class written to the page table durably first) and true; else
 * (or to the same class) it stays where it was, back on its free stack. */
bool slabs_tier_move_end(uint64_t page, unsigned int to);

/* ---- for the crawler, metadump and cachedump ----
 * One pass over the N chunks of class id in zone order: start with
 * *cursor = 0; each call sets *off to the next chunk the bitmap marks used
 * (skipping free chunks and other classes' pages without reading NVM) and
 * returns false when the zone's used pages are done.  The bitmap read is
 * relaxed: the chunk may be freed or reused meanwhile, so callers judge it
 * under its item lock (nitem_lock_chunk). */
bool slabs_tier_next_used(unsigned int id, uint64_t *cursor, uint64_t *off);

/* ---- accounting ---- */
struct slabs_tier_totals {
    uint64_t zone_limit;         /* bytes the allocator may hand out */
    uint64_t zone_used;          /* bytes of pages given to classes */
    uint64_t pages_total;
    uint64_t pages_used;
    uint64_t bitmap_bytes;       /* DRAM of the chunk bitmaps */
};
void slabs_tier_get_totals(struct slabs_tier_totals *out);
unsigned int slabs_tier_class_pages(unsigned int id);
/* Whether class id has an N page (a relaxed read, without the lock). */
bool slabs_tier_class_has_pages(unsigned int id);
uint64_t slabs_tier_class_free_chunks(unsigned int id);

#endif
