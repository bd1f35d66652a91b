// A minimal Kokkos Tools library for the tests: records region pushes and pops and the labels of
// parallel_for/reduce/scan launches, in order. Kokkos loads it (KOKKOS_TOOLS_LIBS, or
// KOKKOS_PROFILE_LIBRARY on Kokkos 3.x) with dlopen; the test program links the same library,
// so both see one instance and the test reads the events through fc_recorder_events().
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace {
std::mutex g_mutex;
std::vector<std::string> g_events;
std::uint64_t g_next_id = 0;
bool g_loaded = false;

void record(std::string e) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_events.push_back(std::move(e));
}
}  // namespace

extern "C" {

// The Kokkos Tools interface (Kokkos_Profiling_C_Interface.h); the device-info argument is unused.
void kokkosp_init_library(int, std::uint64_t, std::uint32_t, void*) { g_loaded = true; }
void kokkosp_finalize_library() {}
void kokkosp_push_profile_region(const char* name) { record(std::string("push ") + name); }
void kokkosp_pop_profile_region() { record("pop"); }
void kokkosp_begin_parallel_for(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = g_next_id++;
  record(std::string("for ") + name);
}
void kokkosp_end_parallel_for(std::uint64_t) {}
void kokkosp_begin_parallel_reduce(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = g_next_id++;
  record(std::string("reduce ") + name);
}
void kokkosp_end_parallel_reduce(std::uint64_t) {}
void kokkosp_begin_parallel_scan(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = g_next_id++;
  record(std::string("scan ") + name);
}
void kokkosp_end_parallel_scan(std::uint64_t) {}

// For the test program.
int fc_recorder_loaded() { return g_loaded ? 1 : 0; }
std::size_t fc_recorder_count() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_events.size();
}
const char* fc_recorder_event(std::size_t i) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return i < g_events.size() ? g_events[i].c_str() : nullptr;
}
void fc_recorder_clear() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_events.clear();
}

}  // extern "C"
