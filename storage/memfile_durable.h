/*
 * memfile_durable.h: the durable block of the -e memory file
 * (memfile_durable.c; doc/restart.md "Crash recovery of the memory
 * file").
 *
 * The block follows the -m bytes of item memory in the file and holds
 * what a start needs to recover the D-zone's items after a crash, when no
 * PATH.meta was written: the layout the items were carved with, the
 * run's clock epoch, flush_all's state and the owner of every page.
 * Items themselves carry their seal (item.h ITEM_SEALED).
 *
 * Locks: mfd_note_flush takes its own lock; everything else runs on the
 * main thread at start-up or at shutdown.  The page table's bytes are
 * written by slabs.c under slabs_lock (slabs_region_track).
 */
#ifndef MEMFILE_DURABLE_H
#define MEMFILE_DURABLE_H

#include "clock.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The bytes the block takes after `item_bytes` of item memory, and where
 * it starts (item memory rounded up to a 4 KiB boundary). */
size_t mfd_block_offset(size_t item_bytes);
size_t mfd_block_bytes(size_t item_bytes, size_t page_size);

/* What the block says of the earlier run. */
struct mfd_found {
    bool usable;                  /* magic, version, checksums and layout
                                   * all match this run's settings */
    char why_not[128];            /* when not usable and not blank */
    time_t epoch;                 /* process_started of the run */
    rel_time_t oldest_live;       /* flush_all */
    uint64_t oldest_cas;
    const uint8_t *table;         /* one byte per page: its class, 0 for
                                   * none or the global pool */
    unsigned int table_pages;
};

/* Start-up (memfile_open): the block at `block` in the mapping, for item
 * memory of `item_bytes` in pages of `page_size`.  Reads it; writes
 * nothing. */
void mfd_attach(char *block, size_t item_bytes, size_t page_size,
                struct mfd_found *out);

/* The items are this run's from now on: unless the block already holds a
 * layout of this epoch, it is laid out anew (the magic cleared first,
 * every page unowned, the magic last), then the flush state written.
 * Returns the page table for slabs_region_track. */
uint8_t *mfd_take_over(time_t epoch, rel_time_t oldest_live,
                       uint64_t oldest_cas, unsigned int *table_pages);

/* flush_all: the new state is in the block before the reply. */
void mfd_note_flush(rel_time_t oldest_live, uint64_t oldest_cas);

/* A stop that keeps nothing (SIGTERM, SIGINT, `shutdown`): the magic is
 * cleared, so that the next start is cold, as memcached's is. */
void mfd_discard(void);

#endif
