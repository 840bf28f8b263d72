/*
 * daemon_stats.c: the server's counters `stats` and their lock
 * (daemon_stats.h): the connections (conn.c), the listeners (listen.c)
 * and the accept pause (accept_pause.c) bump them, stats.c prints them.
 *
 * Locks: stats_lock guards `stats`.
 */
#include "config.h"
#include "daemon_stats.h"

struct server_stats stats;
pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
