// Reads typed values from a fuzzer's bytes (zeros once they run out).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace neat::fuzz {

class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  bool boolean() { return (u8() & 1) != 0; }
  /// A small signed value (-64..191), where the interesting edges live.
  std::int64_t i64_small() { return static_cast<std::int64_t>(u8()) - 64; }
  /// Any 64-bit value, biased towards small ones and extremes.
  std::int64_t i64_any() {
    switch (u8() % 4) {
      case 0:
        return i64_small();
      case 1:
        return static_cast<std::int64_t>(u16()) * (boolean() ? 1 : -1);
      case 2:
        return boolean() ? INT64_MAX - u8() : INT64_MIN + u8();
      default: {
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i)
          v = (v << 8) | u8();
        return static_cast<std::int64_t>(v);
      }
    }
  }
  /// The rest of the input as text.
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_ - pos_);
    pos_ = size_;
    return s;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace neat::fuzz
