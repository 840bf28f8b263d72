/*
 * gen.h - request-stream generation for tcload: seeded PRNG, key
 * distributions (YCSB zipfian/scrambled zipfian, uniform, hotspot,
 * latest) and dataset specs (Uni-X-Y, fixed-X-S, etc-X, norm-X-M-SD);
 * a CacheLib model (model.h) stands for both a dataset and a distribution.
 */
#ifndef TCLOAD_GEN_H
#define TCLOAD_GEN_H

#include <stddef.h>
#include <stdint.h>

#define TC_MAX_KEYS 1000000000ULL   /* key = 1 namespace char + 9 digits */
#define TC_MAX_VALUE (64u << 20)

typedef struct {
    uint64_t s[4];
} rng_t;

uint64_t mix64(uint64_t x);
uint64_t fnv1a64_u64(uint64_t v);
void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_next(rng_t *r);
double rng_double(rng_t *r);            /* [0, 1) */
uint64_t rng_below(rng_t *r, uint64_t n); /* [0, n) */

struct tc_model;

enum ds_kind { DS_UNI, DS_FIXED, DS_ETC, DS_NORM, DS_MODEL };

typedef struct {
    enum ds_kind kind;
    uint64_t nkeys;
    uint32_t a;          /* Uni: max size Y; fixed: S; norm: mean */
    uint32_t b;          /* norm: standard deviation */
    uint64_t seed;       /* mixed into per-key value sizes */
    const struct tc_model *model;   /* DS_MODEL */
    char spec[96];
} dataset_t;

int dataset_parse(dataset_t *d, const char *spec, uint64_t seed,
                  char *err, size_t errlen);
/* DS_MODEL: the model's keys and value sizes (no text spec) */
void dataset_from_model(dataset_t *d, const struct tc_model *m,
                        uint64_t seed);
uint32_t dataset_value_size(const dataset_t *d, uint64_t key);
uint32_t dataset_max_size(const dataset_t *d);

enum dist_kind {
    DIST_ZIPF, DIST_UNIFORM, DIST_HOTSPOT, DIST_LATEST,
    DIST_MODEL          /* a model's popularity histogram (model_next_key) */
};

typedef struct {
    enum dist_kind kind;
    uint64_t n;
    double theta;
    int scramble;
    double zetan, zeta2, alpha, eta, half_pow_theta;
    double hot_frac, hot_ops;
    uint64_t hot_n;
    const struct tc_model *model;   /* DIST_MODEL */
} keydist_t;

int dist_from_name(const char *name, enum dist_kind *out);
const char *dist_name(enum dist_kind k);
int keydist_init(keydist_t *k, enum dist_kind kind, uint64_t n, double theta,
                 int scramble, double hot_frac, double hot_ops,
                 char *err, size_t errlen);
void keydist_from_model(keydist_t *k, const struct tc_model *m);
uint64_t keydist_next(const keydist_t *k, rng_t *r);
double zeta_sum(uint64_t n, double theta);

#endif
