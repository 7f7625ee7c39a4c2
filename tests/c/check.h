/* A minimal C test harness: CHECK counts a pass or prints a failure with its
 * location and an optional printf-style message; CHECK_REPORT's line is
 * "N passed, N failed" and its value is the exit status. */
#ifndef NN_CHECK_H
#define NN_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int check_passed, check_failed;

static void check_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    check_failed++;
    fprintf(stderr, "%s:%d: check failed: %s: ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

#define CHECK(cond, ...)                                                           \
    do {                                                                           \
        if (cond) check_passed++;                                                  \
        else check_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__);                \
    } while (0)

#define CHECK_REPORT() (printf("%d passed, %d failed\n", check_passed, check_failed), check_failed != 0)

#endif
