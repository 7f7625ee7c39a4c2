/* libFuzzer target: the CIFAR-10 binary-batch parser, on raw bytes and through
 * the gzip reader (input starting with 1f 8b). */
#include <stdint.h>
#include <string.h>

#include "data/cifar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nn_bytes b = {0};
    if (nn_is_gzip(data, size)) {
        if (nn_gunzip(data, size, (size_t)1 << 24, "fuzz.gz", &b)) return 0;
        data = b.data, size = b.len;
    }
    nn_tensor *images, *labels;
    if (!nn_cifar_parse(data, size, "fuzz.bin", &images, &labels)) {
        const int64_t *l = nn_data(labels);
        for (int64_t i = 0; i < labels->shape[0]; i++)
            if (l[i] < 0 || l[i] > 9) __builtin_trap(); /* the parser promised labels in range */
        nn_release(images);
        nn_release(labels);
    }
    nn_bytes_free(&b);
    return 0;
}
