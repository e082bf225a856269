/// @file
/// @brief emgpu's exception hierarchy. Every error the library raises derives
///        from emgpu::error, so callers can catch one type.
#pragma once

#include <stdexcept>
#include <string>

#include "config.hpp"

namespace emgpu {

/// @brief Base of all emgpu exceptions.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief Bad argument: mismatched sizes, non-finite input, degenerate geometry,
///        out-of-range option.
class invalid_argument : public error {
 public:
  using error::error;
};

/// @brief A factorisation met an exactly zero (or non-finite) pivot.
/// index() is the zero-based column at which it happened.
class singular_matrix : public error {
 public:
  singular_matrix(const std::string& what, index_t index) : error(what), index_(index) {}
  /// Zero-based column of the failing pivot.
  index_t index() const noexcept { return index_; }

 private:
  index_t index_;
};

/// @brief A CUDA / cuBLAS / cuSOLVER call failed (out-of-memory included).
/// code() is the library's status value; what() names the call.
class device_error : public error {
 public:
  device_error(const std::string& what, int code) : error(what), code_(code) {}
  int code() const noexcept { return code_; }
  /// True when the failure was an out-of-memory condition.
  bool out_of_memory() const noexcept { return oom_; }
  device_error& set_out_of_memory(bool v) noexcept { oom_ = v; return *this; }

 private:
  int code_;
  bool oom_ = false;
};

/// @brief A file could not be read or is malformed; what() gives file and line.
class io_error : public error {
 public:
  using error::error;
};

namespace detail {
/// Throws invalid_argument with the message when cond is false.
inline void require(bool cond, const char* msg) {
  if (!cond) throw invalid_argument(msg);
}
inline void require(bool cond, const std::string& msg) {
  if (!cond) throw invalid_argument(msg);
}
}  // namespace detail

}  // namespace emgpu
