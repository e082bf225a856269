/// @file
/// @brief emgpu::dense::dense_solver: what a dense solver policy provides, so a
///        composer can check its Solver parameter with one readable message.
#pragma once

#include <concepts>

#include "../core/config.hpp"
#include "../core/matrix_view.hpp"

namespace emgpu::dense {

/// @brief A dense solver policy S for backend Backend and element type T.
/// @tparam S the policy (e.g. emgpu::dense::crout_lu), default-constructible
///         options aggregate.
/// @tparam Backend an emgpu backend tag.
/// @tparam T the matrix element type.
/// S must provide `S::factorization<Backend, T>`, constructible from
/// (const Backend&, matrix_view<T> a, const S&) that factors `a` in place
/// (backend memory), with `solve(matrix_view<T> rhs) const` overwriting the
/// n x nrhs rhs by A^-1 rhs and `size() const` returning n.
///
/// Use in a composer:
/// @code
/// static_assert(emgpu::dense::dense_solver<Solver, Backend, T>,
///               "Solver must be a dense solver policy such as emgpu::dense::crout_lu");
/// @endcode
template <class S, class Backend, class T>
concept dense_solver =
    std::default_initializable<S> &&
    requires { typename S::template factorization<Backend, T>; } &&
    std::constructible_from<typename S::template factorization<Backend, T>, const Backend&,
                            matrix_view<T>, const S&> &&
    requires(const typename S::template factorization<Backend, T>& f, matrix_view<T> rhs) {
      f.solve(rhs);
      { f.size() } -> std::convertible_to<index_t>;
    };

}  // namespace emgpu::dense
