/*
 * proto_select.h: which protocol a connection speaks (proto_select.c).
 */
#ifndef PROTO_SELECT_H
#define PROTO_SELECT_H

/* Start-up, before the workers: hand the connection machine the protocol
 * connections start with, by -B (and -Y). */
void proto_select_init(void);

#endif
