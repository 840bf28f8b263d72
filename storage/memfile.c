/*
 * memfile.c: the memory file of -e PATH (doc/restart.md "The memory file
 * (-e)").
 *
 * Owns the file (created, sized to -m and the durable block after it,
 * locked against a second server and mapped shared at start-up; its
 * first -m bytes are the D-zone's page region in slabs.c, the block is
 * memfile_durable.c's) and PATH.meta, the text
 * file a graceful stop leaves beside it: its format and version, the
 * settings it is checked against, and the earlier run's state that
 * items_restore_d.c restores from, and the refusal to start on a
 * PATH.meta that is not a metadata file at all.  slabs.c owns the page
 * table's meaning, items_restore_d.c the items.
 *
 * Locks: none.  Everything here runs on the main thread, at start-up
 * before any other thread exists, or at shutdown after the storage
 * threads have stopped.
 */
#include "config.h"
#include "memfile.h"

#include "item.h"
#include "settings.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

/* The first line of PATH.meta: the format's name and version.  A change
 * to the file's lines or to what the item memory holds (item.h's header)
 * takes a new version; an older tiercached refuses a newer file.  Version
 * 2: `hashpower` is memcached's table power, restored at the start;
 * version 1 held the index's own level, read as the same thing (it is at
 * most memcached's figure, which the restored items then raise). */
#define META_FORMAT "tiercached_memfile"
#define META_VERSION "2"
#define META_VERSION_READ_TOO "1"
/* memcached's own metadata file begins with this tag line */
#define MEMCACHED_META_FIRST_LINE "Tmain"
#define META_LINE_MAX 256

static struct {
    bool active;
    char *base;
    size_t size;
    char *meta_path;
    time_t fresh_epoch;
    bool have_saved;
    struct memfile_state saved;
    bool meta_absent;             /* no PATH.meta at the start */
    struct mfd_found durable;     /* the durable block at the start */
} mf;

bool memfile_active(void)
{
    return mf.active;
}

time_t memfile_fresh_epoch(void)
{
    return mf.fresh_epoch;
}

const struct memfile_state *memfile_saved(void)
{
    return mf.have_saved ? &mf.saved : NULL;
}

const struct mfd_found *memfile_crashed_run(void)
{
    return mf.meta_absent && mf.durable.usable ? &mf.durable : NULL;
}

static void restart_failed(void)
{
    fprintf(stderr, "[restart] failed to validate metadata, starting with "
            "a clean cache\n");
}

void memfile_forget(bool failed)
{
    if (failed && mf.have_saved) {
        restart_failed();
    }
    free(mf.saved.pages);
    memset(&mf.saved, 0, sizeof(mf.saved));
    mf.have_saved = false;
}

/* ---- the file ---- */

static void die_file(const char *what, int err)
{
    fprintf(stderr, "failed to %s file for mmap: %s (-e %s, %zu bytes)\n",
            what, strerror(err), settings.memory_file, settings.maxbytes);
    exit(EX_OSERR);
}

/* The file holds -m bytes of items and the durable block, all of them
 * allocated: a file system
 * that runs out of room later would kill the server with SIGBUS on its
 * first write to a hole, so a shortage is found now. */
static off_t size_file(int fd, size_t size)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        die_file("stat", errno);
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "-e %s is not a regular file\n", settings.memory_file);
        exit(EX_USAGE);
    }
    if ((size_t)st.st_size != size && ftruncate(fd, (off_t)size) != 0) {
        die_file("size", errno);
    }
    int rc = posix_fallocate(fd, 0, (off_t)size);
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
        die_file("allocate", rc);
    }
    return st.st_size;
}

static char *meta_path_of(const char *path)
{
    size_t len = strlen(path) + sizeof(".meta");
    char *p = malloc(len);
    if (p == NULL) {
        fprintf(stderr, "out of memory for the -e path\n");
        exit(EX_OSERR);
    }
    snprintf(p, len, "%s.meta", path);
    return p;
}

/* ---- the settings PATH.meta is checked against ----
 * memcached's names where memcached checks the same setting. */

typedef void (*setting_format)(char *buf, size_t len);

static void fmt_version(char *b, size_t n)
{
    snprintf(b, n, "%s", META_VERSION);
}

static void fmt_factor(char *b, size_t n)
{
    /* every digit: classes depend on the exact factor */
    snprintf(b, n, "%.17g", settings.factor);
}

static void fmt_maxbytes(char *b, size_t n)
{
    snprintf(b, n, "%zu", settings.maxbytes);
}

static void fmt_chunk_size(char *b, size_t n)
{
    snprintf(b, n, "%d", settings.chunk_size);
}

static void fmt_item_size_max(char *b, size_t n)
{
    snprintf(b, n, "%d", settings.item_size_max);
}

static void fmt_chunk_max(char *b, size_t n)
{
    snprintf(b, n, "%d", settings.slab_chunk_size_max);
}

static void fmt_page_size(char *b, size_t n)
{
    snprintf(b, n, "%d", settings.slab_page_size);
}

static void fmt_use_cas(char *b, size_t n)
{
    snprintf(b, n, "%s", settings.use_cas ? "true" : "false");
}

static void fmt_item_header(char *b, size_t n)
{
    snprintf(b, n, "%zu", sizeof(item));
}

static const struct {
    const char *name;
    setting_format format;
} checked_settings[] = {
    { META_FORMAT, fmt_version },
    { "slab_config", fmt_factor },
    { "maxbytes", fmt_maxbytes },
    { "chunk_size", fmt_chunk_size },
    { "item_size_max", fmt_item_size_max },
    { "slab_chunk_size_max", fmt_chunk_max },
    { "slab_page_size", fmt_page_size },
    { "use_cas", fmt_use_cas },
    { "item_header_size", fmt_item_header },
};
#define N_CHECKED (sizeof(checked_settings) / sizeof(checked_settings[0]))

/* ---- the earlier run's state ---- */

enum field_kind { FIELD_TIME, FIELD_REL, FIELD_U64, FIELD_UINT, FIELD_PTR };

static const struct {
    const char *name;
    enum field_kind kind;
    size_t offset;
} state_fields[] = {
    { "process_started", FIELD_TIME,
      offsetof(struct memfile_state, process_started) },
    { "current_time", FIELD_REL,
      offsetof(struct memfile_state, current_time) },
    { "stop_time", FIELD_TIME, offsetof(struct memfile_state, stop_time) },
    { "current_cas", FIELD_U64,
      offsetof(struct memfile_state, current_cas) },
    { "oldest_cas", FIELD_U64, offsetof(struct memfile_state, oldest_cas) },
    { "oldest_live", FIELD_REL,
      offsetof(struct memfile_state, oldest_live) },
    { "hashpower", FIELD_UINT, offsetof(struct memfile_state, hashpower) },
    { "mmap_oldbase", FIELD_PTR,
      offsetof(struct memfile_state, mmap_oldbase) },
    { "pages_carved", FIELD_UINT,
      offsetof(struct memfile_state, pages_carved) },
};
#define N_FIELDS (sizeof(state_fields) / sizeof(state_fields[0]))

static void write_field(FILE *fp, unsigned int i,
                        const struct memfile_state *st)
{
    const char *p = (const char *)st + state_fields[i].offset;
    const char *name = state_fields[i].name;
    switch (state_fields[i].kind) {
    case FIELD_TIME:
        fprintf(fp, "%s %lld\n", name, (long long)*(const time_t *)p);
        break;
    case FIELD_REL:
        fprintf(fp, "%s %u\n", name, (unsigned)*(const rel_time_t *)p);
        break;
    case FIELD_U64:
        fprintf(fp, "%s %" PRIu64 "\n", name, *(const uint64_t *)p);
        break;
    case FIELD_UINT:
        fprintf(fp, "%s %u\n", name, *(const unsigned int *)p);
        break;
    case FIELD_PTR:
        fprintf(fp, "%s 0x%" PRIxPTR "\n", name, *(const uintptr_t *)p);
        break;
    }
}

/* A field's value from its text; false when it is not a number that
 * fits the field. */
static bool read_field(unsigned int i, const char *text,
                       struct memfile_state *st)
{
    char *p = (char *)st + state_fields[i].offset;
    char *end;
    errno = 0;
    if (state_fields[i].kind == FIELD_TIME) {
        long long v = strtoll(text, &end, 10);
        *(time_t *)p = (time_t)v;
        return errno == 0 && end != text && *end == '\0';
    }
    unsigned long long v = strtoull(text, &end,
                                    state_fields[i].kind == FIELD_PTR ? 16
                                                                      : 10);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-') {
        return false;
    }
    switch (state_fields[i].kind) {
    case FIELD_REL:
        *(rel_time_t *)p = (rel_time_t)v;
        return v <= UINT32_MAX;
    case FIELD_UINT:
        *(unsigned int *)p = (unsigned int)v;
        return v <= UINT32_MAX;
    case FIELD_PTR:
        *(uintptr_t *)p = (uintptr_t)v;
        return true;
    default:
        *(uint64_t *)p = (uint64_t)v;
        return true;
    }
}

/* ---- reading PATH.meta ---- */

struct meta_reader {
    bool setting_seen[N_CHECKED];
    bool field_seen[N_FIELDS];
    bool ended;
    unsigned int pages_cap;
    struct memfile_state st;
};

static bool read_setting(struct meta_reader *r, unsigned int i,
                         const char *value)
{
    char now[64];
    checked_settings[i].format(now, sizeof(now));
    bool older_format = checked_settings[i].format == fmt_version
        && strcmp(value, META_VERSION_READ_TOO) == 0;
    if (strcmp(now, value) != 0 && !older_format) {
        fprintf(stderr, "[restart] restart incompatible due to setting for"
                " [%s] [old value: %s]\n", checked_settings[i].name, value);
        return false;
    }
    r->setting_seen[i] = true;
    return true;
}

static bool read_page(struct meta_reader *r, const char *value)
{
    unsigned int index, clsid;
    char extra;
    if (sscanf(value, "%u %u %c", &index, &clsid, &extra) != 2) {
        return false;
    }
    struct memfile_state *st = &r->st;
    if (st->npages == r->pages_cap) {
        unsigned int cap = r->pages_cap ? r->pages_cap * 2 : 64;
        void *grown = realloc(st->pages, cap * sizeof(*st->pages));
        if (grown == NULL) {
            return false;
        }
        st->pages = grown;
        r->pages_cap = cap;
    }
    st->pages[st->npages].index = index;
    st->pages[st->npages].clsid = clsid;
    st->npages++;
    return true;
}

/* One line, "name value"; false (with a message) when it does not fit. */
static bool read_meta_line(struct meta_reader *r, char *line)
{
    size_t len = strlen(line);
    if (len == 0 || line[len - 1] != '\n' || r->ended) {
        fprintf(stderr, "[restart] malformed metadata line\n");
        return false;
    }
    line[len - 1] = '\0';
    if (strcmp(line, "end") == 0) {
        r->ended = true;
        return true;
    }
    char *value = strchr(line, ' ');
    if (value != NULL) {
        *value++ = '\0';
    }
    for (unsigned int i = 0; value != NULL && i < N_CHECKED; i++) {
        if (strcmp(line, checked_settings[i].name) == 0) {
            return read_setting(r, i, value);
        }
    }
    for (unsigned int i = 0; value != NULL && i < N_FIELDS; i++) {
        if (strcmp(line, state_fields[i].name) == 0) {
            r->field_seen[i] = read_field(i, value, &r->st);
            if (!r->field_seen[i]) {
                fprintf(stderr, "[restart] bad value for [%s]: %s\n", line,
                        value);
            }
            return r->field_seen[i];
        }
    }
    if (value != NULL && strcmp(line, "page") == 0 && read_page(r, value)) {
        return true;
    }
    fprintf(stderr, "[restart] unknown metadata line [%s]\n", line);
    return false;
}

static bool reader_complete(const struct meta_reader *r)
{
    bool all = r->ended;
    for (unsigned int i = 0; i < N_CHECKED; i++) {
        all = all && r->setting_seen[i];
    }
    for (unsigned int i = 0; i < N_FIELDS; i++) {
        all = all && r->field_seen[i];
    }
    if (!all) {
        fprintf(stderr, "[restart] missing some metadata lines\n");
    }
    return all;
}

/* memcached refuses to start on a metadata file that does not begin with
 * a tag line it knows: an empty one, or one something other than a
 * graceful stop wrote (ours is written whole or not at all, memfile_save).
 * So do we, leaving the file for the operator to look at; a metadata
 * file that is one (ours of other settings or another version,
 * memcached's own) only makes the start cold.  Never returns. */
static void refuse_unreadable_meta(const char *first_line)
{
    if (first_line == NULL) {
        fprintf(stderr, "[restart] Failed to read a tag from metadata "
                "file\n");
    } else {
        fprintf(stderr, "[restart] invalid metadata line:\n\n%s\n"
                "[restart] corrupt metadata file\n", first_line);
    }
    fprintf(stderr, "[restart] %s is not a metadata file a graceful stop "
            "left; remove it to start with a clean cache\n", mf.meta_path);
    exit(EX_DATAERR);
}

static void check_first_line(const char *line)
{
    size_t len = strcspn(line, "\n");
    size_t format_len = strlen(META_FORMAT);
    bool ours = strncmp(line, META_FORMAT " ", format_len + 1) == 0;
    bool memcacheds = len == strlen(MEMCACHED_META_FIRST_LINE)
        && strncmp(line, MEMCACHED_META_FIRST_LINE, len) == 0;
    if (!ours && !memcacheds) {
        char shown[META_LINE_MAX];
        snprintf(shown, sizeof(shown), "%.*s", (int)len, line);
        refuse_unreadable_meta(shown);
    }
}

/* Read and check PATH.meta into mf.saved; false (with the reason on
 * stderr) when there is none or it does not fit these settings. */
static bool read_meta(FILE *fp)
{
    struct meta_reader r;
    char line[META_LINE_MAX];
    bool ok = true;

    memset(&r, 0, sizeof(r));
    if (fgets(line, sizeof(line), fp) == NULL) {
        if (!ferror(fp)) {
            refuse_unreadable_meta(NULL);
        }
    } else {
        check_first_line(line);
        ok = read_meta_line(&r, line);
    }
    while (ok && fgets(line, sizeof(line), fp) != NULL) {
        ok = read_meta_line(&r, line);
    }
    if (ok && ferror(fp)) {
        fprintf(stderr, "[restart] error reading the metadata file\n");
        ok = false;
    }
    ok = ok && reader_complete(&r);
    if (!ok) {
        free(r.st.pages);
        return false;
    }
    mf.saved = r.st;
    return true;
}

/* No PATH.meta: memcached's line, unless the durable block can bring the
 * items back (items_restore_d.c says so then). */
static void say_why_cold(void)
{
    if (mf.durable.usable) {
        return;
    }
    if (mf.durable.why_not[0] != '\0') {
        fprintf(stderr, "[restart] memory file %s: %s\n",
                settings.memory_file, mf.durable.why_not);
    }
    fprintf(stderr, "[restart] no metadata save file, starting with a clean "
            "cache\n");
}

/* The metadata is read once: it is deleted before anything is restored,
 * so that a crash from here on is recovered from the durable block, which
 * follows the new run, rather than from a file the new run has already
 * written to. */
static void load_meta(void)
{
    FILE *fp = fopen(mf.meta_path, "r");
    if (fp == NULL) {
        if (errno == ENOENT) {
            mf.meta_absent = true;
            say_why_cold();
        } else {
            fprintf(stderr, "[restart] cannot open %s: %s\n", mf.meta_path,
                    strerror(errno));
            restart_failed();
        }
        return;
    }
    bool ok = read_meta(fp);
    fclose(fp);
    if (unlink(mf.meta_path) != 0) {
        fprintf(stderr, "[restart] cannot remove %s: %s\n", mf.meta_path,
                strerror(errno));
        if (ok) {
            free(mf.saved.pages);
            memset(&mf.saved, 0, sizeof(mf.saved));
        }
        ok = false;
    }
    mf.have_saved = ok;
    if (!ok) {
        restart_failed();
    }
}

void memfile_open(void)
{
    const char *path = settings.memory_file;
    size_t size = settings.maxbytes;
    if (path == NULL) {
        return;
    }
    mf.fresh_epoch = process_started;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        die_file("open", errno);
    }
    /* Two servers on one file would hand out each other's chunks.  The
     * lock lives as long as the descriptor, kept open for that. */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "-e %s: %s\n", path, errno == EWOULDBLOCK
                ? "is in use by another process" : strerror(errno));
        exit(EX_OSERR);
    }
    size_t block_off = mfd_block_offset(size);
    size_t file_size = block_off
        + mfd_block_bytes(size, (size_t)settings.slab_page_size);
    off_t was = size_file(fd, file_size);
    void *base = mmap(NULL, file_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                      fd, 0);
    if (base == MAP_FAILED) {
        die_file("mmap", errno);
    }
    mf.active = true;
    mf.base = base;
    mf.size = file_size;
    mf.meta_path = meta_path_of(path);
    slabs_set_page_region(base, size);
    mfd_attach((char *)base + block_off, size,
               (size_t)settings.slab_page_size, &mf.durable);
    if (was != 0 && (size_t)was != file_size) {
        /* the block was elsewhere (another -m), or the file is not ours */
        mf.durable.usable = false;
        snprintf(mf.durable.why_not, sizeof(mf.durable.why_not),
                 "its size is not this run's layout's (%lld bytes, not "
                 "%zu: another -m, or an older build's file)",
                 (long long)was, file_size);
    }
    load_meta();
}

/* ---- writing PATH.meta ---- */

static bool write_meta(FILE *fp, const struct memfile_state *run)
{
    struct memfile_state here = *run;
    const struct memfile_state *st = &here;
    char value[64];
    here.mmap_oldbase = (uintptr_t)mf.base;
    for (unsigned int i = 0; i < N_CHECKED; i++) {
        checked_settings[i].format(value, sizeof(value));
        fprintf(fp, "%s %s\n", checked_settings[i].name, value);
    }
    for (unsigned int i = 0; i < N_FIELDS; i++) {
        write_field(fp, i, st);
    }
    for (unsigned int i = 0; i < st->npages; i++) {
        fprintf(fp, "page %u %u\n", (unsigned)st->pages[i].index,
                (unsigned)st->pages[i].clsid);
    }
    fprintf(fp, "end\n");
    return fflush(fp) == 0 && !ferror(fp);
}

/* The rename is durable once the directory is. */
static void sync_dir_of(const char *path)
{
    char *copy = strdup(path);
    if (copy == NULL) {
        return;
    }
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(copy);
}

static bool save_failed(const char *what, const char *path)
{
    fprintf(stderr, "[restart] failed to %s %s: %s; the next start will be"
            " cold\n", what, path, strerror(errno));
    return false;
}

bool memfile_save(const struct memfile_state *st)
{
    if (!mf.active) {
        return false;
    }
    /* the items first: a .meta must never describe memory not yet on
     * the file */
    if (msync(mf.base, mf.size, MS_SYNC) != 0) {
        return save_failed("msync", settings.memory_file);
    }
    size_t len = strlen(mf.meta_path) + sizeof(".tmp");
    char *tmp = malloc(len);
    if (tmp == NULL) {
        return save_failed("allocate a path for", mf.meta_path);
    }
    snprintf(tmp, len, "%s.tmp", mf.meta_path);
    bool ok = false;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fp == NULL) {
        save_failed("create", tmp);
        if (fd >= 0) {
            close(fd);
        }
    } else {
        ok = write_meta(fp, st) && fsync(fd) == 0;
        ok = (fclose(fp) == 0) && ok;
        if (!ok) {
            save_failed("write", tmp);
        } else if (rename(tmp, mf.meta_path) != 0) {
            ok = save_failed("rename to", mf.meta_path);
        }
        if (!ok) {
            unlink(tmp);
        }
    }
    if (ok) {
        sync_dir_of(mf.meta_path);
    }
    free(tmp);
    return ok;
}
