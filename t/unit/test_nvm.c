/*
 * test_nvm.c: unit tests for nvm.c (backends, line accounting, emulation,
 * parse helpers).  Prints TAP; exits non-zero if any check fails.
 *
 * Build: gcc -std=gnu11 -Wall -Wextra -I. t/unit/test_nvm.c t/unit/tap.c \
 *            nvm.c -lpmem2 -lnuma -lhwloc -pthread
 * Uses files in /dev/shm (tmpfs) and removes them again.
 */
#include "config.h"
#include "nvm.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define NCLASSES 65

static bool contains(const char *haystack, const char *needle) {
    return strstr(haystack, needle) != NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- line counts, as differences of the global sums ---- */

struct counts {
    uint64_t read;
    uint64_t written;
};

static struct counts totals(void) {
    struct counts c;
    nvm_stats_sum(&c.read, &c.written);
    return c;
}

static struct counts since(struct counts before) {
    struct counts now = totals();
    return (struct counts){ now.read - before.read,
                            now.written - before.written };
}

static bool counted(struct counts before, uint64_t reads, uint64_t writes) {
    struct counts d = since(before);
    if (d.read != reads || d.written != writes)
        printf("# counted %" PRIu64 " read / %" PRIu64 " written, expected "
               "%" PRIu64 " / %" PRIu64 "\n", d.read, d.written, reads,
               writes);
    return d.read == reads && d.written == writes;
}

static void open_anonymous(struct nvm_zone *zone, size_t size, uint32_t r,
                           uint32_t w) {
    struct nvm_config cfg;
    char err[512] = "";
    nvm_config_init(&cfg);
    cfg.size = size;
    cfg.emulate_read_ns = r;
    cfg.emulate_write_ns = w;
    int rc = nvm_zone_open(&cfg, zone, err, sizeof(err));
    ok(rc == 0, "anonymous zone of %zu bytes opens (%s)", size, err);
}

static void test_parse_helpers(void) {
    size_t sz = 0;
    ok(nvm_parse_size("512m", &sz) && sz == 512ull << 20, "size 512m");
    ok(nvm_parse_size("64g", &sz) && sz == 64ull << 30, "size 64g");
    ok(nvm_parse_size("64G", &sz) && sz == 64ull << 30, "size 64G");
    ok(nvm_parse_size("1048576", &sz) && sz == 1048576, "size 1048576");
    ok(nvm_parse_size("4k", &sz) && sz == 4096, "size 4k");
    ok(nvm_parse_size("2t", &sz) && sz == 2ull << 40, "size 2t");
    const char *bad_sizes[] = { "", "0", "0m", "-1", " 5", "+5", "5x", "m",
                                "5mb", "5 m", "0x10", "1.5g",
                                "99999999999999999999",
                                "17179869184g" /* 2^34 GiB > 2^64 */ };
    for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
        ok(!nvm_parse_size(bad_sizes[i], &sz), "size rejects '%s'",
              bad_sizes[i]);
    ok(!nvm_parse_size(NULL, &sz), "size rejects NULL");

    uint32_t r = 1, w = 1;
    ok(nvm_parse_emulate("224:924", &r, &w) && r == 224 && w == 924,
          "emulate 224:924");
    ok(nvm_parse_emulate("0:0", &r, &w) && r == 0 && w == 0,
          "emulate 0:0");
    const char *bad_emul[] = { "", "224", "224:", ":924", "224:924:1",
                               "a:b", "-1:5", "224 :924", "224:924x",
                               "4294967296:1" };
    for (size_t i = 0; i < sizeof(bad_emul) / sizeof(bad_emul[0]); i++)
        ok(!nvm_parse_emulate(bad_emul[i], &r, &w),
              "emulate rejects '%s'", bad_emul[i]);

    int node = -5;
    bool is_auto = true;
    ok(nvm_parse_node("3", &node, &is_auto) && node == 3 && !is_auto,
          "node 3");
    ok(nvm_parse_node("auto", &node, &is_auto) && is_auto, "node auto");
    ok(!nvm_parse_node("-1", &node, &is_auto)
          && !nvm_parse_node("x", &node, &is_auto)
          && !nvm_parse_node("", &node, &is_auto),
          "node rejects -1, x and empty");
}

static void test_line_counts(void) {
    struct nvm_zone zone;
    open_anonymous(&zone, 1 << 20, 0, 0);
    char *base = zone.base;
    char buf[8192];
    memset(buf, 0xab, sizeof(buf));
    ok(strcmp(nvm_zone_backend_name(&zone), "anonymous") == 0
          && strcmp(nvm_zone_granularity_name(&zone), "none") == 0,
          "anonymous backend names: %s, granularity %s",
          nvm_zone_backend_name(&zone), nvm_zone_granularity_name(&zone));

    struct counts t = totals();
    nvm_read(buf, base, 1);
    ok(counted(t, 1, 0), "read of 1 byte = 1 line");
    t = totals();
    nvm_read(buf, base, 64);
    ok(counted(t, 1, 0), "read of 64 aligned bytes = 1 line");
    t = totals();
    nvm_read(buf, base, 65);
    ok(counted(t, 2, 0), "read of 65 bytes = 2 lines");
    t = totals();
    nvm_read(buf, base + 1, 64);
    ok(counted(t, 2, 0), "read of 64 unaligned bytes = 2 lines");
    t = totals();
    nvm_read(buf, base + 63, 2);
    ok(counted(t, 2, 0), "2 bytes across a line boundary = 2 lines");
    t = totals();
    nvm_read(buf, base, 0);
    ok(counted(t, 0, 0), "0 bytes = 0 lines");
    t = totals();
    nvm_write(base + 32, buf, 128);
    ok(counted(t, 0, 3), "write of 128 bytes at +32 = 3 lines written");
    t = totals();
    nvm_copy_within(base + 4096, base + 10, 64);
    ok(counted(t, 2, 1), "copy_within 64 bytes: 2 lines read, 1 written");
    t = totals();
    nvm_memset(base, 0, 4096);
    ok(counted(t, 0, 64), "memset of a page = 64 lines written");
    memset(buf, 0xab, sizeof(buf));
    t = totals();
    ok(nvm_memcmp(base + 60, buf, 10) != 0, "memcmp sees a difference");
    ok(counted(t, 2, 0), "memcmp of 10 bytes at +60 = 2 lines read");
    t = totals();
    nvm_note_read(base, 8192);
    ok(counted(t, 128, 0), "note_read of 8 KiB = 128 lines, no copy");
    ok(nvm_lines_spanned(base + 100, 1000)
          == (100 + 1000 - 1) / 64 - 100 / 64 + 1,
          "nvm_lines_spanned follows the formula");
    ok(nvm_contains(base, zone.size) && !nvm_contains(base, zone.size + 1)
          && !nvm_contains(buf, 1), "nvm_contains");

    /* round trip through the accessors */
    char pattern[300], back[300];
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (char)(i * 7);
    nvm_write(base + 5000, pattern, sizeof(pattern));
    nvm_read(back, base + 5000, sizeof(back));
    ok(memcmp(pattern, back, sizeof(back)) == 0
          && nvm_memcmp(base + 5000, pattern, sizeof(pattern)) == 0,
          "bytes written read back equal");
    nvm_copy_within(base + 5010, base + 5000, sizeof(pattern));
    nvm_read(back, base + 5010, sizeof(back));
    ok(memcmp(pattern, back, sizeof(back)) == 0,
          "copy_within handles overlap like memmove");
    memset(back, 0, sizeof(back));
    t = totals();
    nvm_peek_cls(0, back, base + 5110, 24);  /* 5110..5133 */
    ok(counted(t, 2, 0) && memcmp(back, pattern + 100, 24) == 0,
          "peek of 24 bytes across a line boundary: the bytes, 2 lines");

    /* per-class counters */
    uint64_t r0[NCLASSES], w0[NCLASSES], r1[NCLASSES], w1[NCLASSES];
    nvm_stats_sum_classes(r0, w0, NCLASSES);
    nvm_read_cls(5, buf, base, 130);          /* 3 lines */
    nvm_write_cls(5, base, buf, 64);          /* 1 line */
    nvm_write_cls(9, base + 64, buf, 640);    /* 10 lines */
    nvm_note_read_cls(1000, base, 64);        /* out of range -> class 0 */
    nvm_stats_sum_classes(r1, w1, NCLASSES);
    ok(r1[5] - r0[5] == 3 && w1[5] - w0[5] == 1, "class 5: 3 read, 1 "
          "written");
    ok(r1[9] - r0[9] == 0 && w1[9] - w0[9] == 10, "class 9: 10 written");
    ok(r1[0] - r0[0] == 1, "out-of-range class counted as class 0");

    nvm_stats_reset();
    struct counts after_reset = totals();
    ok(after_reset.read == 0 && after_reset.written == 0,
          "stats reset zeroes the sums");
    nvm_zone_close(&zone);
}

/* ---- other threads ---- */

struct worker {
    char *base;
    int lines;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool counted;
    bool may_exit;
};

static void *worker_main(void *arg) {
    struct worker *w = arg;
    char buf[64];
    for (int i = 0; i < w->lines; i++)
        nvm_read_cls(7, buf, w->base + (size_t)i * 64, 64);
    nvm_write_cls(7, w->base, buf, 64);
    pthread_mutex_lock(&w->lock);
    w->counted = true;
    pthread_cond_broadcast(&w->cond);
    while (!w->may_exit)
        pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void test_threads(void) {
    struct nvm_zone zone;
    open_anonymous(&zone, 1 << 20, 0, 0);
    struct worker w = { .base = zone.base, .lines = 1000,
                        .lock = PTHREAD_MUTEX_INITIALIZER,
                        .cond = PTHREAD_COND_INITIALIZER };
    uint64_t cls_before[NCLASSES], cls_after[NCLASSES];
    nvm_stats_sum_classes(cls_before, NULL, NCLASSES);
    struct counts t = totals();
    pthread_t tid;
    pthread_create(&tid, NULL, worker_main, &w);
    pthread_mutex_lock(&w.lock);
    while (!w.counted)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    ok(counted(t, 1000, 1), "a live second thread's lines are summed");

    pthread_mutex_lock(&w.lock);
    w.may_exit = true;
    pthread_cond_broadcast(&w.cond);
    pthread_mutex_unlock(&w.lock);
    pthread_join(tid, NULL);
    ok(counted(t, 1000, 1), "an exited thread's lines are kept");
    nvm_stats_sum_classes(cls_after, NULL, NCLASSES);
    ok(cls_after[7] - cls_before[7] == 1000,
          "an exited thread's per-class lines are kept");

    /* a new thread reuses the freed block and adds, never replaces */
    w.counted = false;
    w.may_exit = true;
    w.lines = 10;
    pthread_create(&tid, NULL, worker_main, &w);
    pthread_join(tid, NULL);
    ok(counted(t, 1010, 2), "a later thread adds to the kept counts");

    /* several threads at once, for the sanitizers */
    enum { NTHREADS = 4 };
    struct worker ws[NTHREADS];
    pthread_t tids[NTHREADS];
    t = totals();
    for (int i = 0; i < NTHREADS; i++) {
        /* each worker its own bytes: N-zone data races are the callers'
         * business (item locks), not what this test is about */
        ws[i] = (struct worker){ .base = (char *)zone.base + i * 65536,
                                 .lines = 500,
                                 .lock = PTHREAD_MUTEX_INITIALIZER,
                                 .cond = PTHREAD_COND_INITIALIZER,
                                 .may_exit = true };
        pthread_create(&tids[i], NULL, worker_main, &ws[i]);
    }
    for (int i = 0; i < 20; i++) {
        struct counts live = totals();   /* reads racing the workers */
        (void)live;
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(tids[i], NULL);
    ok(counted(t, NTHREADS * 500, NTHREADS),
          "%d concurrent threads' lines sum exactly", NTHREADS);
    nvm_zone_close(&zone);
}

/* ---- file backend (libpmem2) ---- */

static char shm_path[256];

static off_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static int open_path(const char *path, size_t size, struct nvm_zone *zone,
                     char *err, size_t errlen) {
    struct nvm_config cfg;
    nvm_config_init(&cfg);
    cfg.path = path;
    cfg.size = size;
    err[0] = '\0';
    return nvm_zone_open(&cfg, zone, err, errlen);
}

static void test_file_backend(void) {
    char err[512];
    struct nvm_zone zone;
    snprintf(shm_path, sizeof(shm_path), "/dev/shm/test_nvm.%d",
             (int)getpid());
    int fd = open(shm_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ok(fd >= 0, "created %s", shm_path);
    close(fd);

    int rc = open_path(shm_path, 2 << 20, &zone, err, sizeof(err));
    if (!ok(rc == 0, "file on tmpfs maps through libpmem2 (%s)", err))
        return;
    ok(file_size(shm_path) == 2 << 20, "short file grown to nvm_size");
    ok(zone.size == 2 << 20, "zone size is nvm_size");
    ok(strcmp(nvm_zone_granularity_name(&zone), "page") == 0,
          "granularity reported: %s", nvm_zone_granularity_name(&zone));
    ok(strcmp(nvm_zone_backend_name(&zone), "file") == 0,
          "backend reported: %s", nvm_zone_backend_name(&zone));

    char *base = zone.base;
    const char msg[] = "tiercached N-zone";
    struct counts t = totals();
    nvm_write(base + 100, msg, sizeof(msg));
    char back[sizeof(msg)];
    nvm_read(back, base + 100, sizeof(back));
    ok(memcmp(back, msg, sizeof(msg)) == 0 && counted(t, 1, 1),
          "write and read back through the pmem2 mapping, counted");
    fd = open(shm_path, O_RDONLY);
    memset(back, 0, sizeof(back));
    ok(fd >= 0 && pread(fd, back, sizeof(back), 100) == sizeof(back)
          && memcmp(back, msg, sizeof(msg)) == 0,
          "the bytes are in the file (shared mapping)");
    if (fd >= 0)
        close(fd);

    struct nvm_zone second;
    rc = open_path(shm_path, 1 << 20, &second, err, sizeof(err));
    ok(rc < 0 && contains(err, "already open"),
          "a second zone in one process is refused: %s", err);
    nvm_zone_close(&zone);
    ok(zone.base == NULL && !nvm_contains(base, 1), "close resets");

    /* a file longer than nvm_size: only nvm_size is mapped */
    rc = open_path(shm_path, 1 << 20, &zone, err, sizeof(err));
    ok(rc == 0 && zone.size == 1 << 20
          && file_size(shm_path) == 2 << 20,
          "longer file: nvm_size mapped, file untouched (%s)", err);
    if (rc == 0)
        nvm_zone_close(&zone);

    /* another process (here: another open file description) holds it */
    fd = open(shm_path, O_RDWR);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
        rc = open_path(shm_path, 1 << 20, &zone, err, sizeof(err));
        ok(rc < 0 && contains(err, "in use by another process"),
              "locked file refused: %s", err);
        close(fd);
    } else {
        skip("could not take the test lock");
    }
}

/* a pre-sized sparse file: every block of the mapped range is allocated
 * by the open (a hole would SIGBUS once the file system fills) */
static void test_sparse_file(void) {
    char err[512], path[256];
    struct nvm_zone zone;
    snprintf(path, sizeof(path), "/dev/shm/test_nvm_sparse.%d",
             (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    bool made = fd >= 0 && ftruncate(fd, 4 << 20) == 0;
    if (fd >= 0)
        close(fd);
    if (!ok(made, "created a 4 MiB sparse %s", path))
        return;
    int rc = open_path(path, 2 << 20, &zone, err, sizeof(err));
    struct stat st;
    bool statted = stat(path, &st) == 0;
    ok(rc == 0 && statted && (off_t)st.st_blocks * 512 >= 2 << 20
          && st.st_size == 4 << 20,
          "sparse file: the 2 MiB mapped range allocated, length kept (%s)",
          err);
    if (rc == 0)
        nvm_zone_close(&zone);
    unlink(path);
}

static void test_path_errors(void) {
    char err[512];
    struct nvm_zone zone;
    int rc = open_path("/dev/shm/no-such-dir-test-nvm/zone", 1 << 20, &zone,
                       err, sizeof(err));
    ok(rc < 0 && contains(err, "/dev/shm/no-such-dir-test-nvm/zone")
          && contains(err, "no such file"),
          "missing path names it: %s", err);
    ok(zone.base == NULL && zone.fd == -1, "failed open leaves nothing");

    rc = open_path("/dev/shm", 1 << 20, &zone, err, sizeof(err));
    ok(rc < 0 && contains(err, "nvm_path=/dev/shm is a directory"),
          "directory refused: %s", err);

    /* read-only sysfs attributes refuse O_RDWR even to root */
    const char *readonly[] = { "/sys/devices/system/node/node0/meminfo",
                               "/sys/devices/system/cpu/cpu0/topology/"
                               "core_id",
                               "/sys/kernel/notes" };
    const char *ro = NULL;
    for (size_t i = 0; i < sizeof(readonly) / sizeof(readonly[0]); i++) {
        int fd = open(readonly[i], O_RDWR);
        if (fd >= 0) {
            close(fd);
        } else if (errno == EACCES || errno == EPERM || errno == EROFS) {
            ro = readonly[i];
            break;
        }
    }
    if (ro != NULL) {
        rc = open_path(ro, 1 << 20, &zone, err, sizeof(err));
        ok(rc < 0 && contains(err, ro)
              && contains(err, "cannot open for reading and writing"),
              "unwritable path refused: %s", err);
    } else {
        skip("no read-only sysfs file found");
    }

    /* a regular file that cannot be grown: larger than the file system */
    struct statvfs fs;
    if (statvfs("/dev/shm", &fs) != 0) {
        skip("statvfs /dev/shm failed");
        return;
    }
    size_t too_big = (size_t)fs.f_blocks * fs.f_frsize + (1ull << 30);
    rc = open_path(shm_path, too_big, &zone, err, sizeof(err));
    ok(rc < 0 && contains(err, "not enough space on its file system")
          && contains(err, shm_path),
          "nvm_size larger than tmpfs refused: %s", err);
    ok(file_size(shm_path) == 2 << 20,
          "failed grow restores the file's size");
    unlink(shm_path);
}

/* ---- NUMA ---- */

static void test_numa(void) {
    char err[512] = "";
    struct nvm_zone zone;
    struct nvm_config cfg;

    nvm_config_init(&cfg);
    cfg.have_node = true;
    cfg.node = 0;
    cfg.size = 4 << 20;
    int rc = nvm_zone_open(&cfg, &zone, err, sizeof(err));
    if (ok(rc == 0, "nvm_node=0 binds (%s)", err)) {
        ok(zone.node == 0
              && strcmp(nvm_zone_backend_name(&zone), "numa_node") == 0,
              "backend numa_node, node 0");
        char *base = zone.base;
        nvm_memset(base, 0x5a, zone.size);
        char b;
        nvm_read(&b, base + zone.size - 1, 1);
        ok(b == 0x5a, "node-bound memory is usable");
        nvm_zone_close(&zone);
    }

    cfg.node = 7;
    rc = nvm_zone_open(&cfg, &zone, err, sizeof(err));
    ok(rc < 0 && contains(err, "nvm_node=7: no such NUMA node (this "
                             "machine has nodes 0"),
          "nvm_node=7 refused: %s", err);

    cfg.node_auto = true;
    rc = nvm_zone_open(&cfg, &zone, err, sizeof(err));
    if (rc == 0) {
        ok(strcmp(nvm_zone_backend_name(&zone), "numa_node") == 0,
              "nvm_node=auto found CPU-less node %d", zone.node);
        nvm_zone_close(&zone);
    } else {
        ok(contains(err, "nvm_node=auto: no CPU-less NUMA node found "
                       "(nodes: 0 (")
              && contains(err, "give nvm_node=N or nvm_path="),
              "nvm_node=auto without a CPU-less node: %s", err);
    }

    nvm_config_init(&cfg);
    cfg.size = 1 << 20;
    cfg.dram_node = 7;
    rc = nvm_zone_open(&cfg, &zone, err, sizeof(err));
    ok(rc < 0 && contains(err, "dram_node=7: no such NUMA node"),
          "dram_node=7 refused at open: %s", err);

    size_t len = 1 << 20;
    void *dram = mmap(NULL, len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(dram, 1, len);
    err[0] = '\0';
    ok(nvm_bind_dram(dram, len, 0, err, sizeof(err)) == 0,
          "dram_node=0 binds touched memory (%s)", err);
    ok(nvm_bind_dram(dram, len, 7, err, sizeof(err)) < 0
          && contains(err, "dram_node=7: no such NUMA node"),
          "dram_node=7 refused: %s", err);
    munmap(dram, len);

    nvm_config_init(&cfg);
    rc = nvm_zone_open(&cfg, &zone, err, sizeof(err));
    ok(rc < 0 && contains(err, "nvm_size"), "no size refused: %s", err);
    cfg.size = 1 << 20;
    cfg.path = "/dev/shm/x";
    cfg.have_node = true;
    cfg.node = 0;
    rc = nvm_zone_open(&cfg, &zone, err, sizeof(err));
    ok(rc < 0 && contains(err, "both given"),
          "path and node together refused: %s", err);
}

/* ---- emulation ---- */

static double timed_reads(char *base, int lines, size_t stride) {
    double start = now_ms();
    for (int i = 0; i < lines; i++)
        nvm_note_read(base + (size_t)i * stride, 64);
    return now_ms() - start;
}

static void test_emulation(void) {
    struct nvm_zone zone;
    open_anonymous(&zone, 1 << 20, 1000, 0);
    char *base = zone.base;
    printf("# spin clock %s, %.4f TSC ticks per ns\n",
           nvm_emulation_clock_name(), nvm_emulation_calibration());
    ok(strcmp(nvm_emulation_clock_name(), "none") != 0,
          "emulation calibrated a clock");

    double ms = timed_reads(base, 1000, 64);
    printf("# 1000 line reads at 1000 ns: %.3f ms (%.0f ns per line)\n",
           ms, ms * 1e3);
    ok(ms >= 0.9, "1000 line reads with nvm_emulate=1000:0 take >= ~1 ms");

    char buf[64000];
    memset(buf, 1, sizeof(buf));
    double start = now_ms();
    nvm_write(base, buf, sizeof(buf));
    double write_ms = now_ms() - start;
    printf("# 1000 lines written at 0 ns: %.3f ms\n", write_ms);

    nvm_emulation_set(224, 924);
    uint32_t r, w;
    nvm_emulation_get(&r, &w);
    ok(r == 224 && w == 924, "emulation set at run time");
    start = now_ms();
    nvm_write(base, buf, sizeof(buf));          /* 1000 lines */
    write_ms = now_ms() - start;
    printf("# 1000 lines written at 924 ns: %.3f ms (%.0f ns per line)\n",
           write_ms, write_ms * 1e3);
    ok(write_ms >= 0.9 * 0.924, "writes spin too");

    uint64_t want_ns = 10 * 1000 * 1000;
    start = now_ms();
    nvm_spin_ns(want_ns);
    double spun = now_ms() - start;
    printf("# nvm_spin_ns(10 ms) took %.3f ms\n", spun);
    ok(spun >= 9.5, "a 10 ms spin lasts at least ~10 ms");
    nvm_zone_close(&zone);
    nvm_emulation_set(0, 0);
}

int main(void) {
    test_parse_helpers();
    test_line_counts();
    test_threads();
    test_file_backend();
    test_sparse_file();
    test_path_errors();
    test_numa();
    test_emulation();
    return done_testing();
}
