/*
 * memcached.c: the daemon's entry point.
 *
 * Owns main() and the start-up order (settings, limits, privileges, the
 * N-zone, daemonizing, the clock, storage and its threads, the workers,
 * the logger thread, signals, listeners; the accept pause is handed the
 * listeners' switch and -c test here), the stop order after
 * SIGTERM/SIGINT and, graceful, SIGUSR1 (both also by `shutdown
 * [graceful]` with -A): listeners, workers, storage, the logger, N-zone
 * (doc/design.md "Stopping"); systemd hears of the start and the stop
 * through service.c.
 *
 * Locks: none of its own; everything here runs on the main thread.
 */
#include "config.h"
#include "accept_pause.h"
#include "clock.h"
#include "conn.h"
#include "conn_buf.h"
#include "daemon_stats.h"
#include "engine_start.h"
#include "listen.h"
#include "logger.h"
#include "proto_auth.h"
#include "proto_sasl.h"
#include "service.h"
#include "settings.h"
#include "settings_parse.h"
#include "storage/storage.h"
#include "thread.h"
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sysexits.h>
#include <unistd.h>

static struct event_base *main_base;

/* ------------------------------------------------------------------ */
/* shutdown and signals                                                */

static struct event sigterm_event;
static struct event sigint_event;
static struct event sigusr1_event;
/* the first stop signal decides; graceful: it was SIGUSR1 (or `shutdown
 * graceful`); main reads it after the loop */
static bool stop_requested;
static bool stop_graceful;

static void signal_cb(evutil_socket_t sig, short which, void *arg)
{
    if (settings.verbose > 0) {
        fprintf(stderr, "Signal handled: %s.\n", strsignal(sig));
    }
    if (!stop_requested) {
        stop_requested = true;
        stop_graceful = sig == SIGUSR1;
        /* before any of the stop's work, so that systemd's stop timeout
         * is extended while there is still time on it */
        service_stopping(stop_graceful);
    }
    event_base_loopbreak(main_base);
}

static void install_signal_events(void)
{
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    evsignal_assign(&sigterm_event, main_base, SIGTERM, signal_cb, NULL);
    evsignal_assign(&sigint_event, main_base, SIGINT, signal_cb, NULL);
    evsignal_assign(&sigusr1_event, main_base, SIGUSR1, signal_cb, NULL);
    evsignal_add(&sigterm_event, NULL);
    evsignal_add(&sigint_event, NULL);
    evsignal_add(&sigusr1_event, NULL);
}

/* Freeing the base gives the signals their default action back, and a
 * second SIGTERM would then kill the process in its last steps: blocked,
 * they stay pending until exit.  Only this thread is left to get them. */
static void release_main_base(void)
{
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    event_base_free(main_base);
    main_base = NULL;
}

/* Start-up: map the N-zone (or check dram_node) before storage exists;
 * failures print why and stop with nothing left behind. */
static void open_nvm_zone(void)
{
    char err[512];
    if (settings.nvm.size == 0) {
        if (settings.nvm.dram_node >= 0 &&
            nvm_check_node("dram_node", settings.nvm.dram_node, err,
                           sizeof(err)) != 0) {
            fprintf(stderr, "%s\n", err);
            exit(EX_USAGE);
        }
        return;
    }
    if (nvm_zone_open(&settings.nvm, &nvm_zone, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
            exit(EX_USAGE);
    }
}


/* After the main loop: every thread is gone before the storage they use,
 * and the storage before the N-zone it lives on (doc/design.md
 * "Stopping").  The main loop never runs again, so the clock and the
 * accept pause's timers cannot fire into what is torn down. */
static void server_stop(void)
{
    listeners_close();
    memcached_thread_stop();
    udp_sockets_close();
    accept_pause_stop();
    /* nothing to keep (no file-backed N-zone, no -e): no D item is
     * demoted into a zone that goes with the process */
    storage_shutdown(stop_graceful && service_stop_keeps());
    logger_stop();
    if (settings.nvm.size > 0) {
        nvm_zone_close(&nvm_zone);
    }
    release_main_base();
    if (settings.daemonize && settings.pid_file != NULL) {
        unlink(settings.pid_file);
    }
}

/* ------------------------------------------------------------------ */
/* process setup                                                       */

static void raise_limits(void)
{
    struct rlimit rlim;
    if (settings.enable_coredumps) {
        if (getrlimit(RLIMIT_CORE, &rlim) == 0) {
            struct rlimit want = { rlim.rlim_max, rlim.rlim_max };
            if (setrlimit(RLIMIT_CORE, &want) != 0) {
                fprintf(stderr, "failed to ensure corefile creation\n");
                exit(EX_OSERR);
            }
        }
    }
    if (getrlimit(RLIMIT_NOFILE, &rlim) != 0) {
        fprintf(stderr, "failed to getrlimit number of files\n");
        exit(EX_OSERR);
    }
    rlim_t want = (rlim_t)settings.listen.maxconns;
    if (rlim.rlim_cur < want) {
        rlim.rlim_cur = want;
        if (rlim.rlim_max < want) {
            rlim.rlim_max = want;
        }
        if (setrlimit(RLIMIT_NOFILE, &rlim) != 0) {
            fprintf(stderr, "failed to set rlimit for open files. Try "
                    "starting as root or requesting smaller maxconns "
                    "value.\n");
            exit(EX_OSERR);
        }
    }
    int max_fds = (int)(rlim.rlim_cur > INT_MAX / 2 ? INT_MAX / 2
                                                : rlim.rlim_cur);
    if ((size_t)max_fds > (size_t)settings.listen.maxconns * 2 + 1024) {
        max_fds = settings.listen.maxconns * 2 + 1024;
    }
    conn_table_init(max_fds);
    conn_buf_init(settings.read_buf_mem_limit, settings.num_threads);
}

static void drop_privileges(void)
{
    if (getuid() != 0 && geteuid() != 0) {
        return;
    }
    if (settings.username == NULL || *settings.username == '\0') {
        fprintf(stderr, "can't run as root without the -u switch\n");
        exit(EX_USAGE);
    }
    struct passwd *pw = getpwnam(settings.username);
    if (pw == NULL) {
        fprintf(stderr, "can't find the user %s to switch to\n",
                settings.username);
        exit(EX_NOUSER);
    }
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) < 0 ||
        setuid(pw->pw_uid) < 0) {
        fprintf(stderr, "failed to assume identity of user %s\n",
                settings.username);
        exit(EX_OSERR);
    }
}

static void daemonize(void)
{
    switch (fork()) {
    case -1:
        perror("fork");
        exit(EXIT_FAILURE);
    case 0:
        break;
    default:
        _exit(EXIT_SUCCESS);
    }
    if (setsid() == -1) {
        perror("setsid");
        exit(EXIT_FAILURE);
    }
    if (chdir("/") != 0) {
        perror("chdir");
        exit(EXIT_FAILURE);
    }
    int fd = open("/dev/null", O_RDWR);
    if (fd != -1) {
        dup2(fd, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        if (fd > STDERR_FILENO) {
            close(fd);
        }
    }
}

static void save_pid(const char *path)
{
    FILE *fp = fopen(path, "w");
    if (fp == NULL) {
        fprintf(stderr, "Could not open the pid file %s for writing: %s\n",
                path, strerror(errno));
        return;
    }
    fprintf(fp, "%ld\n", (long)getpid());
    fclose(fp);
}

int main(int argc, char **argv)
{
    settings_init();
    settings_parse(argc, argv);
    settings_check();
    if (settings.stop_plan) {
        service_print_stop_plan(stdout);
        return EXIT_SUCCESS;
    }
    /* as root still, as memcached reads them: -Y's file, SASL's config */
    if (settings.auth_file != NULL) {
        authfile_load(settings.auth_file);
    }
    if (settings.sasl) {
        auth_sasl_init();
    }
    if (settings.tls.enabled) {
        /* as root still: keys are often readable by root alone */
        tls_init();
    }
    raise_limits();
    drop_privileges();
    /* as the -u user, the way memcached opens its -e memory file: the
     * device or file must be that user's (doc/nvm.md) */
    open_nvm_zone();
    if (settings.daemonize) {
        daemonize();
    }

    main_base = event_base_new();
    if (main_base == NULL) {
        fprintf(stderr, "Failed to create the event base\n");
        exit(EXIT_FAILURE);
    }
    accept_pause_init(main_base, listeners_arm, conn_limit_reached);
    stats.reserved_fds = RESERVED_FDS_PER_THREAD
                         * (uint64_t)settings.num_threads;
    if (engine_start() != 0) {
        fprintf(stderr, "Failed to start the storage threads\n");
        exit(EXIT_FAILURE);
    }
    if (logger_start() != 0) {
        fprintf(stderr, "Failed to start the logger thread\n");
        exit(EXIT_FAILURE);
    }
    /* after the threads exist: MCL_FUTURE under a small RLIMIT_MEMLOCK
     * would otherwise keep their stacks from being mapped */
    if (settings.lock_memory && mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        fprintf(stderr, "warning: -k invalid, mlockall() failed: %s\n",
                strerror(errno));
    }
    clock_start(main_base);
    install_signal_events();
    listeners_open(main_base);
    if (settings.daemonize && settings.pid_file != NULL) {
        save_pid(settings.pid_file);
    }
    /* the restart scan ran in engine_start: clients that systemd's socket
     * held meanwhile are served from here on */
    service_ready();

    event_base_loop(main_base, 0);

    server_stop();
    return EXIT_SUCCESS;
}
