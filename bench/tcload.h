/*
 * tcload.h - shared types of the tcload load generator: configuration,
 * phases, per-stage statistics and the engine entry points.
 */
#ifndef TCLOAD_H
#define TCLOAD_H

#include <stdint.h>
#include <stdio.h>

#include "gen.h"
#include "hist.h"

enum { OP_GET = 0, OP_SET = 1 };
enum { STAGE_PRELOAD = 0, STAGE_RUN = 1 };
enum { PROTO_ASCII = 0, PROTO_BINARY = 1 };

enum errkind {
    E_ERROR,        /* "ERROR" reply */
    E_CLIENT,       /* "CLIENT_ERROR ..." */
    E_SERVER,       /* "SERVER_ERROR ..." */
    E_NOT_STORED,   /* "NOT_STORED" to a set */
    E_OTHER_REPLY,  /* EXISTS, NOT_FOUND, ... where not expected */
    E_BAD_VALUE,    /* a GET's value is not the pattern tcload stores */
    E_PROTOCOL,     /* unparsable reply: connection closed by us */
    E_CLOSED,       /* server closed the connection / reset */
    E_CONNECT,      /* connect() failed */
    E_TIMEOUT,      /* no reply within --timeout, or the hard cap hit */
    E_LOST,         /* requests in flight on a connection that died */
    E_N
};
extern const char *const err_names[E_N];

/* What a generated request's key is (phase one-hit= and absent=). */
enum { KIND_STREAM = 0, KIND_ONE_HIT = 1, KIND_ABSENT = 2 };
/* Absent keys (GETs of keys never stored) have ids from here up; a
 * dataset and its one-hit keys must stay below (checked at start). */
#define TC_ABSENT_BASE 900000000ULL

typedef struct {
    uint64_t sent[2], done[2];
    uint64_t hits, misses, set_on_miss;
    uint64_t one_hit;         /* requests sent for keys asked for once */
    uint64_t absent, absent_hits;  /* GET replies for keys never stored */
    uint64_t err[E_N];
    uint64_t bytes_out, bytes_in;
    char first_err[160];
    hist_t lat[3];            /* all, get, set (ns) */
} stats_t;

typedef struct {
    int index;
    char spec[512];
    dataset_t ds;
    keydist_t kd;
    enum dist_kind dist;
    double theta, hot_frac, hot_ops;
    double get_ratio;
    uint64_t requests;        /* 0 = unbounded (duration decides) */
    double duration;          /* seconds, 0 = unbounded */
    double rate;              /* req/s over all connections, 0 = closed */
    int preload;
    int set_on_miss;
    double one_hit;           /* share of requests for keys asked for once */
    double absent;            /* share of GETs of keys never stored */
    char ns;                  /* first character of every key */
    struct tc_model *model;   /* a CacheLib model's phase: its ds and kd */
    /* results */
    int ran[2];
    stats_t st[2];
    double elapsed[2];
} phase_t;

typedef struct {
    const char *host_port;
    const char *unix_path;
    int protocol;             /* PROTO_ASCII or PROTO_BINARY */
    int tls;                  /* TLS over the TCP connections */
    const char *tls_ca, *tls_cert, *tls_key;
    int conns, threads, depth, preload_depth;
    uint64_t seed;
    uint64_t dataset_seed;    /* fixes each key's value size */
    double max_duration;      /* hard cap on the whole run (s) */
    double idle_timeout;      /* s without progress -> connection dropped */
    const char *json_path, *trace_path;
    FILE *trace;
    int dry_run;
    uint64_t dump_keys;
    int quiet;
    int scramble;
    int nphases;
    phase_t *phases;
    uint64_t run_start_ns, hard_deadline_ns;
    uint64_t connect_errors;
    char connect_msg[160];
} config_t;

uint64_t now_ns(void);
uint64_t conn_seed(uint64_t seed, int phase, int conn);
/* The next request of connection conn (of nconns) in phase ph: its op, key
 * id and kind.  *uniq counts the connection's one-hit keys over the whole
 * run, so that no phase repeats one. */
void phase_next(const phase_t *ph, rng_t *r, int conn, int nconns,
                uint64_t *uniq, int *op, uint64_t *key, int *kind);
int format_key(char *out, char ns, uint64_t id);   /* returns 10 */
void stats_init(stats_t *s);
void stats_merge(stats_t *d, const stats_t *s);

int engine_open(config_t *cfg);                  /* connects all; -1 if none */
void engine_stage(config_t *cfg, phase_t *ph, int stage);
void engine_close(config_t *cfg);
extern volatile int g_interrupted;

#endif
