/*
 * settings_parse.h: how the command line fills `settings` (settings.h),
 * in settings_parse.c.  Only the daemon's start-up (memcached.c) and the
 * fuzz harness call these; the parts that read the settings include
 * settings.h alone.
 */
#ifndef SETTINGS_PARSE_H
#define SETTINGS_PARSE_H

/* Start-up, main thread, in this order: memcached's defaults, then the
 * command line (exits with usage text, version or one error line where
 * memcached does), then the checks that need every option known. */
void settings_init(void);
void settings_parse(int argc, char **argv);
void settings_check(void);

#endif
