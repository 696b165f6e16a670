// Counts heap allocations made by the whole process (including libneat) by
// interposing the malloc family, so benchmarks can report allocations/op.
#pragma once

#include <cstdint>

namespace neat::bench {
/// Allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc,
/// memalign, operator new through malloc) since the process started.
std::uint64_t allocation_count() noexcept;
}  // namespace neat::bench
