#pragma once
// Reads a fuzzer's input as a stream of small numbers; past the end it returns zeros.
#include <cstddef>
#include <cstdint>

namespace spindle_fuzz {

class byte_reader {
 public:
  byte_reader(std::uint8_t const* data, std::size_t size) noexcept : data_(data), size_(size) {}
  [[nodiscard]] auto done() const noexcept -> bool { return pos_ >= size_; }
  auto next() noexcept -> std::uint8_t { return pos_ < size_ ? data_[pos_++] : 0; }

 private:
  std::uint8_t const* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace spindle_fuzz
