/*
 * slabs.h: slab classes and their pages (slabs.c).
 *
 * A slab class serves chunks of one size.  Its memory comes in pages
 * (settings.slab_page_size bytes) carved into chunks; free chunks sit on the
 * class's free list.  This file holds the D-zone (DRAM) pages; the N-zone
 * pages of the same classes, with the same page and chunk sizes, are
 * slabs_tier.c's (slabs_tier.h).
 *
 * All functions here take the slabs lock themselves; nothing calls into
 * slabs.c with it held.
 */
#ifndef SLABS_H
#define SLABS_H

#include "item.h"
#include "stat_line.h"

#include <stdbool.h>
#include <stddef.h>

/* Zones whose pages slabs.c holds (the N-zone's are in slabs_tier.c). */
enum slab_zone {
    SLAB_ZONE_DRAM = 0,
    SLAB_ZONES
};

/* Build the classes from settings.factor, settings.chunk_size,
 * settings.item_size_max and settings.slab_page_size.  limit is the byte
 * budget for pages (settings.maxbytes); with prealloc the whole budget is
 * reserved up front (-L) and pages are carved from it. */
void slabs_init(size_t limit, double factor, bool prealloc);
/* Release every page (tests and clean shutdown).  A region given by
 * slabs_set_page_region stays mapped: it is its giver's. */
void slabs_destroy(void);

/* -e (doc/restart.md): carve the D-zone's pages from [base, base + size),
 * the memory file's mapping, instead of malloc or an anonymous -L region.
 * Call before slabs_init; it holds until slabs_destroy. */
void slabs_set_page_region(void *base, size_t size);

/* The memory file's page table: which owner holds each page carved from
 * the region.  Page `index` is the region's bytes [index * page size,
 * (index + 1) * page size); clsid 0 is the global pool. */
struct slabs_region_page {
    uint32_t index;
    uint32_t clsid;
};
/* Every page carved from the region, owner by owner (the global pool,
 * then the classes by id), each owner's in the order it holds them: a
 * malloc'd array of *npages entries in *out (NULL when none), and in
 * *carved how many pages have been carved.  False when out of memory. */
bool slabs_region_pages(struct slabs_region_page **out, unsigned int *npages,
                        unsigned int *carved);
/* Start-up, before any page is carved: give the pages of such a table,
 * saved by an earlier run over the same region with the same classes,
 * back to their owners in their order; `carved` pages count as carved.
 * The class pages' chunks are on no free list until
 * slabs_region_sort_chunks.  False, with nothing changed and the reason
 * in err, when the table cannot be this region's. */
bool slabs_region_adopt(const struct slabs_region_page *pages,
                        unsigned int npages, unsigned int carved,
                        char *err, size_t errlen);
/* Then, still at start-up: keep() sees every chunk of every class page
 * (with its class) and says whether it keeps it (a live item it linked);
 * the others go on their class's free list. */
typedef bool (*slabs_chunk_keep)(item *chunk, unsigned int clsid, void *arg);
void slabs_region_sort_chunks(slabs_chunk_keep keep, void *arg);

/* -e, at start-up once the pages are restored (or none were): from now
 * on the region's page table `table` (count entries, one per page: the
 * owning class, 0 for none or the global pool) follows every change of
 * owner, written under the slabs lock; first it is set to the owners now.
 * False when out of memory (the table is then left as it was). */
bool slabs_region_track(uint8_t *table, unsigned int count);

/* -L, at start-up: every class gets its first page from the region, as
 * memcached preallocates.  False when the region cannot hold one page per
 * class (*needed bytes): nothing is carved then, and the region is
 * dropped (pages are malloc'd).  An -e memory file is left to be carved
 * as classes need pages. */
bool slabs_preallocate(size_t *needed);

/* Classes are 1..slabs_largest_clsid(); slabs_clsid maps a size to its
 * class (0 = too large). */
unsigned int slabs_clsid(size_t size);
unsigned int slabs_largest_clsid(void);
unsigned int slabs_chunk_size(unsigned int id);
unsigned int slabs_chunks_per_page(unsigned int id);
/* Bytes per page (settings.slab_page_size, at least item_size_max); the
 * N-zone uses the same pages (slabs_tier.c). */
size_t slabs_page_size(void);

/* A chunk of class id able to hold size bytes, or NULL when the class has
 * no free chunk and no new page can be had.  The chunk comes back with
 * it_flags == 0 and refcount == 0; the caller initialises the header. */
void *slabs_alloc(size_t size, unsigned int id);
/* For a store that slabs_alloc and eviction left without a chunk: one
 * the page move out of class id has collected (slabs.c), or NULL. */
void *slabs_alloc_from_move(size_t size, unsigned int id);
#ifdef MEMCACHED_DEBUG
/* `debugmove hold`: page moves wait, their page chosen, until released;
 * `debugmove held`: whether one waits there now. */
void slabs_debug_hold_moves(bool hold);
bool slabs_debug_move_held(void);
#endif
/* Return a chunk obtained from slabs_alloc (size as passed there). */
void slabs_free(void *ptr, size_t size, unsigned int id);

/* ---- admin commands and stats ---- */
bool slabs_adjust_mem_limit(size_t new_mem_limit);   /* cache_memlimit */
/* `slabs reassign src dst` (src -1: any class with a page to spare; dst
 * 0: the global pool) */
enum reassign_result_type {
    REASSIGN_OK = 0,
    REASSIGN_RUNNING,
    REASSIGN_BADCLASS,
    REASSIGN_NOSPARE,
    REASSIGN_SRC_DST_SAME
};
enum reassign_result_type slabs_reassign(int src, int dst);
void slabs_stats(ADD_STAT add_stats, void *c);        /* stats slabs */

/* Page reassignment (slabs_reassign) empties one page of the
 * source class before handing it over.  Free chunks are taken off the free
 * list; live items are removed by the evictor, which must take every item
 * whose chunk lies in [start, end) out of the index (demoted to the N-zone
 * or unlinked), so that its chunk is eventually slabs_free'd.  items.c
 * registers it; it runs on the rebalance thread only and returns how many
 * items left the cache.  When chunks of the page are still in use after a
 * bound (a reference held by a stalled client), the move gives up: the
 * page stays with the source, its free chunks go back on the source's free
 * list (reassign_busy_aborts). */
typedef unsigned int (*slabs_page_evictor)(unsigned int clsid,
                                           const void *start,
                                           const void *end, bool rescue);
void slabs_set_page_evictor(slabs_page_evictor evictor);
/* The N-zone's part of class id for `stats slabs` and total_malloced: its
 * pages and their free chunks.  slabs_tier.c registers it while it has a
 * zone (NULL: none; called without slabs_lock), so that the slabs need
 * nothing of the N-zone. */
typedef void (*slabs_n_pages_fn)(unsigned int id, unsigned int *pages,
                                 uint64_t *free_chunks);
void slabs_set_n_pages(slabs_n_pages_fn fn);
/* slabs_reassign, moving only a page none of whose chunks holds an item;
 * when the source has none when the move starts, nothing moves (the
 * automover's return of free pages to the global pool). */
enum reassign_result_type slabs_reassign_free_page(int src, int dst);
/* slabs_reassign whose evictor is asked to rescue the page's live items
 * into other chunks of the class (rescue true above), making room there
 * as a store would: the class gives up its coldest page's worth of items
 * rather than this page's (slabs_automove.c's moves by hits). */
enum reassign_result_type slabs_reassign_rescuing(int src, int dst);
int slabs_start_rebalance_thread(void);   /* 0 = ok */
void slabs_stop_rebalance_thread(void);
/* Wait until no page move is pending (tests, shutdown). */
void slabs_rebalance_wait_idle(void);

/* Totals for `stats` and `stats tier`. */
struct slabs_totals {
    uint64_t total_malloced;     /* bytes of pages owned by classes */
    uint64_t mem_limit;
    /* what the zone may hold: mem_limit, or all its pages when classes'
     * first pages took it past that (doc/tiering.md "Stats with two
     * zones") */
    uint64_t zone_limit;
    uint64_t global_pool_pages;  /* pages moved to the global pool */
    uint64_t slabs_moved;        /* pages reassigned */
    uint64_t reassign_evictions; /* items unlinked to free moving pages */
    uint64_t reassign_busy_items;/* rounds that waited for busy items */
    uint64_t reassign_busy_aborts;/* moves given up: chunks stayed busy */
    uint64_t malloc_fails;       /* page allocations that failed */
    bool reassign_running;
};
void slabs_get_totals(struct slabs_totals *out);
/* Pages a class holds in a zone (tests, stats tier). */
unsigned int slabs_class_pages(unsigned int id, enum slab_zone zone);
/* Free chunks a class holds in a zone. */
unsigned int slabs_class_free_chunks(unsigned int id, enum slab_zone zone);
/* The same for classes 0..n-1 under one lock (0 for ids no class has);
 * returns one past the largest class id. */
unsigned int slabs_free_chunks_by_class(enum slab_zone zone,
                                        unsigned int *out, unsigned int n);
/* Chunks the pages of a zone hold, used or free, over every class: the
 * items the zone can hold as its pages are split now. */
uint64_t slabs_zone_chunks(enum slab_zone zone);

#endif
