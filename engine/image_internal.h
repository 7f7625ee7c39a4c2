/* Helpers shared by the image_*.c files (not part of the engine's API). */
#ifndef NN_IMAGE_INTERNAL_H
#define NN_IMAGE_INTERNAL_H

#include <math.h>

#include "image.h"

/* Pillow's ImagingBlend(degenerate a, image b, alpha): float arithmetic, clipped, truncated */
static inline uint8_t nn_pil_blend(int a, int b, float alpha)
{
    float v = (float)a + alpha * (float)(b - a);
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v;
}

/* torchvision's _blend(img1 a, img2 b, ratio): ratio * a + (1 - ratio) * b clamped to [0, bound], in
 * float32 (float64 images: double); ratio and inv = 1 - ratio come already rounded to that precision.
 * Storing the result with nn_store_f64 truncates it for uint8, as .to(uint8) does. */
static inline double nn_tensor_blend(double a, double b, double ratio, double inv, double bound, bool f64)
{
    double x = f64 ? ratio * a : (double)(float)(ratio * a), y = f64 ? inv * b : (double)(float)(inv * b);
    double s = f64 ? x + y : (double)(float)(x + y);
    return fmin(fmax(s, 0.0), bound);
}

/* Pillow's LA/RGBA <-> La/RGBa around filtered resampling: colour times alpha (undo: divided). */
void nn_image_premultiply(uint8_t *p, int64_t npix, int c, bool undo);

/* A CPU contiguous copy (or reference) of t, or NULL with an error naming fn. */
nn_tensor *nn_image_cpu_contiguous(const char *fn, nn_tensor *t);

/* NN_OK when t is a uint8 H x W x C image with 1 to 4 channels, else an error naming fn. */
nn_status nn_image_check_hwc_u8(const char *fn, const nn_tensor *t);

/* NN_OK when t is a tensor image torchvision's colour functions take: at least 2 dims (3 with
 * need3d), uint8 or float (uint8 only with need_u8), 1 or 3 channels; else an error naming fn. */
nn_status nn_image_check_chw(const char *fn, const nn_tensor *t, bool need3d, bool need_u8);

/* Pillow's mode name of a C-channel image (L, LA, RGB, RGBA). */
static inline const char *nn_image_mode_name(int64_t c)
{
    return c == 1 ? "L" : c == 2 ? "LA" : c == 3 ? "RGB" : c == 4 ? "RGBA" : "?";
}

#endif
