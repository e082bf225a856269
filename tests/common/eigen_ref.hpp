// Eigen reference decompositions for the tests, compiled once (eigen_ref.cpp)
// instead of in every test source and its nvcc twin: instantiating
// HouseholderQR and JacobiSVD took ~20 s of each batched test's compile.
#pragma once

#include <Eigen/Core>

namespace emgpu_test::ref {

/// Q of the Householder QR of g (unitary when g is square and of full rank:
/// a Haar-like random unitary for Gaussian g).
Eigen::MatrixXd householder_q(const Eigen::MatrixXd& g);
Eigen::MatrixXcd householder_q(const Eigen::MatrixXcd& g);

/// Singular values (descending) by Eigen's two-sided JacobiSVD.
Eigen::VectorXd singular_values(const Eigen::MatrixXd& a);
Eigen::VectorXd singular_values(const Eigen::MatrixXcd& a);

/// Eigen's PartialPivLU of a square matrix: its reciprocal condition
/// estimate and solves.
class partial_piv_lu {
 public:
  explicit partial_piv_lu(const Eigen::MatrixXcd& a);
  ~partial_piv_lu();
  partial_piv_lu(const partial_piv_lu&) = delete;
  partial_piv_lu& operator=(const partial_piv_lu&) = delete;
  double rcond() const;
  Eigen::MatrixXcd solve(const Eigen::MatrixXcd& b) const;

 private:
  struct impl;
  impl* p_;
};

}  // namespace emgpu_test::ref
