/*
 * service.c: running under systemd (service.h).
 *
 * Owns the notifications of a Type=notify unit (READY=1 once the
 * listeners accept, STOPPING=1 when a stop begins, and for a graceful
 * stop the time it needs, EXTEND_TIMEOUT_USEC=), and the one rule of
 * what a graceful stop keeps and how long it may take, which the
 * daemon's stop, its --stop-plan output and tiercached-wrapper --dry-run
 * share (doc/restart.md "Restarts under systemd").  sd_notify does
 * nothing when NOTIFY_SOCKET is unset, so the daemon outside systemd
 * behaves as before.
 *
 * Locks: none; main thread only (start-up, the stop signal's callback).
 */
#include "config.h"
#include "service.h"
#include "settings.h"

#include <inttypes.h>
#include <systemd/sd-daemon.h>

/* A graceful stop writes at most the D-zone (its items demoted into the
 * N-zone, or -e's file synced) and syncs the N-zone's file: every byte
 * of both, at worst.  Measured here (doc/restart.md "Restarts under
 * systemd"): over 1.5 GiB/s for a file on ext4; the rate assumed leaves
 * room for a slow disk under msync, and the fixed part covers the
 * threads' stops. */
#define STOP_BYTES_PER_SECOND (20ULL * 1024 * 1024)
#define STOP_FIXED_SECONDS 30ULL

bool service_stop_keeps(void)
{
    if (settings.memory_file != NULL) {
        return true;
    }
    /* an anonymous or nvm_node= zone goes with the process; under
     * tier_policy=dram the zone is discarded at start (storage.c) */
    return settings.nvm.path != NULL && tier_enabled();
}

static uint64_t bytes_to_save(void)
{
    uint64_t bytes = settings.maxbytes;
    if (settings.nvm.path != NULL && tier_enabled()) {
        bytes += settings.nvm.size;
    }
    return bytes;
}

uint64_t service_stop_seconds(void)
{
    if (!service_stop_keeps()) {
        return 0;
    }
    uint64_t bytes = bytes_to_save();
    return STOP_FIXED_SECONDS
           + (bytes + STOP_BYTES_PER_SECOND - 1) / STOP_BYTES_PER_SECOND;
}

void service_print_stop_plan(FILE *out)
{
    if (!service_stop_keeps()) {
        fprintf(out, "graceful stop (SIGUSR1) keeps: nothing (no nvm_path= "
                "N-zone and no -e memory file); it stops as SIGTERM does\n");
        fprintf(out, "graceful stop timeout: the unit's TimeoutStopSec "
                "(nothing to save)\n");
        return;
    }
    fprintf(out, "graceful stop (SIGUSR1) keeps: ");
    if (settings.nvm.path != NULL && tier_enabled()) {
        fprintf(out, "the N-zone's items (nvm_path=%s), ", settings.nvm.path);
    }
    if (settings.memory_file != NULL) {
        fprintf(out, "the D-zone's items in the memory file (-e %s)\n",
                settings.memory_file);
    } else {
        fprintf(out, "the D-zone's items, written into the N-zone (in "
                "place of its coldest when it is full)\n");
    }
    fprintf(out, "graceful stop timeout: %" PRIu64 " s (EXTEND_TIMEOUT_USEC;"
            " %llu s + %" PRIu64 " MiB at %llu MiB/s)\n",
            service_stop_seconds(), STOP_FIXED_SECONDS,
            bytes_to_save() >> 20, STOP_BYTES_PER_SECOND >> 20);
}

void service_ready(void)
{
    sd_notify(0, "READY=1");
}

void service_stopping(bool graceful)
{
    uint64_t seconds = graceful ? service_stop_seconds() : 0;
    if (seconds == 0) {
        sd_notify(0, "STOPPING=1");
        return;
    }
    sd_notifyf(0, "STOPPING=1\nEXTEND_TIMEOUT_USEC=%" PRIu64,
               seconds * 1000000);
}
