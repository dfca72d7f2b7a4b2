// CMocka from C++: the header needs these C headers first.
#pragma once
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
extern "C" {
#include <cmocka.h>
}
