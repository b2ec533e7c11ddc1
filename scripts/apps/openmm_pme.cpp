// OpenMM on its OpenCL platform: a charged Lennard-Jones crystal (sites
// 0.4 nm apart, charges of alternating sign) with PME electrostatics. The
// forces at the start are compared with OpenMM's CPU platform, then
// molecular dynamics runs and its speed is printed (ns/day). Exits 1 when
// the 99th percentile of the force differences passes 1e-3 of the
// root-mean-square force, or when the total energy drifts by more than
// 1e-4 of the potential energy.
//
//   openmm_pme [cells per edge (24)] [steps (500)] [precision: single, mixed, double]
#include <OpenMM.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
using namespace OpenMM;

int main(int argc, char **argv) {
    int cells = argc > 1 ? atoi(argv[1]) : 24;
    int steps = argc > 2 ? atoi(argv[2]) : 500;
    const char *precision = argc > 3 ? argv[3] : "single";
    Platform::loadPluginsFromDirectory(Platform::getDefaultPluginsDirectory());
    const double a = 0.40;  // nm between sites
    int n = cells * cells * cells;
    System system;
    double edge = cells * a;
    system.setDefaultPeriodicBoxVectors(Vec3(edge, 0, 0), Vec3(0, edge, 0), Vec3(0, 0, edge));
    NonbondedForce *nb = new NonbondedForce();
    nb->setNonbondedMethod(NonbondedForce::PME);
    nb->setCutoffDistance(1.0);
    std::vector<Vec3> pos;
    for (int i = 0; i < cells; i++)
        for (int j = 0; j < cells; j++)
            for (int k = 0; k < cells; k++) {
                system.addParticle(39.9);
                double q = ((i + j + k) % 2) ? 0.3 : -0.3;
                nb->addParticle(q, 0.34, 0.998);
                double jit = 0.01 * ((i * 7 + j * 13 + k * 29) % 11 - 5) / 5.0;
                pos.push_back(Vec3(i * a + jit, j * a - jit, k * a + 0.5 * jit));
            }
    system.addForce(nb);
    auto run = [&](const char *platform, std::vector<Vec3> *out) -> Context * {
        VerletIntegrator *integ = new VerletIntegrator(0.001);
        std::map<std::string, std::string> props;
        if (std::string(platform) == "OpenCL") props["Precision"] = precision;
        Context *c = new Context(system, *integ, Platform::getPlatformByName(platform), props);
        c->setPositions(pos);
        State s = c->getState(State::Energy | State::Forces);
        if (out) *out = s.getForces();
        printf("%-8s potential energy at the start: %.3f kJ/mol\n", platform, s.getPotentialEnergy());
        return c;
    };
    std::vector<Vec3> fcpu, fcl;
    delete run("CPU", &fcpu);
    Context *c = run("OpenCL", &fcl);
    // Differences relative to the root-mean-square force (a crystal has
    // sites with almost no net force).
    double rms = 0;
    for (int i = 0; i < n; i++) rms += fcpu[i].dot(fcpu[i]);
    rms = std::sqrt(rms / n);
    std::vector<double> err;
    for (int i = 0; i < n; i++) {
        Vec3 d = fcl[i] - fcpu[i];
        err.push_back(std::sqrt(d.dot(d)) / rms);
    }
    std::sort(err.begin(), err.end());
    printf("forces, OpenCL against CPU: median difference %.2e, 99th percentile %.2e, of the RMS force\n", err[n / 2], err[n * 99 / 100]);
    printf("device: %s\n", c->getPlatform().getPropertyValue(*c, "DeviceName").c_str());
    c->getIntegrator().step(20);
    State s0 = c->getState(State::Energy);
    double e0 = s0.getPotentialEnergy() + s0.getKineticEnergy();
    auto t0 = std::chrono::steady_clock::now();
    c->getIntegrator().step(steps);
    State s = c->getState(State::Energy);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double ns = steps * 0.001 * 1e-3;
    printf("%d particles, %d steps in %.3f s: %.1f ns/day\n", n, steps, secs, ns / secs * 86400);
    double e1 = s.getPotentialEnergy() + s.getKineticEnergy();
    double drift = std::fabs(e1 - e0) / std::fabs(s.getPotentialEnergy());
    printf("total energy drift over the run: %.2e of the potential energy\n", drift);
    delete c;
    return err[n * 99 / 100] < 1e-3 && drift < 1e-4 ? 0 : 1;
}
