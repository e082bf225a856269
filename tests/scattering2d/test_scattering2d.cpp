#include "common/backends.hpp"
