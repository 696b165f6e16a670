// Sanitizer settings compiled into every test program, so they hold however
// the program is started (CTest, by hand, under a debugger):
//  * UBSan halts on the first report (a report fails the test);
//  * ASan returns null for impossible allocations instead of aborting (the
//    resource-exhausted tests rely on it) and checks for leaks;
//  * under ASan, GStreamer loads only the plugins of its core, -base and
//    -good (GST_PLUGIN_LOADING_WHITELIST, with a registry file of its own),
//    in the test program and in the programs it starts (`neat`): with
//    gst-plugins-bad in the registry too (the RTSP server's packages bring
//    it in) GLib passes 2048 quarks and leaves its first quark block (16 KiB)
//    behind on purpose, which LSan reports in every process; the tests need
//    nothing from -bad;
//  * TSan halts on the first report and reads the commented suppressions for
//    uninstrumented GLib / GStreamer (tests/tsan.supp).
// Under TSan, OpenCV's parallel_for_ (on TBB, which is not instrumented) runs
// serially: TSan cannot see TBB's joins and would report the caller's stack
// reuse as races. Kernels then run on the calling thread (parallel_rows
// honours OpenCV's thread setting); their multi-threaded paths run in the
// normal and ASan suites.
#include <cstdlib>
#include <opencv2/core/utility.hpp>

extern "C" {
const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}
const char* __asan_default_options() {
  return "allocator_may_return_null=1:detect_leaks=1";
}
const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:suppressions=" NEAT_TSAN_SUPPRESSIONS;
}
}

namespace {

#if defined(__SANITIZE_ADDRESS__)
const bool kGstPlugins = [] {
  setenv("GST_PLUGIN_LOADING_WHITELIST", NEAT_GST_SANITIZED_PLUGINS, 0);
  setenv("GST_REGISTRY_1_0", NEAT_GST_SANITIZED_REGISTRY, 0);
  return true;
}();
#endif

#if defined(__SANITIZE_THREAD__)
const bool kSerialOpenCv = [] {
  cv::setNumThreads(1);
  return true;
}();
#endif

}  // namespace
