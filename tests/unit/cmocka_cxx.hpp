// SPDX-License-Identifier: GPL-2.0-only
// CMocka from C++: cmocka.h needs these C headers first, and its fail()
// macro must come after every standard header that declares ios::fail().
#pragma once
// clang-format off
#include <chrono>
#include <ios>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
extern "C" {
#include <cmocka.h>
}
// clang-format on
