// make_writable, donation modes, clone and contiguous: what copies, what does
// not, and that every copy passes the gate with the right kind and reason.
#include <gtest/gtest.h>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using testing::element_bytes;
using testing::FakeCaps;
using testing::FakeStorage;

class Writable : public testing::TelemetryTest {};

TEST_F(Writable, UniqueTensorIsDonatedWithZeroBytesCopied) {
  auto t = NeatTensor::allocate(DType::F32, {1080, 1920});
  NEAT_ASSERT_OK(t);
  const auto id = t->identity();
  auto w = std::move(*t).make_writable();
  NEAT_ASSERT_OK(w);
  EXPECT_FALSE(t->defined()) << "the handle is consumed";
  EXPECT_EQ(w->identity(), id);
  EXPECT_TRUE(w->is_writable());
  EXPECT_EQ(delta().total().count, 0u);
  EXPECT_EQ(delta().total().bytes, 0u);
  EXPECT_TRUE(events().empty());
}

TEST_F(Writable, SharedTensorIsCopiedOnWriteThroughTheGate) {
  auto t = NeatTensor::allocate(DType::U8, {4, 4});
  NeatTensor keep = *t;  // a second holder
  auto w = std::move(*t).make_writable();
  NEAT_ASSERT_OK(w);
  EXPECT_NE(w->identity(), keep.identity());
  const auto cell = delta().at(ConversionKind::Pack, ConversionReason::NotWritable, true);
  EXPECT_EQ(cell.count, 1u);
  EXPECT_EQ(cell.bytes, 16u);
  auto ev = events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].operation, "make_writable");
  EXPECT_TRUE(ev[0].event.explicit_call);
  EXPECT_NE(ev[0].file.find("writable_test.cpp"), std::string::npos) << ev[0].file;
}

TEST_F(Writable, WritesReachOthersWhenSharedReadOnlyOrBroadcast) {
  auto t = NeatTensor::allocate(DType::U8, {4, 4});
  NEAT_ASSERT_OK(t);
  EXPECT_FALSE(t->writes_reach_others()) << "held alone";
  {
    auto view = t->slice(0, 0, 2);
    NEAT_ASSERT_OK(view);
    EXPECT_TRUE(t->writes_reach_others()) << "a view shares the storage";
    EXPECT_TRUE(view->writes_reach_others());
  }
  EXPECT_FALSE(t->writes_reach_others()) << "the view is gone";
  auto row = t->slice(0, 0, 1);
  NEAT_ASSERT_OK(row);
  NeatTensor alone = *std::move(row);
  *t = NeatTensor{};
  EXPECT_FALSE(alone.writes_reach_others()) << "the only holder of the storage";
  auto wide = alone.expand({3, 4});
  NEAT_ASSERT_OK(wide);
  alone = NeatTensor{};
  EXPECT_TRUE(wide->writes_reach_others()) << "a broadcast: one byte is many elements";
  auto ro = NeatTensor::from_storage_contiguous(FakeStorage::make(8, FakeCaps{.read_only = true}),
                                                DType::U8, {8});
  NEAT_ASSERT_OK(ro);
  EXPECT_TRUE(ro->writes_reach_others()) << "read-only storage";
}

TEST_F(Writable, AViewNeverObservesAWriteThroughALaterWritableTensor) {
  auto t = NeatTensor::allocate(DType::U8, {8});
  auto view = t->slice(0, 0, 8);
  auto w = std::move(*t).make_writable();
  NEAT_ASSERT_OK(w);
  {
    auto m = w->map(MapMode::Write);
    NEAT_ASSERT_OK(m);
    (*m->data_ptr<std::uint8_t>())[3] = 42;
  }
  EXPECT_EQ(element_bytes(*view)[3], 0);
  EXPECT_EQ(element_bytes(*w)[3], 42);
}

TEST_F(Writable, AlwaysCopyCopiesEvenWhenUnique) {
  auto t = NeatTensor::allocate(DType::U8, {10});
  const auto id = t->identity();
  auto w = std::move(*t).make_writable({.donation = Donation::AlwaysCopy});
  NEAT_ASSERT_OK(w);
  EXPECT_NE(w->identity(), id);
  EXPECT_EQ(delta().at(ConversionKind::Pack, ConversionReason::UserRequest, true).count, 1u);
}

TEST_F(Writable, MustDonateRefusedIsAnErrorUnderStrict) {
  auto t = NeatTensor::allocate(DType::U8, {10});
  NeatTensor other = *t;
  ScopedPolicy strict(ConversionPolicy::Strict);
  NEAT_EXPECT_ERROR(std::move(*t).make_writable({.donation = Donation::MustDonate}),
                    ErrorCode::FailedPrecondition,
                    "Strict policy refused an implicit pack (donation_refused) in make_writable");
  EXPECT_EQ(delta().at(ConversionKind::Pack, ConversionReason::DonationRefused, false).refused, 1u);
  EXPECT_EQ(delta().total().count, 0u);
}

TEST_F(Writable, MustDonateRefusedIsALoudEventUnderSilent) {
  auto t = NeatTensor::allocate(DType::U8, {10});
  NeatTensor other = *t;
  auto w = std::move(*t).make_writable(
      {.donation = Donation::MustDonate, .policy = ConversionPolicy::AllowSilent});
  NEAT_ASSERT_OK(w);
  auto ev = events();
  ASSERT_EQ(ev.size(), 1u) << "loud: recorded even under AllowSilent";
  EXPECT_TRUE(ev[0].event.loud);
  EXPECT_FALSE(ev[0].event.explicit_call);
  EXPECT_EQ(ev[0].event.reason, ConversionReason::DonationRefused);
  EXPECT_EQ(ev[0].event.policy, ConversionPolicy::AllowSilent);
}

TEST_F(Writable, MustDonateHonouredWhenUnique) {
  auto t = NeatTensor::allocate(DType::U8, {10});
  const auto id = t->identity();
  auto w = std::move(*t).make_writable({.donation = Donation::MustDonate});
  NEAT_ASSERT_OK(w);
  EXPECT_EQ(w->identity(), id);
  EXPECT_EQ(delta().total().count, 0u);
}

TEST_F(Writable, NonDonatableStorageIsCopied) {
  auto s = FakeStorage::make(32, FakeCaps{.donatable = false});
  auto t = NeatTensor::from_storage_contiguous(s, DType::U8, {32});
  s.reset();
  auto w = std::move(*t).make_writable();
  NEAT_ASSERT_OK(w);
  EXPECT_EQ(w->storage_kind(), StorageKind::Heap);
  EXPECT_EQ(delta().at(ConversionKind::Pack, ConversionReason::NotWritable, true).count, 1u);
}

TEST_F(Writable, CloneIsAlwaysADeepCopy) {
  auto t = NeatTensor::allocate_image(PixelFormat::RGB, 7, 5, {.zero_fill = false});
  auto w = std::move(*t).make_writable();
  testing::fill_pattern(*w, 3, 1);
  auto c = w->clone();
  NEAT_ASSERT_OK(c);
  EXPECT_NE(c->identity(), w->identity());
  EXPECT_EQ(c->image(), w->image());
  EXPECT_EQ(element_bytes(*c), element_bytes(*w));
  const auto cell = delta().at(ConversionKind::Pack, ConversionReason::UserRequest, true);
  EXPECT_EQ(cell.count, 1u);
  EXPECT_EQ(cell.bytes, 105u);
  ASSERT_EQ(events().size(), 1u);
  EXPECT_EQ(events()[0].event.destination.format, PixelFormat::RGB);
}

TEST_F(Writable, ContiguousIsANoOpWithoutEventWhenAlreadyContiguous) {
  auto t = NeatTensor::allocate(DType::F64, {3, 4});
  auto c = t->contiguous();
  NEAT_ASSERT_OK(c);
  EXPECT_EQ(c->identity(), t->identity());
  EXPECT_EQ(delta().total().count, 0u);
  EXPECT_TRUE(events().empty());
}

TEST_F(Writable, ContiguousPacksStridedViewsIncludingNegativeStrides) {
  auto s = FakeStorage::make(6 * 4);
  std::uint8_t* raw = reinterpret_cast<std::uint8_t*>(s->bytes());
  for (int i = 0; i < 24; ++i)
    raw[i] = static_cast<std::uint8_t>(i);
  // Rows flipped (negative stride) and every other column.
  auto t = NeatTensor::from_storage(s, DType::U8, {4, 3}, {-6, 2}, 18);
  NEAT_ASSERT_OK(t);
  auto c = t->contiguous();
  NEAT_ASSERT_OK(c);
  EXPECT_TRUE(c->is_contiguous());
  EXPECT_EQ(element_bytes(*c),
            (std::vector<std::uint8_t>{18, 20, 22, 12, 14, 16, 6, 8, 10, 0, 2, 4}));
  EXPECT_EQ(delta().at(ConversionKind::Pack, ConversionReason::StrideMismatch, true).count, 1u);
}

TEST_F(Writable, CopiesOfEveryDtypeAndRankAreExact) {
  for (DType dt : {DType::U8, DType::I16, DType::F32, DType::F64}) {
    auto t = NeatTensor::allocate(dt, {3, 4, 5}, {.zero_fill = false});
    auto w = std::move(*t).make_writable();
    testing::fill_pattern(*w, 7, 3);
    auto p = w->permute({2, 0, 1});
    auto c = p->contiguous();
    NEAT_ASSERT_OK(c);
    EXPECT_EQ(element_bytes(*c), element_bytes(*p)) << to_string(dt);
  }
}

TEST_F(Writable, CopyIntoAnExhaustedAllocatorFailsCleanly) {
  auto pool = HeapPool::create();
  struct Refusing final : StorageAllocator {
    Result<std::shared_ptr<Storage>> allocate(const AllocRequest& r) override {
      return resource_exhausted("no memory for " + std::to_string(r.bytes) + " bytes");
    }
  } refusing;
  auto t = NeatTensor::allocate(DType::U8, {64});
  NEAT_EXPECT_ERROR(t->clone({.allocator = &refusing}), ErrorCode::ResourceExhausted, "64 bytes");
  EXPECT_EQ(delta().total().count, 0u) << "nothing ran, nothing recorded";
}

}  // namespace
}  // namespace neat
