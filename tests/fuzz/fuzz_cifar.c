/* libFuzzer target: the CIFAR-10 and CIFAR-100 binary-batch parsers, on raw bytes and
 * through the gzip reader (input starting with 1f 8b). */
#include <stdint.h>
#include <string.h>

#include "data/cifar.h"

/* the parser's promise: every label within its format's range */
static void check_labels(const nn_tensor *t, int classes)
{
    const int64_t *l = nn_data(t);
    for (int64_t i = 0; i < t->shape[0]; i++)
        if (l[i] < 0 || l[i] >= classes) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nn_bytes b = {0};
    if (nn_is_gzip(data, size)) {
        if (nn_gunzip(data, size, (size_t)1 << 24, "fuzz.gz", &b)) return 0;
        data = b.data, size = b.len;
    }
    const nn_cifar_format *formats[2] = {&nn_cifar10, &nn_cifar100};
    for (int k = 0; k < 2; k++) {
        const nn_cifar_format *f = formats[k];
        nn_tensor *images, *labels, *coarse = NULL;
        if (!nn_cifar_parse_as(f, data, size, "fuzz.bin", &images, &labels, &coarse)) {
            check_labels(labels, f->classes[f->label_bytes - 1]);
            if (coarse) check_labels(coarse, f->classes[0]);
            nn_release(images);
            nn_release(labels);
            nn_release(coarse);
        }
    }
    nn_bytes_free(&b);
    return 0;
}
