/*
 * engine_start.c: the order in which what serves requests starts, for
 * the daemon (memcached.c) and the binary protocol's fuzzer
 * (fuzz/fuzz_binary.c), which has no main() of ours to share.
 *
 * The clock first (storage stamps items and restores expiry times on
 * it), then the storage engine (item locks, slabs, index, restart), then
 * the protocol connections start with (proto_select.c), then the workers
 * (each registers the struct storage_worker it embeds), and the storage
 * threads last, once every worker they sum is registered.
 * Runs once, on the main thread, before any other thread exists.
 */
#include "config.h"
#include "engine_start.h"

#include "clock.h"
#include "daemon_stats.h"
#include "proto_select.h"
#include "settings.h"
#include "storage/storage.h"
#include "thread.h"

int engine_start(void)
{
    clock_init();
    stats.started = current_time;
    stats.accepting_conns = true;
    storage_init();
    proto_select_init();
    memcached_thread_init(settings.num_threads, NULL);
    return storage_start_threads() == 0 ? 0 : -1;
}
