/*
 * storage.h: the storage engine's public API, the one header of storage/
 * that the daemon includes (as "storage/storage.h"; doc/design.md
 * "Structure").
 *
 * It declares storage's start-up and shutdown (storage.c), called by the
 * daemon's main (memcached.c), the fuzz harness and the unit tests; main
 * thread only.  The rest of the API is the headers below, which it
 * includes for the daemon:
 *   - item.h, items.h: the item and the item API (lookups, stores,
 *     references, storage's stats listings);
 *   - storage_worker.h: the per-worker state the item API takes;
 *   - slab_class.h, slabs.h, slabs_tier.h: the slab class ids, the slab
 *     admin commands, `stats slabs` and the D and N totals of `stats`;
 *   - hash.h: the key hash (the item locks' stripe, `stats detail`);
 *   - nvm.h: the N-zone, which main() opens before storage_init;
 *   - tier_policy.h, tier_reassign.h: the names of the policies and of
 *     the reassignment modes (options, `stats settings`) and the workers'
 *     histogram slots.
 * Every other header in storage/ is the engine's own.
 */
#ifndef STORAGE_H
#define STORAGE_H

#include "hash.h"
#include "item.h"
#include "items.h"
#include "nvm.h"
#include "slab_class.h"
#include "slabs.h"
#include "slabs_tier.h"
#include "storage_worker.h"
#include "tier_policy.h"
#include "tier_reassign.h"

#include <stdbool.h>

/* The item locks, slabs, index and queues from settings; exits when out
 * of memory. */
void storage_init(void);
/* Before any client: recover the N-zone's items (a warm start), then
 * start the crawler, the index growth, the page mover and the tier
 * thread; 0 = ok. */
int storage_start_threads(void);
/* After the workers have stopped: stop the storage threads and, when
 * `graceful` (SIGUSR1, `shutdown graceful`), leave what a warm restart
 * needs (doc/restart.md). */
void storage_shutdown(bool graceful);

#endif
