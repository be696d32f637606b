// Moved to the public include/aotrt/error.h (the C++ API throws aotrt::Error).
#pragma once
#include "aotrt/error.h"
