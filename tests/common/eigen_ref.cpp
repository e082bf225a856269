#include "eigen_ref.hpp"

#include <Eigen/Dense>

namespace emgpu_test::ref {

Eigen::MatrixXd householder_q(const Eigen::MatrixXd& g) { return Eigen::HouseholderQR<Eigen::MatrixXd>(g).householderQ(); }
Eigen::MatrixXcd householder_q(const Eigen::MatrixXcd& g) {
  return Eigen::HouseholderQR<Eigen::MatrixXcd>(g).householderQ();
}

Eigen::VectorXd singular_values(const Eigen::MatrixXd& a) { return Eigen::JacobiSVD<Eigen::MatrixXd>(a).singularValues(); }
Eigen::VectorXd singular_values(const Eigen::MatrixXcd& a) {
  return Eigen::JacobiSVD<Eigen::MatrixXcd>(a).singularValues();
}

struct partial_piv_lu::impl {
  Eigen::PartialPivLU<Eigen::MatrixXcd> lu;
};
partial_piv_lu::partial_piv_lu(const Eigen::MatrixXcd& a) : p_(new impl{Eigen::PartialPivLU<Eigen::MatrixXcd>(a)}) {}
partial_piv_lu::~partial_piv_lu() { delete p_; }
double partial_piv_lu::rcond() const { return p_->lu.rcond(); }
Eigen::MatrixXcd partial_piv_lu::solve(const Eigen::MatrixXcd& b) const { return p_->lu.solve(b); }

}  // namespace emgpu_test::ref
