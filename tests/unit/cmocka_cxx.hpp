// CMocka from C++: the header needs these C headers first.
#pragma once
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <csetjmp>
extern "C" {
#include <cmocka.h>
}
