/// @file
/// @brief What every backend must provide, expressed once: memory-space tags,
///        backend_traits and the emgpu::backend_tag concept.
#pragma once

#include <concepts>
#include <type_traits>

#include "../core/config.hpp"

namespace emgpu {

/// @brief Memory that host code can dereference (serial and OpenMP backends).
struct host_space {};
/// @brief GPU global memory (CUDA backend).
struct device_space {};

/// @brief Per-backend facts; specialised by each backend header.
/// Members: `memory_space`, `template <class T> using vector = ...` (owning
/// buffer in that space), `static constexpr const char* name`,
/// `static constexpr bool is_device`.
/// @tparam Backend a backend tag such as emgpu::backend::serial.
template <class Backend>
struct backend_traits;

/// @brief Owning buffer type of Backend for element type T.
template <class Backend, class T>
using vector_t = typename backend_traits<std::remove_cvref_t<Backend>>::template vector<T>;

namespace detail {
struct noop_index_fn {
  EMGPU_HD void operator()(index_t) const {}
  EMGPU_HD void operator()(index_t, index_t) const {}
};
}  // namespace detail

/// @brief A backend tag: it names a memory space and an owning vector, and the
///        primitives for_each_index (1D and 2D), reduce and synchronize accept it.
template <class B>
concept backend_tag = requires(const B& b) {
  typename backend_traits<B>::memory_space;
  typename vector_t<B, double>;
  requires std::convertible_to<decltype(backend_traits<B>::name), const char*>;
  requires std::convertible_to<decltype(backend_traits<B>::is_device), bool>;
  for_each_index(b, index_t{1}, detail::noop_index_fn{});
  for_each_index(b, index_t{1}, index_t{1}, detail::noop_index_fn{});
  synchronize(b);
};

/// @brief True when the backend's memory is GPU memory.
template <class B>
inline constexpr bool is_device_backend_v = backend_traits<std::remove_cvref_t<B>>::is_device;

}  // namespace emgpu
