/*
 * gen.c - owns request-stream generation for tcload: the xoshiro256**
 * PRNG seeded through splitmix64, the YCSB ZipfianGenerator math (zeta,
 * eta, alpha) and its scrambled variant (FNV-1a 64 of the rank mod N),
 * uniform, hotspot and latest key choosers, and the dataset specs that
 * fix each key's value size from the seed and the key id (a CacheLib
 * model's draws are model.c's).
 */
#define _GNU_SOURCE
#include "gen.h"
#include "model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

uint64_t mix64(uint64_t x)
{
    /* splitmix64 finaliser */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t fnv1a64_u64(uint64_t v)
{
    /* FNV-1a over the 8 little-endian bytes of v, as YCSB's fnvhash64 */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < 8; i++) {
        h ^= v & 0xff;
        h *= 1099511628211ULL;
        v >>= 8;
    }
    return h & 0x7fffffffffffffffULL;
}

void rng_seed(rng_t *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) {
        x = mix64(x);
        r->s[i] = x;
    }
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
        r->s[0] = 1;
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double rng_double(rng_t *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t rng_below(rng_t *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* ---- datasets ---- */

static int parse_count(const char *s, const char **end, uint64_t unit_k,
                       uint64_t *out)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (e == s || errno || !(v >= 0))
        return -1;
    if (*e == 'k' || *e == 'K') {
        v *= (double)unit_k;
        e++;
    } else if (*e == 'm' || *e == 'M') {
        v *= (double)unit_k * (double)unit_k;
        e++;
    }
    if (v > 1e18 || v != floor(v))
        return -1;
    *out = (uint64_t)v;
    *end = e;
    return 0;
}

int dataset_parse(dataset_t *d, const char *spec, uint64_t seed,
                  char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    d->seed = mix64(seed ^ 0x5eedda7a5e7ULL);
    snprintf(d->spec, sizeof(d->spec), "%s", spec);
    const char *p = strchr(spec, '-');
    if (!p) {
        snprintf(err, errlen, "bad dataset '%s' (want Uni-X-Y, fixed-X-S, "
                 "etc-X or norm-X-MEAN-SD)", spec);
        return -1;
    }
    size_t nl = (size_t)(p - spec);
    if (nl == 3 && strncasecmp(spec, "uni", 3) == 0)
        d->kind = DS_UNI;
    else if (nl == 5 && strncasecmp(spec, "fixed", 5) == 0)
        d->kind = DS_FIXED;
    else if (nl == 3 && strncasecmp(spec, "etc", 3) == 0)
        d->kind = DS_ETC;
    else if (nl == 4 && strncasecmp(spec, "norm", 4) == 0)
        d->kind = DS_NORM;
    else {
        snprintf(err, errlen, "unknown dataset kind in '%s' (want Uni, fixed, "
                 "etc or norm)", spec);
        return -1;
    }
    const char *e;
    uint64_t v[3] = {0, 0, 0};
    int want = d->kind == DS_ETC ? 0 : d->kind == DS_NORM ? 2 : 1;
    if (parse_count(p + 1, &e, 1000, &d->nkeys) < 0)
        goto bad;
    for (int i = 0; i < want; i++) {
        if (*e != '-' || parse_count(e + 1, &e, 1024, &v[i]) < 0)
            goto bad;
    }
    if (*e != '\0')
        goto bad;
    if (d->nkeys == 0) {
        snprintf(err, errlen, "dataset '%s' has zero keys", spec);
        return -1;
    }
    if (d->nkeys > TC_MAX_KEYS) {
        snprintf(err, errlen, "dataset '%s': at most %llu keys", spec,
                 (unsigned long long)TC_MAX_KEYS);
        return -1;
    }
    if (d->kind == DS_UNI || d->kind == DS_FIXED || d->kind == DS_NORM) {
        if (v[0] == 0 || v[0] > TC_MAX_VALUE || v[1] > TC_MAX_VALUE) {
            snprintf(err, errlen, "dataset '%s': value size must be in 1..%u",
                     spec, TC_MAX_VALUE);
            return -1;
        }
    }
    d->a = (uint32_t)v[0];
    d->b = (uint32_t)v[1];
    return 0;
bad:
    snprintf(err, errlen, "cannot parse dataset '%s' (examples: Uni-100000-200, "
             "Uni-3M-2K, fixed-1000-100, etc-100000, norm-1M-4K-1K)", spec);
    return -1;
}

void dataset_from_model(dataset_t *d, const struct tc_model *m,
                        uint64_t seed)
{
    memset(d, 0, sizeof(*d));
    d->kind = DS_MODEL;
    d->seed = mix64(seed ^ 0x5eedda7a5e7ULL);
    d->model = m;
    d->nkeys = m->nkeys;
    snprintf(d->spec, sizeof(d->spec), "model:%s/%gMB", m->name,
             m->cache_mb);
}

/*
 * etc-X: a Facebook-ETC-like mix (Atikoglu et al. 2012 report most ETC
 * values are tiny with a long tail).  Chosen here: 40% of keys 1..13 B,
 * 55% 14..300 B, 5% 301..8000 B, uniform inside each band.
 */
uint32_t dataset_value_size(const dataset_t *d, uint64_t key)
{
    uint64_t h = mix64(d->seed ^ mix64(key));
    switch (d->kind) {
    case DS_UNI:
        return 1 + (uint32_t)(h % d->a);
    case DS_FIXED:
        return d->a;
    case DS_ETC: {
        uint64_t band = h % 100, h2 = mix64(h);
        if (band < 40)
            return 1 + (uint32_t)(h2 % 13);
        if (band < 95)
            return 14 + (uint32_t)(h2 % 287);
        return 301 + (uint32_t)(h2 % 7700);
    }
    case DS_NORM: {
        /* Box-Muller from two hash-derived uniforms */
        double u1 = ((h >> 11) + 1) * 0x1.0p-53;
        double u2 = (mix64(h) >> 11) * 0x1.0p-53;
        double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        double s = (double)d->a + z * (double)d->b;
        if (s < 1)
            s = 1;
        if (s > TC_MAX_VALUE)
            s = TC_MAX_VALUE;
        return (uint32_t)s;
    }
    case DS_MODEL:
        return model_value_size(d->model, d->seed, key);
    }
    return 1;
}

uint32_t dataset_max_size(const dataset_t *d)
{
    switch (d->kind) {
    case DS_UNI:
    case DS_FIXED:
        return d->a;
    case DS_ETC:
        return 8000;
    case DS_NORM: {
        double m = (double)d->a + 8.0 * d->b;
        return m > TC_MAX_VALUE ? TC_MAX_VALUE : (uint32_t)m;
    }
    case DS_MODEL:
        return d->model->max_size;
    }
    return 1;
}

/* ---- key distributions ---- */

static const char *dist_names[] = {"zipf", "uniform", "hotspot", "latest",
                                   "model"};

int dist_from_name(const char *name, enum dist_kind *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(name, dist_names[i]) == 0) {
            *out = (enum dist_kind)i;
            return 0;
        }
    }
    if (strcasecmp(name, "zipfian") == 0) {
        *out = DIST_ZIPF;
        return 0;
    }
    return -1;
}

const char *dist_name(enum dist_kind k)
{
    return dist_names[k];
}

/*
 * zeta(n, theta) = sum_{i=1..n} i^-theta.  Exact for n <= 2^20; beyond,
 * exact head plus an Euler-Maclaurin tail (relative error ~1e-12), so a
 * billion-key dataset costs milliseconds instead of a minute.
 */
double zeta_sum(uint64_t n, double theta)
{
    const uint64_t exact = 1u << 20;
    double s = 0;
    uint64_t m = n <= exact ? n : exact;
    for (uint64_t i = m; i >= 1; i--)    /* small terms first */
        s += pow((double)i, -theta);
    if (n <= exact)
        return s;
    /* sum_{i=m+1..n} f(i), f(x) = x^-theta */
    double a = (double)(m + 1), b = (double)n;
    double integral = fabs(theta - 1.0) < 1e-12 ? log(b / a)
        : (pow(b, 1.0 - theta) - pow(a, 1.0 - theta)) / (1.0 - theta);
    double fa = pow(a, -theta), fb = pow(b, -theta);
    double dfa = -theta * pow(a, -theta - 1), dfb = -theta * pow(b, -theta - 1);
    return s + integral + (fa + fb) / 2 + (dfb - dfa) / 12;
}

int keydist_init(keydist_t *k, enum dist_kind kind, uint64_t n, double theta,
                 int scramble, double hot_frac, double hot_ops,
                 char *err, size_t errlen)
{
    memset(k, 0, sizeof(*k));
    k->kind = kind;
    k->n = n;
    k->theta = theta;
    k->scramble = scramble;
    k->hot_frac = hot_frac;
    k->hot_ops = hot_ops;
    if (n == 0) {
        snprintf(err, errlen, "zero keys");
        return -1;
    }
    if (kind == DIST_ZIPF || kind == DIST_LATEST) {
        /* YCSB's closed form divides by 1 - theta; beyond 10 nearly
         * every request is rank 0 and pow() loses all precision */
        if (!(theta > 0) || theta == 1.0 || !(theta <= 10)) {
            snprintf(err, errlen, "theta %g out of range: the YCSB zipfian "
                     "generator needs 0 < theta <= 10 and theta != 1", theta);
            return -1;
        }
        k->zetan = zeta_sum(n, theta);
        k->zeta2 = zeta_sum(2, theta);
        k->alpha = 1.0 / (1.0 - theta);
        k->eta = (1.0 - pow(2.0 / (double)n, 1.0 - theta)) /
                 (1.0 - k->zeta2 / k->zetan);
        k->half_pow_theta = pow(0.5, theta);
    }
    if (kind == DIST_HOTSPOT) {
        if (!(hot_frac >= 0 && hot_frac <= 1) || !(hot_ops >= 0 && hot_ops <= 1)) {
            snprintf(err, errlen, "hot-frac and hot-ops must be in [0,1]");
            return -1;
        }
        k->hot_n = (uint64_t)((double)n * hot_frac);
    }
    return 0;
}

static uint64_t zipf_rank(const keydist_t *k, rng_t *r)
{
    double u = rng_double(r);
    double uz = u * k->zetan;
    if (uz < 1.0)
        return 0;
    if (uz < 1.0 + k->half_pow_theta)
        return k->n > 1 ? 1 : 0;
    uint64_t v = (uint64_t)((double)k->n *
                            pow(k->eta * u - k->eta + 1.0, k->alpha));
    return v >= k->n ? k->n - 1 : v;
}

void keydist_from_model(keydist_t *k, const struct tc_model *m)
{
    memset(k, 0, sizeof(*k));
    k->kind = DIST_MODEL;
    k->n = m->nkeys;
    k->model = m;
}

uint64_t keydist_next(const keydist_t *k, rng_t *r)
{
    switch (k->kind) {
    case DIST_ZIPF: {
        uint64_t rank = zipf_rank(k, r);
        return k->scramble ? fnv1a64_u64(rank) % k->n : rank;
    }
    case DIST_UNIFORM:
        return rng_below(r, k->n);
    case DIST_HOTSPOT: {
        uint64_t cold = k->n - k->hot_n;
        int hot = rng_double(r) < k->hot_ops;
        if ((hot && k->hot_n > 0) || cold == 0)
            return rng_below(r, k->hot_n);
        return k->hot_n + rng_below(r, cold);
    }
    case DIST_LATEST:
        /* YCSB SkewedLatest over a fixed key space: the newest key (n-1)
         * is the most popular */
        return k->n - 1 - zipf_rank(k, r);
    case DIST_MODEL:
        return model_next_key(k->model, r);
    }
    return 0;
}
