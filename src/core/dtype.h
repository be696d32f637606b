// Moved to the public include/aotrt/dtype.h (the C++ API names dtypes).
#pragma once
#include "aotrt/dtype.h"
