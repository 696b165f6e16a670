// DLPack export and import: strides in elements, packs through the gate,
// read-only handling, planes of composites, NULL / negative strides,
// byte_offset, zero-size dimensions, and a deleter that runs exactly once.
#include "neat/storage/dlpack.hpp"

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "neat/contract/mapping.hpp"
#include "neat/policy/policy.hpp"
#include "neat/storage/external.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

// A DLManagedTensor over a std::vector, counting deleter calls.
struct Producer {
  std::vector<float> data;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  int deletions = 0;
  DLManagedTensor managed{};

  DLManagedTensor* make(std::vector<std::int64_t> s, std::vector<std::int64_t> st, void* ptr,
                        std::uint64_t byte_offset = 0) {
    shape = std::move(s);
    strides = std::move(st);
    managed.dl_tensor.data = ptr;
    managed.dl_tensor.device = DLDevice{kDLCPU, 0};
    managed.dl_tensor.ndim = static_cast<int>(shape.size());
    managed.dl_tensor.dtype = DLDataType{kDLFloat, 32, 1};
    managed.dl_tensor.shape = shape.data();
    managed.dl_tensor.strides = strides.empty() ? nullptr : strides.data();
    managed.dl_tensor.byte_offset = byte_offset;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      ++static_cast<Producer*>(self->manager_ctx)->deletions;
    };
    return &managed;
  }
};

float at(const NeatTensor& t, std::int64_t i, std::int64_t j) {
  auto m = t.map();
  const std::byte* p = m->data() + i * t.strides()[0] + j * t.strides()[1];
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

TEST(DlpackExport, DenseTensorsExportTheirOwnBytesWithElementStrides) {
  auto t = NeatTensor::allocate(DType::F32, Dims{4, 5});
  NEAT_ASSERT_OK(t);
  const auto before = dlpack_live_exports();
  auto view = t->transpose(0, 1);
  auto m = export_dlpack(*view, {.read_only_consumer = true});  // the view shares t's bytes
  NEAT_ASSERT_OK(m);
  const DLTensor& dl = (*m)->dl_tensor;
  EXPECT_EQ(dl.ndim, 2);
  EXPECT_EQ(dl.shape[0], 5);
  EXPECT_EQ(dl.strides[0], 1);
  EXPECT_EQ(dl.strides[1], 5);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.data, static_cast<const void*>(t->map()->data()));
  std::weak_ptr<Storage> weak = t->storage();
  *t = NeatTensor();
  *view = NeatTensor();
  EXPECT_FALSE(weak.expired()) << "the export keeps the storage";
  EXPECT_EQ(dlpack_live_exports(), before + 1);
  (*m)->deleter(*m);
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(dlpack_live_exports(), before);
}

TEST(DlpackExport, StridesThatAreNotWholeElementsPackUnderPolicyOnly) {
  auto bytes = NeatTensor::allocate(DType::U8, Dims{64});
  NEAT_ASSERT_OK(bytes);
  auto odd = NeatTensor::from_storage(bytes->storage(), DType::F32, Dims{4}, Dims{6});
  NEAT_ASSERT_OK(odd);
  // (A reader: `odd` shares the bytes of `bytes`.)
  NEAT_EXPECT_ERROR(
      export_dlpack(*odd, {.read_only_consumer = true, .policy = ConversionPolicy::Strict}),
      ErrorCode::FailedPrecondition, "not multiples of the 4-byte item size");
  auto packed =
      export_dlpack(*odd, {.read_only_consumer = true, .policy = ConversionPolicy::AllowSilent});
  NEAT_ASSERT_OK(packed);
  EXPECT_EQ((*packed)->dl_tensor.strides[0], 1);
  EXPECT_NE((*packed)->dl_tensor.data, static_cast<const void*>(bytes->map()->data()));
  (*packed)->deleter(*packed);
}

// DLPack 0.6 cannot mark memory read-only and its consumers (torch) write:
// a tensor others can see goes out as a copy the policy rules, never as a
// writable alias of shared or read-only bytes.
TEST(DlpackExport, ReadOnlyStorageGoesOutAsACopyThePolicyRules) {
  std::vector<float> v(6, 1.0f);
  auto t =
      wrap_external(v.data(), 24, std::make_shared<int>(0), DType::F32, Dims{2, 3}, Dims{12, 4});
  NEAT_ASSERT_OK(t);
  NEAT_EXPECT_ERROR(export_dlpack(*t, {.policy = ConversionPolicy::Strict}),
                    ErrorCode::FailedPrecondition, "make_writable()");
  // A consumer that will not write (numpy) reads it where it lies.
  auto m = export_dlpack(*t, {.read_only_consumer = true});
  NEAT_ASSERT_OK(m);
  EXPECT_EQ((*m)->dl_tensor.data, static_cast<void*>(v.data()));
  (*m)->deleter(*m);
  // Allowed: the consumer gets its own copy; writing it leaves the source alone.
  const auto before = conversion_counters().snapshot();
  auto copy = export_dlpack(*t, {.policy = ConversionPolicy::AllowSilent});
  NEAT_ASSERT_OK(copy);
  EXPECT_NE((*copy)->dl_tensor.data, static_cast<void*>(v.data()));
  static_cast<float*>((*copy)->dl_tensor.data)[0] = 7.0f;
  EXPECT_EQ(v[0], 1.0f);
  const auto d = conversion_counters().snapshot().since(before);
  EXPECT_EQ(d.at(ConversionKind::Pack, ConversionReason::NotWritable, false).count, 1u);
  (*copy)->deleter(*copy);
  auto b = NeatTensor::allocate(DType::Bool, Dims{3});
  NEAT_EXPECT_ERROR(export_dlpack(*b), ErrorCode::Unimplemented, "reinterpret(DType::U8)");
  NEAT_EXPECT_ERROR(export_dlpack(NeatTensor()), ErrorCode::FailedPrecondition, "undefined");
}

TEST(DlpackExport, ATensorHeldAloneGoesOutZeroCopyASharedOneNever) {
  auto a = NeatTensor::allocate(DType::F32, Dims{4, 4});
  NEAT_ASSERT_OK(a);
  const void* bytes = a->map()->data();
  {
    auto alone = export_dlpack(*a, {.policy = ConversionPolicy::Strict});
    NEAT_ASSERT_OK(alone);
    EXPECT_EQ((*alone)->dl_tensor.data, bytes);  // held by this handle only: zero-copy
    (*alone)->deleter(*alone);
  }
  const NeatTensor other = *a;  // a second holder (another branch, a queue)
  auto refused = export_dlpack(*a, {.policy = ConversionPolicy::Strict});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::FailedPrecondition);
  EXPECT_NE(refused.error().message().find("shared with other holders"), std::string::npos)
      << refused.error().message();
  ASSERT_NE(refused.error().first_fix(), nullptr);
  EXPECT_NE(refused.error().first_fix()->cpp.find("make_writable()"), std::string::npos);
  // A view shares the storage too.
  auto view = a->narrow(0, 0, 2);
  NEAT_ASSERT_OK(view);
  auto view_copy = export_dlpack(*view, {.policy = ConversionPolicy::AllowSilent});
  NEAT_ASSERT_OK(view_copy);
  EXPECT_NE((*view_copy)->dl_tensor.data, bytes);
  (*view_copy)->deleter(*view_copy);
}

TEST(DlpackExport, PlanarFramesExportOneTensorPerPlane) {
  auto f = NeatTensor::allocate_image(PixelFormat::NV12, 6, 4, {.row_alignment = 16});
  NEAT_ASSERT_OK(f);
  NEAT_EXPECT_ERROR(export_dlpack(*f), ErrorCode::FailedPrecondition, "export_dlpack_planes()");
  auto planes = export_dlpack_planes(*f);
  NEAT_ASSERT_OK(planes);
  ASSERT_EQ(planes->size(), 2u);
  const DLTensor& y = (*planes)[0]->dl_tensor;
  const DLTensor& uv = (*planes)[1]->dl_tensor;
  auto m = f->map();
  EXPECT_EQ(y.data, static_cast<const void*>(*m->plane_data(PlaneRole::Y)));
  EXPECT_EQ(uv.data, static_cast<const void*>(*m->plane_data(PlaneRole::UV)));
  EXPECT_EQ(y.strides[0], 16);
  EXPECT_EQ(uv.ndim, 3);
  EXPECT_EQ(uv.shape[2], 2);
  for (DLManagedTensor* p : *planes)
    p->deleter(p);
  auto dense = NeatTensor::allocate(DType::U8, Dims{3});
  NEAT_EXPECT_ERROR(export_dlpack_planes(*dense), ErrorCode::InvalidArgument, "export_dlpack()");
}

TEST(DlpackImport, NullStridesAreRowMajorAndTheDeleterRunsOnceAtTheEnd) {
  Producer p;
  p.data.resize(6);
  std::iota(p.data.begin(), p.data.end(), 0.0f);
  auto t = wrap_dlpack(p.make({2, 3}, {}, p.data.data()));
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->strides(), (Dims{12, 4}));
  EXPECT_EQ(at(*t, 1, 2), 5.0f);
  EXPECT_EQ(static_cast<const void*>(t->map()->data()), p.data.data()) << "no copy";
  EXPECT_FALSE(t->can_donate()) << "imports are read-only by default";
  auto view = t->narrow(1, 1, 2);
  *t = NeatTensor();
  EXPECT_EQ(p.deletions, 0);
  *view = NeatTensor();
  EXPECT_EQ(p.deletions, 1);
}

TEST(DlpackImport, NegativeStridesByteOffsetAndEmptyDimensions) {
  Producer p;
  p.data.resize(8);
  std::iota(p.data.begin(), p.data.end(), 0.0f);
  {  // rows reversed: data points at the last row, row stride -3 elements
    auto t = wrap_dlpack(p.make({2, 3}, {-3, 1}, p.data.data() + 3));
    NEAT_ASSERT_OK(t);
    EXPECT_EQ(at(*t, 0, 0), 3.0f);
    EXPECT_EQ(at(*t, 1, 2), 2.0f);
    EXPECT_EQ(t->storage()->size_bytes(), 24);
  }
  {  // byte_offset moves the origin
    auto t = wrap_dlpack(p.make({2, 2}, {2, 1}, p.data.data(), 8));
    NEAT_ASSERT_OK(t);
    EXPECT_EQ(at(*t, 0, 0), 2.0f);
    EXPECT_EQ(at(*t, 1, 1), 5.0f);
  }
  {
    auto t = wrap_dlpack(p.make({0, 5}, {}, nullptr));
    NEAT_ASSERT_OK(t);
    EXPECT_EQ(t->numel(), 0);
  }
  EXPECT_EQ(p.deletions, 3);
}

TEST(DlpackImport, ExclusiveImportsDonateToWriters) {
  Producer p;
  p.data.assign(4, 0.0f);
  auto t = wrap_dlpack(p.make({4}, {1}, p.data.data()), {.read_only = false, .exclusive = true});
  NEAT_ASSERT_OK(t);
  auto w = std::move(*t).make_writable({.donation = Donation::MustDonate});
  NEAT_ASSERT_OK(w);
  (*w->map(MapMode::Write)->data_ptr<float>())[2] = 9.0f;
  EXPECT_EQ(p.data[2], 9.0f);
}

TEST(DlpackImport, BadTensorsAreRefusedAndStillDeletedExactlyOnce) {
  NEAT_EXPECT_ERROR(wrap_dlpack(nullptr), ErrorCode::InvalidArgument, "null");
  struct Case {
    const char* name;
    void (*edit)(DLTensor&);
    ErrorCode code;
    const char* text;
  };
  const Case cases[] = {
      {"device", [](DLTensor& d) { d.device.device_type = kDLCUDA; }, ErrorCode::FailedPrecondition,
       "not the CPU"},
      {"lanes", [](DLTensor& d) { d.dtype.lanes = 4; }, ErrorCode::Unimplemented, "lanes"},
      {"dtype",
       [](DLTensor& d) {
         d.dtype = DLDataType{kDLComplex, 64, 1};
       },
       ErrorCode::Unimplemented, "no NeatTensor dtype"},
      {"ndim", [](DLTensor& d) { d.ndim = 9; }, ErrorCode::InvalidArgument, "ndim 9"},
      {"shape", [](DLTensor& d) { d.shape[0] = -1; }, ErrorCode::InvalidArgument, "negative"},
      {"null shape", [](DLTensor& d) { d.shape = nullptr; }, ErrorCode::InvalidArgument,
       "shape is null"},
      {"null data", [](DLTensor& d) { d.data = nullptr; }, ErrorCode::InvalidArgument,
       "data is null"},
      {"stride overflow", [](DLTensor& d) { d.strides[0] = INT64_MAX / 2; }, ErrorCode::OutOfRange,
       "overflows"},
      {"wraps below address 0", [](DLTensor& d) { d.strides[0] = -(std::int64_t{1} << 60); },
       ErrorCode::OutOfRange, "outside the address space"},
      {"offset too large", [](DLTensor& d) { d.byte_offset = UINT64_MAX - 8; },
       ErrorCode::OutOfRange, "byte_offset 18446744073709551607 is too large"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Producer p;
    p.data.resize(6);
    DLManagedTensor* m = p.make({2, 3}, {3, 1}, p.data.data());
    c.edit(m->dl_tensor);
    NEAT_EXPECT_ERROR(wrap_dlpack(m), c.code, c.text);
    EXPECT_EQ(p.deletions, 1);
  }
}

TEST(Dlpack, ExportThenImportIsTheSameMemory) {
  auto t = NeatTensor::allocate(DType::I16, Dims{3, 7});
  NEAT_ASSERT_OK(t);
  auto m = export_dlpack(*t);
  NEAT_ASSERT_OK(m);
  const auto before = dlpack_live_exports();
  {
    auto back = wrap_dlpack(*m);
    NEAT_ASSERT_OK(back);
    EXPECT_EQ(back->dtype(), DType::I16);
    EXPECT_EQ(back->shape(), t->shape());
    EXPECT_EQ(back->map()->data(), t->map()->data());
  }
  EXPECT_EQ(dlpack_live_exports(), before - 1) << "the importer ran the exporter's deleter";
}

}  // namespace
}  // namespace neat
