/*
 * engine_start.h: the start-up of what serves requests, behind the
 * listeners (engine_start.c).
 */
#ifndef ENGINE_START_H
#define ENGINE_START_H

/* After the settings and the N-zone: the clock, the storage engine, the
 * workers, the storage threads.  0, or -1 when the storage threads did
 * not start (the caller says so and exits). */
int engine_start(void);

#endif
