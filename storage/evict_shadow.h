/*
 * evict_shadow.h: the keys each slab class evicted lately, and how often
 * one of them was stored again soon after: the hits a page more would
 * have given the class (evict_shadow.c; doc/tiering.md "Pages that
 * follow the hits", "Keys that come back").
 */
#ifndef EVICT_SHADOW_H
#define EVICT_SHADOW_H

#include <stdbool.h>
#include <stdint.h>

/* Allocates the shadow (a fixed 1 MiB) once, before any worker starts;
 * until then, and without it, the calls below do nothing. */
void evict_shadow_init(void);
bool evict_shadow_active(void);

/* A live item of class clsid, hash hv, left the cache to make room. */
void evict_shadow_victim(unsigned int clsid, uint64_t hv);
/* A key of class clsid that was not in the cache was stored; it counts as
 * a shadow hit of the class if the class evicted it within its last
 * `window` evictions (a page's worth of its chunks). */
void evict_shadow_stored(unsigned int clsid, uint64_t hv, uint32_t window);

/* A key of class clsid is being stored: true if the table still holds
 * its eviction from that class (of any age: the table's 2^17 entries are
 * the bound), which it then forgets. */
bool evict_shadow_take_returning(unsigned int clsid, uint64_t hv);

/* The class's shadow hits since the last call, which resets them (one
 * reader: slabs_automove.c's tick). */
uint64_t evict_shadow_take_hits(unsigned int clsid);

#endif
