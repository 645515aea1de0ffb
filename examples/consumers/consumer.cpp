// A C++ program built against an installed libnwattn through CMake:
//   find_package(nwattn REQUIRED) + target_link_libraries(... nwattn::nwattn)
// It pools a tiny d2l-style data set (Gaussian kernel, h = 1, and average pooling) and checks
// the outputs and the weights against the definition evaluated here in double precision.
#include <nwattn.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "FAIL: %s\n", what);
        ++failures;
    }
}

struct ContextDeleter {
    void operator()(nwattn_context *ctx) const { nwattn_context_destroy(ctx); }
};
using Context = std::unique_ptr<nwattn_context, ContextDeleter>;

} // namespace

int main()
{
    const std::vector<float> x_train = {0.1f, 0.8f, 1.7f, 2.4f, 3.3f, 4.6f};
    const std::vector<float> x_test = {0.0f, 1.5f, 3.0f, 4.9f};
    const std::size_t n = x_train.size(), m = x_test.size();
    std::vector<float> y_train(n);
    for (std::size_t j = 0; j < n; ++j) {
        y_train[j] = 2.0f * std::sin(x_train[j]) + std::pow(x_train[j], 0.8f);
    }

    nwattn_context *raw = nullptr;
    if (nwattn_context_create(&raw) != NWATTN_OK) {
        std::fprintf(stderr, "FAIL: nwattn_context_create\n");
        return 1;
    }
    Context ctx(raw);

    nwattn_score score;
    std::memset(&score, 0, sizeof score);
    score.kind = NWATTN_SCORE_GAUSSIAN;
    score.bandwidth = 1.0f;

    std::vector<float> y_hat(m), weights(m * n), lse(m);
    nwattn_status st = nwattn_pool(ctx.get(), &score, nullptr, 1, m, n, 1, 1,
                                   x_test.data(), 1, 0, x_train.data(), 1, 0,
                                   y_train.data(), 1, 0, y_hat.data(), 1, 0,
                                   weights.data(), n, 0, lse.data(), 0);
    if (st != NWATTN_OK) {
        std::fprintf(stderr, "FAIL: nwattn_pool: %s: %s\n", nwattn_status_name(st),
                     nwattn_context_last_error(ctx.get()));
        return 1;
    }
    for (std::size_t i = 0; i < m; ++i) {
        double num = 0.0, den = 0.0, weight_sum = 0.0;
        std::vector<double> w(n);
        for (std::size_t j = 0; j < n; ++j) {
            const double diff = double(x_test[i]) - double(x_train[j]);
            w[j] = std::exp(-diff * diff / 2.0);
            num += w[j] * y_train[j];
            den += w[j];
        }
        const double expected = num / den;
        std::printf("x = %.1f  nwattn_pool = %.6f  expected = %.6f\n", double(x_test[i]),
                    double(y_hat[i]), expected);
        check(std::fabs(double(y_hat[i]) - expected) <= 1e-5 * (1.0 + std::fabs(expected)),
              "nwattn_pool output");
        for (std::size_t j = 0; j < n; ++j) {
            check(std::fabs(double(weights[i * n + j]) - w[j] / den) <= 1e-5,
                  "nwattn_pool weights");
            weight_sum += double(weights[i * n + j]);
        }
        check(std::fabs(weight_sum - 1.0) <= 1e-5, "weights sum to one");
        check(std::fabs(double(lse[i]) - std::log(den)) <= 1e-4 * (1.0 + std::fabs(std::log(den))),
              "log-sum-exp");
    }

    // Average pooling, d2l's baseline, and the leave-one-out mask of its training set-up.
    std::vector<float> avg(m);
    st = nwattn_average_pool(ctx.get(), nullptr, 1, m, n, 1, y_train.data(), 1, 0,
                             avg.data(), 1, 0);
    check(st == NWATTN_OK, "nwattn_average_pool succeeds");
    double mean = 0.0;
    for (float y : y_train) {
        mean += double(y);
    }
    mean /= double(n);
    for (float a : avg) {
        check(std::fabs(double(a) - mean) <= 1e-5 * (1.0 + std::fabs(mean)), "average pooling");
    }

    nwattn_mask mask;
    std::memset(&mask, 0, sizeof mask);
    mask.flags = NWATTN_MASK_LEAVE_ONE_OUT;
    std::vector<float> y_loo(n), w_loo(n * n);
    st = nwattn_pool(ctx.get(), &score, &mask, 1, n, n, 1, 1, x_train.data(), 1, 0,
                     x_train.data(), 1, 0, y_train.data(), 1, 0, y_loo.data(), 1, 0,
                     w_loo.data(), n, 0, nullptr, 0);
    check(st == NWATTN_OK, "leave-one-out pooling succeeds");
    for (std::size_t i = 0; i < n; ++i) {
        check(w_loo[i * n + i] == 0.0f, "a masked key gets exactly zero weight");
    }

    if (failures) {
        return 1;
    }
    std::printf("ok: C++ consumer through find_package(nwattn), libnwattn %s\n",
                nwattn_version_string());
    return 0;
}
