/*
 * nzone.h: the N-zone's persistent layout (nzone.c; doc/restart.md "The
 * N-zone on disk"): a versioned superblock and a page table at the start
 * of the zone, read at start-up to decide between a warm and a cold
 * start, and kept up to date while the server runs.  The layout of the
 * items in the pages is nitem.h's; which chunks hold items is found again
 * by the recovery scan (items_restart.c).
 *
 * Locks: nzone_attach runs at start-up before other threads exist;
 * nzone_set_page_class is called under slabs_tier.c's tier lock; the
 * note/mark functions take nzone.c's run lock, so that flush_all on
 * several workers at once leaves the last writer's state in both copies
 * (as with settings.oldest_live, the last writer wins).
 */
#ifndef NZONE_H
#define NZONE_H

#include "clock.h"
#include "slab_class.h"
#include "tier_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Bumped whenever the superblock, the page table or nitem_hdr changes
 * (2: items sealed with their checksum, the run state kept twice with a
 * checksum each, earlier layouts' seals kept). */
#define NZONE_LAYOUT_VERSION 2

/* Seals of earlier layouts the superblock remembers (nzone_earlier_seals). */
#define NZONE_EARLIER_SEALS 3

/* What the items in the zone were laid out with: a warm start needs all
 * of it unchanged. */
struct nzone_geometry {
    uint64_t zone_bytes;          /* usable bytes of the mapping */
    uint64_t page_size;           /* slab_page_size */
    uint32_t item_size_max;       /* -I */
    uint32_t chunk_size_min;      /* -n */
    double factor;                /* -f */
    uint32_t nclasses;            /* largest class id */
    uint32_t chunk_sizes[MAX_NUMBER_OF_SLAB_CLASSES];
    uint32_t item_header_bytes;   /* sizeof(nitem_hdr) */
};

/* How the last run ended, as the superblock tells it. */
enum nzone_start {
    NZONE_COLD = 0,               /* formatted now: no items */
    NZONE_WARM_CLEAN,             /* after an orderly stop */
    NZONE_WARM_CRASH              /* the last run never stopped in order */
};

struct nzone_attach_result {
    enum nzone_start start;
    uint64_t first_page;          /* pages before it hold the metadata */
    uint64_t pages;               /* pages in the zone, metadata included */
    bool fresh;                   /* NZONE_COLD: the zone held no layout */
    char why_cold[256];           /* NZONE_COLD: why ("" when not kept) */
    /* NZONE_WARM_*: the earlier runs' clock and flush_all */
    time_t epoch;
    rel_time_t last_time;
    uint64_t max_cas;
    rel_time_t oldest_live;
    uint64_t oldest_cas;
};

/* Start-up, with the zone mapped (nvm_zone): read the superblock and
 * either keep the layout (a warm start, when `mode` allows and the
 * geometry matches) or format a new one (a cold start, saying why in
 * out->why_cold).  `persistent`: whether the backend outlives the
 * process; a zone that does not is always formatted.  `epoch` is this
 * run's process_started, recorded by a format.  Returns 0, or -1 with a
 * message in err when mode is TIER_RESTART_REQUIRE and the zone cannot
 * be used warm, or the zone is too small for its own metadata. */
int nzone_attach(const struct nzone_geometry *g, enum tier_restart mode,
                 bool persistent, time_t epoch,
                 struct nzone_attach_result *out, char *err, size_t errlen);
/* Whether nzone_attach succeeded (the functions below are no-ops before). */
bool nzone_attached(void);

/* This layout's seal (never 0): the seed of every N item's checksum,
 * which its seal word holds once it is whole (nitem.h). */
uint32_t nzone_seal(void);
/* The seals of the layouts the zone held before this one (at most
 * NZONE_EARLIER_SEALS, newest first) into out; returns how many.  A chunk
 * sealed with one of them is a remnant a format left, not a corrupt item
 * (items_restart.c). */
unsigned int nzone_earlier_seals(uint32_t *out);

/* The class recorded for zone page `page` (0: not given to a class). */
unsigned int nzone_page_class(uint64_t page);
/* Record that `page` belongs to class id, durably, before any of its
 * chunks is handed out. */
void nzone_set_page_class(uint64_t page, unsigned int id);

/* The server is about to serve on the clock of `epoch` (process_started,
 * which a restored -e memory file may have moved after a cold format): a
 * later start without nzone_mark_stopped is a crash recovery. */
void nzone_mark_running(time_t epoch);
/* An orderly stop: the clock, the cas counter and the stopped mark, in
 * one update of the run state (durable when it returns). */
void nzone_mark_stopped(rel_time_t now, uint64_t max_cas);
/* flush_all: items stored at or before oldest_live (cas below oldest_cas)
 * must stay dead after a restart; durable in both copies of the run state
 * when it returns, before flush_all replies. */
void nzone_note_flush(rel_time_t oldest_live, uint64_t oldest_cas);

/* A run that maps a persistent zone but will not use it (tier_policy=dram)
 * serves changes the zone never sees, so no later start may recover the
 * zone's items: its magic is cleared, durably, before anything is served,
 * and the next start finds no layout (a cold start; nvm_restart=require
 * refuses it).  True when the zone held a layout. */
bool nzone_disown(void);

const char *nzone_start_name(enum nzone_start start);

#endif
