/*
 * tcload.c - owns tcload's command line: option and --phase parsing and
 * validation (exit 2 on bad settings), a phase's CacheLib model (loaded
 * by model.c), per-connection seed derivation,
 * the --dry-run / --dump-keys stream printer, phase sequencing
 * (preload then measured run), the text summary and the --json report.
 */
#define _GNU_SOURCE
#include "tcload.h"
#include "model.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void usage(FILE *f)
{
    fprintf(f,
"usage: tcload (-s HOST:PORT | -S PATH | --dry-run) [options]\n"
"  -s, --server HOST:PORT   a memcached server over TCP\n"
"  -S, --socket PATH        ... over a unix socket\n"
"  -B, --protocol P         ascii (default) or binary (GET and SET frames)\n"
"      --tls                TLS over TCP (OpenSSL); the server's certificate\n"
"                           is not verified unless --tls-ca is given\n"
"      --tls-ca FILE        verify the server against these CAs (PEM)\n"
"      --tls-cert FILE      present this client certificate chain (PEM)\n"
"      --tls-key FILE       ... with this private key (PEM)\n"
"  -c, --conns N            connections (default 1)\n"
"  -T, --threads N          threads, each an epoll loop (default 1)\n"
"  -d, --depth N            requests in flight per connection (default 1;\n"
"                           64 for an open-loop run unless given)\n"
"  -r, --rate R             open loop at R req/s over all connections;\n"
"                           latency counts from the intended send time\n"
"  -g, --get F              GET ratio in [0,1] (default 0.95)\n"
"      --dist D             zipf (YCSB scrambled zipfian), uniform,\n"
"                           hotspot, latest (default zipf)\n"
"      --theta X            zipf/latest skew, 0 < X <= 10, X != 1 (0.99)\n"
"      --no-scramble        zipf: key id = rank (rank 0 hottest)\n"
"      --hot-frac F         hotspot: share of keys that are hot (0.2)\n"
"      --hot-ops F          hotspot: share of requests to them (0.8)\n"
"      --dataset SPEC       Uni-X-Y | fixed-X-S | etc-X | norm-X-MEAN-SD\n"
"                           (X keys; k/M suffixes; default Uni-100000-200)\n"
"      --model DIR          a CacheLib cachebench model (config.json,\n"
"                           pop.json, sizes.json) in place of --dataset and\n"
"                           --dist; it sets -g, --one-hit (its lone GETs)\n"
"                           and --set-on-miss (lookaside) unless a phase\n"
"                           says otherwise\n"
"      --model-mb MB        scale the model's keys to a cache of MB\n"
"                           (default: the cache it was sized for)\n"
"      --set-on-miss        after a GET miss, set the key (not for --absent)\n"
"      --one-hit F          a share F of requests go to keys asked for once\n"
"                           (ids from the dataset's size up, never repeated)\n"
"      --absent F           a share F of requests are GETs of keys never\n"
"                           stored (ids from 900000000; no set-on-miss)\n"
"      --preload            set every key of the dataset once before each\n"
"                           phase's measured run (pipelined)\n"
"      --preload-depth N    requests in flight per connection while\n"
"                           preloading (default 64)\n"
"      --phase SPEC         key=value,... run phases in order; keys:\n"
"                           dataset requests duration get dist theta\n"
"                           hot-frac hot-ops rate preload set-on-miss ns\n"
"                           one-hit absent model model-mb; a new ns= moves\n"
"                           the working set to keys no earlier phase asked\n"
"                           for (unset keys take the global options)\n"
"      --seed N             stream seed (default 1)\n"
"      --dataset-seed N     fixes each key's value size (default 1): streams\n"
"                           of different --seed see the same items\n"
"  -n, --requests N         requests per phase (1e6 accepted)\n"
"      --duration S         seconds per phase (default 10 when no -n)\n"
"      --max-duration S     hard cap on the whole run (default 600)\n"
"      --timeout S          drop a connection silent this long (10)\n"
"      --json FILE          machine-readable report\n"
"      --trace FILE         write the generated stream: 'G|S keyid size'\n"
"      --dry-run            print the stream instead of sending it\n"
"      --dump-keys N        dry run of N requests per phase\n"
"  -q, --quiet              no text summary\n"
"exit: 0 run completed (error replies are counted, not fatal); 1 a\n"
"connection failed, was closed, timed out or desynchronised, or a value\n"
"read back was not the one stored; 2 bad usage\n");
}

static void die2(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tcload: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static double num(const char *what, const char *s)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (e == s || *e != '\0' || errno || !isfinite(v))
        die2("bad number for %s: '%s'", what, s);
    return v;
}

static uint64_t count(const char *what, const char *s)
{
    double v = num(what, s);
    if (v < 0 || v != floor(v) || v > 1e18)
        die2("%s must be a non-negative integer: '%s'", what, s);
    return (uint64_t)v;
}

uint64_t conn_seed(uint64_t seed, int phase, int conn)
{
    uint64_t x = mix64(seed);
    x = mix64(x ^ ((uint64_t)(phase + 1) * 0x9e3779b97f4a7c15ULL));
    return mix64(x ^ ((uint64_t)(conn + 1) * 0xc2b2ae3d27d4eb4fULL));
}

void phase_next(const phase_t *ph, rng_t *r, int conn, int nconns,
                uint64_t *uniq, int *op, uint64_t *key, int *kind)
{
    *kind = KIND_STREAM;
    /* no extra draw unless asked for: streams without these stay as they
     * were */
    if (ph->one_hit > 0 || ph->absent > 0) {
        double u = rng_double(r);
        if (u < ph->absent)
            *kind = KIND_ABSENT;
        else if (u < ph->absent + ph->one_hit)
            *kind = KIND_ONE_HIT;
    }
    if (*kind == KIND_ABSENT) {
        *op = OP_GET;
        *key = TC_ABSENT_BASE + rng_below(r, TC_MAX_KEYS - TC_ABSENT_BASE);
        return;
    }
    *op = rng_double(r) < ph->get_ratio ? OP_GET : OP_SET;
    if (*kind == KIND_ONE_HIT) {
        *key = ph->ds.nkeys + (uint64_t)conn + (uint64_t)nconns * (*uniq)++;
        return;
    }
    *key = keydist_next(&ph->kd, r);
}

void stats_init(stats_t *s)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < 3; i++)
        hist_init(&s->lat[i]);
}

void stats_merge(stats_t *d, const stats_t *s)
{
    for (int i = 0; i < 2; i++) {
        d->sent[i] += s->sent[i];
        d->done[i] += s->done[i];
    }
    d->hits += s->hits;
    d->misses += s->misses;
    d->set_on_miss += s->set_on_miss;
    d->one_hit += s->one_hit;
    d->absent += s->absent;
    d->absent_hits += s->absent_hits;
    for (int i = 0; i < E_N; i++)
        d->err[i] += s->err[i];
    d->bytes_out += s->bytes_out;
    d->bytes_in += s->bytes_in;
    if (!d->first_err[0] && s->first_err[0])
        memcpy(d->first_err, s->first_err, sizeof(d->first_err));
    for (int i = 0; i < 3; i++)
        hist_merge(&d->lat[i], &s->lat[i]);
}

static uint64_t err_total(const stats_t *s)
{
    uint64_t t = 0;
    for (int i = 0; i < E_N; i++)
        if (i != E_LOST)
            t += s->err[i];
    return t + s->err[E_LOST];
}

/* ---- options ---- */

typedef struct {
    const char *dataset;
    uint64_t requests;
    int has_requests;
    double duration, get, theta, hot_frac, hot_ops, rate;
    enum dist_kind dist;
    int preload, set_on_miss;
    double one_hit, absent;
    const char *model;
    double model_mb;
} defaults_t;

static void build_phase(config_t *cfg, phase_t *ph, int idx, const char *spec,
                        const defaults_t *df)
{
    char err[512];
    char dataset[128], model[512];
    int has_dataset = 0, has_dist = 0, has_get = 0, has_one_hit = 0;
    int has_som = 0, has_model = 0;
    memset(ph, 0, sizeof(*ph));
    ph->index = idx;
    snprintf(ph->spec, sizeof(ph->spec), "%s", spec ? spec : "");
    snprintf(dataset, sizeof(dataset), "%s", df->dataset);
    snprintf(model, sizeof(model), "%s", df->model ? df->model : "");
    double model_mb = df->model_mb;
    ph->requests = df->requests;
    int has_requests = df->has_requests;
    ph->duration = df->duration;
    ph->get_ratio = df->get;
    ph->theta = df->theta;
    ph->hot_frac = df->hot_frac;
    ph->hot_ops = df->hot_ops;
    ph->rate = df->rate;
    ph->dist = df->dist;
    ph->preload = df->preload;
    ph->set_on_miss = df->set_on_miss;
    ph->one_hit = df->one_hit;
    ph->absent = df->absent;
    ph->ns = 'k';
    if (spec) {
        char *copy = strdup(spec), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(tok, '=');
            if (!eq)
                die2("phase %d: '%s' is not key=value", idx + 1, tok);
            *eq = '\0';
            const char *k = tok, *v = eq + 1;
            if (!strcmp(k, "dataset")) {
                snprintf(dataset, sizeof(dataset), "%s", v);
                has_dataset = 1;
            } else if (!strcmp(k, "model")) {
                snprintf(model, sizeof(model), "%s", v);
                has_model = 1;
            } else if (!strcmp(k, "model-mb"))
                model_mb = num("model-mb", v);
            else if (!strcmp(k, "requests")) {
                ph->requests = count("requests", v);
                has_requests = 1;
            } else if (!strcmp(k, "duration"))
                ph->duration = num("duration", v);
            else if (!strcmp(k, "get")) {
                ph->get_ratio = num("get", v);
                has_get = 1;
            } else if (!strcmp(k, "theta"))
                ph->theta = num("theta", v);
            else if (!strcmp(k, "hot-frac"))
                ph->hot_frac = num("hot-frac", v);
            else if (!strcmp(k, "hot-ops"))
                ph->hot_ops = num("hot-ops", v);
            else if (!strcmp(k, "rate"))
                ph->rate = num("rate", v);
            else if (!strcmp(k, "preload"))
                ph->preload = num("preload", v) != 0;
            else if (!strcmp(k, "set-on-miss")) {
                ph->set_on_miss = num("set-on-miss", v) != 0;
                has_som = 1;
            } else if (!strcmp(k, "one-hit")) {
                ph->one_hit = num("one-hit", v);
                has_one_hit = 1;
            } else if (!strcmp(k, "absent"))
                ph->absent = num("absent", v);
            else if (!strcmp(k, "dist")) {
                has_dist = 1;
                if (dist_from_name(v, &ph->dist) < 0)
                    die2("phase %d: unknown distribution '%s' (zipf, uniform, "
                         "hotspot, latest)", idx + 1, v);
            } else if (!strcmp(k, "ns")) {
                if (strlen(v) != 1 || v[0] <= ' ' || v[0] > '~')
                    die2("phase %d: ns must be one printable character",
                         idx + 1);
                ph->ns = v[0];
            } else
                die2("phase %d: unknown key '%s'", idx + 1, k);
        }
        free(copy);
    }
    if (has_dataset && has_model)
        die2("phase %d: model= replaces dataset=", idx + 1);
    if (has_dataset)
        model[0] = '\0';       /* a phase's dataset= over the global --model */
    if (model_mb < 0)
        die2("model-mb must not be negative");
    if (model[0]) {
        if (has_dist)
            die2("phase %d: a model's popularity replaces dist=", idx + 1);
        ph->model = model_load(model, model_mb, err, sizeof(err));
        if (!ph->model)
            die2("%s", err);
        dataset_from_model(&ph->ds, ph->model, cfg->dataset_seed);
        ph->dist = DIST_MODEL;
        if (!has_get)
            ph->get_ratio = ph->model->get_ratio;
        if (!has_one_hit)
            ph->one_hit = ph->model->lone_share;
        if (!has_som)
            ph->set_on_miss = ph->model->lookaside;
    } else if (dataset_parse(&ph->ds, dataset, cfg->dataset_seed, err,
                             sizeof(err)) < 0) {
        die2("%s", err);
    }
    if (!(ph->get_ratio >= 0 && ph->get_ratio <= 1))
        die2("GET ratio must be in [0,1], got %g", ph->get_ratio);
    if (ph->duration < 0 || ph->rate < 0)
        die2("duration and rate must not be negative");
    if (!(ph->one_hit >= 0 && ph->absent >= 0
          && ph->one_hit + ph->absent <= 1))
        die2("one-hit and absent must be shares in [0,1] that add up to 1 at "
             "most");
    if (ph->ds.nkeys > TC_ABSENT_BASE / 2)
        die2("phase %d: %llu keys leave no room for one-hit and absent keys "
             "(at most %llu)", idx + 1, (unsigned long long)ph->ds.nkeys,
             TC_ABSENT_BASE / 2);
    if (ph->model)
        keydist_from_model(&ph->kd, ph->model);
    else if (keydist_init(&ph->kd, ph->dist, ph->ds.nkeys, ph->theta,
                          cfg->scramble, ph->hot_frac, ph->hot_ops, err,
                          sizeof(err)) < 0)
        die2("%s", err);
    if (cfg->dry_run) {
        if (cfg->dump_keys)
            ph->requests = cfg->dump_keys;
        else if (!has_requests)
            die2("--dry-run needs --requests (or use --dump-keys N)");
        ph->duration = 0;
    } else if (!has_requests && ph->duration == 0) {
        ph->duration = 10;
    }
}

static void free_phases(config_t *cfg)
{
    for (int i = 0; i < cfg->nphases; i++)
        model_free(cfg->phases[i].model);
    free(cfg->phases);
}

/* ---- dry run ---- */

static void phase_header(FILE *f, const config_t *cfg, const phase_t *ph)
{
    fprintf(f, "# phase %d ns=%c dataset=%s dist=%s theta=%g get=%g seed=%llu "
            "conns=%d", ph->index, ph->ns, ph->ds.spec, dist_name(ph->dist),
            ph->theta, ph->get_ratio, (unsigned long long)cfg->seed,
            cfg->conns);
    if (ph->one_hit > 0 || ph->absent > 0)
        fprintf(f, " one-hit=%g absent=%g", ph->one_hit, ph->absent);
    if (ph->model)
        fprintf(f, " keys=%llu set-on-miss=%d",
                (unsigned long long)ph->ds.nkeys, ph->set_on_miss);
    fprintf(f, "\n");
}

static void dry_run(config_t *cfg)
{
    FILE *out = cfg->trace ? cfg->trace : stdout;
    uint64_t *uniq = calloc((size_t)cfg->conns, sizeof(uint64_t));
    if (!uniq)
        die2("out of memory");
    for (int p = 0; p < cfg->nphases; p++) {
        phase_t *ph = &cfg->phases[p];
        phase_header(out, cfg, ph);
        uint64_t total = ph->requests, nc = (uint64_t)cfg->conns;
        for (int i = 0; i < cfg->conns; i++) {
            rng_t r;
            rng_seed(&r, conn_seed(cfg->seed, ph->index, i));
            uint64_t q = total / nc + ((uint64_t)i < total % nc);
            for (uint64_t j = 0; j < q; j++) {
                int op, kind;
                uint64_t key;
                phase_next(ph, &r, i, cfg->conns, &uniq[i], &op, &key, &kind);
                fprintf(out, "%c %llu %u\n", op == OP_GET ? 'G' : 'S',
                        (unsigned long long)key,
                        dataset_value_size(&ph->ds, key));
            }
        }
    }
    free(uniq);
}

/* ---- reporting ---- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_lat(FILE *f, const hist_t *h)
{
    fprintf(f, "{\"count\": %llu, \"mean\": %.3f, \"p50\": %.3f, "
            "\"p90\": %.3f, \"p99\": %.3f, \"p999\": %.3f, \"max\": %.3f}",
            (unsigned long long)h->total, hist_mean(h) / 1e3,
            hist_percentile(h, 50) / 1e3, hist_percentile(h, 90) / 1e3,
            hist_percentile(h, 99) / 1e3, hist_percentile(h, 99.9) / 1e3,
            (h->total ? h->max : 0) / 1e3);
}

static void json_stats(FILE *f, const stats_t *s, double elapsed)
{
    uint64_t ops = s->done[0] + s->done[1];
    fprintf(f, "{\"elapsed_s\": %.6f, \"ops\": %llu, \"throughput\": %.1f, "
            "\"get\": %llu, \"set\": %llu, \"sent_get\": %llu, "
            "\"sent_set\": %llu, \"hits\": %llu, \"misses\": %llu, "
            "\"set_on_miss\": %llu, \"one_hit\": %llu, \"absent\": %llu, "
            "\"absent_hits\": %llu, \"bytes_out\": %llu, \"bytes_in\": %llu, "
            "\"errors\": {\"total\": %llu",
            elapsed, (unsigned long long)ops,
            elapsed > 0 ? (double)ops / elapsed : 0.0,
            (unsigned long long)s->done[0], (unsigned long long)s->done[1],
            (unsigned long long)s->sent[0], (unsigned long long)s->sent[1],
            (unsigned long long)s->hits, (unsigned long long)s->misses,
            (unsigned long long)s->set_on_miss,
            (unsigned long long)s->one_hit, (unsigned long long)s->absent,
            (unsigned long long)s->absent_hits,
            (unsigned long long)s->bytes_out, (unsigned long long)s->bytes_in,
            (unsigned long long)err_total(s));
    for (int i = 0; i < E_N; i++)
        fprintf(f, ", \"%s\": %llu", err_names[i],
                (unsigned long long)s->err[i]);
    fprintf(f, "}, \"first_error\": ");
    json_str(f, s->first_err);
    fprintf(f, ", \"latency_us\": {\"all\": ");
    json_lat(f, &s->lat[0]);
    fprintf(f, ", \"get\": ");
    json_lat(f, &s->lat[1]);
    fprintf(f, ", \"set\": ");
    json_lat(f, &s->lat[2]);
    fprintf(f, "}}");
}

static int write_json(const config_t *cfg, const stats_t *tot, double elapsed)
{
    FILE *f = fopen(cfg->json_path, "w");
    if (!f) {
        fprintf(stderr, "tcload: cannot write %s: %s\n", cfg->json_path,
                strerror(errno));
        return -1;
    }
    fprintf(f, "{\"tool\": \"tcload\", \"version\": 1, \"server\": ");
    json_str(f, cfg->unix_path ? cfg->unix_path : cfg->host_port);
    fprintf(f, ", \"protocol\": \"%s\", \"tls\": %s",
            cfg->protocol == PROTO_BINARY ? "binary" : "ascii",
            cfg->tls ? "true" : "false");
    fprintf(f, ", \"seed\": %llu, \"conns\": %d, \"threads\": %d, "
            "\"depth\": %d, \"connect_errors\": %llu, \"connect_error\": ",
            (unsigned long long)cfg->seed, cfg->conns, cfg->threads,
            cfg->depth, (unsigned long long)cfg->connect_errors);
    json_str(f, cfg->connect_msg);
    fprintf(f, ",\n \"phases\": [");
    for (int p = 0; p < cfg->nphases; p++) {
        const phase_t *ph = &cfg->phases[p];
        fprintf(f, "%s\n  {\"index\": %d, \"spec\": ", p ? "," : "", p);
        json_str(f, ph->spec);
        fprintf(f, ", \"dataset\": ");
        json_str(f, ph->ds.spec);
        fprintf(f, ", \"keys\": %llu, \"dist\": \"%s\", \"theta\": %g, "
                "\"get_ratio\": %g, \"rate\": %g, \"ns\": \"%c\",\n   "
                "\"preload\": ", (unsigned long long)ph->ds.nkeys,
                dist_name(ph->dist), ph->theta, ph->get_ratio, ph->rate,
                ph->ns);
        if (ph->ran[STAGE_PRELOAD])
            json_stats(f, &ph->st[STAGE_PRELOAD], ph->elapsed[STAGE_PRELOAD]);
        else
            fprintf(f, "null");
        fprintf(f, ",\n   \"run\": ");
        if (ph->ran[STAGE_RUN])
            json_stats(f, &ph->st[STAGE_RUN], ph->elapsed[STAGE_RUN]);
        else
            fprintf(f, "null");
        fprintf(f, "}");
    }
    fprintf(f, "],\n \"totals\": ");
    json_stats(f, tot, elapsed);
    fprintf(f, "}\n");
    return fclose(f);
}

static void print_lat(const char *name, const hist_t *h)
{
    if (!h->total)
        return;
    printf("    %-4s us: mean %.1f p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f "
           "max %.1f\n", name, hist_mean(h) / 1e3, hist_percentile(h, 50) / 1e3,
           hist_percentile(h, 90) / 1e3, hist_percentile(h, 99) / 1e3,
           hist_percentile(h, 99.9) / 1e3, h->max / 1e3);
}

static void print_stage(const char *name, const stats_t *s, double el)
{
    uint64_t ops = s->done[0] + s->done[1];
    printf("  %s: %llu ops in %.3f s = %.0f ops/s; get %llu (hit %llu, "
           "miss %llu), set %llu%s; errors %llu\n", name,
           (unsigned long long)ops, el, el > 0 ? ops / el : 0.0,
           (unsigned long long)s->done[0], (unsigned long long)s->hits,
           (unsigned long long)s->misses, (unsigned long long)s->done[1],
           s->set_on_miss ? " (incl. set-on-miss)" : "",
           (unsigned long long)err_total(s));
    if (s->one_hit || s->absent)
        printf("    one-hit keys %llu; never stored: %llu gets, %llu hits\n",
               (unsigned long long)s->one_hit, (unsigned long long)s->absent,
               (unsigned long long)s->absent_hits);
    if (err_total(s)) {
        printf("    errors:");
        for (int i = 0; i < E_N; i++)
            if (s->err[i])
                printf(" %s=%llu", err_names[i], (unsigned long long)s->err[i]);
        printf("\n    first: %s\n", s->first_err);
    }
    print_lat("all", &s->lat[0]);
    print_lat("get", &s->lat[1]);
    print_lat("set", &s->lat[2]);
}

static void on_signal(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

int main(int argc, char **argv)
{
    config_t cfg;
    defaults_t df;
    memset(&cfg, 0, sizeof(cfg));
    memset(&df, 0, sizeof(df));
    cfg.conns = 1;
    cfg.threads = 1;
    cfg.depth = 0;
    cfg.preload_depth = 64;
    cfg.seed = 1;
    cfg.dataset_seed = 1;
    cfg.max_duration = 600;
    cfg.idle_timeout = 10;
    cfg.scramble = 1;
    df.dataset = "Uni-100000-200";
    df.get = 0.95;
    df.theta = 0.99;
    df.hot_frac = 0.2;
    df.hot_ops = 0.8;
    df.dist = DIST_ZIPF;
    const char **phase_specs = calloc((size_t)argc + 1, sizeof(char *));
    int nspecs = 0;

    enum {
        O_DIST = 256, O_THETA, O_NOSCR, O_HOTF, O_HOTO, O_DATASET, O_SOM,
        O_PRELOAD, O_PHASE, O_SEED, O_DATASET_SEED, O_DURATION, O_MAXDUR,
        O_TIMEOUT, O_JSON,
        O_TRACE, O_DRY, O_DUMP, O_PDEPTH, O_TLS, O_TLS_CA, O_TLS_CERT,
        O_TLS_KEY, O_ONE_HIT, O_ABSENT, O_MODEL, O_MODEL_MB
    };
    static const struct option lo[] = {
        {"server", required_argument, 0, 's'},
        {"socket", required_argument, 0, 'S'},
        {"conns", required_argument, 0, 'c'},
        {"threads", required_argument, 0, 'T'},
        {"depth", required_argument, 0, 'd'},
        {"rate", required_argument, 0, 'r'},
        {"get", required_argument, 0, 'g'},
        {"requests", required_argument, 0, 'n'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"dist", required_argument, 0, O_DIST},
        {"theta", required_argument, 0, O_THETA},
        {"no-scramble", no_argument, 0, O_NOSCR},
        {"hot-frac", required_argument, 0, O_HOTF},
        {"hot-ops", required_argument, 0, O_HOTO},
        {"dataset", required_argument, 0, O_DATASET},
        {"set-on-miss", no_argument, 0, O_SOM},
        {"one-hit", required_argument, 0, O_ONE_HIT},
        {"absent", required_argument, 0, O_ABSENT},
        {"model", required_argument, 0, O_MODEL},
        {"model-mb", required_argument, 0, O_MODEL_MB},
        {"preload", no_argument, 0, O_PRELOAD},
        {"phase", required_argument, 0, O_PHASE},
        {"seed", required_argument, 0, O_SEED},
        {"dataset-seed", required_argument, 0, O_DATASET_SEED},
        {"duration", required_argument, 0, O_DURATION},
        {"max-duration", required_argument, 0, O_MAXDUR},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"json", required_argument, 0, O_JSON},
        {"trace", required_argument, 0, O_TRACE},
        {"dry-run", no_argument, 0, O_DRY},
        {"dump-keys", required_argument, 0, O_DUMP},
        {"preload-depth", required_argument, 0, O_PDEPTH},
        {"protocol", required_argument, 0, 'B'},
        {"tls", no_argument, 0, O_TLS},
        {"tls-ca", required_argument, 0, O_TLS_CA},
        {"tls-cert", required_argument, 0, O_TLS_CERT},
        {"tls-key", required_argument, 0, O_TLS_KEY},
        {0, 0, 0, 0}
    };
    int o;
    while ((o = getopt_long(argc, argv, "s:S:c:T:d:r:g:n:qhB:", lo,
                            NULL)) != -1) {
        switch (o) {
        case 's': cfg.host_port = optarg; break;
        case 'S': cfg.unix_path = optarg; break;
        case 'c': cfg.conns = (int)count("-c", optarg); break;
        case 'T': cfg.threads = (int)count("-T", optarg); break;
        case 'd': cfg.depth = (int)count("-d", optarg); break;
        case 'r': df.rate = num("-r", optarg); break;
        case 'g': df.get = num("-g", optarg); break;
        case 'n':
            df.requests = count("--requests", optarg);
            df.has_requests = 1;
            break;
        case 'q': cfg.quiet = 1; break;
        case 'B':
            if (!strcmp(optarg, "ascii"))
                cfg.protocol = PROTO_ASCII;
            else if (!strcmp(optarg, "binary"))
                cfg.protocol = PROTO_BINARY;
            else
                die2("unknown protocol '%s' (ascii, binary)", optarg);
            break;
        case O_TLS: cfg.tls = 1; break;
        case O_TLS_CA: cfg.tls_ca = optarg; break;
        case O_TLS_CERT: cfg.tls_cert = optarg; break;
        case O_TLS_KEY: cfg.tls_key = optarg; break;
        case 'h': usage(stdout); return 0;
        case O_DIST:
            if (dist_from_name(optarg, &df.dist) < 0)
                die2("unknown distribution '%s' (zipf, uniform, hotspot, "
                     "latest)", optarg);
            break;
        case O_THETA: df.theta = num("--theta", optarg); break;
        case O_NOSCR: cfg.scramble = 0; break;
        case O_HOTF: df.hot_frac = num("--hot-frac", optarg); break;
        case O_HOTO: df.hot_ops = num("--hot-ops", optarg); break;
        case O_DATASET: df.dataset = optarg; break;
        case O_SOM: df.set_on_miss = 1; break;
        case O_ONE_HIT: df.one_hit = num("--one-hit", optarg); break;
        case O_ABSENT: df.absent = num("--absent", optarg); break;
        case O_MODEL: df.model = optarg; break;
        case O_MODEL_MB: df.model_mb = num("--model-mb", optarg); break;
        case O_PRELOAD: df.preload = 1; break;
        case O_PDEPTH: cfg.preload_depth = (int)count("--preload-depth", optarg); break;
        case O_PHASE: phase_specs[nspecs++] = optarg; break;
        case O_SEED: cfg.seed = count("--seed", optarg); break;
        case O_DATASET_SEED:
            cfg.dataset_seed = count("--dataset-seed", optarg);
            break;
        case O_DURATION: df.duration = num("--duration", optarg); break;
        case O_MAXDUR: cfg.max_duration = num("--max-duration", optarg); break;
        case O_TIMEOUT: cfg.idle_timeout = num("--timeout", optarg); break;
        case O_JSON: cfg.json_path = optarg; break;
        case O_TRACE: cfg.trace_path = optarg; break;
        case O_DRY: cfg.dry_run = 1; break;
        case O_DUMP:
            cfg.dump_keys = count("--dump-keys", optarg);
            if (!cfg.dump_keys)
                die2("--dump-keys needs N > 0");
            cfg.dry_run = 1;
            break;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc)
        die2("unexpected argument '%s'", argv[optind]);
    if (cfg.conns < 1 || cfg.conns > 100000)
        die2("-c must be in 1..100000");
    if (cfg.threads < 1 || cfg.threads > 1024)
        die2("-T must be in 1..1024");
    if (cfg.threads > cfg.conns)
        cfg.threads = cfg.conns;
    if (cfg.depth < 0 || cfg.depth > 1000000)
        die2("-d must be in 1..1000000");
    if (cfg.preload_depth < 1 || cfg.preload_depth > 1000000)
        die2("--preload-depth must be in 1..1000000");
    if (!(cfg.max_duration > 0) || !(cfg.idle_timeout > 0))
        die2("--max-duration and --timeout must be positive");
    if (df.duration < 0)
        die2("--duration must not be negative");
    if (!cfg.dry_run && !cfg.host_port && !cfg.unix_path)
        die2("need -s HOST:PORT, -S PATH or --dry-run");
    if (cfg.host_port && cfg.unix_path)
        die2("-s and -S are exclusive");
    if (cfg.tls && cfg.unix_path)
        die2("--tls is for TCP (-s); memcached serves unix sockets in clear");
    if (!cfg.tls && (cfg.tls_ca || cfg.tls_cert || cfg.tls_key))
        die2("--tls-ca, --tls-cert and --tls-key need --tls");
    if (cfg.depth == 0) {
        int open_loop = df.rate > 0;
        for (int i = 0; i < nspecs; i++)
            if (strstr(phase_specs[i], "rate="))
                open_loop = 1;
        cfg.depth = open_loop ? 64 : 1;
    }

    cfg.nphases = nspecs ? nspecs : 1;
    cfg.phases = calloc((size_t)cfg.nphases, sizeof(phase_t));
    if (!cfg.phases)
        return 1;
    for (int i = 0; i < cfg.nphases; i++)
        build_phase(&cfg, &cfg.phases[i], i, nspecs ? phase_specs[i] : NULL,
                    &df);

    if (cfg.trace_path) {
        cfg.trace = fopen(cfg.trace_path, "w");
        if (!cfg.trace)
            die2("cannot write %s: %s", cfg.trace_path, strerror(errno));
    }
    if (cfg.dry_run) {
        dry_run(&cfg);
        int drc = fflush(stdout) == 0 ? 0 : 1;
        if (cfg.trace && fclose(cfg.trace) != 0)
            drc = 1;
        free_phases(&cfg);
        free(phase_specs);
        return drc;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    cfg.run_start_ns = now_ns();
    cfg.hard_deadline_ns = cfg.run_start_ns + (uint64_t)(cfg.max_duration * 1e9);
    int rc = 0;
    stats_t *tot = malloc(sizeof(stats_t));
    stats_init(tot);
    if (engine_open(&cfg) < 0) {
        fprintf(stderr, "tcload: no connection could be opened: %s\n",
                cfg.connect_msg);
        tot->err[E_CONNECT] = cfg.connect_errors;
        if (cfg.json_path)
            write_json(&cfg, tot, 0);
        engine_close(&cfg);
        if (cfg.trace)
            fclose(cfg.trace);
        free(tot);
        free_phases(&cfg);
        free(phase_specs);
        return 1;
    }
    for (int p = 0; p < cfg.nphases && !g_interrupted; p++) {
        phase_t *ph = &cfg.phases[p];
        if (cfg.trace)
            phase_header(cfg.trace, &cfg, ph);
        if (ph->preload)
            engine_stage(&cfg, ph, STAGE_PRELOAD);
        if (!g_interrupted && (ph->requests || ph->duration > 0))
            engine_stage(&cfg, ph, STAGE_RUN);
        if (!cfg.quiet) {
            printf("phase %d/%d: dataset=%s dist=%s theta=%g get=%g%s%s\n",
                   p + 1, cfg.nphases, ph->ds.spec, dist_name(ph->dist),
                   ph->theta, ph->get_ratio, ph->rate > 0 ? " open-loop" : "",
                   ph->set_on_miss ? " set-on-miss" : "");
            if (ph->ran[STAGE_PRELOAD])
                print_stage("preload", &ph->st[STAGE_PRELOAD],
                            ph->elapsed[STAGE_PRELOAD]);
            if (ph->ran[STAGE_RUN])
                print_stage("run", &ph->st[STAGE_RUN], ph->elapsed[STAGE_RUN]);
        }
        for (int s = 0; s < 2; s++)
            if (ph->ran[s])
                stats_merge(tot, &ph->st[s]);
    }
    double elapsed = (double)(now_ns() - cfg.run_start_ns) / 1e9;
    tot->err[E_CONNECT] += cfg.connect_errors;
    if (cfg.connect_errors && !tot->first_err[0])
        snprintf(tot->first_err, sizeof(tot->first_err), "%s", cfg.connect_msg);
    if (!cfg.quiet) {
        printf("total: get %llu (hit %llu, miss %llu), set %llu, errors %llu "
               "in %.3f s (seed %llu, %d conns, %d threads, depth %d)\n",
               (unsigned long long)tot->done[0], (unsigned long long)tot->hits,
               (unsigned long long)tot->misses, (unsigned long long)tot->done[1],
               (unsigned long long)err_total(tot), elapsed,
               (unsigned long long)cfg.seed, cfg.conns, cfg.threads, cfg.depth);
        if (g_interrupted)
            printf("interrupted\n");
    }
    if (cfg.json_path && write_json(&cfg, tot, elapsed) != 0)
        rc = 1;
    if (cfg.trace && fclose(cfg.trace) != 0)
        rc = 1;
    if (tot->err[E_CONNECT] || tot->err[E_CLOSED] || tot->err[E_PROTOCOL] ||
        tot->err[E_TIMEOUT] || tot->err[E_BAD_VALUE])
        rc = 1;
    engine_close(&cfg);
    free(tot);
    free_phases(&cfg);
    free(phase_specs);
    return rc;
}
