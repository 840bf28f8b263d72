/*
 * slabs_automove.h: `slab_automove` (slabs_automove.c), memcached's page
 * automover, over slabs.c's page moves.
 */
#ifndef SLABS_AUTOMOVE_H
#define SLABS_AUTOMOVE_H

#include <stdbool.h>

/* Run by the LRU maintainer on each of its rounds (memcached runs its
 * automover in its maintainer too); true when it asked for a move, so
 * that the next round comes soon. */
bool slabs_automove_tick(void);

/* An eviction in class clsid (items_d.c): slab_automove=2 asks for a page
 * for it. */
void slabs_automove_evicted(unsigned int clsid);

#endif
