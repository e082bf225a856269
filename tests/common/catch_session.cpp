// Catch2's session (the test runner) compiled once for every test program,
// CPU and CUDA alike: in Catch2 2.x this TU holds the whole implementation,
// the costliest compile of the suite, so the two test mains share it.
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

int emgpu_catch_run(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
