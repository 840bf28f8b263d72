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

#endif
