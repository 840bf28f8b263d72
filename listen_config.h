/*
 * listen_config.h: the options that decide what the server listens on
 * and how many clients it takes (settings.listen), apart from the
 * listeners (listen.h) so that the settings need nothing of the
 * connections.  Defaults and parsing in settings.c; start-up only.
 */
#ifndef LISTEN_CONFIG_H
#define LISTEN_CONFIG_H

#include <stdbool.h>

struct listen_config {
    int port;                     /* -p */
    int udpport;                  /* -U */
    char *inter;                  /* -l, comma list, NULL = any */
    char *socketpath;             /* -s */
    int access;                   /* -a */
    int backlog;                  /* -b */
    int maxconns;                 /* -c */
    bool maxconns_fast;           /* !no_maxconns_fast: refuse at -c */
};

#endif
