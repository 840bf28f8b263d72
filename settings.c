/*
 * settings.c: the one `settings` struct (settings.h), which everything
 * reads.  settings_parse.c fills it at start-up; settings.h says who
 * writes it afterwards and how.  Apart from the parser so that what reads
 * the settings needs nothing of what the parser calls (the tier policy
 * registry, the TLS and listener defaults).
 */
#include "config.h"
#include "settings.h"

struct settings settings;
