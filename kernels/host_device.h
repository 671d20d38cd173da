// OAR_HOST_DEVICE: a function the CPU and CUDA kernels share, compiled for both by nvcc.
#pragma once

#ifdef __CUDACC__
#define OAR_HOST_DEVICE __host__ __device__ inline
#else
#define OAR_HOST_DEVICE inline
#endif
