// The benchmark runner: Google Benchmark plus a reporter that prints every
// speed goal as a ratio against a baseline measured in the same process
// (machines are shared and noisy; ratios are what the targets are about).
// With --benchmark_repetitions, medians are used.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct Goal {
  const char* subject;   // benchmark run name
  const char* baseline;  // benchmark run name
  const char* what;
  double target;  // <= target when `at_most`, >= otherwise; 0: informative
  bool at_most;
};

// subject / baseline
const Goal kGoals[] = {
    {"BM_Clone1080p", "BM_Memcpy1080p", "clone(1080p RGB) / memcpy(same bytes)", 1.2, true},
    {"BM_MakeWritableShared", "BM_Memcpy1080p", "copy-on-write make_writable / memcpy", 1.2, true},
    {"BM_Nv12ToRgb_Neat/1/real_time", "BM_Nv12ToRgb_OpenCV/1/real_time",
     "NV12->RGB 1080p: convert_color / cv::cvtColor, 1 thread", 1.0 / 1.5, true},
    {"BM_Nv12ToRgb_Neat/2/real_time", "BM_Nv12ToRgb_OpenCV/2/real_time",
     "NV12->RGB 1080p: convert_color / cv::cvtColor, 2 threads", 1.0 / 1.5, true},
    {"BM_Preprocess_OpenCVChain/1/real_time", "BM_Preprocess_NeatFused/1/real_time",
     "preprocess speed-up over the old unfused chain, 1 thread", 0, false},
    {"BM_Preprocess_OpenCVChain/2/real_time", "BM_Preprocess_NeatFused/2/real_time",
     "preprocess speed-up over the old unfused chain, 2 threads", 0, false},
    {"BM_JsonlRecordEvent", "BM_TensorCopyBaseline", "JSON Lines record / tensor value copy", 0,
     true},
    {"BM_WrapGstSample", "BM_TensorCopyBaseline", "wrap a 1080p GstSample / tensor value copy", 0,
     true},
    {"BM_AllocMapMemfd", "BM_AllocMapHeap", "1080p NV12 allocate+map: memfd / pooled heap", 0,
     true},
    {"BM_AllocMapMemfdPooled", "BM_AllocMapHeap",
     "1080p NV12 allocate+map: pooled memfd / pooled heap", 0, true},
    {"BM_Pipeline_HandOpenCV/iterations:3/real_time", "BM_Pipeline_Graph/iterations:3/real_time",
     "pipeline fps: graph / hand-written OpenCV, same frames (unpaired)", 0, false},
    {"BM_Pipeline_HandNeat/iterations:3/real_time", "BM_Pipeline_Graph/iterations:3/real_time",
     "pipeline fps: graph / hand-written loop of the same kernel", 0, false},
    {"BM_Pipeline_GstStock/iterations:3/real_time", "BM_Pipeline_GstGraph/iterations:3/real_time",
     "pipeline fps: graph / stock GStreamer (unpaired)", 0, false},
};

const char* kViews[] = {"BM_ViewSlice",    "BM_ViewTranspose", "BM_ViewReshape",
                        "BM_ViewCropRgb",  "BM_ViewCropNv12",  "BM_ViewPlane",
                        "BM_MapUnmapRead", "BM_MapUnmapWrite", "BM_MakeWritableUnique"};

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const std::string name = r.run_name.str();
      // Counters of single runs, or the median of repetitions (not mean/stddev/cv).
      const bool representative = r.run_type == Run::RT_Iteration || r.aggregate_name == "median";
      if (auto pb = r.counters.find("peak_buffers"); representative && pb != r.counters.end()) {
        peak_buffers_[r.run_name.function_name] = pb->second.value;
      }
      if (auto a = r.counters.find("allocs/frame"); representative && a != r.counters.end()) {
        allocs_per_frame_[r.run_name.function_name] = a->second.value;
      }
      if (auto a = r.counters.find("graph_own_allocs/frame");
          representative && a != r.counters.end()) {
        // The engine's own share: OpenCV DNN's forward(), or libtorch's run.
        const bool torch = r.counters.count("model_run_allocs") != 0;
        own_allocs_[r.run_name.function_name] = {
            a->second.value,
            r.counters.at(torch ? "model_run_allocs" : "opencv_forward_allocs").value};
        engine_[r.run_name.function_name] =
            torch ? "libtorch's forward (Model::run)" : "OpenCV DNN's forward()";
      }
      if (auto c = r.counters.find("copied_B/frame");
          representative && c != r.counters.end() && r.counters.count("plan_B/frame")) {
        copied_vs_plan_[r.run_name.function_name] = {c->second.value,
                                                     r.counters.at("plan_B/frame").value};
      }
      if (auto v = r.counters.find("vs_best"); representative && v != r.counters.end()) {
        recipes_[name] = {v->second.value, r.counters.at("vs_floor").value};
      }
      if (auto e = r.counters.find("events_per_s"); representative && e != r.counters.end()) {
        audit_[r.run_name.function_name] = {
            e->second.value, r.counters.at("neat_audit_peak_rss_MB").value,
            r.counters.at("speedup_vs_nlohmann").value, r.counters.at("time_vs_floor").value};
      }
      auto ratio = r.counters.find("ratio");
      if (ratio != r.counters.end() &&
          (r.run_type == Run::RT_Iteration ? !paired_median_.count(name)
                                           : r.aggregate_name == "median")) {
        paired_[name] = ratio->second.value;
        if (r.run_type == Run::RT_Aggregate) paired_median_[name] = true;
      }
      const double ns =
          r.GetAdjustedRealTime() * 1e9 / benchmark::GetTimeUnitMultiplier(r.time_unit);
      if (r.run_type == Run::RT_Iteration && !median_.count(name)) {
        ns_[name] = ns;
      } else if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        ns_[name] = ns;
        median_[name] = true;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nRatios against baselines measured in this run:\n");
    for (const Goal& g : kGoals)
      ratio(g.subject, g.baseline, g.what, g.target, g.at_most);
    for (const auto& [name, b] : peak_buffers_) {
      std::printf("  %-58s %7.1f buffers of 4 MB at the peak\n",
                  (name + ": 10 in-place ops, 1000x1000 f32").c_str(), b);
    }
    for (const auto& [name, a] : allocs_per_frame_) {
      if (own_allocs_.count(name)) {
        const auto [own, engine] = own_allocs_.at(name);
        std::printf("  %-58s %7.3f (of which %s %.1f; the graph's own %.1f)\n",
                    (name + ": heap allocations per frame").c_str(), a, engine_.at(name).c_str(),
                    engine, own);
      } else {
        std::printf("  %-58s %7.3f (target 0: %s)\n",
                    (name + ": heap allocations per frame, steady state").c_str(), a,
                    a == 0 ? "met" : "NOT met");
      }
    }
    for (const auto& [name, cp] : copied_vs_plan_) {
      std::printf("  %-58s %.0f B copied per frame, plan %.0f B (%s)\n", name.c_str(), cp.first,
                  cp.second, cp.first == cp.second ? "equal: met" : "NOT equal");
    }
    // Paired runs (the two sides alternate call by call): the most robust figures.
    for (const auto& [name, r] : paired_) {
      // Time ratios ours / baseline; the pipeline goals are frame-rate ratios
      // (graph >= 0.95x hand-written OpenCV, >= 3x stock GStreamer).
      double target = 1.0;
      if (name.find("Preprocess") != std::string::npos) target = 0.5;
      if (name.find("ToRgb") != std::string::npos) target = 1.0 / 1.5;
      if (name.find("Nv12ToRgbLibyuv") != std::string::npos) target = 2.0;  // informative
      if (name.find("PreprocessOtherShapes") != std::string::npos) target = 1.0;
      if (name.find("PipelineVsOpenCV") != std::string::npos) target = 1.0 / 1.5;
      if (name.find("PipelineVsLibyuv") != std::string::npos) target = 1.0;
      if (name.find("PipelineVsGstStock") != std::string::npos) target = 1.0 / 3.0;
      if (name.find("DetectionGraphVsOpenCV") != std::string::npos) target = 1.0 / 1.3;
      if (name.find("Yolov8nTorchVsOpenCvGraph") != std::string::npos) target = 1.0 / 2.0;
      if (name.find("Yolov8nGraphVsLibtorchLoop") != std::string::npos) target = 1.0;
      std::printf("  %-58s %7.3fx time, %.2fx fps (paired; target <= %.3fx: %s)\n",
                  (name + " ours / baseline").c_str(), r, 1.0 / r, target,
                  r <= target ? "met" : "NOT met");
    }
    // Every recipe in one loop (preprocess_bench.cpp): ours / the fastest
    // recipe, and ours / reading the frame + writing the tensor once.
    for (const auto& [name, v] : recipes_) {
      const bool area = name.find("Area") != std::string::npos;
      const bool two = name.find("/2") != std::string::npos;
      const double best = area ? 0.5 : (two ? 1.0 / 1.7 : 0.5);
      std::printf("  %-58s %7.3fx time of the fastest recipe (target <= %.3fx: %s)\n",
                  (name + " ours").c_str(), v.first, best, v.first <= best ? "met" : "NOT met");
      const double floor = 2.5;
      std::printf("  %-58s %7.3fx time of the floor%s\n", (name + " ours").c_str(), v.second,
                  area || two ? ""
                              : (v.second <= floor ? " (target <= 2.5x: met)"
                                                   : " (target <= 2.5x: NOT met)"));
    }
    for (const char* v : kViews) {
      ratio(v, "BM_TensorCopyBaseline", std::string(v + 3) + " / tensor value copy", 0, true);
    }
    for (const auto& [name, c] : audit_) {
      const auto& [rate, rss, speedup, floor] = c;
      std::printf(
          "  %-58s %9.0f events/s (target >= 300000: %s), %.1fx nlohmann::json, %.2fx "
          "the read-only floor's time\n",
          (name + ": 1,000,000 events").c_str(), rate, rate >= 300000 ? "met" : "NOT met", speedup,
          floor);
      std::printf("  %-58s %9.1f MB (target <= 64: %s)\n", "neat audit of them: peak RSS", rss,
                  rss > 0 && rss <= 64 ? "met" : "NOT met");
    }
    if (ns_.count("BM_JsonlRecordEvent")) {
      const double j = ns_["BM_JsonlRecordEvent"];
      std::printf("  %-58s %7.1f ns (target <= 200 ns: %s)\n",
                  "recording one event into the JSON Lines sink", j, j <= 200 ? "met" : "NOT met");
    }
    if (ns_.count("BM_GateNoConversion")) {
      const double g = ns_["BM_GateNoConversion"];
      std::printf("  %-58s %7.2f ns (target <= 2 ns: %s)\n", "the check when nothing converts", g,
                  g <= 2 ? "met" : "NOT met");
    }
    if (ns_.count("BM_WrapGstSample")) {
      const double w = ns_["BM_WrapGstSample"];
      std::printf("  %-58s %7.1f ns (target <= 1000 ns: %s)\n", "wrapping a 1080p NV12 GstSample",
                  w, w <= 1000 ? "met" : "NOT met");
    }
    std::printf("Absolute figures (ns; noisy on shared machines):\n");
    for (const auto& [name, ns] : ns_)
      std::printf("  %-46s %14.2f ns\n", name.c_str(), ns);
  }

 private:
  void ratio(const std::string& a, const std::string& b, const std::string& what, double target,
             bool at_most) {
    if (!ns_.count(a) || !ns_.count(b)) return;
    const double r = ns_[a] / ns_[b];
    if (target > 0) {
      const bool met = at_most ? r <= target : r >= target;
      std::printf("  %-58s %7.3fx (target %s %.2fx: %s)\n", what.c_str(), r,
                  at_most ? "<=" : ">=", target, met ? "met" : "NOT met");
    } else {
      std::printf("  %-58s %7.3fx\n", what.c_str(), r);
    }
  }
  std::map<std::string, double> ns_;
  std::map<std::string, bool> median_;
  std::map<std::string, double> paired_;
  std::map<std::string, double> allocs_per_frame_;
  std::map<std::string, std::pair<double, double>> own_allocs_;
  std::map<std::string, std::string> engine_;
  std::map<std::string, std::pair<double, double>> copied_vs_plan_;
  std::map<std::string, double> peak_buffers_;
  std::map<std::string, std::tuple<double, double, double, double>> audit_;
  std::map<std::string, bool> paired_median_;
  std::map<std::string, std::pair<double, double>> recipes_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
