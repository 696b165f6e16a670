// Mapping: RAII, keeps storage alive, data_ptr<T> checks, write mappings never copy.
#include <gtest/gtest.h>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using testing::FakeCaps;
using testing::FakeStorage;

TEST(Mapping, KeepsTheStorageAliveAfterTheTensorIsGone) {
  BufferIdentity id;
  std::optional<Mapping> m;
  {
    auto t = NeatTensor::allocate(DType::I32, {8});
    id = t->identity();
    auto r = t->map();
    NEAT_ASSERT_OK(r);
    m.emplace(std::move(*r));
  }
  EXPECT_TRUE(id.alive());
  auto p = m->data_ptr<const std::int32_t>();
  NEAT_ASSERT_OK(p);
  EXPECT_EQ((*p)[7], 0);
  m.reset();
  EXPECT_FALSE(id.alive());
}

TEST(Mapping, DeferredStorageIsMappedOncePerMappingAndUnmappedWhenItGoes) {
  auto s = FakeStorage::make(64, FakeCaps{.resident = false});
  auto t = NeatTensor::from_storage_contiguous(s, DType::U8, {64});
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(s->live_maps(), 0);
  {
    auto a = t->map();
    auto b = t->map();
    EXPECT_EQ(s->live_maps(), 2);
    Mapping moved = std::move(*a);
    EXPECT_EQ(s->live_maps(), 2);
  }
  EXPECT_EQ(s->live_maps(), 0);
  s->fail_next_map = true;
  NEAT_EXPECT_ERROR(t->map(), ErrorCode::Internal, "map: fake map failure");
  EXPECT_EQ(s->live_maps(), 0);
}

TEST(Mapping, UnmappableStorageFailsWithTheStagingHint) {
  auto s = FakeStorage::make(64, FakeCaps{.resident = false,
                                          .mappable = false,
                                          .kind = StorageKind::Gl,
                                          .device = {DeviceType::Gl, 0}});
  auto t = NeatTensor::from_storage_contiguous(s, DType::U8, {64});
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->device().type, DeviceType::Gl);
  NEAT_EXPECT_ERROR(t->map(), ErrorCode::FailedPrecondition, "cpu() or to_cpu_if_needed()");
}

TEST(Mapping, DataPtrChecksDtypeContiguityModeAndAlignment) {
  auto t = NeatTensor::allocate(DType::F32, {4, 4});
  auto m = t->map();
  NEAT_ASSERT_OK(m);
  NEAT_EXPECT_ERROR(m->data_ptr<const double>(), ErrorCode::InvalidArgument,
                    "the tensor's dtype is f32");
  NEAT_EXPECT_ERROR(m->data_ptr<float>(), ErrorCode::FailedPrecondition, "needs a write mapping");
  EXPECT_EQ(m->mutable_data(), nullptr);
  auto tr = t->transpose(0, 1);
  auto mt = tr->map();
  NEAT_EXPECT_ERROR(mt->data_ptr<const float>(), ErrorCode::FailedPrecondition, "not contiguous");
  // A misaligned offset is fine to build (bytes are bytes) but not to use as T.
  auto bytes = t->reinterpret(DType::I32);
  auto s = FakeStorage::make(64);
  auto odd = NeatTensor::from_storage(s, DType::F32, {3}, {4}, 2);
  NEAT_ASSERT_OK(odd);
  auto mo = odd->map();
  NEAT_ASSERT_OK(mo);
  NEAT_EXPECT_ERROR(mo->data_ptr<const float>(), ErrorCode::InvalidArgument,
                    "not aligned to 4 bytes");
}

TEST(Mapping, WriteMappingOfReadOnlyOrSharedTensorFailsAndNeverCopies) {
  const auto before = conversion_counters().snapshot();
  // Not from make_writable.
  auto t = NeatTensor::allocate(DType::U8, {16});
  NEAT_EXPECT_ERROR(t->map(MapMode::Write), ErrorCode::FailedPrecondition,
                    "not obtained from make_writable()");
  // Shared with a view.
  auto w = std::move(*t).make_writable();
  NEAT_ASSERT_OK(w);
  auto view = w->slice(0, 0, 8);
  NEAT_EXPECT_ERROR(w->map(MapMode::Write), ErrorCode::FailedPrecondition, "shared with another");
  view = NeatTensor();
  NEAT_ASSERT_OK(w->map(MapMode::Write));
  // Shared with a live read mapping.
  {
    auto r = w->map(MapMode::Read);
    NEAT_EXPECT_ERROR(w->map(MapMode::ReadWrite), ErrorCode::FailedPrecondition, "shared");
  }
  // Read-only storage.
  auto s = FakeStorage::make(16, FakeCaps{.read_only = true});
  auto ro = NeatTensor::from_storage_contiguous(s, DType::U8, {16});
  s.reset();
  auto rw = std::move(*ro).make_writable();  // copies: read-only storage is never donated
  NEAT_ASSERT_OK(rw);
  EXPECT_EQ(rw->storage_kind(), StorageKind::Heap);
  // From a const handle.
  const NeatTensor& cw = *w;
  NEAT_EXPECT_ERROR(cw.map(MapMode::Write), ErrorCode::FailedPrecondition, "non-const tensor");
  // Nothing above copied except the make_writable of read-only storage.
  const auto d = conversion_counters().snapshot().since(before);
  EXPECT_EQ(d.total().count, 1u);
  EXPECT_EQ(d.at(ConversionKind::Pack, ConversionReason::NotWritable, true).count, 1u);
}

TEST(Mapping, WriteThenReadBack) {
  auto t = NeatTensor::allocate(DType::U16, {3, 5});
  auto w = std::move(*t).make_writable();
  NEAT_ASSERT_OK(w);
  {
    auto m = w->map(MapMode::Write);
    NEAT_ASSERT_OK(m);
    auto p = m->data_ptr<std::uint16_t>();
    NEAT_ASSERT_OK(p);
    for (int i = 0; i < 15; ++i)
      (*p)[i] = static_cast<std::uint16_t>(i * 1000);
  }
  auto m = w->map();
  auto p = m->data_ptr<const std::uint16_t>();
  EXPECT_EQ((*p)[14], 14000);
}

TEST(Mapping, MoveAssignReleasesThePreviousMapping) {
  auto s1 = FakeStorage::make(8, FakeCaps{.resident = false});
  auto s2 = FakeStorage::make(8, FakeCaps{.resident = false});
  auto a = NeatTensor::from_storage_contiguous(s1, DType::U8, {8});
  auto b = NeatTensor::from_storage_contiguous(s2, DType::U8, {8});
  auto ma = a->map();
  auto mb = b->map();
  *ma = std::move(*mb);
  EXPECT_EQ(s1->live_maps(), 0);
  EXPECT_EQ(s2->live_maps(), 1);
  EXPECT_EQ(ma->tensor().storage().get(), s2.get());
}

}  // namespace
}  // namespace neat
