/* libFuzzer target for the JPEG decoder of engine/image.c: any bytes (given the
 * JPEG start-of-image marker when they lack it) must decode or fail with a
 * message, never crash or leak; whatever decodes must encode again and decode
 * to the same size.
 * Build: clang -fsanitize=fuzzer,address -Iengine tests/fuzz/fuzz_jpeg.c engine/image.c -lpng -lturbojpeg -lz -lm */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    nn_image_set_max_pixels((int64_t)1 << 22); /* bounded memory per input */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t soi[3] = {0xFF, 0xD8, 0xFF};
    bool has_soi = size >= 3 && !memcmp(data, soi, 3);
    size_t n = has_soi ? size : size + 3;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return 0;
    if (has_soi) memcpy(buf, data, size);
    else memcpy(buf, soi, 3), memcpy(buf + 3, data, size);
    int channels = (int)(size % 5); /* 0 = unchanged, else L, LA, RGB, RGBA */
    char err[256] = "";
    nn_image_buf img;
    if (nn_image_decode_buf(buf, n, channels, &img, err, sizeof err)) {
        if (!err[0] || img.data) abort(); /* a failure says why and holds nothing */
    } else {
        if (!img.data || img.height <= 0 || img.width <= 0 || img.channels < 1 || img.channels > 4) abort();
        if (channels && img.channels != channels) abort();
        volatile uint8_t acc = 0; /* every byte is readable */
        size_t bytes = (size_t)(img.height * img.width * img.channels);
        for (size_t i = 0; i < bytes; i++) acc ^= img.data[i];
        (void)acc;
        uint8_t *jpg;
        size_t len;
        if ((img.channels == 1 || img.channels == 3) &&
            !nn_image_encode_jpeg_buf(img.data, img.height, img.width, img.channels, 90, &jpg, &len, err, sizeof err)) {
            nn_image_buf back;
            if (nn_image_decode_buf(jpg, len, 0, &back, err, sizeof err)) abort();
            if (back.height != img.height || back.width != img.width || back.channels != img.channels) abort();
            free(back.data);
            free(jpg);
        }
        free(img.data);
    }
    free(buf);
    return 0;
}
