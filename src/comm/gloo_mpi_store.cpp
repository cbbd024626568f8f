#include "comm/gloo_mpi_store.hpp"

#include <cstdint>  // std::uint32_t
#include <cstring>  // std::memcpy

#include "util/error.hpp"  // MPI_CHECK, TRAINER_ASSERT

namespace trainer::comm {

namespace {
// One record: [key length][key][value length][value], lengths as uint32.
void append_record(std::vector<char>& out, const std::string& key, const std::vector<char>& value) {
  const auto put = [&](const char* p, std::size_t n) { out.insert(out.end(), p, p + n); };
  const std::uint32_t klen = static_cast<std::uint32_t>(key.size());
  const std::uint32_t vlen = static_cast<std::uint32_t>(value.size());
  put(reinterpret_cast<const char*>(&klen), sizeof klen);
  put(key.data(), key.size());
  put(reinterpret_cast<const char*>(&vlen), sizeof vlen);
  put(value.data(), value.size());
}
}  // namespace

void GlooMpiStore::set(const std::string& key, const std::vector<char>& data) {
  std::vector<char> mine;
  append_record(mine, key, data);
  int size = 0;
  MPI_CHECK(MPI_Comm_size(comm_, &size));
  int my_len = static_cast<int>(mine.size());
  std::vector<int> lens(size), offsets(size);
  MPI_CHECK(MPI_Allgather(&my_len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = total;
    total += lens[r];
  }
  std::vector<char> all(total);
  MPI_CHECK(MPI_Allgatherv(mine.data(), my_len, MPI_BYTE, all.data(), lens.data(), offsets.data(),
                           MPI_BYTE, comm_));
  for (std::size_t pos = 0; pos < all.size();) {
    std::uint32_t klen = 0, vlen = 0;
    std::memcpy(&klen, &all[pos], sizeof klen);
    pos += sizeof klen;
    std::string k(&all[pos], klen);
    pos += klen;
    std::memcpy(&vlen, &all[pos], sizeof vlen);
    pos += sizeof vlen;
    values_[k] = std::vector<char>(all.begin() + pos, all.begin() + pos + vlen);
    pos += vlen;
  }
}

std::vector<char> GlooMpiStore::get(const std::string& key) {
  const auto it = values_.find(key);
  TRAINER_ASSERT(it != values_.end(), "Gloo rendezvous asked for key '" << key
                                          << "' that no rank set (unexpected Gloo rendezvous order)");
  return it->second;
}

void GlooMpiStore::wait(const std::vector<std::string>& keys) {
  for (const auto& key : keys) get(key);
}

void GlooMpiStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) {
  wait(keys);
}

}  // namespace trainer::comm
