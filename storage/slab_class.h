/*
 * slab_class.h: the range of slab class ids (memcached 1.6.18's values),
 * which every per-class table is sized by.
 */
#ifndef SLAB_CLASS_H
#define SLAB_CLASS_H

#define POWER_SMALLEST 1
#define POWER_LARGEST 64       /* slab class ids are 1..63 */
#define MAX_NUMBER_OF_SLAB_CLASSES (POWER_LARGEST + 1)
#define CHUNK_ALIGN_BYTES 8

/* memcached 1.6.18's item header without its cas: the base of its class
 * ladder (slabs.c) and of the sizes it chooses a class by (items.c), so
 * that an item lands in the class memcached would put it in. */
#define MEMCACHED_ITEM_HEADER 48

#endif
