#!/usr/bin/env python3
"""Prints the SCN scattering matrix (2 * S, integer entries) built from the
scatter formulas of design/physics-conventions.md (shared), for the literal
table in tests/tlm/test_tlm_node.cpp, and checks S = S^T, S S = I."""
from fractions import Fraction as F

def scatter(v):
    V = {p + 1: v[p] for p in range(12)}
    h = F(1, 2)
    vx = h * (V[1] + V[2] + V[9] + V[12]); vy = h * (V[3] + V[4] + V[8] + V[11])
    vz = h * (V[5] + V[6] + V[7] + V[10])
    ix = h * (V[4] - V[5] + V[7] - V[8]); iy = h * (-V[2] + V[6] + V[9] - V[10])
    iz = h * (V[1] - V[3] + V[11] - V[12])
    r = {1: vx - iz - V[12], 12: vx + iz - V[1], 2: vx + iy - V[9], 9: vx - iy - V[2],
         3: vy + iz - V[11], 11: vy - iz - V[3], 4: vy - ix - V[8], 8: vy + ix - V[4],
         5: vz + ix - V[7], 7: vz - ix - V[5], 6: vz - iy - V[10], 10: vz + iy - V[6]}
    return [r[p + 1] for p in range(12)]

cols = [scatter([F(int(i == j)) for i in range(12)]) for j in range(12)]
S = [[cols[j][i] for j in range(12)] for i in range(12)]
assert all(S[i][j] == S[j][i] for i in range(12) for j in range(12))
SS = [[sum(S[i][k] * S[k][j] for k in range(12)) for j in range(12)] for i in range(12)]
assert all(SS[i][j] == (1 if i == j else 0) for i in range(12) for j in range(12))
for row in S:
    print("{" + ", ".join(f"{int(2 * x):2d}" for x in row) + "},")
