/*
 * model.h - CacheLib cachebench workload models for tcload: a model
 * directory's config.json, popularity and value-size histograms, scaled
 * to a cache size, and the key and value-size draws they define.
 */
#ifndef TCLOAD_MODEL_H
#define TCLOAD_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "gen.h"

#define MODEL_KEYLEN 10     /* tcload's keys; longer model keys go to values */

typedef struct tc_model {
    char name[64];          /* the directory's last component */
    double cache_mb;        /* the cache the stream is sized for */
    double model_mb;        /* config.json cache_config.cacheSizeMB */
    uint64_t objects;       /* keys the model can ask for (before scaling) */
    uint64_t nkeys;         /* keys after scaling by cache_mb / model_mb */
    double get_ratio;       /* GETs among the requests for the model's keys */
    double lone_share;      /* share of all requests that are lone GETs */
    int lookaside;          /* enableLookaside: a GET miss sets the key */
    /* popularity: bucket i holds objects [pop_off[i], pop_off[i+1]) and
     * the requests up to pop_cum[i] of pop_cum[npop-1] */
    size_t npop;
    uint64_t *pop_off;
    double *pop_cum;
    /* value sizes: discrete (val[i] with weight) or piecewise uniform
     * (val[i] to val[i+1]); key sizes always piecewise */
    size_t nval, nkeysz;
    int val_discrete;
    double *val, *val_cum, *keysz, *keysz_cum;
    uint32_t max_size;
} tc_model_t;

/* Loads DIR (config.json and the files it names); cache_mb 0 keeps the
 * model's own cache size.  NULL with a message in err on failure. */
tc_model_t *model_load(const char *dir, double cache_mb, char *err,
                       size_t errlen);
void model_free(tc_model_t *m);
/* A key id in [0, nkeys) drawn by the popularity histogram. */
uint64_t model_next_key(const tc_model_t *m, rng_t *r);
/* The value size tcload stores for key: the model's value size plus its
 * key size beyond MODEL_KEYLEN, fixed by (seed, key). */
uint32_t model_value_size(const tc_model_t *m, uint64_t seed, uint64_t key);

#endif
