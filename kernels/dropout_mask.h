// The dropout mask's generator, shared by the CPU and CUDA kernels so both draw the same masks:
// SplitMix64 as a counter-based generator, one draw per (seed, step, trainer, element), so no
// state is kept between steps and any element's draw can be made alone.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace oar::kernels {

OAR_HOST_DEVICE uint64_t splitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// The stream of one dropout op at one step on one trainer.
OAR_HOST_DEVICE uint64_t dropoutStream(int64_t seed, int64_t step, int64_t trainer) {
  return splitMix64(splitMix64(splitMix64(uint64_t(seed)) ^ uint64_t(step)) ^ uint64_t(trainer));
}

/// Whether element `i` is kept: its uniform draw in [0, 1) (24 bits) is at least `dropProb`.
OAR_HOST_DEVICE bool dropoutKeeps(uint64_t stream, int64_t i, float dropProb) {
  uint64_t bits = splitMix64(stream + uint64_t(i)) >> 40;
  return float(bits) * (1.0f / 16777216.0f) >= dropProb;
}

} // namespace oar::kernels
