// The FE-IIEE pair products as FP64 tensor-core (DMMA m8n8k4) fragments,
// written once for the CUDA kernel (cuda_tensor.hpp) and a host emulation of
// one warp in the tests, so that the index algebra is checked without a GPU.
//
// Per source point s, the accumulators of observer o and RHS r are
//   Out[(o, c)][(r, re|im)] += sum_K A[(o, c)][K] B[K][(r, re|im)],
// c = 0..5 the components of (E, C) (curl E = j k C), K = (c', t) over the 6
// complex current components c' (Jt then Mt) and t = 0 (Re G) / 1 (Im G):
//   A[(o,c)][(c',0)] = Re G_cc'(o,s),   A[(o,c)][(c',1)] = Im G_cc'(o,s),
//   B[(c',0)][(r,re)] = Re X,  B[(c',1)][(r,re)] = -Im X,
//   B[(c',0)][(r,im)] = Im X,  B[(c',1)][(r,im)] =  Re X,
// so that (r, re) gets Re G Re X - Im G Im X and (r, im) Re G Im X + Im G Re X.
// G (radiation_kernel.hpp, design/physics-conventions.md (shared)) is, with
// P = p I + q u u^T and U the matrix of v -> v x u:
//   E = P Jt + g1 U Mt,   C = g1 U Jt - P Mt.
// One mma: an m-tile is 8 observers with one component c, a k-step is one
// source component index kk with K = (kk + 3 kind, t) on the 4 lanes of a
// group, an n-tile is 4 RHS (re and im) of the chunk.
// PTX fragment layout of mma.m8n8k4.row.col.f64 (lane = 4 g + q):
//   A: lane holds A[g][q];  B: lane holds B[q][g];  C: lane holds C[g][2 q + i].
// The sm_90 shapes the CUDA kernel may use instead are stacks of it: m16n8k4
// adds rows g + 8 (here: the C component of the same observers), m16n8k8 also
// columns q + 4 of A / rows q + 4 of B (here: a second source point); the
// per-lane values are the same, so this algebra covers them.
#pragma once

#include "../radiation_kernel.hpp"

namespace emgpu::fe_iiee::detail::tc {

/// The role of one lane in every fragment.
struct lane_role {
  int g;     ///< observer row of A and C within the 8; column of B (RHS 4 nt + g / 2, g & 1 = im)
  int q;     ///< lane & 3: K column of A and row of B; RHS 4 nt + q of the C columns
  int kind;  ///< q >> 1: the K column multiplies Jt (0) or Mt (1)
  int t;     ///< q & 1: the K column carries Re G (0) or Im G (1)
  int b_off;  ///< offset of the lane's B value in a source's staged currents [rhs][12]
  bool b_neg; ///< the lane's B value is -Im X

  EMGPU_HD explicit lane_role(int lane)
      : g(lane >> 2), q(lane & 3), kind((lane & 3) >> 1), t(lane & 1),
        b_off((g >> 1) * 12 + 6 * kind + (t ^ (g & 1))), b_neg(t == 1 && (g & 1) == 0) {}

  /// Offset of B for k-step kk and n-tile nt in [rhs][12] currents (12 Real per RHS).
  EMGPU_HD int b_index(int kk, int nt) const { return nt * 48 + 2 * kk + b_off; }
  /// RHS (within the chunk) and accumulator slot (of 12) of C element i of m-tile c, n-tile nt.
  EMGPU_HD int c_rhs(int nt) const { return 4 * nt + q; }
  EMGPU_HD static int c_slot(int c, int i) { return 2 * c + i; }
};

/// v or -v (bit-identical to unary minus). On the device a flip of the sign
/// bit in the integer units: a negation or a multiplication by -1 would take
/// a slot of the FP64 pipe, which the tensor-core products also use.
template <class Real>
EMGPU_HD inline Real negate_if(Real v, bool neg) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(Real) == 8)
    return __hiloint2double(__double2hiint(v) ^ (neg ? int(0x80000000u) : 0), __double2loint(v));
  else
    return __int_as_float(__float_as_int(v) ^ (neg ? int(0x80000000u) : 0));
#else
  return neg ? -v : v;
#endif
}

/// @brief The lane's A values for one pair: a[c][kk] = Re or Im (t) of
///        G_{c, kk + 3 kind} from the pair's coupling.
template <class Real>
EMGPU_HD inline void a_values(const typename radiation_kernel<Real>::coupling& cp, int kind, int t,
                              Real (&a)[6][3]) {
  // P enters E from Jt with +1 and C from Mt with -1: the sign follows the kind.
  const bool neg = kind != 0;
  const Real qv = negate_if(t ? cp.qi : cp.qr, neg), pv = negate_if(t ? cp.pi : cp.pr, neg);
  const Real gv = t ? cp.gi : cp.gr;
  const Real u[3] = {cp.ux, cp.uy, cp.uz};
  const Real qu[3] = {qv * u[0], qv * u[1], qv * u[2]};
  const Real gu[3] = {gv * u[0], gv * u[1], gv * u[2]};
  Real P[3][3], X[3][3];
  P[0][0] = qu[0] * u[0] + pv;
  P[1][1] = qu[1] * u[1] + pv;
  P[2][2] = qu[2] * u[2] + pv;
  P[0][1] = P[1][0] = qu[0] * u[1];
  P[0][2] = P[2][0] = qu[0] * u[2];
  P[1][2] = P[2][1] = qu[1] * u[2];
  // (v x u)_i = eps_ijk v_j u_k: coefficient of v_j in component i.
  X[0][0] = X[1][1] = X[2][2] = Real(0);
  X[0][1] = gu[2];
  X[0][2] = negate_if(gu[1], true);
  X[1][0] = negate_if(gu[2], true);
  X[1][2] = gu[0];
  X[2][0] = gu[1];
  X[2][1] = negate_if(gu[0], true);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      a[i][j] = kind == 0 ? P[i][j] : X[i][j];      // E from Jt: P; E from Mt: g1 U
      a[3 + i][j] = kind == 0 ? X[i][j] : P[i][j];  // C from Jt: g1 U; C from Mt: -P
    }
}

/// @brief The lane's B value for k-step kk, n-tile nt from a source's staged
///        folded currents cur[rhs][12] (rhs within the chunk).
template <class Real>
EMGPU_HD inline Real b_value(const lane_role& L, const Real* cur, int kk, int nt) {
  return negate_if(cur[L.b_index(kk, nt)], L.b_neg);
}

}  // namespace emgpu::fe_iiee::detail::tc
