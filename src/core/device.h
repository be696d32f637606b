// Moved to the public include/aotrt/device.h (the C++ API names devices).
#pragma once
#include "aotrt/device.h"
