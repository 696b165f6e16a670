// Property tests: at least 10,000 random shape / stride / offset descriptors
// per validation property, each checked against an independent reference
// (exact 128-bit arithmetic, or brute-force enumeration of element addresses).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using i128 = __int128;
constexpr int kCases = 10000;

struct Desc {
  DType dtype;
  std::vector<std::int64_t> shape, strides;
  std::int64_t offset;
  std::int64_t storage;
};

DType random_dtype(std::mt19937_64& rng) {
  static const DType all[] = {DType::U8, DType::I16, DType::F32, DType::F64, DType::BF16};
  return all[rng() % 5];
}

// Mostly small values, sometimes huge ones (up to 2^61) to reach overflow.
std::int64_t wild(std::mt19937_64& rng, std::int64_t small) {
  switch (rng() % 10) {
    case 0:
      return static_cast<std::int64_t>(rng() >> 3);  // up to 2^61
    case 1:
      return -static_cast<std::int64_t>(rng() >> 3);
    default:
      return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * small + 1)) - small;
  }
}

Desc random_desc(std::mt19937_64& rng) {
  Desc d;
  d.dtype = random_dtype(rng);
  const int rank = static_cast<int>(rng() % 6);
  for (int i = 0; i < rank; ++i) {
    std::int64_t e = static_cast<std::int64_t>(rng() % 6);
    if (rng() % 20 == 0) e = wild(rng, 5);  // negatives and huge extents
    d.shape.push_back(e);
    d.strides.push_back(wild(rng, 64));
  }
  d.offset = rng() % 15 == 0 ? wild(rng, 1000) : static_cast<std::int64_t>(rng() % 512);
  d.storage = static_cast<std::int64_t>(rng() % 1024);
  return d;
}

// Reference: exact arithmetic in 128 bits.
bool reference_valid(const Desc& d) {
  for (auto e : d.shape) {
    if (e < 0) return false;
  }
  for (auto e : d.shape) {
    if (e == 0) return d.offset >= 0 && d.offset <= d.storage;
  }
  i128 lo = d.offset, hi = d.offset;
  for (std::size_t i = 0; i < d.shape.size(); ++i) {
    const i128 reach = static_cast<i128>(d.shape[i] - 1) * d.strides[i];
    if (reach < 0)
      lo += reach;
    else
      hi += reach;
  }
  hi += item_size(d.dtype);
  return lo >= 0 && hi <= d.storage;
}

TEST(LayoutProperty, ValidationMatchesExactArithmetic) {
  std::mt19937_64 rng(12345);
  int accepted = 0, rejected = 0;
  for (int c = 0; c < kCases; ++c) {
    const Desc d = random_desc(rng);
    const Status s = validate_layout(d.dtype, d.shape, d.strides, d.offset, d.storage, "t");
    const bool expect = reference_valid(d);
    ASSERT_EQ(s.ok(), expect) << "case " << c << " shape " << dims_to_string(d.shape) << " strides "
                              << dims_to_string(d.strides) << " offset " << d.offset << " storage "
                              << d.storage << ": " << (s.ok() ? "accepted" : s.error().message());
    (s.ok() ? accepted : rejected)++;
  }
  // The generator must exercise both outcomes substantially.
  EXPECT_GT(accepted, kCases / 20);
  EXPECT_GT(rejected, kCases / 20);
}

TEST(LayoutProperty, ValidationMatchesBruteForceEnumeration) {
  std::mt19937_64 rng(777);
  for (int c = 0; c < kCases; ++c) {
    Desc d;
    d.dtype = random_dtype(rng);
    const int rank = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < rank; ++i) {
      d.shape.push_back(1 + static_cast<std::int64_t>(rng() % 4));
      d.strides.push_back(static_cast<std::int64_t>(rng() % 81) - 40);
    }
    d.offset = static_cast<std::int64_t>(rng() % 200);
    d.storage = static_cast<std::int64_t>(rng() % 300);
    // Enumerate every element's bytes.
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(),
                 hi = std::numeric_limits<std::int64_t>::min();
    std::vector<std::int64_t> idx(static_cast<std::size_t>(rank), 0);
    while (true) {
      std::int64_t a = d.offset;
      for (int i = 0; i < rank; ++i)
        a += idx[static_cast<std::size_t>(i)] * d.strides[static_cast<std::size_t>(i)];
      lo = std::min(lo, a);
      hi = std::max(hi, a + item_size(d.dtype));
      int k = rank - 1;
      while (k >= 0 && ++idx[static_cast<std::size_t>(k)] == d.shape[static_cast<std::size_t>(k)])
        idx[static_cast<std::size_t>(k--)] = 0;
      if (k < 0) break;
    }
    const bool expect = lo >= 0 && hi <= d.storage;
    const Status s = validate_layout(d.dtype, d.shape, d.strides, d.offset, d.storage, "t");
    ASSERT_EQ(s.ok(), expect) << "case " << c;
  }
}

TEST(LayoutProperty, ContiguityMatchesRowMajorEnumeration) {
  std::mt19937_64 rng(4242);
  int contiguous = 0;
  for (int c = 0; c < kCases; ++c) {
    const DType dt = random_dtype(rng);
    const std::int64_t item = item_size(dt);
    const int rank = static_cast<int>(rng() % 5);
    std::vector<std::int64_t> shape, strides;
    for (int i = 0; i < rank; ++i) {
      shape.push_back(rng() % 12 == 0 ? 0 : 1 + static_cast<std::int64_t>(rng() % 3));
    }
    // Start from packed strides and perturb some of them.
    std::vector<std::int64_t> packed(static_cast<std::size_t>(rank));
    std::int64_t s = item;
    for (int i = rank - 1; i >= 0; --i) {
      packed[static_cast<std::size_t>(i)] = s;
      s *= std::max<std::int64_t>(shape[static_cast<std::size_t>(i)], 1);
    }
    strides = packed;
    if (rng() % 2) {
      for (auto& st : strides) {
        if (rng() % 2 == 0) st += (static_cast<std::int64_t>(rng() % 3) - 1) * item;
      }
    }
    // Reference: element i (row-major) lives at i * item.
    std::int64_t n = 1;
    for (auto e : shape)
      n *= e;
    bool expect = true;
    std::vector<std::int64_t> idx(static_cast<std::size_t>(rank), 0);
    for (std::int64_t e = 0; e < n && expect; ++e) {
      std::int64_t a = 0;
      for (int i = 0; i < rank; ++i)
        a += idx[static_cast<std::size_t>(i)] * strides[static_cast<std::size_t>(i)];
      if (a != e * item) expect = false;
      for (int k = rank - 1; k >= 0; --k) {
        if (++idx[static_cast<std::size_t>(k)] < shape[static_cast<std::size_t>(k)]) break;
        idx[static_cast<std::size_t>(k)] = 0;
      }
    }
    ASSERT_EQ(is_contiguous(dt, shape, strides), expect)
        << "shape " << dims_to_string(shape) << " strides " << dims_to_string(strides);
    contiguous += expect;
  }
  EXPECT_GT(contiguous, kCases / 10);
  EXPECT_LT(contiguous, kCases - kCases / 10);
}

// Addresses of all elements (row-major order) relative to the storage base.
std::vector<std::int64_t> addresses(const NeatTensor& t) {
  std::vector<std::int64_t> out;
  const std::int64_t n = t.numel();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(t.rank()), 0);
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t a = t.byte_offset();
    for (int i = 0; i < t.rank(); ++i)
      a += idx[static_cast<std::size_t>(i)] * t.strides()[i];
    out.push_back(a);
    for (int k = t.rank() - 1; k >= 0; --k) {
      if (++idx[static_cast<std::size_t>(k)] < t.shape()[k]) break;
      idx[static_cast<std::size_t>(k)] = 0;
    }
  }
  return out;
}

NeatTensor random_tensor(std::mt19937_64& rng, const std::shared_ptr<Storage>& storage) {
  const int rank = 1 + static_cast<int>(rng() % 4);
  std::vector<std::int64_t> shape;
  for (int i = 0; i < rank; ++i)
    shape.push_back(1 + static_cast<std::int64_t>(rng() % 5));
  auto base = NeatTensor::from_storage_contiguous(storage, DType::I16, shape);
  NeatTensor t = *base;
  // Random permutation and random slicing make a general strided view.
  if (rank > 1 && rng() % 2) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(rank));
    for (int i = 0; i < rank; ++i)
      order[static_cast<std::size_t>(i)] = i;
    std::shuffle(order.begin(), order.end(), rng);
    t = *t.permute(order);
  }
  if (rng() % 2) {
    const int d = static_cast<int>(rng() % static_cast<std::uint64_t>(rank));
    const std::int64_t e = t.shape()[d];
    const std::int64_t start = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(e));
    const std::int64_t step = 1 + static_cast<std::int64_t>(rng() % 2);
    t = *t.slice(d, start, e, step);
  }
  return t;
}

TEST(ViewProperty, SliceAndPermuteAddressTheSameBytesAsIndexMapping) {
  std::mt19937_64 rng(99);
  auto storage = testing::FakeStorage::make(2 * 5 * 5 * 5 * 5);
  for (int c = 0; c < kCases; ++c) {
    NeatTensor t = random_tensor(rng, storage);
    const auto base = addresses(t);
    const int d = static_cast<int>(rng() % static_cast<std::uint64_t>(t.rank()));
    const std::int64_t e = t.shape()[d];
    const std::int64_t start = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(e + 1));
    const std::int64_t stop =
        start + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(e - start + 1));
    const std::int64_t step = 1 + static_cast<std::int64_t>(rng() % 3);
    auto v = t.slice(d, start, stop, step);
    ASSERT_TRUE(v.ok()) << v.error().message();
    // Reference: enumerate the original's indices, keep those the slice selects.
    std::vector<std::int64_t> expect;
    std::vector<std::int64_t> idx(static_cast<std::size_t>(t.rank()), 0);
    for (std::size_t k = 0; k < base.size(); ++k) {
      const std::int64_t i = idx[static_cast<std::size_t>(d)];
      if (i >= start && i < stop && (i - start) % step == 0) expect.push_back(base[k]);
      for (int q = t.rank() - 1; q >= 0; --q) {
        if (++idx[static_cast<std::size_t>(q)] < t.shape()[q]) break;
        idx[static_cast<std::size_t>(q)] = 0;
      }
    }
    ASSERT_EQ(addresses(*v), expect) << "case " << c;
    EXPECT_EQ(v->identity(), t.identity());
  }
}

TEST(ViewProperty, ReshapeIsAViewExactlyWhenStridesAllowIt) {
  std::mt19937_64 rng(2024);
  auto storage = testing::FakeStorage::make(2 * 5 * 5 * 5 * 5);
  int views = 0, refusals = 0;
  for (int c = 0; c < kCases; ++c) {
    NeatTensor t = random_tensor(rng, storage);
    const auto addr = addresses(t);
    // A random factorisation of numel into up to 4 extents (with some 1s).
    std::int64_t n = t.numel();
    std::vector<std::int64_t> want;
    const int parts = 1 + static_cast<int>(rng() % 4);
    for (int p = 0; p < parts - 1; ++p) {
      std::vector<std::int64_t> divisors;
      for (std::int64_t k = 1; k <= n; ++k) {
        if (n % k == 0) divisors.push_back(k);
      }
      const std::int64_t f = divisors[rng() % divisors.size()];
      want.push_back(f);
      n /= f;
    }
    want.push_back(n);
    // Reference: derive each dim's stride from the address sequence, then check all.
    const int r = static_cast<int>(want.size());
    std::vector<std::int64_t> ref_strides(static_cast<std::size_t>(r), 0);
    std::int64_t unit = 1;
    for (int k = r - 1; k >= 0; --k) {
      if (want[static_cast<std::size_t>(k)] > 1)
        ref_strides[static_cast<std::size_t>(k)] = addr[static_cast<std::size_t>(unit)] - addr[0];
      unit *= want[static_cast<std::size_t>(k)];
    }
    bool possible = true;
    std::vector<std::int64_t> idx(static_cast<std::size_t>(r), 0);
    for (std::size_t e = 0; e < addr.size() && possible; ++e) {
      std::int64_t a = addr[0];
      for (int k = 0; k < r; ++k)
        a += idx[static_cast<std::size_t>(k)] * ref_strides[static_cast<std::size_t>(k)];
      possible = a == addr[e];
      for (int k = r - 1; k >= 0; --k) {
        if (++idx[static_cast<std::size_t>(k)] < want[static_cast<std::size_t>(k)]) break;
        idx[static_cast<std::size_t>(k)] = 0;
      }
    }
    auto v = t.reshape(want);
    ASSERT_EQ(v.ok(), possible) << "case " << c << ": " << t.to_string() << " -> "
                                << dims_to_string(want)
                                << (v.ok() ? "" : " : " + v.error().message());
    if (v.ok()) {
      ASSERT_EQ(addresses(*v), addr) << "case " << c;
      ++views;
    } else {
      EXPECT_EQ(v.error().code(), ErrorCode::FailedPrecondition);
      ++refusals;
    }
  }
  EXPECT_GT(views, kCases / 10);
  EXPECT_GT(refusals, kCases / 20);
}

}  // namespace
}  // namespace neat
