/// @file
/// @brief Warp-level FP64 tensor-core product (mma.sync m8n8k4.f64),
///        cp.async copies (equivalent fallbacks before sm_80), bulk copies
///        with their mbarriers (sm_90+) and shared-memory
///        accesses through a register-held address, shared by
///        the CUDA kernels that use them (FE-IIEE radiation, batched LU, the
///        batched SVD's U and V).
///
/// Fragments of m8n8k4.f64 (row-major A, column-major B), lane l = 4g + q:
/// a = A(g, q), b = B(q, g), c = C(g, 2q + i), i = 0, 1.
#pragma once

#if defined(__CUDACC__)

#include <cuda_runtime.h>

namespace emgpu::detail {

/// @brief c += A B for one 8 x 8 x 4 FP64 fragment triple (all 32 lanes).
__device__ __forceinline__ void dmma_m8n8k4(double (&c)[2], double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(c[0]), "+d"(c[1])
      : "d"(a), "d"(b));
#else
  // No DMMA before sm_80: the same product from the same fragments by shuffles.
  const int lane = int(threadIdx.x & 31), g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int kq = 0; kq < 4; ++kq) {
    const double av = __shfl_sync(0xffffffffu, a, 4 * g + kq);
    const double b0 = __shfl_sync(0xffffffffu, b, 4 * (2 * q) + kq);
    const double b1 = __shfl_sync(0xffffffffu, b, 4 * (2 * q + 1) + kq);
    c[0] = fma(av, b0, c[0]);
    c[1] = fma(av, b1, c[1]);
  }
#endif
}

/// @brief Two stacked 8 x 8 x 4 products: lo += A_lo B, hi += A_hi B (a0 =
///        A_lo(g, q), a1 = A_hi(g, q), b = B(q, g)): one mma.m16n8k4.f64 on
///        sm_90, else two m8n8k4.
__device__ __forceinline__ void dmma_m16n8k4(double (&lo)[2], double (&hi)[2], double a0, double a1, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+d"(lo[0]), "+d"(lo[1]), "+d"(hi[0]), "+d"(hi[1])
      : "d"(a0), "d"(a1), "d"(b));
#else
  dmma_m8n8k4(lo, a0, b);
  dmma_m8n8k4(hi, a1, b);
#endif
}

/// @brief Two stacked 8 x 8 x 8 products: lo += A_lo B, hi += A_hi B with
///        k = 8 (a0 = A_lo(g, q), a1 = A_hi(g, q), a2 = A_lo(g, q + 4),
///        a3 = A_hi(g, q + 4); b0 = B(q, g), b1 = B(q + 4, g)): one
///        mma.m16n8k8.f64 on sm_90 (the fewest instructions per product),
///        else four m8n8k4.
__device__ __forceinline__ void dmma_m16n8k8(double (&lo)[2], double (&hi)[2], double a0, double a1, double a2,
                                             double a3, double b0, double b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+d"(lo[0]), "+d"(lo[1]), "+d"(hi[0]), "+d"(hi[1])
      : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(b0), "d"(b1));
#else
  dmma_m8n8k4(lo, a0, b0);
  dmma_m8n8k4(hi, a1, b0);
  dmma_m8n8k4(lo, a2, b1);
  dmma_m8n8k4(hi, a3, b1);
#endif
}

/// @brief 16 bytes global -> shared without a register round trip (sm_80+);
///        fewer than 16 source bytes (0 here) fill the rest with zeros.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes)
               : "memory");
#else
  const double2 v = src_bytes > 0 ? *static_cast<const double2*>(gmem) : double2{0.0, 0.0};
  *static_cast<double2*>(smem) = v;
#endif
}
/// @brief 8 bytes global -> shared (sm_80+), else through a register.
__device__ __forceinline__ void cp_async8(double* smem, const double* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gmem) : "memory");
#else
  *smem = *gmem;
#endif
}
/// @brief 8 bytes global -> shared (sm_80+), or 8 zero bytes when
///        src_bytes is 0 (gmem then not read, but must be a valid address).
/// Why not a predicated cp_async8: nvcc pads every predicated cp.async with
/// three no-op instructions, which made up a fifth of lu_mma_kernel's loads.
__device__ __forceinline__ void cp_async8z(double* smem, const double* gmem, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
#else
  *smem = src_bytes > 0 ? *gmem : 0.0;
#endif
}
/// @brief 32-bit shared-memory address of a __shared__ object, made opaque
///        to the compiler so that it stays in a register.
/// Why: nvcc rebuilds the address of a static __shared__ array from the
/// CTA's window (S2UR, ULEA, a move) at nearly every use inside long
/// unrolled loops; with the address opaque it is computed once, and
/// ld_shared_f64 / st_shared_f64_if below address from it (lu_mma_kernel at
/// n = 32: 4.5 % fewer instructions, 3 % less time; docs/batched-log.md,
/// session 42).
__device__ __forceinline__ unsigned shared_addr(const void* smem) {
  unsigned a = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("" : "+r"(a));
  return a;
}
/// @brief N = 1 or 2 doubles from shared memory at a shared_addr address
///        (aligned to 8 N bytes); volatile with a memory clobber, so ordered
///        against the caller's other memory accesses and barriers.
template <int N>
__device__ __forceinline__ void ld_shared_f64(unsigned a, double (&v)[N]) {
  static_assert(N == 1 || N == 2);
  if constexpr (N == 1) asm volatile("ld.shared.f64 %0, [%1];" : "=d"(v[0]) : "r"(a) : "memory");
  else asm volatile("ld.shared.v2.f64 {%0, %1}, [%2];" : "=d"(v[0]), "=d"(v[1]) : "r"(a) : "memory");
}
/// @brief N = 1 or 2 doubles (or one 32-bit word) to shared memory at a
///        shared_addr address, only where `on` is nonzero, as a predicated
///        store, ordered as ld_shared_f64: a run of them under one condition
///        stays straight-line code (nvcc turns a run of plain stores under an
///        `if` into a branch around them, three more instructions per run).
template <int N>
__device__ __forceinline__ void st_shared_f64_if(unsigned on, unsigned a, const double (&v)[N]) {
  static_assert(N == 1 || N == 2);
  if constexpr (N == 1)
    asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %0, 0;\n @p st.shared.f64 [%1], %2;\n}" ::"r"(on), "r"(a),
                 "d"(v[0])
                 : "memory");
  else
    asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %0, 0;\n @p st.shared.v2.f64 [%1], {%2, %3};\n}" ::"r"(on),
                 "r"(a), "d"(v[0]), "d"(v[1])
                 : "memory");
}
__device__ __forceinline__ void st_shared_u32_if(unsigned on, unsigned a, unsigned v) {
  asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %0, 0;\n @p st.shared.u32 [%1], %2;\n}" ::"r"(on), "r"(a), "r"(v)
               : "memory");
}
/// @brief Whether bulk_copy16 below is a bulk (TMA) copy: sm_90 and later.
/// Why a bulk copy: it writes shared memory without passing through the
/// load/store pipe that every LDS, STS and cp.async of a kernel shares
/// (lu_mma_kernel, docs/batched-log.md, session 44).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define EMGPU_BULK_COPY 1
#else
#define EMGPU_BULK_COPY 0
#endif

/// @brief Initialises the mbarrier at shared address `bar` for one arrival
///        and makes it visible to the bulk-copy unit (sm_90+).
__device__ __forceinline__ void mbar_init1(unsigned bar) {
#if EMGPU_BULK_COPY
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n"
               "fence.mbarrier_init.release.cluster;\n"
               "fence.proxy.async.shared::cta;" ::"r"(bar)
               : "memory");
#endif
}
/// @brief The mbarrier's one arrival, announcing `bytes` of bulk copies.
__device__ __forceinline__ void mbar_expect(unsigned bar, unsigned bytes) {
#if EMGPU_BULK_COPY
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
/// @brief Waits until phase 0 of the mbarrier completes (every announced
///        byte landed); the landed bytes are then visible to the caller.
__device__ __forceinline__ void mbar_wait0(unsigned bar) {
#if EMGPU_BULK_COPY
  asm volatile(
      "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n @!p bra W;\n}" ::"r"(bar)
      : "memory");
#endif
}
/// @brief Invalidates a completed mbarrier (its word may then be reused).
__device__ __forceinline__ void mbar_inval(unsigned bar) {
#if EMGPU_BULK_COPY
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
#endif
}
/// @brief True in exactly one lane of the (converged, full) warp.
/// Why not `lane == 0`: behind elect.sync ptxas knows one lane runs the
/// block, so bulk copies in it are issued once each instead of through its
/// loop over the active lanes' operands.
__device__ __forceinline__ bool elect_one() {
#if EMGPU_BULK_COPY
  unsigned e;
  asm volatile("{\n .reg .pred p;\n elect.sync _|p, 0xffffffff;\n selp.u32 %0, 1, 0, p;\n}" : "=r"(e));
  return e != 0u;
#else
  return (threadIdx.x & 31u) == 0u;
#endif
}
/// @brief `bytes` (a multiple of 16) from global `src` (16-byte aligned) to
///        shared address `dst` (16-byte aligned) as one bulk copy completing
///        on the mbarrier `bar` (sm_90+ only: callers test EMGPU_BULK_COPY).
__device__ __forceinline__ void bulk_copy16(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
#if EMGPU_BULK_COPY
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar)
               : "memory");
#endif
}

/// @brief Closes the calling thread's current group of cp.async copies.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// @brief Waits until at most N of this thread's committed groups are in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace emgpu::detail

#endif  // __CUDACC__
