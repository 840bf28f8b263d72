/*
 * model.c - owns tcload's CacheLib cachebench workload models: reading a
 * model directory (config.json, its popularity and value-size files: the
 * few JSON fields cachebench's hit-ratio configs use), scaling the keys
 * with the cache (bench/README.md "CacheLib models"), and the draws: a
 * key by the popularity histogram, as cachebench's FastDiscrete does (a
 * bucket by its weight, an object uniformly inside it, folded onto the
 * scaled key space), and each key's value size from the value-size and
 * key-size histograms, fixed by the dataset seed and the key id.
 */
#define _GNU_SOURCE
#include "model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *dir, const char *file, char *err,
                   size_t errlen)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "model: cannot read %s: %s", path,
                 strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - 1 - len, f);
        if (len < cap - 1)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap);
        if (!nb)
            free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        snprintf(err, errlen, "model: cannot read %s", path);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

/* The value of field "key" in a JSON text (a key: its string is followed
 * by a colon), or NULL.  Strings hold no escaped quotes in these files. */
static const char *field(const char *text, const char *key)
{
    size_t kl = strlen(key);
    const char *p = strchr(text, '"');
    while (p) {
        const char *end = strchr(p + 1, '"');
        if (!end)
            return NULL;
        const char *v = end + 1;
        while (isspace((unsigned char)*v))
            v++;
        if (*v == ':' && (size_t)(end - p - 1) == kl
            && !strncmp(p + 1, key, kl)) {
            v++;
            while (isspace((unsigned char)*v))
                v++;
            return v;
        }
        p = strchr(end + 1, '"');
    }
    return NULL;
}

/* a number field; 1 found, 0 absent, -1 not a number */
static int num_field(const char *text, const char *key, double *out)
{
    const char *v = field(text, key);
    if (!v)
        return 0;
    char *e;
    errno = 0;
    *out = strtod(v, &e);
    return e == v || errno || !isfinite(*out) ? -1 : 1;
}

/* an array of numbers; its length, 0 absent or empty, -1 malformed */
static long array_field(const char *text, const char *key, double **out)
{
    const char *v = field(text, key);
    *out = NULL;
    if (!v)
        return 0;
    if (*v++ != '[')
        return -1;
    size_t n = 0, cap = 64;
    double *a = malloc(cap * sizeof(double));
    while (a) {
        while (isspace((unsigned char)*v))
            v++;
        if (*v == ']') {
            *out = a;
            return (long)n;
        }
        char *e;
        errno = 0;
        double x = strtod(v, &e);
        if (e == v || errno || !isfinite(x))
            break;
        if (n == cap) {
            double *na = realloc(a, 2 * cap * sizeof(double));
            if (!na)
                break;
            a = na;
            cap *= 2;
        }
        a[n++] = x;
        v = e;
        while (isspace((unsigned char)*v))
            v++;
        if (*v == ',')
            v++;
        else if (*v != ']')
            break;
    }
    free(a);
    return -1;
}

/* a string field into out; 1 found, 0 absent */
static int str_field(const char *text, const char *key, char *out,
                     size_t outlen)
{
    const char *v = field(text, key);
    if (!v || *v != '"')
        return 0;
    const char *end = strchr(v + 1, '"');
    if (!end || (size_t)(end - v) > outlen)
        return 0;
    memcpy(out, v + 1, (size_t)(end - v - 1));
    out[end - v - 1] = '\0';
    return 1;
}

/* cumulative weights of n non-negative weights; -1 if one is negative or
 * all are zero */
static double *cumulate(const double *w, size_t n)
{
    double *c = malloc(n * sizeof(double)), s = 0;
    for (size_t i = 0; c && i < n; i++) {
        if (w[i] < 0) {
            free(c);
            return NULL;
        }
        s += w[i];
        c[i] = s;
    }
    if (c && !(s > 0)) {
        free(c);
        return NULL;
    }
    return c;
}

/* the first i with cum[i] > x (x below cum[n-1]) */
static size_t pick(const double *cum, size_t n, double x)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void model_free(tc_model_t *m)
{
    if (!m)
        return;
    free(m->pop_off);
    free(m->pop_cum);
    free(m->val);
    free(m->val_cum);
    free(m->keysz);
    free(m->keysz_cum);
    free(m);
}

static int load_popularity(tc_model_t *m, const char *text, char *err,
                           size_t errlen)
{
    double *b, *w;
    long nb = array_field(text, "popularityBuckets", &b);
    long nw = array_field(text, "popularityWeights", &w);
    int ok = nb > 0 && nb == nw;
    uint64_t total = 0;
    for (long i = 0; ok && i < nb; i++)
        ok = b[i] >= 1 && b[i] == floor(b[i]) && b[i] < 1e15;
    if (ok) {
        m->npop = (size_t)nb;
        m->pop_off = malloc((m->npop + 1) * sizeof(uint64_t));
        m->pop_cum = cumulate(w, m->npop);
        ok = m->pop_off && m->pop_cum;
    }
    for (size_t i = 0; ok && i < m->npop; i++) {
        m->pop_off[i] = total;
        total += (uint64_t)b[i];
    }
    if (ok)
        m->pop_off[m->npop] = total;
    free(b);
    free(w);
    if (!ok)
        snprintf(err, errlen, "model %s: popularityBuckets and "
                 "popularityWeights must be arrays of the same length, "
                 "buckets of at least one key, weights not negative and "
                 "not all zero", m->name);
    return ok ? 0 : -1;
}

/* a histogram of sizes: ranges r (nr) with weights p (np); discrete when
 * nr == np, piecewise uniform when nr == np + 1 */
static int load_sizes(const char *text, const char *rkey, const char *pkey,
                      int allow_discrete, double **r, double **cum,
                      size_t *n, int *discrete)
{
    double *p;
    long nr = array_field(text, rkey, r);
    long np = array_field(text, pkey, &p);
    int ok = np > 0 && (nr == np + 1 || (allow_discrete && nr == np));
    for (long i = 0; ok && i < nr; i++)
        ok = (*r)[i] >= 0 && (*r)[i] <= TC_MAX_VALUE
             && (i == 0 || (*r)[i] >= (*r)[i - 1]);
    if (ok) {
        *cum = cumulate(p, (size_t)np);
        ok = *cum != NULL;
    }
    free(p);
    *n = ok ? (size_t)np : 0;
    *discrete = nr == np;
    return ok ? 0 : -1;
}

static int zero_or_absent(const char *text, const char *key)
{
    double v;
    int f = num_field(text, key, &v);
    return f == 0 || (f == 1 && v == 0);
}

tc_model_t *model_load(const char *dir, double cache_mb, char *err,
                       size_t errlen)
{
    char *cfg = slurp(dir, "config.json", err, errlen);
    if (!cfg)
        return NULL;
    tc_model_t *m = calloc(1, sizeof(*m));
    char *pop = NULL, *sizes = NULL;
    if (!m) {
        free(cfg);
        snprintf(err, errlen, "model: out of memory");
        return NULL;
    }
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    size_t b = dl;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    snprintf(m->name, sizeof(m->name), "%.*s", (int)(dl - b), dir + b);
    double num_keys, get = 0, set = 0, lone = 0;
    int keys_discrete;
    int bad = num_field(cfg, "cacheSizeMB", &m->model_mb) != 1
              || !(m->model_mb > 0)
              || num_field(cfg, "numKeys", &num_keys) != 1 || !(num_keys >= 1)
              || num_field(cfg, "getRatio", &get) < 0
              || num_field(cfg, "setRatio", &set) < 0
              || num_field(cfg, "loneGetRatio", &lone) < 0
              || get < 0 || set < 0 || lone < 0 || !(get + set + lone > 0);
    if (bad) {
        snprintf(err, errlen, "model %s: config.json needs cacheSizeMB, "
                 "numKeys and getRatio/setRatio/loneGetRatio (not negative, "
                 "not all zero)", m->name);
        goto fail;
    }
    static const char *const unsupported[] = {
        "delRatio", "addChainedRatio", "loneSetRatio", "updateRatio",
        "couldExistRatio"
    };
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(*unsupported); i++) {
        if (!zero_or_absent(cfg, unsupported[i])) {
            snprintf(err, errlen, "model %s: %s is not supported (tcload "
                     "sends GETs and SETs)", m->name, unsupported[i]);
            goto fail;
        }
    }
    const char *la = field(cfg, "enableLookaside");
    m->lookaside = la && !strncmp(la, "true", 4);
    m->get_ratio = get + set > 0 ? get / (get + set) : 1;
    m->lone_share = lone / (get + set + lone);

    char file[256];
    const char *poptext = cfg, *sizetext = cfg;
    if (str_field(cfg, "popDistFile", file, sizeof(file))) {
        if (!(pop = slurp(dir, file, err, errlen)))
            goto fail;
        poptext = pop;
    }
    if (str_field(cfg, "valSizeDistFile", file, sizeof(file))) {
        if (!(sizes = slurp(dir, file, err, errlen)))
            goto fail;
        sizetext = sizes;
    }
    if (load_popularity(m, poptext, err, errlen) < 0)
        goto fail;
    if (load_sizes(sizetext, "valSizeRange", "valSizeRangeProbability", 1,
                   &m->val, &m->val_cum, &m->nval, &m->val_discrete) < 0) {
        snprintf(err, errlen, "model %s: valSizeRange and "
                 "valSizeRangeProbability must be a histogram (as many "
                 "sizes as weights, or one more), sizes ascending up to %u",
                 m->name, TC_MAX_VALUE);
        goto fail;
    }
    if (!field(cfg, "keySizeRange")) {
        m->keysz = malloc(2 * sizeof(double));
        m->keysz_cum = malloc(sizeof(double));
        if (!m->keysz || !m->keysz_cum)
            goto fail;
        m->keysz[0] = MODEL_KEYLEN;
        m->keysz[1] = MODEL_KEYLEN + 1;
        m->keysz_cum[0] = 1;
        m->nkeysz = 1;
    } else if (load_sizes(cfg, "keySizeRange", "keySizeRangeProbability", 0,
                          &m->keysz, &m->keysz_cum, &m->nkeysz,
                          &keys_discrete) < 0 || m->keysz[0] < 1) {
        snprintf(err, errlen, "model %s: keySizeRange needs one size more "
                 "than keySizeRangeProbability, ascending from 1", m->name);
        goto fail;
    }
    /* cachebench folds its objects onto numKeys keys: it asks for no
     * more keys than the histogram has objects */
    uint64_t objects = m->pop_off[m->npop];
    m->objects = num_keys < (double)objects ? (uint64_t)num_keys : objects;
    m->cache_mb = cache_mb > 0 ? cache_mb : m->model_mb;
    if (m->cache_mb > m->model_mb) {
        snprintf(err, errlen, "model %s: sized for %g MB; a larger cache "
                 "(%g MB) would need keys it does not describe", m->name,
                 m->model_mb, m->cache_mb);
        goto fail;
    }
    double scaled = floor((double)m->objects * m->cache_mb / m->model_mb
                          + 0.5);
    m->nkeys = scaled < 1 ? 1 : (uint64_t)scaled;
    double vmax = m->val[m->val_discrete ? m->nval - 1 : m->nval];
    double smax = vmax + m->keysz[m->nkeysz] - MODEL_KEYLEN;
    m->max_size = smax < 1 ? 1 : smax > TC_MAX_VALUE ? TC_MAX_VALUE
                                                      : (uint32_t)smax;
    free(cfg);
    free(pop);
    free(sizes);
    return m;
fail:
    free(cfg);
    free(pop);
    free(sizes);
    model_free(m);
    return NULL;
}

uint64_t model_next_key(const tc_model_t *m, rng_t *r)
{
    size_t b = pick(m->pop_cum, m->npop,
                    rng_double(r) * m->pop_cum[m->npop - 1]);
    uint64_t obj = m->pop_off[b] + rng_below(r, m->pop_off[b + 1]
                                                - m->pop_off[b]);
    return (uint64_t)(((unsigned __int128)obj * m->nkeys)
                      / m->pop_off[m->npop]);
}

static double unit(uint64_t h)
{
    return (double)(h >> 11) * 0x1.0p-53;
}

uint32_t model_value_size(const tc_model_t *m, uint64_t seed, uint64_t key)
{
    uint64_t h = mix64(seed ^ mix64(key));
    uint64_t h2 = mix64(h), h3 = mix64(h2), h4 = mix64(h3);
    size_t i = pick(m->val_cum, m->nval, unit(h) * m->val_cum[m->nval - 1]);
    double v = m->val[i];
    if (!m->val_discrete)
        v += unit(h2) * (m->val[i + 1] - m->val[i]);
    size_t j = pick(m->keysz_cum, m->nkeysz,
                    unit(h3) * m->keysz_cum[m->nkeysz - 1]);
    double k = m->keysz[j] + unit(h4) * (m->keysz[j + 1] - m->keysz[j]);
    double s = floor(v) + floor(k) - MODEL_KEYLEN;
    return s < 1 ? 1 : s > m->max_size ? m->max_size : (uint32_t)s;
}
