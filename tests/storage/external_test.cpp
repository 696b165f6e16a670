#include "neat/storage/external.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

TEST(External, WrapsWithoutCopyAndReleasesThroughTheKeepAlive) {
  bool released = false;
  auto* data = static_cast<float*>(std::malloc(64 * sizeof(float)));
  for (int i = 0; i < 64; ++i)
    data[i] = static_cast<float>(i);
  {
    std::shared_ptr<void> keep(data, [&](void* p) {
      released = true;
      std::free(p);
    });
    auto t = wrap_external(data, 64 * sizeof(float), keep, DType::F32, {8, 8}, {32, 4});
    NEAT_ASSERT_OK(t);
    keep.reset();
    EXPECT_FALSE(released) << "the tensor keeps it alive";
    auto m = t->map();
    auto p = m->data_ptr<const float>();
    NEAT_ASSERT_OK(p);
    EXPECT_EQ(static_cast<const void*>(*p), static_cast<const void*>(data)) << "zero copy";
    EXPECT_EQ((*p)[63], 63.0f);
    EXPECT_EQ(t->storage_kind(), StorageKind::External);
  }
  EXPECT_TRUE(released);
}

TEST(External, ReadOnlyByDefaultAndDonatedOnlyWhenExclusive) {
  std::vector<std::uint8_t> buf(16, 7);
  std::shared_ptr<void> none(buf.data(), [](void*) {});  // the test owns buf
  auto ro = wrap_external(buf.data(), 16, none, DType::U8, {16}, {1});
  NEAT_ASSERT_OK(ro);
  EXPECT_TRUE(ro->storage()->read_only());
  auto w1 = std::move(*ro).make_writable();
  NEAT_ASSERT_OK(w1);
  EXPECT_EQ(w1->storage_kind(), StorageKind::Heap) << "copied, the caller's buffer untouched";

  auto shared = wrap_external(buf.data(), 16, none, DType::U8, {16}, {1}, 0, {.read_only = false});
  auto w2 = std::move(*shared).make_writable();
  EXPECT_EQ(w2->storage_kind(), StorageKind::Heap) << "not exclusive: someone else may read it";

  auto excl = wrap_external(buf.data(), 16, none, DType::U8, {16}, {1}, 0,
                            {.read_only = false, .exclusive = true});
  auto w3 = std::move(*excl).make_writable();
  NEAT_ASSERT_OK(w3);
  EXPECT_EQ(w3->storage_kind(), StorageKind::External) << "donated";
  {
    auto m = w3->map(MapMode::Write);
    NEAT_ASSERT_OK(m);
    (*m->data_ptr<std::uint8_t>())[0] = 99;
  }
  EXPECT_EQ(buf[0], 99);
}

TEST(ExternalBadInput, NullNegativeAndMissingKeepAlive) {
  std::shared_ptr<void> keep = std::make_shared<int>(0);
  NEAT_EXPECT_ERROR(wrap_memory(nullptr, 16, keep), ErrorCode::InvalidArgument, "data is null");
  int x = 0;
  NEAT_EXPECT_ERROR(wrap_memory(&x, -4, keep), ErrorCode::InvalidArgument, "negative");
  NEAT_EXPECT_ERROR(wrap_memory(&x, 4, nullptr), ErrorCode::InvalidArgument, "no keep-alive");
  NEAT_EXPECT_ERROR(wrap_external(&x, 4, keep, DType::F64, {1}, {8}), ErrorCode::OutOfRange,
                    "the storage holds 4 bytes");
  NEAT_ASSERT_OK(wrap_memory(nullptr, 0, keep));
}

}  // namespace
}  // namespace neat
