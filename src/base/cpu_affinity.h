// Which CPUs threads run on. The server pins its threads when its compute threads cover
// every CPU it may use (docs/serving.md, "Thread placement"): otherwise a woken HTTP
// thread lands on the CPU of the engine thread that woke it and preempts it, while the
// other compute thread spins at the next barrier.
#pragma once

#include <span>
#include <thread>
#include <vector>

namespace tokenmill {

// The CPUs this process may run on (its affinity mask), ascending; empty if unknown.
std::vector<int> allowed_cpus();

// Restricts `thread`, or the calling thread, to `cpus`. False if the OS refused (the
// thread keeps its placement then); true and nothing done for an empty list.
bool pin_thread(std::thread& thread, std::span<const int> cpus);
bool pin_current_thread(std::span<const int> cpus);

}  // namespace tokenmill
