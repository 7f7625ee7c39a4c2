/* A minimal C test harness: CHECK counts a pass or prints a failure with its
 * location; TEST_MAIN's closing line is "N passed, N failed". */
#ifndef NN_CHECK_H
#define NN_CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) check_passed++;                                          \
        else {                                                             \
            check_failed++;                                                \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, "" __VA_ARGS__);                               \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

#define CHECK_REPORT() (printf("%d passed, %d failed\n", check_passed, check_failed), check_failed != 0)

#endif
