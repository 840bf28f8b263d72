/*
 * memfile.h: the memory file of -e PATH (memfile.c; doc/restart.md "The
 * memory file (-e)").
 *
 * With -e the D-zone's item memory is the first -m bytes of a file mapped
 * shared: slabs.c carves its pages from it; the durable block after them
 * is memfile_durable.c's.  A graceful stop (SIGUSR1, `shutdown
 * graceful`) leaves PATH.meta beside it, a text file of the settings the
 * items' layout depends on, the clock, the cas counter, the flush state
 * and the page table; the next start with the same settings reads it,
 * deletes it and brings the items back (items_restore_d.c).
 *
 * Everything here runs on the main thread, at start-up before other
 * threads exist or at shutdown after the storage threads have stopped.
 */
#ifndef MEMFILE_H
#define MEMFILE_H

#include "clock.h"
#include "memfile_durable.h"
#include "slabs.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* What PATH.meta holds beyond the settings it is checked against. */
struct memfile_state {
    time_t process_started;       /* the run's clock (doc/restart.md) */
    rel_time_t current_time;
    time_t stop_time;             /* unix time of the graceful stop */
    uint64_t current_cas;         /* above every cas the run gave out */
    rel_time_t oldest_live;       /* flush_all state (settings.h) */
    uint64_t oldest_cas;
    unsigned int hashpower;       /* hash_power_level at the stop */
    uintptr_t mmap_oldbase;       /* where the file was mapped (for the
                                   * record; memfile_save fills it) */
    unsigned int pages_carved;
    struct slabs_region_page *pages;  /* slabs_region_pages' table */
    unsigned int npages;
};

/* Start-up, before slabs_init, as the -u user: create or open
 * settings.memory_file, size it to settings.maxbytes, map it and hand the
 * mapping to slabs.c as the D-zone's page region; then read PATH.meta,
 * check it against the settings (memcached's "[restart]" lines on
 * stderr) and delete it.  Exits with a message when the file cannot be
 * created, sized or mapped.  Nothing without -e. */
void memfile_open(void);

/* What the file's durable block says of the earlier run, when there is
 * no PATH.meta (ENOENT) and the block is this layout's: that run was not
 * stopped in order and its items can be recovered (memfile_durable.h).
 * Else NULL. */
const struct mfd_found *memfile_crashed_run(void);

/* True while -e is in use (after memfile_open). */
bool memfile_active(void);

/* The state of the earlier run when memfile_open found a valid PATH.meta
 * for these settings, else NULL. */
const struct memfile_state *memfile_saved(void);

/* The process_started that memfile_open found, before anything resumed
 * an earlier run's clock. */
time_t memfile_fresh_epoch(void);

/* The restore is done, or refused: forget the saved state.  With
 * `failed`, say so as memcached does ("starting with a clean cache"). */
void memfile_forget(bool failed);

/* Graceful shutdown: flush the mapping to the file, then write PATH.meta
 * (through a temporary file and a rename, so a torn write never leaves a
 * .meta).  False, with a message, when it could not be written. */
bool memfile_save(const struct memfile_state *st);

#endif
