/*
 * items_restore_d.h: the D-zone's warm restart through the memory file of
 * -e (items_restore_d.c; doc/restart.md "The memory file (-e)").  Called
 * by items.c: storage_start_threads after the N-zone's recovery (the
 * index, the queues, the policy and the item locks exist, no client or
 * storage thread yet); storage_shutdown at every stop.
 */
#ifndef ITEMS_RESTORE_D_H
#define ITEMS_RESTORE_D_H

/* Start-up, before any client or storage thread, with -e: with the state
 * of a graceful stop (memfile_saved), or else of a run that was not
 * stopped in order (memfile_crashed_run), carry on its clock and cas ids,
 * give its pages back to their classes and link every live item they
 * hold; then the file's durable block follows this run.  Nothing without
 * -e. */
void items_d_restore(void);

/* Graceful shutdown, after the storage threads have stopped: with -e,
 * leave what items_d_restore needs (PATH.meta). */
void items_d_save(void);

/* A stop that keeps nothing (SIGTERM, SIGINT, `shutdown`), with -e: the
 * next start is cold, as memcached's is. */
void items_d_discard(void);

#endif
