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
 * lock) and read the page table without a lock (see slabs_tier.c).
 */
#ifndef SLABS_TIER_H
#define SLABS_TIER_H

#include "clock.h"
#include "item.h"

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
/* Class of the page holding off (0 when the page is not in use). */
unsigned int slabs_tier_clsid(uint64_t off);
/* The address of zone offset off, and the end of the chunk of class id
 * holding off (nitem.c's reads and writes go through nvm.h's accessors
 * with them). */
static inline char *slabs_tier_ptr(uint64_t off)
{
    return (char *)nvm_zone.base + off;
}
uint64_t slabs_tier_chunk_end(uint64_t off, unsigned int id);

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
