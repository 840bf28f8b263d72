/*
 * fuzz/fuzz_binary.c: the libFuzzer harness for the binary protocol
 * (doc/protocol.md "Fuzzing").
 *
 * Owns a start-up that follows main()'s order (memcached.c) with a fixed
 * command line (-B binary, a small D-zone and a small anonymous N-zone,
 * new keys placed in N, workers whose share of connection memory a few
 * dozen pipelined stat requests exhaust), and the client side of one
 * connection per input.
 *
 * Each input is a byte stream from one client: it goes through a
 * socketpair to the server's real worker thread, connection machine
 * (conn.c) and binary parser (proto_bin.c), the end of the input closing
 * the client's write side.  The harness reads and drops the replies until
 * the server closes its end, which it does once it has read everything
 * (or at a quit, a protocol error or bad magic), after conn.c has released
 * every item reference its response queue held; ASan's leak check then
 * sees what a request forgot to free, and the harness checks that no item
 * reference survived either (every chunk in use holds a stored item, and
 * no N-zone value is still out for a reply), which ASan cannot see: items
 * live in slab pages.  Items stay stored across inputs.
 *
 * Locks: none of its own; the server's threads take theirs.
 */
#include "config.h"
#include "conn.h"
#include "conn_buf.h"
#include "engine_start.h"
#include "settings.h"
#include "settings_parse.h"
#include "storage/storage.h"
#include "thread.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The daemon's start-up (memcached.c's main) less the listeners, the
 * signals and the clock's timer: the clock stays where clock_init put it,
 * so expiry times are the same for every input. */
static void server_start(void)
{
    static char *args[] = {
        "fuzz_binary", "-B", "binary", "-t", "32", "-R", "100", "-m", "2",
        "-o", "nvm_size=4m,tier_placement=nvm,tier_promote=sync,"
        "read_buf_mem_limit=1", NULL
    };
    char err[512];

    settings_init();
    settings_parse((int)(sizeof(args) / sizeof(args[0])) - 1, args);
    settings_check();
    conn_table_init(4096);
    conn_buf_init(settings.read_buf_mem_limit, settings.num_threads);
    if (nvm_zone_open(&settings.nvm, &nvm_zone, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz_binary: %s\n", err);
        exit(EXIT_FAILURE);
    }
    if (engine_start() != 0) {
        fprintf(stderr, "fuzz_binary: the storage threads did not start\n");
        exit(EXIT_FAILURE);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* the server may close while input is still unsent */
    signal(SIGPIPE, SIG_IGN);
    server_start();
    return 0;
}

static void set_nonblocking(int fd)
{
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        perror("fuzz_binary: O_NONBLOCK");
        exit(EXIT_FAILURE);
    }
}

/* Send the input and drop the replies until the server hangs up.  Both
 * at once: a server blocked on a full socket reads no more input. */
static void play_client(int fd, const uint8_t *data, size_t size)
{
    size_t sent = 0;
    bool shut = false;
    char sink[65536];

    for (;;) {
        if (!shut && sent == size) {
            shutdown(fd, SHUT_WR);
            shut = true;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (!shut) {
            p.events |= POLLOUT;
        }
        if (poll(&p, 1, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("fuzz_binary: poll");
            exit(EXIT_FAILURE);
        }
        if (p.revents & POLLIN) {
            ssize_t n = read(fd, sink, sizeof(sink));
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                return;         /* the server closed the connection */
            }
        }
        if (!shut && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (n > 0) {
                sent += (size_t)n;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                shut = true;    /* the server hung up first */
            }
        }
    }
}

/* ---- item references: none may outlive the connection ---- */

/* `stats tier classes` per class: chunks in use and items, per zone */
struct zone_usage {
    uint64_t used[MAX_NUMBER_OF_SLAB_CLASSES][2];
    uint64_t items[MAX_NUMBER_OF_SLAB_CLASSES][2];
};

static void collect_usage(const char *key, uint16_t klen, const char *val,
                          uint32_t vlen, const void *cookie)
{
    struct zone_usage *u = (struct zone_usage *)cookie;
    char name[64];
    char number[32];
    char *field;

    if (klen >= sizeof(name) || vlen >= sizeof(number)) {
        return;
    }
    memcpy(name, key, klen);
    name[klen] = '\0';
    memcpy(number, val, vlen);
    number[vlen] = '\0';
    unsigned long id = strtoul(name, &field, 10);
    if (*field != ':' || id >= MAX_NUMBER_OF_SLAB_CLASSES) {
        return;
    }
    field++;
    if ((field[0] != 'd' && field[0] != 'n') || field[1] != '_') {
        return;
    }
    int zone = field[0] == 'n';
    uint64_t value = strtoull(number, NULL, 10);
    if (strcmp(field + 2, "used_chunks") == 0) {
        u->used[id][zone] = value;
    } else if (strcmp(field + 2, "items") == 0
            || strcmp(field + 2, "copies") == 0) {
        /* an N copy of a D item holds its chunk as an item does */
        u->items[id][zone] += value;
    }
}

/* Every chunk in use holds a stored item (or an N copy of one) once no
 * connection is open: a chunk more is an item whose reference a request
 * forgot to release. */
static bool references_released(void)
{
    struct zone_usage u;

    memset(&u, 0, sizeof(u));
    tier_stats_classes(collect_usage, &u);
    return memcmp(u.used, u.items, sizeof(u.used)) == 0;
}

/* The storage threads hold references for a moment too (a migration, an
 * eviction, a promotion queued to the tier thread, a page move that waits
 * up to 2 s): only a difference that lasts 20 s (on a busy machine) is a
 * leak, a leaked reference lasting for ever.  abort() makes libFuzzer
 * keep the input. */
static void check_references(void)
{
    for (int tries = 0; tries < 4000; tries++) {
        if (references_released()
                && storage_workers_inflight_bytes() == 0
                && storage_workers_staging_bytes() == 0) {
            return;
        }
        usleep(5000);
    }
    fprintf(stderr, "fuzz_binary: an item reference or N-zone value "
            "outlived its connection (stats tier classes: used chunks "
            "differ from items, or inflight_bytes or staging_bytes is "
            "not 0)\n");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("fuzz_binary: socketpair");
        exit(EXIT_FAILURE);
    }
    set_nonblocking(sv[0]);
    set_nonblocking(sv[1]);
    /* as listen.c hands over an accepted client */
    dispatch_conn_new(sv[0], conn_new_cmd, EV_READ | EV_PERSIST,
                      READ_BUFFER_SIZE, local_transport, false);
    play_client(sv[1], data, size);
    close(sv[1]);
    check_references();
    return 0;
}
