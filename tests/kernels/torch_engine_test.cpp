// The libtorch engine as a plugin (kernels/torch_engine.cpp): libtorch loads
// with the first TorchScript model and not before, and a plugin that is
// missing, is not one, or belongs to another NeatTensor build is refused with
// the reason and the fix. This program does not link libtorch.

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "neat/kernels/internal/model_engine.hpp"
#include "neat/kernels/model.hpp"
#include "support/fakes.hpp"
#include "support/models.hpp"

namespace neat {
namespace {

using testing::model_path;

#if NEAT_WITH_TORCH

bool libtorch_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libtorch_cpu") != std::string::npos) return true;
  return false;
}

TEST(TorchEngine, LibtorchLoadsWithTheFirstTorchScriptModelOnly) {
  if (torch_engine_loaded()) GTEST_SKIP() << "an earlier test of this process loaded it";
  EXPECT_FALSE(libtorch_mapped());
  {
    auto onnx = Model::load({.path = model_path("scale.onnx")});  // OpenCV's engine
    NEAT_ASSERT_OK(onnx);
  }
  EXPECT_FALSE(libtorch_mapped());
  EXPECT_FALSE(torch_engine_loaded());
  EXPECT_FALSE(torch_block_cache_stats().installed);

  auto pt = Model::load({.path = model_path("scale.pt")});
  NEAT_ASSERT_OK(pt);
  EXPECT_EQ((*pt)->engine(), "libtorch");
  EXPECT_TRUE(torch_engine_loaded());
  EXPECT_TRUE(libtorch_mapped());
  EXPECT_TRUE(torch_block_cache_stats().installed);  // through the plugin
}

TEST(TorchEngine, ALimitSetBeforeTheEngineLoadsReachesIt) {
  if (torch_engine_loaded()) GTEST_SKIP() << "an earlier test of this process loaded it";
  NEAT_ASSERT_OK(set_torch_block_cache_limit(std::int64_t{3} << 20));
  EXPECT_EQ(torch_block_cache_stats().limit_bytes, std::int64_t{3} << 20);
  auto bad = set_torch_block_cache_limit(-5);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::InvalidArgument);
  EXPECT_FALSE(torch_engine_loaded());  // neither call loaded it
  // The engine takes the limit when it loads, and the call's limit stands
  // over the default when the first model installs the cache.
  auto m = Model::load({.path = model_path("scale.pt")});
  NEAT_ASSERT_OK(m);
  EXPECT_TRUE(torch_block_cache_stats().installed);
  EXPECT_EQ(torch_block_cache_stats().limit_bytes, std::int64_t{3} << 20);
  NEAT_ASSERT_OK(set_torch_block_cache_limit(std::int64_t{5} << 20));
  EXPECT_EQ(torch_block_cache_stats().limit_bytes, std::int64_t{5} << 20);
  NEAT_ASSERT_OK(set_torch_block_cache_limit(kDefaultTorchBlockCacheBytes));
}

TEST(TorchEngine, TheBuildsPluginIsAccepted) {
  auto e = detail::open_torch_engine(NEAT_TEST_TORCH_ENGINE);
  NEAT_ASSERT_OK(e);
  EXPECT_EQ((*e)->abi, kTorchEngineAbi);
  EXPECT_STREQ((*e)->version, NEAT_TEST_PROJECT_VERSION);
}

TEST(TorchEngine, AMissingFileIsRefusedWithTheLoadersReason) {
  const std::string path = "/nonexistent/dir/libneat_torch.so";
  auto e = detail::open_torch_engine(path);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), ErrorCode::Unavailable);
  EXPECT_NE(e.error().message().find(path), std::string::npos) << e.error().message();
  EXPECT_NE(e.error().message().find("No such file"), std::string::npos) << e.error().message();
}

TEST(TorchEngine, AFileThatIsNotALibraryIsRefused) {
  const std::string path = ::testing::TempDir() + "neat_not_a_library.so";
  std::ofstream(path) << "this is text, not an ELF file\n";
  auto e = detail::open_torch_engine(path);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), ErrorCode::Unavailable);
  EXPECT_NE(e.error().message().find(path), std::string::npos) << e.error().message();
}

TEST(TorchEngine, ALibraryWithoutTheEntryPointIsNotAnEngine) {
  auto e = detail::open_torch_engine("libm.so.6");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), ErrorCode::Unavailable);
  EXPECT_NE(e.error().message().find("has no neat_torch_engine"), std::string::npos)
      << e.error().message();
}

TEST(TorchEngine, APluginOfAnotherBuildIsRefusedNamingBothVersions) {
  auto e = detail::open_torch_engine(NEAT_TEST_FAKE_TORCH_ENGINE);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), ErrorCode::Unavailable);
  const std::string m = e.error().message();
  EXPECT_NE(m.find("0.0.0-other"), std::string::npos) << m;
  EXPECT_NE(m.find(std::string("this libneat is ") + NEAT_TEST_PROJECT_VERSION), std::string::npos)
      << m;
  EXPECT_NE(m.find("same NeatTensor build"), std::string::npos) << m;
}

#else

TEST(TorchEngine, ABuildWithoutLibtorchSaysSo) {
  auto r = Model::load({.path = model_path("scale.onnx"), .backend = ModelBackend::Torch});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::Unavailable);
  EXPECT_NE(r.error().message().find("no libtorch"), std::string::npos) << r.error().message();
}

#endif

}  // namespace
}  // namespace neat
