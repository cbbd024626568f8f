#pragma once
// The mutation of the damaged-file harnesses (fuzz_damaged_*): overwrite 1 to 8
// random bytes of a real file and keep its length, as a bad disk, a cut copy or an
// adversarial review's byte flips do. libFuzzer's own mutations (insert, erase,
// splice, shrink to -max_len) would turn most inputs into short, unrelated files;
// this keeps every input a real dataset or checkpoint with a little damage, which is
// the class that reached HDF5's unchecked paths (a SIGSEGV in H5HG_read).
// Included by exactly one source file of each harness.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t
#include <random>   // std::minstd_rand

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  if (size == 0) return LLVMFuzzerMutate(data, size, max_size);  // nothing to damage yet
  std::minstd_rand random(seed);
  const int bytes = 1 + static_cast<int>(random() % 8);
  for (int i = 0; i < bytes; ++i) data[random() % size] = static_cast<std::uint8_t>(random());
  return size;
}
