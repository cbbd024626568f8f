// Zip archives through libzip (see zip_archive.hpp).
#include "util/zip_archive.hpp"

#include <zip.h>  // zip_open, zip_fopen, zip_stat

#include "util/error.hpp"  // UserError

namespace trainer {

void ZipArchive::Closer::operator()(zip* z) const { zip_discard(z); }

ZipArchive::ZipArchive(const std::string& path) : path_(path) {
  int error = 0;
  zip* z = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (z == nullptr) {
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    throw UserError("cannot read '" + path + "' as a zip archive: " + why);
  }
  zip_.reset(z);
}

std::vector<std::string> ZipArchive::names() const {
  std::vector<std::string> out;
  const zip_int64_t n = zip_get_num_entries(zip_.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(zip_.get(), zip_uint64_t(i), 0);
    if (name != nullptr) out.emplace_back(name);
  }
  return out;
}

bool ZipArchive::contains(const std::string& name) const {
  return zip_name_locate(zip_.get(), name.c_str(), 0) >= 0;
}

std::string ZipArchive::read(const std::string& name) const {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(zip_.get(), name.c_str(), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    throw UserError("'" + path_ + "' has no entry '" + name + "'", "is it a file written by torch.save?");
  std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(zip_fopen(zip_.get(), name.c_str(), 0), zip_fclose);
  if (!file) throw UserError("cannot open '" + name + "' in '" + path_ + "': " + zip_strerror(zip_.get()));
  std::string bytes(st.size, '\0');
  zip_uint64_t done = 0;
  while (done < st.size) {
    const zip_int64_t got = zip_fread(file.get(), &bytes[done], st.size - done);
    if (got <= 0)
      throw UserError("'" + path_ + "' is truncated or corrupt: entry '" + name + "' ends after " +
                      std::to_string(done) + " of " + std::to_string(st.size) + " bytes");
    done += zip_uint64_t(got);
  }
  return bytes;
}

}  // namespace trainer
