// Stand-in for the CUDA toolkit's cooperative_groups.h, first on the include path of the CPU-only
// header checks: a public header that includes a CUDA header outside
// `#if defined(__CUDACC__)` fails here even on machines whose compiler would
// find the real one (CUDA headers linked into /usr/local/include).
#error "cooperative_groups.h reached from a CPU-only translation unit: guard the include with #if defined(__CUDACC__)"
