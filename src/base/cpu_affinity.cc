#include "base/cpu_affinity.h"

#include <pthread.h>
#include <sched.h>

namespace tokenmill {

namespace {

bool set_affinity(pthread_t thread, std::span<const int> cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  return pthread_setaffinity_np(thread, sizeof(set), &set) == 0;
}

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

bool pin_thread(std::thread& thread, std::span<const int> cpus) { return set_affinity(thread.native_handle(), cpus); }

bool pin_current_thread(std::span<const int> cpus) { return set_affinity(pthread_self(), cpus); }

}  // namespace tokenmill
