// What a model's .so reads from the environment, answered by aotrt so that
// loading a model never changes the host's environment. See Note [Model
// input checks] in model.cpp: the loader renames the model's import of
// getenv to aotenv (package/elf_patch.h), defined here.
#pragma once

#include "aotrt/shim.h"

extern "C" {
// getenv's contract, for a model loaded with LoadOptions::check_inputs: the
// process's value of `name` when it has one; else "1" for
// AOTI_RUNTIME_CHECK_INPUTS, so that the model's own input checks run; else
// null. The string is not to be modified or freed.
AOTRT_EXPORT char* aotenv(const char* name);
// secure_getenv's contract with the same answer: null where the process runs
// setuid or with other secure-execution mode (glibc's AT_SECURE). A model's
// secure_getenv import becomes this one where the linker merged "getenv" into
// its string (package/elf_patch.h, kGetenvCompanions).
AOTRT_EXPORT char* secure_aotenv(const char* name);
}
