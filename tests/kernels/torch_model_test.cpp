// The libtorch engine of neat::Model: TorchScript files run with nothing
// copied at the boundary, the same results as the OpenCV engine on the same
// model, outputs that stay valid and read-only, and typed errors for files
// and inputs it cannot take. Models: models/make_torch_models.py. Built
// only with libtorch (neat_torch_tests, which links it to drive torch too).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "neat/kernels/model.hpp"
#include "neat/stages/elements.hpp"
#include "neat/stages/graph.hpp"
#include "neat/stages/inference.hpp"
#include "neat/stages/pipeline.hpp"
#include "neat/telemetry/event_sink.hpp"
#include "support/fakes.hpp"
#include "support/models.hpp"

#include <atomic>
#include <mutex>
#include <thread>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/resource.h>

#include "neat/kernels/internal/model_engine.hpp"

namespace neat {
namespace {

using testing::floats_tensor;
using testing::model_path;
using testing::ramp;
using testing::values;

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

TEST(TorchModel, RunsWithNothingCopiedAndMatchesTheOpenCvEngine) {
  auto torch_model = Model::load({.path = model_path("scale.pt")});  // auto: by the file
  NEAT_ASSERT_OK(torch_model);
  auto& m = **torch_model;
  EXPECT_EQ(m.engine(), "libtorch");
  EXPECT_EQ(m.input().to_string(), "x f32 [1, 3, 8, 8]");  // from the file's neat.json
  ASSERT_EQ(m.outputs().size(), 1u);
  EXPECT_EQ(m.outputs()[0].shape, (std::vector<std::int64_t>{1, 3, 8, 8}));
  const std::vector<std::int64_t> shape{1, 3, 8, 8};
  EXPECT_TRUE(m.copies(shape).empty());  // nothing declared: nothing to copy

  NeatTensor x = ramp({1, 3, 8, 8}, 0.5f);
  FrameMeta meta;
  meta.frame = 7;
  x.set_meta(meta);
  auto sink = std::make_shared<MemorySink>();
  auto reg = add_event_sink(sink);
  const auto before = conversion_counters().snapshot();
  std::vector<NeatTensor> out;
  NEAT_ASSERT_OK(m.run(x, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(sink->size(), 0u);  // no conversion at the boundary
  EXPECT_EQ(conversion_counters().snapshot().total().count, before.total().count);
  EXPECT_EQ(out[0].meta().frame, 7);
  EXPECT_FALSE(out[0].is_writable());  // torch's buffer, shared read-only
  EXPECT_FALSE(out[0].map(MapMode::Write).ok());

  auto cv_model = Model::load({.path = model_path("scale.onnx"), .backend = ModelBackend::OpenCv});
  NEAT_ASSERT_OK(cv_model);
  EXPECT_EQ((*cv_model)->engine(), "opencv-dnn");
  std::vector<NeatTensor> cv_out;
  NEAT_ASSERT_OK((*cv_model)->run(x, cv_out));
  const auto a = values(out[0]), b = values(cv_out[0]);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_FLOAT_EQ(a[i], b[i]) << i;
    ASSERT_FLOAT_EQ(a[i], 2.0f * static_cast<float>(i) * 0.5f + 1.0f) << i;
  }
}

// detector.pt is detector.onnx's graph and weights run by torch: the same
// boxes (within 0.5 px) and scores (within 1e-4) on every anchor.
TEST(TorchModel, TheDetectorGivesTheSameBoxesOnBothEngines) {
  auto torch_model = Model::load({.path = model_path("detector.pt")});
  auto cv_model = Model::load({.path = model_path("detector.onnx")});
  NEAT_ASSERT_OK(torch_model);
  NEAT_ASSERT_OK(cv_model);
  ASSERT_EQ((*torch_model)->outputs()[0].shape, (*cv_model)->outputs()[0].shape);
  // A white 40x40 square at (300, 200) and a 12x12 one at (40, 500) on black.
  auto t = NeatTensor::allocate(DType::F32, {1, 3, 640, 640});
  NEAT_ASSERT_OK(t);
  auto x = std::move(*t).make_writable();
  NEAT_ASSERT_OK(x);
  {
    auto m = x->map(MapMode::Write);
    auto* p = reinterpret_cast<float*>(m->mutable_data());
    std::fill(p, p + x->numel(), 0.0f);
    for (int c = 0; c < 3; ++c) {
      for (int y = 200; y < 240; ++y)
        std::fill_n(p + (c * 640 + y) * 640 + 300, 40, 1.0f);
      for (int y = 500; y < 512; ++y)
        std::fill_n(p + (c * 640 + y) * 640 + 40, 12, 1.0f);
    }
  }
  std::vector<NeatTensor> a, b;
  NEAT_ASSERT_OK((*torch_model)->run(*x, a));
  NEAT_ASSERT_OK((*cv_model)->run(*x, b));
  const auto ta = values(a[0]), tb = values(b[0]);
  ASSERT_EQ(ta.size(), tb.size());
  const std::size_t anchors = 8400;
  double box_diff = 0, score_diff = 0, best = 0;
  for (std::size_t ch = 0; ch < 84; ++ch) {
    for (std::size_t k = 0; k < anchors; ++k) {
      const double d = std::abs(ta[ch * anchors + k] - tb[ch * anchors + k]);
      (ch < 4 ? box_diff : score_diff) = std::max(ch < 4 ? box_diff : score_diff, d);
      if (ch == 4) best = std::max(best, static_cast<double>(ta[ch * anchors + k]));
    }
  }
  EXPECT_LE(box_diff, 0.5);
  EXPECT_LE(score_diff, 1e-4);
  EXPECT_GT(best, 0.9);  // the squares are found, not an all-zero output on both
}

TEST(TorchModel, AnOutputThatIsTheInputKeepsTheFrameAlive) {
  auto model = Model::load({.path = model_path("two_outputs.pt")});
  NEAT_ASSERT_OK(model);
  ASSERT_EQ((*model)->outputs().size(), 2u);
  EXPECT_EQ((*model)->outputs()[1].shape, (std::vector<std::int64_t>{1, 12}));
  std::vector<NeatTensor> out;
  {
    NeatTensor x = ramp({1, 3, 2, 2}, 1.0f);
    NEAT_ASSERT_OK((*model)->run(x, out));
  }  // the caller's handle is gone: the reshaped output still holds the frame
  ASSERT_EQ(out.size(), 2u);
  const auto first = values(out[0]), second = values(out[1]);
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_FLOAT_EQ(first[i], static_cast<float>(i) + 1.0f) << i;
    EXPECT_FLOAT_EQ(second[i], static_cast<float>(i)) << i;
  }

  auto identity = Model::load({.path = model_path("identity.pt")});
  NEAT_ASSERT_OK(identity);
  std::vector<NeatTensor> same;
  {
    NeatTensor x = ramp({1, 3, 4, 4}, 2.0f);
    NEAT_ASSERT_OK((*identity)->run(x, same));
  }
  EXPECT_FLOAT_EQ(values(same[0])[47], 94.0f);
  EXPECT_FALSE(same[0].is_writable());
}

TEST(TorchModel, BadFilesAndInputsAreTypedErrorsWithTheFix) {
  // An ONNX file asked of the torch engine.
  auto onnx = Model::load({.path = model_path("scale.onnx"), .backend = ModelBackend::Torch});
  ASSERT_FALSE(onnx.ok());
  EXPECT_EQ(onnx.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(onnx.error().message().find("not load it as a TorchScript module"), std::string::npos)
      << onnx.error().message();
  EXPECT_GE(onnx.error().fixes().size(), 2u);
  // A zip that is no module, and a module cut in half.
  const std::string dir = ::testing::TempDir();
  {
    std::ifstream in(model_path("scale.pt"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(dir + "/cut.pt", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    std::ofstream(dir + "/zip.pt", std::ios::binary) << "PK\x03\x04 not really a zip";
  }
  for (const char* name : {"/cut.pt", "/zip.pt"}) {
    auto r = Model::load({.path = dir + name});
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument) << r.error().to_string();
  }
  // A module without neat.json: the shape must be given, and be an image batch.
  auto bare = Model::load({.path = model_path("no_meta.pt")});
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.error().code(), ErrorCode::InvalidArgument);
  ASSERT_NE(bare.error().first_fix(), nullptr);
  EXPECT_NE(bare.error().first_fix()->cpp.find("input_shape"), std::string::npos);
  NEAT_EXPECT_ERROR(Model::load({.path = model_path("no_meta.pt"), .input_shape = {1, 8}}),
                    ErrorCode::Unimplemented, "is not an image batch");
  auto given = Model::load({.path = model_path("no_meta.pt"), .input_shape = {1, 3, 8, 8}});
  NEAT_ASSERT_OK(given);
  EXPECT_EQ((*given)->input().to_string(), "input f32 [1, 3, 8, 8]");
  // Wrong inputs at run: a different shape, a strided view, the wrong dtype.
  std::vector<NeatTensor> out;
  NEAT_EXPECT_ERROR((*given)->run(ramp({1, 3, 4, 4}, 1.0f), out), ErrorCode::InvalidArgument,
                    "dimension 2 is 4");
  NeatTensor wide = ramp({1, 3, 8, 16}, 1.0f);
  auto strided = wide.narrow(3, 0, 8);
  NEAT_ASSERT_OK(strided);
  NEAT_EXPECT_ERROR((*given)->run(*strided, out), ErrorCode::FailedPrecondition, "strided");
  auto bytes = NeatTensor::allocate(DType::U8, {1, 3, 8, 8});
  NEAT_ASSERT_OK(bytes);
  NEAT_EXPECT_ERROR((*given)->run(*bytes, out), ErrorCode::InvalidArgument, "the model takes");
}

TEST(TorchModel, ThreadsHoldTorchsPoolOnlyWhileTheModelLives) {
  auto pool = [] {  // OpenMP's count is per thread: the one the models run on
    int n = 0;
    on_torch_thread([&] { n = at::get_num_threads(); });
    return n;
  };
  const int before = pool();
  const int asked = before == 1 ? 2 : 1;
  {
    auto a = Model::load({.path = model_path("scale.pt"), .threads = asked});
    NEAT_ASSERT_OK(a);
    EXPECT_EQ(pool(), asked);
    auto other = Model::load({.path = model_path("scale.pt"), .threads = asked + 1});
    ASSERT_FALSE(other.ok());
    EXPECT_NE(other.error().message().find("libtorch's process-wide pool"), std::string::npos)
        << other.error().message();
  }
  EXPECT_EQ(pool(), before);
}

TEST(TorchModel, TheInferElementPicksTheFileThatFitsTheEngine) {
  auto stage = infer_stage({.model = {.path = model_path("scale.pt")}});
  NEAT_ASSERT_OK(stage);
  const std::string d = (*stage)->describe();
  EXPECT_NE(d.find("libtorch"), std::string::npos) << d;
  EXPECT_NE(d.find("nothing is copied"), std::string::npos) << d;
  EXPECT_NE(d.find("block cache, up to 512 MiB"), std::string::npos) << d;
  // No copies to list: the stage's explain has none.
  FrameSpec in;
  in.dtype = DType::F32;
  in.shape = {1, 3, 8, 8};
  auto out = (*stage)->output_spec(in);
  NEAT_ASSERT_OK(out);
  NEAT_ASSERT_OK((*stage)->prepare(in, *out));
  EXPECT_TRUE((*stage)->inner_conversions().empty());
}

// yolov8n, the timing model: the same network and weights on both engines.
TEST(TorchModel, Yolov8nGivesTheSameOutputOnBothEngines) {
  auto torch_model = Model::load({.path = model_path("yolov8n.pt"), .threads = 2});
  NEAT_ASSERT_OK(torch_model);
  auto cv_model = Model::load({.path = model_path("yolov8n.onnx"), .threads = 2});
  NEAT_ASSERT_OK(cv_model);
  EXPECT_EQ((*torch_model)->input().to_string(), "images f32 [1, 3, 640, 640]");
  EXPECT_EQ((*cv_model)->input().to_string(), "images f32 [1, 3, 640, 640]");
  // An image-like input: smooth gradients in 0..1 with a bright square.
  std::vector<float> v(3 * 640 * 640);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::size_t x = i % 640, y = (i / 640) % 640, c = i / (640 * 640);
    const bool square = x > 200 && x < 320 && y > 260 && y < 400;
    v[i] = square ? 1.0f : static_cast<float>((x + 2 * y + 97 * c) % 640) / 640.0f;
  }
  const NeatTensor x = floats_tensor(v, {1, 3, 640, 640});
  std::vector<NeatTensor> a, b;
  NEAT_ASSERT_OK((*torch_model)->run(x, a));
  NEAT_ASSERT_OK((*cv_model)->run(x, b));
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].shape(), (Dims{1, 84, 8400}));
  EXPECT_EQ(b[0].shape(), (Dims{1, 84, 8400}));
  const auto ta = values(a[0]), tb = values(b[0]);
  float box = 0, score = 0;
  for (std::size_t i = 0; i < ta.size(); ++i) {
    const float d = std::abs(ta[i] - tb[i]);
    (i < 4 * 8400 ? box : score) = std::max(i < 4 * 8400 ? box : score, d);
  }
  EXPECT_LE(box, 0.05f) << "largest box difference, input pixels";
  EXPECT_LE(score, 1e-4f) << "largest score difference";
  // The boxes are where YOLOv8 puts them: inside the 640x640 input, widths > 0.
  for (std::size_t k = 0; k < 8400; ++k) {
    ASSERT_GT(ta[2 * 8400 + k], 0.f);
    ASSERT_GT(ta[3 * 8400 + k], 0.f);
  }
}

// The model's pool takes the machine's cores; the kernel stages keep one;
// a model asking for more than the machine has fails build() with the fix.
TEST(TorchModel, TheGraphsThreadBudgetGivesTheModelTheCores) {
  const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const std::string infer = "infer model=" + model_path("scale.pt");
  {  // (the model's pool is held while the declared graph lives)
    auto declared = declare_pipeline("default frames=1 ! preprocess size=8x8 batch=true ! " +
                                     infer + " ! appsink");
    NEAT_ASSERT_OK(declared);
    auto plan = declared->builder.plan();
    NEAT_ASSERT_OK(plan);
    const ThreadBudget& t = plan->threads;
    EXPECT_EQ(t.hardware, hw);
    ASSERT_EQ(t.engines.size(), 1u);
    EXPECT_EQ(t.engines[0].stage, "infer");
    EXPECT_EQ(t.engines[0].pool.name, "libtorch");
    EXPECT_EQ(t.engines[0].pool.threads, hw);  // threads=0: the machine's
    EXPECT_EQ(t.kernels, 1);
    EXPECT_EQ(t.total(), hw + 1);
    EXPECT_LE(t.total(), t.limit());
    EXPECT_NE(plan->explain().find("threads: " + std::to_string(hw + 1) + " of " +
                                   std::to_string(hw + 1)),
              std::string::npos)
        << plan->explain();
  }
  // Without a model the kernel stages take the machine.
  auto plain = declare_pipeline("default frames=1 ! preprocess size=8x8 ! appsink");
  NEAT_ASSERT_OK(plain);
  auto plain_plan = plain->builder.plan();
  NEAT_ASSERT_OK(plain_plan);
  EXPECT_EQ(plain_plan->threads.kernels, hw);
  EXPECT_TRUE(plain_plan->threads.engines.empty());

  // One thread more than the machine has: refused at build, with the fix.
  auto greedy = declare_pipeline("default frames=1 ! preprocess size=8x8 batch=true ! " + infer +
                                 " threads=" + std::to_string(hw + 1) + " ! appsink");
  NEAT_ASSERT_OK(greedy);
  auto refused = greedy->builder.plan();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::FailedPrecondition);
  EXPECT_NE(refused.error().message().find("more than this machine's"), std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("threads=" + std::to_string(hw) + " or fewer"),
            std::string::npos)
      << refused.error().message();
}

// TorchScript's alias analysis finds a forward() that writes its input: the
// frame is handed over only when nothing else holds it; a shared one gets a
// copy of its own, through the policy.
TEST(TorchModel, AModelThatWritesItsInputNeverWritesAFrameOthersHold) {
  auto m = Model::load({.path = model_path("in_place.pt")});
  NEAT_ASSERT_OK(m);
  EXPECT_NE((*m)->boundary().find("writes its input in place"), std::string::npos)
      << (*m)->boundary();
  auto plain = Model::load({.path = model_path("scale.pt")});
  NEAT_ASSERT_OK(plain);
  EXPECT_EQ((*plain)->boundary().find("writes its input"), std::string::npos);

  std::vector<NeatTensor> out;
  {  // held alone: handed over as it is (the model writes its own frame)
    NeatTensor x = ramp({1, 3, 4, 4}, 1.0f);
    const auto before = conversion_counters().snapshot();
    NEAT_ASSERT_OK((*m)->run(x, out));
    EXPECT_EQ(conversion_counters().snapshot().since(before).total().count, 0u);
    EXPECT_FLOAT_EQ(values(out[0])[5], 6.0f);
    out.clear();
  }
  NeatTensor x = ramp({1, 3, 4, 4}, 1.0f);
  const NeatTensor other = x;  // another holder: a tee's other branch
  auto refused = (*m)->run(x, out, {.policy = ConversionPolicy::Strict});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::FailedPrecondition);
  EXPECT_NE(refused.error().message().find("writes input 0 in place"), std::string::npos)
      << refused.error().message();
  ASSERT_NE(refused.error().first_fix(), nullptr);
  EXPECT_NE(refused.error().first_fix()->cpp.find("make_writable()"), std::string::npos);
  EXPECT_FLOAT_EQ(values(other)[5], 5.0f);

  const auto before = conversion_counters().snapshot();
  NEAT_ASSERT_OK((*m)->run(x, out, {.policy = ConversionPolicy::AllowSilent}));
  const auto d = conversion_counters().snapshot().since(before);
  EXPECT_EQ(d.at(ConversionKind::Pack, ConversionReason::NotWritable, false).count, 1u);
  EXPECT_FLOAT_EQ(values(out[0])[5], 6.0f);  // the model's result, on its own copy
  EXPECT_FLOAT_EQ(values(other)[5], 5.0f);   // the shared frame never changed
  EXPECT_FLOAT_EQ(values(x)[5], 5.0f);
}

// libgomp gives each thread that starts parallel work its own team of
// threads: a model loaded on one thread and run from others would make a
// team per thread (and, past the machine's cores, every parallel region
// then waits for its workers to wake). All of it runs on one thread, so
// running the model from three more threads starts no new thread but theirs.
TEST(TorchModel, ModelsRunFromSeveralThreadsShareOneOpenMpTeam) {
  auto m = Model::load({.path = model_path("detector.pt"), .threads = 2});
  NEAT_ASSERT_OK(m);
  auto x = NeatTensor::allocate(DType::F32, {1, 3, 640, 640});
  NEAT_ASSERT_OK(x);
  std::vector<NeatTensor> warm;
  NEAT_ASSERT_OK((*m)->run(*x, warm));  // the team exists now
  warm.clear();
  auto threads_now = [] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
      ++n;
    return n;
  };
  const std::size_t before = threads_now();
  std::mutex turn;  // the model is not re-entrant: one run at a time
  std::atomic<int> started{0}, ran{0};
  std::atomic<bool> finish{false};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      ++started;
      {
        std::lock_guard lock(turn);
        std::vector<NeatTensor> out;
        if ((*m)->run(*x, out).ok()) ++ran;
      }
      while (!finish)
        std::this_thread::yield();  // stay alive until counted
    });
  }
  while (ran < 3)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::size_t during = threads_now();
  finish = true;
  for (auto& c : callers)
    c.join();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_EQ(during, before + 3) << "OpenMP started threads for the callers' own teams";
}

// Torch's own allocator gives a large block back to the system on every
// free, so each forward faults its working set in again. The block cache
// keeps them: once warm, a forward takes every large block from what the
// forward before freed, and the page faults go with them.
TEST(TorchBlockCache, AWarmForwardTakesEveryLargeBlockFromTheCache) {
  auto m = Model::load({.path = model_path("detector.pt")});
  NEAT_ASSERT_OK(m);
  const TorchBlockCacheStats installed = torch_block_cache_stats();
  ASSERT_TRUE(installed.installed) << "loading a TorchScript model installs the cache";
  EXPECT_EQ(installed.limit_bytes, kDefaultTorchBlockCacheBytes);
  auto x = NeatTensor::allocate(DType::F32, {1, 3, 640, 640});
  NEAT_ASSERT_OK(x);
  std::vector<NeatTensor> out;
  auto run = [&](int n) {
    for (int i = 0; i < n; ++i) {
      out.clear();
      NEAT_ASSERT_OK((*m)->run(*x, out));
    }
  };
  run(3);
  const TorchBlockCacheStats warm = torch_block_cache_stats();
  const long faults_before = minor_faults();
  run(5);
  const long faults = minor_faults() - faults_before;
  const TorchBlockCacheStats after = torch_block_cache_stats();
  EXPECT_EQ(after.from_system, warm.from_system) << "a warm forward asked the system for blocks";
  EXPECT_GT(after.reused, warm.reused);
  EXPECT_GT(after.held_bytes, 0);
  EXPECT_LE(after.held_bytes, after.limit_bytes);

  // The same forwards with nothing held: every large block comes from the
  // system again, and its pages fault in again.
  NEAT_ASSERT_OK(set_torch_block_cache_limit(0));
  EXPECT_EQ(torch_block_cache_stats().held_bytes, 0);
  const TorchBlockCacheStats uncached_before = torch_block_cache_stats();
  const long uncached_faults_before = minor_faults();
  run(5);
  const long uncached_faults = minor_faults() - uncached_faults_before;
  const TorchBlockCacheStats uncached = torch_block_cache_stats();
  NEAT_ASSERT_OK(set_torch_block_cache_limit(kDefaultTorchBlockCacheBytes));
  EXPECT_GE(uncached.from_system - uncached_before.from_system, 5 * 3)
      << "each forward allocates its large blocks afresh";
  EXPECT_EQ(uncached.held_bytes, 0);
  EXPECT_LT(faults * 4, uncached_faults)
      << "warm forwards faulted " << faults << " pages; uncached ones " << uncached_faults;
}

// A scrape shows the cache: the figures torch_block_cache_stats() returns.
TEST(TorchBlockCache, AScrapeShowsWhatItHoldsAndHowOftenItServed) {
  auto m = Model::load({.path = model_path("detector.pt")});
  NEAT_ASSERT_OK(m);
  auto x = NeatTensor::allocate(DType::F32, {1, 3, 640, 640});
  NEAT_ASSERT_OK(x);
  std::vector<NeatTensor> out;
  for (int i = 0; i < 3; ++i) {
    out.clear();
    NEAT_ASSERT_OK((*m)->run(*x, out));
  }
  const std::string text = graph_prometheus_text({GraphStats{}});
  const TorchBlockCacheStats s = torch_block_cache_stats();
  auto value = [&](const std::string& name) -> std::int64_t {
    const auto at = text.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::stoll(text.substr(at + name.size() + 2));
  };
  EXPECT_NE(text.find("# TYPE neat_torch_block_cache_held_bytes gauge"), std::string::npos);
  EXPECT_NE(text.find("# TYPE neat_torch_block_cache_reused_total counter"), std::string::npos);
  EXPECT_GT(s.held_bytes, 0);
  EXPECT_EQ(value("neat_torch_block_cache_held_bytes"), s.held_bytes) << text;
  EXPECT_EQ(value("neat_torch_block_cache_limit_bytes"), s.limit_bytes);
  EXPECT_EQ(value("neat_torch_block_cache_reused_total"), s.reused);
  EXPECT_EQ(value("neat_torch_block_cache_from_system_total"), s.from_system);
  EXPECT_EQ(value("neat_torch_block_cache_released_total"), s.released);
  // Valid for Prometheus's own linter (make test installs it).
  if (std::system("command -v promtool > /dev/null 2>&1") == 0) {
    const std::string path = ::testing::TempDir() + "torch_cache_scrape.txt";
    std::ofstream(path) << text;
    const std::string check = "promtool check metrics < " + path + " > " + path + ".out 2>&1";
    EXPECT_EQ(std::system(check.c_str()), 0) << std::ifstream(path + ".out").rdbuf();
  }
}

TEST(TorchBlockCache, TheLimitBoundsWhatItHoldsAndBadLimitsAreRefused) {
  auto m = Model::load({.path = model_path("scale.pt")});  // installs the cache
  NEAT_ASSERT_OK(m);
  ASSERT_TRUE(torch_block_cache_stats().installed);
  NEAT_ASSERT_OK(set_torch_block_cache_limit(std::int64_t{10} << 20));
  {
    std::vector<at::Tensor> blocks;
    for (int i = 0; i < 4; ++i)
      blocks.push_back(at::empty({std::int64_t{4} << 20}, at::kByte));  // 4 MiB each
  }  // freed: two fit under 10 MiB, two go back
  TorchBlockCacheStats s = torch_block_cache_stats();
  EXPECT_LE(s.held_bytes, std::int64_t{10} << 20);
  EXPECT_GE(s.held_bytes, std::int64_t{8} << 20);
  const std::int64_t released = s.released;
  // A held block serves the next allocation of its size.
  const std::int64_t reused = s.reused;
  { at::Tensor again = at::empty({std::int64_t{4} << 20}, at::kByte); }
  EXPECT_EQ(torch_block_cache_stats().reused, reused + 1);
  // Lowering the limit gives what is held back now.
  NEAT_ASSERT_OK(set_torch_block_cache_limit(0));
  s = torch_block_cache_stats();
  EXPECT_EQ(s.held_bytes, 0);
  EXPECT_GT(s.released, released);
  // Small blocks never reach it; an empty tensor has no block.
  { at::Tensor small = at::empty({1024}, at::kByte), none = at::empty({0}, at::kFloat); }
  NEAT_ASSERT_OK(set_torch_block_cache_limit(kDefaultTorchBlockCacheBytes));

  auto bad = set_torch_block_cache_limit(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(bad.error().message().find("negative"), std::string::npos) << bad.error().message();
  EXPECT_EQ(torch_block_cache_stats().limit_bytes, kDefaultTorchBlockCacheBytes);
}

TEST(TorchBlockCache, TheEnvironmentSetsItsLimitInMiB) {
  EXPECT_EQ(*torch_block_cache_limit_from_env(nullptr), kDefaultTorchBlockCacheBytes);
  EXPECT_EQ(*torch_block_cache_limit_from_env(""), kDefaultTorchBlockCacheBytes);
  EXPECT_EQ(*torch_block_cache_limit_from_env("0"), 0);  // libtorch's allocator stays
  EXPECT_EQ(*torch_block_cache_limit_from_env("64"), std::int64_t{64} << 20);
  for (const char* bad : {"abc", "-3", "12x", "1.5", " 8", "99999999999999"}) {
    auto r = torch_block_cache_limit_from_env(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument) << bad;
    EXPECT_NE(r.error().to_string().find("NEAT_TORCH_BLOCK_CACHE_MIB"), std::string::npos)
        << r.error().to_string();
  }
}

}  // namespace
}  // namespace neat
