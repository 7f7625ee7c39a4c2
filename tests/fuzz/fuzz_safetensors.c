/* libFuzzer target: the safetensors reader (header length, JSON header,
 * dtypes, shapes, offsets), loading every tensor of a file that validates. */
#include <stdint.h>
#include <string.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nn_safetensors *f = nn_safetensors_open_mem(data, size, "fuzz.safetensors");
    if (!f) return 0;
    for (int i = 0; i < nn_safetensors_count(f); i++) {
        nn_tensor *t = nn_safetensors_load(f, i);
        if (!t) continue;
        volatile uint8_t sink = 0; /* touch every byte of the result */
        const uint8_t *p = nn_data(t);
        size_t n = (size_t)nn_numel(t) * nn_dtype_size(t->dtype);
        for (size_t k = 0; k < n; k++) sink ^= p[k];
        (void)sink;
        nn_release(t);
    }
    for (int i = 0; i < nn_safetensors_meta_count(f); i++) {
        size_t len;
        volatile size_t sink = strlen(nn_safetensors_meta_key(f, i)) + strlen(nn_safetensors_meta_value(f, i, &len));
        (void)sink;
    }
    nn_safetensors_close(f);
    return 0;
}
