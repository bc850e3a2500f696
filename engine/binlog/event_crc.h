/* The CRC32 of a binlog event: the zlib/gzip polynomial, over one event's bytes.
 *
 * Events are short (a MariaDB OLTP relay log's average 170 bytes), and zlib's table-driven CRC
 * spends most of its time per call on them: over the 100,000 events of a 16 MB relay log, zlib
 * took 13 ms and Intel ISA-L's carry-less multiplication folding 1.3 ms, with the same results.
 * setup.py defines RELAYDECK_ISAL where ISA-L's headers are installed (Debian: libisal-dev). */
#ifndef RELAYDECK_EVENT_CRC_H
#define RELAYDECK_EVENT_CRC_H

#include <stddef.h>
#include <stdint.h>

#ifdef RELAYDECK_ISAL
#include <isa-l/crc.h>

static inline uint32_t event_crc32(const unsigned char *buf, size_t length) {
    return crc32_gzip_refl(0, buf, (uint64_t)length);
}
#else
#include <zlib.h>

static inline uint32_t event_crc32(const unsigned char *buf, size_t length) {
    return (uint32_t)crc32(0, buf, (unsigned int)length);
}
#endif

#endif
