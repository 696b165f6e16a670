// Sanitizer settings compiled into every test program, so they hold however
// the program is started (CTest, by hand, under a debugger):
//  * UBSan halts on the first report (a report fails the test);
//  * ASan returns null for impossible allocations instead of aborting (the
//    resource-exhausted tests rely on it) and checks for leaks, except what a
//    library's ELF constructor allocates while the program loads: GLib's
//    first quark block (16 KiB, g_quark_init) is left behind on purpose when
//    more than 2048 quarks exist, as soon as the GStreamer registry holds
//    gst-plugins-bad (which the RTSP server's packages bring in);
//  * TSan halts on the first report and reads the commented suppressions for
//    uninstrumented GLib / GStreamer (tests/tsan.supp).
// Under TSan, OpenCV's parallel_for_ (on TBB, which is not instrumented) runs
// serially: TSan cannot see TBB's joins and would report the caller's stack
// reuse as races. Kernels then run on the calling thread (parallel_rows
// honours OpenCV's thread setting); their multi-threaded paths run in the
// normal and ASan suites.
#include <opencv2/core/utility.hpp>

extern "C" {
const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}
const char* __asan_default_options() {
  return "allocator_may_return_null=1:detect_leaks=1";
}
const char* __lsan_default_suppressions() {
  return "leak:_dl_init\n";
}
const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:suppressions=" NEAT_TSAN_SUPPRESSIONS;
}
}

namespace {

#if defined(__SANITIZE_THREAD__)
const bool kSerialOpenCv = [] {
  cv::setNumThreads(1);
  return true;
}();
#endif

}  // namespace
