// ViennaCL (the distribution's libviennacl-dev) on the OpenCL device,
// against the same computations on the host: vector operations and
// reductions, dense matrix-vector and matrix-matrix products, sparse
// matrix-vector products, and the CG, BiCGStab and GMRES solvers, each in
// single and double precision (double where the device has it). ViennaCL
// generates its OpenCL kernels at run time for each operation and type.
// Prints one line per check and "N passed, N failed" last; exits 1 on a
// failure.
//
//   viennacl_check [N]   N: vector length and matrix order (default 300)

#define VIENNACL_WITH_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <viennacl/compressed_matrix.hpp>
#include <viennacl/linalg/bicgstab.hpp>
#include <viennacl/linalg/cg.hpp>
#include <viennacl/linalg/gmres.hpp>
#include <viennacl/linalg/inner_prod.hpp>
#include <viennacl/linalg/norm_2.hpp>
#include <viennacl/linalg/norm_inf.hpp>
#include <viennacl/linalg/prod.hpp>
#include <viennacl/matrix.hpp>
#include <viennacl/ocl/backend.hpp>
#include <viennacl/vector.hpp>

static int passed = 0, failed = 0;

static void check(const std::string &what, double error, double tolerance) {
    bool ok = std::isfinite(error) && error <= tolerance;
    std::printf("  %s %-44s error %.2e (tolerance %.1e)\n", ok ? "ok  " : "FAIL", what.c_str(),
                error, tolerance);
    ok ? ++passed : ++failed;
}

// Largest difference relative to the largest reference value.
template <typename T>
static double rel(const std::vector<T> &got, const std::vector<double> &want) {
    double d = 0, m = 1e-30;
    for (size_t i = 0; i < want.size(); i++) {
        d = std::max(d, std::fabs(double(got[i]) - want[i]));
        m = std::max(m, std::fabs(want[i]));
    }
    return d / m;
}

template <typename T> static void run(const char *type, size_t n, double tol) {
    std::string t = std::string(" (") + type + ")";
    std::vector<T> hx(n), hy(n);
    for (size_t i = 0; i < n; i++) {
        hx[i] = T(std::sin(0.37 * i) + 0.5);
        hy[i] = T(std::cos(0.11 * i) - 0.25);
    }
    viennacl::vector<T> x(n), y(n), z(n);
    viennacl::copy(hx, x);
    viennacl::copy(hy, y);

    // Vector operations and reductions.
    z = T(2.5) * x - y / T(4) + viennacl::linalg::element_prod(x, y);
    std::vector<T> hz(n);
    viennacl::copy(z, hz);
    std::vector<double> want(n);
    for (size_t i = 0; i < n; i++)
        want[i] = 2.5 * hx[i] - hy[i] / 4.0 + double(hx[i]) * hy[i];
    check("axpy and element-wise product" + t, rel(hz, want), tol);
    double dot = 0, norm = 0, inf = 0;
    for (size_t i = 0; i < n; i++) {
        dot += double(hx[i]) * hy[i];
        norm += double(hx[i]) * hx[i];
        inf = std::max(inf, std::fabs(double(hy[i])));
    }
    check("inner product" + t, std::fabs(double(viennacl::linalg::inner_prod(x, y)) - dot) / std::fabs(dot), tol * 10);
    check("2-norm" + t, std::fabs(double(viennacl::linalg::norm_2(x)) - std::sqrt(norm)) / std::sqrt(norm), tol * 10);
    check("max norm" + t, std::fabs(double(viennacl::linalg::norm_inf(y)) - inf) / inf, tol);

    // Dense products, with sizes no work-group size divides.
    size_t rows = n, cols = n - 7;
    std::vector<std::vector<T>> ha(rows, std::vector<T>(cols)), hb(cols, std::vector<T>(rows / 2 + 3));
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) ha[i][j] = T(std::sin(0.01 * (i * cols + j)));
    for (size_t i = 0; i < cols; i++)
        for (size_t j = 0; j < hb[i].size(); j++) hb[i][j] = T(std::cos(0.013 * (i + 3 * j)));
    viennacl::matrix<T> a(rows, cols), b(cols, hb[0].size()), c(rows, hb[0].size());
    viennacl::copy(ha, a);
    viennacl::copy(hb, b);
    viennacl::vector<T> xc(cols), av(rows);
    std::vector<T> hxc(hx.begin(), hx.begin() + cols);
    viennacl::copy(hxc, xc);
    av = viennacl::linalg::prod(a, xc);
    std::vector<T> hav(rows);
    viennacl::copy(av, hav);
    std::vector<double> wav(rows, 0.0);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) wav[i] += double(ha[i][j]) * hxc[j];
    check("dense matrix-vector product" + t, rel(hav, wav), tol * 10);
    c = viennacl::linalg::prod(a, b);
    std::vector<std::vector<T>> hc(rows, std::vector<T>(hb[0].size()));
    viennacl::copy(c, hc);
    double cd = 0, cm = 1e-30;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < hb[0].size(); j++) {
            double s = 0;
            for (size_t k = 0; k < cols; k++) s += double(ha[i][k]) * hb[k][j];
            cd = std::max(cd, std::fabs(s - hc[i][j]));
            cm = std::max(cm, std::fabs(s));
        }
    check("dense matrix-matrix product" + t, cd / cm, tol * 10);

    // Sparse: the 2D Poisson matrix of an m x m grid (symmetric positive
    // definite), its product with a vector, and three solvers.
    size_t m = size_t(std::sqrt(double(n))) + 3, N = m * m;
    std::vector<std::map<unsigned int, T>> hs(N);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < m; j++) {
            size_t r = i * m + j;
            hs[r][r] = T(4);
            if (i > 0) hs[r][r - m] = T(-1);
            if (i + 1 < m) hs[r][r + m] = T(-1);
            if (j > 0) hs[r][r - 1] = T(-1);
            if (j + 1 < m) hs[r][r + 1] = T(-1);
        }
    viennacl::compressed_matrix<T> s(N, N);
    viennacl::copy(hs, s);
    std::vector<T> hv(N), hr(N);
    for (size_t i = 0; i < N; i++) hv[i] = T(std::sin(0.2 * i));
    viennacl::vector<T> v(N), sv(N);
    viennacl::copy(hv, v);
    sv = viennacl::linalg::prod(s, v);
    viennacl::copy(sv, hr);
    std::vector<double> wsv(N, 0.0);
    for (size_t r = 0; r < N; r++)
        for (auto &e : hs[r]) wsv[r] += double(e.second) * hv[e.first];
    check("sparse matrix-vector product" + t, rel(hr, wsv), tol);
    // Solve s u = sv: u must come back as v.
    std::vector<double> wv(hv.begin(), hv.end());
    double solve_tol = sizeof(T) == 4 ? 1e-3 : 1e-8;
    viennacl::vector<T> u = viennacl::linalg::solve(s, sv, viennacl::linalg::cg_tag(sizeof(T) == 4 ? 1e-6 : 1e-12, 2000));
    std::vector<T> hu(N);
    viennacl::copy(u, hu);
    check("conjugate gradients" + t, rel(hu, wv), solve_tol);
    u = viennacl::linalg::solve(s, sv, viennacl::linalg::bicgstab_tag(sizeof(T) == 4 ? 1e-6 : 1e-12, 2000));
    viennacl::copy(u, hu);
    check("BiCGStab" + t, rel(hu, wv), solve_tol);
    u = viennacl::linalg::solve(s, sv, viennacl::linalg::gmres_tag(sizeof(T) == 4 ? 1e-6 : 1e-12, 2000, 30));
    viennacl::copy(u, hu);
    check("GMRES" + t, rel(hu, wv), solve_tol);
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? size_t(std::atoi(argv[1])) : 300;
    viennacl::ocl::set_context_device_type(0, CL_DEVICE_TYPE_ALL);
    std::printf("device: %s\n", viennacl::ocl::current_device().name().c_str());
    run<float>("float", n, 1e-5);
    if (viennacl::ocl::current_device().double_support())
        run<double>("double", n, 1e-12);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
