/*
 * nvm_config.h: the options of the N-zone (-o nvm_*, dram_node;
 * doc/nvm.md), embedded in the settings as settings.nvm, and the parsers
 * of their values (nvm_config.c).  Written only at start-up, read by
 * nvm.c when it opens the zone.
 */
#ifndef NVM_CONFIG_H
#define NVM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The -o tier options that decide where the N-zone comes from.  Fill it
 * with nvm_config_init() and the parse helpers below. */
struct nvm_config {
    const char *path;           /* nvm_path=: devdax node, fsdax or any file */
    bool have_node;             /* nvm_node= was given ... */
    bool node_auto;             /* ... as "auto" (CPU-less node via hwloc) */
    int node;                   /* ... as a number (when !node_auto) */
    size_t size;                /* nvm_size=, bytes; 0 = no N-zone */
    uint32_t emulate_read_ns;   /* nvm_emulate=R:W, ns added per line read */
    uint32_t emulate_write_ns;  /*                 ns added per line written */
    int dram_node;              /* dram_node=, -1 = not bound; nvm_zone_open
                                 * only checks that the node exists */
};

void nvm_config_init(struct nvm_config *cfg);
bool nvm_parse_size(const char *s, size_t *out);
bool nvm_parse_emulate(const char *s, uint32_t *read_ns, uint32_t *write_ns);
bool nvm_parse_node(const char *s, int *node, bool *is_auto);

#endif
