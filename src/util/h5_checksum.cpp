// The checksum record of the trainer's HDF5 files (see h5_checksum.hpp).
#include "util/h5_checksum.hpp"

#include <fcntl.h>     // open, O_*
#include <sys/stat.h>  // fstat
#include <unistd.h>    // pread, pwrite, close

#include <zlib.h>  // crc32: table-driven and several times faster than a byte-at-a-time CRC

#include <cerrno>   // errno
#include <cstdio>   // std::snprintf, std::sscanf
#include <cstring>  // std::memcmp, std::strerror
#include <mutex>    // std::mutex
#include <set>      // std::set
#include <tuple>    // std::tuple
#include <vector>   // std::vector

#include "util/fd.hpp"  // Fd: the descriptor owner
#include "util/error.hpp"  // UserError, SystemError

namespace trainer::h5 {

namespace {

constexpr char kMagic[] = "TRAINER-CHECKSUM 1\n";
constexpr unsigned char kHdf5Signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};


// Reads up to `size` bytes at `offset`; returns how many (fewer at the end of the file).
std::size_t read_at(int fd, void* buffer, std::size_t size, off_t offset) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd, static_cast<char*>(buffer) + done, size - done, offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw SystemError(std::string("read failed: ") + std::strerror(errno));
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

// zlib's CRC-32 of the bytes from `offset` to the end of the file; `bytes` gets their count.
std::uint32_t crc_from(int fd, off_t offset, std::uint64_t* bytes) {
  std::vector<unsigned char> block(std::size_t{1} << 20);
  uLong crc = ::crc32(0L, Z_NULL, 0);
  *bytes = 0;
  for (;;) {
    const std::size_t got = read_at(fd, block.data(), block.size(), offset + static_cast<off_t>(*bytes));
    if (got == 0) break;
    crc = ::crc32(crc, block.data(), static_cast<uInt>(got));
    *bytes += got;
  }
  return static_cast<std::uint32_t>(crc);
}

// Files verified in this process: (device, inode, size, mtime seconds, mtime nanoseconds).
using Identity = std::tuple<dev_t, ino_t, off_t, long, long>;
std::mutex verified_mutex;
std::set<Identity> verified;

Identity identity_of(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size, static_cast<long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec};
}

}  // namespace

Handle checksummed_file_creation() {
  Handle plist = H5_OWN(plist, H5Pcreate(H5P_FILE_CREATE));
  H5_CHECK(H5Pset_userblock(plist.get(), kChecksumBlockBytes));
  return plist;
}

void write_checksum_record(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (fd.get() < 0) throw SystemError("cannot open '" + path + "' to write its checksum: " + std::strerror(errno));
  std::uint64_t bytes = 0;
  const std::uint32_t crc = crc_from(fd.get(), static_cast<off_t>(kChecksumBlockBytes), &bytes);
  char record[kChecksumBlockBytes] = {};
  std::snprintf(record, sizeof record, "%scrc32 %08x\nbytes %llu\n", kMagic, static_cast<unsigned>(crc),
                static_cast<unsigned long long>(bytes));
  if (::pwrite(fd.get(), record, sizeof record, 0) != static_cast<ssize_t>(sizeof record))
    throw SystemError("cannot write the checksum of '" + path + "': " + std::strerror(errno));
}

bool verify_checksum(const std::string& path, const std::string& subject, const std::string& hint) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // the caller's checks say why
  unsigned char head[kChecksumBlockBytes + sizeof kHdf5Signature] = {};
  const std::size_t got = read_at(fd.get(), head, sizeof head, 0);
  // Checked only with the superblock right after a 512-byte user block: a file with
  // the signature at 0 has no user block, and one without it here is not ours.
  if (got < sizeof head || std::memcmp(head, kHdf5Signature, sizeof kHdf5Signature) == 0 ||
      std::memcmp(head + kChecksumBlockBytes, kHdf5Signature, sizeof kHdf5Signature) != 0)
    return false;
  {
    const std::lock_guard<std::mutex> lock(verified_mutex);
    if (verified.count(identity_of(st))) return true;
  }
  const auto damaged = [&](const std::string& why) {
    throw UserError(subject + " is truncated or damaged: " + why, hint);
  };
  const std::string record(reinterpret_cast<const char*>(head), kChecksumBlockBytes);
  unsigned crc = 0;
  unsigned long long bytes = 0;
  char end = 0;
  if (record.compare(0, sizeof kMagic - 1, kMagic) != 0 ||
      std::sscanf(record.c_str() + sizeof kMagic - 1, "crc32 %8x\nbytes %llu%c", &crc, &bytes, &end) != 3 || end != '\n')
    damaged("its checksum record (the first 512 bytes) is not one the trainer writes");
  std::uint64_t found = 0;
  const std::uint32_t actual = crc_from(fd.get(), static_cast<off_t>(kChecksumBlockBytes), &found);
  if (found != bytes)
    damaged("it holds " + std::to_string(found + kChecksumBlockBytes) + " bytes, its checksum record says " +
            std::to_string(bytes + kChecksumBlockBytes));
  if (actual != crc) {
    char text[64];
    std::snprintf(text, sizeof text, "its checksum is %08x, its record says %08x", actual, crc);
    damaged(text);
  }
  const std::lock_guard<std::mutex> lock(verified_mutex);
  verified.insert(identity_of(st));
  return true;
}

}  // namespace trainer::h5
