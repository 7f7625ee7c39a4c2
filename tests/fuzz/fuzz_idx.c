/* libFuzzer target: the IDX parser, on raw bytes and through the gzip reader
 * (input starting with 1f 8b), as nn_idx_load reads a file. */
#include <stdint.h>
#include <string.h>

#include "data/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nn_tensor *t;
    if (nn_is_gzip(data, size)) {
        nn_bytes b;
        if (nn_gunzip(data, size, (size_t)1 << 24, "fuzz.gz", &b)) return 0;
        t = nn_idx_parse_bytes(&b, "fuzz.gz");
    } else t = nn_idx_parse(data, size, "fuzz.idx");
    if (t) {
        /* touch every byte of the result */
        volatile uint8_t sink = 0;
        const uint8_t *p = nn_data(t);
        size_t n = (size_t)nn_numel(t) * nn_dtype_size(t->dtype);
        for (size_t i = 0; i < n; i++) sink ^= p[i];
        (void)sink;
        nn_release(t);
    }
    return 0;
}
