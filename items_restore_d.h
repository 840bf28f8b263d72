/*
 * items_restore_d.h: the D-zone's warm restart through the memory file of
 * -e (items_restore_d.c; doc/restart.md "The memory file (-e)").  Called
 * by items.c: storage_init after memfile_open, the index, the queues and
 * the policy exist; storage_shutdown when the stop is graceful.
 */
#ifndef ITEMS_RESTORE_D_H
#define ITEMS_RESTORE_D_H

/* Start-up, before any other thread exists: with the state of a graceful
 * stop (memfile_saved), carry on its clock and cas ids, give its pages
 * back to their classes and link every live item they hold; otherwise
 * nothing. */
void items_d_restore(void);

/* Graceful shutdown, after the storage threads have stopped: with -e,
 * leave what items_d_restore needs (PATH.meta). */
void items_d_save(void);

#endif
