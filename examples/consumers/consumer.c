/* A C11 program built against an installed libnwattn through pkg-config:
 *   cc consumer.c $(pkg-config --cflags --libs nwattn)
 * It pools a tiny d2l-style data set with the Gaussian kernel (h = 1) and checks the result
 * against the definition evaluated here in double precision. */
#include <nwattn.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N_TRAIN 6
#define N_TEST 4

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

int main(void)
{
    const float x_train[N_TRAIN] = {0.1f, 0.8f, 1.7f, 2.4f, 3.3f, 4.6f};
    const float x_test[N_TEST] = {0.0f, 1.5f, 3.0f, 4.9f};
    float y_train[N_TRAIN];
    for (int j = 0; j < N_TRAIN; j++) {
        y_train[j] = 2.0f * sinf(x_train[j]) + powf(x_train[j], 0.8f);
    }

    check(nwattn_version_number() == NWATTN_VERSION_NUMBER, "nwattn_version_number()");
    check(strcmp(nwattn_version_string(), NWATTN_VERSION_STRING) == 0, "nwattn_version_string()");

    nwattn_context *ctx = NULL;
    nwattn_status st = nwattn_context_create(&ctx);
    if (st != NWATTN_OK) {
        fprintf(stderr, "FAIL: nwattn_context_create: %s\n", nwattn_status_name(st));
        return 1;
    }

    nwattn_score score;
    memset(&score, 0, sizeof score);
    score.kind = NWATTN_SCORE_GAUSSIAN;
    score.bandwidth = 1.0f;

    float y_hat[N_TEST];
    st = nwattn_pool(ctx, &score, NULL, 1, N_TEST, N_TRAIN, 1, 1,
                     x_test, 1, 0, x_train, 1, 0, y_train, 1, 0,
                     y_hat, 1, 0, NULL, 0, 0, NULL, 0);
    if (st != NWATTN_OK) {
        fprintf(stderr, "FAIL: nwattn_pool: %s: %s\n", nwattn_status_name(st),
                nwattn_context_last_error(ctx));
        nwattn_context_destroy(ctx);
        return 1;
    }
    for (int i = 0; i < N_TEST; i++) {
        double num = 0.0, den = 0.0;
        for (int j = 0; j < N_TRAIN; j++) {
            double diff = (double)x_test[i] - (double)x_train[j];
            double w = exp(-diff * diff / 2.0);
            num += w * y_train[j];
            den += w;
        }
        double expected = num / den;
        printf("x = %.1f  nwattn_pool = %.6f  expected = %.6f\n", (double)x_test[i],
               (double)y_hat[i], expected);
        check(fabs((double)y_hat[i] - expected) <= 1e-5 * (1.0 + fabs(expected)),
              "nwattn_pool result");
    }

    /* An error is reported, explained, and leaves the output alone. */
    float untouched = 42.0f;
    st = nwattn_pool(ctx, &score, NULL, 1, 1, N_TRAIN, 0, 1, x_test, 1, 0, x_train, 1, 0,
                     y_train, 1, 0, &untouched, 1, 0, NULL, 0, 0, NULL, 0);
    check(st == NWATTN_ERR_BAD_DIMENSION, "d == 0 gives NWATTN_ERR_BAD_DIMENSION");
    check(strcmp(nwattn_status_name(st), "NWATTN_ERR_BAD_DIMENSION") == 0, "nwattn_status_name");
    check(nwattn_context_last_error(ctx)[0] != '\0', "nwattn_context_last_error explains");
    check(untouched == 42.0f, "the output is untouched after an error");

    nwattn_context_destroy(ctx);
    if (failures) {
        return 1;
    }
    printf("ok: C consumer through pkg-config, libnwattn %s\n", nwattn_version_string());
    return 0;
}
