// Idle OpenMP threads sleep instead of spinning, so nodes that share cores do not starve each
// other (libgomp's default spins for up to ~300k iterations at every barrier).
//
// libgomp reads OMP_WAIT_POLICY once, in a constructor that runs when the library loads: before
// any constructor of ours and before main. An executable's .preinit_array runs earlier still
// (before every shared library's initialisers), so the default is set there. A user's own
// OMP_WAIT_POLICY or GOMP_SPINCOUNT is kept.
#include <cstdlib>

static void passiveOpenMpWaits(int, char **, char **) {
  if (!std::getenv("GOMP_SPINCOUNT"))
    setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
}

__attribute__((section(".preinit_array"),
               used)) static void (*const runEarly)(int, char **, char **) = passiveOpenMpWaits;
