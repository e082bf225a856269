/// @file
/// @brief CUDA LU kernels (placeholder while being written).
#pragma once
