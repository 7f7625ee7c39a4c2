/* libFuzzer target for the PNG decoder of engine/image.c: any bytes (given the
 * PNG signature when they lack it) must decode or fail with a message, never
 * crash or leak; whatever decodes must survive an exact PNG round trip.
 * Build: clang -fsanitize=fuzzer,address -Iengine tests/fuzz/fuzz_png.c engine/image.c -lpng -lturbojpeg -lz -lm */
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

static void check_image(const nn_image_buf *img, int channels)
{
    if (!img->data || img->height <= 0 || img->width <= 0 || img->channels < 1 || img->channels > 4) abort();
    if (channels && img->channels != channels) abort();
    volatile uint8_t acc = 0; /* every byte is readable */
    size_t n = (size_t)(img->height * img->width * img->channels);
    for (size_t i = 0; i < n; i++) acc ^= img->data[i];
    (void)acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    bool has_sig = size >= 8 && !memcmp(data, sig, 8);
    size_t n = has_sig ? size : size + 8;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return 0;
    if (has_sig) memcpy(buf, data, size);
    else memcpy(buf, sig, 8), memcpy(buf + 8, data, size);
    int channels = (int)(size % 5); /* 0 = unchanged, else L, LA, RGB, RGBA */
    char err[256] = "";
    nn_image_buf img;
    if (nn_image_decode_buf(buf, n, channels, &img, err, sizeof err)) {
        if (!err[0] || img.data) abort(); /* a failure says why and holds nothing */
    } else {
        check_image(&img, channels);
        uint8_t *png;
        size_t len;
        if (!nn_image_encode_png_buf(img.data, img.height, img.width, img.channels, 1, &png, &len, err, sizeof err)) {
            nn_image_buf back;
            if (nn_image_decode_buf(png, len, 0, &back, err, sizeof err)) abort();
            size_t bytes = (size_t)(img.height * img.width * img.channels);
            if (back.height != img.height || back.width != img.width || back.channels != img.channels ||
                memcmp(back.data, img.data, bytes))
                abort();
            free(back.data);
            free(png);
        }
        free(img.data);
    }
    free(buf);
    return 0;
}
